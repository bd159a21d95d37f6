//! The Docker implementation of `Engine`, and the only code in the crate that imports bollard.
//!
//! A job's container is attached before it starts (so no output is missed and nothing is
//! written to the daemon's log files: the log driver is `none`), its output read into a bounded
//! head/tail buffer while it runs, waited for under the job's deadline, killed with SIGKILL if
//! the deadline passes, inspected for its exit code and OOM kill, then force-removed. Nothing
//! waits for a stop timeout.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bollard::errors::Error as DockerError;
use bollard::models::{ContainerCreateBody, HostConfig, HostConfigLogConfig, ResourcesUlimits};
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, BuildImageOptionsBuilder, CreateContainerOptionsBuilder,
    CreateImageOptionsBuilder, KillContainerOptionsBuilder, ListContainersOptionsBuilder,
    ListImagesOptionsBuilder, RemoveContainerOptionsBuilder, RemoveImageOptionsBuilder,
    UploadToContainerOptionsBuilder, WaitContainerOptionsBuilder,
};
use bollard::Docker;
use futures_util::{FutureExt, StreamExt};

use super::bounded::{HeadTail, Watch};
use super::podman::{self, LimitSupport, PodmanHost};
use super::{
    tarball, BuildSettings, ByteStream, CommitBuild, Engine, EngineError, EngineInfo, FileIn,
    HistoryStep, ImageDetails, JobOutput, JobSpec, Resource, TarSource, LABEL_TOOL,
};

/// How long the output stream may take to close after the main process ended or was killed.
const DRAIN_GRACE: Duration = Duration::from_secs(5);

/// How long a container may take to stop after SIGKILL before the job is an engine failure.
const KILL_GRACE: Duration = Duration::from_secs(30);

/// A build in a container ([`Engine::commit_build`]) still running after this long is a
/// failure (an instance build takes minutes; hours mean something hangs).
const COMMIT_BUILD_TIMEOUT_SECS: u64 = 3 * 3600;

/// The most of a build command's output kept as its log (head and tail).
const COMMIT_BUILD_LOG_BYTES: usize = 16 << 20;

/// Client-side limit on waiting for a response's headers; long streams (builds, pulls, waits)
/// are not limited by it once their headers arrived.
const REQUEST_TIMEOUT_SECS: u64 = 600;

/// The `/etc/hosts` Docker writes into a container with `network_mode: none`: a job without
/// network brings it itself when the daemon is told to set up no network at all.
const NO_NETWORK_HOSTS: &str = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n\
fe00::0\tip6-localnet\nff00::0\tip6-mcastprefix\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n";

/// A connected Docker daemon, or a Podman service behind its Docker-compatible API.
#[derive(Debug, Clone)]
pub struct DockerEngine {
    docker: Docker,
    endpoint: String,
    /// Set when the daemon is Podman: what differs (see `podman.rs`).
    podman: Option<Arc<PodmanSide>>,
    /// The cgroup every container goes under (`HostConfig.CgroupParent`), when the containers
    /// were given a CPU weight ([`DockerEngine::weigh_containers`]); `None`: the daemon's own.
    cgroup_parent: Option<String>,
}

/// What the adapter knows of a Podman service it talks to.
#[derive(Debug)]
struct PodmanSide {
    /// What the service says about itself; `None` when its own API could not be read (then
    /// every limit is sent, and nothing is said about what it ignores).
    host: Option<PodmanHost>,
    /// Why `host` is unknown.
    unknown: Option<String>,
    /// The service's own open-files and processes limits, given to each job as Docker's
    /// containers inherit the daemon's (Podman would raise them to 1,048,576).
    ulimits: Option<Vec<ResourcesUlimits>>,
}

/// The daemon address a connection will use: `DOCKER_HOST`, or the local socket.
pub fn endpoint() -> String {
    std::env::var("DOCKER_HOST").unwrap_or_else(|_| "unix:///var/run/docker.sock".to_string())
}

/// When Docker does not answer but a Podman service does: how to use it instead.
fn podman_instead() -> String {
    let uid = podman::effective_uid();
    let xdg = std::env::var("XDG_RUNTIME_DIR").ok();
    podman::candidate_sockets(uid, xdg.as_deref())
        .into_iter()
        .find(|s| s.exists())
        .map(|s| {
            format!(
                " (a Podman socket is at {}: use `--engine podman` or \
                 DOCKER_HOST=unix://{})",
                s.display(),
                s.display()
            )
        })
        .unwrap_or_default()
}

/// Which daemon to look for when `DOCKER_HOST` does not name one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Daemon {
    /// Docker: `DOCKER_HOST`, else `/var/run/docker.sock`.
    Docker,
    /// Podman: `DOCKER_HOST`, else `CONTAINER_HOST` (Podman's own variable, `unix://` only),
    /// else the user's rootless socket (`$XDG_RUNTIME_DIR/podman/podman.sock`; not for root),
    /// else the rootful one (`/run/podman/podman.sock`): the first that answers.
    Podman,
}

impl DockerEngine {
    /// Whether `job`'s container is created with the daemon's network set-up off
    /// (`network_disabled`): a job without network on Docker (Podman runs no such hook). A
    /// build's container too: `docker commit` leaves `/etc/hosts` out of the image, so the file
    /// the engine brings never lands in one.
    fn no_network_hook(&self, job: &JobSpec) -> bool {
        !job.network && self.podman.is_none()
    }

    /// Connects to `DOCKER_HOST` (or the local socket) and negotiates the API version down to
    /// the daemon's. A daemon that does not answer gives `EngineError::Connect`, whose message
    /// says how to start one. A Podman service found this way is recognised as such.
    pub async fn connect() -> Result<Self, EngineError> {
        Self::connect_to(Daemon::Docker).await
    }

