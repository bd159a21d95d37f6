//! The run: every prediction applied and tested in its own container, graded, and written
//! down, with bounded workers, retries, cancellation and resume.
//!
//! One dispatcher task owns the run state. It `select!`s over finished jobs, interrupts
//! (Ctrl-C, fed in by the caller) and the run's deadline; it alone writes verdicts and sends
//! [`RunEvent`]s to whoever listens (the progress bar, the CLI). Workers run one job each
//! (see `job.rs`), bounded by a semaphore, and never print.
//!
//! - **Resume.** Each prediction's `verdict.json` (written atomically, last) records its patch
//!   hash; a run with the same id skips predictions whose verdict exists for the same patch and
//!   re-runs changed ones. A lock file keeps two processes off one run.
//! - **Dedupe.** Predictions with the same instance and patch run once and share the verdict.
//! - **Faults.** Transient engine errors are retried with exponential backoff and counted;
//!   when retries run out, or the instance's image is missing, the verdict is `infra_error`,
//!   apart from the model's failures, and is re-run by the next resume.
//! - **Cancellation.** The first interrupt stops dispatching and lets running jobs finish; the
//!   second aborts them and kills this run's containers by label. Either way everything
//!   finished is written. Each container is labelled with its run id and owning process; at
//!   start the containers of processes that are gone (a run killed with SIGKILL) are reaped,
//!   at the end this process's own.
//! - **Memory.** Logs go to disk as each job ends; the dispatcher keeps only verdicts (a few
//!   hundred bytes each) and the queue of jobs (their patches).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;

use crate::dataset::Instance;
use crate::engine::{Engine, EngineError, Limits, LABEL_RUN_ID, LABEL_TOOL};
use crate::grading::Mode;
use crate::predictions::Prediction;

pub mod driver;
mod grade;
mod job;
pub mod store;
pub mod summary;

pub use driver::PatchMode;
pub use store::{Category, Layout, Verdict};

/// Label naming the process that owns a container (`host:pid:start-time`), so a later run can
/// tell a leftover of a dead run from a container of a live one.
pub use crate::engine::{LABEL_HOLD, LABEL_OWNER};

/// What an instance runs in and how it is graded, prepared by the caller (spec + images).
#[derive(Debug, Clone)]
pub struct Setup {
    pub instance: Instance,
    /// The image to run in, or why there is none (e.g. its build failed): its predictions are
    /// then infrastructure errors and nothing else is affected.
    pub image: Result<String, String>,
    pub eval_script: String,
    /// Log parser name (see `logparse::PARSER_NAMES`).
    pub log_parser: String,
}

/// The settings of a run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub run_id: String,
    pub output: PathBuf,
    pub workers: usize,
    /// Per job, from container start; the engine kills the container when it passes.
    pub timeout: Duration,
    /// Strict mode: collection-altering files the patch adds are removed (edits restored)
    /// before the tests run.
    pub strict: bool,
    pub limits: Limits,
    pub network: bool,
    pub max_output_bytes: usize,
    /// Attempts per job when the engine fails transiently (default 4: with the default
    /// backoff the last one starts 14 s after the first failure, time for a daemon restart).
    pub attempts: u32,
    /// Wait before the first retry (doubling after).
    pub backoff: Duration,
    /// Run identical (instance, patch) pairs once.
    pub dedupe: bool,
    /// Run the eval script even without a patch (validate), instead of `empty_patch`.
    pub run_empty: bool,
    /// Stop dispatching new jobs after this long (running jobs finish).
    pub deadline: Option<Duration>,
}

impl RunConfig {
    pub fn new(run_id: &str, output: PathBuf) -> Self {
        RunConfig {
            run_id: run_id.to_string(),
            output,
            workers: default_workers(),
            timeout: Duration::from_secs(1800),
            strict: false,
            limits: Limits::default(),
            network: false,
            max_output_bytes: 8 << 20,
            attempts: 4,
            backoff: Duration::from_secs(2),
            dedupe: true,
            run_empty: false,
            deadline: None,
        }
    }
}

/// min(4, cores).
pub fn default_workers() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(4)
}

/// What the caller hands the runner.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Setups by instance id. Predictions of other instances are reported and skipped.
    pub setups: HashMap<String, Arc<Setup>>,
    pub predictions: Vec<Prediction>,
    /// The instances the run covers, for the official summary's totals and `incomplete_ids`.
    pub instance_ids: Vec<String>,
}

