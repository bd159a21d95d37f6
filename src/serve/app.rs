//! The server's state shared by every connection: the evaluator, the configuration, and what
//! the face counts itself.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use tokio::sync::Semaphore;

use super::config::ServeConfig;
use crate::engine::Engine;
use crate::evaluator::{Evaluator, Histogram};

/// The statuses counted apart in the metrics.
pub(super) const STATUSES: [u16; 9] = [200, 400, 401, 404, 405, 413, 429, 503, 500];

/// What the face counts itself.
#[derive(Default)]
pub(super) struct HttpMetrics {
    /// Answers by status (in [`STATUSES`] order).
    pub by_status: [AtomicU64; STATUSES.len()],
    /// Time to answer `POST /v1/evaluations`.
    pub submit_latency: Histogram,
}

/// The server's state.
pub(super) struct App<E: Engine> {
    pub ev: Arc<Evaluator<E>>,
    pub config: ServeConfig,
    pub http: HttpMetrics,
    /// The bytes of request bodies that may be held at once: one permit per byte, taken
    /// before a body is read and given back when its request is answered.
    pub bodies: Arc<Semaphore>,
}

impl<E: Engine> App<E> {
    pub(super) fn new(ev: Arc<Evaluator<E>>, config: ServeConfig) -> Self {
        let budget = config
            .max_body_memory
            .max(config.max_body)
            .min(Semaphore::MAX_PERMITS);
        App {
            ev,
            config,
            http: HttpMetrics::default(),
            bodies: Arc::new(Semaphore::new(budget)),
        }
    }
}
