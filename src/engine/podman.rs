//! Podman behind the Docker-compatible API (`podman system service`), rootful or rootless: how
//! its socket is found, what the service says about itself that the compatible API does not
//! (rootless or not, cgroups, runtime, storage: `GET /libpod/info`), and the differences the
//! Docker adapter ([`super::DockerEngine`]) makes up for:
//!
//! | what | Docker | Podman 4.3 | here |
//! |---|---|---|---|
//! | `POST /images/create?fromSrc=-&repo=R&tag=T` (import) | stores `R:T` | ignores `tag`: stores `docker.io/R:latest` | the tag goes in `repo` (`R:T`), as the docker CLI sends it; the name is checked after the import |
//! | import `changes` (one value, instructions joined by newlines, as the client library sends them) | parsed as Dockerfile lines | taken as one instruction: the first `LABEL` swallowed the rest | one `changes` parameter per instruction ([`split_changes`], a request modifier of the Podman connection) |
//! | image names listed | `R:T` | `docker.io/R:T` (`localhost/R:T` for some) | names read back without the registry Podman adds ([`familiar_name`]) |
//! | images listed by two label filters or more | images with every label | none (containers are fine) | images asked for by the first label, the rest checked by the adapter |
//! | a build's `networkmode=none` | `RUN` steps without network | ignored by the 4.3 service (compatible and libpod endpoints, rootful and rootless): `RUN` steps see the service's network | said in README; the jobs' own `--network none` holds |
//! | a container name in use | 409 | 500 `... is already in use` | both are a conflict |
//! | open files and processes of a job (`RLIMIT_NOFILE`, `RLIMIT_NPROC`) | the daemon's own | raised to 1,048,576 by the runtime, which fails where the service lacks `CAP_SYS_RESOURCE` | the service's own limits, read from `/proc/<pid>/limits` of the socket's peer, passed as the job's ulimits: the same as Docker gives |
//! | CPU, memory, pids limits | applied | rootful: applied; rootless: only with the controllers delegated to the user on cgroups v2, else ignored with a line in the service's log | sent only where they apply; otherwise the run says so ([`PodmanHost::limitations`]) |
//!
//! Everything else the harness uses (attach before start with the `none` log driver, files
//! copied in before start, wait `not-running`, SIGKILL at the deadline, exit codes, the OOM
//! flag, labels and label filters, holds refusing an image's removal with 409, `--network none`)
//! behaves as on Docker; the Podman tests check each on both modes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The rootful service's socket (`podman.socket`, or `podman system service` as root).
pub const ROOTFUL_SOCKET: &str = "/run/podman/podman.sock";

/// What a Podman service says about itself through its own API (`GET /libpod/info`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodmanHost {
    /// Podman's version, e.g. `4.3.1`.
    pub version: String,
    /// The service runs as an ordinary user (in a user namespace of its own).
    pub rootless: bool,
    /// `v1` or `v2`.
    pub cgroup_version: String,
    /// `systemd` or `cgroupfs`.
    pub cgroup_manager: String,
    /// The cgroup controllers the service may use (for a rootless one on cgroups v2: the
    /// controllers delegated to the user).
    pub controllers: Vec<String>,
    /// The OCI runtime: `crun` or `runc`.
    pub runtime: String,
    /// The storage driver: `overlay`, `vfs`, ...
    pub storage_driver: String,
}

/// Which of a job's resource limits the engine can enforce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitSupport {
    /// A CPU quota (`--cpus`).
    pub cpu: bool,
    /// A memory limit (and no swap beyond it).
    pub memory: bool,
    /// A limit on the number of processes.
    pub pids: bool,
}

impl LimitSupport {
    /// Every limit applies (Docker, rootful Podman).
    pub const ALL: LimitSupport = LimitSupport {
        cpu: true,
        memory: true,
        pids: true,
    };
}

