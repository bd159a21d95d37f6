//! `bench serve`: bounded loads on `swe-eval serve` over loopback, with the mini benchmark's 22
//! predictions as bodies.
//!
//! - `simple`: `similarity`, requests with `execute: false`: the similarity answered at once
//!   (p50, p99, max, requests per second); `executed`, the predictions sent once each, then
//!   waited for: the immediate answer of an executed request and the time until every verdict
//!   is in (set beside `swe-eval run`).
//! - `grpo`: 8 instances x 16 samples drawn with repeats from each instance's predictions, sent
//!   as one group per instance and waited for; the containers the server started (from its
//!   `/metrics`) against the distinct (instance, patch) pairs; then the same requests again,
//!   every one a cache hit.
//! - `queue`: executed requests with distinct patches (a server with `-j 1` cannot drain them
//!   meanwhile): the immediate answers, 429s with `Retry-After` past the server's
//!   `--max-queue`, and the server's resident memory (from its `/metrics`).
//! - `restart`: starts a server itself, sends the predictions twice (the second copy with
//!   distinct patches), SIGKILLs it with requests done, running and queued, starts it again
//!   and counts: results per request, jobs run again, what the dead server left on the daemon.
//!
//! The rest is what they share: `options` (the server and the load's shape), `bodies` (the
//! requests), `server` (the load itself, waiting for verdicts, the server's `/metrics`),
//! `pacing` (the generator's own lateness and the server's view of the same submits).

mod bodies;
mod grpo;
mod options;
mod pacing;
mod queue;
mod restart;
mod server;
mod simple;

pub use grpo::{measure_grpo, GrpoFigures};
pub use options::ServeLoad;
pub use pacing::Pacing;
pub use queue::{measure_queue, QueueFigures};
pub use restart::{measure_restart, RestartFigures};
pub use simple::{measure_executed, measure_similarity, ServeFigures};