    /// Connects to the daemon `which` names (see [`Daemon`]). When no Podman service answers,
    /// the error lists the sockets tried and how to start one, rootless or rootful.
    pub async fn connect_to(which: Daemon) -> Result<Self, EngineError> {
        let uid = podman::effective_uid();
        let xdg = std::env::var("XDG_RUNTIME_DIR").ok();
        let sockets = podman::candidate_sockets(uid, xdg.as_deref());
        // A named endpoint is the only one tried; for Podman, its failure says how to start
        // a Podman service, not dockerd.
        let named = |var: &str, endpoint: String, e: EngineError| match e {
            EngineError::Connect { message, .. } => EngineError::PodmanConnect {
                tried: format!("{endpoint} ({var})"),
                message,
                advice: podman::start_service_advice(uid, &sockets),
            },
            other => other,
        };
        if which == Daemon::Docker || std::env::var_os("DOCKER_HOST").is_some() {
            let endpoint = endpoint();
            return match Self::connect_at(&endpoint).await {
                Err(EngineError::Connect { endpoint, message }) if which == Daemon::Docker => {
                    Err(EngineError::Connect {
                        message: format!("{message}{}", podman_instead()),
                        endpoint,
                    })
                }
                Err(e) => Err(named("DOCKER_HOST", endpoint, e)),
                ok => ok,
            };
        }
        if let Ok(host) = std::env::var("CONTAINER_HOST") {
            if !host.starts_with("unix://") {
                return Err(EngineError::PodmanConnect {
                    tried: format!("{host} (CONTAINER_HOST)"),
                    message: "only unix:// sockets are read from CONTAINER_HOST".into(),
                    advice: "for a remote service, forward its socket to a local one and \
                             set DOCKER_HOST=unix://PATH"
                        .into(),
                });
            }
            return Self::connect_at(&host)
                .await
                .map_err(|e| named("CONTAINER_HOST", host.clone(), e));
        }
        let mut why = Vec::new();
        for sock in &sockets {
            if !sock.exists() {
                why.push(format!("{}: no such socket", sock.display()));
                continue;
            }
            match Self::connect_at(&format!("unix://{}", sock.display())).await {
                Ok(e) => return Ok(e),
                Err(e) => why.push(e.to_string().lines().next().unwrap_or_default().into()),
            }
        }
        Err(EngineError::PodmanConnect {
            tried: sockets
                .iter()
                .map(|s| s.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            message: why.join("; "),
            advice: podman::start_service_advice(uid, &sockets),
        })
    }

    /// Connects to `endpoint` (`unix://PATH`, or what `DOCKER_HOST` holds) and finds out
    /// whether it is Docker or Podman.
    pub async fn connect_at(endpoint: &str) -> Result<Self, EngineError> {
        let connect_err = |e: DockerError| EngineError::Connect {
            endpoint: endpoint.to_string(),
            message: e.to_string(),
        };
        // A socket by its path; `DOCKER_HOST` with its TLS settings as the client library
        // reads them; another address as plain HTTP.
        let docker = if podman::unix_path(endpoint).is_some() {
            Docker::connect_with_unix(endpoint, REQUEST_TIMEOUT_SECS, bollard::API_DEFAULT_VERSION)
        } else if std::env::var("DOCKER_HOST").ok().as_deref() == Some(endpoint) {
            Docker::connect_with_defaults()
        } else {
            Docker::connect_with_http(endpoint, REQUEST_TIMEOUT_SECS, bollard::API_DEFAULT_VERSION)
        }
        .map_err(connect_err)?
        .with_timeout(Duration::from_secs(REQUEST_TIMEOUT_SECS));
        // A short first contact: a missing daemon must fail fast, not after the request timeout.
        let negotiated =
            tokio::time::timeout(Duration::from_secs(20), docker.negotiate_version()).await;
        let docker = match negotiated {
            Ok(r) => r.map_err(connect_err)?,
            Err(_) => {
                return Err(EngineError::Connect {
                    endpoint: endpoint.to_string(),
                    message: "no answer within 20 s".into(),
                })
            }
        };
        let version = docker.version().await.map_err(connect_err)?;
        let podman_version = version.components.as_deref().and_then(|cs| {
            cs.iter()
                .find(|c| c.name == "Podman Engine")
                .map(|c| c.version.clone())
        });
        let podman = match podman_version {
            None => None,
            Some(v) => {
                let (host, unknown) = match podman::get_json(endpoint, "/v4.0.0/libpod/info").await
                {
                    Ok(info) => (Some(PodmanHost::from_info(&v, &info)), None),
                    Err(e) => (None, Some(e)),
                };
                let ulimits = podman::service_rlimits(endpoint)
                    .await
                    .map(|(nofile, nproc)| {
                        [("nofile", nofile), ("nproc", nproc)]
                            .into_iter()
                            .filter_map(|(name, l)| {
                                Some(ResourcesUlimits {
                                    name: Some(name.into()),
                                    soft: Some(l.soft?),
                                    hard: Some(l.hard?),
                                })
                            })
                            .collect()
                    });
                Some(Arc::new(PodmanSide {
                    host,
                    unknown,
                    ulimits,
                }))
            }
        };
        let docker = match podman {
            None => docker,
            Some(_) => docker.with_request_modifier(|mut req| {
                if let Some(uri) = podman::split_changes(&req.uri().to_string()) {
                    if let Ok(uri) = uri.parse() {
                        *req.uri_mut() = uri;
                    }
                }
                req
            }),
        };
        Ok(DockerEngine {
            docker,
            endpoint: endpoint.to_string(),
            podman,
            cgroup_parent: None,
        })
    }

    /// Puts every container this engine creates from now on (jobs and builds) under the
    /// harness's cgroup, with CPU `weight` on cgroup v2's scale (100 is a process's default;
    /// see `cgroup.rs`). Needs Docker on this machine (a Unix socket) managing cgroups itself
    /// (its `cgroupfs` driver) and the right to write the cgroup file system (root). Returns
    /// the file the weight was written to.
    pub async fn weigh_containers(&mut self, weight: u32) -> Result<std::path::PathBuf, String> {
        if self.podman.is_some() {
            return Err("--cpu-weight is for --engine docker (not Podman)".into());
        }
        if !super::cgroup::is_local(&self.endpoint) {
            return Err(format!(
                "--cpu-weight writes the weight on this machine, and the daemon at {} is not on it",
                self.endpoint
            ));
        }
        let info = self
            .docker
            .info()
            .await
            .map_err(|e| format!("cannot ask the daemon at {}: {e}", self.endpoint))?;
        use bollard::models::{
            SystemInfoCgroupDriverEnum as Driver, SystemInfoCgroupVersionEnum as Version,
        };
        if info.cgroup_driver != Some(Driver::CGROUPFS) {
            let driver = info
                .cgroup_driver
                .map_or_else(|| "unknown".to_string(), |d| d.to_string());
            return Err(format!(
                "--cpu-weight needs the daemon's cgroupfs driver; this daemon's is {driver} (give \
                 the daemon's own parent cgroup a weight instead)"
            ));
        }
        let layout = match info.cgroup_version {
            Some(Version::_1) => super::cgroup::Layout::V1,
            Some(Version::_2) => super::cgroup::Layout::V2,
            other => {
                return Err(format!(
                    "the daemon names no cgroup version it runs on ({other:?})"
                ))
            }
        };
        let path = super::cgroup::prepare(std::path::Path::new("/sys/fs/cgroup"), layout, weight)?;
        self.cgroup_parent = Some(format!("/{}", super::cgroup::PARENT));
        Ok(path)
    }

    /// What the Podman service behind this engine says about itself (`None` on Docker, or when
    /// its own API could not be read).
    pub fn podman(&self) -> Option<&PodmanHost> {
        self.podman.as_ref().and_then(|p| p.host.as_ref())
    }

    /// Whether the daemon is Podman.
    pub fn is_podman(&self) -> bool {
        self.podman.is_some()
    }

    /// The limits this daemon applies: all on Docker and rootful Podman.
    fn limit_support(&self) -> LimitSupport {
        self.podman()
            .map_or(LimitSupport::ALL, PodmanHost::limit_support)
    }

    /// An image name as the caller knows it (Docker's familiar form).
    fn read_name(&self, name: String) -> String {
        match self.podman {
            Some(_) => podman::familiar_name(&name).to_string(),
            None => name,
        }
    }

    /// The address this engine talks to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The client, for the Swarm engine that drives the same daemon as its manager.
    pub(super) fn client(&self) -> &Docker {
        &self.docker
    }

    async fn force_remove(&self, id: &str) -> Result<(), EngineError> {
        let opts = RemoveContainerOptionsBuilder::default()
            .force(true)
            .v(true)
            .build();
        match self.docker.remove_container(id, Some(opts)).await {
            Ok(()) => Ok(()),
            // Already gone (removed by a reaper, or never created): the goal is reached.
            Err(e) if status_of(&e) == Some(404) => Ok(()),
            // Removal already in progress by someone else.
            Err(e) if status_of(&e) == Some(409) && e.to_string().contains("in progress") => Ok(()),
            Err(e) => Err(EngineError::Remove {
                name: id.into(),
                message: e.to_string(),
            }),
        }
    }

    async fn create(&self, job: &JobSpec) -> Result<String, EngineError> {
        self.create_with(job, None).await
    }

    /// [`Self::create`] with volumes mounted.
    async fn create_with(
        &self,
        job: &JobSpec,
        mounts: Option<Vec<bollard::models::Mount>>,
    ) -> Result<String, EngineError> {
        // Only the limits the daemon applies are sent (a rootless Podman service ignores the
        // others; the run has said so at its start).
        let can = self.limit_support();
        let memory = job.limits.memory_bytes.filter(|_| can.memory);
        let host_config = HostConfig {
            mounts,
            nano_cpus: job
                .limits
                .cpus
                .filter(|_| can.cpu)
                .map(|c| (c * 1e9) as i64),
            memory,
            // Swap equal to memory means no swap: the memory limit is the real limit.
            memory_swap: memory,
            pids_limit: job.limits.pids.filter(|_| can.pids),
            ulimits: self.podman.as_ref().and_then(|p| p.ulimits.clone()),
            network_mode: Some(if job.network { "bridge" } else { "none" }.into()),
            cgroup_parent: self.cgroup_parent.clone(),
            auto_remove: Some(false),
            log_config: Some(HostConfigLogConfig {
                typ: Some("none".into()),
                config: None,
            }),
            ..Default::default()
        };
        let body = ContainerCreateBody {
            image: Some(job.image.clone()),
            cmd: Some(job.command.clone()),
            env: Some(job.env.clone()),
            working_dir: job.working_dir.clone(),
            labels: Some(job.labels.clone().into_iter().collect()),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            // No network: `network_mode: none` (a namespace of its own, loopback only) and, on
            // Docker, `network_disabled` as well. Without it the daemon runs a hook of its own
            // at every start (a second copy of itself, about 0.2 s of CPU, most of a container
            // start's cost); with it the daemon writes no `/etc/hosts`, so the job brings
            // the one it would have written ([`NO_NETWORK_HOSTS`]) and `localhost` resolves.
            network_disabled: Some(self.no_network_hook(job)),
            host_config: Some(host_config),
            ..Default::default()
        };
        let create = || {
            let opts = CreateContainerOptionsBuilder::default()
                .name(&job.name)
                .build();
            self.docker.create_container(Some(opts), body.clone())
        };
        let created = match create().await {
            // A container of the same name left by an earlier, interrupted attempt.
            Err(e) if podman::is_name_conflict(status_of(&e), &e.to_string()) => {
                self.force_remove(&job.name).await?;
                create().await
            }
            r => r,
        };
        match created {
            Ok(r) => Ok(r.id),
            Err(e) if status_of(&e) == Some(404) => Err(EngineError::ImageMissing {
                image: job.image.clone(),
            }),
            Err(e) => Err(EngineError::Create {
                name: job.name.clone(),
                message: e.to_string(),
            }),
        }
    }

    /// Everything between create and remove; the caller removes the container whatever happens.
    async fn drive(
        &self,
        id: &str,
        job: &JobSpec,
        t0: Instant,
        out: &mut JobOutput,
    ) -> Result<(), EngineError> {
        let name = job.name.as_str();
        let hosts = self.no_network_hook(job).then(|| FileIn {
            path: "/etc/hosts".into(),
            contents: NO_NETWORK_HOSTS.as_bytes().to_vec(),
            mode: 0o644,
        });
        if !job.files.is_empty() || hosts.is_some() {
            let files = job.files.iter().chain(&hosts);
            let tar = tarball::files_archive(files).map_err(|e| EngineError::Copy {
                name: name.into(),
                message: e.to_string(),
            })?;
            let opts = UploadToContainerOptionsBuilder::default().path("/").build();
            self.docker
                .upload_to_container(id, Some(opts), bollard::body_full(tar.into()))
                .await
                .map_err(|e| EngineError::Copy {
                    name: name.into(),
                    message: e.to_string(),
                })?;
        }
        let attach_opts = AttachContainerOptionsBuilder::default()
            .stdout(true)
            .stderr(true)
            .stream(true)
            .logs(false)
            .build();
        let attached = self
            .docker
            .attach_container(id, Some(attach_opts))
            .await
            .map_err(|e| EngineError::Logs {
                name: name.into(),
                message: e.to_string(),
            })?;
        let mut stream = attached.output;
        // Prepared: wait for a place among the running (held until the main process ends).
        let waiting = Instant::now();
        let place = match &job.gate {
            Some(gate) => match gate.enter().await {
                Some(place) => Some(place),
                None => {
                    out.setup = waiting.duration_since(t0);
                    return Err(EngineError::Withdrawn { name: name.into() });
                }
            },
            None => None,
        };
        out.queued = waiting.elapsed();
        self.docker
            .start_container(id, None::<bollard::query_parameters::StartContainerOptions>)
            .await
            .map_err(|e| start_error(name, e))?;
        let started = Instant::now();
        out.setup = started.duration_since(t0).saturating_sub(out.queued);

        let mut buf = HeadTail::new(job.max_output_bytes);
        let mut watch = Watch::new(&job.watch);
        let wait_opts = WaitContainerOptionsBuilder::default()
            .condition("not-running")
            .build();
        let mut wait = Box::pin(self.docker.wait_container(id, Some(wait_opts)));
        let deadline = tokio::time::sleep(job.timeout);
        tokio::pin!(deadline);
        let mut stream_open = true;
        let mut log_error = None;
        let mut kill: Option<tokio::task::JoinHandle<Result<(), DockerError>>> = None;
        // Read output and wait for the exit together, until the exit or the deadline.
        let exited: Result<(), EngineError> = loop {
            tokio::select! {
                // Exit, then deadline, then output: a job that prints without pause must not
                // starve the deadline (the output branch is always ready).
                biased;
                w = wait.next() => {
                    break match w {
                        None | Some(Ok(_)) => Ok(()),
                        // bollard reports a non-zero exit as an error; inspect gives the code.
                        Some(Err(DockerError::DockerContainerWaitError { .. })) => Ok(()),
                        Some(Err(e)) => Err(EngineError::Wait { name: name.into(), message: e.to_string() }),
                    };
                }
                _ = &mut deadline => {
                    if let Some(kill) = kill.take() {
                        // Still running KILL_GRACE after SIGKILL: say why, if the kill failed.
                        let why = match kill.now_or_never() {
                            Some(Ok(Err(e))) => format!("kill at deadline: {e}"),
                            _ => format!("still running {KILL_GRACE:?} after SIGKILL"),
                        };
                        break Err(EngineError::Wait { name: name.into(), message: why });
                    }
                    out.timed_out = true;
                    // The kill runs on its own while this loop keeps reading: a job blocked on
                    // a full output pipe must be drained to die, and the wait says when it has.
                    let docker = self.docker.clone();
                    let target = id.to_string();
                    kill = Some(tokio::spawn(async move {
                        let opts = KillContainerOptionsBuilder::default().signal("SIGKILL").build();
                        match docker.kill_container(&target, Some(opts)).await {
                            // 409: it stopped between the deadline and the kill.
                            Err(e) if status_of(&e) == Some(409) => Ok(()),
                            r => r,
                        }
                    }));
                    deadline.as_mut().reset(tokio::time::Instant::now() + KILL_GRACE);
                }
                chunk = stream.next(), if stream_open => match chunk {
                    Some(Ok(o)) => {
                        let bytes = o.into_bytes();
                        watch.feed(&bytes, started.elapsed());
                        buf.push(&bytes);
                    }
                    Some(Err(e)) => { log_error = Some(e.to_string()); stream_open = false; }
                    None => stream_open = false,
                },
            }
        };
        out.run = started.elapsed();
        exited?;
        // The output stream closes when the container's processes are gone; read what is left.
        if stream_open {
            let drain = async {
                while let Some(chunk) = stream.next().await {
                    match chunk {
                        Ok(o) => {
                            let bytes = o.into_bytes();
                            watch.feed(&bytes, started.elapsed());
                            buf.push(&bytes);
                        }
                        Err(e) => {
                            log_error = Some(e.to_string());
                            break;
                        }
                    }
                }
            };
            let _ = tokio::time::timeout(DRAIN_GRACE, drain).await;
        }
        // The main process has ended: the next prepared container may start.
        drop(place);
        out.seen = watch.finish();
        let (output, dropped) = buf.finish();
        out.output = output;
        out.truncated_bytes = dropped;

        // The daemon records an OOM kill from an event that can land just after the exit: a
        // SIGKILL exit (137) under a memory limit is looked at again a few times.
        for attempt in 0..4 {
            let info = self
                .docker
                .inspect_container(
                    id,
                    None::<bollard::query_parameters::InspectContainerOptions>,
                )
                .await
                .map_err(|e| EngineError::Wait {
                    name: name.into(),
                    message: format!("inspect: {e}"),
                })?;
            if let Some(state) = info.state {
                out.oom_killed = state.oom_killed.unwrap_or(false);
                if !out.timed_out {
                    out.exit_code = state.exit_code;
                }
            }
            let maybe_oom = out.exit_code == Some(137) && job.limits.memory_bytes.is_some();
            if out.oom_killed || !maybe_oom || attempt == 3 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // An output stream cut off while the job ran normally means the output is incomplete:
        // an infrastructure failure (e.g. a daemon restart), not a result.
        if let (Some(message), false) = (log_error, out.timed_out) {
            return Err(EngineError::Logs {
                name: name.into(),
                message,
            });
        }
        Ok(())
    }
}

/// A failed start: the daemon's message, or, where the service's setup is at fault (which a
/// retry cannot fix), what to change.
fn start_error(name: &str, e: DockerError) -> EngineError {
    let message = e.to_string();
    match podman::start_advice(&message) {
        Some(advice) => EngineError::Setup {
            name: name.into(),
            message: format!("{message}\n  {advice}"),
        },
        None => EngineError::Start {
            name: name.into(),
            message,
        },
    }
}

pub(super) fn split_tag(image: &str) -> (&str, &str) {
    // A digest reference is pulled whole; bollard then sends no tag.
    if image.contains('@') {
        return (image, "");
    }
    // A colon after the last slash separates the tag; one before it is a registry port.
    match image.rfind(':') {
        Some(i) if !image[i..].contains('/') => (&image[..i], &image[i + 1..]),
        _ => (image, "latest"),
    }
}

type ChunkStream =
    std::pin::Pin<Box<dyn futures_util::Stream<Item = Result<Vec<u8>, std::io::Error>> + Send>>;

/// The chunks of a tar: bytes in one piece, a file read 1 MiB at a time.
async fn tar_chunks(src: TarSource) -> Result<ChunkStream, String> {
    use tokio::io::AsyncReadExt;
    match src {
        TarSource::Bytes(b) => Ok(Box::pin(futures_util::stream::once(async move { Ok(b) }))),
        TarSource::File(path) => {
            let file = tokio::fs::File::open(&path)
                .await
                .map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(Box::pin(futures_util::stream::unfold(
                Some(file),
                |file| async move {
                    let mut file = file?;
                    let mut buf = vec![0u8; 1 << 20];
                    match file.read(&mut buf).await {
                        Ok(0) => None,
                        Ok(n) => {
                            buf.truncate(n);
                            Some((Ok(buf), Some(file)))
                        }
                        Err(e) => Some((Err(e), None)),
                    }
                },
            )))
        }
    }
}

pub(super) fn status_of(e: &DockerError) -> Option<u16> {
    match e {
        DockerError::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}

pub(super) fn label_filters(labels: &BTreeMap<String, String>) -> HashMap<String, Vec<String>> {
    let mut f = HashMap::new();
    let mut want: Vec<String> = labels
        .iter()
        .map(|(k, v)| {
            if v.is_empty() {
                k.clone()
            } else {
                format!("{k}={v}")
            }
        })
        .collect();
    if want.is_empty() {
        // Never list everything on the machine: at least the tool's own label.
        want.push(LABEL_TOOL.to_string());
    }
    f.insert("label".to_string(), want);
    f
}

/// Whether `have` carries every label of `want` (an empty value: the key, with any value).
fn has_labels(have: &HashMap<String, String>, want: &BTreeMap<String, String>) -> bool {
    want.iter()
        .all(|(k, v)| have.get(k).is_some_and(|got| v.is_empty() || got == v))
}

fn build_log_line(info: &bollard::models::BuildInfo, log: &mut String) {
    if let Some(s) = &info.stream {
        log.push_str(s);
    } else if let Some(s) = &info.status {
        log.push_str(s);
        log.push('\n');
    }
}

impl Engine for DockerEngine {
    async fn info(&self) -> Result<EngineInfo, EngineError> {
        let v = self
            .docker
            .version()
            .await
            .map_err(|e| EngineError::Connect {
                endpoint: self.endpoint.clone(),
                message: e.to_string(),
            })?;
        // The daemon's host, which may not be this machine (DOCKER_HOST).
        let cpus = self
            .docker
            .info()
            .await
            .ok()
            .and_then(|i| i.ncpu)
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n > 0);
        let (product, limitations) = match &self.podman {
            None => ("Docker".to_string(), Vec::new()),
            Some(p) => match (&p.host, &p.unknown) {
                (Some(h), _) => (h.describe(), h.limitations()),
                (None, why) => (
                    "Podman".to_string(),
                    vec![format!(
                        "Podman: its own API (/libpod/info) could not be read ({}): every \
                         limit is sent, but whether a rootless service applies them is unknown",
                        why.as_deref().unwrap_or("no reason given")
                    )],
                ),
            },
        };
        Ok(EngineInfo {
            api_version: v.api_version.unwrap_or_default(),
            server_version: v.version.unwrap_or_default(),
            product,
            limitations,
            cpus,
        })
    }

    async fn image_exists(&self, image: &str) -> Result<bool, EngineError> {
        match self.docker.inspect_image(image).await {
            Ok(_) => Ok(true),
            Err(e) if status_of(&e) == Some(404) => Ok(false),
            Err(e) => Err(EngineError::Image {
                image: image.into(),
                message: e.to_string(),
            }),
        }
    }

    async fn build_image_with(
        &self,
        tag: &str,
        context_tar: impl Into<TarSource> + Send,
        labels: BTreeMap<String, String>,
        settings: BuildSettings,
    ) -> Result<String, EngineError> {
        let labels: HashMap<String, String> = labels.into_iter().collect();
        let opts = BuildImageOptionsBuilder::default()
            .dockerfile("Dockerfile")
            .t(tag)
            .rm(true)
            .forcerm(true)
            .labels(&labels)
            .networkmode(if settings.network { "default" } else { "none" })
            .build();
        let mut stream = self.docker.build_image(
            opts,
            None,
            Some(bollard::body_try_stream(
                tar_chunks(context_tar.into())
                    .await
                    .map_err(|e| EngineError::Build {
                        tag: tag.into(),
                        message: e.clone(),
                        log: e,
                    })?
                    .map(|r| r.map(Into::into)),
            )),
        );
        let mut log = String::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(info) => build_log_line(&info, &mut log),
                Err(e) => {
                    let message = match &e {
                        DockerError::DockerStreamError { error } => error.clone(),
                        other => other.to_string(),
                    };
                    log.push_str(&message);
                    log.push('\n');
                    return Err(EngineError::Build {
                        tag: tag.into(),
                        message,
                        log,
                    });
                }
            }
        }
        Ok(log)
    }