impl PodmanHost {
    /// Reads it from the `GET /libpod/info` answer.
    pub fn from_info(version: &str, info: &serde_json::Value) -> PodmanHost {
        let host = &info["host"];
        let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
        PodmanHost {
            version: version.to_string(),
            rootless: host["security"]["rootless"].as_bool().unwrap_or(false),
            cgroup_version: text(&host["cgroupVersion"]),
            cgroup_manager: text(&host["cgroupManager"]),
            controllers: host["cgroupControllers"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|c| c.as_str())
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default(),
            runtime: text(&host["ociRuntime"]["name"]),
            storage_driver: text(&info["store"]["graphDriverName"]),
        }
    }

    /// The limits a job's container can be given. Rootful: all. Rootless: none on cgroups v1
    /// (a user cannot be given a cgroup there); on cgroups v2, those whose controller is
    /// delegated to the user, and only under the systemd cgroup manager (with `cgroupfs`
    /// a rootless service creates no cgroup).
    pub fn limit_support(&self) -> LimitSupport {
        if !self.rootless {
            return LimitSupport::ALL;
        }
        let v2 = self.cgroup_version == "v2" && self.cgroup_manager == "systemd";
        let has = |c: &str| v2 && self.controllers.iter().any(|x| x == c);
        LimitSupport {
            cpu: has("cpu"),
            memory: has("memory"),
            pids: has("pids"),
        }
    }

    /// One line for the user: which Podman, in which mode.
    pub fn describe(&self) -> String {
        format!(
            "Podman {} ({}, cgroups {}, {}, storage {})",
            self.version,
            if self.rootless { "rootless" } else { "rootful" },
            self.cgroup_version,
            if self.runtime.is_empty() {
                "runtime unknown"
            } else {
                &self.runtime
            },
            self.storage_driver
        )
    }

    /// What a run on this service does not do as it does on Docker, each as a sentence the
    /// run prints as a warning (empty when nothing differs).
    pub fn limitations(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let s = self.limit_support();
        let missing: Vec<&str> = [("CPU", s.cpu), ("memory", s.memory), ("pids", s.pids)]
            .into_iter()
            .filter(|(_, ok)| !ok)
            .map(|(n, _)| n)
            .collect();
        if !missing.is_empty() {
            let why = if self.cgroup_version == "v1" {
                "a rootless service on cgroups v1 cannot limit anything: cgroups v1 are not \
                 delegated to users"
                    .to_string()
            } else if self.cgroup_manager != "systemd" {
                format!(
                    "a rootless service with the {} cgroup manager creates no cgroup (set \
                     cgroup_manager = \"systemd\" in containers.conf)",
                    self.cgroup_manager
                )
            } else {
                format!(
                    "the user's cgroup has only [{}] delegated; an administrator delegates the \
                     rest with `Delegate=cpu cpuset io memory pids` in \
                     /etc/systemd/system/user@.service.d/delegate.conf",
                    self.controllers.join(", ")
                )
            };
            notes.push(format!(
                "{}: jobs run without their {} limit{} ({why}); a test that forks or allocates \
                 without bound can take the whole machine. Rootful Podman or Docker apply every \
                 limit (README: Running without Docker)",
                self.describe(),
                missing.join(", "),
                if missing.len() > 1 { "s" } else { "" },
            ));
        }
        if self.storage_driver == "vfs" {
            notes.push(format!(
                "{}: the vfs storage driver copies a whole image for every container (slow, \
                 and the disk fills): set driver = \"overlay\" under [storage] in \
                 ~/.config/containers/storage.conf (kernel 5.13 or later; else add \
                 mount_program = \"/usr/bin/fuse-overlayfs\" under [storage.options.overlay]) \
                 and run `podman system reset --force` (it removes that storage's images and \
                 containers)",
                self.describe()
            ));
        }
        notes
    }
}

/// An image name as Docker shows it: Podman qualifies short names with the registry it
/// assumed (`docker.io/`, `docker.io/library/`) or, for some local images, `localhost/`.
pub fn familiar_name(name: &str) -> &str {
    ["docker.io/library/", "docker.io/", "localhost/"]
        .into_iter()
        .find_map(|prefix| name.strip_prefix(prefix).filter(|rest| !rest.is_empty()))
        .unwrap_or(name)
}

