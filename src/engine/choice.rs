//! Which engine runs the jobs, chosen by the user ([`EngineChoice`]), and the one engine type
//! every workflow holds ([`AnyEngine`]): a single daemon or a Swarm cluster behind the same
//! [`Engine`] surface, connected by [`connect`]. The workflows are written once for
//! `AnyEngine` instead of once per engine; the fake engine of the tests stays a type of its own.

use super::api::Engine;
use super::docker::{CpuWeightError, Daemon, DockerEngine};
use super::error::EngineError;
use super::forward::engine_methods;
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
    /// The containers' CPU weight could not be set as asked.
    #[error("cannot give the containers a CPU weight: {0}")]
    CpuWeight(#[source] CpuWeightError),
}

impl swe_eval_core::failure::Classify for ConnectError {
    fn kind(&self) -> swe_eval_core::failure::ErrorKind {
        match self {
            ConnectError::Choice(e) => e.kind(),
            ConnectError::Engine(e) => e.kind(),
            ConnectError::CpuWeight(e) => e.kind(),
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

/// The methods of `Engine` for [`AnyEngine`]: each is that of the engine it holds.
macro_rules! dispatched {
    () => {};
    (async fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty; $($rest:tt)*) => {
        async fn $name(&self $(, $arg: $ty)*) -> $ret {
            match self {
                AnyEngine::Docker(e) => Engine::$name(e $(, $arg)*).await,
                AnyEngine::Swarm(e) => Engine::$name(&**e $(, $arg)*).await,
            }
        }
        dispatched!($($rest)*);
    };
    (fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty; $($rest:tt)*) => {
        fn $name(&self $(, $arg: $ty)*) -> $ret {
            match self {
                AnyEngine::Docker(e) => Engine::$name(e $(, $arg)*),
                AnyEngine::Swarm(e) => Engine::$name(&**e $(, $arg)*),
            }
        }
        dispatched!($($rest)*);
    };
}

impl Engine for AnyEngine {
    engine_methods!(dispatched);
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
