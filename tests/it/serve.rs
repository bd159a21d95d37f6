//! `swe-eval serve` end to end, the binary on the real Docker engine: the API and the Python
//! client on the mini benchmark (every verdict as `run` grades it, the cache, the export read by
//! `correlate`), a server killed outright and started again (every accepted request has one
//! result, none ran again after its result was stored, nothing of the dead server left), a
//! server stopped (SIGTERM) with requests queued (its running job finishes, the queued ones
//! run once at the next start), the engine taken away mid-request (a masked infrastructure error, the server stays up and
//! recovers), a batch whose job known to be long starts first (earlier runs' durations, as
//! `run` orders its jobs), and the listen rules.
//!
//! The engine that goes away is not the machine's dockerd (others use it): it is a
//! [`PrivateDaemon`] of the test's own, stopped while a job runs and started again.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use swe_eval::bench::Client;

use crate::common::{bin, mini_images_shared, poll, poll_until, require_program, wait_for};
use crate::daemons::PrivateDaemon;
use crate::tasks::{self, Task, TestDir};
use swe_eval_core::grading;

/// Held by each of these tests that runs containers (two of them are started from other
/// modules: libtest starts tests in name order, and this module's, started last and one at a
/// time, were the suite's tail), one at a time, so a server killed, a
/// private daemon stopped and a full queue never overlap (run side by side under load, the
/// restarted server once saw a job of the killed one's instance end early, and the private
/// daemon's `docker save` of the shared fixture fail).
static SERVE_TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Takes [`SERVE_TURN`], even after another test panicked holding it.
pub(crate) fn serve_turn() -> std::sync::MutexGuard<'static, ()> {
    SERVE_TURN.lock().unwrap_or_else(|p| p.into_inner())
}

/// A `swe-eval serve` child process and the address it listens on.
pub(crate) struct Server {
    child: Child,
    pub(crate) addr: SocketAddr,
}

impl Server {
    /// Starts `swe-eval serve ARGS --listen 127.0.0.1:0` with `env`, and waits for its
    /// "listening on" line.
    pub(crate) fn start(args: &[&str], env: &[(&str, &str)]) -> Server {
        Server::start_on(args, env, "127.0.0.1:0")
    }

    /// Starts `swe-eval serve ARGS --listen LISTEN` with `env` (a server started again where
    /// its clients know it), and waits for its "listening on" line.
    pub(crate) fn start_on(args: &[&str], env: &[(&str, &str)], listen: &str) -> Server {
        let mut c = Command::new(bin());
        c.arg("serve").args(args).args(["--listen", listen]);
        for (k, v) in env {
            c.env(k, v);
        }
        let mut child = c
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let addr = line
            .rsplit("http://")
            .next()
            .and_then(|a| a.trim().parse().ok())
            .unwrap_or_else(|| panic!("no address in `{line}`"));
        // Keep reading its stdout so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in out.lines() {});
        Server { child, addr }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, then its exit code.
    pub(crate) fn stop(mut self) -> Option<i32> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        self.child.wait().unwrap().code()
    }

    /// SIGKILL.
    pub(crate) fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Server {
    /// A test that fails midway leaves no server running: stopped as Ctrl-C stops it.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = Command::new("kill")
                .args(["-TERM", &self.child.id().to_string()])
                .status();
            let _ = self.child.wait();
        }
    }
}

/// Sends one request; the status and JSON body.
pub(crate) fn call(
    rt: &tokio::runtime::Runtime,
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    let (status, _, v) = call_as(rt, addr, None, method, path, body);
    (status, v)
}