/// The URI of an import request with its `changes` split into one parameter per instruction.
/// The client library sends the instructions as one value joined by newlines, which Docker
/// parses as lines of a Dockerfile; Podman takes each `changes` value as one instruction, so
/// the first `LABEL` swallowed the rest (the base image had one label whose value held the
/// others, and no `CMD` or `ENV`). `None` for any other request.
pub fn split_changes(uri: &str) -> Option<String> {
    let (path, query) = uri.split_once('?')?;
    if !path.ends_with("/images/create") {
        return None;
    }
    let mut changed = false;
    let params: Vec<String> = query
        .split('&')
        .flat_map(|p| match p.strip_prefix("changes=") {
            Some(v) if v.to_ascii_lowercase().contains("%0a") => {
                changed = true;
                split_encoded_newlines(v)
                    .into_iter()
                    .filter(|c| !c.is_empty())
                    .map(|c| format!("changes={c}"))
                    .collect()
            }
            _ => vec![p.to_string()],
        })
        .collect();
    changed.then(|| format!("{path}?{}", params.join("&")))
}

/// `v` cut at each URL-encoded newline (`%0A` or `%0a`).
fn split_encoded_newlines(v: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = v;
    while let Some(i) = rest.find("%0A").or_else(|| rest.find("%0a")) {
        out.push(&rest[..i]);
        rest = &rest[i + 3..];
    }
    out.push(rest);
    out
}

/// Whether a daemon's error says a container name is taken (Docker: 409; Podman: 500 with
/// this text).
pub fn is_name_conflict(status: Option<u16>, message: &str) -> bool {
    status == Some(409) || (status == Some(500) && message.contains("already in use"))
}

/// Advice for a container start that failed for the service's setup, not the job's: a retry
/// cannot help, the user must change the service. `None` for other failures.
pub fn start_advice(message: &str) -> Option<String> {
    if message.contains("cgroups in hybrid mode not supported") {
        return Some(
            "the OCI runtime crun refuses this machine's hybrid cgroups (cgroups v1 with a v2 \
             hierarchy that has a controller): run the service with runc, `podman --runtime \
             runc system service ...`, or set runtime = \"runc\" under [engine] in \
             containers.conf (~/.config/containers/ for a rootless user)"
                .into(),
        );
    }
    if message.contains("setrlimit") || message.contains("error setting rlimit") {
        return Some(
            "the runtime could not set the container's open-files or processes limit (the \
             service lacks CAP_SYS_RESOURCE): set default_ulimits = [\"nofile=N:N\", \
             \"nproc=N:N\"] under [containers] in containers.conf, N at most the service's \
             own limits"
                .into(),
        );
    }
    None
}

/// Where a Podman service's socket may be, in the order tried: for an ordinary user their
/// rootless service (`$XDG_RUNTIME_DIR/podman/podman.sock`), then the rootful one; for root,
/// the rootful one.
pub fn candidate_sockets(uid: u32, xdg_runtime_dir: Option<&str>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if uid != 0 {
        let runtime = xdg_runtime_dir
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(format!("/run/user/{uid}")));
        out.push(runtime.join("podman").join("podman.sock"));
    }
    out.push(PathBuf::from(ROOTFUL_SOCKET));
    out
}

