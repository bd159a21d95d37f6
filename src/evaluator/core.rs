//! The evaluator: one long-lived dispatcher (the runner's, as `run` uses it) fed with
//! predictions as they come, images prepared when an instance is first asked for, verdicts
//! cached by content, every request and result kept in the state database.
//!
//! A request's way: checked, keyed by content when executed (the instance's part of the key,
//! its recipe, made once per instance), scored (similarity against the gold patch, read once
//! per instance; an executed patch's score is kept by key, so the same content is not compared
//! again); stored, and answered at once when not executed or when its key is cached (the last
//! verdicts are kept in memory in front of the database); else joined to the job of an
//! identical request in flight, or made the leader of a new job: its instance's image is asked
//! for if not there yet (the dispatcher holds its jobs until the setup arrives), and the job is
//! submitted with the request's deadline. The job's outcome goes to every request of the key
//! (stored, then published to waiters), and into the cache unless masked. One task watches
//! every deadline (earliest first) and answers `timeout` (masked) for a request whose deadline
//! passes first. On start, every request stored without a result goes the same way again.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch, Notify};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::engine::Engine;
use crate::images::{self, hold_labels, reap_dead_holds, Holding, StopFlag};
use crate::orchestrate::{
    instance_setup, instance_specs, prepare_streaming, release_and_clean, Event, Preparing, Specs,
};
use crate::runner::{
    self, Arrive, Delivery, NewSetup, Plan, RunEvent, RunReport, Submission, Submit, Submitted,
};
use swe_eval_core::dataset::{Dataset, Instance};
use swe_eval_core::predictions::Prediction;
use swe_eval_core::reward::Oracle;
use swe_eval_core::spec::TestSpec;

use super::evaluation::{Evaluation, Executed, State, Status};
use super::key::{KeySettings, Recipe};
use super::memo::Memo;
use super::metrics::{inc, Metrics};
use super::options::EvaluatorOptions;
use super::request::{Refusal, RefusalCode, Request};
use super::store::{self, now_ms, Row, Store, StoreError};

/// Why an evaluator could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The state folder could not be made.
    #[error("cannot create the state folder {path}: {source}")]
    State {
        /// The folder.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Another process serves from the same state folder.
    #[error(transparent)]
    Lock(#[from] runner::LockError),
    /// The state database cannot be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The engine does not answer.
    #[error(transparent)]
    Engine(#[from] crate::engine::EngineError),
}

/// How the evaluator stands, for a health check.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Health {
    /// New requests are accepted.
    pub accepting: bool,
    /// The dispatcher takes jobs.
    pub dispatching: bool,
    /// The engine answered (`None`), or why not.
    pub engine_error: Option<String>,
    /// Requests accepted and not done.
    pub queued: usize,
    /// Jobs whose container runs.
    pub running: u64,
    /// Instances whose image is ready.
    pub images_ready: usize,
    /// Instances whose image is being prepared.
    pub images_preparing: usize,
    /// Seconds since the start.
    pub uptime_s: f64,
}

/// How a shutdown ended.
#[derive(Debug)]
pub struct Shutdown {
    /// The dispatcher's report (`None` when it had failed).
    pub run: Option<RunReport>,
    /// Requests left without a result (run at the next start).
    pub left: usize,
}

/// Scores of executed patches kept in memory, by content key.
const MEMO_SCORES: usize = 16_384;

/// An instance's image, as far as the evaluator knows.
#[derive(Debug, Clone)]
enum Image {
    /// Being prepared: the dispatcher holds its jobs until its setup arrives.
    Preparing,
    /// Ready: the image.
    Ready(String),
    /// Failed; a transient failure (the engine away) is prepared again at the next request.
    Failed { transient: bool },
}

/// An accepted request not done yet.
struct Req {
    /// The evaluation as answered at acceptance (state queued, no outcome).
    base: Evaluation,
    key: String,
    patch: String,
    deadline: Option<Instant>,
    accepted: Instant,
    tx: watch::Sender<Option<Arc<Evaluation>>>,
    /// Its result is being stored: nothing else may finish it.
    closing: bool,
}

/// The requests waiting on one job (one content key), its leader first.
struct Flight {
    members: Vec<u64>,
}

/// What the evaluator's tasks share, behind one lock.
#[derive(Default)]
struct Book {
    specs: HashMap<String, Result<Arc<TestSpec>, String>>,
    /// The content key's part of each instance with a spec (all but the patch).
    recipes: HashMap<String, Recipe>,
    /// Each instance's gold patch, read once for the similarity.
    oracles: HashMap<String, Arc<Oracle>>,
    images: HashMap<String, Image>,
    pending: HashMap<u64, Req>,
    flights: HashMap<String, Flight>,
    /// The deadlines of the requests in `pending` that have one, earliest first.
    deadlines: BTreeSet<(Instant, u64)>,
    accepting: bool,
    /// Executed requests admitted past the queue's bound and not yet in `pending` (being
    /// scored and stored): counted against the bound, so concurrent submissions cannot
    /// overshoot it.
    reserved: usize,
}

/// Places in the queue taken by a submission under way; given back when dropped (the requests
/// are in `pending` by then, or were refused).
struct Reservation<'a, E: Engine> {
    shared: &'a Shared<E>,
    places: usize,
}

