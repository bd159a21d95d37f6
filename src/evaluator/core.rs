//! The evaluator: a session (`crate::session`: images prepared when an instance is first
//! asked for, the dispatcher, identical patches sharing a job, deadlines) fed with predictions
//! as requests come, verdicts cached by content, every request and result kept in the state
//! database.
//!
//! A request's way (`admission.rs`): checked, keyed by content when executed, scored
//! (similarity against the gold patch), stored, and answered at once when not executed or when
//! its key is cached; else submitted to the session with its deadline, and its answer (a
//! verdict, or its deadline passed) stored, cached unless masked, and published to whoever
//! waits on it. On start, every request stored without a result goes the same way again.

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use swe_eval_core::dataset::Dataset;

use super::admission;
use super::evaluation::Evaluation;
use super::metrics::{inc, Metrics};
use super::options::EvaluatorOptions;
use super::request::{Refusal, RefusalCode, Request};
use super::shared::{unavailable, Book, Shared};
use super::similarity::{Similarities, SIMILARITY_BYTES, SIMILARITY_ENTRIES};
use super::store::{self, Row, Store, StoreError};
use crate::engine::Engine;
use crate::runner::{self, RunEvent};
use crate::session::{Closed, Event, Session, SessionError, SessionOptions};

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
    /// Another server serves from the same state folder.
    #[error(
        "the server state {} is in use by another swe-eval server (lock {}); stop that server \
         or give this one another --output folder",
        state.display(), lock.display()
    )]
    Busy {
        /// The state folder.
        state: PathBuf,
        /// Its lock file.
        lock: PathBuf,
    },
    /// The state's lock could not be taken.
    #[error(transparent)]
    Lock(runner::LockError),
    /// The state database cannot be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The session could not open (the engine does not answer).
    #[error(transparent)]
    Session(#[from] SessionError),
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
    /// The session's end (`None` when it had already been closed).
    pub closed: Option<Closed>,
    /// Requests left without a result (run at the next start).
    pub left: usize,
}

/// The evaluator (see the module docs). Cheap to share behind an `Arc`.
pub struct Evaluator<E: Engine> {
    shared: Arc<Shared<E>>,
}

/// The run id of the session of a state folder: `serve-` and 8 hex of the folder's path, so
/// two servers on one daemon never share container names.
fn run_id_of(state: &std::path::Path) -> String {
    use sha2::{Digest, Sha256};
    let path = std::fs::canonicalize(state).unwrap_or_else(|_| state.to_path_buf());
    let h = Sha256::digest(path.to_string_lossy().as_bytes());
    format!("serve-{}", &hex::encode(h)[..8])
}

impl<E: Engine> Evaluator<E> {
    /// Starts an evaluator of `dataset` on `engine`: takes the state folder (refused when
    /// another process serves from it), opens a session (which removes what dead servers and
    /// runs left: containers, holds, images their cache level would have removed) and takes
    /// up every request stored without a result. Notices (problems the evaluator survives)
    /// arrive on the returned channel.
    pub async fn start(
        engine: Arc<E>,
        dataset: Dataset,
        opts: EvaluatorOptions,
    ) -> Result<(Self, mpsc::UnboundedReceiver<String>), StartError> {
        std::fs::create_dir_all(&opts.state).map_err(|source| StartError::State {
            path: opts.state.clone(),
            source,
        })?;
        let lock =
            runner::lock(&runner::Layout::new(&opts.state, "serve")).map_err(|e| match e {
                runner::LockError::Busy { path, .. } => StartError::Busy {
                    state: opts.state.clone(),
                    lock: path,
                },
                other => StartError::Lock(other),
            })?;
        let store = Store::open(&opts.state)?;
        let (notices, notices_rx) = mpsc::unbounded_channel();
        let mut run = opts.run.clone();
        run.run_id = run_id_of(&opts.state);
        run.deadline = None;
        let session_opts = SessionOptions {
            run,
            prepare: opts.prepare.clone(),
            keep: opts.keep,
            setups: Default::default(),
        };
        let dataset = Arc::new(dataset);
        let (etx, erx) = mpsc::unbounded_channel();
        let session = Session::open(engine.clone(), dataset.clone(), session_opts, etx).await?;
        let next_seq = store.max_seq()? + 1;
        let rt = tokio::runtime::Handle::current();
        let shared = Arc::new(Shared {
            engine,
            session,
            dataset,
            opts,
            store,
            book: Mutex::new(Book {
                accepting: true,
                ..Default::default()
            }),
            similarities: Similarities::new(SIMILARITY_ENTRIES, SIMILARITY_BYTES),
            next_seq: AtomicU64::new(next_seq),
            metrics: Metrics::default(),
            notices,
            started: Instant::now(),
            answering: Default::default(),
            lock: Mutex::new(Some(lock)),
            rt: rt.clone(),
        });
        rt.spawn(forward_events(Arc::downgrade(&shared), erx));
        // Requests a killed server accepted and never finished.
        let left = shared.store.pending()?;
        if !left.is_empty() {
            shared.notice(format!(
                "{} request(s) accepted before a restart and not finished: taken up again",
                left.len()
            ));
            admission::admit(&shared, left);
        }
        if shared.opts.prepare_all {
            let all: Vec<String> = shared
                .dataset
                .instances
                .iter()
                .map(|i| i.instance_id.clone())
                .collect();
            shared.session.prepare(&all);
        }
        Ok((Evaluator { shared }, notices_rx))
    }

