//! A real two-node Docker Swarm on one machine: `swe-eval run` and `swe-eval serve` with
//! `--engine swarm` across it.
//!
//! The manager is the machine's Docker daemon; the worker is a second `dockerd` that this test
//! starts in a network namespace of its own (its own data root, exec root, pid file, socket
//! and cgroup parent; `--bridge none --iptables=false`), joined to the host by a veth pair on
//! addresses of the test's own (10.213.N.0/30). A local registry (Debian's `docker-registry`)
//! runs in the namespace on port P; the worker reaches it at 127.0.0.1:P (its own loopback),
//! the manager through a forward from its loopback 127.0.0.1:P that the test runs: loopback
//! registries are trusted by every daemon, so neither daemon needs restarting or configuring.
//!
//! The test runs the mini benchmark with both nodes up and kills the client (`swe-eval`,
//! SIGKILL) mid-run, then runs it again with the same run id (the verdicts written before are
//! kept, the jobs in flight reaped and redone once, every verdict as expected, jobs on both
//! nodes); then one job whose files reach it inline and through Swarm configs (sizes at and
//! over each limit); then probes limits and network side by side with plain containers (the
//! same CPU, memory and pids limits, no route out without network, the bridge with it, the
//! OOM killer); then `swe-eval serve --engine swarm` under the GRPO-shaped loop of
//! clients/python/examples/grpo_loop.py, the server killed (SIGKILL) mid-step and started again
//! on its address, and beside it the mini benchmark again, killing the worker's daemon while
//! jobs of both run on it (the run completes with every verdict as expected, the lost jobs
//! retried; the loop completes with every sample answered once per step, the verdict `run`
//! gives or masked as the infrastructure's, never another). Then
//! nothing of the runs may be left: no service, config, container, hold or registry name on the
//! manager, no container on the worker (restarted, it cleans up), and the worker holds only
//! images pulled from the registry (its cache). The cluster is torn down (swarm left on both
//! daemons, the worker's daemon stopped, its processes and cgroups gone, namespace and link
//! removed) by a guard, also when the test fails; the machine's daemon is never left in swarm
//! mode. It refuses to start when that daemon already is in a swarm.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use swe_eval::engine::{Engine, FileIn, JobSpec, Limits, SwarmEngine, SwarmOptions};
use swe_eval::images::base_image_name;
use swe_eval_core::spec::DebianRelease;

use crate::client;
use crate::common::{
    assert_mini_ok, assert_mini_verdicts, bin, finish, poll, prerequisite, require, run_files,
    verdict_files, wait_for,
};
use crate::daemons::{can_start_namespaced_daemons, cluster, lines, must, run, Cluster};
use crate::serve::Server;

fn spawn_run(dir: &Path, run_id: &str, registry: &str) -> Child {
    Command::new(bin())
        .args([
            "run",
            "--engine",
            "swarm",
            "--registry",
            registry,
            "--run-id",
            run_id,
        ])
        .current_dir(dir)
        .env_remove("DOCKER_HOST")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn swe-eval")
}

/// The node lines (`node <host> (<id>)`) of every job log of a run: the node ids.
fn job_nodes(results: &Path, run_id: &str) -> Vec<String> {
    let mut nodes = Vec::new();
    for p in run_files(results, run_id, "run_instance.log") {
        let text = std::fs::read_to_string(&p).unwrap();
        for l in text.lines().filter_map(|l| l.strip_prefix("node ")) {
            if let Some(id) = l.rsplit_once('(').map(|(_, id)| id.trim_end_matches(')')) {
                nodes.push(id.to_string());
            }
        }
    }
    nodes
}