impl<E: Engine> Drop for Reservation<'_, E> {
    fn drop(&mut self) {
        let mut book = self.shared.lock();
        book.reserved = book.reserved.saturating_sub(self.places);
    }
}

struct Shared<E: Engine> {
    engine: Arc<E>,
    holding: Holding<E>,
    dataset: Dataset,
    opts: EvaluatorOptions,
    settings: KeySettings,
    store: Store,
    submit: Submit,
    arrive: Arrive,
    to_prepare: mpsc::UnboundedSender<String>,
    interrupts: mpsc::UnboundedSender<()>,
    book: Mutex<Book>,
    /// The scores of executed patches by content key (the last [`MEMO_SCORES`]): a patch sent
    /// again is not compared with the gold patch again.
    scores: Mutex<Memo<String, Score>>,
    next_seq: AtomicU64,
    metrics: Metrics,
    notices: mpsc::UnboundedSender<String>,
    started: Instant,
    /// Jobs at once: `-j` within the engine's CPUs, as the dispatcher bounds it.
    workers: usize,
    /// Images the preparations made (removed at shutdown as the cache level says).
    created: Mutex<Vec<(String, images::Layer)>>,
    stop_preparing: StopFlag,
    preparer_stop: Notify,
    /// An earlier deadline than the deadline task waits for was added.
    deadline_added: Arc<Notify>,
    /// The state folder's lock, released at shutdown.
    lock: Mutex<Option<runner::RunLock>>,
    /// The runtime the evaluator started on: its tasks (the dispatcher's, the jobs' waits, the
    /// deliveries) run there even when a request comes from another runtime, so a face can
    /// answer on threads of its own, apart from the jobs' engine calls, grading and writes.
    rt: tokio::runtime::Handle,
}

/// The evaluator's tasks: the dispatcher and the preparer.
type Tasks = (
    JoinHandle<Result<RunReport, runner::RunError>>,
    JoinHandle<()>,
);

/// The evaluator (see the module docs). Cheap to share behind an `Arc`.
pub struct Evaluator<E: Engine> {
    shared: Arc<Shared<E>>,
    tasks: Mutex<Option<Tasks>>,
    /// The task that answers expired deadlines.
    deadlines: tokio::task::AbortHandle,
}

impl<E: Engine> Drop for Evaluator<E> {
    fn drop(&mut self) {
        self.deadlines.abort();
    }
}

/// The run id of the dispatcher of a state folder: `serve-` and 8 hex of the folder's path, so
/// two servers on one daemon never share container names.
fn run_id_of(state: &std::path::Path) -> String {
    use sha2::{Digest, Sha256};
    let path = std::fs::canonicalize(state).unwrap_or_else(|_| state.to_path_buf());
    let h = Sha256::digest(path.to_string_lossy().as_bytes());
    format!("serve-{}", &hex::encode(h)[..8])
}

impl<E: Engine> Evaluator<E> {
    /// Starts an evaluator of `dataset` on `engine`: takes the state folder (refused when
    /// another process serves from it), reaps what dead servers left (containers, holds,
    /// images their cache level would have removed), starts the dispatcher and the image
    /// preparation, and takes up every request stored without a result. Notices (problems the
    /// evaluator survives) arrive on the returned channel.
    pub async fn start(
        engine: Arc<E>,
        dataset: Dataset,
        opts: EvaluatorOptions,
    ) -> Result<(Self, mpsc::UnboundedReceiver<String>), StartError> {
        std::fs::create_dir_all(&opts.state).map_err(|source| StartError::State {
            path: opts.state.clone(),
            source,
        })?;
        let lock = runner::lock(&runner::Layout::new(&opts.state, "serve"))?;
        let store = Store::open(&opts.state)?;
        let info = engine.info().await?;
        // The dispatcher runs at most one job per CPU of the engine, as in `run`.
        let workers = swe_eval_core::bounds::bound_workers(
            Some(opts.run.workers),
            info.cpus.unwrap_or(usize::MAX),
        )
        .used;
        let (notices, notices_rx) = mpsc::unbounded_channel();
        let owner = crate::owner::owner_id();
        let run_id = run_id_of(&opts.state);
        let reaped = reap_dead_holds(&*engine, &owner).await;
        if !reaped.removed.is_empty() {
            let _ = notices.send(format!(
                "removed {} image(s) that servers or runs which died had left to remove",
                reaped.removed.len()
            ));
        }
        let holding =
            Holding::new(engine.clone(), hold_labels(&owner, &run_id)).removing(opts.keep);

        let mut config = opts.run.clone();
        config.run_id = run_id;
        config.output = opts.state.clone();
        config.summaries = false;
        config.durations = None;
        config.deadline = None;
        let (submit, submissions) = runner::submissions();
        let (arrive, arrivals) = runner::arrivals(Vec::<String>::new());
        let (itx, irx) = mpsc::unbounded_channel();
        let (etx, erx) = mpsc::unbounded_channel();
        let (ptx, prx) = mpsc::unbounded_channel();
        let rt = tokio::runtime::Handle::current();
        let dispatcher = rt.spawn(runner::dispatch(
            engine.clone(),
            Plan::default(),
            arrivals,
            submissions,
            config.clone(),
            irx,
            etx,
        ));
        let settings = KeySettings {
            strict: config.strict,
            network: config.network,
            timeout_secs: config.timeout.as_secs(),
            limits: config.limits.clone(),
        };
        let next_seq = store.max_seq()? + 1;
        let shared = Arc::new(Shared {
            engine,
            holding,
            dataset,
            opts,
            settings,
            store,
            submit,
            arrive,
            to_prepare: ptx,
            interrupts: itx,
            book: Mutex::new(Book {
                accepting: true,
                ..Default::default()
            }),
            scores: Mutex::new(Memo::new(MEMO_SCORES)),
            next_seq: AtomicU64::new(next_seq),
            metrics: Metrics::default(),
            notices,
            started: Instant::now(),
            workers,
            created: Mutex::new(Vec::new()),
            stop_preparing: StopFlag::default(),
            preparer_stop: Notify::new(),
            deadline_added: Arc::new(Notify::new()),
            lock: Mutex::new(Some(lock)),
            rt: rt.clone(),
        });
        rt.spawn(forward_events(shared.clone(), erx));
        let preparer = rt.spawn(prepare_loop(shared.clone(), prx));
        let deadlines = rt
            .spawn(deadline_loop(
                Arc::downgrade(&shared),
                shared.deadline_added.clone(),
            ))
            .abort_handle();
        let evaluator = Evaluator {
            shared: shared.clone(),
            tasks: Mutex::new(Some((dispatcher, preparer))),
            deadlines,
        };
        // Requests a killed server accepted and never finished.
        let left = shared.store.pending()?;
        for row in &left {
            if let Some(inst) = shared.dataset.get(&row.instance_id) {
                let _ = spec_of(&shared, inst);
            }
        }
        if !left.is_empty() {
            let _ = shared.notices.send(format!(
                "{} request(s) accepted before a restart and not finished: taken up again",
                left.len()
            ));
            admit(&shared, left);
        }
        if shared.opts.prepare_all {
            let all: Vec<Instance> = shared.dataset.instances.clone();
            for inst in &all {
                let Ok(spec) = spec_of(&shared, inst) else {
                    continue;
                };
                let mut book = shared.lock();
                if let Some(asked) = ask_image(&mut book, inst, &spec) {
                    let sent = shared.submit.send(Submission {
                        setups: vec![asked],
                        items: Vec::new(),
                    });
                    if sent.is_ok() {
                        shared.prepare(&inst.instance_id);
                    }
                }
            }
        }
        Ok((evaluator, notices_rx))
    }