    async fn import_image(
        &self,
        tag: &str,
        rootfs_tar: impl Into<TarSource> + Send,
        labels: BTreeMap<String, String>,
    ) -> Result<(), EngineError> {
        // Dockerfile instructions applied on import: labels, and a shell as default command.
        let mut changes: Vec<String> = labels
            .iter()
            .map(|(k, v)| format!("LABEL {}={}", quote(k), quote(v)))
            .collect();
        changes.push("CMD [\"/bin/bash\"]".into());
        changes.push("ENV LANG=C.UTF-8".into());
        // The whole name in `repo`, as the docker CLI sends it: Podman ignores `tag` on an
        // import (it stored `docker.io/<repo>:latest`, and no build found the base).
        let opts = CreateImageOptionsBuilder::default()
            .from_src("-")
            .repo(tag)
            .changes(changes)
            .build();
        let mut stream = self.docker.create_image(
            Some(opts),
            Some(bollard::body_try_stream(
                tar_chunks(rootfs_tar.into())
                    .await
                    .map_err(|message| EngineError::Import {
                        tag: tag.into(),
                        message,
                    })?
                    .map(|r| r.map(Into::into)),
            )),
            None,
        );
        // The stream's last status is the new image's id (`sha256:...`) on both engines.
        let mut id = None;
        while let Some(item) = stream.next().await {
            match item {
                Ok(info) => {
                    if let Some(s) = info.status.filter(|s| s.starts_with("sha256:")) {
                        id = Some(s);
                    }
                }
                Err(e) => {
                    return Err(EngineError::Import {
                        tag: tag.into(),
                        message: e.to_string(),
                    })
                }
            }
        }
        // Checked, not assumed: an engine that stored the image under another name gets the
        // one asked for from the id, or the import fails here rather than every build later.
        if !self.image_exists(tag).await? {
            match id {
                Some(id) => self.tag_image(&id, tag).await?,
                None => {
                    return Err(EngineError::Import {
                        tag: tag.into(),
                        message: "the engine imported the file system but stored no image of \
                                  that name, and gave no image id"
                            .into(),
                    })
                }
            }
        }
        Ok(())
    }

