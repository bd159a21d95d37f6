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

use std::path::{Path, PathBuf};
use std::process::Command;

use swe_eval::runner::Category;

use crate::tasks::{
    add_file, containers, docker_answers, fix, output_tail, rewrite_m, run_command, text,
    trivial_image, verdicts, write_inputs, Task, TestDir, PYTEST,
};

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
    let _turn = crate::common::mini_images_shared();
    if !docker_answers(None) {
        return;
    }
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile");
    let expected: Vec<Expected> =
        serde_json::from_slice(&std::fs::read(fixtures.join("expected.json")).unwrap()).unwrap();
    let dir = TestDir::new();
    let bench = swe_eval_core::mini::materialize(&dir.path().join("mini")).unwrap();
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
