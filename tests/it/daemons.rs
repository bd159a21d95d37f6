//! Docker daemons and clusters of the tests' own, for the tests that restart, kill or
//! cluster a daemon without touching the machine's one: [`PrivateDaemon`] (a `dockerd` on
//! private paths and a bridge of its own), [`spawn_ns_dockerd`] (a `dockerd` in a network
//! namespace), [`Cluster`] (the machine's daemon as a Swarm manager and a namespaced worker,
//! with a registry in the namespace reached through a [`Forward`]), and the teardown helpers
//! that leave nothing of them behind. Commands run through [`run`] and [`must`].

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::{poll_until, prerequisite, require, require_program, wait_for};
use crate::tasks;

/// Whether this test may start dockerds of its own in network namespaces: root, docker,
/// dockerd, ip and nsenter. Each one missing is said, and is a failure in CI (`require`).
pub(crate) fn can_start_namespaced_daemons(why: &str) -> bool {
    let root = prerequisite(
        &format!("root ({why})"),
        run("id", &["-u"]).and_then(|u| {
            if u == "0" {
                Ok(())
            } else {
                Err(format!("uid {u}"))
            }
        }),
    );
    root.is_some()
        && require_program("docker")
        && require_program("dockerd")
        && require(
            "ip and nsenter",
            run("ip", &["-V"]).is_ok() && run("nsenter", &["--version"]).is_ok(),
        )
}

/// Runs `program args`; its standard output, or its standard error as the failure.
pub(crate) fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(format!(
            "{program} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

pub(crate) fn must(program: &str, args: &[&str]) -> String {
    run(program, args).unwrap_or_else(|e| panic!("{e}"))
}

pub(crate) fn lines(s: Result<String, String>) -> BTreeSet<String> {
    s.unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

/// A TCP forward from a host loopback port to an address in the namespace.
pub(crate) struct Forward {
    stop: Arc<AtomicBool>,
    port: u16,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Forward {
    pub(crate) fn start(listener: TcpListener, to: SocketAddr) -> Forward {
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let halt = stop.clone();
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if halt.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(down) = conn else { continue };
                let Ok(up) = TcpStream::connect_timeout(&to, Duration::from_secs(5)) else {
                    continue;
                };
                for (mut a, mut b) in [
                    (down.try_clone().unwrap(), up.try_clone().unwrap()),
                    (up, down),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut a, &mut b);
                        let _ = b.shutdown(std::net::Shutdown::Write);
                    });
                }
            }
        });
        Forward {
            stop,
            port,
            thread: Some(thread),
        }
    }
}

impl Drop for Forward {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The cluster and everything the test made for it; `Drop` takes it all down.
pub(crate) struct Cluster {
    pub(crate) ns: String,
    pub(crate) host_if: String,
    pub(crate) host_ip: String,
    pub(crate) worker_ip: String,
    pub(crate) dir: PathBuf,
    pub(crate) _tmp: tempfile::TempDir,
    pub(crate) cgroup_parent: String,
    pub(crate) worker: Option<Child>,
    pub(crate) registry: Option<Child>,
    pub(crate) forward: Option<Forward>,
    pub(crate) port: u16,
    /// The machine's daemon was made a manager by this test.
    pub(crate) swarm: bool,
    pub(crate) gwbridge_before: bool,
}

impl Cluster {
    pub(crate) fn host(&self) -> String {
        format!("unix://{}", self.dir.join("d.sock").display())
    }

    pub(crate) fn worker_docker(&self, args: &[&str]) -> Result<String, String> {
        let host = self.host();
        let mut all = vec!["-H", host.as_str()];
        all.extend_from_slice(args);
        run("docker", &all)
    }

    pub(crate) fn start_worker(&mut self) {
        self.worker = Some(spawn_ns_dockerd(
            &self.ns,
            &self.dir,
            &self.host(),
            &self.cgroup_parent,
        ));
        wait_for("the worker's daemon", Duration::from_secs(60), || {
            self.worker_docker(&["version"]).ok()
        });
    }

