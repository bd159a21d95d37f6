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
//! - **Images still being prepared.** With [`run_arriving`], the jobs of instances whose setup
//!   is still on its way wait outside the queue and join it when it arrives (`arrivals.rs`),
//!   so jobs run while other images build; the channel closes when dispatching stops.
//! - **Submissions.** With [`dispatch`], predictions may also arrive while it runs, through a
//!   channel of [`Submission`]s, each prediction with its own folder, deadline and reply
//!   (`intake.rs`); `run` has none. A long-lived caller keeps the channel open; the dispatcher
//!   ends once it is closed and the work is done.
//! - **Order.** Jobs start longest expected first, from the durations of earlier runs kept in
//!   the cache (see `order.rs`), so a long job is not left for last.
//! - **Memory.** Logs go to disk as each job ends; the dispatcher keeps only verdicts (a few
//!   hundred bytes each) and the queue of jobs (their patches).

mod arrivals;
mod dispatch;
mod driver;
mod events;
mod grade;
mod intake;
mod job;
mod job_config;
mod order;
mod plan;
mod reap;
mod store;
mod summary;

pub use arrivals::{arrivals, Arrivals, Arrive};
pub use dispatch::{dispatch, run, run_arriving};
pub use driver::PatchMode;
pub use driver::{apply_script, APPLY_COMMANDS, APPLY_FAIL, APPLY_PASS, DRIVER_PATH};
pub use events::{RunError, RunEvent, RunReport, TimeSpent};
pub use intake::{
    submissions, Delivery, Finished, NewSetup, Reply, Submission, Submissions, Submit, Submitted,
};
pub use order::Durations;
pub(crate) use plan::Key;
pub use plan::{default_workers, pending, Plan, RunConfig, Setup};
pub use store::{
    load_valid, lock, parse_verdict, read_verdict, Category, Layout, LockError, RunLimits, RunLock,
    Verdict, VerdictError, VerdictFile, VERDICT_FILE,
};

/// Label naming the process that owns a container (`host:pid:start-time`), so a later run can
/// tell a leftover of a dead run from a container of a live one.
pub use crate::engine::{LABEL_HOLD, LABEL_OWNER};

#[cfg(test)]
mod tests;
