//! What the runner tells its listeners while it runs, and how a run ended.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::engine::EngineError;

use super::store::{self, Category, Verdict};

/// What the runner tells its listeners.
#[derive(Debug, Clone)]
pub enum RunEvent {
    /// The plan is made: `predictions` in all, `resumed` already done, `empty` not run, `jobs`
    /// containers to run (fewer than the rest when identical patches share one).
    Planned {
        /// Predictions in the plan.
        predictions: usize,
        /// Predictions already done (resumed).
        resumed: usize,
        /// Predictions with an empty patch (not run).
        empty: usize,
        /// Containers to run.
        jobs: usize,
        /// Predictions that share another's identical run.
        shared: usize,
    },
    /// Predictions reached the dispatcher: `predictions` in all, `empty` of them answered at
    /// once (an empty patch), `shared` joining an identical one's job, `jobs` new jobs.
    Submitted {
        /// Predictions submitted.
        predictions: usize,
        /// New jobs made for them.
        jobs: usize,
        /// Predictions that joined an identical prediction's job.
        shared: usize,
        /// Predictions with an empty patch, answered at once.
        empty: usize,
    },
    /// A job of this instance was dispatched (its container is being started).
    JobStarted {
        /// The instance.
        instance_id: String,
    },
    /// A job of this instance is over (graded).
    JobEnded {
        /// The instance.
        instance_id: String,
    },
    /// A prediction's verdict, written (or found, when `resumed`).
    Verdict {
        /// The verdict.
        verdict: Box<Verdict>,
        /// Found from an earlier run rather than computed now.
        resumed: bool,
    },
    /// An interrupt arrived; `count` 1 stops dispatching, 2 kills.
    Interrupted {
        /// 1 for the first interrupt, 2 for the second.
        count: u32,
    },
    /// The deadline passed; nothing more is dispatched.
    DeadlinePassed,
    /// Something went wrong that the run survives (a file not written, a reap that failed).
    Problem {
        /// What went wrong.
        message: String,
    },
    /// Something worth telling that is not a problem (how jobs are ordered, a cache not
    /// updated).
    Note {
        /// What to tell.
        message: String,
    },
    /// Containers removed by a reap (`at_start` or at the end).
    Reaped {
        /// How many containers.
        count: usize,
        /// Removed at the run's start (left by dead runs), not at its end.
        at_start: bool,
    },
}

/// What a run did with the verdicts an earlier run with the same id left (its resume): each
/// kept, graded again from its saved log, or run again, with why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resumption {
    /// Kept as they were: everything that decides them is what this run would use.
    pub reused: usize,
    /// Graded again from their saved logs, no container: by what changed (the test lists, the
    /// grading rules).
    pub regraded: BTreeMap<String, usize>,
    /// Run again: by why (the eval script, the test patch, the image, a limit that decided
    /// it, the network it needed, an infrastructure error, no record of its inputs, ...).
    pub rerun: BTreeMap<String, usize>,
}

impl Resumption {
    /// Verdicts graded again.
    pub fn regraded_count(&self) -> usize {
        self.regraded.values().sum()
    }

    /// Verdicts run again.
    pub fn rerun_count(&self) -> usize {
        self.rerun.values().sum()
    }

