//! A Swarm manager whose daemon restarts under a live run.
//!
//! The machine's own daemon cannot be restarted under the test suite (other tests use it), so
//! the manager here is a second `dockerd` in a network namespace of the test's own (its own
//! data root, exec root, socket and cgroup parent; `--bridge none --iptables=false`; a dummy
//! interface on an address of the test's own, 10.214.N.2, to advertise), made a single-node
//! swarm, which also runs the jobs. The offline base image is copied to it from the machine's
//! daemon (or bootstrapped by the run when the machine has none); the run builds the mini
//! benchmark's images there, as on any manager.
//!
//! The mini benchmark runs against it (`DOCKER_HOST` its socket). With a few verdicts written
//! and jobs in flight, the manager's daemon is restarted (SIGTERM, as `systemctl restart
//! docker`, then started again on the same data root): the swarm comes back from its own
//! state, the jobs in flight are lost with the daemon's containers. The run goes on or ends with problems; run again with the
//! same run id, it keeps every verdict written before the restart byte for byte, gives every
//! prediction one verdict, all as expected, and leaves no service, config or job container on
//! the manager. A guard takes the daemon, its namespace and its files down, also on failure.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use swe_eval::images::base_image_name;
use swe_eval_core::spec::DebianRelease;

use crate::common::bin;
use crate::common::{assert_mini_ok, finish, poll, run_files, verdict_files, wait_for, Finished};
use crate::daemons::{
    can_start_namespaced_daemons, kill_leftovers, lines, must, run, spawn_ns_dockerd, stop_daemon,
    unmount_leftovers,
};

/// A `dockerd` in a network namespace of its own, a single-node swarm manager.
struct Manager {
    ns: String,
    ip: String,
    dir: PathBuf,
    _tmp: tempfile::TempDir,
    cgroup_parent: String,
    daemon: Option<Child>,
}

impl Manager {
    fn host(&self) -> String {
        format!("unix://{}", self.dir.join("d.sock").display())
    }

    fn docker(&self, args: &[&str]) -> Result<String, String> {
        let host = self.host();
        let mut all = vec!["-H", host.as_str()];
        all.extend_from_slice(args);
        run("docker", &all)
    }

