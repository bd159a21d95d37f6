//! Hostile patches on the real Docker engine, through `swe-eval run`: a fork bomb, memory
//! exhaustion, filling the disk, network access, writes outside `/testbed`, a path traversal
//! in the diff, edits to the test file, a `conftest.py` that forces every test to pass, and
//! forged test results. Each must be contained (limits hold, nothing reaches the host or the
//! next job) and graded as the official harness grades it, with strict grading catching what
//! official grading cannot.
//!
//! The tasks are SWE-bench 5 style rows (their own image and eval script): the trivial fixture
//! image (`/testbed/m.py` with `f()` returning 1, see `trivial`), a pytest file the eval
//! script writes (as a test patch would), and a check before the tests that no earlier job's
//! leftovers are visible. Skipped with a message when no Docker daemon answers.
//!
//! The helpers here (inputs, running the binary, reading verdicts, listing containers) are
//! shared with the Docker fault tests in `faults.rs`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use swe_eval::engine::{DockerEngine, LABEL_RUN_ID};
use swe_eval::runner::{Category, Verdict};
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
fn output_tail(prediction_dir: &Path) -> String {
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

/// The hostile tasks: (task, official category, strict category) as the official harness and
/// strict grading must give them.
fn hostile_tasks() -> Vec<(Task, Category, Category)> {
    use Category::*;
    let t = |id: &str, patch: String| Task::new(id, "", PYTEST, &patch);
    vec![
        // The parent forks until the pids limit refuses (children sleep); f() tells whether the
        // limit held well below the 5,000 forks the loop would stop at on its own.
        (t("h-forkbomb", rewrite_m("import os, time\nn = 0\ntry:\n    while n < 5000:\n        if os.fork() == 0:\n            time.sleep(60)\n            os._exit(0)\n        n += 1\nexcept OSError:\n    pass\n\n\ndef f():\n    return 2 if n < 1100 else 3\n")), Resolved, Resolved),
        // 6 GiB, touched, against the 4 GiB limit: the kernel kills pytest; the tests did not pass.
        (t("h-memory", rewrite_m("chunks = []\nfor _ in range(24):\n    chunks.append(bytearray(b'x' * (256 << 20)))\n\n\ndef f():\n    return 2\n")), Unresolved, Unresolved),
        // 512 MiB written into /testbed: the job ends, the next jobs do not see the file.
        (t("h-disk", rewrite_m("with open('/testbed/big', 'wb') as fh:\n    for _ in range(512):\n        fh.write(b'\\0' * (1 << 20))\n\n\ndef f():\n    return 2\n")), Resolved, Resolved),
        // Resolved only if no connection and no name resolution succeeds.
        (t("h-network", rewrite_m("import socket\nNET = []\nfor host, port in [('1.1.1.1', 53), ('8.8.8.8', 53), ('172.17.0.1', 2375)]:\n    try:\n        socket.create_connection((host, port), timeout=2).close()\n        NET.append(host)\n    except OSError:\n        pass\ntry:\n    socket.getaddrinfo('example.com', 80)\n    NET.append('dns')\nexcept OSError:\n    pass\n\n\ndef f():\n    return 2 if not NET else 3\n")), Resolved, Resolved),
        // Writes outside /testbed: only this container is affected.
        (t("h-outside", rewrite_m("import os\nfor p in ['/etc/swe-eval-hostile', '/root/swe-eval-hostile']:\n    with open(p, 'w') as fh:\n        fh.write('owned')\ntry:\n    os.remove('/bin/sh')\nexcept OSError:\n    pass\n\n\ndef f():\n    return 2\n")), Resolved, Resolved),
        // Path traversal: git apply and patch refuse; the patch does not apply.
        (t("h-traversal", fix() + &add_file("../../etc/swe-eval-traversal", "owned\n")), Error, Error),
        // The test file the patch writes is overwritten by the eval script, as by a test patch.
        (t("h-testedit", add_file("test_m.py", "def test_f():\n    pass\n\n\ndef test_ok():\n    pass\n")), Unresolved, Unresolved),
        // A conftest.py that makes every test pass: the official harness is fooled (and so is
        // official grading, which must equal it); strict grading objects.
        (t("h-conftest", add_file("conftest.py", "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    outcome.get_result().outcome = 'passed'\n")), Resolved, Unresolved),
        // Forged results written straight to the container's output, around pytest's capture:
        // a PASSED line, a fake end marker and a fake exit code. Official grading reads up to
        // the first end marker, as the official harness does; strict takes the real exit code.
        (t("h-forged", rewrite_m("import os\nwith open('/proc/1/fd/1', 'w') as out:\n    out.write('PASSED test_m.py::test_f\\nPASSED test_m.py::test_ok\\n+ : \\'>>>>> End Test Output\\'\\n>>>>> Test Exit Code: 0\\n')\n\n\ndef f():\n    return 1\n")), Resolved, Unresolved),
        // Witnesses: a correct fix, and a wrong one, in the same run.
        (t("w-fix", fix()), Resolved, Resolved),
        (t("w-wrong", rewrite_m("def f():\n    return 3\n")), Unresolved, Unresolved),
    ]
}

#[test]
fn hostile_patches_are_contained_and_graded() {
    if !docker_answers(None) {
        return;
    }
    let image = trivial_image();
    let dir = TestDir::new();
    let cases = hostile_tasks();
    let tasks: Vec<Task> = cases.iter().map(|c| c.0.clone()).collect();
    let (ds, preds) = write_inputs(dir.path(), &image, &tasks);
    let out = dir.path().join("out");
    let run_id = format!("it-hostile-{}", std::process::id());
    let o = run_command(&ds, &preds, &out, &run_id, &["-j", "2", "-t", "120"])
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0) | Some(3)), "{}", text(&o));

    let got = verdicts(&out, &run_id);
    assert_eq!(got.len(), cases.len(), "one verdict per task\n{}", text(&o));
    let mut wrong = Vec::new();
    for (task, official, strict) in &cases {
        let (dir, v) = got
            .iter()
            .find(|(_, v)| v.instance_id == task.id)
            .unwrap_or_else(|| panic!("no verdict for {}", task.id));
        if v.category != *official || v.strict_category != *strict {
            let tail = output_tail(dir);
            wrong.push(format!(
                "{}: official {:?} (want {official:?}), strict {:?} (want {strict:?}), reason {:?}\n{tail}",
                task.id, v.category, v.strict_category, v.reason
            ));
        }
        assert_ne!(
            v.category,
            Category::InfraError,
            "{}: {:?}",
            task.id,
            v.reason
        );
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));

    // The memory hog was killed by the limit (137), not by anything else.
    let mem = &got
        .iter()
        .find(|(_, v)| v.instance_id == "h-memory")
        .unwrap()
        .1;
    assert_eq!(mem.test_exit_code, Some(137), "{mem:?}");

    // The host: nothing written, processes can still start, no container of the run is left.
    for p in [
        "/etc/swe-eval-hostile",
        "/root/swe-eval-hostile",
        "/etc/swe-eval-traversal",
    ] {
        assert!(!Path::new(p).exists(), "{p} reached the host");
    }
    assert!(Command::new("true").status().unwrap().success());
    assert_eq!(
        containers(None, &run_id),
        Vec::<String>::new(),
        "containers left behind"
    );
    eprintln!(
        "hostile: {} hostile patches and 2 witnesses, all contained and graded as expected",
        cases.len() - 2
    );
}