    async fn tag_image(&self, image: &str, new_name: &str) -> Result<(), EngineError> {
        let (repo, tag) = split_tag(new_name);
        let opts = bollard::query_parameters::TagImageOptionsBuilder::default()
            .repo(repo)
            .tag(tag)
            .build();
        self.docker
            .tag_image(image, Some(opts))
            .await
            .map_err(|e| EngineError::Image {
                image: image.into(),
                message: e.to_string(),
            })
    }

    async fn pull_image(&self, image: &str) -> Result<(), EngineError> {
        let (repo, tag) = split_tag(image);
        let opts = CreateImageOptionsBuilder::default()
            .from_image(repo)
            .tag(tag)
            .build();
        let mut stream = self.docker.create_image(Some(opts), None, None);
        while let Some(item) = stream.next().await {
            if let Err(e) = item {
                return Err(EngineError::Pull {
                    image: image.into(),
                    message: e.to_string(),
                });
            }
        }
        Ok(())
    }

    async fn remove_image(&self, image: &str) -> Result<(), EngineError> {
        // Not forced: forcing would untag an image another run's containers still start from.
        let opts = RemoveImageOptionsBuilder::default().force(false).build();
        match self.docker.remove_image(image, Some(opts), None).await {
            Ok(_) => Ok(()),
            Err(e) if status_of(&e) == Some(404) => Ok(()),
            Err(e) if status_of(&e) == Some(409) => Err(EngineError::ImageInUse {
                image: image.into(),
                message: e.to_string(),
            }),
            Err(e) => Err(EngineError::Image {
                image: image.into(),
                message: e.to_string(),
            }),
        }
    }

