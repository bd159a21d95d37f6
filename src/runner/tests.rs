//! Runner tests on the fake engine: the fake answers each job as the driver would, from
//! keywords in the patch, so every path of the dispatcher can be driven without Docker.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::*;
use crate::engine::{exited, timed_out, FakeEngine};
use crate::engine::{EngineError, LABEL_RUN_ID, LABEL_TOOL};
use crate::engine::{JobSpec, Resource};
use swe_eval_core::dataset::Instance;
use swe_eval_core::predictions::Prediction;

const IMAGE: &str = "img:1";

fn instance(id: &str) -> Instance {
    serde_json::from_value(serde_json::json!({
        "instance_id": id, "repo": "o/r", "base_commit": "c", "patch": "gold",
        "FAIL_TO_PASS": ["t.py::test_new"], "PASS_TO_PASS": ["t.py::test_old"],
    }))
    .unwrap()
}

fn setup(id: &str, image: Result<&str, &str>) -> (String, Arc<Setup>) {
    (
        id.to_string(),
        Arc::new(Setup {
            instance: instance(id),
            image: image.map(str::to_string).map_err(str::to_string),
            eval_script: "echo eval\n".into(),
            log_parser: "parse_log_pytest".into(),
            cpus: None,
        }),
    )
}

fn pred(id: &str, model: &str, sample: u32, patch: &str) -> Prediction {
    Prediction {
        instance_id: id.into(),
        model_name_or_path: model.into(),
        model_patch: Some(patch.into()),
        sample,
        line: None,
        extra: Default::default(),
    }
}

fn file<'a>(job: &'a JobSpec, path: &str) -> &'a str {
    let f = job
        .files
        .iter()
        .find(|f| f.path == path)
        .expect("file present");
    std::str::from_utf8(&f.contents).unwrap()
}

/// What the driver would print for the keyword in the job's patch.
fn answer(job: &JobSpec) -> Result<crate::engine::JobOutput, EngineError> {
    let driver = file(job, driver::DRIVER_PATH);
    let nonce = driver
        .lines()
        .find_map(|l| l.strip_prefix("N="))
        .unwrap()
        .to_string();
    let patch = job
        .files
        .iter()
        .find(|f| f.path == driver::PATCH_PATH)
        .map_or("", |f| std::str::from_utf8(&f.contents).unwrap());
    let m = |s: &str| format!(">>>>> swe-eval {nonce} {s}\n");
    if patch.contains("NOAPPLY") {
        return Ok(exited(
            0,
            &format!(">>>>> Patch Apply Failed\n{}", m("apply failed")),
        ));
    }
    let head = if patch.is_empty() {
        m("apply none")
    } else {
        format!(">>>>> Applied Patch\n{}", m("apply ok git apply --verbose"))
    };
    if patch.contains("LOOP") {
        return Ok(timed_out(&format!(
            "{head}{}>>>>> Start Test Output\nrunning forever\n",
            m("eval start")
        )));
    }
    let (new, code) = if patch.contains("GOOD") {
        ("PASSED", 0)
    } else {
        ("FAILED", 1)
    };
    let body = format!(
        ">>>>> Start Test Output\n{new} t.py::test_new\nPASSED t.py::test_old\n===== 1 passed in 0.1s =====\n>>>>> End Test Output\n>>>>> Test Exit Code: {code}\n"
    );
    Ok(exited(
        0,
        &format!(
            "{head}{}{body}{}",
            m("eval start"),
            m(&format!("eval end {code}"))
        ),
    ))
}

fn fake() -> FakeEngine {
    let e = FakeEngine::new();
    e.add_image(IMAGE);
    e.on_image(IMAGE, answer);
    e
}

fn config(dir: &std::path::Path, run_id: &str) -> RunConfig {
    let mut c = RunConfig::new(run_id, dir.to_path_buf());
    c.workers = 2;
    c.backoff = Duration::from_millis(1);
    c
}

fn plan(setups: Vec<(String, Arc<Setup>)>, predictions: Vec<Prediction>) -> Plan {
    let instance_ids = setups.iter().map(|(id, _)| id.clone()).collect();
    Plan {
        setups: setups.into_iter().collect(),
        predictions,
        instance_ids,
    }
}

/// Runs to the end, with no interrupts; returns the report and all events.
async fn go(engine: &FakeEngine, plan: Plan, cfg: RunConfig) -> (RunReport, Vec<RunEvent>) {
    let (_itx, irx) = mpsc::unbounded_channel();
    let (etx, mut erx) = mpsc::unbounded_channel();
    let report = run(Arc::new(engine.clone()), plan, cfg, irx, etx)
        .await
        .unwrap();
    let mut events = Vec::new();
    while let Ok(e) = erx.try_recv() {
        events.push(e);
    }
    (report, events)
}

