//! The run on the fake engine with given setups: what it writes (each prediction's files, its
//! `verdict.json` last, the summaries), resume, a write that fails, the run's lock, interrupts
//! and the closing report. (The dispatcher's own rules are tested in `runner`.)

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::workflow::{execute_ready, Ready};
use crate::engine::FakeEngine;
use crate::runner::fixtures::{fake, pred, setup, IMAGE};
use crate::runner::{self, Category, Layout, RunConfig, RunEvent, RunReport, Setup, Verdict};
use crate::session::Event;
use swe_eval_core::predictions::Prediction;

fn config(run_id: &str) -> RunConfig {
    let mut c = RunConfig::new(run_id);
    c.workers = 2;
    c.backoff = Duration::from_millis(1);
    c
}

fn plan(setups: Vec<(String, Arc<Setup>)>, predictions: Vec<Prediction>) -> Ready {
    let instance_ids = setups.iter().map(|(id, _)| id.clone()).collect();
    Ready {
        setups: setups.into_iter().collect(),
        predictions,
        instance_ids,
    }
}

/// Runs to the end into `dir`, with `interrupts` sent as soon as the first job starts; the
/// report and the dispatcher's events.
async fn run_with(
    engine: &FakeEngine,
    dir: &std::path::Path,
    plan: Ready,
    cfg: RunConfig,
    interrupts: usize,
) -> Result<(RunReport, Vec<RunEvent>), runner::RunError> {
    let (itx, irx) = mpsc::unbounded_channel();
    let (etx, mut erx) = mpsc::unbounded_channel();
    let listener = tokio::spawn(async move {
        let mut events = Vec::new();
        while let Some(ev) = erx.recv().await {
            if let Event::Run(e) = ev {
                if matches!(e, RunEvent::JobStarted { .. }) && events.len() < 1000 {
                    for _ in 0..interrupts {
                        let _ = itx.send(());
                    }
                }
                events.push(e);
            }
        }
        events
    });
    let report = execute_ready(Arc::new(engine.clone()), plan, cfg, dir, irx, etx).await;
    let events = listener.await.unwrap();
    report.map(|r| (r, events))
}

async fn go(
    engine: &FakeEngine,
    dir: &std::path::Path,
    plan: Ready,
    cfg: RunConfig,
) -> (RunReport, Vec<RunEvent>) {
    run_with(engine, dir, plan, cfg, 0).await.unwrap()
}

fn verdict(dir: &std::path::Path, run: &str, model: &str, id: &str, sample: u32) -> Verdict {
    let p = Layout::new(dir, run)
        .prediction_dir(model, id, sample)
        .join(swe_eval_core::report::VERDICT_FILE);
    runner::read_verdict(&p).unwrap_or_else(|e| panic!("{e}"))
}

fn many(n: usize) -> Ready {
    plan(
        (0..n).map(|i| setup(&format!("i{i}"), Ok(IMAGE))).collect(),
        (0..n)
            .map(|i| pred(&format!("i{i}"), "m", 0, "GOOD"))
            .collect(),
    )
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
    let (r, _) = go(&e, dir.path(), plan(setups, preds), config("r1")).await;
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
    let (r1, _) = go(&e, dir.path(), plan(setups(), preds.clone()), config("r")).await;
    assert_eq!(r1.jobs_run, 3);
    assert_eq!(
        r1.count(Category::InfraError),
        1,
        "the missing image is an infra error"
    );

    let (r2, events) = go(&e, dir.path(), plan(setups(), preds), config("r")).await;
    assert_eq!(r2.resumed, 2);
    assert_eq!(r2.jobs_run, 1, "only the infra error runs again");
    assert_eq!(
        r2.count(Category::Resolved) + r2.count(Category::Unresolved),
        2
    );
    // The plan is told before any verdict, the resumed ones first.
    let planned = events
        .iter()
        .position(|e| matches!(e, RunEvent::Planned { .. }))
        .unwrap();
    let first_verdict = events
        .iter()
        .position(|e| matches!(e, RunEvent::Verdict { .. }))
        .unwrap();
    assert!(planned < first_verdict);
    assert!(matches!(
        &events[first_verdict],
        RunEvent::Verdict { resumed: true, .. }
    ));

    let changed = vec![
        pred("a", "m", 0, "GOOD"),
        pred("b", "m", 0, "GOOD (fixed)"),
        pred("c", "m", 0, "GOOD"),
    ];
    let (r3, _) = go(&e, dir.path(), plan(setups(), changed), config("r")).await;
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
async fn shared_verdicts_get_the_logs_and_summaries_of_their_own() {
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
        dir.path(),
        plan(vec![setup("a", Ok(IMAGE))], preds),
        config("r"),
    )
    .await;
    assert_eq!(r.jobs_run, 2);
    let shared = verdict(dir.path(), "r", "m2", "a", 0);
    assert_eq!(shared.shared_from.as_deref(), Some("m1/0"));
    let layout = Layout::new(dir.path(), "r");
    assert!(layout
        .prediction_dir("m1", "a", 1)
        .join("test_output.txt")
        .is_file());
    assert!(layout.summary_path("m1", 1).is_file() && layout.summary_path("m1", 2).is_file());
    assert!(layout.summary_path("m2", 0).is_file());
}