    /// Evaluates `requests` (one, or a batch: all are accepted or none). Answers at once with
    /// each one's id, similarity and reward, and its result when already known (not executed,
    /// cached, or decided without a job); the rest are `queued` (see [`Evaluator::wait`]).
    pub async fn submit(&self, requests: Vec<Request>) -> Result<Vec<Evaluation>, Refusal> {
        submit(&self.shared, requests).await
    }

    /// The evaluation `id` as it stands.
    pub fn get(&self, id: &str) -> Result<Evaluation, Refusal> {
        let seq = seq_of(id)?;
        if let Some(req) = self.shared.lock().pending.get(&seq) {
            return Ok(req.base.clone());
        }
        match self.shared.store.get(seq) {
            Ok(Some(row)) => Ok(row.evaluation()),
            Ok(None) => Err(not_found(id)),
            Err(e) => Err(unavailable(e)),
        }
    }

    /// The evaluation `id` once done, or as it stands after `timeout`.
    pub async fn wait(&self, id: &str, timeout: Duration) -> Result<Evaluation, Refusal> {
        let seq = seq_of(id)?;
        let rx = self
            .shared
            .lock()
            .pending
            .get(&seq)
            .map(|r| (r.tx.subscribe(), r.base.clone()));
        let Some((mut rx, base)) = rx else {
            return self.get(id);
        };
        let done = tokio::time::timeout(timeout, rx.wait_for(Option::is_some)).await;
        match done {
            Ok(Ok(e)) => Ok(e.as_ref().map_or(base, |e| (**e).clone())),
            // Timed out, or the request was dropped by a shutdown: as it stands.
            _ => self.get(id).or(Ok(base)),
        }
    }

