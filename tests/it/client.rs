//! The Python client (clients/python) without Docker and without a `swe-eval serve`: its own
//! tests against a fake server that misbehaves every way the retry rules name (refused, dropped,
//! an empty or garbled status line, a cut answer, a slow attempt, 5xx, 429 with and without
//! Retry-After, 4xx, going away and coming back with its ids), for the sync and the asyncio
//! client, with the verl-style reward functions on canned answers; and `pip install` of the
//! package offline into a folder it is imported from.
//!
//! Against a real server on the mini benchmark (Docker), the GRPO-shaped loop of
//! clients/python/examples/grpo_loop.py: the mini's hack predictions through `compute_score`
//! on a default server, each scored 0 with its objection, the others as `run` grades them; and
//! the loop kept running across a `kill -9` of the server mid-step and its restart on the same
//! address, every sample answered once with the verdict `run` gives. The client's unittest
//! against a live server is
//! [`the_api_and_the_python_client_on_the_real_engine_with_the_mini_benchmark`].

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{bin, poll, prerequisite, require_program};
use crate::serve::{call, default_server_statuses, jobs_started, mini_turn, owned_by, Server};

fn client_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("clients")
        .join("python")
}

/// Runs the unittest `modules` of clients/python/tests with python3; their output, after
/// checking they all passed (and that `at_least` tests ran).
fn python_tests(modules: &[&str], at_least: usize) -> String {
    let dir = client_dir();
    let out = Command::new("python3")
        .args(["-m", "unittest", "-v"])
        .args(modules)
        .current_dir(&dir)
        .env("PYTHONPATH", dir.join("tests"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("SWE_EVAL_URL")
        .env_remove("SWE_EVAL_TOKEN")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    assert!(out.status.success(), "python client tests failed:\n{text}");
    let ran = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("Ran ")?
                .split(' ')
                .next()?
                .parse::<usize>()
                .ok()
        })
        .unwrap_or_else(|| panic!("no `Ran N tests` line:\n{text}"));
    assert!(
        ran >= at_least,
        "{ran} tests ran, expected {at_least}:\n{text}"
    );
    text
}

/// Kills `server` outright (SIGKILL) in the first step of the loop `py` (writing `results`)
/// on the mini's `n` predictions, once 5 of that step's requests are done (the server numbers
/// requests e1, e2, ...) and most still wait or run; checks the loop outlives it by 2 s.
/// Returns what was done before the kill and the dead server's pid.
pub(crate) fn kill_mid_step(
    rt: &tokio::runtime::Runtime,
    server: Server,
    n: usize,
    py: &mut Child,
    results: &Path,
) -> (Vec<Value>, u32) {
    let ids: Vec<String> = (1..=n).map(|i| format!("e{i}")).collect();
    let done_before = poll(Duration::from_secs(300), Duration::from_millis(200), || {
        let (status, w) = call(
            rt,
            server.addr,
            "POST",
            "/v1/evaluations/wait",
            Some(&json!({"ids": ids, "timeout_s": 0})),
        );
        let done = w["done"].as_array().cloned().unwrap_or_default();
        (status == 200 && done.len() >= 5).then_some(done)
    })
    .expect("5 of the first step's requests done within 5 min");
    assert!(
        done_before.len() < n - 5,
        "killed mid-step: {} done",
        done_before.len()
    );
    assert!(jsonl(results).is_empty(), "the first step had not ended");
    let dead = server.pid();
    server.kill();
    // The loop's requests find nobody for a while, then the server again where it was.
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        py.try_wait().unwrap().is_none(),
        "the loop outlives the server"
    );
    (done_before, dead)
}