    async fn image_details(&self, image: &str) -> Result<Option<ImageDetails>, EngineError> {
        let err = |e: DockerError| EngineError::Image {
            image: image.into(),
            message: e.to_string(),
        };
        let inspected = match self.docker.inspect_image(image).await {
            Ok(i) => i,
            Err(e) if status_of(&e) == Some(404) => return Ok(None),
            Err(e) => return Err(err(e)),
        };
        let history = match self.docker.image_history(image).await {
            Ok(h) => h,
            Err(e) if status_of(&e) == Some(404) => return Ok(None),
            Err(e) => return Err(err(e)),
        };
        Ok(Some(ImageDetails {
            id: inspected.id.unwrap_or_default(),
            size: inspected.size.unwrap_or(0).max(0) as u64,
            // The daemon gives the newest step first.
            history: history
                .into_iter()
                .rev()
                .map(|h| HistoryStep {
                    created: h.created,
                    created_by: h.created_by,
                    size: h.size.max(0) as u64,
                })
                .collect(),
            labels: inspected
                .config
                .and_then(|c| c.labels)
                .unwrap_or_default()
                .into_iter()
                .collect(),
        }))
    }

    fn save_images(&self, names: &[String]) -> ByteStream<EngineError> {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        Box::pin(self.docker.export_images(&names).map(|r| {
            r.map_err(|e| EngineError::Save {
                message: e.to_string(),
            })
        }))
    }