    /// The evaluations `ids` once every one is done or `timeout` has passed, as they stand.
    pub async fn wait_all(
        &self,
        ids: &[String],
        timeout: Duration,
    ) -> Result<Vec<Evaluation>, Refusal> {
        for id in ids {
            seq_of(id)?;
        }
        let until = Instant::now() + timeout;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let left = until.saturating_duration_since(Instant::now());
            out.push(self.wait(id, left).await?);
        }
        Ok(out)
    }

    /// How the evaluator stands (the engine is asked, for at most 2 s).
    pub async fn health(&self) -> Health {
        let engine_error =
            match tokio::time::timeout(Duration::from_secs(2), self.shared.engine.info()).await {
                Ok(Ok(_)) => None,
                Ok(Err(e)) => Some(e.to_string()),
                Err(_) => Some("the engine did not answer within 2 s".into()),
            };
        let book = self.shared.lock();
        let m = &self.shared.metrics;
        Health {
            accepting: book.accepting,
            dispatching: !self.shared.submit.is_closed(),
            engine_error,
            queued: book.pending.len(),
            running: running(m),
            images_ready: book
                .images
                .values()
                .filter(|i| matches!(i, Image::Ready(_)))
                .count(),
            images_preparing: book
                .images
                .values()
                .filter(|i| matches!(i, Image::Preparing))
                .count(),
            uptime_s: self.shared.started.elapsed().as_secs_f64(),
        }
    }

    /// Requests accepted and not done.
    pub fn queued(&self) -> usize {
        self.shared.lock().pending.len()
    }

    /// Jobs whose container runs.
    pub fn running(&self) -> u64 {
        running(&self.shared.metrics)
    }

    /// What one request may carry.
    pub fn bounds(&self) -> super::request::Bounds {
        self.shared.opts.bounds
    }

    /// The counters.
    pub fn metrics(&self) -> &Metrics {
        &self.shared.metrics
    }

    /// How long the state database's commits took (each stores every write waiting).
    pub fn commit_latency(&self) -> &super::metrics::Histogram {
        self.shared.store.commit_latency()
    }

    /// Every request stored from number `since` on (for the export), oldest first.
    pub fn rows_since(&self, since: u64) -> Result<Vec<Row>, StoreError> {
        self.shared.store.since(since)
    }

    /// Stops: no request is accepted any more, the dispatcher stops dispatching (running jobs
    /// finish; queued requests stay stored and run at the next start), image preparation
    /// stops, the holds are released and the images the cache level does not keep removed.
    /// [`Evaluator::interrupt`] meanwhile kills the running jobs.
    pub async fn shutdown(&self) -> Shutdown {
        self.shared.lock().accepting = false;
        // Requests left run at the next start, with their deadlines.
        self.deadlines.abort();
        let _ = self.shared.interrupts.send(());
        self.shared.stop_preparing.stop();
        self.shared.preparer_stop.notify_one();
        let tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner()).take();
        let mut run = None;
        if let Some((dispatcher, preparer)) = tasks {
            run = dispatcher.await.ok().and_then(Result::ok);
            let _ = preparer.await;
        }
        let prepared = images::Prepared {
            created: self
                .shared
                .created
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            ..Default::default()
        };
        let (etx, mut erx) = mpsc::unbounded_channel();
        release_and_clean(&*self.shared.engine, &prepared, self.shared.opts.keep, &etx).await;
        drop(etx);
        while let Some(ev) = erx.recv().await {
            if let Event::Notice(n) = ev {
                let _ = self.shared.notices.send(n.message);
            }
        }
        let left = self.shared.lock().pending.len();
        self.shared.store.close();
        self.shared
            .lock
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        Shutdown { run, left }
    }

    /// Kills the running jobs of a shutdown under way (a second Ctrl-C).
    pub fn interrupt(&self) {
        let _ = self.shared.interrupts.send(());
    }
}

impl<E: Engine> Shared<E> {
    fn lock(&self) -> MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn notice(&self, message: String) {
        let _ = self.notices.send(message);
    }

    /// Asks the preparer for `instance_id`'s image.
    fn prepare(&self, instance_id: &str) {
        let _ = self.to_prepare.send(instance_id.to_string());
    }
}

fn running(m: &Metrics) -> u64 {
    super::metrics::get(&m.jobs_started).saturating_sub(super::metrics::get(&m.jobs_ended))
}

fn seq_of(id: &str) -> Result<u64, Refusal> {
    store::parse_id(id).ok_or_else(|| not_found(id))
}

fn not_found(id: &str) -> Refusal {
    let shown: String = id.chars().take(40).collect();
    Refusal::new(
        RefusalCode::NotFound,
        format!("no evaluation `{shown}` (ids are e1, e2, ...)"),
        Some("id"),
    )
}

fn unavailable(e: StoreError) -> Refusal {
    Refusal::new(
        RefusalCode::Unavailable,
        format!("the state cannot be read or written: {e}"),
        None,
    )
}

/// The test spec of `inst` (made once, then remembered), or why there is none.
fn spec_of<E: Engine>(shared: &Shared<E>, inst: &Instance) -> Result<Arc<TestSpec>, String> {
    if let Some(s) = shared.lock().specs.get(&inst.instance_id) {
        return s.clone();
    }
    let made = instance_specs(&[inst], &shared.opts.prepare);
    let spec = match made.ready.into_iter().next() {
        Some((_, spec)) => Ok(Arc::new(spec)),
        None => Err(made
            .failed
            .get(&inst.instance_id)
            .and_then(|s| s.image.clone().err())
            .unwrap_or_else(|| "no test spec".into())),
    };
    for w in made.warnings {
        shared.notice(w);
    }
    let recipe = spec.as_ref().ok().map(|s| Recipe::of(s, &shared.settings));
    let mut book = shared.lock();
    if let Some(recipe) = recipe {
        book.recipes.insert(inst.instance_id.clone(), recipe);
    }
    book.specs.insert(inst.instance_id.clone(), spec.clone());
    spec
}

/// A prediction's similarity, reward and format.
#[derive(Debug, Clone)]
struct Score {
    similarity: f64,
    reward: f64,
    format: String,
}