    /// Kills the worker's daemon at once (SIGKILL), as a machine that dies.
    pub(crate) fn kill_worker(&mut self) {
        if let Some(mut c) = self.worker.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Stops the worker's daemon (SIGTERM, then SIGKILL after 30 s).
    pub(crate) fn stop_worker(&mut self) {
        if let Some(c) = self.worker.take() {
            stop_daemon(c);
        }
    }

    pub(crate) fn nodes_ready(&self) -> Option<usize> {
        let out = run("docker", &["node", "ls", "--format", "{{.Status}}"]).ok()?;
        let ready = out.lines().filter(|l| *l == "Ready").count();
        Some(ready)
    }

    pub(crate) fn worker_node_id(&self) -> String {
        must(
            "docker",
            &["-H", &self.host(), "info", "--format", "{{.Swarm.NodeID}}"],
        )
    }

    pub(crate) fn teardown(&mut self) {
        if self.worker.is_some() {
            let _ = self.worker_docker(&["swarm", "leave", "--force"]);
        }
        if self.swarm {
            let _ = run("docker", &["swarm", "leave", "--force"]);
            self.swarm = false;
        }
        self.stop_worker();
        if let Some(mut r) = self.registry.take() {
            let _ = r.kill();
            let _ = r.wait();
        }
        self.forward = None;
        kill_leftovers(&self.dir, &self.cgroup_parent);
        unmount_leftovers(&self.dir);
        if !self.gwbridge_before {
            let _ = run("docker", &["network", "rm", "docker_gwbridge"]);
        }
        let _ = run("ip", &["link", "del", &self.host_if]);
        let _ = run("ip", &["netns", "del", &self.ns]);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// Brings the cluster up; the returned guard owns it whatever happens next.
pub(crate) fn cluster() -> Cluster {
    let n = std::process::id() % 200 + 20;
    let tag = format!("swe{}", std::process::id() % 100_000);
    let tmp = tempfile::Builder::new()
        .prefix("sw")
        .tempdir_in("/tmp")
        .unwrap();
    mark_owner(tmp.path());
    let gwbridge_before = run("docker", &["network", "inspect", "docker_gwbridge"]).is_ok();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut c = Cluster {
        ns: format!("{tag}-ns"),
        host_if: format!("{tag}h"),
        host_ip: format!("{CLUSTER_NET}{n}.1"),
        worker_ip: format!("{CLUSTER_NET}{n}.2"),
        dir: tmp.path().to_path_buf(),
        _tmp: tmp,
        cgroup_parent: format!("/{tag}-worker"),
        worker: None,
        registry: None,
        forward: None,
        port,
        swarm: false,
        gwbridge_before,
    };
    let peer = format!("{tag}n");
    must("ip", &["netns", "add", &c.ns]);
    must(
        "ip",
        &[
            "link", "add", &c.host_if, "type", "veth", "peer", "name", &peer, "netns", &c.ns,
        ],
    );
    must(
        "ip",
        &[
            "addr",
            "add",
            &format!("{}/30", c.host_ip),
            "dev",
            &c.host_if,
        ],
    );
    must("ip", &["link", "set", &c.host_if, "up"]);
    for args in [
        vec!["addr", "add", &format!("{}/30", c.worker_ip), "dev", &peer],
        vec!["link", "set", &peer, "up"],
        vec!["link", "set", "lo", "up"],
    ] {
        let mut all = vec!["-n", c.ns.as_str()];
        all.extend(args.iter().copied());
        must("ip", &all);
    }
    c.start_worker();

    // The registry, in the namespace; the manager reaches it through the forward.
    let cfg = c.dir.join("registry.yml");
    std::fs::write(
        &cfg,
        format!(
            "version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 0.0.0.0:{port}\n",
            c.dir.join("registry").display()
        ),
    )
    .unwrap();
    let registry_bin = if Path::new("/usr/bin/docker-registry").exists() {
        "/usr/bin/docker-registry"
    } else {
        "docker-registry"
    };
    c.registry = Some(
        Command::new("nsenter")
            .arg(format!("--net=/var/run/netns/{}", c.ns))
            .args([registry_bin, "serve"])
            .arg(&cfg)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start docker-registry (scripts/setup.sh --tests installs it)"),
    );
    c.forward = Some(Forward::start(
        listener,
        format!("{}:{port}", c.worker_ip).parse().unwrap(),
    ));
    wait_for("the registry", Duration::from_secs(30), || {
        let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        s.write_all(b"GET /v2/ HTTP/1.0\r\n\r\n").ok()?;
        let mut answer = String::new();
        s.read_to_string(&mut answer).ok()?;
        answer
            .starts_with("HTTP/1.0 200")
            .then_some(())
            .or_else(|| answer.starts_with("HTTP/1.1 200").then_some(()))
    });

    must(
        "docker",
        &[
            "swarm",
            "init",
            "--advertise-addr",
            &c.host_ip,
            "--listen-addr",
            &format!("{}:2377", c.host_ip),
        ],
    );
    c.swarm = true;
    let token = must("docker", &["swarm", "join-token", "-q", "worker"]);
    c.worker_docker(&[
        "swarm",
        "join",
        "--token",
        &token,
        "--advertise-addr",
        &c.worker_ip,
        "--listen-addr",
        &format!("{}:2377", c.worker_ip),
        &format!("{}:2377", c.host_ip),
    ])
    .unwrap_or_else(|e| panic!("worker join: {e}"));
    wait_for("two ready nodes", Duration::from_secs(60), || {
        (c.nodes_ready()? == 2).then_some(())
    });
    c
}

/// The file in a test daemon's folder naming the test process that made it.
const OWNER: &str = "owner";

/// The first address part of the clusters' veths (`10.213.<n>.1` and `.2`).
const CLUSTER_NET: &str = "10.213.";

/// Marks `dir`, a test daemon's folder, as this test process's, so that a later run can tell
/// it was left by a dead one ([`reap_dead_clusters`]).
pub(crate) fn mark_owner(dir: &Path) {
    std::fs::write(dir.join(OWNER), std::process::id().to_string()).unwrap();
}

/// The tags (`pid % 100000`) of the test binaries alive on this machine: processes whose
/// executable is a cargo test binary named `it-<hash>`. A cluster or namespace whose tag is not
/// among them was left by a test process that died (SIGKILL, a machine stopped mid-run).
fn live_test_tags() -> BTreeSet<u32> {
    let mut tags = BTreeSet::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return tags;
    };
    for e in entries.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let exe = std::fs::read_link(e.path().join("exe")).unwrap_or_default();
        let name = exe
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        if name.starts_with("it-") {
            tags.insert(pid % 100_000);
        }
    }
    tags
}

/// The tag in a name the tests give their namespaces, veths and cgroups (`swe<T>-ns`,
/// `swe<T>h`, `/swe<T>-worker`; `swr`: the manager restart test's, `swi`: the image set's), or
/// `None` for any other name.
fn test_tag(name: &str) -> Option<u32> {
    let rest = ["swe", "swr", "swi"]
        .iter()
        .find_map(|p| name.strip_prefix(p))?;
    let digits = ["-ns", "h", "-worker", "-manager", "-daemon"]
        .iter()
        .find_map(|x| rest.strip_suffix(x))?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// Takes down what a cluster test that died left behind, and only that: the machine's daemon
/// leaves a swarm whose advertised address sits on a test's veth of a dead tag (or on no link
/// at all, the veth gone with it), and the dead tags' namespaces, veths, worker cgroups and
/// temporary daemon folders go. A swarm of anyone else (any other address) is never touched.
/// Said on standard error, so a CI log shows what was reaped.
pub(crate) fn reap_dead_clusters() {
    let live = live_test_tags();
    let dead = |name: &str| test_tag(name).is_some_and(|t| !live.contains(&t));
    let links: Vec<(String, String)> = run("ip", &["-br", "addr"])
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let name = f.next()?.split('@').next()?.to_string();
            Some(f.skip(1).map(move |a| (name.clone(), a.to_string())))
        })
        .flatten()
        .collect();
    let addr = run("docker", &["info", "--format", "{{.Swarm.NodeAddr}}"]).unwrap_or_default();
    let state = run("docker", &["info", "--format", "{{.Swarm.LocalNodeState}}"]);
    if state.as_deref() == Ok("active") && addr.starts_with(CLUSTER_NET) {
        let on = links
            .iter()
            .find(|(_, a)| a.split('/').next() == Some(addr.as_str()))
            .map(|(l, _)| l.as_str());
        if on.is_none_or(dead) {
            eprintln!(
                "reaping a swarm a dead test left on the machine's daemon (advertised {addr}, \
                 on {})",
                on.unwrap_or("no link")
            );
            let _ = run("docker", &["swarm", "leave", "--force"]);
            let _ = run("docker", &["network", "rm", "docker_gwbridge"]);
        }
    }
    for ns in lines(run("ip", &["netns", "list"])) {
        let Some(ns) = ns.split_whitespace().next() else {
            continue;
        };
        if !dead(ns) {
            continue;
        }
        eprintln!("reaping namespace {ns}, left by a dead test");
        for pid in lines(run("ip", &["netns", "pids", ns])) {
            let _ = run("kill", &["-KILL", &pid]);
        }
        let _ = run("ip", &["netns", "del", ns]);
    }
    for (link, _) in &links {
        if link.ends_with('h') && dead(link) {
            let _ = run("ip", &["link", "del", link]);
        }
    }
    // The daemons' folders in /tmp whose owning test (its `owner` file) is dead.
    if let Ok(entries) = std::fs::read_dir("/tmp") {
        for e in entries.flatten() {
            let dir = e.path();
            let Ok(owner) = std::fs::read_to_string(dir.join(OWNER)) else {
                continue;
            };
            let Ok(pid) = owner.trim().parse::<u32>() else {
                continue;
            };
            if !live.contains(&(pid % 100_000)) {
                eprintln!("reaping {}, a dead test's daemon folder", dir.display());
                kill_processes_of(&dir);
                unmount_leftovers(&dir);
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
    }
    // The cgroups of dead tags, under whichever controllers have them.
    let cgroups: BTreeSet<String> = CONTROLLERS
        .iter()
        .filter_map(|ctl| std::fs::read_dir(Path::new("/sys/fs/cgroup").join(ctl)).ok())
        .flat_map(|children| children.flatten())
        .map(|c| c.file_name().to_string_lossy().to_string())
        .filter(|name| dead(name))
        .collect();
    for name in cgroups {
        kill_cgroups(&format!("/{name}"));
    }
}

/// Starts a `dockerd` in network namespace `ns` with everything of its own under `dir` (data
/// root, exec root, pid file, log `dockerd.log`), listening on `host`, its containers under
/// `cgroup_parent`, no bridge and no iptables.
pub(crate) fn spawn_ns_dockerd(ns: &str, dir: &Path, host: &str, cgroup_parent: &str) -> Child {
    let d = dir.display().to_string();
    let log = std::fs::File::options()
        .create(true)
        .append(true)
        .open(dir.join("dockerd.log"))
        .unwrap();
    Command::new("nsenter")
        .arg(format!("--net=/var/run/netns/{ns}"))
        .arg("dockerd")
        .args(["--data-root", &format!("{d}/data")])
        .args(["--exec-root", &format!("{d}/exec")])
        .args(["--pidfile", &format!("{d}/dockerd.pid")])
        .args(["-H", host])
        .args(["--bridge", "none", "--iptables=false", "--ip-masq=false"])
        .args(["--cgroup-parent", cgroup_parent])
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("start a dockerd in the test's namespace")
}

/// Stops a daemon as `systemctl stop docker` does: SIGTERM, then SIGKILL after 30 s.
pub(crate) fn stop_daemon(mut c: Child) {
    let _ = run("kill", &["-TERM", &c.id().to_string()]);
    if poll_until(Duration::from_secs(30), || {
        matches!(c.try_wait(), Ok(Some(_)))
    }) {
        return;
    }
    let _ = c.kill();
    let _ = c.wait();
}

/// Processes a namespaced daemon whose files are under `dir` left behind (containerd, shims,
/// container processes), and its cgroups under `cgroup_parent`.
pub(crate) fn kill_leftovers(dir: &Path, cgroup_parent: &str) {
    kill_processes_of(dir);
    kill_cgroups(cgroup_parent);
}

/// Kills every process whose command line names `dir`.
fn kill_processes_of(dir: &Path) {
    let marker = dir.display().to_string();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if !name.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&cmdline).contains(&marker) {
                let _ = run("kill", &["-KILL", &name]);
            }
        }
    }
}