fn verdict(dir: &std::path::Path, run: &str, model: &str, id: &str, sample: u32) -> Verdict {
    let p = Layout::new(dir, run)
        .prediction_dir(model, id, sample)
        .join(store::VERDICT_FILE);
    store::read_verdict(&p).unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn every_category_is_reached_and_written() {
    let dir = tempfile::tempdir().unwrap();
    let e = fake();
    let setups = vec![
        setup("a", Ok(IMAGE)),
        setup("b", Ok(IMAGE)),
        setup("c", Ok(IMAGE)),
        setup("d", Ok(IMAGE)),
        setup("e", Ok(IMAGE)),
        setup("f", Err("image build failed: boom")),
        setup("g", Ok(IMAGE)),
    ];
    let preds = vec![
        pred("a", "m", 0, "GOOD"),
        pred("b", "m", 0, "BAD"),
        pred("c", "m", 0, "NOAPPLY"),
        pred("d", "m", 0, "LOOP"),
        pred("e", "m", 0, ""),
        pred("f", "m", 0, "GOOD"),
        pred("zzz", "m", 0, "GOOD"),
    ];
    let (r, _) = go(&e, plan(setups, preds), config(dir.path(), "r1")).await;
    let cat = |id| verdict(dir.path(), "r1", "m", id, 0).category;
    assert_eq!(cat("a"), Category::Resolved);
    assert_eq!(cat("b"), Category::Unresolved);
    assert_eq!(
        cat("c"),
        Category::Error,
        "an unapplicable patch is the model's error"
    );
    assert_eq!(cat("d"), Category::Error);
    assert!(verdict(dir.path(), "r1", "m", "d", 0).timed_out);
    assert_eq!(cat("e"), Category::EmptyPatch);
    assert_eq!(
        cat("f"),
        Category::InfraError,
        "a failed image fails only its instance"
    );
    assert_eq!(
        r.jobs_run, 4,
        "empty patches do not run; the failed image is not tried"
    );
    assert_eq!(e.jobs().len(), 4);
    assert_eq!(
        r.problems.len(),
        1,
        "the prediction of an unknown instance: {:?}",
        r.problems
    );

    let layout = Layout::new(dir.path(), "r1");
    let a = layout.prediction_dir("m", "a", 0);
    for f in [
        "patch.diff",
        "eval.sh",
        "test_output.txt",
        "report.json",
        "run_instance.log",
    ] {
        assert!(a.join(f).is_file(), "{f}");
    }
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["a"]["resolved"], true);
    assert_eq!(
        report["a"]["tests_status"]["FAIL_TO_PASS"]["success"][0],
        "t.py::test_new"
    );
    assert!(
        !layout
            .prediction_dir("m", "c", 0)
            .join("report.json")
            .exists(),
        "no report for an unapplied patch"
    );
    let timeout_log =
        std::fs::read_to_string(layout.prediction_dir("m", "d", 0).join("test_output.txt"))
            .unwrap();
    assert!(timeout_log.contains("Timeout error: 1800 seconds exceeded."));

    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(layout.summary_path("m", 0)).unwrap()).unwrap();
    assert_eq!(s["schema_version"], 2);
    assert_eq!(s["total_instances"], 7);
    assert_eq!(s["resolved_ids"], serde_json::json!(["a"]));
    assert_eq!(s["unresolved_ids"], serde_json::json!(["b"]));
    assert_eq!(s["error_ids"], serde_json::json!(["c", "d", "f"]));
    assert_eq!(s["error_reasons"]["infra"], serde_json::json!(["f"]));
    assert_eq!(s["error_reasons"]["timeout"], serde_json::json!(["d"]));
    assert_eq!(s["unstopped_containers"], serde_json::json!([]));
    assert_eq!(s["empty_patch_ids"], serde_json::json!(["e"]));
    assert_eq!(s["incomplete_ids"], serde_json::json!(["g"]));
    let jsonl = std::fs::read_to_string(layout.jsonl_path()).unwrap();
    assert_eq!(jsonl.lines().count(), 6);
    for line in jsonl.lines() {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            row["format_version"],
            swe_eval_core::wire::VERDICT_VERSION,
            "{line}"
        );
    }
    let csv = std::fs::read_to_string(layout.csv_path()).unwrap();
    assert_eq!(csv.lines().count(), 7, "header and six rows");
    assert!(csv.starts_with("instance_id,model,sample,patch_hash"));
    assert!(csv.lines().next().unwrap().ends_with(",format_version"));
}

#[tokio::test]
async fn resume_skips_done_predictions_and_reruns_changed_and_infra_ones() {
    let dir = tempfile::tempdir().unwrap();
    let e = fake();
    let setups = || {
        vec![
            setup("a", Ok(IMAGE)),
            setup("b", Ok(IMAGE)),
            setup("c", Ok("img:missing")),
        ]
    };
    let preds = vec![
        pred("a", "m", 0, "GOOD"),
        pred("b", "m", 0, "BAD"),
        pred("c", "m", 0, "GOOD"),
    ];
    let (r1, _) = go(&e, plan(setups(), preds.clone()), config(dir.path(), "r")).await;
    assert_eq!(r1.jobs_run, 3);
    assert_eq!(
        r1.count(Category::InfraError),
        1,
        "the missing image is an infra error"
    );

    let (r2, _) = go(&e, plan(setups(), preds), config(dir.path(), "r")).await;
    assert_eq!(r2.resumed, 2);
    assert_eq!(r2.jobs_run, 1, "only the infra error runs again");
    assert_eq!(
        r2.count(Category::Resolved) + r2.count(Category::Unresolved),
        2
    );

    let changed = vec![
        pred("a", "m", 0, "GOOD"),
        pred("b", "m", 0, "GOOD (fixed)"),
        pred("c", "m", 0, "GOOD"),
    ];
    let (r3, _) = go(&e, plan(setups(), changed), config(dir.path(), "r")).await;
    assert_eq!(r3.resumed, 1);
    assert_eq!(r3.jobs_run, 2);
    assert_eq!(
        verdict(dir.path(), "r", "m", "b", 0).category,
        Category::Resolved
    );
    let jsonl = std::fs::read_to_string(Layout::new(dir.path(), "r").jsonl_path()).unwrap();
    assert_eq!(jsonl.lines().count(), 3, "each prediction exactly once");
}

#[tokio::test]
async fn identical_patches_run_once_and_share_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let e = fake();
    let preds = vec![
        pred("a", "m1", 0, "GOOD"),
        pred("a", "m2", 0, "GOOD"),
        pred("a", "m1", 1, "GOOD"),
        pred("a", "m1", 2, "BAD"),
    ];
    let (r, _) = go(
        &e,
        plan(vec![setup("a", Ok(IMAGE))], preds),
        config(dir.path(), "r"),
    )
    .await;
    assert_eq!(r.jobs_run, 2);
    assert_eq!(e.jobs().len(), 2);
    let shared = verdict(dir.path(), "r", "m2", "a", 0);
    assert_eq!(shared.category, Category::Resolved);
    assert_eq!(shared.shared_from.as_deref(), Some("m1/0"));
    assert_eq!(
        verdict(dir.path(), "r", "m1", "a", 1).category,
        Category::Resolved
    );
    assert_eq!(
        verdict(dir.path(), "r", "m1", "a", 2).category,
        Category::Unresolved
    );
    let layout = Layout::new(dir.path(), "r");
    assert!(
        layout
            .prediction_dir("m1", "a", 1)
            .join("test_output.txt")
            .is_file(),
        "shared verdicts get the logs too"
    );
    assert!(layout.summary_path("m1", 1).is_file() && layout.summary_path("m1", 2).is_file());
    assert!(layout.summary_path("m2", 0).is_file());

    // Without dedupe (validate), every sample runs.
    let dir2 = tempfile::tempdir().unwrap();
    let mut cfg = config(dir2.path(), "r");
    cfg.dedupe = false;
    let preds = vec![pred("a", "m1", 0, "GOOD"), pred("a", "m1", 1, "GOOD")];
    let (r, _) = go(&fake(), plan(vec![setup("a", Ok(IMAGE))], preds), cfg).await;
    assert_eq!(r.jobs_run, 2);
}

