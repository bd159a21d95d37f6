//! `bench harness`: the harness's own overhead per prediction (everything but the test
//! command) on a real engine, and the orchestrator's memory with thousands of predictions
//! queued.
//!
//! Trivial tasks: a one-file repository, a patch that applies with `git apply`, and an eval
//! script whose test command is `true` between the official markers. After a warm-up that is
//! not counted, up to four phases:
//! 1. distinct predictions on the real engine: wall time per prediction (the figure to compare
//!    with the official harness) and the mean job latency;
//! 2. with a Python that has `swebench`, the official harness on the same image, eval script
//!    and predictions;
//! 3. many predictions queued on the real engine, stopped gracefully after some of them
//!    finished: peak memory (VmHWM) with the whole queue held;
//! 4. the same number run to the end on the fake engine (every file written): peak memory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::BenchError;
use crate::engine::Engine;
use crate::memory::Resident;
use crate::orchestrate::{execute_ready, Ready};
use crate::runner::{Category, RunConfig, RunEvent, RunReport};
use crate::session::Event;
use crate::trivial;

/// How many predictions `bench harness` runs in each phase, and how many at once.
#[derive(Debug, Clone)]
pub struct HarnessOptions {
    /// Predictions timed on the real engine.
    pub predictions: usize,
    /// Containers at once (at least one).
    pub workers: usize,
    /// Predictions queued for the memory measurement.
    pub queued: usize,
    /// How many of the queued predictions run on the real engine before a graceful stop (0
    /// skips that phase).
    pub queued_run: usize,
    /// Run all queued predictions on the fake engine too.
    pub fake: bool,
    /// Also time the official harness: the Python of a venv with `swebench==5.0.2`.
    pub official: Option<PathBuf>,
}

/// The figures of one phase.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Phase {
    /// What the phase ran (`real engine, trivial tasks`, `fake engine, 5000 run to the end`, ...).
    pub name: String,
    /// Predictions in the phase.
    pub predictions: usize,
    /// Predictions that got a verdict.
    pub completed: usize,
    /// Concurrent jobs.
    pub workers: usize,
    /// Wall time of the phase, seconds.
    pub wall_secs: f64,
    /// Wall time divided by completed predictions.
    pub secs_per_prediction: f64,
    /// Mean of each job's own time (container create to removal, grading, files).
    pub mean_job_secs: f64,
    /// Peak resident memory of this process so far (VmHWM), MiB.
    pub peak_rss_mib: f64,
    /// Resident memory at the end of the phase (VmRSS), MiB.
    pub rss_mib: f64,
}

