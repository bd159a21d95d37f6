//! The settings every job of a run shares ([`JobConfig`]): read by the job that runs a
//! prediction and by the grading of its output.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::engine::Limits;

/// Settings every job of a run shares.
#[derive(Debug, Clone)]
pub struct JobConfig {
    pub run_id: String,
    pub labels: BTreeMap<String, String>,
    pub timeout: Duration,
    pub limits: Limits,
    pub network: bool,
    pub max_output_bytes: usize,
    pub strict: bool,
    /// Attempts per job when the engine fails transiently (>= 1).
    pub attempts: u32,
    /// Wait before the first retry; doubles each time.
    pub backoff: Duration,
}