fn daemon_gone() -> EngineError {
    EngineError::Wait {
        name: "x".into(),
        message: "connection reset by peer".into(),
    }
}

#[tokio::test]
async fn transient_engine_errors_are_retried_and_counted_apart() {
    let dir = tempfile::tempdir().unwrap();
    let e = fake();
    e.inject_job_fault(daemon_gone())
        .inject_job_fault(daemon_gone());
    let (r, _) = go(
        &e,
        plan(vec![setup("a", Ok(IMAGE))], vec![pred("a", "m", 0, "GOOD")]),
        config(dir.path(), "r"),
    )
    .await;
    let v = verdict(dir.path(), "r", "m", "a", 0);
    assert_eq!(
        v.category,
        Category::Resolved,
        "two failures, then success on the third try"
    );
    assert_eq!(v.infra_retries, 2);
    assert_eq!(r.infra_retries, 2);
    let names: std::collections::HashSet<_> = e.jobs().iter().map(|j| j.name.clone()).collect();
    assert_eq!(names.len(), 3, "each attempt has its own container name");

    let dir = tempfile::tempdir().unwrap();
    let e = fake();
    for _ in 0..3 {
        e.inject_job_fault(daemon_gone());
    }
    let (r, _) = go(
        &e,
        plan(
            vec![setup("a", Ok(IMAGE)), setup("b", Ok(IMAGE))],
            vec![pred("a", "m", 0, "GOOD"), pred("b", "m", 0, "GOOD")],
        ),
        {
            let mut c = config(dir.path(), "r");
            c.workers = 1;
            c.attempts = 3;
            c
        },
    )
    .await;
    assert_eq!(
        r.count(Category::InfraError),
        1,
        "retries ran out for one job only"
    );
    assert_eq!(r.count(Category::Resolved), 1);
    let v = verdict(dir.path(), "r", "m", "a", 0);
    assert!(
        v.reason.unwrap().contains("connection reset"),
        "the reason names the failure"
    );
    assert_eq!(r.infra_retries, 2);
}

#[tokio::test]
async fn missing_image_is_not_retried() {
    let dir = tempfile::tempdir().unwrap();
    let e = fake();
    let (r, _) = go(
        &e,
        plan(
            vec![setup("a", Ok("nope"))],
            vec![pred("a", "m", 0, "GOOD")],
        ),
        config(dir.path(), "r"),
    )
    .await;
    assert_eq!(e.jobs().len(), 1);
    assert_eq!(r.count(Category::InfraError), 1);
}

fn many(n: usize) -> (Vec<(String, Arc<Setup>)>, Vec<Prediction>) {
    let setups = (0..n).map(|i| setup(&format!("i{i}"), Ok(IMAGE))).collect();
    let preds = (0..n)
        .map(|i| pred(&format!("i{i}"), "m", 0, "GOOD"))
        .collect();
    (setups, preds)
}

/// Runs with `interrupts` Ctrl-Cs sent as soon as the first job starts.
async fn interrupted(
    engine: &FakeEngine,
    dir: &std::path::Path,
    n: usize,
    interrupts: usize,
) -> RunReport {
    let (setups, preds) = many(n);
    let (itx, irx) = mpsc::unbounded_channel();
    let (etx, mut erx) = mpsc::unbounded_channel();
    let listener = tokio::spawn(async move {
        while let Some(ev) = erx.recv().await {
            if matches!(ev, RunEvent::JobStarted { .. }) {
                for _ in 0..interrupts {
                    let _ = itx.send(());
                }
            }
        }
    });
    let mut cfg = config(dir, "r");
    cfg.workers = 1;
    let r = run(Arc::new(engine.clone()), plan(setups, preds), cfg, irx, etx)
        .await
        .unwrap();
    listener.await.unwrap();
    r
}

#[tokio::test(start_paused = true)]
async fn first_interrupt_finishes_running_jobs_and_writes_everything() {
    let dir = tempfile::tempdir().unwrap();
    let e = fake();
    e.set_job_delay(Duration::from_secs(10));
    let r = interrupted(&e, dir.path(), 5, 1).await;
    assert!(r.interrupted && !r.killed);
    assert_eq!(r.jobs_run, 1, "nothing dispatched after the interrupt");
    assert_eq!(
        r.count(Category::Resolved),
        1,
        "the running job finished and was written"
    );
    assert_eq!(r.not_run, 4);
    let s: serde_json::Value = serde_json::from_slice(
        &std::fs::read(Layout::new(dir.path(), "r").summary_path("m", 0)).unwrap(),
    )
    .unwrap();
    assert_eq!(s["resolved_instances"], 1);
    assert_eq!(s["incomplete_ids"].as_array().unwrap().len(), 4);

    // Resuming completes the rest without redoing the first.
    let (setups, preds) = many(5);
    let (r2, _) = go(&e, plan(setups, preds), config(dir.path(), "r")).await;
    assert_eq!((r2.resumed, r2.jobs_run), (1, 4));
}

#[tokio::test(start_paused = true)]
async fn second_interrupt_kills_this_runs_containers() {
    let dir = tempfile::tempdir().unwrap();
    let e = fake();
    e.set_job_delay(Duration::from_secs(3600));
    let labels = BTreeMap::from([
        (LABEL_TOOL.to_string(), "1".to_string()),
        (LABEL_RUN_ID.to_string(), "r".to_string()),
    ]);
    let labels = {
        let mut l = labels;
        l.insert(LABEL_OWNER.to_string(), crate::owner::owner_id());
        l
    };
    // Stands for the running job's container, which the fake does not list by itself.
    e.add_container(Resource {
        id: "c1".into(),
        name: "swe-eval.r.0.0".into(),
        labels,
    });
    let r = interrupted(&e, dir.path(), 3, 2).await;
    assert!(r.killed);
    assert_eq!(r.verdicts_written(), 0);
    assert!(e
        .calls()
        .contains(&crate::engine::Call::RemoveContainer("c1".into())));
    assert!(
        Layout::new(dir.path(), "r").summary_path("m", 0).is_file(),
        "what is done is still written"
    );
}