/// The score of `patch` on `inst`: for an executed patch (`key` not empty), the one its content
/// key already had if kept, else computed (and kept under the key).
fn score_of<E: Engine>(shared: &Shared<E>, inst: &Instance, key: &str, patch: &str) -> Score {
    let scores = || shared.scores.lock().unwrap_or_else(|p| p.into_inner());
    if !key.is_empty() {
        if let Some(s) = scores().get(key) {
            return s;
        }
    }
    let r = oracle_of(shared, inst).unidiff_reward(patch);
    let score = Score {
        similarity: r.similarity,
        reward: r.reward,
        format: r.format.as_string(),
    };
    if !key.is_empty() {
        scores().insert(key.to_string(), score.clone());
    }
    score
}

/// `inst`'s gold patch, read once for every similarity of the instance.
fn oracle_of<E: Engine>(shared: &Shared<E>, inst: &Instance) -> Arc<Oracle> {
    if let Some(o) = shared.lock().oracles.get(&inst.instance_id) {
        return o.clone();
    }
    let made = Arc::new(Oracle::new(&inst.patch));
    shared
        .lock()
        .oracles
        .entry(inst.instance_id.clone())
        .or_insert(made)
        .clone()
}

/// The content key of executing `patch` on `spec`'s instance (its recipe made once).
fn key_of<E: Engine>(shared: &Shared<E>, spec: &TestSpec, patch: &str) -> String {
    let recipe = shared.lock().recipes.get(&spec.instance_id).copied();
    recipe
        .unwrap_or_else(|| Recipe::of(spec, &shared.settings))
        .key(patch)
}

async fn submit<E: Engine>(
    shared: &Arc<Shared<E>>,
    requests: Vec<Request>,
) -> Result<Vec<Evaluation>, Refusal> {
    if !shared.lock().accepting {
        return Err(Refusal::new(
            RefusalCode::Unavailable,
            "the server is shutting down",
            None,
        ));
    }
    let batch = requests.len() > 1;
    let field = |i: usize, name: &str| {
        if batch {
            format!("[{i}].{name}")
        } else {
            name.to_string()
        }
    };
    let mut insts = Vec::with_capacity(requests.len());
    for (i, r) in requests.iter().enumerate() {
        match shared.dataset.get(&r.instance_id) {
            Some(inst) => insts.push(inst),
            None => {
                let shown: String = r.instance_id.chars().take(80).collect();
                return Err(Refusal::new(
                    RefusalCode::BadRequest,
                    format!("`{shown}` is not an instance of the server's dataset"),
                    Some(&field(i, "instance_id")),
                ));
            }
        }
    }
    let executed = requests.iter().filter(|r| r.execute).count();
    let queued = {
        let mut book = shared.lock();
        let queued = book.pending.len() + book.reserved;
        if executed == 0 || queued + executed <= shared.opts.max_queue {
            book.reserved += executed;
        }
        queued
    };
    if executed > 0 && queued + executed > shared.opts.max_queue {
        inc(&shared.metrics.refused_full);
        let mut r = Refusal::new(
            RefusalCode::QueueFull,
            format!(
                "{queued} requests queued, at most {} (--max-queue); retry later",
                shared.opts.max_queue
            ),
            None,
        );
        r.retry_after = Some(retry_after(shared, queued));
        return Err(r);
    }
    let _reserved = Reservation {
        shared,
        places: executed,
    };
    let now = Instant::now();
    let at_ms = now_ms();
    let mut rows = Vec::with_capacity(requests.len());
    for (r, inst) in requests.into_iter().zip(insts) {
        // An executed patch's content key comes first: the same content had the same score.
        let spec = (r.execute && !r.model_patch.trim().is_empty()).then(|| spec_of(shared, inst));
        let key = match &spec {
            Some(Ok(spec)) => key_of(shared, spec, &r.model_patch),
            _ => String::new(),
        };
        let score = score_of(shared, inst, &key, &r.model_patch);
        let seq = shared.next_seq.fetch_add(1, Ordering::Relaxed);
        let deadline = r.deadline.unwrap_or(shared.opts.default_deadline);
        let mut row = Row {
            seq,
            instance_id: r.instance_id,
            model: r
                .model_name_or_path
                .unwrap_or_else(|| shared.opts.default_model.clone()),
            sample: r.sample,
            patch: r.model_patch,
            key,
            execute: r.execute,
            deadline_ms: Some(at_ms.saturating_add(deadline.as_millis() as i64)),
            accepted_ms: at_ms,
            similarity: score.similarity,
            reward: score.reward,
            format: score.format,
            outcome: None,
            cached: false,
            done: !r.execute,
        };
        if r.execute && row.patch.trim().is_empty() {
            // Nothing to run: known at once, as the runner would decide it.
            inc(&shared.metrics.accepted_executed);
            row.outcome = Some(Executed::empty());
            row.done = true;
        } else if r.execute {
            inc(&shared.metrics.accepted_executed);
            match spec {
                Some(Err(why)) => {
                    row.outcome = Some(Executed::masked(Status::InfraError, why));
                    row.done = true;
                }
                _ => {
                    if let Some(hit) = shared.store.cached(&row.key).map_err(unavailable)? {
                        inc(&shared.metrics.cache_hits);
                        row.outcome = Some(hit);
                        row.cached = true;
                        row.done = true;
                    }
                }
            }
        } else {
            inc(&shared.metrics.accepted_similarity);
        }
        rows.push(row);
    }
    shared
        .store
        .insert(rows.clone())
        .await
        .map_err(unavailable)?;
    let answers: Vec<Evaluation> = rows.iter().map(Row::evaluation).collect();
    for row in rows.iter().filter(|r| r.done) {
        if let Some(o) = &row.outcome {
            shared.metrics.status(o.status);
            shared.metrics.result_latency.observe(now.elapsed());
        }
    }
    admit(shared, rows.into_iter().filter(|r| !r.done).collect());
    Ok(answers)
}

