//! Which engine runs the jobs, chosen by the user ([`EngineChoice`]), and the one engine type
//! every workflow holds ([`AnyEngine`]): a single daemon or a Swarm cluster behind the same
//! [`Engine`] surface, connected by [`connect`]. The workflows are written once for
//! `AnyEngine` instead of once per engine; the fake engine of the tests stays a type of its own.

use std::collections::BTreeMap;
use std::time::Duration;

use super::api::{
    BuildSettings, ByteStream, CommitBuild, Engine, EngineInfo, ImageDetails, Resource, TarSource,
};
use super::docker::{Daemon, DockerEngine};
use super::error::EngineError;
use super::job::{JobOutput, JobSpec};
use super::swarm::{SwarmEngine, SwarmOptions};

/// Where the jobs run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EngineKind {
    /// Containers on the daemon at `DOCKER_HOST` (or the local socket).
    #[default]
    Docker,
    /// One-shot services on the Docker Swarm cluster that daemon manages (images are built
    /// there).
    Swarm,
    /// Containers on a Podman service through its Docker-compatible API, found as
    /// [`Daemon::Podman`] says (rootless or rootful).
    Podman,
}

impl EngineKind {
    /// The name the command line takes (`docker`, `swarm`).
    pub fn as_str(self) -> &'static str {
        match self {
            EngineKind::Docker => "docker",
            EngineKind::Swarm => "swarm",
            EngineKind::Podman => "podman",
        }
    }
}

/// The user's choice of engine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineChoice {
    /// Where the jobs run.
    pub kind: EngineKind,
    /// With [`EngineKind::Swarm`]: `HOST:PORT` of a registry every node can pull from (the run
    /// pushes the images it uses there); without it every node must already have them.
    pub registry: Option<String>,
    /// A CPU weight for every container (cgroup v2's scale: 100 is a process's default), given
    /// through a cgroup of the harness's own on this machine (`cgroup.rs`); `None`: the
    /// daemon's default. Docker only.
    pub cpu_weight: Option<u32>,
}

/// Why an [`EngineChoice`] cannot be used as given.
#[derive(Debug, thiserror::Error)]
pub enum ChoiceError {
    /// A registry was named for a single daemon, which needs none.
    #[error("--registry is for --engine swarm (a single daemon needs no registry)")]
    RegistryWithoutSwarm,
    /// A CPU weight was asked of an engine that cannot take it.
    #[error("--cpu-weight is for --engine docker (Swarm's services and Podman's containers take no cgroup of the harness's)")]
    CpuWeightNotDocker,
    /// A CPU weight out of range.
    #[error("--cpu-weight is 1 to 10000, not {0}")]
    CpuWeightRange(u32),
}

impl swe_eval_core::failure::Classify for ChoiceError {
    fn kind(&self) -> swe_eval_core::failure::ErrorKind {
        swe_eval_core::failure::ErrorKind::Usage
    }
}

impl EngineChoice {
    /// Checks the choice without connecting (a registry without Swarm is refused).
    pub fn check(&self) -> Result<(), ChoiceError> {
        match self.kind {
            EngineKind::Docker | EngineKind::Podman if self.registry.is_some() => {
                Err(ChoiceError::RegistryWithoutSwarm)
            }
            EngineKind::Swarm | EngineKind::Podman if self.cpu_weight.is_some() => {
                Err(ChoiceError::CpuWeightNotDocker)
            }
            _ => match self.cpu_weight {
                Some(w) if !super::cgroup::WEIGHTS.contains(&w) => {
                    Err(ChoiceError::CpuWeightRange(w))
                }
                _ => Ok(()),
            },
        }
    }
}

/// Why no engine could be had.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The choice itself is wrong (bad usage).
    #[error(transparent)]
    Choice(#[from] ChoiceError),
    /// The engine did not answer.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The containers' CPU weight could not be set as asked (the message says why).
    #[error("cannot give the containers a CPU weight: {0}")]
    CpuWeight(String),
}

