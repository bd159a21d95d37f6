//! The Docker Swarm implementation of `Engine`: the same jobs, spread over a cluster by Swarm.
//!
//! The engine talks to one manager (`DOCKER_HOST` or the local socket). Images are built,
//! held and removed on the manager's own daemon, exactly as with [`DockerEngine`] (it is the
//! inner engine); only jobs differ. Each job is a one-shot service: one replica, restart
//! policy `none` (not mode `replicated-job`: Docker 20.10 leaves a job's task containers on
//! the nodes after its service is removed, where only each node's own daemon could remove
//! them; ARCHITECTURE.md has the measurement), the run's labels, the job's CPU, memory and pids limits,
//! no network unless the job has one (the internal network [`NO_NETWORK`]: a task given no
//! network would join its node's default bridge), and
//! `SIGKILL` as its stop signal. Its lifetime:
//!
//! 1. **Image.** With a registry (`--registry HOST:PORT`), the image is tagged into it and
//!    pushed once per run (the first job of an image does it; the others wait), and the job
//!    names it by digest, so a node that has it does not ask the registry again. The names this
//!    leaves on the manager are removed by [`Engine::finish_run`]. Without a registry, every
//!    node must already have the image (or pull it by name).
//! 2. **Inputs.** Files reach the task inline in its command or through Swarm configs (see
//!    [`inputs`]); a fixed bootstrap writes them, then `exec`s the job.
//! 3. **Placement.** A job is pinned to a node that already ran its image when that node is
//!    not much busier than the others (see [`place`]); otherwise Swarm chooses.
//! 4. **Running.** The task is polled: its start (time from submit to start is the job's
//!    setup), its end and exit code. Output is followed while it runs and completed after (see
//!    [`logs`]), bounded as for a plain container. The deadline counts from the task's start;
//!    when it passes, the service is removed, which kills the task.
//! 5. **Faults.** A task whose node is down or gone, that Swarm shut down, rejected or never
//!    started within the start timeout, is an engine error: transient, so the runner retries it
//!    as a new service, and Swarm places it on a node that is up. A rejected task whose image
//!    is missing is not retried.
//! 6. **Cleanup.** The service, then its configs, are removed whatever happened, except when
//!    its task is on a node that is down: then both are kept until the node is back (removed
//!    now, Swarm would leave the task's container on that node for good; see [`strand`]), and
//!    the run reports them. Services and
//!    configs carry the run's labels: [`Engine::list_containers`] lists them with the
//!    containers (ids prefixed `service:` and `config:`), so the runner's reaps (a dead
//!    owner's at start, its own at the end) cover them.

pub mod inputs;
pub mod logs;
pub mod place;
mod strand;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bollard::models::{
    ConfigSpec, LocalNodeState, NetworkAttachmentConfig, NodeSpecAvailabilityEnum, ServiceSpec,
    ServiceSpecMode, ServiceSpecModeReplicated, Task, TaskSpec, TaskSpecContainerSpec,
    TaskSpecContainerSpecConfigs, TaskSpecContainerSpecFile1, TaskSpecLogDriver, TaskSpecPlacement,
    TaskSpecResources, TaskSpecRestartPolicy, TaskSpecRestartPolicyConditionEnum, TaskState,
};
use bollard::query_parameters::{
    ListConfigsOptionsBuilder, ListServicesOptionsBuilder, LogsOptionsBuilder,
    PushImageOptionsBuilder,
};
use bollard::Docker;
use futures_util::StreamExt;

use super::docker::{label_filters, split_tag, status_of};
use super::{
    BuildSettings, DockerEngine, Engine, EngineError, EngineInfo, JobOutput, JobSpec, Resource,
    TarSource,
};

/// Id prefixes of the Swarm objects [`Engine::list_containers`] returns beside containers.
pub const SERVICE_PREFIX: &str = "service:";
/// See [`SERVICE_PREFIX`]: the prefix of configs.
pub const CONFIG_PREFIX: &str = "config:";

/// The network of jobs without network access: an internal overlay (no gateway, no route
/// out). Swarm has no `none` network for services, and a task attached to no network joins the
/// node's default bridge, with a route out.
pub const NO_NETWORK: &str = "swe-eval-none";
/// What a job without network access gets as `/etc/resolv.conf`: a name server that is not
/// there, so lookups fail at once as under `--network none` (Swarm's embedded DNS on the
/// internal network takes 20 s to fail each lookup).
pub const NO_DNS: &[u8] = b"nameserver 127.0.0.1\n";

/// How long the node list is reused before it is asked again.
const NODE_CACHE: Duration = Duration::from_secs(2);
/// Task polling: fast until the task starts (short jobs end within a second or two), then
/// slower.
const POLL_STARTING: Duration = Duration::from_millis(100);
const POLL_RUNNING: Duration = Duration::from_millis(400);
/// Bound on the read that completes a task's output (a node that vanished never answers).
const LOG_READ_TIMEOUT: Duration = Duration::from_secs(60);

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