/// Sends one request with bearer `token`; the status, headers and JSON body.
fn call_as(
    rt: &tokio::runtime::Runtime,
    addr: SocketAddr,
    token: Option<&str>,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> (u16, Vec<(String, String)>, Value) {
    rt.block_on(async {
        let mut c = Client::connect(addr, token.map(str::to_string))
            .await
            .unwrap();
        let b = body.map(|b| b.to_string().into_bytes());
        let (status, headers, got) = c.request(method, path, b.as_deref()).await.unwrap();
        let v = serde_json::from_slice(&got)
            .unwrap_or(Value::String(String::from_utf8_lossy(&got).into()));
        (status, headers, v)
    })
}

/// The jobs the server at `addr` started since its start (its `/metrics`).
pub(crate) fn jobs_started(rt: &tokio::runtime::Runtime, addr: SocketAddr) -> usize {
    let (_, metrics) = call(rt, addr, "GET", "/metrics", None);
    let text = metrics.as_str().unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("swe_eval_jobs_total{stage=\"started\"} "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no started jobs in the metrics:\n{text}"))
}

/// Waits up to `secs` for `ids`; the evaluations done, by id.
fn wait_all(
    rt: &tokio::runtime::Runtime,
    addr: SocketAddr,
    ids: &[String],
    secs: u64,
) -> Vec<Value> {
    let (status, w) = call(
        rt,
        addr,
        "POST",
        "/v1/evaluations/wait",
        Some(&json!({"ids": ids, "timeout_s": secs})),
    );
    assert_eq!(status, 200, "{w}");
    w["done"].as_array().unwrap().clone()
}

/// The containers of the daemon at `host` owned by process `pid` (its jobs and its image
/// holds), each as `NAME OWNER HELD-IMAGE` (no held image for a job).
pub(crate) fn owned_by(host: Option<&str>, pid: u32) -> Vec<String> {
    use swe_eval::engine::{LABEL_HOLD, LABEL_OWNER, LABEL_TOOL};
    let format =
        format!("{{{{.Names}}}} {{{{.Label \"{LABEL_OWNER}\"}}}} {{{{.Label \"{LABEL_HOLD}\"}}}}");
    let filter = format!("label={LABEL_TOOL}");
    let o = tasks::docker(
        host,
        &["ps", "-a", "--filter", &filter, "--format", &format],
    )
    .expect("docker ps");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.split(':').nth(1) == Some(&pid.to_string()))
        .map(str::to_string)
        .collect()
}

/// The job containers (not the holds) of the daemon at `host` owned by process `pid`.
fn jobs_of(host: Option<&str>, pid: u32) -> Vec<String> {
    owned_by(host, pid)
        .into_iter()
        .filter(|l| l.split_whitespace().nth(2).is_none())
        .collect()
}

/// The status a mini prediction's expected verdict gives.
pub(crate) fn expected_status(category: &str, kind: Option<&str>) -> &'static str {
    match (category, kind) {
        ("resolved", _) => "resolved",
        ("unresolved", _) => "unresolved",
        ("empty_patch", _) => "empty",
        ("error", Some("patch_apply_failed")) => "patch_failed",
        ("error", Some("timeout")) => "timeout",
        other => panic!("no status for {other:?}"),
    }
}

/// What a test of a server on the mini benchmark with the Python client holds: its turn
/// ([`serve_turn`]), the mini images (shared), its folder and the server's output folder in it.
pub(crate) struct MiniTurn {
    _serve: std::sync::MutexGuard<'static, ()>,
    _mini: std::sync::RwLockReadGuard<'static, ()>,
    pub(crate) dir: TestDir,
    pub(crate) out: PathBuf,
}

/// A [`MiniTurn`], or `None` (through the skip helpers) without Docker or python3.
pub(crate) fn mini_turn() -> Option<MiniTurn> {
    if !tasks::docker_answers(None) || !require_program("python3") {
        return None;
    }
    let _serve = serve_turn();
    let _mini = mini_images_shared();
    let dir = TestDir::new();
    let out = dir.path().join("out");
    Some(MiniTurn {
        _serve,
        _mini,
        dir,
        out,
    })
}

/// The (official, strict) statuses a default server gives the mini prediction whose verdict
/// `run` gives is `want`, among the mini's predictions `preds`. The strict one is the one `run
/// --strict` gives (the server's jobs run strict); the official one is the official grading of
/// that run, which differs from the official harness's only where the patch touches files that
/// change test collection (removed before the tests).
pub(crate) fn default_server_statuses(
    want: &Value,
    preds: &[Value],
) -> (&'static str, &'static str) {
    let key = |v: &Value| {
        (
            v["instance_id"].clone(),
            v["model_name_or_path"].clone(),
            v["sample"].clone(),
        )
    };
    let kind = want["error_kind"].as_str();
    let strict = expected_status(want["strict_category"].as_str().unwrap(), kind);
    let patch = preds
        .iter()
        .find(|p| key(p) == key(want))
        .and_then(|p| p["model_patch"].as_str())
        .unwrap_or("");
    let official = if grading::collection_files(patch).is_empty() {
        expected_status(want["category"].as_str().unwrap(), kind)
    } else {
        strict
    };
    (official, strict)
}