#[tokio::test]
async fn reap_at_start_removes_containers_of_dead_processes_only() {
    let dir = tempfile::tempdir().unwrap();
    let e = fake();
    let c = |id: &str, run: &str, owner: Option<String>| {
        let mut labels = BTreeMap::from([
            (LABEL_TOOL.to_string(), "1".to_string()),
            (LABEL_RUN_ID.to_string(), run.to_string()),
        ]);
        if let Some(o) = owner {
            labels.insert(LABEL_OWNER.to_string(), o);
        }
        Resource {
            id: id.into(),
            name: id.into(),
            labels,
        }
    };
    let host = crate::owner::hostname();
    let dead = format!("{host}:{}:1", std::process::id());
    let live_other = format!("{host}:1:{}", crate::owner::start_time(1).unwrap());
    e.add_container(c("same-run-dead", "r", Some(dead.clone())));
    e.add_container(c("same-run-live", "r", Some(live_other.clone())));
    e.add_container(c("other-host", "r", Some("elsewhere:1:1".into())));
    e.add_container(c("unowned-same-run", "r", None));
    e.add_container(c("unowned-other-run", "other", None));
    e.add_container(c("dead-other-run", "other", Some(dead)));
    let (r, events) = go(&e, plan(vec![], vec![]), config(dir.path(), "r")).await;
    assert!(r.problems.is_empty());
    let removed: Vec<_> = e
        .calls()
        .into_iter()
        .filter_map(|c| match c {
            crate::engine::Call::RemoveContainer(id) => Some(id),
            _ => None,
        })
        .collect();
    assert_eq!(
        removed,
        ["same-run-dead", "unowned-same-run", "dead-other-run"],
        "a live process's containers are never touched"
    );
    assert!(events.iter().any(|e| matches!(
        e,
        RunEvent::Reaped {
            count: 3,
            at_start: true
        }
    )));
}

#[tokio::test]
async fn strict_mode_ships_the_collection_files_to_remove() {
    let dir = tempfile::tempdir().unwrap();
    let e = fake();
    let patch = "diff --git a/tests/conftest.py b/tests/conftest.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/conftest.py\n@@ -0,0 +1 @@\n+GOOD = 1\n";
    let mut cfg = config(dir.path(), "r");
    cfg.strict = true;
    go(
        &e,
        plan(vec![setup("a", Ok(IMAGE))], vec![pred("a", "m", 0, patch)]),
        cfg,
    )
    .await;
    let job = &e.jobs()[0];
    assert_eq!(
        file(job, driver::STRICT_REMOVE_PATH),
        "A\ttests/conftest.py\n"
    );
    assert!(file(job, driver::DRIVER_PATH).contains(driver::STRICT_REMOVE_PATH));
    assert_eq!(job.labels.get(LABEL_RUN_ID).map(String::as_str), Some("r"));
    assert!(!job.network, "network is off by default");
}

#[tokio::test]
async fn a_write_failure_stops_the_run_and_nothing_half_written_counts() {
    let dir = tempfile::tempdir().unwrap();
    let e = fake();
    let layout = Layout::new(dir.path(), "r");
    // A file where a prediction's folder must go: its logs cannot be written.
    let blocked = layout.prediction_dir("m", "i0", 0);
    std::fs::create_dir_all(blocked.parent().unwrap()).unwrap();
    std::fs::write(&blocked, b"in the way").unwrap();
    let (setups, preds) = many(4);
    let mut cfg = config(dir.path(), "r");
    cfg.workers = 1;
    let (r, _) = go(&e, plan(setups, preds), cfg).await;
    assert_eq!(r.jobs_run, 1, "no job is dispatched after a write failure");
    assert_eq!(r.verdicts_written(), 0);
    assert!(r.problems[0].contains("i0"), "{:?}", r.problems);
}

#[tokio::test]
async fn a_second_process_on_the_same_run_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _held = store::lock(&Layout::new(dir.path(), "r")).unwrap();
    let (_itx, irx) = mpsc::unbounded_channel();
    let (etx, _erx) = mpsc::unbounded_channel();
    let err = run(
        Arc::new(fake()),
        plan(vec![], vec![]),
        config(dir.path(), "r"),
        irx,
        etx,
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("in use"), "{err}");
}

#[test]
fn a_job_gets_at_least_the_cpus_its_spec_asks_for() {
    let base = crate::engine::Limits::default();
    let (_, plain) = setup("a", Ok("img"));
    assert_eq!(plain.limits(&base), base, "no spec CPUs: the run's limits");
    let mut two = (*plain).clone();
    two.cpus = Some(2.0);
    assert_eq!(two.limits(&base).cpus, Some(2.0), "pylint's nano_cpus: 2");
    assert_eq!(two.limits(&base).memory_bytes, base.memory_bytes);
    let mut wide = base.clone();
    wide.cpus = Some(4.0);
    assert_eq!(
        two.limits(&wide).cpus,
        Some(4.0),
        "never fewer than the run's"
    );
    wide.cpus = None;
    assert_eq!(two.limits(&wide).cpus, None, "no limit stays no limit");
}

/// Runs `plan` with `awaited` instances' setups sent by `send` while it executes.
async fn arriving(
    engine: &FakeEngine,
    plan: Plan,
    awaited: &[&str],
    cfg: RunConfig,
    send: impl std::future::Future<Output = ()>,
    arrive_to: impl FnOnce(Arrive),
) -> (RunReport, Vec<RunEvent>) {
    let (arrive, arrivals) = arrivals(awaited.iter().map(|s| s.to_string()));
    arrive_to(arrive);
    let (_itx, irx) = mpsc::unbounded_channel();
    let (etx, mut erx) = mpsc::unbounded_channel();
    let running = run_arriving(Arc::new(engine.clone()), plan, arrivals, cfg, irx, etx);
    let (report, ()) = tokio::join!(running, send);
    let mut events = Vec::new();
    while let Ok(e) = erx.try_recv() {
        events.push(e);
    }
    (report.unwrap(), events)
}