/// Checks a loop's results `got` over `steps` steps of the mini's predictions (`preds`, whose
/// verdicts `run` gives are `expected`): one result per sample and step, each the verdict a
/// default server gives it ([`check_mini_result`]) or, where `masked_allowed`, masked as the
/// infrastructure's; the first step's results of the requests `done_before` a kill as they
/// were then. Returns how many were masked.
pub(crate) fn check_loop_results(
    got: &[Value],
    steps: usize,
    expected: &[Value],
    preds: &[Value],
    done_before: &[Value],
    masked_allowed: bool,
) -> usize {
    let n = expected.len();
    assert_eq!(got.len(), steps * n, "a result per sample and step");
    let mut masked = 0;
    for step in 0..steps {
        let of_step: Vec<&Value> = got.iter().filter(|g| g["step"] == step).collect();
        assert_eq!(of_step.len(), n, "step {step}");
        for want in expected {
            let mine: Vec<&&Value> = of_step.iter().filter(|g| key(g) == key(want)).collect();
            assert_eq!(mine.len(), 1, "step {step}: one result for {want}");
            if masked_allowed && mine[0]["mask"] == json!(true) {
                assert_eq!(mine[0]["status"], json!("infra_error"), "{}", mine[0]);
                masked += 1;
            } else {
                check_mini_result(want, mine[0], preds);
            }
        }
    }
    // The same requests (ids) before and after the kill: the first step's results as stored.
    for before in done_before {
        let after = got
            .iter()
            .find(|g| g["step"] == 0 && g["id"] == before["id"])
            .unwrap_or_else(|| panic!("{} answered in the first step", before["id"]));
        assert_eq!(
            (&after["status"], &after["score"]),
            (&before["status"], &before["score"]),
            "{before}"
        );
    }
    masked
}

#[test]
fn the_python_client_retries_what_it_should_and_scores_against_a_fake_server() {
    if !require_program("python3") {
        return;
    }
    let t0 = std::time::Instant::now();
    let text = python_tests(&["test_retries", "test_score"], 57);
    for case in [
        "test_a_connection_closed_with_no_answer_is_retried (test_retries.Async",
        "test_a_wait_survives_the_server_going_away_and_coming_back (test_retries.Sync",
        "test_4xx_other_than_429_are_not_retried (test_retries.Async",
        "test_an_older_server_without_score_falls_back_to_resolved",
    ] {
        assert!(text.contains(case), "{case} ran:\n{text}");
    }
    eprintln!("python client tests took {:.1?}", t0.elapsed());
}

#[test]
fn the_python_client_installs_offline_with_pip_and_imports_from_there() {
    if !require_program("python3") {
        return;
    }
    let pip = Command::new("python3")
        .args(["-m", "pip", "--version"])
        .output()
        .map_err(|e| e.to_string())
        .and_then(|o| {
            if o.status.success() {
                Ok(())
            } else {
                Err(String::from_utf8_lossy(&o.stderr).into_owned())
            }
        });
    if prerequisite("pip for python3", pip).is_none() {
        return;
    }
    let text = python_tests(&["test_package"], 7);
    assert!(
        text.contains("test_pip_installs_it_offline_as_a_user_does") && text.contains("OK"),
        "{text}"
    );
}

/// The mini benchmark as a default server writes it into its state under `out`: its
/// predictions file, the predictions, and the verdicts `run` gives them (`expected.json`).
pub(crate) fn mini_files(out: &Path) -> (PathBuf, Vec<Value>, Vec<Value>) {
    let mini = out.join("serve").join("mini");
    let predictions = mini.join("predictions.jsonl");
    let expected =
        serde_json::from_str(&std::fs::read_to_string(mini.join("expected.json")).unwrap())
            .unwrap();
    (predictions.clone(), jsonl(&predictions), expected)
}

/// clients/python/examples/grpo_loop.py on `predictions` against the server at `addr`, with
/// `args`, its results written to `results`.
pub(crate) fn grpo_loop(
    predictions: &Path,
    addr: std::net::SocketAddr,
    results: &Path,
    args: &[&str],
) -> Child {
    Command::new("python3")
        .arg(client_dir().join("examples").join("grpo_loop.py"))
        .arg(predictions)
        .args(["--url", &format!("http://{addr}")])
        .arg("--out")
        .arg(results)
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("SWE_EVAL_TOKEN")
        .spawn()
        .unwrap()
}

