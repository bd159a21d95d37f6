//! How an evaluator runs: where its state lives, the runner's settings (shared with `run`),
//! how images are prepared and kept, and its bounds (queue, deadlines, sizes).

use std::path::PathBuf;
use std::time::Duration;

use crate::images::CacheLevel;
use crate::runner::RunConfig;
use crate::session::PrepareOptions;

use super::evaluation::GradedBy;
use super::request::Bounds;

/// Everything an [`super::Evaluator`] needs besides its engine and dataset.
#[derive(Debug, Clone)]
pub struct EvaluatorOptions {
    /// The state folder: the database, the job folders, the build logs.
    pub state: PathBuf,
    /// The runner's settings (workers, timeout, strict, network, limits, retries), as `run`
    /// makes them; the evaluator sets its run id and output, no summaries and no durations.
    pub run: RunConfig,
    /// How images are prepared.
    pub prepare: PrepareOptions,
    /// Which images to keep when the evaluator shuts down.
    pub keep: CacheLevel,
    /// Prepare every instance's image at start rather than when first asked for.
    pub prepare_all: bool,
    /// Most requests accepted and not done at once; more are refused (429).
    pub max_queue: usize,
    /// The deadline of a request that names none.
    pub default_deadline: Duration,
    /// What one request may carry.
    pub bounds: Bounds,
    /// The model name of a request that names none.
    pub default_model: String,
    /// The grading every outcome's `score` follows. The strict verdict is computed from the
    /// same log whatever `run.strict` says; only a strict run also removes collection-altering
    /// files before the tests (see [`super::ServeChoices::reward`]).
    pub reward: GradedBy,
}

/// The default bound of the queue.
pub const DEFAULT_MAX_QUEUE: usize = 10_000;

/// The default deadline of a request: the job's timeout and time for its image and queue.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(3600);

/// The model name of requests that name none.
pub const DEFAULT_MODEL: &str = "serve";

impl EvaluatorOptions {
    /// The defaults, with `state`, the runner's settings `run` and image options `prepare`.
    pub fn new(state: PathBuf, run: RunConfig, prepare: PrepareOptions) -> Self {
        EvaluatorOptions {
            state,
            run,
            prepare,
            keep: CacheLevel::Instance,
            prepare_all: false,
            max_queue: DEFAULT_MAX_QUEUE,
            default_deadline: DEFAULT_DEADLINE,
            bounds: Bounds::default(),
            default_model: DEFAULT_MODEL.to_string(),
            reward: GradedBy::default(),
        }
    }
}
