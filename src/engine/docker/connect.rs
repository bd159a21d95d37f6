//! Connecting to a daemon ([`Daemon`]: Docker at `DOCKER_HOST` or the local socket, or the
//! first Podman service that answers) and what it says about itself (`info`). A daemon that
//! does not answer is an error that says how to start one, or that a Podman socket is there.

use std::sync::Arc;
use std::time::Duration;

use bollard::errors::Error as DockerError;
use bollard::Docker;

use super::engine::DockerEngine;
use super::podman_side::PodmanSide;
use crate::engine::podman;
use crate::engine::{EngineError, EngineInfo};

/// Client-side limit on waiting for a response's headers; long streams (builds, pulls, waits)
/// are not limited by it once their headers arrived.
const REQUEST_TIMEOUT_SECS: u64 = 600;

/// How long the first contact may take: a missing daemon must fail fast, not after the
/// request timeout.
const FIRST_CONTACT: Duration = Duration::from_secs(20);

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

/// The daemon address a connection will use: `DOCKER_HOST`, or the local socket.
fn endpoint() -> String {
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

impl DockerEngine {
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
        let docker = client(endpoint).map_err(connect_err)?;
        let negotiated = tokio::time::timeout(FIRST_CONTACT, docker.negotiate_version()).await;
        let docker = match negotiated {
            Ok(r) => r.map_err(connect_err)?,
            Err(_) => {
                return Err(EngineError::Connect {
                    endpoint: endpoint.to_string(),
                    message: format!("no answer within {} s", FIRST_CONTACT.as_secs()),
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
            Some(v) => Some(Arc::new(PodmanSide::ask(endpoint, &v).await)),
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
            running: crate::engine::RunningCount::default(),
        })
    }

    /// What the daemon says about itself; also a check that it is reachable.
    pub(super) async fn info(&self) -> Result<EngineInfo, EngineError> {
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
            Some(p) => p.describe(),
        };
        Ok(EngineInfo {
            api_version: v.api_version.unwrap_or_default(),
            server_version: v.version.unwrap_or_default(),
            product,
            limitations,
            cpus,
        })
    }
}

/// A client of `endpoint`, not yet connected: a socket by its path; `DOCKER_HOST` with its TLS
/// settings as the client library reads them; another address as plain HTTP.
fn client(endpoint: &str) -> Result<Docker, DockerError> {
    let client = if podman::unix_path(endpoint).is_some() {
        Docker::connect_with_unix(endpoint, REQUEST_TIMEOUT_SECS, bollard::API_DEFAULT_VERSION)
    } else if std::env::var("DOCKER_HOST").ok().as_deref() == Some(endpoint) {
        Docker::connect_with_defaults()
    } else {
        Docker::connect_with_http(endpoint, REQUEST_TIMEOUT_SECS, bollard::API_DEFAULT_VERSION)
    }?;
    Ok(client.with_timeout(Duration::from_secs(REQUEST_TIMEOUT_SECS)))
}
