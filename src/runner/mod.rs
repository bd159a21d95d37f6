//! Executing jobs: the one dispatcher (a state machine, `dispatcher.rs`, and the task that
//! drives it, `drive.rs`), each job in its own container (`job.rs`: the driver script, retries,
//! grading), the order jobs start in, and a run's files (verdicts, the lock, the closing
//! summaries). The session (`crate::session`) wires it with image preparation for both faces.
//!
//! - **Dispatcher.** One task owns the state of every job not over. Predictions arrive with
//!   their answers' way back; setups arrive as images become ready; workers are bounded by a
//!   semaphore (and, with an engine that prepares containers ahead, by its start gate); each
//!   event is a method of [`Dispatcher`] that returns its effects, which the driver carries out.
//! - **Sharing.** Predictions with the same instance and patch share one job while it is not
//!   over; each gets the verdict as its own.
//! - **Faults.** Transient engine errors are retried with exponential backoff and counted;
//!   when retries run out, or the instance's image is missing, the verdict is `infra_error`,
//!   apart from the model's failures.
//! - **Stops.** The first interrupt stops dispatching and lets running jobs finish; the second
//!   aborts them and kills this process's containers by label. Each container is labelled with
//!   its run id and owning process; at start the containers of processes that are gone (a run
//!   killed with SIGKILL) are reaped, at the end this process's own.
//! - **Order.** Jobs start longest expected first, from the durations of earlier runs kept in
//!   the cache (see `order.rs`), so a long job is not left for last.
//! - **Memory.** A job's output is bounded (its head and tail); the dispatcher keeps the
//!   predictions waiting and hands each verdict and its logs back at once.

mod dispatcher;
mod drive;
mod driver;
mod events;
mod grade;
mod job;
mod job_config;
mod order;
mod plan;
mod reap;
mod store;
mod summary;

pub use dispatcher::{
    decided_by_patch, empty_verdict, Answer, Decided, Dispatcher, Effect, Item, MemberId, Rules,
    SetupOffer, Tally,
};
pub use drive::{drive, Arrival, Channels, Control, DriveOptions, Driven, Submission};
pub use driver::PatchMode;
pub use driver::{apply_script, APPLY_COMMANDS, APPLY_FAIL, APPLY_PASS, DRIVER_PATH};
pub use events::{Resumption, RunError, RunEvent, RunReport, TimeSpent};
pub use grade::regrade;
pub use job::{Job, JobDone, JobLogs};
pub use job_config::{job_config, recipe, run_labels, JobConfig};
pub use order::Durations;
pub(crate) use plan::Key;
pub use plan::{default_workers, NoImage, RunConfig, Setup};
pub use store::{
    lock, parse_verdict, read_verdict, refuse_if_locked, write_verdict, Category, Layout,
    LockError, RunLock, Verdict, VerdictError, VerdictFile, LOCK_FILE,
};
pub use summary::{write_all as write_summaries, write_report_html, RunInputs};

/// Label naming the process that owns a container (`host:pid:start-time`), so a later run can
/// tell a leftover of a dead run from a container of a live one.
pub use crate::engine::{LABEL_HOLD, LABEL_OWNER};

#[cfg(test)]
mod dispatcher_tests;
#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod tests;