    async fn load_images(
        &self,
        archive: ByteStream<std::io::Error>,
    ) -> Result<Vec<String>, EngineError> {
        let opts = bollard::query_parameters::ImportImageOptionsBuilder::default()
            .quiet(true)
            .build();
        let mut stream = self.docker.import_image_stream(opts, archive, None);
        let mut loaded = Vec::new();
        while let Some(item) = stream.next().await {
            let info = item.map_err(|e| EngineError::Load {
                message: match e {
                    DockerError::DockerStreamError { error } => error,
                    other => other.to_string(),
                },
            })?;
            // `Loaded image: NAME` (or `Loaded image ID: sha256:...` for an untagged one).
            for line in info.stream.as_deref().unwrap_or("").lines() {
                if let Some(name) = line.strip_prefix("Loaded image: ") {
                    loaded.push(name.trim().to_string());
                } else if let Some(id) = line.strip_prefix("Loaded image ID: ") {
                    loaded.push(id.trim().to_string());
                }
            }
        }
        Ok(loaded)
    }

    async fn commit_build(&self, b: CommitBuild) -> Result<String, EngineError> {
        let fail = |message: String, log: String| EngineError::Build {
            tag: b.tag.clone(),
            message,
            log,
        };
        let from = match self.docker.inspect_image(&b.from).await {
            Ok(i) => i,
            Err(e) if status_of(&e) == Some(404) => {
                return Err(EngineError::ImageMissing {
                    image: b.from.clone(),
                })
            }
            Err(e) => {
                return Err(EngineError::Image {
                    image: b.from.clone(),
                    message: e.to_string(),
                })
            }
        };
        for (volume, _) in &b.volumes {
            let request = bollard::models::VolumeCreateRequest {
                name: Some(volume.clone()),
                labels: Some(b.volume_labels.clone().into_iter().collect()),
                ..Default::default()
            };
            // Creating a volume that exists returns it unchanged.
            self.docker
                .create_volume(request)
                .await
                .map_err(|e| fail(format!("volume {volume}: {e}"), String::new()))?;
        }
        let mounts = b
            .volumes
            .iter()
            .map(|(volume, target)| bollard::models::Mount {
                typ: Some(bollard::models::MountType::VOLUME),
                source: Some(volume.clone()),
                target: Some(target.clone()),
                ..Default::default()
            })
            .collect();
        let job = JobSpec {
            image: b.from.clone(),
            name: b.name.clone(),
            labels: b.labels.clone(),
            files: b.files.clone(),
            command: b.command.clone(),
            env: Vec::new(),
            working_dir: None,
            limits: super::Limits {
                cpus: None,
                memory_bytes: None,
                pids: None,
            },
            network: b.network,
            timeout: Duration::from_secs(COMMIT_BUILD_TIMEOUT_SECS),
            max_output_bytes: COMMIT_BUILD_LOG_BYTES,
            watch: Vec::new(),
            gate: None,
        };
        let t0 = Instant::now();
        let id = self.create_with(&job, Some(mounts)).await?;
        let mut out = JobOutput::default();
        let driven = self.drive(&id, &job, t0, &mut out).await;
        let log = String::from_utf8_lossy(&out.output).into_owned();
        let committed = match driven {
            Err(e) => Err(e),
            Ok(()) if out.timed_out => Err(fail(
                format!("still running after {COMMIT_BUILD_TIMEOUT_SECS} s"),
                log.clone(),
            )),
            Ok(()) if out.exit_code != Some(0) => Err(fail(
                format!(
                    "the command exited with {}",
                    out.exit_code
                        .map_or("no code".to_string(), |c| c.to_string())
                ),
                log.clone(),
            )),
            Ok(()) => {
                let (repo, tag) = split_tag(&b.tag);
                // The image keeps the starting image's command, not the build's.
                let mut changes = b.changes.clone();
                if let Some(cmd) = from.config.as_ref().and_then(|c| c.cmd.as_ref()) {
                    changes.push(format!(
                        "CMD {}",
                        serde_json::to_string(cmd).unwrap_or_else(|_| "[]".into())
                    ));
                }
                let opts = bollard::query_parameters::CommitContainerOptionsBuilder::default()
                    .container(&id)
                    .repo(repo)
                    .tag(tag)
                    .pause(false)
                    .changes(&changes.join("\n"))
                    .build();
                self.docker
                    .commit_container(opts, bollard::models::ContainerConfig::default())
                    .await
                    .map(|_| ())
                    .map_err(|e| fail(format!("commit: {e}"), log.clone()))
            }
        };
        let removed = self.force_remove(&id).await;
        committed?;
        removed?;
        Ok(log)
    }