/// Seconds a refused client should wait: the time the queue ahead of it takes at the rate
/// jobs have been ending, within 1 s to 5 min.
fn retry_after<E: Engine>(shared: &Shared<E>, queued: usize) -> u64 {
    let ended = super::metrics::get(&shared.metrics.jobs_ended).max(1) as f64;
    let per_job = shared.started.elapsed().as_secs_f64() / ended;
    let workers = shared.workers.max(1) as f64;
    ((queued as f64 * per_job / workers).ceil() as u64).clamp(1, 300)
}

/// Takes up stored requests not done: each joins the job of its key in flight, is answered
/// from the cache, or leads a new job; its deadline is watched.
fn admit<E: Engine>(shared: &Arc<Shared<E>>, rows: Vec<Row>) {
    let now = Instant::now();
    let at_ms = now_ms();
    let mut launched = Vec::new();
    let mut hits = Vec::new();
    let mut earlier = false;
    {
        let mut book = shared.lock();
        for row in rows {
            let deadline = row
                .deadline_ms
                .map(|d| now + Duration::from_millis(d.saturating_sub(at_ms).max(0) as u64));
            let (tx, _) = watch::channel(None);
            let seq = row.seq;
            let key = row.key.clone();
            book.pending.insert(
                seq,
                Req {
                    base: row.evaluation(),
                    key: key.clone(),
                    patch: row.patch,
                    deadline,
                    accepted: now,
                    tx,
                    closing: false,
                },
            );
            if let Some(d) = deadline {
                earlier |= book.deadlines.first().is_none_or(|first| (d, seq) < *first);
                book.deadlines.insert((d, seq));
            }
            if let Some(f) = book.flights.get_mut(&key) {
                f.members.push(seq);
                inc(&shared.metrics.shared);
                continue;
            }
            match shared.store.cached(&key) {
                Ok(Some(hit)) => {
                    inc(&shared.metrics.cache_hits);
                    hits.push((seq, hit, true));
                    continue;
                }
                Ok(None) => {}
                Err(e) => shared.notice(format!("cache not read for e{seq}: {e}")),
            }
            book.flights
                .insert(key.clone(), Flight { members: vec![seq] });
            match launch(shared, &mut book, seq) {
                Some(rx) => launched.push((key, seq, rx)),
                None => {
                    book.flights.remove(&key);
                    let why = "not run: the dispatcher takes no more jobs, or the instance has no test spec";
                    hits.push((seq, Executed::masked(Status::InfraError, why.into()), false));
                }
            }
        }
    }
    for (key, leader, rx) in launched {
        await_job(shared.clone(), key, leader, rx);
    }
    if earlier {
        shared.deadline_added.notify_one();
    }
    if !hits.is_empty() {
        let task = shared.clone();
        shared
            .rt
            .spawn(async move { finish(&task, hits, None).await });
    }
}

/// Asks for `inst`'s image unless it is there or on its way: returns the stand-in setup that
/// tells the dispatcher the instance is awaited. The caller sends it (with its submission)
/// before it asks the preparer ([`Shared::prepare`]), so the dispatcher always knows the
/// instance is awaited before its setup arrives.
fn ask_image(book: &mut Book, inst: &Instance, spec: &TestSpec) -> Option<NewSetup> {
    let id = &inst.instance_id;
    match book.images.get(id) {
        Some(Image::Preparing | Image::Ready(_) | Image::Failed { transient: false }) => None,
        None | Some(Image::Failed { transient: true }) => {
            book.images.insert(id.clone(), Image::Preparing);
            let stand_in = instance_setup(inst, spec, Err("image not prepared yet".into()));
            Some(NewSetup {
                setup: Arc::new(stand_in),
                awaited: true,
            })
        }
    }
}

/// Submits the job of request `seq` (the leader of its key) to the dispatcher; `None` when
/// the dispatcher takes no more.
fn launch<E: Engine>(
    shared: &Shared<E>,
    book: &mut Book,
    seq: u64,
) -> Option<oneshot::Receiver<Delivery>> {
    let req = book.pending.get(&seq)?;
    let inst = shared.dataset.get(&req.base.instance_id)?.clone();
    let spec = book.specs.get(&inst.instance_id)?.clone().ok()?;
    let prediction = Prediction {
        instance_id: inst.instance_id.clone(),
        model_name_or_path: req.base.model_name_or_path.clone(),
        model_patch: Some(req.patch.clone()),
        sample: req.base.sample,
        line: None,
        extra: Default::default(),
    };
    let (tx, rx) = oneshot::channel();
    let item = Submitted {
        prediction,
        dir: shared.opts.state.join("jobs").join(&req.key),
        deadline: req.deadline,
        reply: tx,
    };
    let asked = ask_image(book, &inst, &spec);
    let prepare = asked.is_some();
    shared
        .submit
        .send(Submission {
            setups: asked.into_iter().collect(),
            items: vec![item],
        })
        .ok()?;
    if prepare {
        shared.prepare(&inst.instance_id);
    }
    inc(&shared.metrics.jobs_submitted);
    Some(rx)
}