/// Prints (never asserts) the median setup (submit to start), run and teardown of a run's
/// jobs, for the figures in docs/benchmarks.md.
fn print_timings(results: &Path, run_id: &str) {
    let mut rows: Vec<[f64; 3]> = Vec::new();
    for p in run_files(results, run_id, "run_instance.log") {
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        let Some(t) = text.lines().find_map(|l| l.strip_prefix("timings: setup ")) else {
            continue;
        };
        let num = |s: &str| s.trim_end_matches(['s', ';']).parse::<f64>().unwrap_or(0.0);
        let w: Vec<&str> = t.split_whitespace().collect();
        rows.push([num(w[0]), num(w[2]), num(w[4])]);
    }
    let median = |k: usize| {
        let mut v: Vec<f64> = rows.iter().map(|r| r[k]).collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    eprintln!(
        "{run_id}: {} jobs, median setup (submit to start) {:.2} s, run {:.2} s, teardown {:.3} s",
        rows.len(),
        median(0),
        median(1),
        median(2)
    );
}

/// Runs one job through the Swarm engine with a file at the inline limit, one just over it
/// and one of three config chunks; the job prints their SHA-256 sums.
fn check_inputs(registry: &str) {
    use sha2::Digest;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let image = base_image_name(DebianRelease::Bookworm);
    let file = |path: &str, len: usize, seed: usize| FileIn {
        path: path.into(),
        contents: (0..len).map(|i| ((i * 31 + seed) % 251) as u8).collect(),
        mode: 0o644,
    };
    let files = vec![
        file("/in/a", swe_eval::engine::SWARM_INLINE_MAX, 1),
        file("/in/b", swe_eval::engine::SWARM_INLINE_MAX + 1, 2),
        file("/in/c", 1_200_000, 3),
    ];
    let want: String = files
        .iter()
        .map(|f| {
            format!(
                "{}  {}\n",
                hex::encode(sha2::Sha256::digest(&f.contents)),
                f.path
            )
        })
        .collect();
    let plan = swe_eval::engine::plan_inputs(&files, &["true".to_string()], "x");
    assert_eq!(plan.configs.len(), 4, "b in one chunk, c in three");
    let job = JobSpec {
        image,
        name: "swe-eval-inputs-check".into(),
        labels: std::collections::BTreeMap::from([("swe-eval".into(), "1".into())]),
        files,
        command: vec![
            "sha256sum".into(),
            "/in/a".into(),
            "/in/b".into(),
            "/in/c".into(),
        ],
        env: Vec::new(),
        working_dir: None,
        limits: Limits::default(),
        network: false,
        timeout: Duration::from_secs(120),
        max_output_bytes: 1 << 20,
        watch: Vec::new(),
        gate: None,
    };
    let out = rt
        .block_on(async {
            let engine = SwarmEngine::connect(SwarmOptions {
                registry: Some(registry.to_string()),
                ..Default::default()
            })
            .await?;
            let out = engine.run_job(job).await;
            let left = engine.finish_run().await;
            assert!(left.is_empty(), "left after the job: {left:?}");
            out
        })
        .unwrap();
    assert_eq!(
        out.exit_code,
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.output)
    );
    assert_eq!(String::from_utf8_lossy(&out.output), want);
    assert!(out.node.is_some());
}

/// A job's view of its limits and network, one line each: memory, swap (v1: memory+swap; v2:
/// swap alone), pids, "CPU-quota period", its network interfaces, whether it has a default
/// route, and whether it reaches `TARGET_HOST:TARGET_PORT` (the manager's Swarm port).
const PROBE: &str = r#"
c=/sys/fs/cgroup
if [ -f $c/memory.max ]; then
  cat $c/memory.max; cat $c/memory.swap.max 2>/dev/null || echo no-swap-accounting
  cat $c/pids.max $c/cpu.max
else
  cat $c/memory/memory.limit_in_bytes
  cat $c/memory/memory.memsw.limit_in_bytes 2>/dev/null || echo no-swap-accounting
  cat $c/pids/pids.max; echo $(cat $c/cpu/cpu.cfs_quota_us $c/cpu/cpu.cfs_period_us)
fi
tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\n' ' '; echo
awk '$2 == "00000000" { found = 1 } END { print found ? "default-route" : "no-default-route" }' /proc/net/route
if timeout 5 bash -c "exec 3<>/dev/tcp/$TARGET_HOST/$TARGET_PORT" 2>/dev/null; then echo reached; else echo unreachable; fi
"#;

