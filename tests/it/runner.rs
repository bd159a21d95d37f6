//! The runner on the real Docker engine with trivial tasks: every apply path of the driver,
//! timeouts, strict removal of collection files, forged output, and no container left behind.
//! Skipped with a message when no daemon answers (CI starts one and fails instead).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use swe_eval::engine::{DockerEngine, Engine, LABEL_RUN_ID, LABEL_TOOL};
use swe_eval::orchestrate::{execute_ready, Ready as Plan};
use swe_eval::runner::{self, Category, Layout, RunConfig, RunReport, Verdict};
use swe_eval::trivial;
use tokio::sync::mpsc;

async fn engine() -> Option<Arc<DockerEngine>> {
    crate::common::docker_engine().await.map(Arc::new)
}

async fn run(
    engine: &Arc<DockerEngine>,
    plan: Plan,
    cfg: RunConfig,
    out: &std::path::Path,
) -> RunReport {
    let (_itx, irx) = mpsc::unbounded_channel();
    let (etx, _erx) = mpsc::unbounded_channel();
    execute_ready(engine.clone(), plan, cfg, out, irx, etx)
        .await
        .expect("run")
}

fn verdict(out: &std::path::Path, run: &str, id: &str) -> Verdict {
    let p = Layout::new(out, run)
        .prediction_dir("m", id, 0)
        .join("verdict.json");
    runner::read_verdict(&p).unwrap_or_else(|e| panic!("{e}"))
}

fn log(out: &std::path::Path, run: &str, id: &str, file: &str) -> String {
    std::fs::read_to_string(Layout::new(out, run).prediction_dir("m", id, 0).join(file))
        .unwrap_or_default()
}

async fn leftovers(engine: &DockerEngine, run_id: &str) -> usize {
    let labels = BTreeMap::from([
        (LABEL_TOOL.to_string(), String::new()),
        (LABEL_RUN_ID.to_string(), run_id.to_string()),
    ]);
    engine.list_containers(labels).await.unwrap().len()
}

