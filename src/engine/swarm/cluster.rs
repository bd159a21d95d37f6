//! The connection to a Swarm manager: the engine's settings and state, and the node list.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bollard::models::{LocalNodeState, NodeSpecAvailabilityEnum, NodeState};
use bollard::Docker;

use super::place;
use crate::engine::{DockerEngine, EngineError};

/// How long the node list is reused before it is asked again.
const NODE_CACHE: Duration = Duration::from_secs(2);

/// Settings of the Swarm engine.
#[derive(Debug, Clone, PartialEq)]
pub struct SwarmOptions {
    /// `HOST:PORT` of a registry every node can pull from; the run pushes its images there.
    pub registry: Option<String>,
    /// A task that has not started this long after its service was created (no node can take
    /// it, its image does not come) is an infrastructure error.
    pub start_timeout: Duration,
    /// The network a job with network access is attached to.
    pub network: String,
}

impl Default for SwarmOptions {
    fn default() -> Self {
        SwarmOptions {
            registry: None,
            start_timeout: Duration::from_secs(1200),
            network: "bridge".into(),
        }
    }
}

/// A node as the engine sees it.
#[derive(Debug, Clone)]
pub(super) struct NodeView {
    pub(super) id: String,
    pub(super) hostname: String,
    /// Up and available for new jobs.
    pub(super) ready: bool,
    /// Up (its agent reachable), whatever its availability.
    pub(super) up: bool,
    /// Its CPUs, as its description gives them (0 when it does not).
    pub(super) cpus: usize,
}

/// A connected Swarm manager.
pub struct SwarmEngine {
    pub(super) local: DockerEngine,
    pub(super) opts: SwarmOptions,
    /// Image -> the reference jobs use (pushed to the registry once).
    pub(super) published: tokio::sync::Mutex<HashMap<String, Arc<tokio::sync::OnceCell<String>>>>,
    /// Registry names this engine left on the manager's daemon.
    pub(super) registry_names: Mutex<Vec<String>>,
    /// Images pushed to the registry, and how long each push took.
    pub(super) pushed: Mutex<Vec<(String, std::time::Duration)>>,
    pub(super) place: Mutex<place::Placement>,
    pub(super) nodes: tokio::sync::Mutex<Option<(Instant, Vec<NodeView>)>>,
    /// The id of the [`super::network::NO_NETWORK`] network.
    pub(super) no_network: String,
    /// Services kept because their task is on a node that is down (name -> node); see
    /// [`strand`].
    pub(super) kept: Mutex<std::collections::BTreeMap<String, String>>,
}

impl std::fmt::Debug for SwarmEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwarmEngine")
            .field("endpoint", &self.local.endpoint())
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

/// Refuses a daemon that is not an active Swarm manager: it answered, so the error says what
/// it is (inactive, a worker, pending) and how to make it one, not how to start a daemon.
fn require_manager(endpoint: &str, swarm: &bollard::models::SwarmInfo) -> Result<(), EngineError> {
    let active = swarm.local_node_state == Some(LocalNodeState::ACTIVE);
    if active && swarm.control_available == Some(true) {
        return Ok(());
    }
    let state = match swarm.local_node_state {
        Some(LocalNodeState::ACTIVE) => "active, a worker".to_string(),
        Some(s) => s.to_string(),
        None => "unknown".to_string(),
    };
    Err(EngineError::NotSwarmManager {
        endpoint: endpoint.into(),
        state,
    })
}

impl SwarmEngine {
    /// Connects to `DOCKER_HOST` (or the local socket), which must be a Swarm manager.
    pub async fn connect(opts: SwarmOptions) -> Result<Self, EngineError> {
        let local = DockerEngine::connect().await?;
        let info = local
            .client()
            .info()
            .await
            .map_err(|e| EngineError::Connect {
                endpoint: local.endpoint().into(),
                message: e.to_string(),
            })?;
        require_manager(local.endpoint(), &info.swarm.unwrap_or_default())?;
        let no_network = super::network::isolated_network(local.client()).await?;
        Ok(SwarmEngine {
            local,
            opts,
            published: Default::default(),
            registry_names: Default::default(),
            pushed: Default::default(),
            place: Default::default(),
            nodes: Default::default(),
            no_network,
            kept: Default::default(),
        })
    }

    pub(super) fn docker(&self) -> &Docker {
        self.local.client()
    }

    pub(super) fn place(&self) -> std::sync::MutexGuard<'_, place::Placement> {
        self.place.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) async fn nodes(&self) -> Result<Vec<NodeView>, EngineError> {
        let mut cache = self.nodes.lock().await;
        if let Some((at, nodes)) = &*cache {
            if at.elapsed() < NODE_CACHE {
                return Ok(nodes.clone());
            }
        }
        let list = self
            .docker()
            .list_nodes(None::<bollard::query_parameters::ListNodesOptions>)
            .await
            .map_err(|e| EngineError::List {
                what: "swarm nodes".into(),
                message: e.to_string(),
            })?;
        let nodes: Vec<NodeView> = list
            .into_iter()
            .map(|n| {
                let up = is_up(n.status.and_then(|s| s.state));
                let cpus = n
                    .description
                    .as_ref()
                    .and_then(|d| d.resources.as_ref())
                    .and_then(|r| r.nano_cpus)
                    .map_or(0, |c| usize::try_from(c / 1_000_000_000).unwrap_or(0));
                NodeView {
                    id: n.id.unwrap_or_default(),
                    hostname: n.description.and_then(|d| d.hostname).unwrap_or_default(),
                    cpus,
                    ready: up
                        && n.spec.and_then(|s| s.availability)
                            == Some(NodeSpecAvailabilityEnum::ACTIVE),
                    up,
                }
            })
            .collect();
        *cache = Some((Instant::now(), nodes.clone()));
        Ok(nodes)
    }
}

/// Whether a node's own state (not its availability) is up.
pub(super) fn is_up(state: Option<NodeState>) -> bool {
    state == Some(NodeState::READY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_daemon_that_is_not_a_manager_is_told_apart_from_one_that_is_down() {
        use bollard::models::SwarmInfo;
        let info = |state, control| SwarmInfo {
            local_node_state: state,
            control_available: control,
            ..Default::default()
        };
        assert!(
            require_manager("unix:///x", &info(Some(LocalNodeState::ACTIVE), Some(true))).is_ok()
        );
        for (swarm, says) in [
            (
                info(Some(LocalNodeState::INACTIVE), Some(false)),
                "(its swarm state: inactive)",
            ),
            (
                info(Some(LocalNodeState::ACTIVE), Some(false)),
                "(its swarm state: active, a worker)",
            ),
            (
                info(Some(LocalNodeState::PENDING), None),
                "(its swarm state: pending)",
            ),
            (info(None, None), "(its swarm state: unknown)"),
        ] {
            let e = require_manager("unix:///x", &swarm).unwrap_err();
            let text = e.to_string();
            assert!(text.contains(says), "{text}");
            assert!(text.contains("docker swarm init"), "{text}");
            assert!(!text.contains("cannot reach"), "{text}");
            assert!(!e.is_transient(), "{text}");
            assert_eq!(
                swe_eval_core::failure::Classify::kind(&e),
                swe_eval_core::failure::ErrorKind::Usage,
                "{text}"
            );
        }
    }

    #[test]
    fn node_state_up_is_ready_only() {
        assert!(is_up(Some(NodeState::READY)));
        for s in [NodeState::DOWN, NodeState::UNKNOWN, NodeState::DISCONNECTED] {
            assert!(!is_up(Some(s)));
        }
        assert!(!is_up(None));
    }
}