/// Run as `client::the_api_and_the_python_client_on_the_real_engine_with_the_mini_benchmark`
/// (see there why).
pub(crate) fn the_api_and_the_python_client_on_the_real_engine_with_the_mini_benchmark() {
    // Bound whole: the guards it holds last until the test ends.
    let Some(turn) = mini_turn() else {
        return;
    };
    let (dir, out) = (&turn.dir, &turn.out);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = Server::start(&["-o", out.to_str().unwrap(), "-j", "2"], &[]);
    let addr = server.addr;
    let mini = out.join("serve").join("mini");
    let preds: Vec<Value> = std::fs::read_to_string(mini.join("predictions.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let expected: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(mini.join("expected.json")).unwrap())
            .unwrap();

    // The 22 predictions as one batch: the similarity at once, the verdicts as run gives them.
    let batch: Vec<Value> = preds
        .iter()
        .map(|p| {
            json!({"instance_id": p["instance_id"], "model_patch": p["model_patch"],
                        "model_name_or_path": p["model_name_or_path"], "sample": p["sample"]})
        })
        .collect();
    let (status, accepted) = call(
        &rt,
        addr,
        "POST",
        "/v1/evaluations",
        Some(&Value::Array(batch)),
    );
    assert_eq!(status, 200, "{accepted}");
    let accepted = accepted.as_array().unwrap().clone();
    assert_eq!(accepted.len(), 22);
    assert!(accepted.iter().all(|a| a["similarity"].is_number()));
    let ids: Vec<String> = accepted
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_string())
        .collect();
    let done = wait_all(&rt, addr, &ids, 600);
    assert_eq!(done.len(), 22, "every prediction done within 10 min");
    for want in &expected {
        let key = |v: &Value| {
            (
                v["instance_id"].clone(),
                v["model_name_or_path"].clone(),
                v["sample"].clone(),
            )
        };
        let got = done
            .iter()
            .find(|d| key(d) == key(want))
            .expect("a result per prediction");
        // The server's default: the strict reward, on strict runs.
        let (official, strict) = default_server_statuses(want, &preds);
        assert_eq!(
            (&got["status"], &got["strict_status"]),
            (&json!(official), &json!(strict)),
            "{want}\n{got}"
        );
        assert_eq!(got["mask"], false, "{got}");
        let score = if strict == "resolved" { 1.0 } else { 0.0 };
        assert_eq!(
            (&got["score"], &got["graded_by"]),
            (&json!(score), &json!("strict")),
            "{want}\n{got}"
        );
        let objections: Vec<&str> = got["objections"]
            .as_array()
            .unwrap_or_else(|| panic!("objections is a list: {got}"))
            .iter()
            .map(|o| o.as_str().unwrap().split(':').next().unwrap())
            .collect();
        let objected: &[&str] = match want["case"].as_str().unwrap() {
            "fake-passed" => &["exit_code_disagrees"],
            "conftest" => &["collection_files_removed"],
            "edits-tests" => &["test_files_edited"],
            _ => &[],
        };
        assert_eq!(objections, objected, "{want}\n{got}");
        if official != "empty" {
            assert!(
                got["image"].as_str().is_some_and(|i| !i.is_empty()),
                "{got}"
            );
        }
    }

    // The same gold patch again: from the cache, done at once.
    let gold = &batch_of(&preds, "mini-gold")[0];
    let (_, again) = call(&rt, addr, "POST", "/v1/evaluations", Some(gold));
    assert_eq!(
        (again["state"].as_str(), again["cached"].as_bool()),
        (Some("done"), Some(true)),
        "{again}"
    );

    // The Python client against this server.
    let client_dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("clients")
        .join("python");
    let py = Command::new("python3")
        .args(["-m", "unittest", "-v", "test_swe_eval_client"])
        .current_dir(&client_dir)
        .env("SWE_EVAL_URL", format!("http://{addr}"))
        .env("SWE_EVAL_TEST_GOLD", gold["model_patch"].as_str().unwrap())
        .env(
            "SWE_EVAL_TEST_INSTANCE",
            gold["instance_id"].as_str().unwrap(),
        )
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&py.stdout),
        String::from_utf8_lossy(&py.stderr)
    );
    assert!(py.status.success(), "python client tests:\n{text}");
    assert!(text.contains("OK"), "{text}");

    // The export, over HTTP and from the stopped server's state, which correlate reads.
    let (status, _) = call(&rt, addr, "GET", "/metrics", None);
    assert_eq!(status, 200);
    let pid = server.pid();
    assert_eq!(server.stop(), Some(0));
    assert_eq!(
        owned_by(None, pid),
        Vec::<String>::new(),
        "the server's containers and holds are gone"
    );
    let o = Command::new(bin())
        .args(["serve", "export", "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let export = out.join("serve").join("export");
    let outcomes = std::fs::read_to_string(export.join("outcomes.jsonl")).unwrap();
    assert!(outcomes.lines().count() >= 23, "{outcomes}");
    // Every reward row keeps its model and sample; the executed ones carry their score.
    let rewards = std::fs::read_to_string(export.join("rewards.jsonl")).unwrap();
    let rows: Vec<Value> = rewards
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(rows
        .iter()
        .all(|r| r["model_name_or_path"].is_string() && r["sample"].is_u64()));
    let paid: f64 = rows.iter().filter_map(|r| r["score"].as_f64()).sum();
    let resolved_strict = expected
        .iter()
        .filter(|w| w["strict_category"] == "resolved")
        .count();
    assert!(
        paid >= resolved_strict as f64,
        "{paid} paid for {resolved_strict} strictly resolved"
    );
    let study = dir.path().join("study");
    let o = Command::new(bin())
        .args([
            "correlate",
            "--bootstrap",
            "0",
            "-o",
            study.to_str().unwrap(),
        ])
        .arg("--rewards")
        .arg(export.join("rewards.jsonl"))
        .arg("--results")
        .arg(export.join("outcomes.jsonl"))
        .output()
        .unwrap();
    assert!(
        o.status.code().is_some_and(|c| c == 0 || c == 3),
        "correlate on the export: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The export holds several models (the mini benchmark's gold and demo, and `serve` for the
    // requests that named none): one study each.
    for model in ["mini-gold", "mini-demo", "serve"] {
        assert!(
            study.join(model).join("summary.json").is_file(),
            "{model}: {:?}",
            std::fs::read_dir(&study).map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>())
        );
    }
}

fn batch_of(preds: &[Value], model: &str) -> Vec<Value> {
    preds
        .iter()
        .filter(|p| p["model_name_or_path"] == model)
        .map(|p| json!({"instance_id": p["instance_id"], "model_patch": p["model_patch"]}))
        .collect()
}

/// `n` tasks of the trivial image whose tests take `secs` seconds, written in `dir`; the
/// dataset file and the tasks.
fn slow_dataset(dir: &Path, prefix: &str, n: usize, secs: u32) -> (PathBuf, Vec<Task>) {
    let tasks = tasks::slow_tasks(prefix, n, secs);
    let (ds, _) = tasks::write_inputs(dir, &tasks::trivial_image(), &tasks);
    (ds, tasks)
}

/// `serve`'s arguments for dataset `ds`, output `out` and `workers` containers at once.
fn serve_args(ds: &Path, out: &Path, workers: usize) -> Vec<String> {
    let path = |p: &Path| p.to_str().unwrap().to_string();
    ["-d".into(), path(ds), "-o".into(), path(out), "-j".into()]
        .into_iter()
        .chain([workers.to_string(), "-t".into(), "120".into()])
        .collect()
}

/// Every job's verdict.json under `out`'s state, with its bytes and modification time.
/// The test outputs the server's jobs wrote (each job's log files are in `jobs/<key>/`; its
/// verdict is in the database), with their bytes and times.
fn verdicts_on_disk(out: &Path) -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
    let jobs = out.join("serve").join("jobs");
    std::fs::read_dir(&jobs)
        .map(|dir| {
            dir.filter_map(|d| {
                let p = d.ok()?.path().join("test_output.txt");
                let m = std::fs::metadata(&p).ok()?;
                Some((p.clone(), std::fs::read(&p).ok()?, m.modified().ok()?))
            })
            .collect()
        })
        .unwrap_or_default()
}