/// Waits (on a task of its own) for the job of `key`, led by `leader`, and takes its outcome.
fn await_job<E: Engine>(
    shared: Arc<Shared<E>>,
    key: String,
    leader: u64,
    rx: oneshot::Receiver<Delivery>,
) {
    shared.rt.clone().spawn(async move {
        let d = rx.await.ok();
        delivered(&shared, &key, leader, d).await;
    });
}

/// The job of `key` (led by `leader`) is over: its verdict goes to every request of the key
/// (and to the cache unless masked); expired before the verdict, it is submitted again for
/// the requests whose deadline has not passed.
async fn delivered<E: Engine>(
    shared: &Arc<Shared<E>>,
    key: &str,
    leader: u64,
    delivery: Option<Delivery>,
) {
    match delivery {
        // The dispatcher stopped (a shutdown): the requests stay stored for the next start.
        None => {}
        Some(Delivery::Done(f)) => {
            if f.queue_wait.is_some() {
                inc(&shared.metrics.jobs_ended);
            }
            let (members, outcome) = {
                let mut book = shared.lock();
                let id = f.verdict.instance_id.clone();
                let image = match book.images.get(&id) {
                    Some(Image::Ready(image)) => Some(image.clone()),
                    _ => None,
                };
                let outcome = Executed::of(&f, image);
                if outcome.status == Status::InfraError
                    && matches!(book.images.get(&id), Some(Image::Ready(_)))
                {
                    // The image may be gone, or the engine was away: asked for again next time.
                    book.images.insert(id, Image::Failed { transient: true });
                }
                let members = book
                    .flights
                    .remove(key)
                    .map_or_else(|| vec![leader], |f| f.members);
                (members, outcome)
            };
            let cache = outcome
                .cacheable()
                .then(|| (key.to_string(), outcome.clone()));
            let done = members
                .into_iter()
                .map(|m| (m, outcome.clone(), m != leader || f.resumed))
                .collect();
            finish(shared, done, cache).await;
        }
        Some(Delivery::Expired { ran }) => {
            if ran {
                inc(&shared.metrics.jobs_ended);
            }
            let mut launched = None;
            {
                let mut book = shared.lock();
                let now = Instant::now();
                let Some(flight) = book.flights.remove(key) else {
                    return;
                };
                // The request waiting longest on this key leads it now.
                let next = flight
                    .members
                    .iter()
                    .filter_map(|m| book.pending.get(m).map(|r| (*m, r)))
                    .filter(|(_, r)| !r.closing && r.deadline.is_none_or(|d| d > now))
                    .max_by_key(|(m, r)| (r.deadline.map(|d| d - now), std::cmp::Reverse(*m)))
                    .map(|(m, _)| m);
                if let Some(next) = next {
                    let members: Vec<u64> = flight
                        .members
                        .into_iter()
                        .filter(|m| book.pending.contains_key(m))
                        .collect();
                    book.flights.insert(key.to_string(), Flight { members });
                    launched = launch(shared, &mut book, next).map(|rx| (next, rx));
                }
            }
            if let Some((next, rx)) = launched {
                await_job(shared.clone(), key.to_string(), next, rx);
            }
        }
    }
}

/// Answers every request whose deadline has passed, then sleeps until the next deadline (or
/// until an earlier one is added). Holds the evaluator only while it answers: ends with it.
async fn deadline_loop<E: Engine>(shared: std::sync::Weak<Shared<E>>, added: Arc<Notify>) {
    loop {
        let next = {
            let Some(shared) = shared.upgrade() else {
                return;
            };
            let now = Instant::now();
            let mut due = Vec::new();
            let next = {
                let mut book = shared.lock();
                while let Some(&(d, seq)) = book.deadlines.first() {
                    if d > now {
                        break;
                    }
                    book.deadlines.pop_first();
                    due.push(seq);
                }
                book.deadlines.first().map(|(d, _)| *d)
            };
            if !due.is_empty() {
                expire(&shared, due).await;
                continue;
            }
            next
        };
        match next {
            Some(d) => {
                tokio::select! {
                    _ = tokio::time::sleep_until(d) => {}
                    _ = added.notified() => {}
                }
            }
            None => added.notified().await,
        }
    }
}

/// The deadlines of requests `due` passed: each is answered `timeout`, masked, unless done
/// already. A job one of them leads goes on (the dispatcher cuts or skips it at the same
/// deadline).
async fn expire<E: Engine>(shared: &Arc<Shared<E>>, due: Vec<u64>) {
    let done: Vec<(u64, Executed, bool)> = {
        let book = shared.lock();
        due.into_iter()
            .filter_map(|seq| {
                let r = book.pending.get(&seq).filter(|r| !r.closing)?;
                let secs = r.accepted.elapsed().as_secs_f64();
                let why = format!(
                    "the request's deadline passed ({secs:.0} s after acceptance) before its result"
                );
                Some((seq, Executed::masked(Status::Timeout, why), false))
            })
            .collect()
    };
    for _ in &done {
        inc(&shared.metrics.expired);
    }
    if !done.is_empty() {
        finish(shared, done, None).await;
    }
}

