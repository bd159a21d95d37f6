//! Tasks on the real Docker engine through `swe-eval run`: SWE-bench 5 style rows on the
//! trivial fixture image (`/testbed/m.py` with `f()` returning 1, see `trivial`) with an eval
//! script of their own, inputs written for them, the binary run on them, and their verdicts and
//! containers read back. Used by the hostile-patch and fault tests.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use swe_eval::engine::{DockerEngine, LABEL_RUN_ID};
use swe_eval::runner::Verdict;
use swe_eval::trivial;

/// The test file every task's eval script writes before running pytest, as a test patch
/// would: whatever the model's patch put at that path is overwritten.
pub const TEST_FILE: &str = "import os\nimport m\n\n\ndef test_f():\n    assert m.f() == 2\n\n\ndef test_ok():\n    assert os.environ.get('LEAK') is None, os.environ.get('LEAK')\n";

/// Files a hostile job leaves in its own container; the next jobs must not see them.
pub const LEAK_MARKERS: &[&str] = &[
    "/etc/swe-eval-hostile",
    "/testbed/big",
    "/root/swe-eval-hostile",
];

pub const F2P: &str = "test_m.py::test_f";

pub const P2P: &str = "test_m.py::test_ok";

/// The eval script of a task: `pre` runs first (e.g. a sleep), then the leak check, then the
/// test file is written and pytest runs between the official markers.
pub fn eval_script(pre: &str, command: &str) -> String {
    let leak_check: String = LEAK_MARKERS
        .iter()
        .map(|m| format!("[ -e {m} ] && export LEAK={m}\n"))
        .collect();
    format!(
        "#!/bin/bash\nset -uxo pipefail\ncd /testbed\n{pre}\n{leak_check}cat > test_m.py <<'SWE_EVAL_EOF'\n{TEST_FILE}SWE_EVAL_EOF\n\
         : '>>>>> Start Test Output'\n{command}\nrc=$?\n: '>>>>> End Test Output'\necho \">>>>> Test Exit Code: $rc\"\n"
    )
}

pub const PYTEST: &str = "python3 -m pytest -rA -p no:cacheprovider test_m.py";

/// One task: an instance with its own eval script, and the prediction for it.
#[derive(Debug, Clone)]
pub struct Task {
    pub id: String,
    pub script: String,
    pub patch: String,
}

impl Task {
    pub fn new(id: &str, pre: &str, command: &str, patch: &str) -> Task {
        Task {
            id: id.to_string(),
            script: eval_script(pre, command),
            patch: patch.to_string(),
        }
    }
}

/// A patch that replaces `m.py` (two lines at the base commit) with `text`.
pub fn rewrite_m(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut p = format!(
        "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,{} @@\n-def f():\n-    return 1\n",
        lines.len()
    );
    for l in lines {
        p.push('+');
        p.push_str(l);
        p.push('\n');
    }
    p
}

/// The correct fix.
pub fn fix() -> String {
    rewrite_m("def f():\n    return 2\n")
}

/// A patch that adds a new file.
pub fn add_file(path: &str, text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut p = format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n",
        lines.len()
    );
    for l in lines {
        p.push('+');
        p.push_str(l);
        p.push('\n');
    }
    p
}

/// True when a Docker daemon answers at `host` (the default one when `None`); otherwise the
/// skip helper says why (and fails the test under `SWE_EVAL_REQUIRE_ALL=1`).
pub fn docker_answers(host: Option<&str>) -> bool {
    let ok = docker(host, &["info", "--format", "{{.ServerVersion}}"])
        .is_some_and(|o| o.status.success());
    crate::common::require("a Docker daemon answering `docker info`", ok)
}

/// Runs the `docker` CLI against `host`.
pub fn docker(host: Option<&str>, args: &[&str]) -> Option<Output> {
    let mut c = Command::new("docker");
    c.args(args);
    if let Some(h) = host {
        c.env("DOCKER_HOST", h);
    }
    c.output().ok()
}

/// The trivial fixture image on the default daemon (built once, shared with the runner tests).
pub fn trivial_image() -> String {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let engine = DockerEngine::connect().await.expect("connect to Docker");
        trivial::ensure_image(&engine)
            .await
            .expect("trivial fixture image")
    })
}

