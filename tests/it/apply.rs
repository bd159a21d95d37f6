//! The driver's apply step against the official harness v4.1.0's, run locally (bash, git,
//! GNU patch) on small repositories: the commands come from the installed `swebench` 4.1.0
//! package (the oracle) and run the way its `run_instance` runs them (one after another on the
//! same tree, the first exit 0 wins); the driver's own fragment runs on a copy of the same tree.
//! Both must end with the same outcome and the same files.

use std::path::{Path, PathBuf};
use std::process::Command;
use swe_eval::runner;

use crate::common;

/// The official `GIT_APPLY_CMDS`, read from the installed package.
fn official_commands() -> Option<Vec<String>> {
    let found = Command::new("python3")
        .arg("-c")
        .arg("import json, swebench\nassert swebench.__version__ == '4.1.0', swebench.__version__\nfrom swebench.harness.run_evaluation import GIT_APPLY_CMDS\nprint(json.dumps(GIT_APPLY_CMDS))")
        .output()
        .map_err(|e| e.to_string())
        .and_then(|o| {
            if o.status.success() {
                Ok(o.stdout)
            } else {
                Err(String::from_utf8_lossy(&o.stderr).into_owned())
            }
        });
    let out = common::prerequisite("python3 with swebench 4.1.0", found)?;
    Some(serde_json::from_slice(&out).expect("a JSON list"))
}

/// A repository in `dir`: `files` committed, then `edits` written over them and committed (as an
/// instance image carries its environment's edits in a setup commit, e.g. sphinx's `tox.ini`).
fn repo(dir: &Path, files: &[(&str, &str)], edits: &[(&str, &str)]) {
    std::fs::create_dir_all(dir).unwrap();
    common::git(dir, &["init", "-q"]);
    for (f, text) in files {
        std::fs::write(dir.join(f), text).unwrap();
    }
    common::git(dir, &["add", "-A"]);
    common::git(dir, &["commit", "-qm", "base"]);
    if !edits.is_empty() {
        for (f, text) in edits {
            std::fs::write(dir.join(f), text).unwrap();
        }
        common::git(dir, &["commit", "-qam", "setup"]);
    }
}

/// Every file of the tree but `.git`, with its text, sorted.
fn tree(dir: &Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap() != ".git")
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    out.sort();
    out
}

/// Runs `commands` the official way in `dir`: the applying command, or None.
fn official_apply(dir: &Path, commands: &[String], patch: &Path) -> Option<String> {
    commands
        .iter()
        .find(|c| {
            Command::new("sh")
                .arg("-c")
                .arg(format!("{c} {}", patch.display()))
                .current_dir(dir)
                .output()
                .unwrap()
                .status
                .success()
        })
        .cloned()
}

/// Runs the driver's apply fragment in `dir`: the applying command, or None.
fn driver_apply(dir: &Path, patch: &Path) -> Option<String> {
    let script = format!(
        "mark() {{ echo \"MARK $*\"; }}\n{}",
        runner::apply_script(&patch.display().to_string())
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let said: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("MARK apply "))
        .collect();
    assert_eq!(said.len(), 1, "one apply marker: {text}");
    if said[0] == "failed" {
        assert!(text.contains(runner::APPLY_FAIL));
        return None;
    }
    assert!(text.contains(runner::APPLY_PASS));
    Some(
        said[0]
            .strip_prefix("ok ")
            .expect("ok <command>")
            .to_string(),
    )
}

struct Case {
    name: &'static str,
    files: &'static [(&'static str, &'static str)],
    edits: &'static [(&'static str, &'static str)],
    patch: &'static str,
}

const AB: &[(&str, &str)] = &[("a.txt", "a1\na2\na3\n"), ("b.txt", "b1\nb2\nb3\n")];
const AB_PATCH: &str = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n a1\n-a2\n+A2\n a3\ndiff --git a/b.txt b/b.txt\n--- a/b.txt\n+++ b/b.txt\n@@ -1,3 +1,3 @@\n b1\n-b2\n+B2\n b3\n";

