//! One job: a patch applied and its tests run in a fresh container, with engine failures
//! retried, then graded. Runs on a worker task; it never prints, writes nothing and touches no
//! run state: it returns a [`JobDone`] (the verdict and the log files' contents) to the
//! dispatcher, which hands it to every prediction that shares the job.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use crate::engine::{Engine, EngineError, FileIn, JobOutput, JobSpec, Ticket};

use super::driver::{self, Apply, PatchMode};
use super::grade::{self, JobGrade};
use super::job_config::JobConfig;
use super::store::{Category, Verdict};
use super::Setup;

/// One execution: an instance and a patch, for one or more predictions with that patch.
#[derive(Debug)]
pub struct Job {
    /// The job's number in its dispatcher; unique, used in the container name.
    pub seq: usize,
    /// What it runs in.
    pub setup: Arc<Setup>,
    /// The patch.
    pub patch: String,
    /// The patch's hash ([`swe_eval_core::predictions::Prediction::patch_hash`]).
    pub patch_hash: String,
    /// Whether the patch is applied (or the eval script runs without one: `validate`).
    pub mode: PatchMode,
}

/// What a job hands back to the dispatcher.
#[derive(Debug)]
pub enum JobDone {
    /// Its verdict, whose prediction fields (`model`, `sample`, `shared_from`) are the
    /// dispatcher's to fill for each prediction sharing the job, and its log files' contents.
    Graded {
        /// The verdict.
        verdict: Box<Verdict>,
        /// The official per-instance files, for whoever keeps them.
        logs: Arc<JobLogs>,
    },
    /// Never started: prepared ahead, then dispatching stopped. No verdict; its predictions
    /// count as not run.
    Withdrawn,
}

/// A job's official per-instance log files, in memory: whoever keeps a prediction's files
/// writes them ([`JobLogs::write`]); a server may keep none.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobLogs {
    /// `patch.diff`: the patch applied (`None` when none was: `validate`'s empty runs).
    pub patch: Option<String>,
    /// `eval.sh`: the eval script the job ran.
    pub eval_script: String,
    /// `test_output.txt`: the eval script's output (the part after the driver's apply step);
    /// `None` where the patch did not apply, so the eval script never ran (the official harness
    /// writes no test output then either).
    pub test_output: Option<String>,
    /// `run_instance.log`: what the harness did (image, container, attempts, verdict, timings).
    pub run_log: String,
    /// `report.json`, where the official harness would write one (the tests were graded).
    pub report_json: Option<String>,
}

impl JobLogs {
    /// Writes the files into `dir` (made if needed), each atomically; `verdict.json` is not
    /// among them (its writer writes it last, after these).
    pub fn write(&self, dir: &Path) -> Result<(), swe_eval_core::fsutil::WriteError> {
        let w =
            |name: &str, bytes: &[u8]| swe_eval_core::fsutil::write_atomic(&dir.join(name), bytes);
        if let Some(patch) = &self.patch {
            w("patch.diff", patch.as_bytes())?;
        }
        w("eval.sh", self.eval_script.as_bytes())?;
        if let Some(out) = &self.test_output {
            w("test_output.txt", out.as_bytes())?;
        }
        w("run_instance.log", self.run_log.as_bytes())?;
        if let Some(report) = &self.report_json {
            w(swe_eval_core::report::REPORT_FILE, report.as_bytes())?;
        }
        Ok(())
    }
}

/// Runs `job` to a verdict. Never fails: every failure is a verdict (error or infra error).
/// `ticket`, with an engine that prepares ahead, is the job's turn at the run's start gate.
pub async fn execute<E: Engine>(
    engine: Arc<E>,
    job: Arc<Job>,
    cfg: Arc<JobConfig>,
    ticket: Option<Ticket>,
) -> JobDone {
    let started = Instant::now();
    let mut log = String::new();
    let setup = &job.setup;
    let _ = writeln!(
        log,
        "instance {} run {}",
        setup.instance.instance_id, cfg.run_id
    );
    let (output, retries, nonce, failure) = match &setup.image {
        Err(why) => {
            let _ = writeln!(log, "not run: {why}");
            (None, 0, String::new(), Some(why.to_string()))
        }
        Ok(image) => {
            let _ = writeln!(log, "image {image}");
            let (res, retries, nonce) =
                run_with_retries(&*engine, &job, &cfg, image, ticket.as_ref(), &mut log).await;
            if let Err(EngineError::Withdrawn { .. }) = res {
                return JobDone::Withdrawn;
            }
            match res {
                Ok(out) => (Some(out), retries, nonce, None),
                Err(e) => (None, retries, nonce, Some(format!("engine: {e}"))),
            }
        }
    };
    // Grading on a blocking thread: a long log then holds no async worker, and so no other
    // task of the runtime (a server's answers among them).
    let ran = Ran {
        output,
        retries,
        nonce,
        failure,
        log,
        started,
    };
    let conclude = {
        let (job, cfg) = (job.clone(), cfg.clone());
        move || conclude(&job, &cfg, ran)
    };
    match tokio::task::spawn_blocking(conclude).await {
        Ok(done) => done,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // The runtime is shutting down: the job is not done.
        Err(_) => JobDone::Withdrawn,
    }
}

