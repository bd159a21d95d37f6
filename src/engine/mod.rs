//! The container engine. `Engine` is the small surface the rest of the crate needs; the Docker
//! implementation (`docker.rs`) and the Docker Swarm one (`swarm/`, jobs as one-shot services
//! across a cluster) are the only code in the crate that imports bollard. A fake engine
//! (`fake.rs`) stands behind the same trait for unit tests of the runner.
//!
//! A job is one container whose main process is the whole job (apply the patch, run the eval
//! script): created, given its files, started, waited for with a deadline, its output read
//! (bounded), then force-removed. Nothing waits for a stop timeout.

pub mod bounded;
pub mod docker;
pub mod fake;
pub mod swarm;
pub mod tarball;

pub use docker::DockerEngine;
pub use fake::FakeEngine;
pub use swarm::{SwarmEngine, SwarmOptions};

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

/// Label keys put on everything the tool creates, so that a reap by label finds it.
pub const LABEL_TOOL: &str = "swe-eval";
/// The id of the run that created the object.
pub const LABEL_RUN_ID: &str = "swe-eval.run-id";
/// The process that made a container (`host:pid:start`); a dead owner's containers are reaped.
pub const LABEL_OWNER: &str = "swe-eval.owner";
/// Marks a hold: a container that only keeps an image from being removed (`images::hold`).
pub const LABEL_HOLD: &str = "swe-eval.hold";
/// Marks a hand-over: an image a run would have removed but another run still used; the value
/// is the image name (`images::hold::mark_doomed`).
pub const LABEL_DOOMED: &str = "swe-eval.doomed";
/// A label key defined with the others from the start; nothing in the crate sets or reads it.
pub const LABEL_KEEP: &str = "swe-eval.keep";

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

/// What the daemon said about itself.
#[derive(Debug, Clone, Default)]
pub struct EngineInfo {
    /// The API version the daemon speaks, e.g. `1.43`.
    pub api_version: String,
    /// The daemon's own version, e.g. `24.0.7`.
    pub server_version: String,
}

