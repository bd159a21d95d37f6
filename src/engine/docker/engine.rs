//! [`DockerEngine`]: what it holds (the client, the endpoint, what it knows of a Podman
//! service, the cgroup its containers go under), and its [`Engine`] implementation, written
//! from the one list of the trait's methods (`engine_methods!`): each method is the engine's
//! own method of the same name, in the file of its concern.

use std::sync::Arc;

use bollard::Docker;

use super::podman_side::PodmanSide;
use crate::engine::forward::engine_methods;
use crate::engine::podman::{self, LimitSupport, PodmanHost};
use crate::engine::{Engine, JobSpec};

/// A connected Docker daemon, or a Podman service behind its Docker-compatible API.
#[derive(Debug, Clone)]
pub struct DockerEngine {
    pub(super) docker: Docker,
    pub(super) endpoint: String,
    /// Set when the daemon is Podman: what differs (see `podman.rs`).
    pub(super) podman: Option<Arc<PodmanSide>>,
    /// The cgroup every container goes under (`HostConfig.CgroupParent`), when the containers
    /// were given a CPU weight ([`DockerEngine::weigh_containers`]); `None`: the daemon's own.
    pub(super) cgroup_parent: Option<String>,
    /// Jobs whose container runs (from its start until its main process ends).
    pub(super) running: crate::engine::RunningCount,
}

impl DockerEngine {
    /// What the Podman service behind this engine says about itself (`None` on Docker, or when
    /// its own API could not be read).
    pub fn podman(&self) -> Option<&PodmanHost> {
        self.podman.as_ref().and_then(|p| p.host.as_ref())
    }

    /// Whether the daemon is Podman.
    pub fn is_podman(&self) -> bool {
        self.podman.is_some()
    }

    /// The address this engine talks to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The client, for the Swarm engine that drives the same daemon as its manager.
    pub(in crate::engine) fn client(&self) -> &Docker {
        &self.docker
    }

    /// The limits this daemon applies: all on Docker and rootful Podman.
    pub(super) fn limit_support(&self) -> LimitSupport {
        self.podman()
            .map_or(LimitSupport::ALL, PodmanHost::limit_support)
    }

    /// An image name as the caller knows it (Docker's familiar form).
    pub(super) fn read_name(&self, name: String) -> String {
        match self.podman {
            Some(_) => podman::familiar_name(&name).to_string(),
            None => name,
        }
    }

    /// Whether `job`'s container is created with the daemon's network set-up off
    /// (`network_disabled`): a job without network on Docker (Podman runs no such hook). A
    /// build's container too: `docker commit` leaves `/etc/hosts` out of the image, so the file
    /// the engine brings never lands in one.
    pub(super) fn no_network_hook(&self, job: &JobSpec) -> bool {
        !job.network && self.podman.is_none()
    }

    /// A daemon exports nothing for its jobs (they run where its images are).
    pub(super) fn exported(&self) -> Vec<(String, std::time::Duration)> {
        Vec::new()
    }

    /// A daemon adds nothing for a run's jobs that would be undone at its end.
    pub(super) async fn finish_run(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The methods of `Engine` for [`DockerEngine`]: each is the inherent method of the same name
/// (path resolution takes an inherent method before the trait's; a method missing from the
/// files would be this one calling itself, which the lint below refuses).
macro_rules! own_methods {
    () => {};
    (async fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty; $($rest:tt)*) => {
        fn $name(&self $(, $arg: $ty)*) -> impl ::std::future::Future<Output = $ret> + Send {
            DockerEngine::$name(self $(, $arg)*)
        }
        own_methods!($($rest)*);
    };
    (fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty; $($rest:tt)*) => {
        fn $name(&self $(, $arg: $ty)*) -> $ret {
            DockerEngine::$name(self $(, $arg)*)
        }
        own_methods!($($rest)*);
    };
}

#[deny(unconditional_recursion)]
impl Engine for DockerEngine {
    engine_methods!(own_methods);
}