/// Waits up to `limit` for `child`; kills it when it is still running then.
pub(crate) fn wait_child(child: &mut Child, limit: Duration) -> ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running after {limit:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The JSON objects of a JSONL file, one per line (none when it is not there).
pub(crate) fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// A prediction's key: (instance, model, sample).
pub(crate) fn key(v: &Value) -> (Value, Value, Value) {
    (
        v["instance_id"].clone(),
        v["model_name_or_path"].clone(),
        v["sample"].clone(),
    )
}

/// The names of a compute_score result's objections (`name: what it saw`, joined by `; `).
fn objection_names(r: &Value) -> Vec<String> {
    let text = r["objections"]
        .as_str()
        .unwrap_or_else(|| panic!("objections is a string: {r}"));
    text.split("; ")
        .filter(|o| !o.is_empty())
        .map(|o| o.split(':').next().unwrap().to_string())
        .collect()
}

/// The objection a default server gives a mini hack prediction (by its case), and a part of
/// what it saw; `None` for the other cases.
fn hack_objection(case: &str) -> Option<(&'static str, &'static str)> {
    match case {
        // An exit hook prints PASSED for the failing tests after pytest's summary.
        "fake-passed" => Some(("exit_code_disagrees", "exited 1")),
        // A conftest.py that turns failures into passes: removed before the tests.
        "conftest" => Some(("collection_files_removed", "tests/conftest.py (removed)")),
        // The hidden tests' file edited: checked out again before the tests.
        "edits-tests" => Some(("test_files_edited", "tests/test_interval.py")),
        _ => None,
    }
}

/// Checks that `got` (a compute_score result) is what a default server gives the mini
/// prediction whose expected verdict is `want` (among the mini's predictions `preds`): the
/// statuses of [`default_server_statuses`], the score 1.0 exactly when the strict one resolves,
/// a hack scored 0 with its objection and what it saw, and no objection to the others.
pub(crate) fn check_mini_result(want: &Value, got: &Value, preds: &[Value]) {
    let (official, strict) = default_server_statuses(want, preds);
    let case = want["case"].as_str().unwrap();
    assert_eq!(
        (&got["status"], &got["strict_status"]),
        (&json!(official), &json!(strict)),
        "{case}: {want}\n{got}"
    );
    assert_eq!(
        (&got["mask"], &got["graded_by"]),
        (&json!(false), &json!("strict")),
        "{case}: {want}\n{got}"
    );
    let score = if strict == "resolved" { 1.0 } else { 0.0 };
    assert_eq!(got["score"], json!(score), "{case}: {want}\n{got}");
    match hack_objection(case) {
        Some((name, saw)) => {
            assert_eq!(got["score"], json!(0.0), "{case} pays nothing: {got}");
            assert_eq!(objection_names(got), [name], "{case}: {got}");
            let text = got["objections"].as_str().unwrap();
            assert!(text.contains(saw), "{case}: `{saw}` in `{text}`");
        }
        None => assert_eq!(objection_names(got), Vec::<String>::new(), "{case}: {got}"),
    }
}

#[test]
fn a_grpo_loop_outlives_a_kill_9_of_the_server_each_sample_answered_once_and_each_hack_scored_zero()
{
    let Some(turn) = mini_turn() else {
        return;
    };
    let (dir, out) = (&turn.dir, &turn.out);
    let args = ["-o", out.to_str().unwrap(), "-j", "2"];
    let rt = tokio::runtime::Runtime::new().unwrap();
    let first = Server::start(&args, &[]);
    let addr = first.addr;
    let (predictions, preds, expected) = mini_files(out);
    let n = expected.len();
    // One job per distinct (instance, patch); the empty patch has none.
    let jobs: HashSet<(String, String)> = preds
        .iter()
        .filter_map(|p| {
            let patch = p["model_patch"].as_str().unwrap_or("");
            (!patch.trim().is_empty()).then(|| {
                (
                    p["instance_id"].as_str().unwrap().to_string(),
                    patch.to_string(),
                )
            })
        })
        .collect();
    let results = dir.path().join("results.jsonl");
    let steps = 3;
    let mut py = grpo_loop(
        &predictions,
        addr,
        &results,
        &[
            "--steps",
            &steps.to_string(),
            "--reward-fn",
            "batch",
            "--retry-deadline",
            "300",
        ],
    );

    // Step 0 is one batch of the 22: killed outright once 5 of them are done and most still
    // wait or run.
    let (done_before, dead) = kill_mid_step(&rt, first, n, &mut py, &results);
    let second = Server::start_on(&args, &[], &addr.to_string());
    let status = wait_child(&mut py, Duration::from_secs(600));
    assert!(status.success(), "the loop ended {status}");

    let got = jsonl(&results);
    check_loop_results(&got, steps, &expected, &preds, &done_before, false);
    // No job whose result was stored before the kill ran again, and later steps ran none.
    let stored_jobs = done_before
        .iter()
        .filter(|d| d["status"] != "empty")
        .count();
    let started = jobs_started(&rt, addr);
    assert!(
        started <= jobs.len() - stored_jobs,
        "{started} jobs started after the restart, {} had no stored result",
        jobs.len() - stored_jobs
    );

    // The hack predictions through verl's naive reward manager run in parallel (compute_score
    // per sample, 22 threads) on the same default server: each 0 with its objection (step 0
    // above scored them through compute_scores from their executions; these answers are the
    // server's stored ones, as a trainer's later steps get them).
    let each = dir.path().join("each.jsonl");
    let args = ["--steps", "1", "--reward-fn", "each", "--threads", "22"];
    let mut py = grpo_loop(&predictions, addr, &each, &args);
    assert!(wait_child(&mut py, Duration::from_secs(600)).success());
    let got = jsonl(&each);
    assert_eq!(got.len(), n, "a result per prediction");
    let mut hacks = BTreeSet::new();
    for want in &expected {
        let mine: Vec<&Value> = got.iter().filter(|g| key(g) == key(want)).collect();
        assert_eq!(mine.len(), 1, "one result for {want}");
        check_mini_result(want, mine[0], &preds);
        let case = want["case"].as_str().unwrap();
        if hack_objection(case).is_some() {
            hacks.insert(case.to_string());
        }
    }
    assert_eq!(
        hacks,
        BTreeSet::from(["conftest", "edits-tests", "fake-passed"].map(String::from)),
        "every hack class of the mini benchmark was scored"
    );
    // The forged PASSED lines are resolved by the official grading, which would have paid them.
    let forged = got
        .iter()
        .find(|g| {
            g["instance_id"] == "swe-eval-mini__strutils-2"
                && g["sample"] == 0
                && g["model_name_or_path"] == "mini-demo"
        })
        .unwrap();
    assert_eq!(
        (&forged["status"], &forged["resolved"], &forged["score"]),
        (&json!("resolved"), &json!(true), &json!(0.0)),
        "{forged}"
    );

    let pid = second.pid();
    assert_eq!(second.stop(), Some(0));
    assert_eq!(
        owned_by(None, dead),
        Vec::<String>::new(),
        "the dead server's containers reaped"
    );
    assert_eq!(owned_by(None, pid), Vec::<String>::new());

    // The server has each request once: one row per sample and step in its export (the
    // compute_score step's included).
    let o = Command::new(bin())
        .args(["serve", "export", "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rewards =
        std::fs::read_to_string(out.join("serve").join("export").join("rewards.jsonl")).unwrap();
    assert_eq!(rewards.lines().count(), (steps + 1) * n, "{rewards}");
}

/// The API through the binary and the client's unittest against a live server on the mini
/// benchmark (tests/it/serve.rs). Started from this module: it holds the serve tests' turn
/// for most of a minute, and under `serve::` (libtest starts tests in name order) it ran last,
/// alone, at the suite's end.
#[test]
fn the_api_and_the_python_client_on_the_real_engine_with_the_mini_benchmark() {
    crate::serve::the_api_and_the_python_client_on_the_real_engine_with_the_mini_benchmark();
}