/// The cgroup controllers the tests' daemons leave cgroups under.
const CONTROLLERS: [&str; 10] = [
    "pids", "memory", "cpu", "cpuacct", "cpuset", "blkio", "devices", "freezer", "systemd",
    "unified",
];

/// Kills the processes in the child cgroups of `cgroup_parent` and removes them and it.
fn kill_cgroups(cgroup_parent: &str) {
    for ctl in CONTROLLERS {
        let root = Path::new("/sys/fs/cgroup")
            .join(ctl)
            .join(cgroup_parent.trim_start_matches('/'));
        let Ok(children) = std::fs::read_dir(&root) else {
            continue;
        };
        for c in children.flatten().filter(|c| c.path().is_dir()) {
            let procs = std::fs::read_to_string(c.path().join("cgroup.procs")).unwrap_or_default();
            for pid in procs.split_whitespace() {
                let _ = run("kill", &["-KILL", pid]);
            }
            std::thread::sleep(Duration::from_millis(100));
            let _ = std::fs::remove_dir(c.path());
        }
        let _ = std::fs::remove_dir(&root);
    }
}

/// Mounts a namespaced daemon made under `dir` (its data root, namespace files) and left
/// when it stopped: without this the folder could not be removed.
pub(crate) fn unmount_leftovers(dir: &Path) {
    let marker = dir.display().to_string();
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut points: Vec<&str> = info
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|p| p.starts_with(&marker))
        .collect();
    // Deepest first.
    points.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for p in points {
        let _ = run("umount", &["-l", p]);
    }
}

