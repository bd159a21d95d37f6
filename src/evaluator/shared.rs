//! What the evaluator's parts share: the session, the store, the dataset, and the book of
//! requests not done (behind one lock), with each instance's gold patch read once.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use swe_eval_core::dataset::Dataset;
use swe_eval_core::reward::Oracle;

use super::evaluation::Evaluation;
use super::metrics::Metrics;
use super::options::EvaluatorOptions;
use super::request::{Refusal, RefusalCode};
use super::similarity::Similarities;
use super::store::{Store, StoreError};
use crate::engine::Engine;
use crate::runner;
use crate::session::Session;

/// An accepted request not done yet.
pub(super) struct Req {
    /// The evaluation as answered at acceptance (state queued, no outcome).
    pub base: Evaluation,
    pub accepted: Instant,
    pub tx: watch::Sender<Option<Arc<Evaluation>>>,
    /// Its result is being stored: nothing else may finish it.
    pub closing: bool,
}

/// What the evaluator's tasks share, behind one lock.
#[derive(Default)]
pub(super) struct Book {
    /// Each instance's gold patch, read once for the similarity.
    pub oracles: HashMap<String, Arc<Oracle>>,
    pub pending: HashMap<u64, Req>,
    pub accepting: bool,
    /// Executed requests admitted past the queue's bound and not yet in `pending` (being
    /// scored and stored): counted against the bound, so concurrent submissions cannot
    /// overshoot it.
    pub reserved: usize,
}

pub(super) struct Shared<E: Engine> {
    pub engine: Arc<E>,
    pub session: Session<E>,
    pub dataset: Arc<Dataset>,
    pub opts: EvaluatorOptions,
    pub store: Store,
    pub book: Mutex<Book>,
    /// The scores by (instance, patch), bounded: a patch sent again is not compared with the
    /// gold patch again.
    pub similarities: Similarities,
    pub next_seq: AtomicU64,
    pub metrics: Metrics,
    pub notices: mpsc::UnboundedSender<String>,
    pub started: Instant,
    /// Answers of the session being stored (a shutdown waits for them: a verdict the session
    /// delivered is never left unstored).
    pub answering: Answering,
    /// The state folder's lock, released at shutdown.
    pub lock: Mutex<Option<runner::RunLock>>,
    /// The runtime the evaluator started on: its tasks (the waits on the session, the
    /// deliveries) run there even when a request comes from another runtime, so a face can
    /// answer on threads of its own, apart from the jobs' engine calls, grading and writes.
    pub rt: tokio::runtime::Handle,
}

impl<E: Engine> Shared<E> {
    pub(super) fn lock(&self) -> MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn notice(&self, message: String) {
        let _ = self.notices.send(message);
    }
}

/// A refusal for a state that cannot be read or written.
pub(super) fn unavailable(e: StoreError) -> Refusal {
    Refusal::new(
        RefusalCode::Unavailable,
        format!("the state cannot be read or written: {e}"),
        None,
    )
}

/// How many answers are being taken (stored and published), and a way to wait until none is.
#[derive(Debug, Default)]
pub(super) struct Answering {
    count: std::sync::atomic::AtomicUsize,
    idle: tokio::sync::Notify,
}

impl Answering {
    /// One more answer is to be taken (before its task is spawned, so a shutdown that looks
    /// at once waits for it too).
    pub fn begin(&self) {
        self.count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// One answer is taken.
    pub fn end(&self) {
        if self.count.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) == 1 {
            self.idle.notify_waiters();
        }
    }

    /// Resolves once no answer is being taken.
    pub async fn idle(&self) {
        loop {
            let idle = self.idle.notified();
            if self.count.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                return;
            }
            idle.await;
        }
    }
}