#[derive(Debug, Clone)]
struct NodeView {
    id: String,
    hostname: String,
    /// Up and available for new jobs.
    ready: bool,
    /// Up (its agent reachable), whatever its availability.
    up: bool,
}

/// A connected Swarm manager.
pub struct SwarmEngine {
    local: DockerEngine,
    opts: SwarmOptions,
    /// Image -> the reference jobs use (pushed to the registry once).
    published: tokio::sync::Mutex<HashMap<String, Arc<tokio::sync::OnceCell<String>>>>,
    /// Registry names this engine left on the manager's daemon.
    registry_names: Mutex<Vec<String>>,
    place: Mutex<place::Placement>,
    nodes: tokio::sync::Mutex<Option<(Instant, Vec<NodeView>)>>,
    /// The id of the [`NO_NETWORK`] network.
    no_network: String,
    /// Services kept because their task is on a node that is down (name -> node); see
    /// [`strand`].
    kept: Mutex<std::collections::BTreeMap<String, String>>,
}

impl std::fmt::Debug for SwarmEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwarmEngine")
            .field("endpoint", &self.local.endpoint())
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

/// A service name from a job's container name: Swarm wants at most 63 characters of
/// `[a-zA-Z0-9-]`; a longer one keeps its start and a hash of the whole.
pub fn service_name(job_name: &str) -> String {
    let clean: String = job_name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    if clean.len() <= 63 {
        return clean;
    }
    use sha2::Digest;
    let h = hex::encode(sha2::Sha256::digest(job_name.as_bytes()));
    format!("{}-{}", &clean[..46], &h[..16])
}

/// The name `image` gets in `registry`: its own registry host (if any) replaced.
pub fn registry_name(registry: &str, image: &str) -> String {
    let rest = match image.split_once('/') {
        Some((first, rest))
            if first.contains('.') || first.contains(':') || first == "localhost" =>
        {
            rest
        }
        _ => image,
    };
    format!("{}/{rest}", registry.trim_end_matches('/'))
}

/// A spec's name and labels.
type Named = (Option<String>, Option<HashMap<String, String>>);

/// A service or config as a [`Resource`], its id prefixed with its kind.
fn resource(prefix: &str, id: Option<String>, spec: Option<Named>) -> Resource {
    let (name, labels) = spec.unwrap_or_default();
    Resource {
        id: format!("{prefix}{}", id.unwrap_or_default()),
        name: name.unwrap_or_default(),
        labels: labels.unwrap_or_default().into_iter().collect(),
    }
}

/// What a task's state means for the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskPhase {
    /// Not started yet (scheduling, pulling, starting).
    Waiting,
    /// Its container is running.
    Running,
    /// Ended by itself, with this exit code.
    Exited(i64),
    /// Refused by its node; the message.
    Rejected(String),
    /// Ended by Swarm (shut down, orphaned by a node that went away, removed).
    Lost(String),
}

/// The phase of `task`, from its state (and its error or message when it failed).
pub fn phase(task: &Task) -> TaskPhase {
    let status = task.status.clone().unwrap_or_default();
    let why = || {
        let state = status.state.map(|s| s.to_string()).unwrap_or_default();
        let err = status.err.clone().unwrap_or_default();
        let msg = status.message.clone().unwrap_or_default();
        format!("task {state}: {}", if err.is_empty() { msg } else { err })
    };
    match status.state {
        Some(TaskState::RUNNING) => TaskPhase::Running,
        Some(TaskState::COMPLETE) => TaskPhase::Exited(0),
        Some(TaskState::FAILED) => match status.container_status.and_then(|c| c.exit_code) {
            // A task that failed before its container ran has no exit code: not the job's.
            Some(code) if code != 0 => TaskPhase::Exited(code),
            _ => TaskPhase::Lost(why()),
        },
        Some(TaskState::REJECTED) => TaskPhase::Rejected(why()),
        Some(TaskState::SHUTDOWN | TaskState::REMOVE | TaskState::ORPHANED) => {
            TaskPhase::Lost(why())
        }
        _ => TaskPhase::Waiting,
    }
}