/// What running a job's container gave: what [`conclude`] grades.
struct Ran {
    /// The container's output; `None` when it did not run or the engine failed.
    output: Option<JobOutput>,
    /// Engine failures retried.
    retries: u32,
    /// The markers' nonce of the attempt that gave `output`.
    nonce: String,
    /// Why there is no output.
    failure: Option<String>,
    /// The job's log so far.
    log: String,
    /// When the job started.
    started: Instant,
}

/// Grades the output of `job` and writes its log files: the verdicts, one per member.
fn conclude(job: &Job, cfg: &JobConfig, ran: Ran) -> JobDone {
    let Ran {
        output,
        retries,
        nonce,
        failure,
        mut log,
        started,
    } = ran;
    let setup = &job.setup;
    let text = output
        .as_ref()
        .map(|o| String::from_utf8_lossy(&o.output).into_owned());
    let graded = match (&output, &text) {
        (Some(out), Some(text)) => {
            if let Some(node) = &out.node {
                let _ = writeln!(log, "node {node}");
            }
            let parsed = driver::parse(text, &nonce);
            if out.truncated_bytes > 0 {
                let _ = writeln!(
                    log,
                    "output cut: {} bytes dropped from the middle",
                    out.truncated_bytes
                );
            }
            let _ = writeln!(log, "--- apply\n{}---", parsed.setup_log);
            let g = grade::grade(&job.setup, &job.patch, job.mode, out, &parsed, cfg);
            let mut test_output = parsed.eval_output.unwrap_or("").to_string();
            if out.timed_out {
                let _ = writeln!(
                    test_output,
                    "Timeout error: {} seconds exceeded.",
                    cfg.timeout.as_secs()
                );
            }
            Some((g, test_output, parsed.apply.clone()))
        }
        _ => None,
    };
    let (g, test_output, apply) = match graded {
        Some(x) => x,
        None => (
            JobGrade::infra(failure.clone().unwrap_or_else(|| "no output".into())),
            String::new(),
            Apply::Unknown,
        ),
    };
    let _ = writeln!(
        log,
        "verdict: {} (strict: {}){}",
        g.category.as_str(),
        g.strict_category.as_str(),
        g.reason
            .as_deref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default()
    );
    let total = started.elapsed();
    let timing = output.as_ref().map_or((0.0, 0.0, 0.0), |o| {
        (
            o.setup.as_secs_f64(),
            o.run.as_secs_f64(),
            o.teardown.as_secs_f64(),
        )
    });
    let _ = writeln!(
        log,
        "timings: setup {:.3}s run {:.3}s teardown {:.3}s total {:.3}s; engine retries {retries}",
        timing.0,
        timing.1,
        timing.2,
        total.as_secs_f64()
    );

    let phases = output
        .as_ref()
        .map(|o| Phases::of(o, !matches!(apply, Apply::Failed)))
        .unwrap_or_default();
    let verdict = Verdict {
        instance_id: setup.instance.instance_id.clone(),
        model: String::new(),
        sample: 0,
        patch_hash: job.patch_hash.clone(),
        run_id: cfg.run_id.clone(),
        category: g.category,
        resolved: g.category == Category::Resolved,
        strict_category: g.strict_category,
        strict_resolved: g.strict_category == Category::Resolved,
        official_report: g.report_json.is_some(),
        applied_with: match &apply {
            Apply::Applied(how) => Some(how.clone()),
            _ => None,
        },
        fail_to_pass_success: g.counts[0],
        fail_to_pass_failure: g.counts[1],
        pass_to_pass_success: g.counts[2],
        pass_to_pass_failure: g.counts[3],
        test_exit_code: g.test_exit_code,
        timed_out: output.as_ref().is_some_and(|o| o.timed_out),
        timeout_secs: Some(cfg.timeout.as_secs()),
        oom_killed: output.as_ref().is_some_and(|o| o.oom_killed),
        memory_bytes: cfg.limits.memory_bytes,
        error_reason: g.error_reason,
        reason: g.reason.clone(),
        needs_network: g.needs_network,
        infra_retries: retries,
        setup_secs: timing.0,
        run_secs: timing.1,
        teardown_secs: timing.2,
        total_secs: total.as_secs_f64(),
        apply_secs: phases.apply,
        before_tests_secs: phases.before_tests,
        tests_secs: phases.tests,
        after_tests_secs: phases.after_tests,
        shared_from: None,
        identity: None,
    };
    let logs = JobLogs {
        patch: (job.mode == PatchMode::Apply).then(|| job.patch.clone()),
        eval_script: setup.eval_script.clone(),
        test_output: (!matches!(apply, Apply::Failed)).then_some(test_output),
        run_log: log,
        report_json: g.report_json,
    };
    JobDone::Graded {
        verdict: Box::new(verdict),
        logs: Arc::new(logs),
    }
}