/// What the runner tells its listeners.
#[derive(Debug, Clone)]
pub enum RunEvent {
    /// The plan is made: `predictions` in all, `resumed` already done, `empty` not run, `jobs`
    /// containers to run (fewer than the rest when identical patches share one).
    Planned {
        predictions: usize,
        resumed: usize,
        empty: usize,
        jobs: usize,
        shared: usize,
    },
    JobStarted {
        instance_id: String,
    },
    /// A prediction's verdict, written (or found, when `resumed`).
    Verdict {
        verdict: Box<Verdict>,
        resumed: bool,
    },
    /// An interrupt arrived; `count` 1 stops dispatching, 2 kills.
    Interrupted {
        count: u32,
    },
    /// The deadline passed; nothing more is dispatched.
    DeadlinePassed,
    /// Something went wrong that the run survives (a file not written, a reap that failed).
    Problem {
        message: String,
    },
    /// Containers removed by a reap (`at_start` or at the end).
    Reaped {
        count: usize,
        at_start: bool,
    },
}

/// How a run ended.
#[derive(Debug, Clone, Default)]
pub struct RunReport {
    pub run_id: String,
    /// Verdicts by category, official grading (resumed ones included).
    pub counts: BTreeMap<Category, usize>,
    pub strict_counts: BTreeMap<Category, usize>,
    pub predictions: usize,
    pub resumed: usize,
    /// Containers run (a job counts once however many predictions shared it; predictions
    /// without an image run none).
    pub jobs_run: usize,
    pub infra_retries: u32,
    /// Predictions left without a verdict (interrupted, deadline, write failures).
    pub not_run: usize,
    pub interrupted: bool,
    pub killed: bool,
    /// Containers of this run found (and removed) at the end.
    pub leftover_containers: usize,
    /// Containers of this run that could not be removed.
    pub unstopped_containers: Vec<String>,
    pub problems: Vec<String>,
    /// Files written: the official summaries, then the JSONL and CSV.
    pub files: Vec<PathBuf>,
    pub wall: Duration,
}

impl RunReport {
    pub fn count(&self, c: Category) -> usize {
        self.counts.get(&c).copied().unwrap_or(0)
    }

    /// Verdicts written by this run (resumed ones excluded).
    pub fn verdicts_written(&self) -> usize {
        self.counts.values().sum::<usize>() - self.resumed
    }
}

/// A failure that stops the run before it starts, or its final files from being written.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Lock(#[from] store::LockError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Write(#[from] crate::report::ReportError),
}