/// Submits one request per task; their ids.
fn submit_all(rt: &tokio::runtime::Runtime, addr: SocketAddr, tasks: &[Task]) -> Vec<String> {
    let batch: Vec<Value> = tasks
        .iter()
        .map(|t| json!({"instance_id": t.id, "model_patch": t.patch}))
        .collect();
    let (status, accepted) = call(
        rt,
        addr,
        "POST",
        "/v1/evaluations",
        Some(&Value::Array(batch)),
    );
    assert_eq!(status, 200, "{accepted}");
    accepted
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_string())
        .collect()
}

/// A server started again after `before` (the results the first one gave) and `verdicts` (the
/// verdicts it wrote): every request in `ids` gets one resolved result, those given before are
/// kept as they were, no verdict is written again, and no job runs twice; the server is then
/// stopped and leaves nothing on the daemon.
fn restart_finishes_each_once(
    rt: &tokio::runtime::Runtime,
    args: &[&str],
    ids: &[String],
    before: &[Value],
    verdicts: &[(PathBuf, Vec<u8>, std::time::SystemTime)],
) {
    let server = Server::start(args, &[]);
    let done = wait_all(rt, server.addr, ids, 300);
    assert_eq!(
        done.len(),
        ids.len(),
        "every accepted request has its result"
    );
    for d in &done {
        assert_eq!(
            (d["status"].as_str(), d["mask"].as_bool()),
            (Some("resolved"), Some(false)),
            "{d}"
        );
    }
    for b in before {
        let after = done.iter().find(|d| d["id"] == b["id"]).unwrap();
        assert_eq!(
            after, b,
            "a result stored before the stop is kept as it was"
        );
    }
    for (p, bytes, at) in verdicts {
        assert_eq!(
            &std::fs::read(p).unwrap(),
            bytes,
            "{} rewritten",
            p.display()
        );
        assert_eq!(
            &std::fs::metadata(p).unwrap().modified().unwrap(),
            at,
            "{} rewritten: ran again",
            p.display()
        );
    }
    // Jobs run by the second server: those without a verdict written before the stop.
    let started = jobs_started(rt, server.addr);
    assert!(
        started <= ids.len() - verdicts.len(),
        "{started} jobs started again"
    );
    let pid = server.pid();
    assert_eq!(server.stop(), Some(0));
    assert_eq!(owned_by(None, pid), Vec::<String>::new());
}