impl swe_eval_core::failure::Classify for ConnectError {
    fn kind(&self) -> swe_eval_core::failure::ErrorKind {
        match self {
            ConnectError::Choice(e) => e.kind(),
            ConnectError::Engine(e) => e.kind(),
            ConnectError::CpuWeight(_) => swe_eval_core::failure::ErrorKind::Usage,
        }
    }
}

/// Connects the engine `choice` names.
pub async fn connect(choice: &EngineChoice) -> Result<AnyEngine, ConnectError> {
    choice.check()?;
    Ok(match choice.kind {
        EngineKind::Docker => {
            let mut engine = DockerEngine::connect().await?;
            if let Some(weight) = choice.cpu_weight {
                engine
                    .weigh_containers(weight)
                    .await
                    .map_err(ConnectError::CpuWeight)?;
            }
            AnyEngine::Docker(engine)
        }
        EngineKind::Podman => AnyEngine::Docker(DockerEngine::connect_to(Daemon::Podman).await?),
        EngineKind::Swarm => AnyEngine::Swarm(Box::new(
            SwarmEngine::connect(SwarmOptions {
                registry: choice.registry.clone(),
                ..Default::default()
            })
            .await?,
        )),
    })
}

/// A connected engine of any kind the user can choose.
pub enum AnyEngine {
    /// A single daemon: Docker, or Podman behind its Docker-compatible API.
    Docker(DockerEngine),
    /// A Swarm cluster through its manager.
    Swarm(Box<SwarmEngine>),
}

impl AnyEngine {
    /// Its kind.
    pub fn kind(&self) -> EngineKind {
        match self {
            AnyEngine::Docker(e) if e.is_podman() => EngineKind::Podman,
            AnyEngine::Docker(_) => EngineKind::Docker,
            AnyEngine::Swarm(_) => EngineKind::Swarm,
        }
    }
}

impl From<DockerEngine> for AnyEngine {
    fn from(e: DockerEngine) -> Self {
        AnyEngine::Docker(e)
    }
}

impl From<SwarmEngine> for AnyEngine {
    fn from(e: SwarmEngine) -> Self {
        AnyEngine::Swarm(Box::new(e))
    }
}

/// Calls `$call` on whichever engine `$self` holds.
macro_rules! each {
    ($self:expr, $e:ident => $call:expr) => {
        match $self {
            AnyEngine::Docker($e) => $call,
            AnyEngine::Swarm($e) => $call,
        }
    };
}

impl Engine for AnyEngine {
    async fn info(&self) -> Result<EngineInfo, EngineError> {
        each!(self, e => e.info().await)
    }

    async fn image_exists(&self, image: &str) -> Result<bool, EngineError> {
        each!(self, e => e.image_exists(image).await)
    }

    async fn build_image_with(
        &self,
        tag: &str,
        context_tar: impl Into<TarSource> + Send,
        labels: BTreeMap<String, String>,
        settings: BuildSettings,
    ) -> Result<String, EngineError> {
        let context: TarSource = context_tar.into();
        each!(self, e => e.build_image_with(tag, context, labels, settings).await)
    }

    async fn import_image(
        &self,
        tag: &str,
        rootfs_tar: impl Into<TarSource> + Send,
        labels: BTreeMap<String, String>,
    ) -> Result<(), EngineError> {
        let rootfs: TarSource = rootfs_tar.into();
        each!(self, e => e.import_image(tag, rootfs, labels).await)
    }

    async fn tag_image(&self, image: &str, new_name: &str) -> Result<(), EngineError> {
        each!(self, e => e.tag_image(image, new_name).await)
    }

    async fn pull_image(&self, image: &str) -> Result<(), EngineError> {
        each!(self, e => e.pull_image(image).await)
    }

    async fn remove_image(&self, image: &str) -> Result<(), EngineError> {
        each!(self, e => e.remove_image(image).await)
    }