#[tokio::test(start_paused = true)]
async fn jobs_of_an_awaited_instance_wait_for_its_setup_and_the_others_run_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let e = fake();
    e.set_job_delay(Duration::from_secs(1));
    // b's setup in the plan says it has no image yet; the real one arrives after 30 s.
    let setups = vec![
        setup("a", Ok(IMAGE)),
        setup("b", Err("not prepared yet")),
        setup("c", Err("not prepared yet")),
    ];
    let preds = vec![
        pred("a", "m", 0, "GOOD"),
        pred("b", "m", 0, "GOOD"),
        pred("c", "m", 0, "GOOD"),
    ];
    let (tx, rx) = tokio::sync::oneshot::channel::<Arrive>();
    let send = async move {
        let arrive = rx.await.unwrap();
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert!(arrive.send(setup("b", Ok(IMAGE)).1));
        // c's image failed: its prediction gets its infrastructure error at once.
        assert!(arrive.send(setup("c", Err("image build failed: boom")).1));
        arrive.closed().await;
    };
    let (r, events) = arriving(
        &e,
        plan(setups, preds),
        &["b", "c"],
        config(dir.path(), "r"),
        send,
        |a| tx.send(a).unwrap(),
    )
    .await;
    let started = started_order(&events);
    assert_eq!(started, ["a", "b", "c"], "a first: b and c were awaited");
    let cat = |id| verdict(dir.path(), "r", "m", id, 0).category;
    assert_eq!(cat("a"), Category::Resolved);
    assert_eq!(
        cat("b"),
        Category::Resolved,
        "run with the setup that arrived"
    );
    assert_eq!(cat("c"), Category::InfraError);
    assert!(verdict(dir.path(), "r", "m", "c", 0)
        .reason
        .unwrap()
        .contains("boom"));
    assert_eq!(r.jobs_run, 2);
    assert_eq!(e.jobs().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn awaited_setups_never_sent_give_infra_verdicts_and_an_interrupt_closes_the_channel() {
    // The preparing side goes away without sending b: b runs with the plan's setup.
    let dir = tempfile::tempdir().unwrap();
    let e = fake();
    let setups = vec![setup("a", Ok(IMAGE)), setup("b", Err("image not prepared"))];
    let preds = vec![pred("a", "m", 0, "GOOD"), pred("b", "m", 0, "GOOD")];
    let (r, _) = arriving(
        &e,
        plan(setups.clone(), preds.clone()),
        &["b"],
        config(dir.path(), "r"),
        async {},
        drop,
    )
    .await;
    assert_eq!(r.count(Category::InfraError), 1);
    assert_eq!(r.not_run, 0);

    // Interrupted while b is awaited: the preparing side learns it (the channel closes),
    // and b is not run.
    let dir = tempfile::tempdir().unwrap();
    let e = fake();
    e.set_job_delay(Duration::from_secs(5));
    let (arrive, arrivals) = arrivals(["b".to_string()]);
    let (itx, irx) = mpsc::unbounded_channel();
    let (etx, _erx) = mpsc::unbounded_channel();
    let running = run_arriving(
        Arc::new(e.clone()),
        plan(setups, preds),
        arrivals,
        config(dir.path(), "r"),
        irx,
        etx,
    );
    let preparing = async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!arrive.is_closed());
        itx.send(()).unwrap();
        arrive.closed().await;
        assert!(
            !arrive.send(setup("b", Ok(IMAGE)).1),
            "no more setups taken"
        );
    };
    let (r, ()) = tokio::join!(running, preparing);
    let r = r.unwrap();
    assert!(r.interrupted);
    assert_eq!((r.jobs_run, r.not_run), (1, 1));
}

#[tokio::test]
async fn jobs_start_longest_first_by_earlier_durations_which_the_run_updates() {
    let dir = tempfile::tempdir().unwrap();
    let durations = dir.path().join("cache").join("durations.json");
    std::fs::create_dir_all(durations.parent().unwrap()).unwrap();
    std::fs::write(
        &durations,
        r#"{"a": 1.0, "b": 9.0, "c": 5.0, "other": 3.0}"#,
    )
    .unwrap();
    let e = FakeEngine::new();
    e.add_image(IMAGE);
    e.on_image(IMAGE, |job| {
        let mut out = answer(job)?;
        out.run = Duration::from_millis(2500);
        Ok(out)
    });
    let mut cfg = config(dir.path(), "r");
    cfg.workers = 1;
    cfg.durations = Some(durations.clone());
    let ids = ["a", "b", "c"];
    let p = plan(
        ids.iter().map(|id| setup(id, Ok(IMAGE))).collect(),
        ids.iter().map(|id| pred(id, "m", 0, "GOOD")).collect(),
    );
    let (report, events) = go(&e, p, cfg).await;
    assert_eq!(report.count(Category::Resolved), 3);
    let started = started_order(&events);
    assert_eq!(started, ["b", "c", "a"], "longest expected first");
    assert!(events.iter().any(|ev| matches!(ev,
        RunEvent::Note { message } if message.starts_with("longest jobs first: 3 of 3"))));
    let (kept, bad) = Durations::load(&durations);
    assert_eq!(bad, None);
    assert_eq!(
        (kept.get("a"), kept.get("b"), kept.get("other")),
        (Some(2.5), Some(2.5), Some(3.0)),
        "this run's figures replace the old ones; others are kept"
    );

    // Without the file's records (a bad file), the plan's order, with a note saying why.
    std::fs::write(&durations, "garbage").unwrap();
    let mut cfg = config(dir.path(), "r2");
    cfg.workers = 1;
    cfg.durations = Some(durations.clone());
    let p = plan(
        ids.iter().map(|id| setup(id, Ok(IMAGE))).collect(),
        ids.iter().map(|id| pred(id, "m", 0, "GOOD")).collect(),
    );
    let (report, events) = go(&e, p, cfg).await;
    assert_eq!(report.count(Category::Resolved), 3);
    assert!(events.iter().any(|ev| matches!(ev,
        RunEvent::Note { message } if message.contains("not used (plan order kept)"))));
    let started = started_order(&events);
    assert_eq!(started, ["a", "b", "c"]);
}