    /// `why (n), why (n)`, by count.
    pub fn causes(counts: &BTreeMap<String, usize>) -> String {
        let mut v: Vec<(&String, &usize)> = counts.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        v.iter()
            .map(|(why, n)| format!("{why} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// How a run ended.
#[derive(Debug, Clone, Default)]
pub struct RunReport {
    /// The run's id.
    pub run_id: String,
    /// Verdicts by category, official grading (resumed ones included).
    pub counts: BTreeMap<Category, usize>,
    /// Verdicts by category, strict grading.
    pub strict_counts: BTreeMap<Category, usize>,
    /// Predictions in the plan.
    pub predictions: usize,
    /// Predictions found done from an earlier run (kept, or graded again): no container ran.
    pub resumed: usize,
    /// What the resume did with each earlier verdict, and why.
    pub resume: Resumption,
    /// Containers run (a job counts once however many predictions shared it; predictions
    /// without an image run none).
    pub jobs_run: usize,
    /// Unresolved verdicts whose failing required tests all failed with network errors.
    pub needs_network: usize,
    /// The test containers had the network (`--network`).
    pub network: bool,
    /// Engine failures retried, over all jobs.
    pub infra_retries: u32,
    /// Predictions left without a verdict (interrupted, deadline, write failures).
    pub not_run: usize,
    /// An interrupt stopped the dispatching.
    pub interrupted: bool,
    /// A second interrupt killed the running jobs.
    pub killed: bool,
    /// Containers of this run found (and removed) at the end.
    pub leftover_containers: usize,
    /// Containers of this run that could not be removed.
    pub unstopped_containers: Vec<String>,
    /// Problems the run survived, as messages.
    pub problems: Vec<String>,
    /// Of those, results the output folder did not take (log files or a verdict not written:
    /// a full or unwritable disk). Any makes the run a failure (exit code 1), not a problem.
    pub output_failures: usize,
    /// Files written: the official summaries, then the JSONL and CSV.
    pub files: Vec<PathBuf>,
    /// The run's wall-clock time.
    pub wall: Duration,
    /// Where the time of the jobs this run ran went.
    pub time: TimeSpent,
}

/// Where the jobs' time went: seconds summed over the jobs a run ran (resumed and shared
/// verdicts ran nothing), from each verdict's timings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TimeSpent {
    /// Jobs counted.
    pub jobs: usize,
    /// Creating and starting containers.
    pub start: f64,
    /// Containers running (for the `split` jobs, the four parts below add up to their share).
    pub run: f64,
    /// Reading the rest of the output and removing containers.
    pub removal: f64,
    /// Jobs whose run is split into the parts below (the engine timed their markers).
    pub split: usize,
    /// The driver and the apply step.
    pub apply: f64,
    /// The eval script before its tests (test files, eval-time reinstall).
    pub before_tests: f64,
    /// The tests themselves.
    pub tests: f64,
    /// After the tests until the container exited.
    pub after_tests: f64,
    /// Images the engine exported for the jobs (Swarm: pushed to the cluster's registry, at
    /// each image's first job), and the time the exports took: part of those jobs' `start`.
    pub exported: usize,
    /// Seconds the exports took, summed.
    pub export: f64,
}

impl TimeSpent {
    /// Counts one job's verdict.
    pub fn add(&mut self, v: &Verdict) {
        self.jobs += 1;
        self.start += v.setup_secs;
        self.run += v.run_secs;
        self.removal += v.teardown_secs;
        if let (Some(a), Some(b), Some(t), Some(e)) = (
            v.apply_secs,
            v.before_tests_secs,
            v.tests_secs,
            v.after_tests_secs,
        ) {
            self.split += 1;
            self.apply += a;
            self.before_tests += b;
            self.tests += t;
            self.after_tests += e;
        }
    }
}

impl RunReport {
    /// Verdicts of category `c` (official grading).
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
    /// The run is locked by another process.
    #[error(transparent)]
    Lock(#[from] store::LockError),
    /// The engine failed before the run could start.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The closing files could not be written.
    #[error(transparent)]
    Write(#[from] swe_eval_core::report::ReportError),
}

impl swe_eval_core::failure::Classify for RunError {
    fn kind(&self) -> swe_eval_core::failure::ErrorKind {
        use swe_eval_core::failure::ErrorKind;
        match self {
            RunError::Write(e) => e.kind(),
            // Another live process holds the run: choose another run id, or wait.
            RunError::Lock(store::LockError::Busy { .. }) => ErrorKind::Usage,
            _ => ErrorKind::Failed,
        }
    }
}