/// How to start the service whose socket is `socket`, as the advice of a failed connection.
pub fn start_service_advice(uid: u32, tried: &[PathBuf]) -> String {
    let mut lines =
        vec!["start a Podman service (swe-eval talks to its Docker-compatible API):".to_string()];
    if uid != 0 {
        lines.push(
            "  rootless, as yourself: `systemctl --user enable --now podman.socket`, or \
             `mkdir -p $XDG_RUNTIME_DIR/podman && podman system service --time=0 \
             unix://$XDG_RUNTIME_DIR/podman/podman.sock &`"
                .into(),
        );
        lines.push(
            "  (XDG_RUNTIME_DIR must be set, as a login session sets it; see README, Running \
             without Docker)"
                .into(),
        );
    }
    lines.push(format!(
        "  rootful: `sudo systemctl enable --now podman.socket`, or `sudo podman system service \
         --time=0 unix://{ROOTFUL_SOCKET} &`"
    ));
    lines.push(format!(
        "  or point DOCKER_HOST at a running service's socket (tried: {})",
        tried
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    lines.join("\n")
}

/// The user id this process runs as (the owner of `/proc/self`), 0 when unknown.
pub fn effective_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").map_or(0, |m| m.uid())
}

/// The socket path of a `unix://` endpoint.
pub fn unix_path(endpoint: &str) -> Option<&Path> {
    endpoint.strip_prefix("unix://").map(Path::new)
}

/// Why a request to Podman's own API (`GET /libpod/...`) gave no answer to read.
#[derive(Debug, thiserror::Error)]
pub enum PodmanApiError {
    /// The endpoint is neither `unix://` nor `tcp://`/`http://`.
    #[error("{endpoint}: only unix:// and tcp:// are read")]
    Endpoint {
        /// The endpoint.
        endpoint: String,
    },
    /// The exchange failed.
    #[error("GET {path} at {endpoint}: {source}")]
    Io {
        /// The endpoint.
        endpoint: String,
        /// The path asked for.
        path: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// No answer in time.
    #[error("GET {path}: no answer within {} s", timeout.as_secs())]
    Timeout {
        /// The path asked for.
        path: String,
        /// How long it was waited for.
        timeout: Duration,
    },
    /// An answer that is not a successful HTTP answer with a JSON body.
    #[error("GET {path}: {what}")]
    Answer {
        /// The path asked for.
        path: String,
        /// What was wrong with it.
        what: String,
    },
}

/// How long [`get_json`] waits for its answer.
const API_TIMEOUT: Duration = Duration::from_secs(20);

/// `GET path` on the service at `endpoint` (`unix://` or `tcp://`/`http://`), as plain
/// HTTP/1.0: the libpod endpoints the Docker client library does not know.
pub async fn get_json(endpoint: &str, path: &str) -> Result<serde_json::Value, PodmanApiError> {
    let request = format!("GET {path} HTTP/1.0\r\nHost: podman\r\n\r\n");
    let io = |source| PodmanApiError::Io {
        endpoint: endpoint.to_string(),
        path: path.to_string(),
        source,
    };
    let exchange = async {
        let mut raw = Vec::new();
        if let Some(sock) = unix_path(endpoint) {
            let mut s = tokio::net::UnixStream::connect(sock).await.map_err(io)?;
            s.write_all(request.as_bytes()).await.map_err(io)?;
            s.read_to_end(&mut raw).await.map_err(io)?;
        } else {
            let host = endpoint
                .strip_prefix("tcp://")
                .or_else(|| endpoint.strip_prefix("http://"))
                .ok_or_else(|| PodmanApiError::Endpoint {
                    endpoint: endpoint.to_string(),
                })?;
            let mut s = tokio::net::TcpStream::connect(host.trim_end_matches('/'))
                .await
                .map_err(io)?;
            s.write_all(request.as_bytes()).await.map_err(io)?;
            s.read_to_end(&mut raw).await.map_err(io)?;
        }
        Ok::<_, PodmanApiError>(raw)
    };
    let raw = tokio::time::timeout(API_TIMEOUT, exchange)
        .await
        .map_err(|_| PodmanApiError::Timeout {
            path: path.to_string(),
            timeout: API_TIMEOUT,
        })??;
    let answer = |what: String| PodmanApiError::Answer {
        path: path.to_string(),
        what,
    };
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| answer("no HTTP header in the answer".into()))?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let status = head.split_whitespace().nth(1).unwrap_or_default();
    if status != "200" {
        return Err(answer(head.lines().next().unwrap_or_default().to_string()));
    }
    serde_json::from_slice(&raw[split + 4..]).map_err(|e| answer(e.to_string()))
}

/// A resource limit of a process: soft and hard, `None` for unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rlimit {
    /// The soft limit.
    pub soft: Option<i64>,
    /// The hard limit.
    pub hard: Option<i64>,
}