/// Runs `plan`. `interrupts` delivers one message per Ctrl-C; `events` receives progress.
pub async fn run<E: Engine>(
    engine: Arc<E>,
    plan: Plan,
    config: RunConfig,
    mut interrupts: mpsc::UnboundedReceiver<()>,
    events: mpsc::UnboundedSender<RunEvent>,
) -> Result<RunReport, RunError> {
    let started = Instant::now();
    let layout = Layout::new(&config.output, &config.run_id);
    let _lock = store::lock(&layout)?;
    engine.info().await?;
    let emit = |e: RunEvent| {
        let _ = events.send(e);
    };
    let mut st = State::new(&config, plan.predictions.len());

    let owner = crate::owner::owner_id();
    let (reaped, _) = reap(
        &*engine,
        Reap::Stale {
            run_id: &config.run_id,
        },
        &mut st.problems,
    )
    .await;
    emit(RunEvent::Reaped {
        count: reaped.len(),
        at_start: true,
    });

    let (queue, planned) = make_jobs(&plan, &config, &layout, &mut st, &emit);
    emit(planned);
    let mut queue: VecDeque<Arc<job::Job>> = queue.into();

    let job_cfg = Arc::new(job::JobConfig {
        run_id: config.run_id.clone(),
        labels: BTreeMap::from([
            (LABEL_TOOL.to_string(), "1".to_string()),
            (LABEL_RUN_ID.to_string(), config.run_id.clone()),
            (LABEL_OWNER.to_string(), owner.clone()),
        ]),
        timeout: config.timeout,
        limits: config.limits.clone(),
        network: config.network,
        max_output_bytes: config.max_output_bytes,
        strict: config.strict,
        attempts: config.attempts,
        backoff: config.backoff,
    });
    let sem = Arc::new(Semaphore::new(config.workers.max(1)));
    let mut running: JoinSet<job::JobDone> = JoinSet::new();
    let mut in_flight: HashMap<tokio::task::Id, Arc<job::Job>> = HashMap::new();
    let mut dispatching = true;
    let mut interrupts_open = true;
    let deadline = tokio::time::sleep(config.deadline.unwrap_or(Duration::MAX / 4));
    tokio::pin!(deadline);

    loop {
        if (queue.is_empty() || !dispatching) && running.is_empty() {
            break;
        }
        tokio::select! {
            biased;
            msg = interrupts.recv(), if interrupts_open => {
                let Some(()) = msg else { interrupts_open = false; continue };
                st.interrupts += 1;
                emit(RunEvent::Interrupted { count: st.interrupts });
                dispatching = false;
                if st.interrupts >= 2 {
                    st.killed = true;
                    running.abort_all();
                    while let Some(res) = running.join_next_with_id().await {
                        if let Ok((id, done)) = res {
                            in_flight.remove(&id);
                            st.finish(done, &emit);
                        }
                    }
                    let (n, _) = reap(&*engine, Reap::Mine { owner: &owner }, &mut st.problems).await;
                    emit(RunEvent::Reaped { count: n.len(), at_start: false });
                    break;
                }
            }
            _ = &mut deadline, if dispatching && config.deadline.is_some() => {
                dispatching = false;
                emit(RunEvent::DeadlinePassed);
            }
            Some(res) = running.join_next_with_id(), if !running.is_empty() => {
                match res {
                    Ok((id, done)) => {
                        in_flight.remove(&id);
                        if st.finish(done, &emit) {
                            dispatching = false;
                        }
                    }
                    Err(e) => {
                        // A job task that panicked: its predictions get an infra verdict
                        // (re-run on resume); the run goes on.
                        if let Some(job) = in_flight.remove(&e.id()) {
                            let done = panicked(&job, &config.run_id, &e.to_string());
                            st.finish(done, &emit);
                        }
                    }
                }
            }
            permit = sem.clone().acquire_owned(), if dispatching && !queue.is_empty() => {
                let Ok(permit) = permit else { break };
                let Some(job) = queue.pop_front() else { continue };
                emit(RunEvent::JobStarted { instance_id: job.setup.instance.instance_id.clone() });
                if job.setup.image.is_ok() {
                    st.jobs_run += 1;
                }
                let (engine, cfg, j) = (engine.clone(), job_cfg.clone(), job.clone());
                let handle = running.spawn(async move {
                    let _permit = permit;
                    job::execute(engine, j, cfg).await
                });
                in_flight.insert(handle.id(), job);
            }
        }
    }
    st.interrupted = st.interrupts > 0;

    // Jobs remove their own containers; whatever is still there (a daemon that restarted
    // mid-job, a killed job) goes now. What cannot be removed is reported as unstopped.
    let (removed, unstopped) = reap(&*engine, Reap::Mine { owner: &owner }, &mut st.problems).await;
    if !removed.is_empty() {
        emit(RunEvent::Reaped {
            count: removed.len(),
            at_start: false,
        });
    }
    // What the engine added for the jobs (Swarm: registry names of pushed images) goes before
    // the caller cleans up the images.
    st.problems.extend(engine.finish_run().await);
    let mode = if config.strict {
        Mode::Strict
    } else {
        Mode::Official
    };
    // A summary that cannot be written (a full disk) is reported with the rest, not instead
    // of it: every verdict is already on disk and a rerun with the same id writes the summaries.
    let files = match summary::write_all(&layout, &plan, &st.verdicts, mode, &unstopped) {
        Ok(files) => files,
        Err(e) => {
            st.problems.push(format!(
                "run summaries not written: {e}; the verdicts are saved, run again with --run-id {} to write them",
                config.run_id
            ));
            Vec::new()
        }
    };

    let mut report = RunReport {
        run_id: config.run_id.clone(),
        predictions: plan.predictions.len(),
        resumed: st.resumed,
        jobs_run: st.jobs_run,
        infra_retries: st.infra_retries,
        interrupted: st.interrupted,
        killed: st.killed,
        leftover_containers: removed.len(),
        unstopped_containers: unstopped,
        files,
        wall: started.elapsed(),
        ..Default::default()
    };
    for v in st.verdicts.values() {
        *report.counts.entry(v.category).or_default() += 1;
        *report.strict_counts.entry(v.strict_category).or_default() += 1;
    }
    report.not_run = st.planned.saturating_sub(st.verdicts.len());
    report.problems = st.problems;
    Ok(report)
}

/// Key of a prediction within a run.
type Key = (String, u32, String); // (model, sample, instance id)