/// A server on `n` tasks of `secs` seconds each, `workers` at once, every task submitted, once
/// `done_at` of them are done.
struct UnderWay {
    _dir: TestDir,
    out: PathBuf,
    args: Vec<String>,
    rt: tokio::runtime::Runtime,
    server: Server,
    ids: Vec<String>,
    /// The results done so far.
    before: Vec<Value>,
}

fn under_way(prefix: &str, n: usize, secs: u32, workers: usize, done_at: usize) -> UnderWay {
    let dir = TestDir::new();
    let (ds, tasks) = slow_dataset(dir.path(), prefix, n, secs);
    let out = dir.path().join("out");
    let args = serve_args(&ds, &out, workers);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = Server::start(&argv, &[]);
    let ids = submit_all(&rt, server.addr, &tasks);
    let before = poll(Duration::from_secs(120), Duration::ZERO, || {
        let done = wait_all(&rt, server.addr, &ids, 1);
        (done.len() >= done_at).then_some(done)
    })
    .unwrap_or_default();
    assert!(
        before.len() >= done_at && before.len() < ids.len(),
        "stopped at {} of {}",
        before.len(),
        ids.len()
    );
    UnderWay {
        _dir: dir,
        out,
        args,
        rt,
        server,
        ids,
        before,
    }
}

#[test]
fn a_server_killed_outright_finishes_every_accepted_request_once_after_a_restart() {
    if !tasks::docker_answers(None) {
        return;
    }
    let _turn = serve_turn();
    // Killed once two are done and others run.
    let w = under_way("serve-kill", 6, 3, 2, 2);
    let dead = w.server.pid();
    w.server.kill();
    let verdicts_before = verdicts_on_disk(&w.out);
    assert!(
        verdicts_before.len() >= w.before.len(),
        "{} answered, {} logs on disk: {:?}",
        w.before.len(),
        verdicts_before.len(),
        std::fs::read_dir(w.out.join("serve").join("jobs"))
            .map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>())
    );
    let args: Vec<&str> = w.args.iter().map(String::as_str).collect();
    restart_finishes_each_once(&w.rt, &args, &w.ids, &w.before, &verdicts_before);
    assert_eq!(
        owned_by(None, dead),
        Vec::<String>::new(),
        "the dead server's containers and holds reaped"
    );
}

#[test]
fn a_stopped_server_lets_its_running_job_finish_and_keeps_the_queued_ones_for_the_next_start() {
    if !tasks::docker_answers(None) {
        return;
    }
    let _turn = serve_turn();
    // One job at a time, each 2 s: the stop comes with most of them queued.
    let w = under_way("serve-stop", 8, 2, 1, 1);
    // SIGTERM (Ctrl-C alike): the running job finishes, none of the queued ones starts.
    let pid = w.server.pid();
    assert_eq!(w.server.stop(), Some(0));
    let verdicts = verdicts_on_disk(&w.out);
    assert!(
        verdicts.len() <= w.before.len() + 2,
        "{} jobs ran before the server stopped, {} were done at the stop: the stop ran the queue",
        verdicts.len(),
        w.before.len()
    );
    assert!(verdicts.len() < w.ids.len());
    assert_eq!(
        owned_by(None, pid),
        Vec::<String>::new(),
        "a stopped server leaves no container or hold"
    );
    // The queued ones are stored: the next start runs each once.
    let args: Vec<&str> = w.args.iter().map(String::as_str).collect();
    restart_finishes_each_once(&w.rt, &args, &w.ids, &w.before, &verdicts);
}

#[test]
fn listening_off_loopback_needs_a_token() {
    for (args, env, want) in [
        (
            vec!["--listen", "0.0.0.0:0"],
            vec![],
            "needs a bearer token",
        ),
        (
            vec!["--listen", "0.0.0.0:0"],
            vec![("SWE_EVAL_TOKEN", "short")],
            "at least 16",
        ),
    ] {
        let dir = TestDir::new();
        let o = Command::new(bin())
            .arg("serve")
            .args(&args)
            .args(["-o", dir.path().to_str().unwrap()])
            .env_remove("SWE_EVAL_TOKEN")
            .envs(env)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(want), "{err}");
        assert!(!dir.path().join("serve").exists(), "nothing started: {err}");
    }
}