/// Writes the dataset and predictions of `tasks` (model `hostile`) into `dir`.
pub fn write_inputs(dir: &Path, image: &str, tasks: &[Task]) -> (PathBuf, PathBuf) {
    let mut ds = String::new();
    let mut preds = String::new();
    for t in tasks {
        let row = serde_json::json!({
            "instance_id": t.id, "repo": "swe-eval-hostile/trivial", "base_commit": "HEAD",
            "patch": fix(), "FAIL_TO_PASS": [F2P], "PASS_TO_PASS": [P2P],
            "image": image, "eval_script": t.script, "log_parser": "parse_log_pytest",
        });
        ds.push_str(&row.to_string());
        ds.push('\n');
        let p = serde_json::json!({"instance_id": t.id, "model_name_or_path": "hostile", "model_patch": t.patch});
        preds.push_str(&p.to_string());
        preds.push('\n');
    }
    let (d, p) = (dir.join("dataset.jsonl"), dir.join("predictions.jsonl"));
    std::fs::write(&d, ds).unwrap();
    std::fs::write(&p, preds).unwrap();
    (d, p)
}

/// `swe-eval run` on those inputs (images used as the rows name them, none removed after).
pub fn run_command(ds: &Path, preds: &Path, out: &Path, run_id: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(crate::common::bin());
    c.args([
        "run",
        "-d",
        ds.to_str().unwrap(),
        "-p",
        preds.to_str().unwrap(),
    ])
    .args(["-o", out.to_str().unwrap(), "--run-id", run_id])
    .args(["--namespace", "", "--cache-level", "instance"])
    .args(extra);
    c
}

/// Every `verdict.json` of a run, by its folder.
pub fn verdicts(out: &Path, run_id: &str) -> Vec<(PathBuf, Verdict)> {
    let root = out.join("logs/run_evaluation").join(run_id);
    let mut found = Vec::new();
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if e.file_name() == "verdict.json" {
                let v: Verdict = swe_eval::runner::read_verdict(&p)
                    .unwrap_or_else(|e| panic!("torn verdict: {e}"));
                found.push((p.parent().unwrap().to_path_buf(), v));
            }
        }
    }
    found.sort_by(|a, b| a.1.instance_id.cmp(&b.1.instance_id));
    found
}

/// The last 1,500 characters of a prediction's test output, for a failure message.
pub fn output_tail(prediction_dir: &Path) -> String {
    let log = std::fs::read_to_string(prediction_dir.join("test_output.txt")).unwrap_or_default();
    let skip = log.chars().count().saturating_sub(1500);
    log.chars().skip(skip).collect()
}

/// Containers (running or not) labelled with `run_id` on the daemon at `host`.
pub fn containers(host: Option<&str>, run_id: &str) -> Vec<String> {
    let filter = format!("label={LABEL_RUN_ID}={run_id}");
    let o = docker(host, &["ps", "-aq", "--filter", &filter]).expect("docker ps");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// A test folder, removed at the end unless `SWE_EVAL_KEEP_TEST_DIRS` is set (then its path
/// is printed, for looking at the logs of a failure).
pub struct TestDir {
    path: PathBuf,
    _guard: Option<tempfile::TempDir>,
}

impl TestDir {
    pub fn new() -> TestDir {
        let dir = tempfile::tempdir().unwrap();
        if std::env::var_os("SWE_EVAL_KEEP_TEST_DIRS").is_some() {
            let path = dir.keep();
            eprintln!("kept {}", path.display());
            return TestDir { path, _guard: None };
        }
        TestDir {
            path: dir.path().to_path_buf(),
            _guard: Some(dir),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

pub fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Waits for a child with a bound, killing it if it overruns.
pub fn wait_bounded(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    crate::common::poll(limit, Duration::from_millis(100), || {
        child.try_wait().unwrap()
    })
    .unwrap_or_else(|| {
        let _ = child.kill();
        panic!("swe-eval run still going after {limit:?}");
    })
}

/// Tasks whose tests take `secs` seconds, all fixed correctly.
pub fn slow_tasks(prefix: &str, n: usize, secs: u32) -> Vec<Task> {
    (0..n)
        .map(|i| {
            Task::new(
                &format!("{prefix}-{i}"),
                &format!("sleep {secs}"),
                PYTEST,
                &fix(),
            )
        })
        .collect()
}

/// Inode, modification time (s, ns) and bytes of a file.
pub type Identity = (u64, i64, i64, Vec<u8>);

/// Identity of a file on disk: a rewrite (atomic rename) changes the inode.
pub fn identity(p: &Path) -> Identity {
    let m = std::fs::metadata(p).unwrap();
    (
        m.ino(),
        m.mtime(),
        m.mtime_nsec(),
        std::fs::read(p).unwrap(),
    )
}