#[tokio::test(start_paused = true)]
async fn first_interrupt_finishes_running_jobs_and_writes_everything() {
    let dir = tempfile::tempdir().unwrap();
    let e = fake();
    e.set_job_delay(Duration::from_secs(10));
    let mut cfg = config("r");
    cfg.workers = 1;
    let (r, _) = run_with(&e, dir.path(), many(5), cfg, 1).await.unwrap();
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
    let (r2, _) = go(&e, dir.path(), many(5), config("r")).await;
    assert_eq!((r2.resumed, r2.jobs_run), (1, 4));
}

#[tokio::test(start_paused = true)]
async fn second_interrupt_kills_and_what_is_done_is_still_written() {
    let dir = tempfile::tempdir().unwrap();
    let e = fake();
    e.set_job_delay(Duration::from_secs(3600));
    let mut cfg = config("r");
    cfg.workers = 1;
    let (r, _) = run_with(&e, dir.path(), many(3), cfg, 2).await.unwrap();
    assert!(r.killed);
    assert_eq!(r.verdicts_written(), 0);
    assert!(Layout::new(dir.path(), "r").summary_path("m", 0).is_file());
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
    e.set_job_delay(Duration::from_millis(50));
    let mut cfg = config("r");
    cfg.workers = 1;
    let (r, _) = go(&e, dir.path(), many(4), cfg).await;
    assert!(
        r.jobs_run <= 2,
        "no job is dispatched after a write failure: {}",
        r.jobs_run
    );
    assert!(r.output_failures >= 1);
    assert!(r.problems[0].contains("i0"), "{:?}", r.problems);
    assert!(r.not_run >= 2, "{}", r.not_run);
}

#[tokio::test]
async fn a_second_process_on_the_same_run_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let _held = runner::lock(&Layout::new(dir.path(), "r")).unwrap();
    let e = fake();
    let err = run_with(&e, dir.path(), many(2), config("r"), 0)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("in use"), "{err}");
    assert!(
        e.calls().is_empty(),
        "the engine was not asked anything: {:?}",
        e.calls()
    );
}

#[tokio::test(start_paused = true)]
async fn workers_are_cut_to_the_engines_cpus_and_the_run_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let e = fake();
    e.set_prepares_ahead()
        .set_cpus(2)
        .set_job_delay(Duration::from_secs(1));
    let mut cfg = config("r");
    cfg.workers = 100_000;
    let (r, events) = go(&e, dir.path(), many(8), cfg).await;
    assert_eq!(r.count(Category::Resolved), 8);
    assert_eq!(e.max_running(), 2, "never more jobs at once than CPUs");
    assert!(events.iter().any(|ev| matches!(ev,
        RunEvent::Note { message } if message.starts_with("-j 100000: this machine can use 2 jobs at once"))));
}