/// A Docker daemon of the test's own (own socket, data root and exec root), so restarting it
/// disturbs no other test or user of the machine's daemon. Stopped and removed when dropped,
/// whatever the test's outcome. One at a time in this process (its folder and bridge are named
/// after the process): a second test that wants one waits for the first to drop it.
pub(crate) struct PrivateDaemon {
    root: PathBuf,
    pub(crate) host: String,
    child: Option<std::process::Child>,
    /// Released after `Drop` has stopped the daemon (fields drop after it).
    _turn: std::sync::MutexGuard<'static, ()>,
}

/// Held by the [`PrivateDaemon`] of this process while it lives.
static PRIVATE_DAEMON_TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl PrivateDaemon {
    /// Starts one, or `None` (through the skip helper, which fails the test in CI) when this
    /// machine cannot.
    pub(crate) fn start() -> Option<PrivateDaemon> {
        crate::common::prerequisite("a private dockerd (needs root)", Self::try_start())
    }

    pub(crate) fn try_start() -> Result<PrivateDaemon, String> {
        let have = Command::new("dockerd")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !have {
            return Err("dockerd is not installed".into());
        }
        let turn = PRIVATE_DAEMON_TURN
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        // A short path: the socket's path must fit in sun_path.
        let root = PathBuf::from(format!("/tmp/swe-eval-dockerd-{}", std::process::id()));
        std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
        let host = format!("unix://{}/docker.sock", root.display());
        let mut d = PrivateDaemon {
            root,
            host,
            child: None,
            _turn: turn,
        };
        if !d.launch() {
            return Err(format!(
                "it did not start; its log:\n{}",
                std::fs::read_to_string(d.root.join("dockerd.log")).unwrap_or_default()
            ));
        }
        Ok(d)
    }

    /// The private daemon's bridge (at most 15 characters, as Linux wants).
    pub(crate) fn bridge(&self) -> String {
        format!("swebr{}", std::process::id() % 1_000_000_000)
    }

    /// Creates the private bridge when it is not there yet.
    pub(crate) fn ensure_bridge(&self) -> bool {
        let name = self.bridge();
        let ip = |args: &[&str]| {
            Command::new("ip")
                .args(args)
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if ip(&["link", "show", &name]) {
            return true;
        }
        ip(&["link", "add", &name, "type", "bridge"])
            && ip(&["addr", "add", "172.31.250.1/24", "dev", &name])
            && ip(&["link", "set", &name, "up"])
    }

    /// Starts dockerd (as scripts/ensure-docker.sh does, on private paths) and waits for it.
    pub(crate) fn launch(&mut self) -> bool {
        if !self.ensure_bridge() {
            eprintln!("private dockerd: cannot create bridge {}", self.bridge());
            return false;
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.root.join("dockerd.log"))
            .unwrap();
        let r = &self.root;
        let child = Command::new("dockerd")
            .arg(format!("--host={}", self.host))
            .arg(format!("--data-root={}", r.join("data").display()))
            .arg(format!("--exec-root={}", r.join("exec").display()))
            .arg(format!("--pidfile={}", r.join("docker.pid").display()))
            // A bridge of its own: with `--bridge=none` dockerd deletes the host's `docker0`
            // at start, which breaks every network-using build of the machine's daemon.
            .arg(format!("--bridge={}", self.bridge()))
            .args(["--iptables=false", "--ip6tables=false"])
            // Containers of a stopping daemon are killed after 1 s, not 15.
            .arg("--shutdown-timeout=1")
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn();
        let Ok(child) = child else { return false };
        self.child = Some(child);
        poll_until(Duration::from_secs(60), || {
            tasks::docker(
                Some(&self.host),
                &["info", "--format", "{{.ServerVersion}}"],
            )
            .is_some_and(|o| o.status.success())
        })
    }

    /// SIGTERM, as a service manager stops the daemon; waits for it to exit.
    pub(crate) fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
            let stopped = poll_until(Duration::from_secs(30), || {
                c.try_wait().ok().flatten().is_some()
            });
            if !stopped {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }

    /// Copies an image from the machine's daemon.
    pub(crate) fn load_image(&self, image: &str) {
        let mut save = Command::new("docker")
            .args(["save", image])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let load = Command::new("docker")
            .env("DOCKER_HOST", &self.host)
            .args(["load", "-q"])
            .stdin(save.stdout.take().unwrap())
            .output()
            .unwrap();
        assert!(save.wait().unwrap().success(), "docker save {image} failed");
        assert!(load.status.success(), "{}", tasks::text(&load));
    }
}

impl Drop for PrivateDaemon {
    fn drop(&mut self) {
        let _ = Command::new("docker")
            .env("DOCKER_HOST", &self.host)
            .args(["rm", "-f", "-v"])
            .args(
                tasks::docker(Some(&self.host), &["ps", "-aq"])
                    .map(|o| {
                        String::from_utf8_lossy(&o.stdout)
                            .lines()
                            .map(str::to_string)
                            .collect::<Vec<_>>()
                    })
                    .unwrap_or_default(),
            )
            .output();
        self.stop();
        // Mounts a stopped daemon may leave under its roots, then the folder.
        let _ = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "grep -o ' {0}/[^ ]*' /proc/mounts | sort -r | xargs -r -n1 umount -l",
                self.root.display()
            ))
            .status();
        let _ = std::fs::remove_dir_all(&self.root);
        let _ = Command::new("ip")
            .args(["link", "del", &self.bridge()])
            .output();
    }
}

#[test]
fn only_the_tests_own_names_carry_a_tag() {
    assert_eq!(test_tag("swe6450-ns"), Some(6450));
    assert_eq!(test_tag("swr12-ns"), Some(12));
    assert_eq!(test_tag("swe6450h"), Some(6450));
    assert_eq!(test_tag("swe6450-worker"), Some(6450));
    assert_eq!(test_tag("swr7-manager"), Some(7));
    assert_eq!(test_tag("swi31-daemon"), Some(31));
    for other in [
        "swe-ns",
        "swe6450",
        "eth0",
        "swexh",
        "docker_gwbridge",
        "sweh",
        "swe64a0-ns",
        "swe-eval",
        "swe-eval-jobs",
        "swx12-ns",
    ] {
        assert_eq!(test_tag(other), None, "{other}");
    }
    // The running test binary is among the live ones, so nothing of this process is reaped.
    assert!(live_test_tags().contains(&(std::process::id() % 100_000)));
}
