//! The dispatcher: one task that owns the run state, `select!`s over finished jobs,
//! interrupts, the deadline, predictions submitted while it runs (`intake.rs`) and setups
//! arriving (images prepared while the run executes, see `arrivals.rs`), writes every verdict,
//! hands submitted predictions their outcome and emits every event; and the turning of
//! predictions into jobs (resume, empty patches, shared identical patches).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;

use crate::engine::{Engine, StartGate, LABEL_OWNER, LABEL_RUN_ID, LABEL_TOOL};
use swe_eval_core::grading::Mode;
use swe_eval_core::predictions::Prediction;

use super::arrivals::Arrivals;
use super::intake::{self, Pending, Submission, Submissions};
use super::order::{self, Durations};
use super::reap::{reap, Reap};
use super::store::{self, Category, Layout, Verdict};
use super::{
    job, job_config, summary, Key, PatchMode, Plan, RunConfig, RunError, RunEvent, RunReport,
};

/// Runs `plan`. `interrupts` delivers one message per Ctrl-C; `events` receives progress.
pub async fn run<E: Engine>(
    engine: Arc<E>,
    plan: Plan,
    config: RunConfig,
    interrupts: mpsc::UnboundedReceiver<()>,
    events: mpsc::UnboundedSender<RunEvent>,
) -> Result<RunReport, RunError> {
    run_arriving(engine, plan, Arrivals::none(), config, interrupts, events).await
}

/// Runs `plan` while the setups of the instances `arrivals` awaits are still being prepared:
/// their jobs join the queue as each setup arrives, the others run meanwhile. The channel is
/// closed as soon as dispatching stops.
pub async fn run_arriving<E: Engine>(
    engine: Arc<E>,
    plan: Plan,
    arrivals: Arrivals,
    config: RunConfig,
    interrupts: mpsc::UnboundedReceiver<()>,
    events: mpsc::UnboundedSender<RunEvent>,
) -> Result<RunReport, RunError> {
    let none = Submissions::none();
    dispatch(engine, plan, arrivals, none, config, interrupts, events).await
}

