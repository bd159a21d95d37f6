//! The [`Engine`] trait: the small surface the rest of the crate needs (jobs, images, builds,
//! containers by label), and the types only it takes.

use std::collections::BTreeMap;
use std::future::Future;

use super::error::EngineError;
use super::job::{JobOutput, JobSpec};

/// What the daemon said about itself.
#[derive(Debug, Clone, Default)]
pub struct EngineInfo {
    /// The API version the daemon speaks, e.g. `1.43`.
    pub api_version: String,
    /// The daemon's own version, e.g. `24.0.7`.
    pub server_version: String,
    /// What it is, for the user: `Docker`, or `Podman 4.3.1 (rootless, cgroups v1, runc,
    /// storage overlay)`.
    pub product: String,
    /// What a run on it does not do as on Docker (limits a rootless Podman cannot apply, a
    /// slow storage driver), each a sentence a run prints as a warning at its start.
    pub limitations: Vec<String>,
    /// The CPUs jobs run on, when the engine says: the daemon's host, or a swarm's ready
    /// nodes together. The runner runs at most this many jobs at once.
    pub cpus: Option<usize>,
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

/// One step of an image's history, oldest first: the instruction that made it, when, and how
/// many bytes its layer adds (0 for a step that changed only metadata).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryStep {
    /// When the step ran (seconds since the epoch).
    pub created: i64,
    /// The instruction (`/bin/sh -c ...`, `COPY ...`).
    pub created_by: String,
    /// Bytes the step's layer adds.
    pub size: u64,
}

/// An image as the daemon describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageDetails {
    /// The image's id (`sha256:...`).
    pub id: String,
    /// Bytes of all its layers, its parents' included.
    pub size: u64,
    /// Its history, oldest step first: images built on one another share its beginning, so
    /// the layers a set of images holds on disk can be counted once.
    pub history: Vec<HistoryStep>,
    /// All its labels.
    pub labels: BTreeMap<String, String>,
}

/// An image made by running a command in a container and committing the result, as
/// `docker build` makes the layer of a `RUN` step, with named volumes mounted for the command
/// only (a compiler cache shared by builds): what they hold never ends up in the image.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitBuild {
    /// The image's name.
    pub tag: String,
    /// The image it starts from.
    pub from: String,
    /// The build container's name (a leftover of the same name is replaced).
    pub name: String,
    /// Files copied in before the command runs (they are part of the image).
    pub files: Vec<super::FileIn>,
    /// The command, e.g. `["/bin/bash", "-c", "..."]`. The image keeps the `CMD` of the image
    /// it starts from.
    pub command: Vec<String>,
    /// Named volumes mounted while the command runs, `(volume, path)`; a missing one is
    /// created with `volume_labels`.
    pub volumes: Vec<(String, String)>,
    /// Labels of the volumes it creates.
    pub volume_labels: BTreeMap<String, String>,
    /// Network for the command.
    pub network: bool,
    /// The image's labels.
    pub labels: BTreeMap<String, String>,
    /// Dockerfile instructions applied to the image's configuration (`WORKDIR /testbed/`).
    pub changes: Vec<String>,
}

/// Bytes of an archive, read or written piece by piece.
pub type ByteStream<E> = futures_util::stream::BoxStream<'static, Result<bytes::Bytes, E>>;

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
    /// The images this engine exported for the jobs so far (Swarm: pushed to the cluster's
    /// registry, once per image, at its first job) and how long each export took.
    fn exported(&self) -> Vec<(String, std::time::Duration)> {
        Vec::new()
    }
    /// Whether [`Engine::run_job`] prepares a job's container before taking its place at the
    /// job's [`super::StartGate`] (then the runner keeps jobs prepared ahead of free workers).
    fn prepares_ahead(&self) -> bool {
        false
    }
    /// Jobs whose container has started and whose main process has not ended yet (a container
    /// prepared ahead and waiting at its [`super::StartGate`] is not one), where the engine
    /// counts them; `None` where it does not.
    fn jobs_running(&self) -> Option<usize> {
        None
    }
    /// Runs one job to completion or deadline and removes its container. An engine that
    /// prepares ahead waits at `job.gate` before starting it and returns
    /// [`EngineError::Withdrawn`] when the gate closes first.
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
    /// The image `image` as the daemon describes it; `None` when it is not there.
    fn image_details(
        &self,
        image: &str,
    ) -> impl Future<Output = Result<Option<ImageDetails>, EngineError>> + Send {
        let _ = image;
        async {
            Err(EngineError::Unsupported {
                what: "image inspection".into(),
            })
        }
    }
    /// The images `names` as one archive in `docker save` format (each layer once, however
    /// many of the images share it), streamed.
    fn save_images(&self, names: &[String]) -> ByteStream<EngineError> {
        let _ = names;
        Box::pin(futures_util::stream::once(async {
            Err(EngineError::Unsupported {
                what: "saving images".into(),
            })
        }))
    }
    /// Loads an archive in `docker save` format (uncompressed, or as the daemon's own load
    /// accepts); returns the names it loaded.
    fn load_images(
        &self,
        archive: ByteStream<std::io::Error>,
    ) -> impl Future<Output = Result<Vec<String>, EngineError>> + Send {
        drop(archive);
        async {
            Err(EngineError::Unsupported {
                what: "loading images".into(),
            })
        }
    }
    /// Makes image `build.tag` by running `build.command` in a container from `build.from`
    /// and committing it (see [`CommitBuild`]); returns the command's output, the build log.
    /// A command that fails is [`EngineError::Build`] with the log.
    fn commit_build(
        &self,
        build: CommitBuild,
    ) -> impl Future<Output = Result<String, EngineError>> + Send {
        drop(build);
        async {
            Err(EngineError::Unsupported {
                what: "builds in a container".into(),
            })
        }
    }
    /// Removes the named volume `name` (absent: no error; one a container uses:
    /// [`EngineError::VolumeInUse`]).
    fn remove_volume(&self, name: &str) -> impl Future<Output = Result<(), EngineError>> + Send {
        let _ = name;
        async {
            Err(EngineError::Unsupported {
                what: "removing volumes".into(),
            })
        }
    }
    /// Named volumes carrying all of `labels`.
    fn list_volumes(
        &self,
        labels: BTreeMap<String, String>,
    ) -> impl Future<Output = Result<Vec<Resource>, EngineError>> + Send {
        drop(labels);
        async {
            Err(EngineError::Unsupported {
                what: "listing volumes".into(),
            })
        }
    }
    /// Pushes `image` to the registry its name starts with (`HOST:PORT/...`).
    fn push_image(&self, image: &str) -> impl Future<Output = Result<(), EngineError>> + Send {
        let _ = image;
        async {
            Err(EngineError::Unsupported {
                what: "pushing images".into(),
            })
        }
    }
    /// Called once when a run's jobs are over, before its images are cleaned up: removes what
    /// the engine itself added for the jobs (Swarm: the registry names of pushed images).
    /// Returns what could not be undone.
    fn finish_run(&self) -> impl Future<Output = Vec<String>> + Send {
        async { Vec::new() }
    }
}
