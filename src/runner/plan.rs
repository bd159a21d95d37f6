//! What the caller hands the runner: the plan (setups, predictions, instances) and the
//! settings of a run; and which predictions a resumed run still has to run.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::engine::Limits;
use swe_eval_core::dataset::Instance;
use swe_eval_core::predictions::Prediction;

use super::store::{self, Layout};

/// What an instance runs in and how it is graded, prepared by the caller (spec + images).
#[derive(Debug, Clone)]
pub struct Setup {
    /// The instance.
    pub instance: Instance,
    /// The image to run in, or why there is none (e.g. its build failed): its predictions are
    /// then infrastructure errors and nothing else is affected.
    pub image: Result<String, String>,
    /// The eval script (the official `eval.sh`).
    pub eval_script: String,
    /// Log parser name (see `logparse::PARSER_NAMES`).
    pub log_parser: String,
    /// CPUs the instance's spec asks for (the official `nano_cpus`, e.g. 2 for pylint 2.14 and
    /// later, whose tests marked `needs_two_cores` skip when the container's CPU quota is
    /// below 2); `None` when the spec names none.
    pub cpus: Option<f64>,
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
    /// The run's id (the folder under `logs/run_evaluation`).
    pub run_id: String,
    /// The output folder.
    pub output: PathBuf,
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
    /// Keep every verdict in memory and write the closing summaries (official summaries,
    /// JSONL, CSV) at the end. A long-lived dispatcher fed by submissions (a server) turns it
    /// off: its memory then does not grow with the verdicts, and each verdict is in its folder.
    pub summaries: bool,
}

impl RunConfig {
    /// The limits that may decide a verdict by themselves (its timeout and memory limit):
    /// a resume keeps a verdict they decided only when they are the same
    /// ([`super::load_valid`]).
    pub fn verdict_limits(&self) -> super::store::RunLimits {
        super::store::RunLimits {
            timeout_secs: self.timeout.as_secs(),
            memory_bytes: self.limits.memory_bytes,
        }
    }

    /// The defaults for run `run_id` writing into `output`.
    pub fn new(run_id: &str, output: PathBuf) -> Self {
        RunConfig {
            run_id: run_id.to_string(),
            output,
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
            summaries: true,
        }
    }
}

/// min(4, cores).
pub fn default_workers() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(4)
}

/// What the caller hands the runner.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Setups by instance id. Predictions of other instances are reported and skipped.
    pub setups: HashMap<String, Arc<Setup>>,
    /// The predictions to run.
    pub predictions: Vec<Prediction>,
    /// The instances the run covers, for the official summary's totals and `incomplete_ids`.
    pub instance_ids: Vec<String>,
}

/// The predictions a run with this layout still has to run: those without a verdict for
/// their patch (empty patches count only when `run_empty`). The caller prepares images for
/// these alone, so a resumed run does not wait for images it will not use.
pub fn pending<'a>(predictions: &'a [Prediction], config: &RunConfig) -> Vec<&'a Prediction> {
    let layout = Layout::new(&config.output, &config.run_id);
    predictions
        .iter()
        .filter(|p| config.run_empty || !p.is_empty_patch())
        .filter(|p| {
            let dir = layout.prediction_dir(&p.model_name_or_path, &p.instance_id, p.sample);
            store::load_valid(&dir, &p.patch_hash(), &config.verdict_limits()).is_none()
        })
        .collect()
}

/// Key of a prediction within a run.
pub(crate) type Key = (String, u32, String); // (model, sample, instance id)