/// The dispatcher's state; nothing else touches it.
struct State {
    verdicts: BTreeMap<Key, Verdict>,
    problems: Vec<String>,
    planned: usize,
    resumed: usize,
    jobs_run: usize,
    infra_retries: u32,
    interrupts: u32,
    interrupted: bool,
    killed: bool,
}

impl State {
    fn new(_config: &RunConfig, planned: usize) -> Self {
        State {
            verdicts: BTreeMap::new(),
            problems: Vec::new(),
            planned,
            resumed: 0,
            jobs_run: 0,
            infra_retries: 0,
            interrupts: 0,
            interrupted: false,
            killed: false,
        }
    }

    /// Records a finished job: writes each verdict (atomically) and emits it. Returns true
    /// when a write failed, so the dispatcher stops (a full disk would fail every job).
    fn finish(&mut self, done: job::JobDone, emit: &impl Fn(RunEvent)) -> bool {
        if let Some(e) = done.write_error {
            self.problem(format!("log files not written, verdict dropped: {e}"), emit);
            return true;
        }
        if let Some(first) = done.verdicts.first() {
            self.infra_retries += first.1.infra_retries;
        }
        for (dir, v) in done.verdicts {
            if let Err(e) = crate::fsutil::write_json_atomic(&dir.join(store::VERDICT_FILE), &v) {
                self.problem(format!("verdict not written: {e}"), emit);
                return true;
            }
            self.record(v, false, emit);
        }
        false
    }

    fn record(&mut self, v: Verdict, resumed: bool, emit: &impl Fn(RunEvent)) {
        if resumed {
            self.resumed += 1;
        }
        emit(RunEvent::Verdict {
            verdict: Box::new(v.clone()),
            resumed,
        });
        self.verdicts
            .insert((v.model.clone(), v.sample, v.instance_id.clone()), v);
    }

    fn problem(&mut self, message: String, emit: &impl Fn(RunEvent)) {
        emit(RunEvent::Problem {
            message: message.clone(),
        });
        self.problems.push(message);
    }
}

/// The predictions a run with this layout still has to run: those without a verdict for
/// their patch (empty patches count only when `run_empty`). The caller prepares images for
/// these alone, so a resumed run does not wait for images it will not use.
pub fn pending<'a>(predictions: &'a [Prediction], config: &RunConfig) -> Vec<&'a Prediction> {
    let layout = Layout::new(&config.output, &config.run_id);
    predictions
        .iter()
        .filter(|p| config.run_empty || !p.is_empty_patch())
        .filter(|p| {
            let dir = layout.prediction_dir(&p.model_name_or_path, &p.instance_id, p.sample);
            store::load_valid(&dir, &p.patch_hash()).is_none()
        })
        .collect()
}

/// Turns predictions into jobs: resumed ones and empty patches get their verdict at once,
/// identical (instance, patch) pairs share a job.
fn make_jobs(
    plan: &Plan,
    config: &RunConfig,
    layout: &Layout,
    st: &mut State,
    emit: &impl Fn(RunEvent),
) -> (Vec<Arc<job::Job>>, RunEvent) {
    let mut groups: Vec<job::Job> = Vec::new();
    // (instance, patch hash, and the prediction itself when identical patches do not share).
    type GroupKey = (String, String, Option<(String, u32)>);
    let mut by_key: HashMap<GroupKey, usize> = HashMap::new();
    let (mut resumed, mut empty, mut shared) = (0, 0, 0);
    for p in &plan.predictions {
        if !plan.setups.contains_key(&p.instance_id) {
            st.problem(
                format!(
                    "prediction for {} (model {}, sample {}) skipped: instance not in the dataset",
                    p.instance_id, p.model_name_or_path, p.sample
                ),
                emit,
            );
            st.planned -= 1;
            continue;
        }
        let setup = &plan.setups[&p.instance_id];
        let dir = layout.prediction_dir(&p.model_name_or_path, &p.instance_id, p.sample);
        let hash = p.patch_hash();
        if let Some(v) = store::load_valid(&dir, &hash) {
            resumed += 1;
            st.record(v, true, emit);
            continue;
        }
        let mode = if p.is_empty_patch() {
            if !config.run_empty {
                empty += 1;
                let v = empty_verdict(p, &hash, &config.run_id);
                match crate::fsutil::write_json_atomic(&dir.join(store::VERDICT_FILE), &v) {
                    Ok(()) => st.record(v, false, emit),
                    Err(e) => st.problem(format!("verdict not written: {e}"), emit),
                }
                continue;
            }
            PatchMode::None
        } else {
            PatchMode::Apply
        };
        let member = job::Member {
            model: p.model_name_or_path.clone(),
            sample: p.sample,
            dir,
        };
        let key = (
            p.instance_id.clone(),
            hash.clone(),
            (!config.dedupe).then(|| (p.model_name_or_path.clone(), p.sample)),
        );
        if let Some(&i) = by_key.get(&key) {
            shared += 1;
            groups[i].members.push(member);
            continue;
        }
        by_key.insert(key, groups.len());
        groups.push(job::Job {
            seq: groups.len(),
            setup: setup.clone(),
            patch: p.patch().to_string(),
            patch_hash: hash,
            mode,
            members: vec![member],
        });
    }
    let planned = RunEvent::Planned {
        predictions: st.planned,
        resumed,
        empty,
        jobs: groups.len(),
        shared,
    };
    (groups.into_iter().map(Arc::new).collect(), planned)
}