    async fn remove_volume(&self, name: &str) -> Result<(), EngineError> {
        match self
            .docker
            .remove_volume(name, None::<bollard::query_parameters::RemoveVolumeOptions>)
            .await
        {
            Ok(()) => Ok(()),
            Err(e) if status_of(&e) == Some(404) => Ok(()),
            Err(e) if status_of(&e) == Some(409) => Err(EngineError::VolumeInUse {
                name: name.to_string(),
                message: e.to_string(),
            }),
            Err(e) => Err(EngineError::Remove {
                name: format!("volume {name}"),
                message: e.to_string(),
            }),
        }
    }

    async fn list_volumes(
        &self,
        labels: BTreeMap<String, String>,
    ) -> Result<Vec<Resource>, EngineError> {
        let filters = label_filters(&labels);
        let opts = bollard::query_parameters::ListVolumesOptionsBuilder::default()
            .filters(&filters)
            .build();
        let list = self
            .docker
            .list_volumes(Some(opts))
            .await
            .map_err(|e| EngineError::List {
                what: "volumes".into(),
                message: e.to_string(),
            })?;
        Ok(list
            .volumes
            .unwrap_or_default()
            .into_iter()
            .map(|v| Resource {
                id: v.name.clone(),
                name: v.name,
                labels: v.labels.into_iter().collect(),
            })
            .collect())
    }

    async fn push_image(&self, image: &str) -> Result<(), EngineError> {
        let (repo, tag) = split_tag(image);
        let opts = bollard::query_parameters::PushImageOptionsBuilder::default()
            .tag(tag)
            .build();
        let mut stream = self.docker.push_image(repo, Some(opts), None);
        while let Some(item) = stream.next().await {
            item.map_err(|e| EngineError::Push {
                image: image.into(),
                message: e.to_string(),
            })?;
        }
        Ok(())
    }