/// `RLIMIT_NOFILE` and `RLIMIT_NPROC` of the process serving the socket at `endpoint` (its
/// peer's pid, then `/proc/<pid>/limits`): what a container on Docker inherits from the daemon.
/// `None` when not a local socket or not readable.
pub async fn service_rlimits(endpoint: &str) -> Option<(Rlimit, Rlimit)> {
    let sock = unix_path(endpoint)?;
    let stream = tokio::net::UnixStream::connect(sock).await.ok()?;
    let pid = stream.peer_cred().ok()?.pid()?;
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    Some((
        parse_limit(&text, "Max open files")?,
        parse_limit(&text, "Max processes")?,
    ))
}

/// One line of `/proc/<pid>/limits`.
pub fn parse_limit(text: &str, name: &str) -> Option<Rlimit> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let mut fields = line[name.len()..].split_whitespace();
    let value = |f: Option<&str>| -> Option<Option<i64>> {
        match f? {
            "unlimited" => Some(None),
            n => n.parse().ok().map(Some),
        }
    };
    Some(Rlimit {
        soft: value(fields.next())?,
        hard: value(fields.next())?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(rootless: bool, v: &str, manager: &str, controllers: &[&str]) -> PodmanHost {
        PodmanHost {
            version: "4.3.1".into(),
            rootless,
            cgroup_version: v.into(),
            cgroup_manager: manager.into(),
            controllers: controllers.iter().map(|s| s.to_string()).collect(),
            runtime: "runc".into(),
            storage_driver: "overlay".into(),
        }
    }

    #[test]
    fn limits_follow_the_mode_and_the_delegated_controllers() {
        assert_eq!(
            host(false, "v1", "cgroupfs", &[]).limit_support(),
            LimitSupport::ALL
        );
        let none = LimitSupport {
            cpu: false,
            memory: false,
            pids: false,
        };
        let v1 = host(true, "v1", "cgroupfs", &["memory", "pids"]);
        assert_eq!(v1.limit_support(), none);
        let notes = v1.limitations();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("without their CPU, memory, pids limits")
                && notes[0].contains("cgroups v1"),
            "{notes:?}"
        );
        assert_eq!(
            host(true, "v2", "cgroupfs", &["memory", "pids"]).limit_support(),
            none,
            "cgroupfs: no cgroup for a rootless service"
        );
        let v2 = host(true, "v2", "systemd", &["memory", "pids"]);
        assert_eq!(
            v2.limit_support(),
            LimitSupport {
                cpu: false,
                memory: true,
                pids: true
            }
        );
        let notes = v2.limitations();
        assert!(
            notes[0].contains("without their CPU limit (") && notes[0].contains("Delegate=cpu"),
            "{notes:?}"
        );
        assert!(host(true, "v2", "systemd", &["cpu", "memory", "pids"])
            .limitations()
            .is_empty());
        let mut vfs = host(false, "v2", "systemd", &[]);
        vfs.storage_driver = "vfs".into();
        assert!(vfs.limitations()[0].contains("driver = \"overlay\""));
    }

    #[test]
    fn info_is_read_from_the_libpod_answer() {
        let info = serde_json::json!({
            "host": {"cgroupVersion": "v1", "cgroupManager": "cgroupfs",
                     "cgroupControllers": [], "security": {"rootless": true},
                     "ociRuntime": {"name": "runc"}},
            "store": {"graphDriverName": "overlay"}
        });
        let h = PodmanHost::from_info("4.3.1", &info);
        assert_eq!(h, host(true, "v1", "cgroupfs", &[]));
        assert_eq!(
            h.describe(),
            "Podman 4.3.1 (rootless, cgroups v1, runc, storage overlay)"
        );
    }

    #[test]
    fn names_read_back_as_docker_shows_them() {
        assert_eq!(
            familiar_name("docker.io/swe-eval/base.debian-bookworm:abc"),
            "swe-eval/base.debian-bookworm:abc"
        );
        assert_eq!(
            familiar_name("docker.io/library/ubuntu:22.04"),
            "ubuntu:22.04"
        );
        assert_eq!(familiar_name("localhost/swe-eval/x:1"), "swe-eval/x:1");
        assert_eq!(
            familiar_name("127.0.0.1:5000/swe-eval/x:1"),
            "127.0.0.1:5000/swe-eval/x:1"
        );
        assert_eq!(familiar_name("swe-eval/x:1"), "swe-eval/x:1");
    }

    #[test]
    fn import_changes_go_one_per_parameter() {
        let uri = "unix://2f72756e:0/v1.41/images/create?fromSrc=-&repo=swe-eval%2Fbase%3A1\
                   &changes=LABEL+%22swe-eval%22%3D%221%22%0ACMD+%5B%22%2Fbin%2Fbash%22%5D%0AENV+LANG%3DC.UTF-8";
        assert_eq!(
            split_changes(uri).as_deref(),
            Some(
                "unix://2f72756e:0/v1.41/images/create?fromSrc=-&repo=swe-eval%2Fbase%3A1\
                 &changes=LABEL+%22swe-eval%22%3D%221%22&changes=CMD+%5B%22%2Fbin%2Fbash%22%5D\
                 &changes=ENV+LANG%3DC.UTF-8"
            )
        );
        assert_eq!(
            split_changes("unix://x:0/v1.41/images/create?fromImage=a&tag=b"),
            None
        );
        assert_eq!(split_changes("unix://x:0/v1.41/build?changes=a%0Ab"), None);
        assert_eq!(
            split_changes("unix://x:0/v1.41/images/create?changes=ENV+A%3D1"),
            None
        );
    }

    #[test]
    fn name_conflicts_and_setup_failures_are_recognised() {
        assert!(is_name_conflict(Some(409), ""));
        assert!(is_name_conflict(
            Some(500),
            "the container name \"x\" is already in use by abc"
        ));
        assert!(!is_name_conflict(Some(500), "no such image"));
        assert!(start_advice("crun: cgroups in hybrid mode not supported, drop all").is_some());
        assert!(
            start_advice("crun: setrlimit `RLIMIT_NOFILE`: Operation not permitted")
                .unwrap()
                .contains("default_ulimits")
        );
        assert!(start_advice("EOF").is_none());
    }

    #[test]
    fn sockets_are_tried_rootless_first_for_a_user() {
        assert_eq!(
            candidate_sockets(1001, Some("/run/user/1001")),
            [
                PathBuf::from("/run/user/1001/podman/podman.sock"),
                PathBuf::from(ROOTFUL_SOCKET)
            ]
        );
        assert_eq!(
            candidate_sockets(1001, None)[0],
            PathBuf::from("/run/user/1001/podman/podman.sock")
        );
        assert_eq!(
            candidate_sockets(0, Some("/run/user/0")),
            [PathBuf::from(ROOTFUL_SOCKET)]
        );
        let advice = start_service_advice(1001, &candidate_sockets(1001, None));
        assert!(advice.contains("podman system service") && advice.contains("DOCKER_HOST"));
    }

    #[test]
    fn proc_limits_lines_are_parsed() {
        let text = "Limit                     Soft Limit           Hard Limit           Units     \n\
                    Max processes             32768                32768                processes \n\
                    Max open files            1024                 unlimited            files     \n";
        assert_eq!(
            parse_limit(text, "Max processes"),
            Some(Rlimit {
                soft: Some(32768),
                hard: Some(32768)
            })
        );
        assert_eq!(
            parse_limit(text, "Max open files"),
            Some(Rlimit {
                soft: Some(1024),
                hard: None
            })
        );
        assert_eq!(parse_limit(text, "Max locked memory"), None);
    }
}