/// The service a job becomes.
pub fn service_spec(
    job: &JobSpec,
    name: &str,
    image: &str,
    command: Vec<String>,
    configs: Vec<TaskSpecContainerSpecConfigs>,
    pin: Option<&str>,
    network: &str,
) -> ServiceSpec {
    let labels: HashMap<String, String> = job.labels.clone().into_iter().collect();
    // The node keeps at most twice the job's output bound on disk (in two files).
    let log_file = (job.max_output_bytes.max(1 << 20)).to_string();
    ServiceSpec {
        name: Some(name.to_string()),
        labels: Some(labels),
        // One replica that is never restarted. Not `replicated-job`: Docker 20.10 leaves the
        // containers of a job's tasks on their nodes after the service is removed, while a
        // replicated service's go with it.
        mode: Some(ServiceSpecMode {
            replicated: Some(ServiceSpecModeReplicated { replicas: Some(1) }),
            ..Default::default()
        }),
        task_template: Some(TaskSpec {
            container_spec: Some(TaskSpecContainerSpec {
                image: Some(image.to_string()),
                command: Some(command),
                env: Some(job.env.clone()),
                dir: job.working_dir.clone(),
                configs: (!configs.is_empty()).then_some(configs),
                stop_signal: Some("SIGKILL".into()),
                stop_grace_period: Some(0),
                ..Default::default()
            }),
            resources: Some(TaskSpecResources {
                limits: Some(bollard::models::Limit {
                    nano_cpus: job.limits.cpus.map(|c| (c * 1e9) as i64),
                    memory_bytes: job.limits.memory_bytes,
                    pids: job.limits.pids,
                }),
                ..Default::default()
            }),
            restart_policy: Some(TaskSpecRestartPolicy {
                condition: Some(TaskSpecRestartPolicyConditionEnum::NONE),
                max_attempts: Some(0),
                ..Default::default()
            }),
            placement: pin.map(|node| TaskSpecPlacement {
                constraints: Some(vec![format!("node.id=={node}")]),
                ..Default::default()
            }),
            networks: Some(vec![NetworkAttachmentConfig {
                target: Some(network.to_string()),
                ..Default::default()
            }]),
            log_driver: Some(TaskSpecLogDriver {
                name: Some("json-file".into()),
                options: Some(HashMap::from([
                    ("max-size".to_string(), log_file),
                    ("max-file".to_string(), "2".to_string()),
                ])),
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The id of the [`NO_NETWORK`] network, created if the swarm has none. It stays (one object,
/// shared by every run; leaving the swarm removes it). Two runs that create it at once make
/// two networks of that name: both then use the oldest.
async fn isolated_network(docker: &Docker) -> Result<String, EngineError> {
    let err = |message: String| EngineError::Connect {
        endpoint: format!("swarm network {NO_NETWORK}"),
        message,
    };
    let find = || async {
        let filters = HashMap::from([("name".to_string(), vec![NO_NETWORK.to_string()])]);
        let list = docker
            .list_networks(Some(bollard::query_parameters::ListNetworksOptions {
                filters: Some(filters),
            }))
            .await
            .map_err(|e| err(e.to_string()))?;
        let mut ours: Vec<_> = list
            .into_iter()
            .filter(|n| {
                n.name.as_deref() == Some(NO_NETWORK) && n.scope.as_deref() == Some("swarm")
            })
            .filter_map(|n| Some((n.created.map(|c| c.to_string()).unwrap_or_default(), n.id?)))
            .collect();
        ours.sort();
        Ok::<_, EngineError>(ours.into_iter().next().map(|(_, id)| id))
    };
    if let Some(id) = find().await? {
        return Ok(id);
    }
    docker
        .create_network(bollard::models::NetworkCreateRequest {
            name: NO_NETWORK.into(),
            driver: Some("overlay".into()),
            internal: Some(true),
            labels: Some(HashMap::from([(
                "swe-eval.network".to_string(),
                "none".to_string(),
            )])),
            ..Default::default()
        })
        .await
        .map_err(|e| err(e.to_string()))?;
    find()
        .await?
        .ok_or_else(|| err("created, then not found".into()))
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
        let swarm = info.swarm.unwrap_or_default();
        let active = swarm.local_node_state == Some(LocalNodeState::ACTIVE);
        if !active || swarm.control_available != Some(true) {
            return Err(EngineError::Connect {
                endpoint: local.endpoint().into(),
                message: format!(
                    "this daemon is not a Swarm manager (swarm state: {}): run `docker swarm init` on it, or point DOCKER_HOST at a manager",
                    swarm
                        .local_node_state
                        .map_or("unknown".to_string(), |s| s.to_string())
                ),
            });
        }
        let no_network = isolated_network(local.client()).await?;
        Ok(SwarmEngine {
            local,
            opts,
            published: Default::default(),
            registry_names: Default::default(),
            place: Default::default(),
            nodes: Default::default(),
            no_network,
            kept: Default::default(),
        })
    }

    fn docker(&self) -> &Docker {
        self.local.client()
    }

    fn place(&self) -> std::sync::MutexGuard<'_, place::Placement> {
        self.place.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn nodes(&self) -> Result<Vec<NodeView>, EngineError> {
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
                let up = strand::is_up(n.status.and_then(|s| s.state));
                NodeView {
                    id: n.id.unwrap_or_default(),
                    hostname: n.description.and_then(|d| d.hostname).unwrap_or_default(),
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

    /// The reference jobs of `image` use: pushed to the registry (once), by digest.
    async fn publish(&self, image: &str) -> Result<String, EngineError> {
        let Some(registry) = &self.opts.registry else {
            return Ok(image.to_string());
        };
        let cell = self
            .published
            .lock()
            .await
            .entry(image.to_string())
            .or_default()
            .clone();
        cell.get_or_try_init(|| self.push(registry, image))
            .await
            .cloned()
    }

    async fn push(&self, registry: &str, image: &str) -> Result<String, EngineError> {
        let target = registry_name(registry, image);
        let push_err = |message: String| EngineError::Push {
            image: target.clone(),
            message,
        };
        self.local.tag_image(image, &target).await?;
        self.registry_names
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(target.clone());
        let (repo, tag) = split_tag(&target);
        let opts = PushImageOptionsBuilder::default().tag(tag).build();
        let mut stream = self.docker().push_image(repo, Some(opts), None);
        while let Some(item) = stream.next().await {
            item.map_err(|e| push_err(e.to_string()))?;
        }
        let inspected = self
            .docker()
            .inspect_image(&target)
            .await
            .map_err(|e| push_err(format!("inspect after push: {e}")))?;
        let digest = inspected
            .repo_digests
            .unwrap_or_default()
            .into_iter()
            .find(|d| d.starts_with(&format!("{repo}@")));
        Ok(match digest {
            Some(d) => {
                self.registry_names
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(d.clone());
                d
            }
            None => target,
        })
    }

    /// The task of service `id` (the newest, should Swarm have made more than one).
    async fn task_of(&self, id: &str) -> Result<Option<Task>, EngineError> {
        let tasks = self.tasks_of(id).await?;
        Ok(tasks
            .into_iter()
            .max_by_key(|t| t.version.as_ref().and_then(|v| v.index).unwrap_or(0)))
    }

    async fn create_configs(
        &self,
        plan: &inputs::Inputs,
        job: &JobSpec,
        created: &mut Vec<String>,
    ) -> Result<Vec<TaskSpecContainerSpecConfigs>, EngineError> {
        let mut refs = Vec::new();
        for c in &plan.configs {
            let spec = ConfigSpec {
                name: Some(c.name.clone()),
                labels: Some(job.labels.clone().into_iter().collect()),
                data: Some(inputs::base64(&c.data)),
                ..Default::default()
            };
            let create = || self.docker().create_config(spec.clone());
            let made = match create().await {
                // Left by an interrupted attempt of the same job.
                Err(e) if status_of(&e) == Some(409) => {
                    self.remove_config(&c.name).await?;
                    create().await
                }
                r => r,
            };
            let id = made
                .map_err(|e| EngineError::Copy {
                    name: job.name.clone(),
                    message: format!("config {}: {e}", c.name),
                })?
                .id;
            created.push(id.clone());
            refs.push(TaskSpecContainerSpecConfigs {
                file: Some(TaskSpecContainerSpecFile1 {
                    name: Some(c.target.clone()),
                    uid: Some("0".into()),
                    gid: Some("0".into()),
                    mode: Some(0o444),
                }),
                config_id: Some(id),
                config_name: Some(c.name.clone()),
                ..Default::default()
            });
        }
        Ok(refs)
    }

    async fn remove_config(&self, id: &str) -> Result<(), EngineError> {
        match self.docker().delete_config(id).await {
            Ok(()) => Ok(()),
            Err(e) if status_of(&e) == Some(404) => Ok(()),
            Err(e) => Err(EngineError::Remove {
                name: format!("config {id}"),
                message: e.to_string(),
            }),
        }
    }

    async fn create_service(
        &self,
        spec: ServiceSpec,
        job: &JobSpec,
    ) -> Result<String, EngineError> {
        let name = spec.name.clone().unwrap_or_default();
        let create = || self.docker().create_service(spec.clone(), None);
        let made = match create().await {
            Err(e) if status_of(&e) == Some(409) => {
                self.remove_service(&name).await?;
                create().await
            }
            r => r,
        };
        made.map(|r| r.id.unwrap_or(name))
            .map_err(|e| EngineError::Create {
                name: job.name.clone(),
                message: e.to_string(),
            })
    }

    /// Reads the output the followed stream has not given yet (non-following, from its last
    /// timestamp).
    async fn complete_output(&self, id: &str, reader: &mut logs::Reader) -> Result<(), String> {
        let opts = LogsOptionsBuilder::default()
            .follow(false)
            .stdout(true)
            .stderr(true)
            .timestamps(true)
            .since(reader.since())
            .build();
        let mut skip = reader.resume();
        let mut stream = self.docker().service_logs(id, Some(opts));
        let read = async {
            while let Some(item) = stream.next().await {
                let bytes = item.map_err(|e| e.to_string())?.into_bytes();
                if skip.is_new(&bytes) {
                    reader.push(&bytes);
                }
            }
            Ok(())
        };
        tokio::time::timeout(LOG_READ_TIMEOUT, read)
            .await
            .map_err(|_| format!("no end of the task's output within {LOG_READ_TIMEOUT:?}"))?
    }

    /// Everything between the service's creation and its removal.
    async fn drive(
        &self,
        id: &str,
        job: &JobSpec,
        image: &str,
        t0: Instant,
        out: &mut JobOutput,
        node_of_job: &mut Option<String>,
    ) -> Result<(), EngineError> {
        let name = job.name.as_str();
        let mut reader = logs::Reader::new(job.max_output_bytes);
        type LogStream<'a> = futures_util::stream::BoxStream<
            'a,
            Result<bollard::container::LogOutput, bollard::errors::Error>,
        >;
        let mut follow: Option<LogStream<'_>> = None;
        let mut started: Option<Instant> = None;
        let mut log_error: Option<String> = None;
        let exit: Option<i64> = loop {
            let now = Instant::now();
            let poll = if started.is_some() {
                POLL_RUNNING
            } else {
                POLL_STARTING
            };
            let wake = match started {
                Some(s) => (s + job.timeout).min(now + poll),
                None => now + poll,
            };
            let tick = tokio::time::sleep_until(wake.into());
            tokio::pin!(tick);
            let polled = loop {
                tokio::select! {
                    biased;
                    _ = &mut tick => break true,
                    chunk = async { follow.as_mut().unwrap().next().await }, if follow.is_some() => match chunk {
                        Some(Ok(o)) => reader.push(&o.into_bytes()),
                        Some(Err(e)) => { log_error = Some(e.to_string()); follow = None; }
                        None => follow = None,
                    },
                }
            };
            debug_assert!(polled);
            if let Some(s) = started {
                if s.elapsed() >= job.timeout {
                    out.timed_out = true;
                    break None;
                }
            }
            let Some(task) = self.task_of(id).await? else {
                if t0.elapsed() > self.opts.start_timeout {
                    return Err(EngineError::Start {
                        name: name.into(),
                        message: format!("no task within {:?}", self.opts.start_timeout),
                    });
                }
                continue;
            };
            let status = task.status.clone().unwrap_or_default();
            let last_status = format!(
                "{} {}",
                status.state.map(|s| s.to_string()).unwrap_or_default(),
                status.message.unwrap_or_default()
            );
            if node_of_job.is_none() {
                if let Some(node) = task.node_id.clone().filter(|n| !n.is_empty()) {
                    self.place().started(image, &node);
                    *node_of_job = Some(node);
                }
            }
            if let Some(node) = node_of_job.as_deref() {
                let nodes = self.nodes().await?;
                let view = nodes.iter().find(|n| n.id == node);
                if out.node.is_none() {
                    // Nodes may share a host name: the id tells them apart.
                    out.node = Some(match view {
                        Some(n) => format!("{} ({node})", n.hostname),
                        None => node.to_string(),
                    });
                }
                if !view.is_some_and(|n| n.ready) {
                    self.place().forget(node);
                    return Err(EngineError::Wait {
                        name: name.into(),
                        message: format!(
                            "node {} is down or gone",
                            view.map_or(node, |n| n.hostname.as_str())
                        ),
                    });
                }
            }
            let begin = |started: &mut Option<Instant>, out: &mut JobOutput| {
                if started.is_none() {
                    *started = Some(Instant::now());
                    out.setup = t0.elapsed();
                }
            };
            match phase(&task) {
                TaskPhase::Waiting => {
                    if t0.elapsed() > self.opts.start_timeout {
                        return Err(EngineError::Start {
                            name: name.into(),
                            message: format!(
                                "task not started within {:?} ({last_status})",
                                self.opts.start_timeout
                            ),
                        });
                    }
                }
                TaskPhase::Running => {
                    if started.is_none() {
                        begin(&mut started, out);
                        let opts = LogsOptionsBuilder::default()
                            .follow(true)
                            .stdout(true)
                            .stderr(true)
                            .timestamps(true)
                            .build();
                        follow = Some(self.docker().service_logs(id, Some(opts)).boxed());
                    }
                }
                TaskPhase::Exited(code) => {
                    begin(&mut started, out);
                    break Some(code);
                }
                TaskPhase::Rejected(why) => {
                    if why.contains("No such image") || why.contains("not found") {
                        return Err(EngineError::ImageMissing {
                            image: image.into(),
                        });
                    }
                    return Err(EngineError::Start {
                        name: name.into(),
                        message: why,
                    });
                }
                TaskPhase::Lost(why) => {
                    return Err(EngineError::Wait {
                        name: name.into(),
                        message: why,
                    })
                }
            }
        };
        drop(follow);
        out.run = started.map_or(Duration::ZERO, |s| s.elapsed());
        // The rest of the output (for a timed-out task: up to now, before it is killed).
        if let Err(e) = self.complete_output(id, &mut reader).await {
            log_error.get_or_insert(e);
        }
        out.exit_code = exit;
        let (output, dropped) = reader.buf.finish();
        out.output = output;
        out.truncated_bytes = dropped;
        if exit == Some(inputs::BOOTSTRAP_EXIT)
            && out.output.starts_with(inputs::BOOTSTRAP_FAILED.as_bytes())
        {
            return Err(EngineError::Copy {
                name: name.into(),
                message: String::from_utf8_lossy(&out.output).trim().to_string(),
            });
        }
        // Output cut off while the job ran normally: incomplete, an infrastructure failure.
        if let (Some(message), false) = (log_error, out.timed_out) {
            return Err(EngineError::Logs {
                name: name.into(),
                message,
            });
        }
        Ok(())
    }
}

impl SwarmEngine {
    /// The names in `registry` of this tool's images on the manager (tags and digests).
    async fn leftover_registry_names(&self, registry: &str) -> Vec<String> {
        let prefix = format!("{}/", registry.trim_end_matches('/'));
        let filters = label_filters(&BTreeMap::from([(
            super::LABEL_TOOL.to_string(),
            String::new(),
        )]));
        let opts = bollard::query_parameters::ListImagesOptionsBuilder::default()
            .filters(&filters)
            .build();
        let Ok(images) = self.docker().list_images(Some(opts)).await else {
            return Vec::new();
        };
        images
            .into_iter()
            .flat_map(|i| i.repo_tags.into_iter().chain(i.repo_digests))
            .filter(|n| n.starts_with(&prefix))
            .collect()
    }
}

impl Engine for SwarmEngine {
    async fn info(&self) -> Result<EngineInfo, EngineError> {
        self.local.info().await
    }

    async fn image_exists(&self, image: &str) -> Result<bool, EngineError> {
        self.local.image_exists(image).await
    }

    async fn build_image_with(
        &self,
        tag: &str,
        context_tar: impl Into<TarSource> + Send,
        labels: BTreeMap<String, String>,
        settings: BuildSettings,
    ) -> Result<String, EngineError> {
        self.local
            .build_image_with(tag, context_tar, labels, settings)
            .await
    }

    async fn import_image(
        &self,
        tag: &str,
        rootfs_tar: impl Into<TarSource> + Send,
        labels: BTreeMap<String, String>,
    ) -> Result<(), EngineError> {
        self.local.import_image(tag, rootfs_tar, labels).await
    }

    async fn tag_image(&self, image: &str, new_name: &str) -> Result<(), EngineError> {
        self.local.tag_image(image, new_name).await
    }

    async fn pull_image(&self, image: &str) -> Result<(), EngineError> {
        self.local.pull_image(image).await
    }

    async fn remove_image(&self, image: &str) -> Result<(), EngineError> {
        self.local.remove_image(image).await
    }

    async fn create_hold(
        &self,
        image: &str,
        labels: BTreeMap<String, String>,
    ) -> Result<String, EngineError> {
        self.local.create_hold(image, labels).await
    }

    async fn run_job(&self, job: JobSpec) -> Result<JobOutput, EngineError> {
        let t0 = Instant::now();
        let mut out = JobOutput::default();
        let image = self.publish(&job.image).await?;
        let name = service_name(&job.name);
        let plan = if job.network {
            inputs::plan(&job.files, &job.command, &name)
        } else {
            let mut files = job.files.clone();
            files.push(super::FileIn {
                path: "/etc/resolv.conf".into(),
                contents: NO_DNS.to_vec(),
                mode: 0o644,
            });
            inputs::plan(&files, &job.command, &name)
        };
        let mut configs = Vec::new();
        let mut node = None;
        let mut keep_configs = false;
        let mut removed = Ok(());
        let result = match self.create_configs(&plan, &job, &mut configs).await {
            Err(e) => Err(e),
            Ok(refs) => {
                let ready: Vec<String> = match self.nodes().await {
                    Ok(n) => n.into_iter().filter(|n| n.ready).map(|n| n.id).collect(),
                    Err(_) => Vec::new(),
                };
                let pin = self.place().choose(&image, &ready);
                let network = if job.network {
                    self.opts.network.as_str()
                } else {
                    self.no_network.as_str()
                };
                let spec = service_spec(
                    &job,
                    &name,
                    &image,
                    plan.command.clone(),
                    refs,
                    pin.as_deref(),
                    network,
                );
                match self.create_service(spec, &job).await {
                    Err(e) => Err(e),
                    Ok(id) => {
                        let driven = self.drive(&id, &job, &image, t0, &mut out, &mut node).await;
                        match self.remove_job_service(&id, &name).await {
                            // Its configs stay with it (a service in use holds them).
                            Ok(strand::Removal::Kept { .. }) => keep_configs = true,
                            Ok(strand::Removal::Removed) => {}
                            Err(e) => removed = Err(e),
                        }
                        driven.and(removed)
                    }
                }
            }
        };
        if let Some(n) = &node {
            self.place().ended(n);
        }
        let mut configs_removed = Ok(());
        if keep_configs {
            configs.clear();
        }
        for id in &configs {
            if let Err(e) = self.remove_config(id).await {
                configs_removed = Err(e);
            }
        }
        out.close_timing(t0);
        result?;
        configs_removed?;
        Ok(out)
    }

    async fn list_containers(
        &self,
        labels: BTreeMap<String, String>,
    ) -> Result<Vec<Resource>, EngineError> {
        let mut all = self.local.list_containers(labels.clone()).await?;
        let filters = label_filters(&labels);
        let list_err = |what: &str, e: bollard::errors::Error| EngineError::List {
            what: what.into(),
            message: e.to_string(),
        };
        let services = self
            .docker()
            .list_services(Some(
                ListServicesOptionsBuilder::default()
                    .filters(&filters)
                    .build(),
            ))
            .await
            .map_err(|e| list_err("services", e))?;
        // A service whose task is on a node that is down stays, with its configs, until the
        // node is back (see [`strand`]): it is not a leftover to remove yet. (The run that
        // kept it reported it.)
        let mut held_configs = std::collections::BTreeSet::new();
        for s in services {
            let id = s.id.clone().unwrap_or_default();
            if self.stranded_on(&id).await?.is_some() {
                held_configs.extend(
                    s.spec
                        .and_then(|x| x.task_template)
                        .and_then(|t| t.container_spec)
                        .and_then(|c| c.configs)
                        .unwrap_or_default()
                        .into_iter()
                        .filter_map(|c| c.config_id),
                );
                continue;
            }
            all.push(resource(
                SERVICE_PREFIX,
                s.id,
                s.spec.map(|x| (x.name, x.labels)),
            ));
        }
        // After the services: a config is removable once no service uses it.
        let configs = self
            .docker()
            .list_configs(Some(
                ListConfigsOptionsBuilder::default()
                    .filters(&filters)
                    .build(),
            ))
            .await
            .map_err(|e| list_err("configs", e))?;
        all.extend(
            configs
                .into_iter()
                .filter(|c| !c.id.as_ref().is_some_and(|id| held_configs.contains(id)))
                .map(|c| resource(CONFIG_PREFIX, c.id, c.spec.map(|x| (x.name, x.labels)))),
        );
        Ok(all)
    }

    async fn remove_container(&self, id: &str) -> Result<(), EngineError> {
        if let Some(s) = id.strip_prefix(SERVICE_PREFIX) {
            // Its node may have gone down since it was listed.
            if let Some(node) = self.stranded_on(s).await? {
                return Err(EngineError::Remove {
                    name: format!("service {s}"),
                    message: strand::kept_message(s, &node),
                });
            }
            self.remove_service(s).await
        } else if let Some(c) = id.strip_prefix(CONFIG_PREFIX) {
            self.remove_config(c).await
        } else {
            self.local.remove_container(id).await
        }
    }

    async fn list_images(
        &self,
        labels: BTreeMap<String, String>,
    ) -> Result<Vec<Resource>, EngineError> {
        self.local.list_images(labels).await
    }

    async fn finish_run(&self) -> Vec<String> {
        let names = std::mem::take(
            &mut *self
                .registry_names
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        );
        let mut problems = self.kept_problems();
        for n in names {
            if let Err(e) = self.local.remove_image(&n).await {
                problems.push(format!(
                    "registry name {n} not removed from the manager: {e}"
                ));
            }
        }
        // Registry names of this tool's images left by runs that were killed (their names
        // were never removed), and the digest names the manager's own tasks pulled. One in use
        // (a container, a live run's job) stays for a later run; a live run's push that loses
        // its name meanwhile fails and is retried.
        if let Some(registry) = &self.opts.registry {
            for n in self.leftover_registry_names(registry).await {
                match self.local.remove_image(&n).await {
                    Ok(()) | Err(EngineError::ImageInUse { .. }) => {}
                    Err(e) => problems.push(format!(
                        "registry name {n} not removed from the manager: {e}"
                    )),
                }
            }
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{FileIn, Limits};

    fn job() -> JobSpec {
        JobSpec {
            image: "img".into(),
            name: "swe-eval.run 1.3.0".into(),
            labels: BTreeMap::from([("swe-eval".into(), "1".into())]),
            files: vec![FileIn {
                path: "/swe-eval/job.sh".into(),
                contents: b"echo hi".to_vec(),
                mode: 0o755,
            }],
            command: vec!["/bin/bash".into(), "/swe-eval/job.sh".into()],
            env: vec!["A=1".into()],
            working_dir: Some("/testbed".into()),
            limits: Limits::default(),
            network: false,
            timeout: Duration::from_secs(60),
            max_output_bytes: 8 << 20,
        }
    }

    #[test]
    fn service_names_are_swarm_safe_and_unique_when_cut() {
        assert_eq!(service_name("swe-eval.mini.3.0"), "swe-eval-mini-3-0");
        let long_a = format!("swe-eval.{}.1.0", "r".repeat(80));
        let long_b = format!("swe-eval.{}.2.0", "r".repeat(80));
        let (a, b) = (service_name(&long_a), service_name(&long_b));
        assert_eq!(a.len(), 63);
        assert_ne!(a, b);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    }

    #[test]
    fn registry_names_replace_the_image_registry() {
        assert_eq!(
            registry_name("10.0.0.1:5000", "swe-eval/env:abc"),
            "10.0.0.1:5000/swe-eval/env:abc"
        );
        assert_eq!(registry_name("r:5000/", "ubuntu"), "r:5000/ubuntu");
        assert_eq!(registry_name("r:5000", "ghcr.io/x/y:1"), "r:5000/x/y:1");
        assert_eq!(registry_name("r:5000", "localhost:5000/x"), "r:5000/x");
        assert_eq!(
            registry_name("r:5000", "swebench/sweb.eval.x86_64.a_1776_b:latest"),
            "r:5000/swebench/sweb.eval.x86_64.a_1776_b:latest"
        );
    }

    #[test]
    fn a_job_is_a_one_shot_service_with_its_limits_and_no_network() {
        let j = job();
        let s = service_spec(
            &j,
            "svc",
            "reg/img@sha256:ab",
            vec!["c".into()],
            Vec::new(),
            None,
            "nonet-id",
        );
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["Mode"]["Replicated"]["Replicas"], 1);
        let t = &v["TaskTemplate"];
        assert_eq!(t["RestartPolicy"]["Condition"], "none");
        assert_eq!(t["Resources"]["Limits"]["NanoCPUs"], 1_000_000_000i64);
        assert_eq!(t["Resources"]["Limits"]["MemoryBytes"], 4i64 << 30);
        assert_eq!(t["Resources"]["Limits"]["Pids"], 1024);
        assert_eq!(t["Networks"][0]["Target"], "nonet-id", "{t}");
        assert!(t.get("Placement").is_none_or(|n| n.is_null()));
        assert_eq!(t["ContainerSpec"]["Image"], "reg/img@sha256:ab");
        assert_eq!(t["ContainerSpec"]["StopSignal"], "SIGKILL");
        assert_eq!(t["ContainerSpec"]["Dir"], "/testbed");
        assert_eq!(t["LogDriver"]["Name"], "json-file");
        assert_eq!(v["Labels"]["swe-eval"], "1");
        let s = service_spec(&j, "svc", "i", vec![], Vec::new(), Some("node1"), "bridge");
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            v["TaskTemplate"]["Placement"]["Constraints"][0],
            "node.id==node1"
        );
        assert_eq!(v["TaskTemplate"]["Networks"][0]["Target"], "bridge");
    }

    fn task(state: TaskState, exit: Option<i64>, err: &str) -> Task {
        Task {
            status: Some(bollard::models::TaskStatus {
                state: Some(state),
                err: Some(err.into()),
                container_status: Some(bollard::models::ContainerStatus {
                    exit_code: exit,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn task_states_map_to_job_phases() {
        use TaskState as S;
        for s in [S::NEW, S::PENDING, S::ASSIGNED, S::PREPARING, S::STARTING] {
            assert_eq!(phase(&task(s, None, "")), TaskPhase::Waiting, "{s}");
        }
        assert_eq!(phase(&task(S::RUNNING, None, "")), TaskPhase::Running);
        assert_eq!(phase(&task(S::COMPLETE, Some(0), "")), TaskPhase::Exited(0));
        assert_eq!(
            phase(&task(S::FAILED, Some(3), "non-zero exit (3)")),
            TaskPhase::Exited(3)
        );
        // Failed with no exit code: the container never ran the job.
        assert!(matches!(
            phase(&task(S::FAILED, None, "starting container failed")),
            TaskPhase::Lost(_)
        ));
        assert!(
            matches!(phase(&task(S::REJECTED, None, "No such image: x")), TaskPhase::Rejected(m) if m.contains("No such image"))
        );
        for s in [S::SHUTDOWN, S::ORPHANED, S::REMOVE] {
            assert!(
                matches!(phase(&task(s, None, "")), TaskPhase::Lost(_)),
                "{s}"
            );
        }
    }
}