    /// Evaluates `requests` (one, or a batch: all are accepted or none). Answers at once with
    /// each one's id, similarity and reward, and its result when already known (not executed,
    /// cached, or decided without a job); the rest are `queued` (see [`Evaluator::wait`]).
    pub async fn submit(&self, requests: Vec<Request>) -> Result<Vec<Evaluation>, Refusal> {
        admission::submit(&self.shared, requests).await
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
        let images = self.shared.session.images();
        let book = self.shared.lock();
        Health {
            accepting: book.accepting,
            dispatching: self.shared.session.dispatching(),
            engine_error,
            queued: book.pending.len(),
            running: running(&self.shared),
            images_ready: images.ready,
            images_preparing: images.preparing,
            uptime_s: self.shared.started.elapsed().as_secs_f64(),
        }
    }

    /// Requests accepted and not done.
    pub fn queued(&self) -> usize {
        self.shared.lock().pending.len()
    }

    /// Jobs whose container runs.
    pub fn running(&self) -> u64 {
        running(&self.shared)
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

    /// Stops: no request is accepted any more, the session stops dispatching (running jobs
    /// finish; queued requests stay stored and run at the next start) and closes (its holds
    /// released, the images the cache level does not keep removed). [`Evaluator::interrupt`]
    /// meanwhile kills the running jobs.
    pub async fn shutdown(&self) -> Shutdown {
        self.shared.lock().accepting = false;
        self.shared.session.stop(None);
        let closed = self.shared.session.close().await;
        // Every answer the session delivered is stored before the database closes.
        self.shared.answering.idle().await;
        let left = self.shared.lock().pending.len();
        self.shared.store.close();
        self.shared
            .lock
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        Shutdown { closed, left }
    }

    /// Kills the running jobs of a shutdown under way (a second Ctrl-C).
    pub fn interrupt(&self) {
        self.shared.session.kill();
    }
}

/// Jobs whose container runs: the engine's count where it keeps one (a container prepared
/// ahead and waiting for a free worker is not running), else jobs dispatched and not over.
fn running<E: Engine>(shared: &Shared<E>) -> u64 {
    let m = &shared.metrics;
    shared.engine.jobs_running().map_or_else(
        || super::metrics::get(&m.jobs_started).saturating_sub(super::metrics::get(&m.jobs_ended)),
        |n| n as u64,
    )
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

/// Counts the session's job starts and ends and passes on its problems and notes, for as long
/// as the evaluator lives.
async fn forward_events<E: Engine>(
    shared: std::sync::Weak<Shared<E>>,
    mut rx: mpsc::UnboundedReceiver<Event>,
) {
    while let Some(ev) = rx.recv().await {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let m = &shared.metrics;
        match ev {
            Event::Run(RunEvent::JobStarted { .. }) => inc(&m.jobs_started),
            Event::Run(RunEvent::JobEnded { .. }) => inc(&m.jobs_ended),
            Event::Run(RunEvent::Submitted {
                jobs, shared: n, ..
            }) => {
                m.jobs_submitted
                    .fetch_add(jobs as u64, std::sync::atomic::Ordering::Relaxed);
                m.shared
                    .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
            }
            Event::Run(RunEvent::Problem { message } | RunEvent::Note { message }) => {
                shared.notice(message)
            }
            Event::Run(RunEvent::Reaped { count, at_start }) if count > 0 => {
                shared.notice(format!(
                    "removed {count} container(s) {}",
                    if at_start {
                        "that servers or runs which died had left"
                    } else {
                        "of this server left at its end"
                    }
                ))
            }
            Event::Notice(n) => shared.notice(n.message),
            Event::ImageDone { ok, .. } => inc(if ok {
                &m.images_ready
            } else {
                &m.images_failed
            }),
            _ => {}
        }
    }
}

impl swe_eval_core::failure::Classify for StartError {
    fn kind(&self) -> swe_eval_core::failure::ErrorKind {
        use swe_eval_core::failure::ErrorKind;
        match self {
            // Another live server holds the state folder: choose another --output, or stop it.
            StartError::Busy { .. } => ErrorKind::Usage,
            StartError::Store(e) => e.kind(),
            StartError::Session(e) => e.kind(),
            StartError::State { .. } | StartError::Lock(_) => ErrorKind::Failed,
        }
    }
}