/// Runs the container, retrying transient engine failures with exponential backoff. Each
/// attempt gets its own container name, so a container a dead daemon left behind cannot
/// collide with the retry (the reap at the end removes it).
async fn run_with_retries<E: Engine>(
    engine: &E,
    job: &Job,
    cfg: &JobConfig,
    image: &str,
    ticket: Option<&Ticket>,
    log: &mut String,
) -> (Result<JobOutput, EngineError>, u32, String) {
    let mut retries = 0;
    let mut wait = cfg.backoff;
    loop {
        let nonce = driver::nonce();
        let spec = job_spec(job, cfg, image, &nonce, retries, ticket);
        let _ = writeln!(log, "container {} (attempt {})", spec.name, retries + 1);
        match engine.run_job(spec).await {
            Ok(out) => return (Ok(out), retries, nonce),
            Err(e) if e.is_transient() && retries + 1 < cfg.attempts.max(1) => {
                let _ = writeln!(
                    log,
                    "engine failure, retrying in {:.1}s: {e}",
                    wait.as_secs_f64()
                );
                retries += 1;
                // Later jobs need not wait for this one's turn while it backs off.
                if let Some(t) = ticket {
                    t.step_aside();
                }
                tokio::time::sleep(wait).await;
                wait = wait.saturating_mul(2);
            }
            Err(e) => return (Err(e), retries, nonce),
        }
    }
}

fn job_spec(
    job: &Job,
    cfg: &JobConfig,
    image: &str,
    nonce: &str,
    attempt: u32,
    ticket: Option<&Ticket>,
) -> JobSpec {
    let mut files = vec![
        FileIn {
            path: driver::DRIVER_PATH.into(),
            contents: driver::render(nonce, job.mode, cfg.strict).into_bytes(),
            mode: 0o755,
        },
        FileIn {
            path: driver::EVAL_PATH.into(),
            contents: job.setup.eval_script.clone().into_bytes(),
            mode: 0o755,
        },
    ];
    if job.mode == PatchMode::Apply {
        files.push(FileIn {
            path: driver::PATCH_PATH.into(),
            contents: job.patch.clone().into_bytes(),
            mode: 0o644,
        });
    }
    if cfg.strict {
        let remove: String = swe_eval_core::grading::collection_files(&job.patch)
            .into_iter()
            .map(|f| format!("{}\t{}\n", if f.added { 'A' } else { 'M' }, f.path))
            .collect();
        files.push(FileIn {
            path: driver::STRICT_REMOVE_PATH.into(),
            contents: remove.into_bytes(),
            mode: 0o644,
        });
    }
    JobSpec {
        image: image.to_string(),
        name: format!("swe-eval.{}.{}.{}", sanitize(&cfg.run_id), job.seq, attempt),
        labels: cfg.labels.clone(),
        files,
        command: vec!["/bin/bash".into(), driver::DRIVER_PATH.into()],
        env: Vec::new(),
        working_dir: Some("/testbed".into()),
        limits: job.setup.limits(&cfg.limits),
        network: cfg.network,
        timeout: cfg.timeout,
        max_output_bytes: cfg.max_output_bytes,
        watch: vec![
            driver::eval_start_mark(nonce),
            driver::START_TEST_OUTPUT.to_string(),
            driver::END_TEST_OUTPUT.to_string(),
        ],
        gate: ticket.map(Ticket::pass),
    }
}