#[test]
fn a_token_a_full_queue_and_an_expired_deadline_through_the_binary() {
    if !tasks::docker_answers(None) {
        return;
    }
    let _turn = serve_turn();
    let dir = TestDir::new();
    let (ds, tasks) = slow_dataset(dir.path(), "serve-rules", 3, 30);
    let out = dir.path().join("out");
    let mut args = serve_args(&ds, &out, 1);
    args.extend(["--max-queue".to_string(), "2".to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let token = "serve-test-token-0123456789";
    let server = Server::start(&args, &[("SWE_EVAL_TOKEN", token)]);
    let (addr, rt) = (server.addr, tokio::runtime::Runtime::new().unwrap());
    let req = |t: &Task| json!({"instance_id": t.id, "model_patch": t.patch, "deadline_s": 4});

    // Without the token, or with another one: 401 and nothing accepted.
    let (status, headers, e) = call_as(
        &rt,
        addr,
        None,
        "POST",
        "/v1/evaluations",
        Some(&req(&tasks[0])),
    );
    assert_eq!(
        (status, e["code"].as_str()),
        (401, Some("unauthorized")),
        "{e}"
    );
    assert!(headers
        .iter()
        .any(|(k, v)| k == "www-authenticate" && v == "Bearer"));
    let other = "serve-test-token-0123456780";
    assert_eq!(
        call_as(&rt, addr, Some(other), "GET", "/v1/health", None).0,
        401
    );

    // Two accepted (one runs, one waits), the third refused with Retry-After.
    let mut ids = Vec::new();
    for t in &tasks[..2] {
        let (status, _, a) = call_as(
            &rt,
            addr,
            Some(token),
            "POST",
            "/v1/evaluations",
            Some(&req(t)),
        );
        assert_eq!(status, 200, "{a}");
        ids.push(a["id"].as_str().unwrap().to_string());
    }
    let (status, headers, e) = call_as(
        &rt,
        addr,
        Some(token),
        "POST",
        "/v1/evaluations",
        Some(&req(&tasks[2])),
    );
    assert_eq!(
        (status, e["code"].as_str()),
        (429, Some("queue_full")),
        "{e}"
    );
    assert!(
        headers
            .iter()
            .any(|(k, v)| k == "retry-after" && v.parse::<u64>().is_ok_and(|s| s >= 1)),
        "{headers:?}"
    );

    // Their 4 s deadline passes while the tests sleep 30 s: a masked timeout, not cached, and
    // the running container removed.
    for id in &ids {
        let (_, _, r) = call_as(
            &rt,
            addr,
            Some(token),
            "GET",
            &format!("/v1/evaluations/{id}?wait=60"),
            None,
        );
        assert_eq!(
            (r["status"].as_str(), r["mask"].as_bool()),
            (Some("timeout"), Some(true)),
            "{r}"
        );
    }
    let pid = server.pid();
    let gone = poll_until(Duration::from_secs(60), || jobs_of(None, pid).is_empty());
    assert!(
        gone,
        "the expired job's container is still there: {:?}",
        jobs_of(None, pid)
    );
    let (_, _, again) = call_as(
        &rt,
        addr,
        Some(token),
        "POST",
        "/v1/evaluations",
        Some(&req(&tasks[0])),
    );
    assert_eq!(
        again["cached"], false,
        "a masked result is never cached: {again}"
    );

    // Broken bodies through the live binary: never a 5xx, always a JSON error, still serving.
    for (k, (method, path, body)) in mangled_bodies(&tasks[1].id, 48).iter().enumerate() {
        let (status, _, e) = rt.block_on(async {
            let mut c = Client::connect(addr, Some(token.to_string()))
                .await
                .unwrap();
            c.request(method, path, Some(body)).await.unwrap()
        });
        let shown = String::from_utf8_lossy(body);
        assert!(
            status < 500,
            "{status} for body {k} {method} {path}: {shown}"
        );
        if status != 200 {
            let e: Value = serde_json::from_slice(&e)
                .unwrap_or_else(|_| panic!("{status} without a JSON error for body {k}: {shown}"));
            assert!(e["code"].is_string() && e["message"].is_string(), "{e}");
        }
    }
    assert_eq!(
        call_as(&rt, addr, Some(token), "GET", "/v1/health", None).0,
        200
    );
    assert_eq!(server.stop(), Some(0));
    assert_eq!(owned_by(None, pid), Vec::<String>::new());
}

/// `n` request bodies made by breaking valid ones (bytes changed, cut, doubled, or deleted at
/// places a fixed-seed generator picks), each with its method and path. The valid ones ask for
/// the similarity alone of `instance`, so no body runs a job.
fn mangled_bodies(instance: &str, n: usize) -> Vec<(&'static str, &'static str, Vec<u8>)> {
    let valid = [
        json!({"instance_id": instance, "model_patch": "diff --git a/x b/x\n", "execute": false,
               "sample": 3, "deadline_s": 1}),
        json!([{"instance_id": instance, "model_patch": "", "execute": false}]),
        json!({"ids": ["e1", "e2"], "timeout_s": 0}),
    ];
    let targets = [
        ("POST", "/v1/evaluations"),
        ("POST", "/v1/evaluations/wait"),
        ("PUT", "/v1/evaluations"),
        ("POST", "/v1/evaluations/e1?wait=x"),
    ];
    let mut seed: u64 = 0x5e5e_2026_1201;
    let mut next = |below: usize| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 33) % below.max(1) as u64) as usize
    };
    (0..n)
        .map(|_| {
            let mut b = valid[next(valid.len())].to_string().into_bytes();
            for _ in 0..1 + next(4) {
                let at = next(b.len() + 1);
                match next(4) {
                    0 if at < b.len() => b[at] = next(256) as u8,
                    1 => b.truncate(at),
                    2 => {
                        let tail = b[at..].to_vec();
                        b.extend(tail);
                    }
                    _ if at < b.len() => {
                        b.remove(at);
                    }
                    _ => b.push(b'}'),
                }
            }
            let (method, path) = targets[next(targets.len())];
            (method, path, b)
        })
        .collect()
}