/// An engine failure, one variant per operation so a user reads which step failed.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot reach the Docker daemon at {endpoint}: {message}\n  start one with `sudo scripts/ensure-docker.sh` (installs docker.io when missing and starts dockerd), `sudo dockerd &` or `sudo systemctl start docker`")]
    /// The daemon could not be reached.
    Connect {
        /// The address tried (socket path or URL).
        endpoint: String,
        /// Why the connection failed.
        message: String,
    },
    #[error("image build of {tag} failed: {message}")]
    /// An image build failed.
    Build {
        /// The tag being built.
        tag: String,
        /// The error the build stopped with.
        message: String,
        /// The build's output up to the failure.
        log: String,
    },
    #[error("image import of {tag} failed: {message}")]
    /// Importing a root file system as an image failed.
    Import {
        /// The tag being imported.
        tag: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
    #[error("pull of {image} failed: {message}")]
    /// Pulling an image failed.
    Pull {
        /// The image being pulled.
        image: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
    #[error("push of {image} failed: {message}")]
    /// Pushing an image failed.
    Push {
        /// The image being pushed.
        image: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
    #[error("image {image} is not present")]
    /// The image is not present.
    ImageMissing {
        /// The image looked for.
        image: String,
    },
    #[error("image inspect/remove of {image} failed: {message}")]
    /// Inspecting or removing an image failed.
    Image {
        /// The image concerned.
        image: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
    /// Removal refused: a container (a job or another run's hold) still uses the image.
    #[error("image {image} is in use by a container (another run may hold it): {message}")]
    ImageInUse {
        /// The image whose removal was refused.
        image: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
    #[error("container create {name} failed: {message}")]
    /// Creating a container (or, on Swarm, a service or config) failed.
    Create {
        /// The object's name (or what it is, e.g. `hold on IMAGE`).
        name: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
    #[error("copy into container {name} failed: {message}")]
    /// Copying the job's files into its container failed.
    Copy {
        /// The container's name.
        name: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
    #[error("container start {name} failed: {message}")]
    /// Starting a container failed.
    Start {
        /// The container's name.
        name: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
    #[error("container wait {name} failed: {message}")]
    /// Waiting for a container (or task) to end failed.
    Wait {
        /// The container's name.
        name: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
    #[error("container logs {name} failed: {message}")]
    /// Reading a container's output failed.
    Logs {
        /// The container's name.
        name: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
    #[error("container remove {name} failed: {message}")]
    /// Removing a container (or other per-job object) failed.
    Remove {
        /// Its name or id.
        name: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
    #[error("listing {what} failed: {message}")]
    /// Listing objects by label failed.
    List {
        /// What was being listed (e.g. containers, images).
        what: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
}

impl EngineError {
    /// True for failures of the infrastructure that are worth retrying (daemon restarts,
    /// transient API errors); false for failures a retry cannot fix.
    pub fn is_transient(&self) -> bool {
        match self {
            EngineError::ImageMissing { .. } | EngineError::Build { .. } => false,
            // A registry that does not have the image, or refuses us, will not change its mind.
            EngineError::Pull { message, .. } => {
                let m = message.to_lowercase();
                ![
                    "not found",
                    "manifest unknown",
                    "does not exist",
                    "unauthorized",
                    "denied",
                    "invalid reference",
                ]
                .iter()
                .any(|p| m.contains(p))
            }
            _ => true,
        }
    }
}

/// How an image is built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildSettings {
    /// Network for the `RUN` steps. Off where nothing needs it (an instance image whose
    /// repository comes in the context): hermetic, and no network endpoint to set up.
    pub network: bool,
}

impl Default for BuildSettings {
    fn default() -> Self {
        BuildSettings { network: true }
    }
}

/// A tar archive handed to the daemon: in memory, or a file streamed from disk (large build
/// contexts and root file systems, so they never sit whole in the orchestrator's memory).
#[derive(Debug, Clone, PartialEq)]
pub enum TarSource {
    /// The archive's bytes.
    Bytes(Vec<u8>),
    /// The path of a tar file on disk.
    File(std::path::PathBuf),
}

impl From<Vec<u8>> for TarSource {
    fn from(b: Vec<u8>) -> Self {
        TarSource::Bytes(b)
    }
}

impl From<std::path::PathBuf> for TarSource {
    fn from(p: std::path::PathBuf) -> Self {
        TarSource::File(p)
    }
}

/// A container or image the tool created, as found by label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// The engine's id (on Swarm, prefixed for services and configs).
    pub id: String,
    /// Its name.
    pub name: String,
    /// All its labels.
    pub labels: BTreeMap<String, String>,
}

/// The engine operations the crate needs. Futures are `Send` so jobs can run on spawned tasks.
pub trait Engine: Send + Sync + 'static {
    /// What the daemon says about itself; also a check that it is reachable.
    fn info(&self) -> impl Future<Output = Result<EngineInfo, EngineError>> + Send;
    /// Whether an image named `image` is present.
    fn image_exists(&self, image: &str) -> impl Future<Output = Result<bool, EngineError>> + Send;
    /// Builds `tag` from a tar build context holding a `Dockerfile`; returns the build log.
    fn build_image(
        &self,
        tag: &str,
        context_tar: impl Into<TarSource> + Send,
        labels: BTreeMap<String, String>,
    ) -> impl Future<Output = Result<String, EngineError>> + Send {
        self.build_image_with(tag, context_tar, labels, BuildSettings::default())
    }
    /// [`Engine::build_image`] with explicit settings (e.g. no network for the `RUN` steps).
    fn build_image_with(
        &self,
        tag: &str,
        context_tar: impl Into<TarSource> + Send,
        labels: BTreeMap<String, String>,
        settings: BuildSettings,
    ) -> impl Future<Output = Result<String, EngineError>> + Send;
    /// Imports a root file system (a tar, in memory or on disk) as image `tag`.
    fn import_image(
        &self,
        tag: &str,
        rootfs_tar: impl Into<TarSource> + Send,
        labels: BTreeMap<String, String>,
    ) -> impl Future<Output = Result<(), EngineError>> + Send;
    /// Gives an existing image another name (`repo:tag`).
    fn tag_image(
        &self,
        image: &str,
        new_name: &str,
    ) -> impl Future<Output = Result<(), EngineError>> + Send;
    /// Pulls `image` from its registry.
    fn pull_image(&self, image: &str) -> impl Future<Output = Result<(), EngineError>> + Send;
    /// Removes the name `image` (the image goes with its last name). Never forced: an image
    /// a container still uses is [`EngineError::ImageInUse`]; an absent one is no error.
    fn remove_image(&self, image: &str) -> impl Future<Output = Result<(), EngineError>> + Send;
    /// Creates (never starts) a container from `image` so that the image cannot be removed
    /// while it stands; returns its id. [`EngineError::ImageMissing`] when `image` is absent:
    /// creating the hold is also an atomic check that the image exists.
    fn create_hold(
        &self,
        image: &str,
        labels: BTreeMap<String, String>,
    ) -> impl Future<Output = Result<String, EngineError>> + Send;
    /// Runs one job to completion or deadline and removes its container.
    fn run_job(&self, job: JobSpec) -> impl Future<Output = Result<JobOutput, EngineError>> + Send;
    /// Containers carrying all of `labels` (running or not). A cluster engine lists its other
    /// per-job objects here too (Swarm: services and configs), so reaps by label cover them.
    fn list_containers(
        &self,
        labels: BTreeMap<String, String>,
    ) -> impl Future<Output = Result<Vec<Resource>, EngineError>> + Send;
    /// Kills and removes a container at once (no stop timeout).
    fn remove_container(&self, id: &str) -> impl Future<Output = Result<(), EngineError>> + Send;
    /// Images carrying all of `labels`.
    fn list_images(
        &self,
        labels: BTreeMap<String, String>,
    ) -> impl Future<Output = Result<Vec<Resource>, EngineError>> + Send;
    /// Called once when a run's jobs are over, before its images are cleaned up: removes what
    /// the engine itself added for the jobs (Swarm: the registry names of pushed images).
    /// Returns what could not be undone.
    fn finish_run(&self) -> impl Future<Output = Vec<String>> + Send {
        async { Vec::new() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_errors_are_the_ones_a_retry_can_fix() {
        let pull = |m: &str| EngineError::Pull {
            image: "i".into(),
            message: m.into(),
        };
        let cases = [
            (
                EngineError::ImageMissing { image: "i".into() },
                false,
                "image absent",
            ),
            (
                EngineError::Build {
                    tag: "t".into(),
                    message: "m".into(),
                    log: String::new(),
                },
                false,
                "broken recipe",
            ),
            (
                pull("manifest unknown: manifest unknown"),
                false,
                "registry lacks it",
            ),
            (pull("Not Found"), false, "registry lacks it"),
            (pull("connection refused"), true, "registry down"),
            (
                EngineError::Start {
                    name: "n".into(),
                    message: "EOF".into(),
                },
                true,
                "daemon restart",
            ),
            (
                EngineError::Connect {
                    endpoint: "e".into(),
                    message: "m".into(),
                },
                true,
                "daemon restart",
            ),
        ];
        for (e, want, why) in cases {
            assert_eq!(e.is_transient(), want, "{e}: {why}");
        }
    }
}