/// A run's parts, from when the engine saw the watched markers arrive (see [`job_spec`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Phases {
    pub apply: Option<f64>,
    pub before_tests: Option<f64>,
    pub tests: Option<f64>,
    pub after_tests: Option<f64>,
}

impl Phases {
    /// The parts of `out`'s run. `eval_ran`: the driver went on to the eval script (a failed
    /// apply ends the job there: the whole run is the apply step). A job killed at its
    /// deadline spent the rest of its run in the part it was in. Parts whose markers were not
    /// seen, or were seen out of order (a patch's code printing a marker early), stay `None`.
    pub(super) fn of(out: &JobOutput, eval_ran: bool) -> Phases {
        if out.seen.is_empty() {
            return Phases::default();
        }
        let run = out.run.as_secs_f64();
        // Output read after the exit (the stream drained late) counts as at the exit.
        let at = |i: usize| {
            out.seen
                .get(i)
                .copied()
                .flatten()
                .map(|d| d.as_secs_f64().min(run))
        };
        if !eval_ran {
            return Phases {
                apply: Some(run),
                before_tests: Some(0.0),
                tests: Some(0.0),
                after_tests: Some(0.0),
            };
        }
        let killed = |x: Option<f64>| x.or(out.timed_out.then_some(run));
        let eval = killed(at(0));
        // A test marker seen before the eval script started was printed by something else.
        let start = killed(at(1).filter(|s| eval.is_some_and(|e| *s >= e)));
        let end = killed(at(2));
        let span = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b >= a => Some(b - a),
            _ => None,
        };
        Phases {
            apply: eval,
            before_tests: span(eval, start),
            tests: span(start, end),
            after_tests: span(end, Some(run)),
        }
    }
}

/// A container-name-safe form of a run id (`[a-zA-Z0-9_.-]`).
fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_.-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn out(run_ms: u64, seen: &[Option<u64>], timed_out: bool) -> JobOutput {
        JobOutput {
            run: Duration::from_millis(run_ms),
            seen: seen.iter().map(|s| s.map(Duration::from_millis)).collect(),
            timed_out,
            ..Default::default()
        }
    }

    #[test]
    fn a_run_splits_at_the_markers_it_saw_in_order() {
        let p = Phases::of(
            &out(10_000, &[Some(500), Some(2_500), Some(9_000)], false),
            true,
        );
        assert_eq!(
            p,
            Phases {
                apply: Some(0.5),
                before_tests: Some(2.0),
                tests: Some(6.5),
                after_tests: Some(1.0),
            }
        );
        // Killed at the deadline inside the tests: the rest of the run was the tests.
        let p = Phases::of(&out(10_000, &[Some(500), Some(2_500), None], true), true);
        assert_eq!(
            (p.before_tests, p.tests, p.after_tests),
            (Some(2.0), Some(7.5), Some(0.0))
        );
        // An end marker missing without a kill: the tests' end is not known.
        let p = Phases::of(&out(10_000, &[Some(500), Some(2_500), None], false), true);
        assert_eq!((p.tests, p.after_tests), (None, None));
        // A patch's code printing the test marker before the eval script: no split there.
        let p = Phases::of(
            &out(10_000, &[Some(500), Some(100), Some(9_000)], false),
            true,
        );
        assert_eq!((p.before_tests, p.tests), (None, None));
        // A patch that did not apply: the whole run is the apply step.
        let p = Phases::of(&out(300, &[None, None, None], false), false);
        assert_eq!((p.apply, p.tests), (Some(0.3), Some(0.0)));
        // Output that arrived after the exit counts as at the exit.
        let p = Phases::of(
            &out(1_000, &[Some(100), Some(200), Some(1_200)], false),
            true,
        );
        assert_eq!((p.tests, p.after_tests), (Some(0.8), Some(0.0)));
        // An engine that does not watch (Swarm): nothing split.
        assert_eq!(Phases::of(&out(300, &[], false), true), Phases::default());
    }
}
