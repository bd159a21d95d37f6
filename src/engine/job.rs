//! A job as the engine runs it: its [`JobSpec`] (image, command, files, [`Limits`]) and its
//! [`JobOutput`] (exit code, bounded output, timing).

use std::collections::BTreeMap;
use std::time::Duration;

/// Resource limits of one job's container.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// CPUs (fractional allowed); `None` = no limit.
    pub cpus: Option<f64>,
    /// Memory in bytes (swap included: no swap beyond it); `None` = no limit.
    pub memory_bytes: Option<i64>,
    /// Most processes the container may have at once; `None` = no limit.
    pub pids: Option<i64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            cpus: Some(1.0),
            memory_bytes: Some(4 << 30),
            pids: Some(1024),
        }
    }
}

/// A file copied into the container before it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct FileIn {
    /// Absolute path inside the container.
    pub path: String,
    /// The file's bytes.
    pub contents: Vec<u8>,
    /// Unix permission bits, e.g. `0o755`.
    pub mode: u32,
}

/// Everything needed to run one job.
#[derive(Debug, Clone)]
pub struct JobSpec {
    /// The image the container runs.
    pub image: String,
    /// Container name (unique per run and job).
    pub name: String,
    /// Labels put on the container (and, on Swarm, its other objects).
    pub labels: BTreeMap<String, String>,
    /// Files copied into the container before it starts.
    pub files: Vec<FileIn>,
    /// The main process, e.g. `["/bin/bash", "/swe-eval/job.sh"]`.
    pub command: Vec<String>,
    /// Environment variables, each `NAME=value`.
    pub env: Vec<String>,
    /// Working directory of the main process; `None` = the image's.
    pub working_dir: Option<String>,
    /// Resource limits of the container.
    pub limits: Limits,
    /// Network access; off by default.
    pub network: bool,
    /// Wall-clock deadline from start; the container is killed when it passes.
    pub timeout: Duration,
    /// At most this many bytes of output are kept (head and tail), however much is printed.
    pub max_output_bytes: usize,
    /// Texts whose first appearance in the output is timed ([`JobOutput::seen`]), where the
    /// engine reads the output as it is printed (Docker); others leave them unseen.
    pub watch: Vec<String>,
}

/// What a job produced.
#[derive(Debug, Clone, Default)]
pub struct JobOutput {
    /// Exit code of the main process; `None` when it was killed at the deadline.
    pub exit_code: Option<i64>,
    /// Combined stdout and stderr, possibly cut in the middle (see `truncated_bytes`).
    pub output: Vec<u8>,
    /// Bytes of output dropped from the middle to keep within `max_output_bytes`.
    pub truncated_bytes: u64,
    /// The job was killed at its deadline.
    pub timed_out: bool,
    /// Killed by the kernel's OOM killer.
    pub oom_killed: bool,
    /// Time spent creating and starting the container, running it, and removing it.
    pub setup: Duration,
    /// Time from start until the main process ended or the deadline passed.
    pub run: Duration,
    /// Time after the run until the container was removed.
    pub teardown: Duration,
    /// The cluster node that ran the job (Swarm); `None` on a single daemon.
    pub node: Option<String>,
    /// For each of [`JobSpec::watch`], when it first arrived, from the start of the run; empty
    /// or `None` where the engine did not see it as it was printed.
    pub seen: Vec<Option<Duration>>,
}

impl JobOutput {
    /// Splits the time since `t0` (the job's beginning) once the job is over: all of it is
    /// setup when the job never started, else what follows setup and run is teardown.
    pub fn close_timing(&mut self, t0: std::time::Instant) {
        if self.setup.is_zero() {
            self.setup = t0.elapsed();
        } else {
            self.teardown = t0.elapsed().saturating_sub(self.setup + self.run);
        }
    }
}
