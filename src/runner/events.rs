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
        predictions: usize,
        resumed: usize,
        empty: usize,
        jobs: usize,
        shared: usize,
    },
    JobStarted {
        instance_id: String,
    },
    /// A prediction's verdict, written (or found, when `resumed`).
    Verdict {
        verdict: Box<Verdict>,
        resumed: bool,
    },
    /// An interrupt arrived; `count` 1 stops dispatching, 2 kills.
    Interrupted {
        count: u32,
    },
    /// The deadline passed; nothing more is dispatched.
    DeadlinePassed,
    /// Something went wrong that the run survives (a file not written, a reap that failed).
    Problem {
        message: String,
    },
    /// Containers removed by a reap (`at_start` or at the end).
    Reaped {
        count: usize,
        at_start: bool,
    },
}

/// How a run ended.
#[derive(Debug, Clone, Default)]
pub struct RunReport {
    pub run_id: String,
    /// Verdicts by category, official grading (resumed ones included).
    pub counts: BTreeMap<Category, usize>,
    pub strict_counts: BTreeMap<Category, usize>,
    pub predictions: usize,
    pub resumed: usize,
    /// Containers run (a job counts once however many predictions shared it; predictions
    /// without an image run none).
    pub jobs_run: usize,
    pub infra_retries: u32,
    /// Predictions left without a verdict (interrupted, deadline, write failures).
    pub not_run: usize,
    pub interrupted: bool,
    pub killed: bool,
    /// Containers of this run found (and removed) at the end.
    pub leftover_containers: usize,
    /// Containers of this run that could not be removed.
    pub unstopped_containers: Vec<String>,
    pub problems: Vec<String>,
    /// Files written: the official summaries, then the JSONL and CSV.
    pub files: Vec<PathBuf>,
    pub wall: Duration,
}

impl RunReport {
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
    #[error(transparent)]
    Lock(#[from] store::LockError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Write(#[from] crate::report::ReportError),
}
