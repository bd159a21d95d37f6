//! What the caller hands the runner: each instance's setup (what it runs in) and the settings
//! of a run.

use std::path::PathBuf;
use std::time::Duration;

use crate::engine::Limits;
use swe_eval_core::dataset::Instance;
use swe_eval_core::spec::SpecError;

/// What an instance runs in and how it is graded, prepared by the caller (spec + images).
#[derive(Debug, Clone)]
pub struct Setup {
    /// The instance.
    pub instance: Instance,
    /// The image to run in, or why there is none (e.g. its build failed): its predictions are
    /// then infrastructure errors and nothing else is affected.
    pub image: Result<String, NoImage>,
    /// The eval script (the official `eval.sh`).
    pub eval_script: String,
    /// Log parser name (see `logparse::PARSER_NAMES`).
    pub log_parser: String,
    /// The image's content identity (`TestSpec::image_identity`: the recipe it is built from,
    /// or the image a row or `--namespace` names), which every verdict records.
    pub image_identity: String,
    /// CPUs the instance's spec asks for (the official `nano_cpus`, e.g. 2 for pylint 2.14 and
    /// later, whose tests marked `needs_two_cores` skip when the container's CPU quota is
    /// below 2); `None` when the spec names none.
    pub cpus: Option<f64>,
}

/// Why an instance has no image to run in (its predictions are infrastructure errors; the
/// message is what their logs and verdicts say).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoImage {
    /// The instance has no test spec, so no image can be named.
    #[error("no test spec: {0}")]
    NoSpec(SpecError),
    /// Its image could not be built, found or pulled.
    #[error("image {image} ({layer} layer) not available: {message}")]
    Failed {
        /// The image that could not be had.
        image: String,
        /// Its layer (`base`, `env` or `instance`).
        layer: &'static str,
        /// Why (naming the build log when there is one).
        message: String,
    },
    /// The preparation of its image ended before the image was ready.
    #[error("image not prepared: preparation ended before it was ready")]
    NotPrepared,
}

impl Setup {
    /// The job's limits: `base` (the run's), with at least the CPUs the spec asks for.
    pub fn limits(&self, base: &Limits) -> Limits {
        let mut limits = base.clone();
        if let (Some(want), Some(have)) = (self.cpus, limits.cpus) {
            limits.cpus = Some(have.max(want));
        }
        limits
    }
}

/// The settings of a run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The run's id (the folder under `logs/run_evaluation`, container names and labels).
    pub run_id: String,
    /// Containers run at once.
    pub workers: usize,
    /// Per job, from container start; the engine kills the container when it passes.
    pub timeout: Duration,
    /// Strict mode: collection-altering files the patch adds are removed (edits restored)
    /// before the tests run.
    pub strict: bool,
    /// CPU, memory and process limits of each container.
    pub limits: Limits,
    /// Give containers network access.
    pub network: bool,
    /// Output kept per job (its head and tail); the middle beyond it is dropped.
    pub max_output_bytes: usize,
    /// Attempts per job when the engine fails transiently (default 4: with the default
    /// backoff the last one starts 14 s after the first failure, time for a daemon restart).
    pub attempts: u32,
    /// Wait before the first retry (doubling after).
    pub backoff: Duration,
    /// Run identical (instance, patch) pairs once.
    pub dedupe: bool,
    /// Run the eval script even without a patch (validate), instead of `empty_patch`.
    pub run_empty: bool,
    /// Stop dispatching new jobs after this long (running jobs finish).
    pub deadline: Option<Duration>,
    /// The file of earlier runs' job durations, read to start the longest jobs first and
    /// updated at the end (see [`super::Durations`]); `None`: plan order, nothing kept.
    pub durations: Option<PathBuf>,
}

impl RunConfig {
    /// The defaults for run `run_id`.
    pub fn new(run_id: &str) -> Self {
        RunConfig {
            run_id: run_id.to_string(),
            workers: default_workers(),
            timeout: Duration::from_secs(1800),
            strict: false,
            limits: Limits::default(),
            network: false,
            max_output_bytes: 8 << 20,
            attempts: 4,
            backoff: Duration::from_secs(2),
            dedupe: true,
            run_empty: false,
            deadline: None,
            durations: None,
        }
    }
}

/// min(4, cores).
pub fn default_workers() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(4)
}

/// Key of a prediction within a run.
pub(crate) type Key = (String, u32, String); // (model, sample, instance id)