    async fn create_hold(
        &self,
        image: &str,
        labels: BTreeMap<String, String>,
    ) -> Result<String, EngineError> {
        each!(self, e => e.create_hold(image, labels).await)
    }

    fn exported(&self) -> Vec<(String, Duration)> {
        each!(self, e => e.exported())
    }

    fn prepares_ahead(&self) -> bool {
        each!(self, e => e.prepares_ahead())
    }

    async fn run_job(&self, job: JobSpec) -> Result<JobOutput, EngineError> {
        each!(self, e => e.run_job(job).await)
    }

    async fn list_containers(
        &self,
        labels: BTreeMap<String, String>,
    ) -> Result<Vec<Resource>, EngineError> {
        each!(self, e => e.list_containers(labels).await)
    }

    async fn remove_container(&self, id: &str) -> Result<(), EngineError> {
        each!(self, e => e.remove_container(id).await)
    }

    async fn list_images(
        &self,
        labels: BTreeMap<String, String>,
    ) -> Result<Vec<Resource>, EngineError> {
        each!(self, e => e.list_images(labels).await)
    }

    async fn finish_run(&self) -> Vec<String> {
        each!(self, e => e.finish_run().await)
    }

    async fn image_details(&self, image: &str) -> Result<Option<ImageDetails>, EngineError> {
        each!(self, e => e.image_details(image).await)
    }

    fn save_images(&self, names: &[String]) -> ByteStream<EngineError> {
        each!(self, e => e.save_images(names))
    }

    async fn load_images(
        &self,
        archive: ByteStream<std::io::Error>,
    ) -> Result<Vec<String>, EngineError> {
        each!(self, e => e.load_images(archive).await)
    }

    async fn commit_build(&self, build: CommitBuild) -> Result<String, EngineError> {
        each!(self, e => e.commit_build(build).await)
    }

    async fn remove_volume(&self, name: &str) -> Result<(), EngineError> {
        each!(self, e => e.remove_volume(name).await)
    }

    async fn list_volumes(
        &self,
        labels: BTreeMap<String, String>,
    ) -> Result<Vec<Resource>, EngineError> {
        each!(self, e => e.list_volumes(labels).await)
    }

    async fn push_image(&self, image: &str) -> Result<(), EngineError> {
        each!(self, e => e.push_image(image).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registry_is_for_swarm_only() {
        let docker = EngineChoice {
            kind: EngineKind::Docker,
            registry: Some("127.0.0.1:5000".into()),
            ..Default::default()
        };
        assert!(matches!(
            docker.check(),
            Err(ChoiceError::RegistryWithoutSwarm)
        ));
        let swarm = EngineChoice {
            kind: EngineKind::Swarm,
            ..docker
        };
        assert!(swarm.check().is_ok());
        let podman = EngineChoice {
            kind: EngineKind::Podman,
            registry: Some("127.0.0.1:5000".into()),
            ..Default::default()
        };
        assert!(
            podman.check().is_err(),
            "one Podman service needs no registry"
        );
        assert!(EngineChoice::default().check().is_ok());
        assert_eq!(EngineChoice::default().kind.as_str(), "docker");
    }

    #[test]
    fn a_cpu_weight_is_for_docker_only_and_in_range() {
        let weighed = |kind, w| EngineChoice {
            kind,
            cpu_weight: Some(w),
            ..Default::default()
        };
        assert!(weighed(EngineKind::Docker, 1).check().is_ok());
        assert!(weighed(EngineKind::Docker, 10_000).check().is_ok());
        for kind in [EngineKind::Swarm, EngineKind::Podman] {
            assert!(matches!(
                weighed(kind, 10).check(),
                Err(ChoiceError::CpuWeightNotDocker)
            ));
        }
        for w in [0, 10_001] {
            let e = weighed(EngineKind::Docker, w).check().unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("--cpu-weight is 1 to 10000, not {w}")
            );
        }
    }
}