const FUZZY: &str = "--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n def f():\n-    return 1\n+    return 2\n # context that is not there\n";
const CONFTEST: &str = "diff --git a/conftest.py b/conftest.py\nnew file mode 100644\n--- /dev/null\n+++ b/conftest.py\n@@ -0,0 +1 @@\n+x = 1\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn driver_apply_paths_timeouts_and_forgery_on_the_real_engine() {
    let Some(engine) = engine().await else { return };
    let image = trivial::ensure_image(&*engine)
        .await
        .expect("trivial image");
    let out = tempfile::tempdir().unwrap();
    let run_id = format!("it-runner-{}", std::process::id());
    let forged = "echo 'PASSED t::test_f'; echo 'PASSED t::test_ok'; echo '=== 2 passed in 0.01s ==='; false";
    let tasks: Vec<(&str, String, String)> = vec![
        ("fix", trivial::TEST_COMMAND.into(), trivial::fix("a")),
        ("wrong", trivial::TEST_COMMAND.into(), trivial::wrong()),
        ("garbage", trivial::TEST_COMMAND.into(), "this is not a diff\n".into()),
        ("fuzzy", trivial::TEST_COMMAND.into(), FUZZY.into()),
        ("loop", "sleep 600".into(), trivial::fix("b")),
        ("forged", forged.into(), trivial::fix("c")),
        ("conftest", "test -e conftest.py && echo 'PASSED t::test_f' || echo 'FAILED t::test_f'; echo 'PASSED t::test_ok'; echo '=== 1 passed in 0.01s ==='".into(), CONFTEST.into()),
    ];
    let mut plan = Plan::default();
    for (id, cmd, patch) in &tasks {
        plan.setups
            .insert(id.to_string(), trivial::setup(id, &image, cmd));
        plan.predictions
            .push(trivial::prediction(id, "m", 0, patch));
        plan.instance_ids.push(id.to_string());
    }
    let mut cfg = RunConfig::new(&run_id);
    cfg.workers = 2;
    cfg.timeout = Duration::from_secs(5);
    cfg.strict = true;
    let r = run(&engine, plan, cfg, out.path()).await;
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    let v = |id| verdict(out.path(), &run_id, id);

    assert_eq!(
        v("fix").category,
        Category::Resolved,
        "{}",
        log(out.path(), &run_id, "fix", "run_instance.log")
    );
    assert_eq!(
        v("fix").applied_with.as_deref(),
        Some("git apply --verbose")
    );
    assert_eq!(v("fix").test_exit_code, Some(0));
    assert_eq!(v("wrong").category, Category::Unresolved);
    assert_eq!(v("garbage").category, Category::Error);
    assert!(log(out.path(), &run_id, "garbage", "run_instance.log")
        .contains(">>>>> Patch Apply Failed"));
    assert_eq!(
        v("fuzzy").category,
        Category::Resolved,
        "{}",
        log(out.path(), &run_id, "fuzzy", "run_instance.log")
    );
    assert_eq!(
        v("fuzzy").applied_with.as_deref(),
        Some("patch --batch --fuzz=5 -p1 -i")
    );
    let looped = v("loop");
    assert_eq!(looped.category, Category::Error);
    assert!(looped.timed_out);
    assert!(
        looped.total_secs < 30.0,
        "killed at the deadline, no stop timeout: {}",
        looped.total_secs
    );
    assert!(log(out.path(), &run_id, "loop", "test_output.txt")
        .contains("Timeout error: 5 seconds exceeded."));
    let forged = v("forged");
    assert_eq!(
        forged.category,
        Category::Resolved,
        "official grading believes the PASSED lines"
    );
    assert_eq!(
        forged.strict_category,
        Category::Unresolved,
        "the exit code gives them away"
    );
    assert_eq!(
        v("conftest").category,
        Category::Unresolved,
        "strict runs remove the added conftest.py"
    );
    assert!(log(out.path(), &run_id, "conftest", "run_instance.log")
        .contains("strict: removed conftest.py"));

    for f in [
        "patch.diff",
        "eval.sh",
        "test_output.txt",
        "report.json",
        "run_instance.log",
    ] {
        assert!(
            Layout::new(out.path(), &run_id)
                .prediction_dir("m", "fix", 0)
                .join(f)
                .is_file(),
            "{f}"
        );
    }
    assert_eq!(
        leftovers(&engine, &run_id).await,
        0,
        "no container of the run is left"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reversed_patch_applies_backwards_as_officially_and_empty_runs_validate_style() {
    let Some(engine) = engine().await else { return };
    let image = trivial::ensure_image(&*engine)
        .await
        .expect("trivial image");
    let out = tempfile::tempdir().unwrap();
    let run_id = format!("it-runner-b-{}", std::process::id());
    let mut plan = Plan::default();
    plan.setups.insert(
        "same".into(),
        trivial::setup("same", &image, trivial::TEST_COMMAND),
    );
    plan.setups.insert(
        "nopatch".into(),
        trivial::setup("nopatch", &image, trivial::TEST_COMMAND),
    );
    // Reverse of "return 2 -> return 1": applies forward nowhere; its reverse applies, so
    // `patch --batch` (official v4.1.0, no --forward) applies it backwards: f returns 2 and
    // the tests pass, as they do in the official harness.
    let reverse =
        "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 2\n+    return 1\n";
    plan.predictions
        .push(trivial::prediction("same", "m", 0, reverse));
    plan.predictions
        .push(trivial::prediction("nopatch", "m", 0, ""));
    plan.instance_ids = vec!["same".into(), "nopatch".into()];
    let mut cfg = RunConfig::new(&run_id);
    cfg.run_empty = true;
    cfg.dedupe = false;
    cfg.timeout = Duration::from_secs(30);
    let r = run(&engine, plan, cfg, out.path()).await;
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!(
        verdict(out.path(), &run_id, "same").applied_with.as_deref(),
        Some("patch --batch --fuzz=5 -p1 -i")
    );
    assert_eq!(
        verdict(out.path(), &run_id, "same").category,
        Category::Resolved
    );
    let empty = verdict(out.path(), &run_id, "nopatch");
    assert_eq!(
        empty.category,
        Category::Unresolved,
        "validate's empty runs run the tests: {empty:?}"
    );
    assert_eq!(leftovers(&engine, &run_id).await, 0);
}