/// One expected verdict of `tests/fixtures/hostile/expected.json`.
#[derive(Debug, serde::Deserialize)]
struct Expected {
    sample: u32,
    case: String,
    official: Category,
    strict: Category,
}

/// The same attacks in a real repository: hostile predictions for the mini benchmark's
/// `swe-eval-mini__calc-1` (its image is shared with the mini benchmark's runs), built by
/// `scripts/faults_hostile_fixtures.sh`, with the hostile code in the module the tests import.
#[test]
fn hostile_predictions_on_the_mini_benchmark() {
    let _turn = crate::common::mini_images_turn();
    if !docker_answers(None) {
        return;
    }
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile");
    let expected: Vec<Expected> =
        serde_json::from_slice(&std::fs::read(fixtures.join("expected.json")).unwrap()).unwrap();
    let dir = TestDir::new();
    let bench = swe_eval::mini::materialize(&dir.path().join("mini")).unwrap();
    let out = dir.path().join("out");
    let run_id = format!("it-hostile-mini-{}", std::process::id());
    let o = run_command(
        &bench.dataset,
        &fixtures.join("predictions.jsonl"),
        &out,
        &run_id,
        &[
            "-i",
            "swe-eval-mini__calc-1",
            "--flavour",
            "debian",
            "-j",
            "2",
            "-t",
            "120",
        ],
    )
    .arg("--mirrors")
    .arg(&bench.mirrors)
    .output()
    .unwrap();
    assert!(matches!(o.status.code(), Some(0) | Some(3)), "{}", text(&o));
    let got = verdicts(&out, &run_id);
    assert_eq!(got.len(), expected.len(), "{}", text(&o));
    // A daemon answered, so an image that did not build is a defect (this once hid a broken
    // setup_repo.sh), not a reason to skip.
    let unbuilt = got.iter().find(|(_, v)| v.category == Category::InfraError);
    assert!(
        unbuilt.is_none(),
        "the mini image of swe-eval-mini__calc-1 is not usable: {:?}\n{}",
        unbuilt.map(|(_, v)| v.reason.clone()),
        text(&o)
    );
    let mut wrong = Vec::new();
    for e in &expected {
        let (d, v) = got.iter().find(|(_, v)| v.sample == e.sample).unwrap();
        if v.category != e.official || v.strict_category != e.strict {
            let tail = output_tail(d);
            wrong.push(format!(
                "{}: official {:?} (want {:?}), strict {:?} (want {:?}), reason {:?}\n{tail}",
                e.case, v.category, e.official, v.strict_category, e.strict, v.reason
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
    for p in [
        "/etc/swe-eval-hostile",
        "/root/swe-eval-hostile",
        "/etc/swe-eval-traversal",
    ] {
        assert!(!Path::new(p).exists(), "{p} reached the host");
    }
    assert_eq!(
        containers(None, &run_id),
        Vec::<String>::new(),
        "containers left behind"
    );
    eprintln!(
        "hostile: {} hostile predictions on the mini benchmark graded as expected",
        expected.len()
    );
}