fn empty_verdict(p: &Prediction, hash: &str, run_id: &str) -> Verdict {
    Verdict {
        instance_id: p.instance_id.clone(),
        model: p.model_name_or_path.clone(),
        sample: p.sample,
        patch_hash: hash.to_string(),
        run_id: run_id.to_string(),
        category: Category::EmptyPatch,
        resolved: false,
        strict_category: Category::EmptyPatch,
        strict_resolved: false,
        official_report: false,
        applied_with: None,
        fail_to_pass_success: 0,
        fail_to_pass_failure: 0,
        pass_to_pass_success: 0,
        pass_to_pass_failure: 0,
        test_exit_code: None,
        timed_out: false,
        error_reason: None,
        reason: None,
        infra_retries: 0,
        setup_secs: 0.0,
        run_secs: 0.0,
        teardown_secs: 0.0,
        total_secs: 0.0,
        shared_from: None,
    }
}

fn panicked(job: &job::Job, run_id: &str, message: &str) -> job::JobDone {
    let verdicts = job
        .members
        .iter()
        .map(|m| {
            let mut v = empty_verdict(
                &Prediction {
                    instance_id: job.setup.instance.instance_id.clone(),
                    model_name_or_path: m.model.clone(),
                    model_patch: None,
                    sample: m.sample,
                    line: None,
                    extra: Default::default(),
                },
                &job.patch_hash,
                run_id,
            );
            v.category = Category::InfraError;
            v.error_reason = Some(crate::grading::ErrorReason::Infra);
            v.strict_category = Category::InfraError;
            v.reason = Some(format!("job failed: {message}"));
            (m.dir.clone(), v)
        })
        .collect();
    job::JobDone {
        verdicts,
        write_error: None,
    }
}

/// Which containers a reap removes.
#[derive(Debug, Clone, Copy)]
enum Reap<'a> {
    /// At start: containers whose owning process (on this host) is gone, whatever their run,
    /// and unowned ones of this run id. A live process's containers are never touched, even
    /// under the same run id (another output folder may use it).
    Stale { run_id: &'a str },
    /// At the end or on a kill: this process's own containers.
    Mine { owner: &'a str },
}

/// Removes containers as `which` says. Returns the names removed and those that could not
/// be; failures are noted and the run goes on.
async fn reap<E: Engine>(
    engine: &E,
    which: Reap<'_>,
    problems: &mut Vec<String>,
) -> (Vec<String>, Vec<String>) {
    let all = match engine
        .list_containers(BTreeMap::from([(LABEL_TOOL.to_string(), String::new())]))
        .await
    {
        Ok(list) => list,
        Err(e) => {
            problems.push(format!("cannot list leftover containers: {e}"));
            return (Vec::new(), Vec::new());
        }
    };
    let (mut removed, mut failed) = (Vec::new(), Vec::new());
    for c in all {
        let owner = c.labels.get(LABEL_OWNER);
        let doomed = match which {
            Reap::Stale { run_id } => match owner {
                Some(o) => crate::owner::owner_is_dead(o),
                None => c.labels.get(LABEL_RUN_ID).is_some_and(|r| r == run_id),
            },
            // Holds outlive the jobs: the caller releases them before it removes images.
            Reap::Mine { owner: me } => {
                owner.is_some_and(|o| o == me) && !c.labels.contains_key(LABEL_HOLD)
            }
        };
        if doomed {
            match engine.remove_container(&c.id).await {
                Ok(()) => removed.push(c.name),
                Err(e) => {
                    problems.push(format!("cannot remove leftover container {}: {e}", c.name));
                    failed.push(c.name);
                }
            }
        }
    }
    (removed, failed)
}

#[cfg(test)]
mod tests;