    async fn create_hold(
        &self,
        image: &str,
        labels: BTreeMap<String, String>,
    ) -> Result<String, EngineError> {
        let body = ContainerCreateBody {
            image: Some(image.to_string()),
            // Never run; an image without a command still needs one to be created from.
            cmd: Some(vec!["true".into()]),
            labels: Some(labels.into_iter().collect()),
            network_disabled: Some(true),
            host_config: Some(HostConfig {
                network_mode: Some("none".into()),
                log_config: Some(HostConfigLogConfig {
                    typ: Some("none".into()),
                    config: None,
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        match self
            .docker
            .create_container(
                None::<bollard::query_parameters::CreateContainerOptions>,
                body,
            )
            .await
        {
            Ok(r) => Ok(r.id),
            Err(e) if status_of(&e) == Some(404) => Err(EngineError::ImageMissing {
                image: image.into(),
            }),
            Err(e) => Err(EngineError::Create {
                name: format!("hold on {image}"),
                message: e.to_string(),
            }),
        }
    }

    fn prepares_ahead(&self) -> bool {
        true
    }

    async fn run_job(&self, job: JobSpec) -> Result<JobOutput, EngineError> {
        let t0 = Instant::now();
        let id = self.create(&job).await?;
        let mut out = JobOutput::default();
        let result = self.drive(&id, &job, t0, &mut out).await;
        let removed = self.force_remove(&id).await;
        // Teardown: reading the rest of the output, inspecting and removing.
        out.close_timing(t0);
        result?;
        removed?;
        Ok(out)
    }

    async fn list_containers(
        &self,
        labels: BTreeMap<String, String>,
    ) -> Result<Vec<Resource>, EngineError> {
        let filters = label_filters(&labels);
        let opts = ListContainersOptionsBuilder::default()
            .all(true)
            .filters(&filters)
            .build();
        let list =
            self.docker
                .list_containers(Some(opts))
                .await
                .map_err(|e| EngineError::List {
                    what: "containers".into(),
                    message: e.to_string(),
                })?;
        Ok(list
            .into_iter()
            .map(|c| Resource {
                id: c.id.unwrap_or_default(),
                name: c
                    .names
                    .and_then(|n| n.into_iter().next())
                    .map(|n| n.trim_start_matches('/').to_string())
                    .unwrap_or_default(),
                labels: c.labels.unwrap_or_default().into_iter().collect(),
            })
            .collect())
    }

    async fn remove_container(&self, id: &str) -> Result<(), EngineError> {
        self.force_remove(id).await
    }

    async fn list_images(
        &self,
        labels: BTreeMap<String, String>,
    ) -> Result<Vec<Resource>, EngineError> {
        // Podman 4.3 lists no image for two label filters or more (containers are fine): it
        // is asked for the first, and the rest are checked here.
        let asked = match self.podman {
            Some(_) => labels
                .iter()
                .take(1)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            None => labels.clone(),
        };
        let filters = label_filters(&asked);
        let opts = ListImagesOptionsBuilder::default()
            .filters(&filters)
            .build();
        let list = self
            .docker
            .list_images(Some(opts))
            .await
            .map_err(|e| EngineError::List {
                what: "images".into(),
                message: e.to_string(),
            })?;
        Ok(list
            .into_iter()
            .filter(|i| has_labels(&i.labels, &labels))
            // One resource per name, so a caller finds (and removes) an image by any of its tags.
            .flat_map(|i| {
                let labels: BTreeMap<String, String> = i.labels.into_iter().collect();
                let names = if i.repo_tags.is_empty() || i.repo_tags == ["<none>:<none>"] {
                    vec![i.id.clone()]
                } else {
                    i.repo_tags
                };
                names.into_iter().map(move |name| Resource {
                    id: i.id.clone(),
                    name: self.read_name(name),
                    labels: labels.clone(),
                })
            })
            .collect())
    }
}

/// Quotes a label key or value for a Dockerfile `LABEL` instruction.
fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_split_after_the_last_slash() {
        assert_eq!(split_tag("a/b:1"), ("a/b", "1"));
        assert_eq!(
            split_tag("127.0.0.1:5000/x/y"),
            ("127.0.0.1:5000/x/y", "latest")
        );
        assert_eq!(
            split_tag("127.0.0.1:5000/x/y:t"),
            ("127.0.0.1:5000/x/y", "t")
        );
        assert_eq!(split_tag("ubuntu"), ("ubuntu", "latest"));
        assert_eq!(split_tag("r/x@sha256:ab"), ("r/x@sha256:ab", ""));
    }

    #[test]
    fn label_filters_never_select_everything() {
        let f = label_filters(&BTreeMap::new());
        assert_eq!(f["label"], vec![LABEL_TOOL.to_string()]);
        let f = label_filters(&BTreeMap::from([
            ("a".into(), "1".into()),
            ("b".into(), "".into()),
        ]));
        assert_eq!(f["label"], vec!["a=1".to_string(), "b".to_string()]);
    }

    #[test]
    fn labels_are_matched_as_the_daemon_filters_them() {
        let have = HashMap::from([
            ("swe-eval".to_string(), "1".to_string()),
            ("swe-eval.layer".to_string(), "base".to_string()),
        ]);
        let want = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert!(has_labels(&have, &want(&[])));
        assert!(has_labels(
            &have,
            &want(&[("swe-eval", "1"), ("swe-eval.layer", "base")])
        ));
        assert!(has_labels(&have, &want(&[("swe-eval.layer", "")])));
        assert!(!has_labels(&have, &want(&[("swe-eval.layer", "env")])));
        assert!(!has_labels(&have, &want(&[("swe-eval.hold", "")])));
    }

    #[test]
    fn label_values_are_quoted() {
        assert_eq!(quote(r#"a "b" \c"#), r#""a \"b\" \\c""#);
    }
}