const CASES: &[Case] = &[
    Case {
        name: "clean",
        files: AB,
        edits: &[],
        patch: AB_PATCH,
    },
    // sphinx's MiniMax patches: the agent's diff carries the image's own environment edits
    // (setup.py pins, tox.ini's -rA), already in the tree. git fails, --reject applies b and
    // leaves it applied, and patch --batch takes both files for reversed patches.
    Case {
        name: "part already in the tree",
        files: AB,
        edits: &[("a.txt", "a1\nA2\na3\n")],
        patch: AB_PATCH,
    },
    Case {
        name: "all already in the tree",
        files: AB,
        edits: &[("a.txt", "a1\nA2\na3\n"), ("b.txt", "b1\nB2\nb3\n")],
        patch: AB_PATCH,
    },
    Case {
        name: "context off (fuzz)",
        files: &[("m.py", "def f():\n    return 1\n")],
        edits: &[],
        patch: "--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n def f():\n-    return 1\n+    return 2\n # context that is not there\n",
    },
    // A hunk whose header counts more lines than it has: git calls it corrupt, patch takes it.
    Case {
        name: "miscounted hunk",
        files: AB,
        edits: &[],
        patch: "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,4 +1,4 @@\n a1\n-a2\n+A2\n a3\n",
    },
    Case {
        name: "one hunk of two does not apply",
        files: AB,
        edits: &[("b.txt", "x1\nx2\nx3\n")],
        patch: AB_PATCH,
    },
    Case {
        name: "garbage",
        files: AB,
        edits: &[],
        patch: "this is not a diff\n",
    },
];

/// What the driver applied before (the v5 chain: --3way, --forward, a reset between
/// attempts), kept here to show what changed.
const V5_CHAIN: &str = "P=$1; for C in 'git apply --verbose' 'git apply --verbose --3way' 'git apply --verbose --reject' 'patch --batch --forward --fuzz=5 -p1 -i'; do $C \"$P\" && exit 0; git checkout -q -- .; git clean -fdq; done; exit 1";

#[test]
fn driver_applies_exactly_as_the_official_harness_4_1_0() {
    if !(common::require_program("git")
        && common::require_program("patch")
        && common::require_program("bash"))
    {
        return;
    }
    let Some(official) = official_commands() else {
        return;
    };
    assert_eq!(
        official,
        runner::APPLY_COMMANDS,
        "the driver's commands are the official ones"
    );
    let tmp = tempfile::tempdir().unwrap();
    let mut outcomes = Vec::new();
    for (i, case) in CASES.iter().enumerate() {
        let base: PathBuf = tmp.path().join(format!("case{i}"));
        let patch = base.join("patch.diff");
        std::fs::create_dir_all(&base).unwrap();
        std::fs::write(&patch, case.patch).unwrap();
        let (theirs, ours, v5) = (base.join("official"), base.join("ours"), base.join("v5"));
        for d in [&theirs, &ours, &v5] {
            repo(d, case.files, case.edits);
        }
        let by_official = official_apply(&theirs, &official, &patch);
        let by_driver = driver_apply(&ours, &patch);
        assert_eq!(
            by_driver, by_official,
            "{}: the applying command",
            case.name
        );
        assert_eq!(tree(&ours), tree(&theirs), "{}: the tree after", case.name);
        let v5_applied = Command::new("bash")
            .arg("-c")
            .arg(V5_CHAIN)
            .arg("v5")
            .arg(&patch)
            .current_dir(&v5)
            .output()
            .unwrap()
            .status
            .success();
        outcomes.push((case.name, by_official, v5_applied));
    }
    let outcome = |name: &str| outcomes.iter().find(|o| o.0 == name).unwrap();
    let by = |c: &str| Some(c.to_string());
    assert_eq!(outcome("clean").1, by("git apply --verbose"));
    assert_eq!(outcome("garbage").1, None);
    assert_eq!(
        outcome("context off (fuzz)").1,
        by("patch --batch --fuzz=5 -p1 -i")
    );
    // Where the chains part: patches whose changes are (partly) in the tree already. The
    // official chain "applies" them (undoing those changes); the v5 chain refused them.
    for name in ["part already in the tree", "all already in the tree"] {
        assert_eq!(
            outcome(name).1,
            by("patch --batch --fuzz=5 -p1 -i"),
            "{name}"
        );
        assert!(!outcome(name).2, "{name}: the v5 chain refuses it");
    }
}