/// A job of `command` on the bookworm base image with small limits.
fn probe_job(name: &str, command: &str, network: bool, target: &str) -> JobSpec {
    let (host, port) = target.split_once(':').unwrap();
    JobSpec {
        image: base_image_name(DebianRelease::Bookworm),
        name: name.into(),
        labels: std::collections::BTreeMap::from([("swe-eval".into(), "1".into())]),
        files: Vec::new(),
        command: vec!["/bin/bash".into(), "-c".into(), command.into()],
        env: vec![format!("TARGET_HOST={host}"), format!("TARGET_PORT={port}")],
        working_dir: None,
        limits: Limits {
            cpus: Some(0.5),
            memory_bytes: Some(64 << 20),
            pids: Some(64),
        },
        network,
        timeout: Duration::from_secs(120),
        max_output_bytes: 1 << 20,
        watch: Vec::new(),
        gate: None,
    }
}

/// The same jobs on the machine's daemon (`--engine docker`) and on the swarm, with the
/// worker drained so that they run on the manager, whose daemon has the `bridge` network:
/// the same CPU, memory and pids limits; the same network (loopback only without network,
/// an interface with it); an allocation over the memory limit killed by the kernel in both
/// (exit 137; only the plain container says it was the OOM killer). Swarm's API has no swap
/// limit: its task gets the daemon's default of twice the memory, which is asserted so that
/// the difference stays documented (ARCHITECTURE.md, "Cluster execution").
fn check_limits_and_network(registry: &str, worker_id: &str, target: &str) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let oom = "head -c 400000000 /dev/zero | tail -n 1 > /dev/null";
    let jobs = [
        ("limits", PROBE, false),
        ("network", PROBE, true),
        ("oom", oom, false),
    ];
    must(
        "docker",
        &["node", "update", "--availability", "drain", worker_id],
    );
    let outputs = rt.block_on(async {
        let docker = swe_eval::engine::DockerEngine::connect().await.unwrap();
        let swarm = SwarmEngine::connect(SwarmOptions {
            registry: Some(registry.to_string()),
            ..Default::default()
        })
        .await
        .unwrap();
        let mut outputs = Vec::new();
        for (what, command, network) in jobs {
            let name = format!("swe-eval-probe-{what}");
            let plain = docker
                .run_job(probe_job(&name, command, network, target))
                .await;
            let on_swarm = swarm
                .run_job(probe_job(&name, command, network, target))
                .await;
            outputs.push((what, plain.unwrap(), on_swarm.unwrap()));
        }
        let left = swarm.finish_run().await;
        assert!(left.is_empty(), "left after the probes: {left:?}");
        outputs
    });
    must(
        "docker",
        &["node", "update", "--availability", "active", worker_id],
    );
    let text = |o: &swe_eval::engine::JobOutput| String::from_utf8_lossy(&o.output).to_string();
    for (what, plain, on_swarm) in &outputs {
        eprintln!(
            "{what}: docker exit {:?} oom {} [{}]; swarm exit {:?} node {:?} [{}]",
            plain.exit_code,
            plain.oom_killed,
            text(plain).trim().replace('\n', " | "),
            on_swarm.exit_code,
            on_swarm.node,
            text(on_swarm).trim().replace('\n', " | ")
        );
    }
    let [(_, limits_d, limits_s), (_, net_d, net_s), (_, oom_d, oom_s)] = &outputs[..] else {
        unreachable!()
    };
    for o in [limits_d, limits_s, net_d, net_s] {
        assert_eq!(o.exit_code, Some(0), "{}", text(o));
    }
    let fields = |o: &swe_eval::engine::JobOutput| {
        text(o)
            .lines()
            .map(|l| l.trim().to_string())
            .collect::<Vec<_>>()
    };
    let (d, s) = (fields(limits_d), fields(limits_s));
    let memory = (64u64 << 20).to_string();
    assert_eq!(d[0], memory, "{d:?}");
    assert_eq!(s[0], memory, "the same memory limit on Swarm: {s:?}");
    assert_eq!((d[2].as_str(), s[2].as_str()), ("64", "64"), "pids");
    assert_eq!(d[3], "50000 100000", "half a CPU: {d:?}");
    assert_eq!(s[3], d[3], "the same CPU quota on Swarm: {s:?}");
    // cgroup v1 with swap accounting (this machine): memory+swap.
    if d[1] != "no-swap-accounting" && d[1] != "0" {
        assert_eq!(d[1], memory, "docker: no swap beyond the memory limit");
        assert_eq!(
            s[1],
            (2 * (64u64 << 20)).to_string(),
            "Swarm cannot set a swap limit: the daemon's default, twice the memory"
        );
    }
    // Interfaces, route, reach: the last three lines.
    let net = |o: &swe_eval::engine::JobOutput| fields(o)[4..].join(" | ");
    assert_eq!(net(limits_d), "lo | no-default-route | unreachable");
    // Swarm's isolated network: an interface, but no route out and nothing reachable.
    assert!(
        net(limits_s).ends_with("no-default-route | unreachable"),
        "no network on Swarm: no route out: {}",
        net(limits_s)
    );
    assert_eq!(net(net_d), "eth0 lo | default-route | reached");
    assert_eq!(
        net(net_s),
        net(net_d),
        "a job with network on Swarm gets the bridge as on one daemon"
    );
    assert_eq!(oom_d.exit_code, Some(137), "{}", text(oom_d));
    assert!(oom_d.oom_killed);
    assert_eq!(
        oom_s.exit_code,
        Some(137),
        "killed on Swarm too: {}",
        text(oom_s)
    );
}