    fn start(&mut self) {
        self.daemon = Some(spawn_ns_dockerd(
            &self.ns,
            &self.dir,
            &self.host(),
            &self.cgroup_parent,
        ));
        let up = poll(Duration::from_secs(180), Duration::from_millis(500), || {
            self.docker(&["version"]).ok()
        });
        if up.is_none() {
            let log = std::fs::read_to_string(self.dir.join("dockerd.log")).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            panic!(
                "the manager's daemon did not answer within 180 s; its log ends:\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
    }

    /// Stops the daemon (SIGTERM, as `systemctl stop docker`; SIGKILL after 30 s).
    fn stop(&mut self) {
        if let Some(c) = self.daemon.take() {
            stop_daemon(c);
        }
    }

    /// Restarts the daemon on the same data root, as `systemctl restart docker`.
    fn restart(&mut self) {
        self.stop();
        self.start();
    }

    fn node_ready(&self) -> bool {
        self.docker(&["node", "ls", "--format", "{{.Status}}"])
            .is_ok_and(|s| s.trim() == "Ready")
    }

    fn teardown(&mut self) {
        if self.daemon.is_some() {
            let _ = self.docker(&["swarm", "leave", "--force"]);
        }
        self.stop();
        kill_leftovers(&self.dir, &self.cgroup_parent);
        unmount_leftovers(&self.dir);
        let _ = run("ip", &["netns", "del", &self.ns]);
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        self.teardown();
    }
}

fn manager() -> Manager {
    crate::daemons::reap_dead_clusters();
    let n = std::process::id() % 200 + 20;
    let tag = format!("swr{}", std::process::id() % 100_000);
    let tmp = tempfile::Builder::new()
        .prefix("sr")
        .tempdir_in("/tmp")
        .unwrap();
    crate::daemons::mark_owner(tmp.path());
    let mut m = Manager {
        ns: format!("{tag}-ns"),
        ip: format!("10.214.{n}.2"),
        dir: tmp.path().to_path_buf(),
        _tmp: tmp,
        cgroup_parent: format!("/{tag}-manager"),
        daemon: None,
    };
    must("ip", &["netns", "add", &m.ns]);
    for args in [
        vec!["link", "add", "d0", "type", "veth", "peer", "name", "d1"],
        vec!["addr", "add", &format!("{}/24", m.ip), "dev", "d0"],
        vec!["link", "set", "d0", "up"],
        vec!["link", "set", "d1", "up"],
        vec!["link", "set", "lo", "up"],
    ] {
        let mut all = vec!["-n", m.ns.as_str()];
        all.extend(args.iter().copied());
        must("ip", &all);
    }
    m.start();
    m.docker(&["swarm", "init", "--advertise-addr", &m.ip])
        .unwrap_or_else(|e| panic!("swarm init: {e}"));
    wait_for("the manager ready", Duration::from_secs(60), || {
        m.node_ready().then_some(())
    });
    m
}

fn spawn_run(dir: &Path, run_id: &str, host: &str) -> Child {
    Command::new(bin())
        .args(["run", "--engine", "swarm", "--run-id", run_id])
        .current_dir(dir)
        .env("DOCKER_HOST", host)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn swe-eval")
}

#[test]
fn a_manager_restarted_mid_run_loses_nothing_and_the_rerun_completes() {
    if !can_start_namespaced_daemons("namespaces, a second dockerd") {
        return;
    }
    let mut m = manager();
    // The offline base image, from the machine's daemon when it has it (else the run
    // bootstraps it from Debian's mirror, as on any new manager).
    let base = base_image_name(DebianRelease::Bookworm);
    if run("docker", &["image", "inspect", &base]).is_ok() {
        let copy = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "set -o pipefail; docker save {base} | docker -H {} load",
                m.host()
            ))
            .output()
            .unwrap();
        assert!(
            copy.status.success(),
            "base image copied: {}",
            String::from_utf8_lossy(&copy.stderr)
        );
    }
    let work = tempfile::tempdir().unwrap();
    let results = work.path().join("results");
    let host = m.host();
    let in_flight = |m: &Manager| {
        lines(m.docker(&[
            "service",
            "ls",
            "-q",
            "--filter",
            "label=swe-eval.run-id=restart",
        ]))
    };

    // 1. The manager restarts with verdicts written and jobs in flight.
    let child = spawn_run(work.path(), "restart", &host);
    wait_for(
        "a few verdicts and a job in flight",
        Duration::from_secs(900),
        || (verdict_files(&results, "restart") >= 3 && !in_flight(&m).is_empty()).then_some(()),
    );
    let kept: Vec<(PathBuf, Vec<u8>)> = run_files(&results, "restart", "verdict.json")
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    m.restart();
    wait_for("the swarm back", Duration::from_secs(120), || {
        m.node_ready().then_some(())
    });
    let first: Finished = finish(child);
    assert!(
        kept.len() < 22,
        "the manager restarted mid-run ({} verdicts written)",
        kept.len()
    );

    // 2. Run again with the same run id: nothing lost, everything once, all as expected.
    let again = finish(spawn_run(work.path(), "restart", &host));
    assert_mini_ok(&again);
    for (p, bytes) in &kept {
        assert_eq!(
            &std::fs::read(p).unwrap(),
            bytes,
            "{} kept as written before the restart",
            p.display()
        );
    }
    assert_eq!(verdict_files(&results, "restart"), 22, "one verdict each");
    assert!(
        first.code == 0 || first.code == 3,
        "the run under the restart ended with its verdicts or problems, not a failure: {}\n{}",
        first.stdout,
        first.stderr
    );

    // 3. Nothing of the runs left on the manager.
    assert!(in_flight(&m).is_empty(), "no service of the run left");
    assert!(lines(m.docker(&["config", "ls", "-q", "--filter", "label=swe-eval"])).is_empty());
    let jobs_left = |m: &Manager| -> Vec<String> {
        lines(m.docker(&["ps", "-a", "--format", "{{.Names}}"]))
            .into_iter()
            .filter(|n| n.starts_with("swe-eval-restart"))
            .collect()
    };
    let left = poll(Duration::from_secs(60), Duration::from_millis(500), || {
        let left = jobs_left(&m);
        left.is_empty().then_some(left)
    })
    .unwrap_or_else(|| jobs_left(&m));
    assert!(
        left.is_empty(),
        "job containers left on the manager: {left:?}"
    );
}