/// Stores the outcomes of requests (and `cache` under its key), then publishes them to their
/// waiters. A request already being finished is left alone.
async fn finish<E: Engine>(
    shared: &Arc<Shared<E>>,
    done: Vec<(u64, Executed, bool)>,
    cache: Option<(String, Executed)>,
) {
    let mut rows = Vec::with_capacity(done.len());
    {
        let mut book = shared.lock();
        for (seq, mut outcome, cached) in done {
            let Some(req) = book.pending.get_mut(&seq) else {
                continue;
            };
            if req.closing {
                continue;
            }
            req.closing = true;
            outcome.timings.total = req.accepted.elapsed().as_secs_f64();
            rows.push((seq, outcome, cached));
        }
    }
    if rows.is_empty() && cache.is_none() {
        return;
    }
    if let Err(e) = shared.store.finish(rows.clone(), cache).await {
        shared.notice(format!(
            "results of {} request(s) not stored (they run again at the next start): {e}",
            rows.len()
        ));
    }
    let mut book = shared.lock();
    for (seq, outcome, cached) in rows {
        let Some(req) = book.pending.remove(&seq) else {
            continue;
        };
        if let Some(d) = req.deadline {
            book.deadlines.remove(&(d, seq));
        }
        shared.metrics.status(outcome.status);
        shared
            .metrics
            .result_latency
            .observe(req.accepted.elapsed());
        let mut e = req.base;
        e.state = State::Done;
        e.outcome = Some(outcome);
        e.cached = cached;
        let _ = req.tx.send(Some(Arc::new(e)));
    }
}

/// Counts the dispatcher's job starts and passes on its problems and notes.
async fn forward_events<E: Engine>(
    shared: Arc<Shared<E>>,
    mut rx: mpsc::UnboundedReceiver<RunEvent>,
) {
    while let Some(ev) = rx.recv().await {
        match ev {
            RunEvent::JobStarted { .. } => inc(&shared.metrics.jobs_started),
            RunEvent::Problem { message } => shared.notice(message),
            RunEvent::Note { message } => shared.notice(message),
            RunEvent::Reaped { count, at_start } if count > 0 => shared.notice(format!(
                "removed {count} container(s) {}",
                if at_start {
                    "that servers or runs which died had left"
                } else {
                    "of this server left at its end"
                }
            )),
            _ => {}
        }
    }
}

/// Prepares the images asked for, a batch at a time (each environment image is built once,
/// never twice at once): each instance's setup goes to the dispatcher the moment its image is
/// ready or has failed for good.
async fn prepare_loop<E: Engine>(shared: Arc<Shared<E>>, mut rx: mpsc::UnboundedReceiver<String>) {
    loop {
        let first = tokio::select! {
            id = rx.recv() => id,
            _ = shared.preparer_stop.notified() => None,
        };
        let Some(first) = first else { return };
        let mut ids = vec![first];
        while let Ok(id) = rx.try_recv() {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        let mut batch = Vec::new();
        for id in &ids {
            let Some(inst) = shared.dataset.get(id) else {
                continue;
            };
            let spec = shared.lock().specs.get(id).cloned();
            if let Some(Ok(spec)) = spec {
                batch.push((inst.clone(), (*spec).clone()));
            }
        }
        prepare_batch(&shared, batch).await;
        if shared.stop_preparing.stopped() {
            return;
        }
    }
}

async fn prepare_batch<E: Engine>(shared: &Arc<Shared<E>>, batch: Vec<(Instance, TestSpec)>) {
    if batch.is_empty() {
        return;
    }
    let specs = Specs {
        ready: batch,
        ..Default::default()
    };
    let preparing = Preparing::default();
    let (etx, mut erx) = mpsc::unbounded_channel();
    let building = prepare_streaming(
        &shared.holding,
        &specs,
        &shared.opts.prepare,
        &shared.stop_preparing,
        shared.arrive.clone(),
        &preparing,
        &etx,
    );
    // Each instance's setup went to the dispatcher just before its event.
    let take = |ev: Event| match ev {
        Event::ImageDone {
            instance_id,
            image,
            retry,
            ..
        } => {
            let state = match image {
                Some(image) => {
                    inc(&shared.metrics.images_ready);
                    Image::Ready(image)
                }
                None => {
                    inc(&shared.metrics.images_failed);
                    Image::Failed { transient: retry }
                }
            };
            shared.lock().images.insert(instance_id, state);
        }
        Event::Notice(n) => shared.notice(n.message),
        _ => {}
    };
    tokio::pin!(building);
    let prepared = loop {
        tokio::select! {
            prepared = &mut building => break prepared,
            Some(ev) = erx.recv() => take(ev),
        }
    };
    while let Ok(ev) = erx.try_recv() {
        take(ev);
    }
    shared
        .created
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .extend(prepared.created);
}

impl swe_eval_core::failure::Classify for StartError {
    fn kind(&self) -> swe_eval_core::failure::ErrorKind {
        use swe_eval_core::failure::ErrorKind;
        match self {
            // Another live server holds the state folder: choose another --output, or stop it.
            StartError::Lock(runner::LockError::Busy { .. }) => ErrorKind::Usage,
            StartError::Store(e) => e.kind(),
            StartError::Engine(e) => e.kind(),
            StartError::State { .. } | StartError::Lock(_) => ErrorKind::Failed,
        }
    }
}
