//! The evaluator: predictions evaluated one at a time or in batches, at any moment, each
//! result handed back in memory, over the same image preparation, dispatcher, retries,
//! grading and verdict store as `swe-eval run` (the runner's one dispatcher, fed through its
//! submissions channel). `swe-eval serve` is its HTTP face; a program can use it directly.
//!
//! - `core`: the [`Evaluator`] (requests, images asked for on first use, in-flight sharing,
//!   deadlines, restart).
//! - `request`: what a request carries and why one is refused ([`Refusal`]).
//! - `evaluation`: what comes back ([`Evaluation`], [`Status`], `mask`, the `score` and
//!   the grading it follows, [`GradedBy`]).
//! - `objections`: what the strict grading objected to in a job, graded again from its log.
//! - `store`: the state in SQLite (requests, results, the cache), surviving a kill.
//! - `similarity`: the scores kept by (instance, patch), bounded.
//! - `metrics`: counters and latency histograms.
//! - `access`: who may use it over the network (loopback, or a bearer token).
//! - `export`: the rollouts as the study (`correlate`, `compare`) reads them.
//! - `options`: the evaluator's settings; `open`: an evaluator from the user's choices.

mod access;
mod admission;
mod core;
mod evaluation;
mod export;
mod memo;
mod metrics;
mod objections;
mod open;
mod options;
mod request;
mod shared;
mod similarity;
mod store;
#[cfg(test)]
pub(crate) mod tests;

pub use access::{authorized, check_listen, token_from, AccessError, MIN_TOKEN_LEN};
pub use core::{Evaluator, Health, Shutdown, StartError};
pub use evaluation::{Evaluation, Executed, GradedBy, Passed, State, Status, Timings};
pub use export::export;
pub use metrics::{Histogram, Metrics, BUCKETS};
pub use open::{open, DatasetSource, OpenError, Opened, ServeChoices};
pub use options::{EvaluatorOptions, DEFAULT_DEADLINE, DEFAULT_MAX_QUEUE, DEFAULT_MODEL};
pub use request::{
    requests_from_json, Bounds, Refusal, RefusalCode, Request, IGNORED_FIELDS, REQUEST_FIELDS,
};
pub use store::{db_path, parse_id, Row, Store, StoreError};