/// Run as `faults_daemon::an_engine_gone_mid_request_is_a_masked_infra_error_and_the_server_recovers`
/// (see there why).
pub(crate) fn an_engine_gone_mid_request_is_a_masked_infra_error_and_the_server_recovers() {
    if !tasks::docker_answers(None) || !require_program("docker") {
        return;
    }
    let _turn = serve_turn();
    let Some(mut daemon) = PrivateDaemon::start() else {
        return;
    };
    daemon.load_image(&tasks::trivial_image());
    let dir = TestDir::new();
    let (ds, tasks) = slow_dataset(dir.path(), "serve-gone", 2, 8);
    let host = daemon.host.clone();
    let out = dir.path().join("out");
    let args = serve_args(&ds, &out, 1);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::start(&args, &[("DOCKER_HOST", host.as_str())]);
    let addr = server.addr;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let req = |t: &Task| json!({"instance_id": t.id, "model_patch": t.patch});
    let (status, a) = call(&rt, addr, "POST", "/v1/evaluations", Some(&req(&tasks[0])));
    assert_eq!(status, 200, "{a}");
    let id = a["id"].as_str().unwrap().to_string();
    // Away once its container runs.
    wait_for("the job to start", Duration::from_secs(120), || {
        let (_, m) = call(&rt, addr, "GET", "/metrics", None);
        m.as_str()
            .is_some_and(|t| t.contains("\nswe_eval_running 1"))
            .then_some(())
    });
    daemon.stop();
    let (status, h) = call(&rt, addr, "GET", "/v1/health", None);
    assert_eq!(status, 503, "{h}");
    assert!(h["engine_error"].is_string(), "{h}");
    let (_, r) = call(
        &rt,
        addr,
        "GET",
        &format!("/v1/evaluations/{id}?wait=120"),
        None,
    );
    assert_eq!(
        (r["status"].as_str(), r["mask"].as_bool()),
        (Some("infra_error"), Some(true)),
        "{r}"
    );

    // Back: the server answers and evaluates again (the masked result was not cached).
    assert!(daemon.launch(), "dockerd did not come back");
    let healthy = poll_until(Duration::from_secs(60), || {
        call(&rt, addr, "GET", "/v1/health", None).0 == 200
    });
    assert!(healthy, "health never recovered");
    let (_, again) = call(&rt, addr, "POST", "/v1/evaluations", Some(&req(&tasks[0])));
    assert_eq!(again["cached"], false, "{again}");
    let (_, r) = call(
        &rt,
        addr,
        "GET",
        &format!("/v1/evaluations/{}?wait=120", again["id"].as_str().unwrap()),
        None,
    );
    assert_eq!(
        (r["status"].as_str(), r["mask"].as_bool()),
        (Some("resolved"), Some(false)),
        "{r}"
    );
    let pid = server.pid();
    assert_eq!(server.stop(), Some(0));
    assert_eq!(
        owned_by(Some(&host), pid),
        Vec::<String>::new(),
        "nothing of the server left"
    );
}

/// `serve --nice -5`, started in a session of its own: every thread of the server runs at nice
/// -5, and where the kernel groups CPU time by session its session's group is at -5 too; the
/// test's own session is left as it was.
#[test]
fn a_server_given_a_nice_value_runs_at_it_with_its_session() {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !crate::common::require("root (a nice value below 0)", root)
        || !require_program("setsid")
        || !tasks::docker_answers(None)
    {
        return;
    }
    let ours = std::fs::read_to_string("/proc/self/autogroup").ok();
    let dir = TestDir::new();
    let mut child = Command::new("setsid")
        .arg(bin())
        .args(["serve", "--nice", "-5", "--listen", "127.0.0.1:0", "-o"])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(line.contains("listening on"), "{line}");
    let pid = child.id();
    let nice_of = |stat: &str| -> i32 {
        // The fields after the command's closing parenthesis; nice is the 19th of the line.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        rest.split(' ').nth(16).unwrap().parse().unwrap()
    };
    let tasks: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .map(|t| nice_of(&std::fs::read_to_string(t.unwrap().path().join("stat")).unwrap()))
        .collect();
    let group = std::fs::read_to_string(format!("/proc/{pid}/autogroup")).unwrap_or_default();
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(tasks.len() > 2, "the server's threads: {tasks:?}");
    assert!(
        tasks.iter().all(|n| *n == -5),
        "every thread at -5: {tasks:?}\n{err}"
    );
    let autogroup = std::fs::read_to_string("/proc/sys/kernel/sched_autogroup_enabled")
        .is_ok_and(|s| s.trim() == "1");
    assert_eq!(
        err.contains("and this session's CPU group (autogroup)"),
        autogroup,
        "{err}"
    );
    assert!(err.contains("swe-eval serve: nice -5"), "{err}");
    if autogroup {
        assert!(
            group.trim_end().ends_with("nice -5"),
            "its session's group: {group}"
        );
    }
    assert_eq!(status.code(), Some(0), "{err}");
    assert_eq!(
        std::fs::read_to_string("/proc/self/autogroup").ok(),
        ours,
        "the test's own session is untouched"
    );
}

