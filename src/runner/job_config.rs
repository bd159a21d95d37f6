//! The settings every job of a run shares ([`JobConfig`]): read by the job that runs a
//! prediction and by the grading of its output.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::engine::Limits;

use super::{RunConfig, Setup};
use swe_eval_core::identity::{self, Recipe};

/// Settings every job of a run shares.
#[derive(Debug, Clone)]
pub struct JobConfig {
    /// The run's id (in container names and verdicts).
    pub run_id: String,
    /// The labels every container carries.
    pub labels: BTreeMap<String, String>,
    /// From container start; the engine kills the container when it passes.
    pub timeout: Duration,
    /// CPU, memory and process limits.
    pub limits: Limits,
    /// The containers have the network.
    pub network: bool,
    /// Output kept (its head and tail).
    pub max_output_bytes: usize,
    /// Strict mode: collection-altering files the patch adds are removed before the tests.
    pub strict: bool,
    /// Attempts per job when the engine fails transiently (>= 1).
    pub attempts: u32,
    /// Wait before the first retry; doubles each time.
    pub backoff: Duration,
}

/// The settings of `run`'s jobs, whose containers `owner` owns.
pub fn job_config(run: &RunConfig, owner: &str) -> JobConfig {
    JobConfig {
        run_id: run.run_id.clone(),
        labels: run_labels(&run.run_id, owner),
        timeout: run.timeout,
        limits: run.limits.clone(),
        network: run.network,
        max_output_bytes: run.max_output_bytes,
        strict: run.strict,
        attempts: run.attempts,
        backoff: run.backoff,
    }
}

/// The identity recipe of `setup`'s verdicts under `cfg` (`swe_eval_core::identity`): its eval
/// script, test patch, image, tests and the limits that decide verdicts.
pub fn recipe(setup: &Setup, cfg: &JobConfig) -> Recipe {
    let inst = &setup.instance;
    Recipe::of(
        &identity::Instance {
            instance_id: &inst.instance_id,
            eval_script: &setup.eval_script,
            test_patch: inst.test_patch.as_deref().unwrap_or(""),
            image: &setup.image_identity,
            fail_to_pass: inst.fail_to_pass(),
            pass_to_pass: inst.pass_to_pass(),
            log_parser: &setup.log_parser,
        },
        identity::Limits {
            timeout_secs: cfg.timeout.as_secs(),
            memory_bytes: cfg.limits.memory_bytes,
            cpus_milli: setup
                .limits(&cfg.limits)
                .cpus
                .map(|c| (c * 1000.0).round() as u64),
            network: cfg.network,
            strict: cfg.strict,
        },
    )
}

/// The labels every container of a run carries: the tool, the run id and the owning process.
pub fn run_labels(run_id: &str, owner: &str) -> BTreeMap<String, String> {
    use crate::engine::{LABEL_OWNER, LABEL_RUN_ID, LABEL_TOOL};
    BTreeMap::from([
        (LABEL_TOOL.to_string(), "1".to_string()),
        (LABEL_RUN_ID.to_string(), run_id.to_string()),
        (LABEL_OWNER.to_string(), owner.to_string()),
    ])
}