/// What `bench harness` reports as it goes.
#[derive(Debug)]
pub enum HarnessEvent<'a> {
    /// The trivial image is being prepared (built the first time).
    PreparingImage,
    /// A phase of swe-eval's ended.
    Phase(&'a Phase),
    /// The official harness's phase ended; `ours` is swe-eval's on the same tasks.
    Official {
        /// The official harness's figures.
        official: &'a Phase,
        /// swe-eval's.
        ours: &'a Phase,
    },
    /// Not every trivial prediction on the real engine was graded: the verdicts by category.
    Ungraded(&'a BTreeMap<Category, usize>),
    /// The official harness completed fewer predictions than it was given.
    OfficialIncomplete {
        /// Completed.
        completed: usize,
        /// Given.
        of: usize,
    },
    /// The fake engine's run resolved fewer predictions than it was given.
    FakeUnresolved {
        /// Resolved.
        resolved: usize,
        /// Given.
        of: usize,
    },
    /// The fake-engine phase was asked for, but this build has no fake engine (the `testing`
    /// feature).
    FakeSkipped,
}

/// `n` trivial predictions over `n` instances sharing `image`, each patch distinct.
fn trivial_plan(n: usize, image: &str, command: &str) -> Ready {
    let mut plan = Ready::default();
    for i in 0..n {
        let id = format!("bench__trivial-{i}");
        plan.setups
            .insert(id.clone(), trivial::setup(&id, image, command));
        plan.predictions.push(trivial::prediction(
            &id,
            "bench",
            0,
            &trivial::fix(&i.to_string()),
        ));
        plan.instance_ids.push(id);
    }
    plan
}

/// Runs `plan` into `dir`; with `stop_after`, sends one interrupt once that many verdicts are
/// in.
async fn timed<E: Engine>(
    engine: Arc<E>,
    name: &str,
    plan: Ready,
    cfg: RunConfig,
    dir: &Path,
    stop_after: Option<usize>,
) -> Result<(Phase, RunReport), BenchError> {
    let n = plan.predictions.len();
    let workers = cfg.workers;
    let (itx, irx) = mpsc::unbounded_channel();
    let (etx, mut erx) = mpsc::unbounded_channel();
    let watcher = tokio::spawn(async move {
        let (mut done, mut job_secs) = (0usize, 0.0f64);
        while let Some(ev) = erx.recv().await {
            if let Event::Run(RunEvent::Verdict { verdict, .. }) = ev {
                done += 1;
                job_secs += verdict.total_secs;
                if Some(done) == stop_after {
                    let _ = itx.send(());
                }
            }
        }
        (done, job_secs)
    });
    let t = Instant::now();
    let report = execute_ready(engine, plan, cfg, dir, irx, etx).await?;
    let wall = t.elapsed().as_secs_f64();
    let (done, job_secs) = watcher.await.map_err(|source| BenchError::Task {
        what: "the job watcher",
        source,
    })?;
    let memory = Resident::read();
    let (peak, rss) = (memory.peak_mib(), memory.now_mib());
    let phase = Phase {
        name: name.to_string(),
        predictions: n,
        completed: done,
        workers,
        wall_secs: wall,
        secs_per_prediction: wall / done.max(1) as f64,
        mean_job_secs: job_secs / done.max(1) as f64,
        peak_rss_mib: peak,
        rss_mib: rss,
    };
    Ok((phase, report))
}

/// Times the official harness (SWE-bench 5 rows naming `image` and `eval_script`) on the
/// same trivial predictions, in a scratch folder; the number it completed.
fn official(
    python: &Path,
    image: &str,
    n: usize,
    workers: usize,
) -> Result<(Phase, usize), BenchError> {
    let dir = tempfile::tempdir()?;
    let plan = trivial_plan(n, image, "true");
    let mut rows = Vec::new();
    let mut preds = String::new();
    for p in &plan.predictions {
        let setup = &plan.setups[&p.instance_id];
        rows.push(serde_json::json!({
            "instance_id": p.instance_id, "repo": setup.instance.repo, "version": "0.1",
            "base_commit": "HEAD", "image": image, "eval_script": setup.eval_script,
            "log_parser": "parse_log_pytest", "eval_type": "pass_and_fail",
            "FAIL_TO_PASS": serde_json::to_string(setup.instance.fail_to_pass())?,
            "PASS_TO_PASS": serde_json::to_string(setup.instance.pass_to_pass())?,
            "patch": "", "test_patch": "", "problem_statement": "", "hints_text": "",
            "created_at": "", "environment_setup_commit": "",
        }));
        preds.push_str(&serde_json::to_string(&serde_json::json!({
            "instance_id": p.instance_id, "model_name_or_path": "bench", "model_patch": p.patch(),
        }))?);
        preds.push('\n');
    }
    std::fs::write(dir.path().join("dataset.json"), serde_json::to_vec(&rows)?)?;
    std::fs::write(dir.path().join("preds.jsonl"), preds)?;
    let t = Instant::now();
    let out = std::process::Command::new(python)
        .args([
            "-m",
            "swebench.harness.run_evaluation",
            "-d",
            "dataset.json",
            "-p",
            "preds.jsonl",
        ])
        .args([
            "--max_workers",
            &workers.to_string(),
            "-id",
            "bench",
            "-t",
            "120",
        ])
        .current_dir(dir.path())
        .output()?;
    let wall = t.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(BenchError::Official {
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("bench.bench.json"))?)?;
    // `true` prints no test results, so both harnesses grade these unresolved; what must
    // match is that every prediction was graded.
    let completed = summary["completed_instances"].as_u64().unwrap_or(0) as usize;
    let memory = Resident::read();
    let (peak, rss) = (memory.peak_mib(), memory.now_mib());
    let phase = Phase {
        name: "official harness 5.0.2, same tasks".into(),
        predictions: n,
        completed,
        workers,
        wall_secs: wall,
        secs_per_prediction: wall / n.max(1) as f64,
        mean_job_secs: f64::NAN,
        peak_rss_mib: peak,
        rss_mib: rss,
    };
    Ok((phase, completed))
}

/// Runs the phases on the default engine, telling `progress` of each as it ends; returns
/// their figures (the warm-up left out).
pub async fn measure_harness(
    opts: &HarnessOptions,
    mut progress: impl FnMut(HarnessEvent<'_>),
) -> Result<Vec<Phase>, BenchError> {
    let mut phases = Vec::new();
    // Through the engine type every run uses, so the runner is compiled for one engine type.
    let engine = Arc::new(crate::engine::connect(&Default::default()).await?);
    progress(HarnessEvent::PreparingImage);
    let image = trivial::ensure_image(&*engine).await?;
    let workers = opts.workers.max(1);
    let config = |run_id: &str| {
        let mut c = RunConfig::new(run_id);
        c.workers = workers;
        c.timeout = Duration::from_secs(120);
        c
    };

    // Warm-up (page cache, image layers), not counted.
    let warm = tempfile::tempdir()?;
    timed(
        engine.clone(),
        "warm-up",
        trivial_plan(2, &image, "true"),
        config("warm"),
        warm.path(),
        None,
    )
    .await?;

    let dir = tempfile::tempdir()?;
    let (p, r) = timed(
        engine.clone(),
        "real engine, trivial tasks",
        trivial_plan(opts.predictions, &image, "true"),
        config("bench"),
        dir.path(),
        None,
    )
    .await?;
    progress(HarnessEvent::Phase(&p));
    if r.count(Category::Resolved) + r.count(Category::Unresolved) != opts.predictions {
        progress(HarnessEvent::Ungraded(&r.counts));
    }
    phases.push(p);

    if let Some(python) = &opts.official {
        let (p, completed) = official(python, &image, opts.predictions, workers)?;
        if completed != opts.predictions {
            progress(HarnessEvent::OfficialIncomplete {
                completed,
                of: opts.predictions,
            });
        }
        progress(HarnessEvent::Official {
            official: &p,
            ours: &phases[0],
        });
        phases.push(p);
    }

    if opts.queued_run > 0 {
        let dir = tempfile::tempdir()?;
        let (p, _) = timed(
            engine.clone(),
            &format!("real engine, {} queued", opts.queued),
            trivial_plan(opts.queued, &image, "true"),
            config("bench-queued"),
            dir.path(),
            Some(opts.queued_run),
        )
        .await?;
        progress(HarnessEvent::Phase(&p));
        phases.push(p);
    }

    if opts.fake {
        if let Some(p) = fake_phase(opts.queued, &image, config, &mut progress).await? {
            phases.push(p);
        }
    }
    Ok(phases)
}

/// `queued` predictions run to the end on the fake engine (every file written): the peak
/// memory of a long run without the daemon's time.
#[cfg(feature = "testing")]
async fn fake_phase(
    queued: usize,
    image: &str,
    config: impl Fn(&str) -> RunConfig,
    progress: &mut impl FnMut(HarnessEvent<'_>),
) -> Result<Option<Phase>, BenchError> {
    use crate::engine::{exited, FakeEngine};
    let fake = FakeEngine::new();
    fake.add_image(image);
    // Answers as the driver would for a resolved trivial task (markers carry the nonce).
    fake.on_image(image, |job| {
        let driver = job.files.iter().find(|f| f.path == crate::runner::DRIVER_PATH);
        let text = driver.map(|f| String::from_utf8_lossy(&f.contents).into_owned()).unwrap_or_default();
        let nonce = text.lines().find_map(|l| l.strip_prefix("N=")).unwrap_or("").to_string();
        Ok(exited(
            0,
            &format!(
                ">>>>> Applied Patch\n>>>>> swe-eval {nonce} apply ok git apply --verbose\n>>>>> swe-eval {nonce} eval start\n\
                 + : '>>>>> Start Test Output'\nPASSED t::test_f\nPASSED t::test_ok\n=== 2 passed in 0.01s ===\n\
                 + : '>>>>> End Test Output'\n>>>>> Test Exit Code: 0\n>>>>> swe-eval {nonce} eval end 0\n"
            ),
        ))
    });
    let dir = tempfile::tempdir()?;
    let (p, r) = timed(
        Arc::new(fake),
        &format!("fake engine, {queued} run to the end"),
        trivial_plan(queued, image, "true"),
        config("bench-fake"),
        dir.path(),
        None,
    )
    .await?;
    progress(HarnessEvent::Phase(&p));
    let resolved = r.count(Category::Resolved);
    if resolved != queued {
        progress(HarnessEvent::FakeUnresolved {
            resolved,
            of: queued,
        });
    }
    Ok(Some(p))
}

/// Without the `testing` feature the fake engine is not in the binary: `None`.
#[cfg(not(feature = "testing"))]
async fn fake_phase(
    _: usize,
    _: &str,
    _: impl Fn(&str) -> RunConfig,
    progress: &mut impl FnMut(HarnessEvent<'_>),
) -> Result<Option<Phase>, BenchError> {
    progress(HarnessEvent::FakeSkipped);
    Ok(None)
}