#[test]
fn run_and_serve_on_a_two_node_swarm_survive_a_killed_client_a_killed_server_and_a_dead_worker() {
    if !can_start_namespaced_daemons("namespaces, veth, a second dockerd")
        || !require(
            "docker-registry (scripts/setup.sh --tests installs it)",
            Path::new("/usr/bin/docker-registry").exists()
                || run("which", &["docker-registry"]).is_ok(),
        )
    {
        return;
    }
    // A cluster a killed run of this test left (a machine stopped mid-run) is taken down first;
    // anyone else's swarm is left alone and fails the prerequisite below.
    crate::daemons::reap_dead_clusters();
    let Some(state) = prerequisite(
        "a Docker daemon",
        run("docker", &["info", "--format", "{{.Swarm.LocalNodeState}}"]),
    ) else {
        return;
    };
    // Never touch a daemon that already is in a swarm (someone else's cluster).
    if !require(
        &format!("a Docker daemon outside any swarm (it is {state})"),
        state == "inactive",
    ) {
        return;
    }
    let mut c = cluster();
    let registry = format!("127.0.0.1:{}", c.port);
    let work = tempfile::tempdir().unwrap();
    let results = work.path().join("results");
    let manager_id = must("docker", &["info", "--format", "{{.Swarm.NodeID}}"]);
    let worker_id = c.worker_node_id();

    // The offline base image the probe jobs below run in (bootstrapped when the machine has
    // none yet: this test starts early in the suite).
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(crate::engine::base_image());

    // 1. The inputs of a job: inline up to the inline limit, through config chunks beyond
    // (here 1.2 MB, three chunks), byte for byte on whichever node runs it.
    check_inputs(&registry);
    // Swarm's own limit on a config, which the chunks stay under: Docker 20.10 takes fewer than
    // 1,024,000 bytes (the documented limit is 500 KB, the chunk size).
    let config = |name: &str, len: usize| {
        let mut child = Command::new("docker")
            .args(["config", "create", "--label", "swe-eval=1", name, "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(&vec![b'x'; len])
            .unwrap();
        let ok = child.wait().unwrap().success();
        let _ = run("docker", &["config", "rm", name]);
        ok
    };
    assert!(config(
        "swe-eval-limit-a",
        swe_eval::engine::SWARM_CONFIG_CHUNK
    ));
    assert!(config("swe-eval-limit-b", 1_023_999));
    assert!(
        !config("swe-eval-limit-c", 1_024_000),
        "Swarm refuses a config of 1,024,000 bytes"
    );

    // 2. Limits and network, side by side with plain containers.
    check_limits_and_network(&registry, &worker_id, &format!("{}:2377", c.host_ip));

    // The mini benchmark's images from here on: shared with other tests' runs of them.
    let _turn = crate::common::mini_images_shared();

    // 3. Both nodes up, and the client killed mid-run: `swe-eval` is SIGKILLed while jobs
    // run, then run again with the same run id. The verdicts written before the kill are kept
    // byte for byte, the jobs in flight (their services left running by the dead process) are
    // reaped and redone once, no prediction gets two verdicts, and jobs ran on both nodes.
    let mut killed = spawn_run(work.path(), "swarm1", &registry);
    let in_flight = || {
        lines(run(
            "docker",
            &[
                "service",
                "ls",
                "-q",
                "--filter",
                "label=swe-eval.run-id=swarm1",
            ],
        ))
    };
    wait_for(
        "a few verdicts and a job in flight",
        Duration::from_secs(300),
        || (verdict_files(&results, "swarm1") >= 3 && !in_flight().is_empty()).then_some(()),
    );
    killed.kill().unwrap();
    let _ = killed.wait();
    let left = in_flight();
    assert!(
        !left.is_empty(),
        "the killed run left its jobs' services running"
    );
    let kept: Vec<(PathBuf, Vec<u8>)> = run_files(&results, "swarm1", "verdict.json")
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    assert!(kept.len() < 22, "killed mid-run ({} verdicts)", kept.len());
    let first = finish(spawn_run(work.path(), "swarm1", &registry));
    assert_mini_ok(&first);
    // `run swarm1: 22 predictions, R resumed, C containers run, ...`; an empty patch runs no
    // container.
    let count = |after: &str, until: char| -> usize {
        let at = first.stdout.find(after).map(|i| i + after.len());
        let rest = at.map_or("", |i| &first.stdout[i..]);
        rest[..rest.find(until).unwrap_or(0)]
            .trim()
            .parse()
            .unwrap_or(usize::MAX)
    };
    let resumed = count("22 predictions, ", 'r');
    let containers = count("resumed, ", 'c');
    // The rerun's jobs pushed their images to the registry, and its closing lines say so.
    let exported = count("image export to the registry: ", ' ');
    assert!(
        (1..=containers).contains(&exported),
        "{exported} images exported by {containers} containers:\n{}",
        first.stdout
    );
    let empty = count("empty patch ", ' ');
    let kept_empty = kept
        .iter()
        .filter(|(_, b)| String::from_utf8_lossy(b).contains("\"category\": \"empty_patch\""))
        .count();
    assert_eq!(
        (resumed, resumed + containers + (empty - kept_empty)),
        (kept.len(), 22),
        "the rerun resumed the verdicts written before the kill and ran each other prediction once:\n{}",
        first.stdout
    );
    for (p, bytes) in &kept {
        assert_eq!(
            &std::fs::read(p).unwrap(),
            bytes,
            "{} kept as written before the kill",
            p.display()
        );
    }
    assert_eq!(verdict_files(&results, "swarm1"), 22, "one verdict each");
    for id in &left {
        assert!(
            run("docker", &["service", "inspect", id]).is_err(),
            "service {id} of the killed run reaped"
        );
    }
    print_timings(&results, "swarm1");
    let nodes: BTreeSet<String> = job_nodes(&results, "swarm1").into_iter().collect();
    assert_eq!(
        nodes,
        BTreeSet::from([manager_id.clone(), worker_id.clone()]),
        "jobs ran on both nodes"
    );

    // 4. The worker's daemon dies while jobs run on it: a run's, retried elsewhere, and a
    // server's (`serve --engine swarm`) in the first step of the GRPO-shaped loop of
    // clients/python/examples/grpo_loop.py, a step that has already outlived a `kill -9` of
    // the server and its restart on the same address.
    let serve_out = work.path().join("serve-out");
    let serve_args = [
        "-o",
        serve_out.to_str().unwrap(),
        "-j",
        "2",
        "--engine",
        "swarm",
        "--registry",
        registry.as_str(),
    ];
    let first_server = Server::start(&serve_args, &[]);
    let addr = first_server.addr;
    let (predictions, preds, expected) = client::mini_files(&serve_out);
    let n = expected.len();
    let loop_results = work.path().join("grpo.jsonl");
    let steps = 2;
    let mut py = client::grpo_loop(
        &predictions,
        addr,
        &loop_results,
        &[
            "--steps",
            &steps.to_string(),
            "--reward-fn",
            "batch",
            "--retry-deadline",
            "600",
        ],
    );
    // The server killed outright mid-step, and started again on its address.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (done_before, _) = client::kill_mid_step(&rt, first_server, n, &mut py, &loop_results);
    let second_server = Server::start_on(&serve_args, &[], &addr.to_string());
    let child = spawn_run(work.path(), "swarm2", &registry);
    let prefix = "swe-eval-swarm2-";
    wait_for(
        "a job of the run and one of the server running on the worker",
        Duration::from_secs(300),
        || {
            let names = lines(c.worker_docker(&["ps", "--format", "{{.Names}}"]));
            let on = |p: &str| names.iter().any(|n| n.starts_with(p));
            (on(prefix) && on("swe-eval-serve-")).then_some(())
        },
    );
    // The containers there whose job had already ended (their service removed or about to
    // be): a removal the worker's daemon had not carried out when it died is lost with it, and
    // Swarm never sends it again (the manager cannot reach the node's containers, and neither
    // can swe-eval), so such a container may stay on the worker. Named here, they are the only
    // ones the check at the end forgives; any other container of ours left there fails it.
    let ended_at_kill: BTreeSet<String> = lines(c.worker_docker(&[
        "ps",
        "-a",
        "--filter",
        "status=exited",
        "--filter",
        "status=dead",
        "--filter",
        "status=removing",
        "--format",
        "{{.Names}}",
    ]))
    .into_iter()
    .filter(|n| n.starts_with("swe-eval-"))
    .collect();
    let done_at_kill = verdict_files(&results, "swarm2");
    c.kill_worker();
    assert!(
        client::jsonl(&loop_results).is_empty(),
        "the worker died in the loop's first step"
    );
    let second = finish(child);
    assert!(
        done_at_kill < 22,
        "the worker died mid-run ({done_at_kill} verdicts written)"
    );
    print_timings(&results, "swarm2");

    // The loop ends with every sample answered once per step: the verdict `run` gives it, or
    // masked as the infrastructure's (never another verdict).
    let status = client::wait_child(&mut py, Duration::from_secs(600));
    assert!(status.success(), "the loop ended {status}");
    let got = client::jsonl(&loop_results);
    let masked = client::check_loop_results(&got, steps, &expected, &preds, &done_before, true);
    eprintln!(
        "serve on the swarm: {} samples in {steps} steps, {masked} masked by the worker's death",
        steps * n
    );
    // Stopped while the worker is down: the service of a job lost with it is kept (and taken
    // down below, by the next process to start).
    assert_eq!(second_server.stop(), Some(0), "the server stopped cleanly");
    // Every verdict as expected; the run ends with a problem: the service of the job lost with
    // the worker is kept while the worker is down (removed now, its container would stay on
    // the worker for good), and it says so.
    assert_mini_verdicts(&second);
    assert_eq!(
        second.code, 3,
        "finished with a problem (the kept service):\n{}\n{}",
        second.stdout, second.stderr
    );
    let kept_said = second.stderr.matches("kept: its task is on node").count();
    let kept = lines(run(
        "docker",
        &[
            "service",
            "ls",
            "--format",
            "{{.Name}}",
            "--filter",
            "label=swe-eval.run-id=swarm2",
        ],
    ));
    assert!(
        kept_said >= 1 && kept_said == kept.len(),
        "each service kept is named ({kept_said} named, kept {kept:?}):\n{}",
        second.stderr
    );
    for name in &kept {
        let on = must(
            "docker",
            &["service", "ps", name, "--format", "{{.Node}}", "--no-trunc"],
        );
        assert!(
            second.stderr.contains(&format!("service {name} kept")),
            "{name} named:\n{}",
            second.stderr
        );
        assert!(!on.is_empty(), "{name} has its task on a node: {on}");
    }
    let retries: u32 = second
        .stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("engine retries: "))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(
        retries >= 1,
        "the job lost with the worker was retried:\n{}",
        second.stdout
    );
    let down = must(
        "docker",
        &[
            "node",
            "inspect",
            &worker_id,
            "--format",
            "{{.Status.State}}",
        ],
    );
    assert_eq!(down, "down", "the manager saw the worker die");

    // 5. Nothing of the runs is left. The worker, restarted, rejoins; the next run (here the
    // same run again: every verdict resumed, no job) removes the kept services at its start,
    // and Swarm removes their containers on the worker.
    c.start_worker();
    wait_for("the worker back", Duration::from_secs(120), || {
        (c.nodes_ready()? == 2).then_some(())
    });
    let third = finish(spawn_run(work.path(), "swarm2", &registry));
    assert_mini_ok(&third);
    assert!(
        third
            .stdout
            .contains("22 predictions, 22 resumed, 0 containers run"),
        "{}",
        third.stdout
    );
    // The kept services (and configs of theirs, if any) are the earlier runs' leftovers.
    let reaped: usize = third
        .stderr
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("removed ")?
                .strip_suffix(" leftover containers of earlier runs")?
                .parse()
                .ok()
        })
        .unwrap_or(0);
    assert!(
        reaped >= kept.len(),
        "the kept services removed at the next run's start:\n{}",
        third.stderr
    );
    let tasks_left = |c: &Cluster| {
        lines(c.worker_docker(&["ps", "-a", "--format", "{{.Names}}"]))
            .into_iter()
            .filter(|n| n.starts_with("swe-eval-") && !ended_at_kill.contains(n))
            .collect::<Vec<_>>()
    };
    // Swarm removes a removed service's containers through their nodes, asynchronously:
    // wait, then name what is left.
    let left = poll(Duration::from_secs(60), Duration::from_millis(500), || {
        let left = tasks_left(&c);
        left.is_empty().then_some(left)
    })
    .unwrap_or_else(|| tasks_left(&c));
    assert!(
        left.is_empty(),
        "the restarted worker still holds the runs' containers 60 s after the last run: {left:?}"
    );
    let lost: Vec<String> = lines(c.worker_docker(&["ps", "-a", "--format", "{{.Names}}"]))
        .into_iter()
        .filter(|n| ended_at_kill.contains(n))
        .collect();
    if !lost.is_empty() {
        eprintln!(
            "left on the worker: {lost:?}, ended before its daemon was killed (their removal was lost with it)"
        );
    }
    // A removed service's task container goes asynchronously (within seconds here), so the
    // check waits for it rather than racing Swarm's removal; one that stays is still a failure.
    let manager_tasks = || -> Vec<String> {
        lines(run("docker", &["ps", "-a", "--format", "{{.Names}}"]))
            .into_iter()
            .filter(|n| n.starts_with("swe-eval-swarm") || n.starts_with("swe-eval-serve-"))
            .collect()
    };
    let left = poll(Duration::from_secs(60), Duration::from_millis(500), || {
        let left = manager_tasks();
        left.is_empty().then_some(left)
    })
    .unwrap_or_else(manager_tasks);
    assert!(
        left.is_empty(),
        "task containers left on the manager 60 s after the run: {left:?}"
    );
    assert!(lines(run(
        "docker",
        &["service", "ls", "-q", "--filter", "label=swe-eval"]
    ))
    .is_empty());
    assert!(lines(run(
        "docker",
        &["config", "ls", "-q", "--filter", "label=swe-eval"]
    ))
    .is_empty());
    let pushed_names: Vec<String> = lines(run(
        "docker",
        &["images", "--format", "{{.Repository}}:{{.Tag}}"],
    ))
    .into_iter()
    .filter(|n| n.starts_with(&registry))
    .collect();
    assert!(
        pushed_names.is_empty(),
        "registry names left on the manager: {pushed_names:?}"
    );
    let foreign: Vec<String> = lines(c.worker_docker(&["images", "--format", "{{.Repository}}"]))
        .into_iter()
        .filter(|r| !r.starts_with(&registry))
        .collect();
    assert!(
        foreign.is_empty(),
        "the worker holds only images pulled from the registry: {foreign:?}"
    );

    // 6. Down again, and the machine's daemon out of swarm mode.
    c.teardown();
    let state = must("docker", &["info", "--format", "{{.Swarm.LocalNodeState}}"]);
    assert_eq!(state, "inactive", "the machine's daemon left the swarm");
    assert!(
        run("ip", &["netns", "pids", &c.ns]).is_err(),
        "namespace removed"
    );
    let dir = c.dir.display().to_string();
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(&dir), "no mount left under {dir}");
}