/// The instances of the jobs, in the order they started.
fn started_order(events: &[RunEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|ev| match ev {
            RunEvent::JobStarted { instance_id } => Some(instance_id.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn jobs_whose_images_arrive_later_join_the_queue_in_longest_first_order() {
    let dir = tempfile::tempdir().unwrap();
    let durations = dir.path().join("durations.json");
    std::fs::write(&durations, r#"{"a": 1.0, "b": 9.0, "c": 5.0, "d": 7.0}"#).unwrap();
    let e = fake();
    e.set_job_delay(Duration::from_secs(10));
    let setups = vec![
        setup("a", Ok(IMAGE)),
        setup("b", Ok(IMAGE)),
        setup("c", Err("not prepared yet")),
        setup("d", Ok(IMAGE)),
    ];
    let preds = ["a", "b", "c", "d"]
        .map(|id| pred(id, "m", 0, "GOOD"))
        .to_vec();
    let (tx, rx) = tokio::sync::oneshot::channel::<Arrive>();
    let send = async move {
        let arrive = rx.await.unwrap();
        // c arrives while b (the longest ready one) runs: it goes before a, after d.
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(arrive.send(setup("c", Ok(IMAGE)).1));
        arrive.closed().await;
    };
    let mut cfg = config(dir.path(), "r");
    cfg.workers = 1;
    cfg.durations = Some(durations);
    let (r, events) = arriving(&e, plan(setups, preds), &["c"], cfg, send, |a| {
        tx.send(a).unwrap()
    })
    .await;
    assert_eq!(r.count(Category::Resolved), 4);
    assert_eq!(started_order(&events), ["b", "d", "c", "a"]);
}

#[tokio::test(start_paused = true)]
async fn a_burst_of_arriving_images_starts_longest_first_not_in_arrival_order() {
    let dir = tempfile::tempdir().unwrap();
    let durations = dir.path().join("durations.json");
    std::fs::write(&durations, r#"{"a": 1.0, "b": 9.0, "c": 5.0, "d": 7.0}"#).unwrap();
    let e = fake();
    e.set_job_delay(Duration::from_secs(10));
    let ids = ["a", "b", "c", "d"];
    let setups = ids.map(|id| setup(id, Err("not prepared yet"))).to_vec();
    let preds = ids.map(|id| pred(id, "m", 0, "GOOD")).to_vec();
    let (tx, rx) = tokio::sync::oneshot::channel::<Arrive>();
    let send = async move {
        let arrive = rx.await.unwrap();
        // Images found present: one arrival every 10 ms, the shortest first.
        for id in ids {
            tokio::time::sleep(Duration::from_millis(10)).await;
            assert!(arrive.send(setup(id, Ok(IMAGE)).1));
        }
        arrive.closed().await;
    };
    let mut cfg = config(dir.path(), "r");
    cfg.workers = 2;
    cfg.durations = Some(durations);
    let (r, events) = arriving(&e, plan(setups, preds), &ids, cfg, send, |a| {
        tx.send(a).unwrap()
    })
    .await;
    assert_eq!(r.count(Category::Resolved), 4);
    assert_eq!(started_order(&events), ["b", "d", "c", "a"]);
}

#[tokio::test(start_paused = true)]
async fn a_longer_image_still_building_holds_dispatch_only_briefly() {
    let dir = tempfile::tempdir().unwrap();
    let durations = dir.path().join("durations.json");
    std::fs::write(&durations, r#"{"a": 1.0, "b": 9.0}"#).unwrap();
    let e = fake();
    e.set_job_delay(Duration::from_secs(1));
    let setups = vec![setup("a", Ok(IMAGE)), setup("b", Err("not prepared yet"))];
    let preds = ["a", "b"].map(|id| pred(id, "m", 0, "GOOD")).to_vec();
    let (tx, rx) = tokio::sync::oneshot::channel::<Arrive>();
    let watching = e.clone();
    let send = async move {
        let arrive = rx.await.unwrap();
        // b's image takes a minute to build: a must not wait for it; held at most SETTLE,
        // it has run (1 s) long before.
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(
            watching.jobs().len(),
            1,
            "a ran while b's image was building"
        );
        tokio::time::sleep(Duration::from_secs(55)).await;
        assert!(arrive.send(setup("b", Ok(IMAGE)).1));
        arrive.closed().await;
    };
    let mut cfg = config(dir.path(), "r");
    cfg.workers = 2;
    cfg.durations = Some(durations);
    let (r, events) = arriving(&e, plan(setups, preds), &["b"], cfg, send, |a| {
        tx.send(a).unwrap()
    })
    .await;
    assert_eq!(r.count(Category::Resolved), 2);
    assert_eq!(started_order(&events), ["a", "b"]);
}

#[tokio::test(start_paused = true)]
async fn jobs_prepared_ahead_start_as_workers_free_up_and_never_more_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let e = fake();
    e.set_prepares_ahead().set_job_delay(Duration::from_secs(1));
    let (setups, preds) = many(6);
    let watching = e.clone();
    let (itx, irx) = mpsc::unbounded_channel::<()>();
    let (etx, _erx) = mpsc::unbounded_channel();
    let mut cfg = config(dir.path(), "r");
    cfg.workers = 2;
    let running = run(Arc::new(e.clone()), plan(setups, preds), cfg, irx, etx);
    let look = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        // Two running, two more prepared and waiting at the gate.
        assert_eq!(watching.jobs().len(), 4);
    };
    let (r, ()) = tokio::join!(running, look);
    drop(itx);
    let r = r.unwrap();
    assert_eq!((r.count(Category::Resolved), r.jobs_run), (6, 6));
    assert_eq!(
        e.max_running(),
        2,
        "the gate holds the running to the workers"
    );
}

#[tokio::test(start_paused = true)]
async fn an_interrupt_withdraws_prepared_jobs_which_count_as_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let e = fake();
    e.set_prepares_ahead()
        .set_job_delay(Duration::from_secs(10));
    let (setups, preds) = many(4);
    let (itx, irx) = mpsc::unbounded_channel();
    let (etx, _erx) = mpsc::unbounded_channel();
    let mut cfg = config(dir.path(), "r");
    cfg.workers = 1;
    let running = run(Arc::new(e.clone()), plan(setups, preds), cfg, irx, etx);
    let interrupt = async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(e.jobs().len(), 2, "one running, one prepared");
        itx.send(()).unwrap();
    };
    let (r, ()) = tokio::join!(running, interrupt);
    let r = r.unwrap();
    assert!(r.interrupted && !r.killed);
    assert_eq!(r.jobs_run, 1, "the prepared job never started");
    assert_eq!(r.count(Category::Resolved), 1, "the running one finished");
    assert_eq!(r.not_run, 3);
    // Resuming runs the other three, the withdrawn one among them.
    let (setups, preds) = many(4);
    let (r2, _) = go(&e, plan(setups, preds), config(dir.path(), "r")).await;
    assert_eq!((r2.resumed, r2.jobs_run), (1, 3));
}

/// Submits `items` (instance, model, sample, patch, deadline in seconds from now) to a running
/// dispatcher, each in its own folder under `dir/sub`; returns the replies' receivers.
fn submit_items(
    submit: &Submit,
    dir: &std::path::Path,
    setups: Vec<NewSetup>,
    items: &[(&str, &str, u32, &str, Option<u64>)],
) -> Vec<tokio::sync::oneshot::Receiver<Delivery>> {
    let mut rxs = Vec::new();
    let mut sub = Submission {
        setups,
        items: Vec::new(),
    };
    for (id, model, sample, patch, deadline) in items {
        let (tx, rx) = tokio::sync::oneshot::channel();
        sub.items.push(Submitted {
            prediction: pred(id, model, *sample, patch),
            dir: dir.join("sub").join(format!("{id}.{model}.{sample}")),
            deadline: deadline.map(|s| tokio::time::Instant::now() + Duration::from_secs(s)),
            reply: tx,
        });
        rxs.push(rx);
    }
    submit.send(sub).expect("the dispatcher takes submissions");
    rxs
}

/// A dispatcher with no plan, fed through the returned [`Submit`]: its run (to be awaited), its
/// interrupts and its events.
#[allow(clippy::type_complexity)]
fn serving(
    e: &FakeEngine,
    cfg: RunConfig,
    arrivals: Arrivals,
) -> (
    Submit,
    mpsc::UnboundedSender<()>,
    impl std::future::Future<Output = Result<RunReport, RunError>>,
    mpsc::UnboundedReceiver<RunEvent>,
) {
    let (submit, subs) = submissions();
    let (itx, irx) = mpsc::unbounded_channel();
    let (etx, erx) = mpsc::unbounded_channel();
    let running = dispatch(
        Arc::new(e.clone()),
        Plan::default(),
        arrivals,
        subs,
        cfg,
        irx,
        etx,
    );
    (submit, itx, running, erx)
}

/// The setup of `id` with its image ready, as a submission hands it over.
fn ready(id: &str) -> Vec<NewSetup> {
    vec![NewSetup {
        setup: setup(id, Ok(IMAGE)).1,
        awaited: false,
    }]
}

fn done(d: Delivery) -> Finished {
    match d {
        Delivery::Done(f) => *f,
        other => panic!("not done: {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn predictions_submitted_while_it_runs_are_answered_and_it_ends_when_the_channel_closes() {
    let dir = tempfile::tempdir().unwrap();
    let e = fake();
    e.set_job_delay(Duration::from_secs(2));
    let (submit, subs) = submissions();
    let (arrive, arrivals) = arrivals(Vec::<String>::new());
    let (_itx, irx) = mpsc::unbounded_channel();
    let (etx, mut erx) = mpsc::unbounded_channel();
    let mut cfg = config(dir.path(), "serve");
    cfg.summaries = false;
    let running = dispatch(
        Arc::new(e.clone()),
        Plan::default(),
        arrivals,
        subs,
        cfg,
        irx,
        etx,
    );
    let feeding = async {
        // a is ready; b's image is still being prepared: its setup arrives 10 s later.
        let (_, a) = setup("a", Ok(IMAGE));
        let (_, b_stand_in) = setup("b", Err("not prepared yet"));
        let new = vec![
            NewSetup {
                setup: a,
                awaited: false,
            },
            NewSetup {
                setup: b_stand_in,
                awaited: true,
            },
        ];
        let rxs = submit_items(
            &submit,
            dir.path(),
            new,
            &[
                ("b", "m", 0, "GOOD", None),
                ("a", "m", 0, "GOOD", None),
                ("a", "m", 1, "BAD", None),
                ("a", "m", 2, "", None),
            ],
        );
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert!(arrive.send(setup("b", Ok(IMAGE)).1));
        let mut got = Vec::new();
        for rx in rxs {
            got.push(done(rx.await.expect("answered")));
        }
        // Later, while it still runs: a second submission of the same prediction is found
        // in its folder (nothing runs), a new one runs.
        let again = submit_items(
            &submit,
            dir.path(),
            Vec::new(),
            &[("a", "m", 0, "GOOD", None), ("b", "m", 5, "BAD", None)],
        );
        for rx in again {
            got.push(done(rx.await.expect("answered")));
        }
        drop(submit);
        drop(arrive);
        got
    };
    let (report, got) = tokio::join!(running, feeding);
    let report = report.unwrap();
    let cats: Vec<_> = got.iter().map(|f| f.verdict.category).collect();
    assert_eq!(
        cats,
        [
            Category::Resolved,
            Category::Resolved,
            Category::Unresolved,
            Category::EmptyPatch,
            Category::Resolved,
            Category::Unresolved
        ]
    );
    // b waited for its image, a did not; the empty patch and the resumed one ran nothing.
    assert!(got[0].image_wait >= Duration::from_secs(10), "{:?}", got[0]);
    assert_eq!(got[1].image_wait, Duration::ZERO);
    assert!(got[1].queue_wait.is_some() && got[3].queue_wait.is_none());
    assert!(got[4].resumed && !got[5].resumed);
    // The verdicts are in the items' folders; no closing summaries.
    let v = store::read_verdict(&dir.path().join("sub/b.m.0").join(store::VERDICT_FILE)).unwrap();
    assert_eq!(v.category, Category::Resolved);
    assert!(report.files.is_empty());
    assert_eq!(
        e.jobs().len(),
        4,
        "a/0, a/1, b/0, b/5: the resumed one ran nothing"
    );
    assert_eq!(report.not_run, 0);
    let started = std::iter::from_fn(|| erx.try_recv().ok())
        .filter(|ev| matches!(ev, RunEvent::JobStarted { .. }))
        .count();
    assert_eq!(started, 4);
}

#[tokio::test(start_paused = true)]
async fn a_deadline_skips_a_job_not_started_and_cuts_a_running_ones_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let e = fake();
    e.set_job_delay(Duration::from_secs(10));
    let mut cfg = config(dir.path(), "serve");
    cfg.workers = 1;
    cfg.summaries = false;
    let (submit, _itx, running, _erx) = serving(&e, cfg, Arrivals::none());
    let feeding = async {
        let new = ready("a");
        // One worker: the first job takes 10 s; the second's deadline passes meanwhile; the
        // third (an endless one) starts with 25 s left, its timeout cut to them.
        let rxs = submit_items(
            &submit,
            dir.path(),
            new,
            &[
                ("a", "m", 0, "GOOD", Some(100)),
                ("a", "m", 1, "BAD", Some(5)),
                ("a", "m", 2, "LOOP", Some(35)),
                ("a", "m", 3, "LOOP again", None),
            ],
        );
        let mut got = Vec::new();
        for rx in rxs {
            got.push(rx.await.expect("answered"));
        }
        drop(submit);
        got
    };
    let (report, got) = tokio::join!(running, feeding);
    report.unwrap();
    assert!(matches!(&got[0], Delivery::Done(f) if f.verdict.resolved));
    assert!(matches!(got[1], Delivery::Expired { ran: false }));
    assert!(
        matches!(got[2], Delivery::Expired { ran: true }),
        "{:?}",
        got[2]
    );
    // Without a deadline an endless job is the patch's own timeout: a verdict.
    assert!(matches!(&got[3], Delivery::Done(f) if f.verdict.timed_out));
    let jobs = e.jobs();
    assert_eq!(jobs.len(), 3, "the expired job never started");
    assert!(
        jobs[1].timeout <= Duration::from_secs(25),
        "{:?}",
        jobs[1].timeout
    );
    assert_eq!(jobs[2].timeout, Duration::from_secs(1800));
    // No verdict for the expired ones: submitted again, they run again.
    for sample in [1, 2] {
        let dir = dir.path().join(format!("sub/a.m.{sample}"));
        assert!(!dir.join(store::VERDICT_FILE).exists());
    }
}

#[tokio::test(start_paused = true)]
async fn an_interrupt_closes_the_submissions_and_leaves_queued_ones_unanswered() {
    let dir = tempfile::tempdir().unwrap();
    let e = fake();
    e.set_job_delay(Duration::from_secs(5));
    let mut cfg = config(dir.path(), "serve");
    cfg.workers = 1;
    let (submit, itx, running, _erx) = serving(&e, cfg, Arrivals::none());
    let feeding = async {
        let new = ready("a");
        let rxs = submit_items(
            &submit,
            dir.path(),
            new,
            &[("a", "m", 0, "GOOD", None), ("a", "m", 1, "GOOD too", None)],
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
        itx.send(()).unwrap();
        submit.closed().await;
        assert!(submit.is_closed());
        let mut got = Vec::new();
        for rx in rxs {
            got.push(rx.await.ok());
        }
        got
    };
    let (report, got) = tokio::join!(running, feeding);
    let report = report.unwrap();
    assert!(
        matches!(&got[0], Some(Delivery::Done(f)) if f.verdict.resolved),
        "the running one finishes"
    );
    assert!(
        got[1].is_none(),
        "the queued one is not run: its reply is dropped: {:?}",
        got[1]
    );
    assert_eq!((report.jobs_run, report.not_run), (1, 1));
}

#[tokio::test]
async fn identical_predictions_of_one_submission_share_a_job_and_both_are_answered() {
    let dir = tempfile::tempdir().unwrap();
    let e = fake();
    let (submit, _itx, running, _erx) = serving(&e, config(dir.path(), "serve"), Arrivals::none());
    let feeding = async {
        let new = ready("a");
        let rxs = submit_items(
            &submit,
            dir.path(),
            new,
            &[("a", "m", 0, "GOOD", Some(60)), ("a", "m", 1, "GOOD", None)],
        );
        drop(submit);
        let mut got = Vec::new();
        for rx in rxs {
            got.push(done(rx.await.expect("answered")));
        }
        got
    };
    let (report, got) = tokio::join!(running, feeding);
    assert_eq!(report.unwrap().jobs_run, 1);
    assert_eq!(e.jobs().len(), 1);
    assert!(got.iter().all(|f| f.verdict.resolved));
    assert_eq!(got[1].verdict.shared_from.as_deref(), Some("m/0"));
    // One member without a deadline: the shared job's timeout is not cut.
    assert_eq!(e.jobs()[0].timeout, Duration::from_secs(1800));
}

#[tokio::test(start_paused = true)]
async fn workers_are_cut_to_the_engines_cpus_and_the_run_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let e = fake();
    e.set_prepares_ahead()
        .set_cpus(2)
        .set_job_delay(Duration::from_secs(1));
    let (setups, preds) = many(8);
    let mut cfg = config(dir.path(), "r");
    cfg.workers = 100_000;
    let (r, events) = go(&e, plan(setups, preds), cfg).await;
    assert_eq!(r.count(Category::Resolved), 8);
    assert_eq!(e.max_running(), 2, "never more jobs at once than CPUs");
    let notes: Vec<&str> = events
        .iter()
        .filter_map(|ev| match ev {
            RunEvent::Note { message } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("-j 100000: this machine can use 2 jobs at once")),
        "{notes:?}"
    );
}