/// `bench serve --nice 3` takes its priority before it sends anything (here to an address where
/// no server listens, so it stops there with the reason), in its own session, leaving the
/// test's session as it was. Raising a nice value needs no root.
#[test]
fn the_load_generator_takes_the_priority_asked_for_before_its_load() {
    if !require_program("setsid") {
        return;
    }
    let ours = std::fs::read_to_string("/proc/self/autogroup").ok();
    // A port nothing listens on: bound, then let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = Command::new("setsid")
        .arg("--wait")
        .arg(bin())
        .args([
            "bench",
            "serve",
            "--nice",
            "3",
            "--requests",
            "1",
            "--connect",
        ])
        .arg(format!("127.0.0.1:{port}"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let autogroup = std::fs::read_to_string("/proc/sys/kernel/sched_autogroup_enabled")
        .is_ok_and(|s| s.trim() == "1");
    let said = if autogroup {
        "swe-eval bench serve: nice 3, and this session's CPU group (autogroup)"
    } else {
        "swe-eval bench serve: nice 3\n"
    };
    assert!(err.contains(said), "{err}");
    assert!(!out.status.success(), "no server to load: {err}");
    assert!(
        err.contains(&port.to_string()),
        "the reason names the address: {err}"
    );
    assert_eq!(
        std::fs::read_to_string("/proc/self/autogroup").ok(),
        ours,
        "the test's own session is untouched"
    );
}

#[test]
fn a_second_server_on_a_held_state_is_refused_naming_the_option_that_chooses_another() {
    if !tasks::docker_answers(None) {
        return;
    }
    let _turn = serve_turn();
    let dir = TestDir::new();
    let out = dir.path().to_str().unwrap();
    let first = Server::start(&["-o", out, "-j", "1"], &[]);
    let o = Command::new(bin())
        .args(["serve", "-o", out, "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("in use by another swe-eval server") && err.contains("--output"),
        "{err}"
    );
    assert!(!err.contains("--run-id"), "serve has no --run-id: {err}");
    assert_eq!(first.stop(), Some(0));
}

#[test]
fn a_batch_starts_the_jobs_known_to_be_long_first_as_run_does() {
    if !tasks::docker_answers(None) {
        return;
    }
    let _turn = serve_turn();
    let dir = TestDir::new();
    // Three quick tasks, then one that earlier runs timed at 60 s (it takes 2 s here), in one
    // batch to a server with one worker and that record in its cache.
    let secs = [
        ("order-0", 0),
        ("order-1", 0),
        ("order-2", 0),
        ("order-long", 2),
    ];
    let tasks: Vec<Task> = secs
        .iter()
        .map(|(id, s)| {
            Task::new(
                id,
                &format!("sleep {s} # {id}"),
                tasks::PYTEST,
                &tasks::fix(),
            )
        })
        .collect();
    let (ds, _) = tasks::write_inputs(dir.path(), &tasks::trivial_image(), &tasks);
    let cache = dir.path().join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let record = json!({"order-0": 1.0, "order-1": 1.0, "order-2": 1.0, "order-long": 60.0});
    std::fs::write(cache.join("durations.json"), record.to_string()).unwrap();
    let out = dir.path().join("out");
    let args = serve_args(&ds, &out, 1);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::start(&argv, &[("SWE_EVAL_CACHE", cache.to_str().unwrap())]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let ids = submit_all(&rt, server.addr, &tasks);
    let done = wait_all(&rt, server.addr, &ids, 120);
    assert_eq!(done.len(), tasks.len());
    // From acceptance to the result: with one worker, the job that starts first ends first
    // (the driver may start the next container while one runs, but they run one at a time).
    let total = |id: &str| {
        let d = done.iter().find(|d| d["instance_id"] == id).unwrap();
        assert_eq!(d["status"], "resolved", "{d}");
        d["timings"]["total"].as_f64().unwrap()
    };
    let long = total("order-long");
    for (id, _) in &secs[..3] {
        assert!(
            total(id) > long,
            "{id} done after {:.2} s, the long one after {long:.2} s: it did not start first",
            total(id)
        );
    }
    let pid = server.pid();
    assert_eq!(server.stop(), Some(0));
    assert_eq!(owned_by(None, pid), Vec::<String>::new());
}