/// The dispatcher: runs `plan`, the predictions `submissions` brings while it runs (each
/// answered through its reply once its verdict is written), and the jobs of instances whose
/// setups `arrivals` brings. Ends once the plan and every submission are done and the
/// submissions channel is closed (or dispatching stopped and the running jobs are over).
pub async fn dispatch<E: Engine>(
    engine: Arc<E>,
    mut plan: Plan,
    mut arrivals: Arrivals,
    mut submissions: Submissions,
    config: RunConfig,
    mut interrupts: mpsc::UnboundedReceiver<()>,
    events: mpsc::UnboundedSender<RunEvent>,
) -> Result<RunReport, RunError> {
    let started = Instant::now();
    let layout = Layout::new(&config.output, &config.run_id);
    let _lock = store::lock(&layout)?;
    let info = engine.info().await?;
    let emit = |e: RunEvent| {
        let _ = events.send(e);
    };
    // At most one job per CPU the engine runs jobs on (each is given one CPU): more at once
    // would only share them and make timeouts likelier.
    let workers =
        swe_eval_core::bounds::bound_workers(Some(config.workers), info.cpus.unwrap_or(usize::MAX));
    if let Some(message) = workers.note("jobs at once", "the engine's CPUs, one per job") {
        emit(RunEvent::Note { message });
    }
    let workers = workers.used;
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

    let (jobs, planned) = make_jobs(&plan, &config, &layout, &mut st, &emit);
    emit(planned);
    // Submitted jobs: their members' replies and timings, by job number (after the plan's).
    let mut pending: HashMap<usize, Pending> = HashMap::new();
    let mut next_seq = jobs.len();
    // Jobs start longest expected first, by the durations earlier runs left.
    let hints = match &config.durations {
        Some(path) => order::hints(path, &jobs, &emit),
        None => Durations::default(),
    };
    let mut queue: VecDeque<Arc<job::Job>> = VecDeque::new();
    // Jobs of instances whose setup has not arrived yet, by instance.
    let mut waiting: HashMap<String, Vec<job::Job>> = HashMap::new();
    let ready = set_aside_awaited(jobs, &arrivals, &mut waiting);
    enqueue(&mut queue, ready, &hints);

    // With an engine that prepares ahead, as many jobs again as there are workers are
    // prepared while others run; the gate lets `workers` of them run at once.
    let ahead = engine.prepares_ahead();
    let gate = StartGate::new(workers);
    let job_cfg = Arc::new(job_config::JobConfig {
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
    let sem = Arc::new(Semaphore::new(if ahead { 2 * workers } else { workers }));
    let mut running: JoinSet<job::JobDone> = JoinSet::new();
    let mut in_flight: HashMap<tokio::task::Id, Arc<job::Job>> = HashMap::new();
    let mut dispatching = true;
    let mut interrupts_open = true;
    let deadline = tokio::time::sleep(config.deadline.unwrap_or(Duration::MAX / 4));
    tokio::pin!(deadline);
    // When setups last arrived (the start counts as one): a burst of arrivals is ordered before
    // dispatch takes from it (order::SETTLE).
    let mut last_arrival = tokio::time::Instant::now();

    loop {
        if !dispatching {
            // Nothing more is taken: submitters learn it, and what they sent is not run.
            submissions.rx = None;
        }
        let open = submissions.rx.is_some();
        if !dispatching || (!open && waiting.is_empty() && arrivals.awaited.is_empty()) {
            // No setup is wanted any more: the preparing side may stop.
            arrivals.rx = None;
        }
        if ((queue.is_empty() && waiting.is_empty() && !open) || !dispatching) && running.is_empty()
        {
            break;
        }
        let settle_until = last_arrival + order::SETTLE;
        let settling = tokio::time::Instant::now() < settle_until
            && queue
                .front()
                .is_some_and(|head| order::awaited_runs_longer(&hints, &arrivals.awaited, head));
        tokio::select! {
            biased;
            msg = interrupts.recv(), if interrupts_open => {
                let Some(()) = msg else { interrupts_open = false; continue };
                st.interrupts += 1;
                emit(RunEvent::Interrupted { count: st.interrupts });
                dispatching = false;
                gate.close();
                arrivals.rx = None;
                if st.interrupts >= 2 {
                    st.killed = true;
                    running.abort_all();
                    while let Some(res) = running.join_next_with_id().await {
                        if let Ok((id, done)) = res {
                            let replies = in_flight.remove(&id).and_then(|j| pending.remove(&j.seq));
                            st.finish(done, replies, &emit);
                        }
                    }
                    let (n, _) = reap(&*engine, Reap::Mine { owner: &owner }, &mut st.problems).await;
                    emit(RunEvent::Reaped { count: n.len(), at_start: false });
                    break;
                }
            }
            _ = &mut deadline, if dispatching && config.deadline.is_some() => {
                dispatching = false;
                gate.close();
                emit(RunEvent::DeadlinePassed);
            }
            // Before the arrivals: a submission that says an instance is awaited was sent
            // before that instance's setup, so it is always taken first.
            sub = recv(&mut submissions.rx), if submissions.rx.is_some() => {
                let Some(sub) = sub else {
                    submissions.rx = None;
                    continue;
                };
                let now = tokio::time::Instant::now();
                for new in &sub.setups {
                    let id = new.setup.instance.instance_id.clone();
                    if new.awaited {
                        arrivals.awaited.insert(id.clone());
                        plan.setups.insert(id, new.setup.clone());
                    } else {
                        let jobs = setup_ready(&mut plan, &mut arrivals, &mut waiting, new.setup.clone());
                        mark_ready(&mut pending, &jobs, now);
                        enqueue(&mut queue, jobs, &hints);
                    }
                }
                let jobs = intake_jobs(sub, &plan, &config, &mut st, &emit, &mut pending, &mut next_seq);
                let ready = set_aside_awaited(jobs, &arrivals, &mut waiting);
                mark_ready(&mut pending, &ready, now);
                enqueue(&mut queue, ready, &hints);
            }
            arrived = recv(&mut arrivals.rx), if arrivals.rx.is_some() => {
                last_arrival = tokio::time::Instant::now();
                match arrived {
                    Some(setup) => {
                        let jobs = setup_ready(&mut plan, &mut arrivals, &mut waiting, setup);
                        mark_ready(&mut pending, &jobs, last_arrival);
                        enqueue(&mut queue, jobs, &hints);
                    }
                    None => {
                        // The preparing side is gone: what it never sent runs with the plan's
                        // setup, whose image says why there is none.
                        arrivals.rx = None;
                        arrivals.awaited.clear();
                        let left: Vec<job::Job> = waiting.drain().flat_map(|(_, j)| j).collect();
                        mark_ready(&mut pending, &left, last_arrival);
                        enqueue(&mut queue, left, &hints);
                    }
                }
            }
            Some(res) = running.join_next_with_id(), if !running.is_empty() => {
                match res {
                    Ok((id, done)) => {
                        let replies = in_flight.remove(&id).and_then(|j| pending.remove(&j.seq));
                        if st.finish(done, replies, &emit) {
                            dispatching = false;
                            gate.close();
                        }
                    }
                    Err(e) => {
                        // A job task that panicked: its predictions get an infra verdict
                        // (re-run on resume); the run goes on.
                        if let Some(job) = in_flight.remove(&e.id()) {
                            let done = panicked(&job, &config.run_id, &e.to_string());
                            st.finish(done, pending.remove(&job.seq), &emit);
                        }
                    }
                }
            }
            // More setups may be about to arrive, one expected to run longer than the head.
            _ = tokio::time::sleep_until(settle_until), if settling => {}
            permit = sem.clone().acquire_owned(), if dispatching && !queue.is_empty() && !settling => {
                let Ok(permit) = permit else { break };
                let Some(job) = queue.pop_front() else { continue };
                // A submitted job whose members' deadline passed is not run; one started close
                // to it gets the time left as its timeout.
                let mut cfg = job_cfg.clone();
                if let Some(p) = pending.get_mut(&job.seq) {
                    let now = tokio::time::Instant::now();
                    if p.expired(now) {
                        if let Some(p) = pending.remove(&job.seq) {
                            p.expire(false);
                        }
                        continue;
                    }
                    p.dispatched = Some(now);
                    if let Some(left) = p.deadline.map(|d| d.saturating_duration_since(now)) {
                        if left < cfg.timeout {
                            p.cut = true;
                            cfg = Arc::new(job_config::JobConfig { timeout: left, ..(*cfg).clone() });
                        }
                    }
                }
                emit(RunEvent::JobStarted { instance_id: job.setup.instance.instance_id.clone() });
                if job.setup.image.is_ok() {
                    st.jobs_run += 1;
                }
                let (engine, j) = (engine.clone(), job.clone());
                // Its turn to start, in dispatch order (held until it started or is over).
                let ticket = ahead.then(|| gate.ticket());
                let handle = running.spawn(async move {
                    let _permit = permit;
                    job::execute(engine, j, cfg, ticket).await
                });
                in_flight.insert(handle.id(), job);
            }
        }
    }
    st.interrupted = st.interrupts > 0;
    drop(arrivals);

    // Jobs remove their own containers; whatever is still there (a daemon that restarted
    // mid-job, a killed job) goes now. What cannot be removed is reported as unstopped.
    let (removed, unstopped) = reap(&*engine, Reap::Mine { owner: &owner }, &mut st.problems).await;
    if !removed.is_empty() {
        emit(RunEvent::Reaped {
            count: removed.len(),
            at_start: false,
        });
    }
    if let Some(path) = &config.durations {
        if let Err(e) = Durations::remember(path, &st.observed) {
            emit(RunEvent::Note {
                message: format!("job durations not kept for the next run's order: {e}"),
            });
        }
    }
    // Images the engine exported for the jobs (Swarm: pushed to the registry), with their time.
    for (_, took) in engine.exported() {
        st.time.exported += 1;
        st.time.export += took.as_secs_f64();
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
    let written = if config.summaries {
        summary::write_all(&layout, &plan, &st.verdicts, mode, &unstopped)
    } else {
        Ok(Vec::new())
    };
    let files = match written {
        Ok(files) => files,
        Err(e) => {
            st.problems.push(format!(
                "run summaries not written: {e}; the verdicts are saved, run again with --run-id {} to write them",
                config.run_id
            ));
            Vec::new()
        }
    };

    // Submitted predictions never run (an interrupt): their replies go unanswered.
    drop(pending);

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
        network: config.network,
        time: std::mem::take(&mut st.time),
        ..Default::default()
    };
    for v in st.verdicts.values() {
        *report.counts.entry(v.category).or_default() += 1;
        *report.strict_counts.entry(v.strict_category).or_default() += 1;
        report.needs_network += usize::from(v.needs_network);
    }
    report.not_run = st.planned.saturating_sub(st.recorded);
    report.problems = st.problems;
    report.output_failures = st.output_failures;
    Ok(report)
}

/// The next message of `rx`; `None` when its sender is gone (or there is no channel).
async fn recv<T>(rx: &mut Option<mpsc::UnboundedReceiver<T>>) -> Option<T> {
    match rx {
        Some(rx) => rx.recv().await,
        None => None,
    }
}

/// Puts the jobs of instances still awaited in `waiting`; returns the others.
fn set_aside_awaited(
    jobs: Vec<job::Job>,
    arrivals: &Arrivals,
    waiting: &mut HashMap<String, Vec<job::Job>>,
) -> Vec<job::Job> {
    let mut ready = Vec::new();
    for j in jobs {
        let id = &j.setup.instance.instance_id;
        if arrivals.awaited.contains(id) {
            waiting.entry(id.clone()).or_default().push(j);
        } else {
            ready.push(j);
        }
    }
    ready
}

/// `setup` is its instance's final one: the instance is no longer awaited, and the jobs that
/// waited for it are returned with it, ready for the queue.
fn setup_ready(
    plan: &mut Plan,
    arrivals: &mut Arrivals,
    waiting: &mut HashMap<String, Vec<job::Job>>,
    setup: Arc<super::Setup>,
) -> Vec<job::Job> {
    let id = setup.instance.instance_id.clone();
    arrivals.awaited.remove(&id);
    plan.setups.insert(id.clone(), setup.clone());
    let jobs = waiting.remove(&id).unwrap_or_default();
    jobs.into_iter()
        .map(|mut j| {
            j.setup = setup.clone();
            j
        })
        .collect()
}

/// Notes when submitted jobs became ready to run (their setup known).
fn mark_ready(pending: &mut HashMap<usize, Pending>, jobs: &[job::Job], now: tokio::time::Instant) {
    for j in jobs {
        if let Some(p) = pending.get_mut(&j.seq) {
            p.ready.get_or_insert(now);
        }
    }
}

/// Puts jobs whose setup is ready on the queue: longest expected first by `hints`, else (and
/// among equals) in job order.
fn enqueue(queue: &mut VecDeque<Arc<job::Job>>, mut jobs: Vec<job::Job>, hints: &Durations) {
    jobs.sort_by_key(|j| j.seq);
    queue.extend(jobs.into_iter().map(Arc::new));
    order::arrange(queue.make_contiguous(), hints);
}

/// Turns a submission's predictions into jobs, numbered from `next_seq`, each member's reply
/// kept in `pending`: as `make_jobs` does for the plan, a verdict already in a prediction's
/// folder for its patch, or an empty patch, is answered at once; identical (instance, patch)
/// pairs of one submission share a job when the run dedupes.
fn intake_jobs(
    sub: Submission,
    plan: &Plan,
    config: &RunConfig,
    st: &mut State,
    emit: &impl Fn(RunEvent),
    pending: &mut HashMap<usize, Pending>,
    next_seq: &mut usize,
) -> Vec<job::Job> {
    let now = tokio::time::Instant::now();
    let mut jobs: Vec<job::Job> = Vec::new();
    let mut by_key: HashMap<(String, String), usize> = HashMap::new();
    for item in sub.items {
        let p = &item.prediction;
        st.planned += 1;
        let Some(setup) = plan.setups.get(&p.instance_id) else {
            // Its reply is dropped: the submitter reads "not run".
            skip(p, "no setup for the instance", st, emit);
            continue;
        };
        let hash = p.patch_hash();
        let mode = match settle(p, &item.dir, &hash, config, st, emit) {
            Settled::Run(mode) => mode,
            Settled::Resumed(v) => {
                intake::answer(item.reply, &v, true);
                continue;
            }
            Settled::Empty(v) => {
                if let Some(v) = v {
                    intake::answer(item.reply, &v, false);
                }
                continue;
            }
        };
        let member = job::Member {
            model: p.model_name_or_path.clone(),
            sample: p.sample,
            dir: item.dir,
        };
        let key = (p.instance_id.clone(), hash.clone());
        if let Some(&i) = by_key.get(&key).filter(|_| config.dedupe) {
            let seq = jobs[i].seq;
            jobs[i].members.push(member);
            if let Some(pend) = pending.get_mut(&seq) {
                pend.replies.push(Some(item.reply));
                pend.deadline = match (pend.deadline, item.deadline) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
            }
            continue;
        }
        by_key.insert(key, jobs.len());
        let seq = *next_seq;
        *next_seq += 1;
        pending.insert(
            seq,
            Pending {
                replies: vec![Some(item.reply)],
                received: now,
                ready: None,
                dispatched: None,
                deadline: item.deadline,
                cut: false,
            },
        );
        jobs.push(job::Job {
            seq,
            setup: setup.clone(),
            patch: p.patch().to_string(),
            patch_hash: hash,
            mode,
            members: vec![member],
        });
    }
    jobs
}

/// The dispatcher's state; nothing else touches it.
struct State {
    /// Every verdict, for the closing summaries (none kept without them).
    verdicts: BTreeMap<Key, Verdict>,
    keep_verdicts: bool,
    /// Verdicts recorded (written or found), kept or not.
    recorded: usize,
    /// Job durations are collected for the next run's order (only with a durations file).
    keep_observed: bool,
    problems: Vec<String>,
    /// Results the output folder did not take (log files, verdicts): the run failed.
    output_failures: usize,
    planned: usize,
    resumed: usize,
    jobs_run: usize,
    infra_retries: u32,
    interrupts: u32,
    interrupted: bool,
    killed: bool,
    /// (instance, seconds its container ran) of the jobs that ran to a verdict, for the next
    /// run's order.
    observed: Vec<(String, f64)>,
    time: super::TimeSpent,
}

impl State {
    fn new(config: &RunConfig, planned: usize) -> Self {
        State {
            verdicts: BTreeMap::new(),
            keep_verdicts: config.summaries,
            recorded: 0,
            keep_observed: config.durations.is_some(),
            problems: Vec::new(),
            output_failures: 0,
            planned,
            resumed: 0,
            jobs_run: 0,
            infra_retries: 0,
            interrupts: 0,
            interrupted: false,
            killed: false,
            observed: Vec::new(),
            time: Default::default(),
        }
    }

    /// Records a finished job: writes each verdict (atomically), emits it and hands it to the
    /// member's reply, if it was submitted (`pending`). Returns true when a write failed, so
    /// the dispatcher stops (a full disk would fail every job). A submitted job whose timeout
    /// was cut to its deadline and that timed out has no verdict: its members are told it
    /// expired, and nothing is written (a timeout it was not given says nothing of the patch).
    fn finish(
        &mut self,
        done: job::JobDone,
        mut pending: Option<Pending>,
        emit: &impl Fn(RunEvent),
    ) -> bool {
        if pending.as_ref().is_some_and(|p| p.cut)
            && done.verdicts.first().is_some_and(|(_, v)| v.timed_out)
        {
            self.planned = self.planned.saturating_sub(done.verdicts.len());
            if let Some(p) = pending {
                p.expire(true);
            }
            return false;
        }
        if done.withdrawn {
            // Dispatched but never started: not run after all.
            self.jobs_run = self.jobs_run.saturating_sub(1);
            return false;
        }
        if let Some(e) = done.write_error {
            self.output_failures += 1;
            self.problem(format!("log files not written, verdict dropped: {e}"), emit);
            return true;
        }
        if let Some((_, first)) = done.verdicts.first() {
            self.infra_retries += first.infra_retries;
            if first.run_secs > 0.0 || first.setup_secs > 0.0 {
                self.time.add(first);
            }
            if self.keep_observed && first.category != Category::InfraError && first.run_secs > 0.0
            {
                self.observed
                    .push((first.instance_id.clone(), first.run_secs));
            }
        }
        for (i, (dir, v)) in done.verdicts.into_iter().enumerate() {
            if let Err(e) = store::write_verdict(&dir, &v) {
                self.output_failures += 1;
                self.problem(format!("verdict not written: {e}"), emit);
                return true;
            }
            if let Some(p) = &mut pending {
                p.deliver(i, &v);
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
        self.recorded += 1;
        if self.keep_verdicts {
            self.verdicts
                .insert((v.model.clone(), v.sample, v.instance_id.clone()), v);
        }
    }

    fn problem(&mut self, message: String, emit: &impl Fn(RunEvent)) {
        emit(RunEvent::Problem {
            message: message.clone(),
        });
        self.problems.push(message);
    }
}

/// Turns predictions into jobs: resumed ones and empty patches get their verdict at once,
/// identical (instance, patch) pairs share a job.
fn make_jobs(
    plan: &Plan,
    config: &RunConfig,
    layout: &Layout,
    st: &mut State,
    emit: &impl Fn(RunEvent),
) -> (Vec<job::Job>, RunEvent) {
    let mut groups: Vec<job::Job> = Vec::new();
    // (instance, patch hash, and the prediction itself when identical patches do not share).
    type GroupKey = (String, String, Option<(String, u32)>);
    let mut by_key: HashMap<GroupKey, usize> = HashMap::new();
    let (mut resumed, mut empty, mut shared) = (0, 0, 0);
    for p in &plan.predictions {
        let Some(setup) = plan.setups.get(&p.instance_id) else {
            skip(p, "instance not in the dataset", st, emit);
            continue;
        };
        let dir = layout.prediction_dir(&p.model_name_or_path, &p.instance_id, p.sample);
        let hash = p.patch_hash();
        let mode = match settle(p, &dir, &hash, config, st, emit) {
            Settled::Run(mode) => mode,
            Settled::Resumed(_) => {
                resumed += 1;
                continue;
            }
            Settled::Empty(_) => {
                empty += 1;
                continue;
            }
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
    (groups, planned)
}

/// What becomes of a prediction before any job is made for it.
enum Settled {
    /// Its verdict is in its folder for this patch (resume): recorded, nothing to run.
    Resumed(Verdict),
    /// An empty patch: its verdict written and recorded (`None`: the write failed, reported).
    Empty(Option<Verdict>),
    /// It runs, in this mode.
    Run(PatchMode),
}

/// The one rule for every prediction, planned or submitted: a verdict already in `dir` for
/// its patch is taken (resume), an empty patch gets its verdict at once (unless the run
/// runs empty patches), anything else runs.
fn settle(
    p: &Prediction,
    dir: &std::path::Path,
    hash: &str,
    config: &RunConfig,
    st: &mut State,
    emit: &impl Fn(RunEvent),
) -> Settled {
    if let Some(v) = store::load_valid(dir, hash, &config.verdict_limits()) {
        st.record(v.clone(), true, emit);
        return Settled::Resumed(v);
    }
    if !p.is_empty_patch() {
        return Settled::Run(PatchMode::Apply);
    }
    if config.run_empty {
        return Settled::Run(PatchMode::None);
    }
    let v = empty_verdict(p, hash, &config.run_id);
    match store::write_verdict(dir, &v) {
        Ok(()) => {
            st.record(v.clone(), false, emit);
            Settled::Empty(Some(v))
        }
        Err(e) => {
            st.output_failures += 1;
            st.problem(format!("verdict not written: {e}"), emit);
            Settled::Empty(None)
        }
    }
}

/// Reports a prediction left out for `why` (it does not count as planned).
fn skip(p: &Prediction, why: &str, st: &mut State, emit: &impl Fn(RunEvent)) {
    st.problem(
        format!(
            "prediction for {} (model {}, sample {}) skipped: {why}",
            p.instance_id, p.model_name_or_path, p.sample
        ),
        emit,
    );
    st.planned -= 1;
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
        timeout_secs: None,
        oom_killed: false,
        memory_bytes: None,
        error_reason: None,
        reason: None,
        needs_network: false,
        infra_retries: 0,
        setup_secs: 0.0,
        run_secs: 0.0,
        teardown_secs: 0.0,
        total_secs: 0.0,
        apply_secs: None,
        before_tests_secs: None,
        tests_secs: None,
        after_tests_secs: None,
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
            v.error_reason = Some(swe_eval_core::grading::ErrorReason::Infra);
            v.strict_category = Category::InfraError;
            v.reason = Some(format!("job failed: {message}"));
            (m.dir.clone(), v)
        })
        .collect();
    job::JobDone {
        verdicts,
        write_error: None,
        withdrawn: false,
    }
}
