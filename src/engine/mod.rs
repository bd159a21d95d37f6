//! The container engine. `Engine` is the small surface the rest of the crate needs; the Docker
//! implementation (`docker/`) and the Docker Swarm one (`swarm/`, jobs as one-shot services
//! across a cluster) are the only code in the crate that imports bollard. A fake engine
//! (`fake.rs`) stands behind the same trait for unit tests of the runner.
//!
//! A job is one container whose main process is the whole job (apply the patch, run the eval
//! script): created, given its files, started, waited for with a deadline, its output read
//! (bounded), then force-removed. Nothing waits for a stop timeout. The Docker engine prepares
//! a job (create, files, attach) before it may start ([`StartGate`]), so the runner keeps the
//! next jobs ready while others run and a worker that frees up starts one at once.

mod api;
mod bounded;
mod cgroup;
mod choice;
mod docker;
mod error;
#[cfg(any(test, feature = "testing"))]
mod fake;
mod forward;
mod job;
mod labels;
mod podman;
mod swarm;
mod tarball;

pub use api::{
    BuildSettings, ByteStream, CommitBuild, Engine, EngineInfo, HistoryStep, ImageDetails,
    Resource, TarSource,
};
pub use cgroup::CgroupError;
pub use choice::{connect, AnyEngine, ChoiceError, ConnectError, EngineChoice, EngineKind};
pub use docker::{CpuWeightError, Daemon, DockerEngine};
pub use error::EngineError;
#[cfg(any(test, feature = "testing"))]
pub use fake::{exited, timed_out, Call, FakeEngine};
pub use forward::Forward;
pub use job::{
    FileIn, GatePass, JobOutput, JobSpec, Limits, Place, Running, RunningCount, StartGate, Ticket,
};
pub use labels::{LABEL_DOOMED, LABEL_HOLD, LABEL_KEEP, LABEL_OWNER, LABEL_RUN_ID, LABEL_TOOL};
pub use podman::{LimitSupport, PodmanHost};
pub use swarm::{plan_inputs, SwarmEngine, SwarmOptions, SWARM_CONFIG_CHUNK, SWARM_INLINE_MAX};
pub use tarball::{archive, archive_with_dirs, files_archive, write_archive, TarEntry};
