//! Nothing lost, nothing silent (issue 11): careless and hostile inputs against every command
//! that reads files and writes others. Each case of the closing table is a test here:
//! outputs that are inputs (through `..`, symbolic and hard links) are refused with exit 2;
//! missing required fields are named by file, line and field; names from data that would
//! leave the output folder are refused; `grade` names the logs it could not find; usage
//! mistakes found after parsing exit 2; a garbage file costs a bounded number of lines;
//! outputs are readable (0644 under umask 022); `--output -` and `.json` outputs; the reward's
//! wording; and a row's own image. Then a property test: random command lines over random
//! files (inputs, outputs, links, `..`) never change an input's bytes and never write outside
//! the output path. All cases run the binary; none needs Docker or the shared data.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use proptest::prelude::*;
use serde_json::{json, Value};

use crate::common;

const GOLD: &str = "diff --git a/src/flask/app.py b/src/flask/app.py\n--- a/src/flask/app.py\n+++ b/src/flask/app.py\n@@ -1,3 +1,3 @@\n def f():\n-    return 1\n+    return 2\n \n";
const OTHER: &str = "diff --git a/src/flask/app.py b/src/flask/app.py\n--- a/src/flask/app.py\n+++ b/src/flask/app.py\n@@ -1,3 +1,3 @@\n def f():\n-    return 1\n+    return 3\n \n";
const TEST_PATCH: &str = "diff --git a/tests/test_basic.py b/tests/test_basic.py\n--- a/tests/test_basic.py\n+++ b/tests/test_basic.py\n@@ -1 +1 @@\n-a\n+b\n";
const LOG: &str = "+ pytest -rA\n>>>>> Start Test Output\nPASSED tests/test_basic.py::test_one\nPASSED tests/test_basic.py::test_old\n>>>>> End Test Output\n";

/// A folder holding a small valid input set: `ds.jsonl` (two flask rows), `preds.jsonl` (a
/// prediction for each), `logs.jsonl` (a test output for each), `rewards.jsonl` and
/// `outcomes.jsonl` for `correlate`.
struct Fixture {
    dir: tempfile::TempDir,
}

const IDS: [&str; 2] = ["pallets__flask-1", "pallets__flask-2"];

fn row(id: &str) -> Value {
    json!({"instance_id": id, "repo": "pallets/flask", "base_commit": "abc", "patch": GOLD,
           "version": "2.0", "FAIL_TO_PASS": ["tests/test_basic.py::test_one"],
           "PASS_TO_PASS": ["tests/test_basic.py::test_old"], "test_patch": TEST_PATCH})
}

fn pred(id: &str, patch: &str) -> Value {
    json!({"instance_id": id, "model_name_or_path": "org/model", "model_patch": patch})
}

fn lines(values: &[Value]) -> String {
    values.iter().map(|v| format!("{v}\n")).collect()
}

impl Fixture {
    fn new() -> Fixture {
        let f = Fixture {
            dir: tempfile::tempdir().unwrap(),
        };
        f.write("ds.jsonl", &lines(&IDS.map(row)));
        f.write(
            "preds.jsonl",
            &lines(&[pred(IDS[0], GOLD), pred(IDS[1], OTHER)]),
        );
        f.write(
            "logs.jsonl",
            &lines(&IDS.map(|id| json!({"instance_id": id, "test_output": LOG}))),
        );
        f.write(
            "rewards.jsonl",
            &lines(&[
                json!({"instance_id": IDS[0], "model_name_or_path": "org/model", "sample": 0, "similarity": 1.0, "reward": 1.0, "format": "ok"}),
                json!({"instance_id": IDS[1], "model_name_or_path": "org/model", "sample": 0, "similarity": 0.5, "reward": 0.5, "format": "ok"}),
            ]),
        );
        f.write(
            "outcomes.jsonl",
            &lines(&[
                json!({"instance_id": IDS[0], "sample": 0, "resolved": true, "model": "org/model"}),
                json!({"instance_id": IDS[1], "sample": 0, "resolved": false, "model": "org/model"}),
            ]),
        );
        f
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, text: &str) {
        let p = self.path(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// Runs `swe-eval ARGS` in the fixture folder.
    fn run(&self, args: &[&str]) -> Output {
        Command::new(common::bin())
            .args(args)
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// Every regular file below the folder with its bytes (links are not followed).
    fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        snapshot(self.dir.path())
    }
}

fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                out.insert(
                    e.path().strip_prefix(root).unwrap().to_path_buf(),
                    std::fs::read(e.path()).unwrap(),
                );
            }
        }
    }
    out
}

/// `reward` on the fixture's dataset.
fn reward_args<'a>(preds: &'a str, out: &'a str) -> Vec<&'a str> {
    vec![
        "reward",
        "--dataset",
        "ds.jsonl",
        "--predictions",
        preds,
        "--output",
        out,
    ]
}

/// `grade` on the fixture's dataset.
fn grade_args<'a>(preds: &'a str, logs: &'a str, out: &'a str) -> Vec<&'a str> {
    vec![
        "grade",
        "--dataset",
        "ds.jsonl",
        "--predictions",
        preds,
        "--logs",
        logs,
        "--output",
        out,
    ]
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// Asserts exit 2, a message naming the output and the input, and no file changed.
#[track_caller]
fn assert_refused(f: &Fixture, args: &[&str], output: &str, input: &str) {
    let before = f.snapshot();
    let o = f.run(args);
    let err = stderr(&o);
    assert_eq!(code(&o), 2, "{args:?}: {err}");
    assert!(err.contains("refusing to write"), "{args:?}: {err}");
    assert!(
        err.contains(output) && err.contains(input),
        "{args:?} must name {output} and {input}: {err}"
    );
    assert_eq!(f.snapshot(), before, "{args:?} changed a file");
}

// ---- 1. never clobber an input ----

#[test]
fn reward_refuses_an_output_that_is_an_input_by_any_name() {
    let f = Fixture::new();
    std::fs::create_dir(f.path("sub")).unwrap();
    std::os::unix::fs::symlink("preds.jsonl", f.path("link.jsonl")).unwrap();
    std::fs::hard_link(f.path("ds.jsonl"), f.path("hard.jsonl")).unwrap();
    let reward = |out: &'static str| {
        [
            "reward",
            "--dataset",
            "ds.jsonl",
            "--predictions",
            "preds.jsonl",
            "--output",
            out,
        ]
    };
    assert_refused(&f, &reward("preds.jsonl"), "preds.jsonl", "--predictions");
    assert_refused(
        &f,
        &reward("sub/../ds.jsonl"),
        "sub/../ds.jsonl",
        "--dataset",
    );
    assert_refused(
        &f,
        &reward("missing/../ds.jsonl"),
        "missing/../ds.jsonl",
        "ds.jsonl",
    );
    assert_refused(&f, &reward("link.jsonl"), "link.jsonl", "preds.jsonl");
    assert_refused(&f, &reward("hard.jsonl"), "hard.jsonl", "ds.jsonl");
    let abs = f.path("preds.jsonl");
    let abs = abs.to_str().unwrap();
    let mut args = reward("x").to_vec();
    args[6] = abs;
    assert_refused(&f, &args, abs, "preds.jsonl");
}

#[test]
fn grade_spec_correlate_run_validate_and_bench_refuse_an_output_that_is_an_input() {
    let f = Fixture::new();
    let grade = |out| {
        vec![
            "grade",
            "--dataset",
            "ds.jsonl",
            "--predictions",
            "preds.jsonl",
            "--logs",
            "logs.jsonl",
            "--output",
            out,
        ]
    };
    assert_refused(&f, &grade("logs.jsonl"), "logs.jsonl", "--logs");
    assert_refused(&f, &grade("./preds.jsonl"), "preds.jsonl", "--predictions");
    std::fs::create_dir(f.path("logdir")).unwrap();
    let mut by_dir = grade("logdir/../logdir");
    by_dir[6] = "logdir";
    assert_refused(&f, &by_dir, "logdir", "--logs");
    assert_refused(
        &f,
        &["spec", "--dataset", "ds.jsonl", "--output", "ds.jsonl"],
        "ds.jsonl",
        "--dataset",
    );
    assert_refused(
        &f,
        &[
            "correlate",
            "--rewards",
            "rewards.jsonl",
            "--results",
            "outcomes.jsonl",
            "--output",
            "rewards.jsonl",
        ],
        "rewards.jsonl",
        "--rewards",
    );
    // Refused before any image is looked at: no Docker is needed to see it.
    assert_refused(
        &f,
        &[
            "run",
            "--dataset",
            "ds.jsonl",
            "--predictions",
            "preds.jsonl",
            "--output",
            "preds.jsonl",
        ],
        "preds.jsonl",
        "--predictions",
    );
    assert_refused(
        &f,
        &["validate", "--dataset", "ds.jsonl", "--output", "ds.jsonl"],
        "ds.jsonl",
        "--dataset",
    );
    assert_refused(
        &f,
        &[
            "bench",
            "reward",
            "--dataset",
            "ds.jsonl",
            "--predictions",
            "preds.jsonl",
            "--json",
            "ds.jsonl",
        ],
        "ds.jsonl",
        "--dataset",
    );
    assert_refused(
        &f,
        &[
            "bench",
            "grade",
            "--dataset",
            "ds.jsonl",
            "--predictions",
            "preds.jsonl",
            "--logs",
            "logs.jsonl",
            "--json",
            "logs.jsonl",
        ],
        "logs.jsonl",
        "--logs",
    );
}

#[test]
fn grade_never_writes_over_a_log_inside_its_output_folder() {
    // The logs live in the output folder, where grade writes `<id>/report.json`: a log file
    // at that very path must survive, and the refusal names it.
    let f = Fixture::new();
    let log_dir = f.path("out").join(IDS[0]);
    std::fs::create_dir_all(&log_dir).unwrap();
    std::fs::write(log_dir.join("test_output.txt"), LOG).unwrap();
    std::fs::write(log_dir.join("report.json"), "{\"kept\": true}\n").unwrap();
    let before = f.snapshot();
    let o = f.run(&grade_args("preds.jsonl", "out", "out"));
    // The output folder is the logs folder itself.
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(f.snapshot(), before);
    let o = f.run(&[
        "grade",
        "--dataset",
        "ds.jsonl",
        "--predictions",
        "preds.jsonl",
        "--logs",
        &format!("out/{}", IDS[0]),
        "--output",
        "out",
    ]);
    let err = stderr(&o);
    assert_eq!(code(&o), 2, "{err}");
    assert!(
        err.contains("report.json") && err.contains("--logs"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(log_dir.join("report.json")).unwrap(),
        "{\"kept\": true}\n"
    );
}

// ---- 2. no silent defaults for missing fields ----

#[test]
fn a_prediction_without_model_patch_is_named_by_file_line_and_field() {
    let f = Fixture::new();
    f.write(
        "p.jsonl",
        &lines(&[
            json!({"instance_id": IDS[0], "model_name_or_path": "m", "patch": GOLD}),
            json!({"instance_id": IDS[1], "model_name_or_path": "m", "model_patch": null}),
        ]),
    );
    let o = f.run(&reward_args("p.jsonl", "r.jsonl"));
    let err = stderr(&o);
    assert_eq!(code(&o), 3, "{err}");
    assert!(
        err.contains("p.jsonl:1: field `model_patch`: missing") && err.contains("`patch`"),
        "{err}"
    );
    // `null` stays an empty patch: scored, reward -1.
    let rows: Vec<Value> = std::fs::read_to_string(f.path("r.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["instance_id"], IDS[1]);
    assert_eq!(rows[0]["format"], "empty");
    assert_eq!(rows[0]["reward"], -1.0);
}

#[test]
fn a_dataset_row_without_patch_is_named_and_an_empty_file_is_said() {
    let f = Fixture::new();
    let mut r = row(IDS[0]);
    r.as_object_mut().unwrap().remove("patch");
    f.write("d.jsonl", &lines(&[r, row(IDS[1])]));
    let o = f.run(&[
        "reward",
        "--dataset",
        "d.jsonl",
        "--predictions",
        "preds.jsonl",
        "--output",
        "r.jsonl",
    ]);
    let err = stderr(&o);
    assert_eq!(code(&o), 3, "{err}");
    assert!(err.contains("d.jsonl:1: field `patch`: missing"), "{err}");
    f.write("empty.jsonl", "");
    let o = f.run(&reward_args("empty.jsonl", "r.jsonl"));
    let err = stderr(&o);
    assert_eq!(code(&o), 3, "{err}");
    assert!(err.contains("empty.jsonl: no rows"), "{err}");
}

// ---- 3. paths built from data are checked ----

fn outside(f: &Fixture, out: &str) -> Vec<PathBuf> {
    let out = Path::new(out);
    f.snapshot()
        .into_keys()
        .filter(|p| !p.starts_with(out))
        .filter(|p| {
            ![
                "ds.jsonl",
                "preds.jsonl",
                "logs.jsonl",
                "rewards.jsonl",
                "outcomes.jsonl",
                "evil.jsonl",
                "evil-preds.jsonl",
                "evil-logs.jsonl",
            ]
            .contains(&p.to_str().unwrap())
        })
        .collect()
}

#[test]
fn spec_and_grade_refuse_instance_ids_that_leave_the_output_folder() {
    let f = Fixture::new();
    let evil = "../../escaped";
    f.write("evil.jsonl", &lines(&[row(evil), row(IDS[0])]));
    f.write("evil-preds.jsonl", &lines(&[pred(evil, GOLD)]));
    f.write(
        "evil-logs.jsonl",
        &lines(&[json!({"instance_id": evil, "test_output": LOG})]),
    );
    let o = f.run(&["spec", "--dataset", "evil.jsonl", "--output", "a/b"]);
    let err = stderr(&o);
    assert_eq!(code(&o), 3, "{err}");
    assert!(
        err.contains("evil.jsonl:1: field `instance_id`") && err.contains("path separator"),
        "{err}"
    );
    assert!(f.path("a/b").join(IDS[0]).join("eval.sh").is_file());
    assert_eq!(outside(&f, "a/b"), Vec::<PathBuf>::new());
    let o = f.run(&[
        "grade",
        "--dataset",
        "evil.jsonl",
        "--predictions",
        "evil-preds.jsonl",
        "--logs",
        "evil-logs.jsonl",
        "--output",
        "a/g",
    ]);
    let err = stderr(&o);
    assert_eq!(code(&o), 3, "{err}");
    assert!(
        err.contains("evil-preds.jsonl:1: field `instance_id`"),
        "{err}"
    );
    assert_eq!(outside(&f, "a"), Vec::<PathBuf>::new());
}

#[test]
fn model_names_and_run_ids_must_be_one_folder_name() {
    let f = Fixture::new();
    f.write(
        "dots.jsonl",
        &lines(&[json!({"instance_id": IDS[0], "model_name_or_path": "..", "model_patch": GOLD})]),
    );
    let o = f.run(&grade_args("dots.jsonl", "logs.jsonl", "out"));
    let err = stderr(&o);
    assert_eq!(code(&o), 3, "{err}");
    assert!(
        err.contains("dots.jsonl:1: field `model_name_or_path`"),
        "{err}"
    );
    for (cmd, run_id) in [
        (grade_args("preds.jsonl", "logs.jsonl", "out"), "../../../x"),
        (
            vec![
                "run",
                "--dataset",
                "ds.jsonl",
                "--predictions",
                "preds.jsonl",
            ],
            "exp/1",
        ),
        (
            vec![
                "run",
                "--dataset",
                "ds.jsonl",
                "--predictions",
                "preds.jsonl",
            ],
            "..",
        ),
        (vec!["validate", "--dataset", "ds.jsonl"], "../x"),
    ] {
        let before = f.snapshot();
        let mut args = cmd.clone();
        args.extend(["--run-id", run_id]);
        let o = f.run(&args);
        let err = stderr(&o);
        assert_eq!(code(&o), 2, "{args:?}: {err}");
        assert!(
            err.contains(&format!(
                "`{run_id}` cannot be used as a file or folder name"
            )),
            "{err}"
        );
        assert_eq!(f.snapshot(), before, "{args:?}");
        assert!(!f.path("results").exists(), "{args:?}");
    }
}

// ---- 4. correlate refuses to mix runs silently ----

fn correlate_args(out: &str) -> Vec<&str> {
    vec![
        "correlate",
        "--rewards",
        "rewards.jsonl",
        "--results",
        "outcomes.jsonl",
        "--bootstrap",
        "0",
        "--output",
        out,
    ]
}

#[test]
fn correlate_refuses_rewards_and_outcomes_of_different_models() {
    let f = Fixture::new();
    f.write(
        "outcomes.jsonl",
        &lines(&[
            json!({"instance_id": IDS[0], "sample": 0, "resolved": true, "model": "claude"}),
            json!({"instance_id": IDS[1], "sample": 0, "resolved": false, "model": "claude"}),
        ]),
    );
    let o = f.run(&correlate_args("study"));
    let err = stderr(&o);
    assert_eq!(code(&o), 3, "{err}");
    assert!(
        err.contains("nothing to study")
            && err.contains("rewards are of org/model, the outcomes of claude"),
        "{err}"
    );
    assert!(!f.path("study").exists(), "nothing is written");
}

#[test]
fn correlate_puts_unmatched_rows_in_the_headline_and_exits_3() {
    let f = Fixture::new();
    f.write(
        "outcomes.jsonl",
        &lines(&[
            json!({"instance_id": IDS[0], "sample": 0, "resolved": true}),
            json!({"instance_id": IDS[1], "sample": 0, "resolved": false}),
            json!({"instance_id": "pallets__flask-9", "sample": 0, "resolved": true}),
        ]),
    );
    let o = f.run(&correlate_args("study"));
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let headline = out.lines().next().unwrap();
    assert!(
        headline
            .starts_with("Unmatched: 0 rewards without an outcome and 1 outcomes without a reward"),
        "{headline}"
    );
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(f.path("study/summary.json")).unwrap())
            .unwrap();
    assert!(summary["headline"]
        .as_str()
        .unwrap()
        .starts_with("Unmatched:"));
}

#[test]
fn correlate_says_how_predictions_without_a_verdict_count_and_leaves_errors_out_beside() {
    let f = Fixture::new();
    let ids = ["a__b-1", "a__b-2", "a__b-3", "a__b-4"];
    let sims = [0.9, 0.2, 0.8, 0.3];
    f.write(
        "rewards.jsonl",
        &lines(
            &ids.iter()
                .zip(sims)
                .map(|(id, s)| json!({"instance_id": id, "similarity": s, "reward": s, "format": "ok"}))
                .collect::<Vec<_>>(),
        ),
    );
    // a__b-2, the least similar, failed in the harness: counted unresolved it lifts the AUROC
    // to 0.750; without it the AUROC is that of the rest, 0.500.
    f.write(
        "outcomes.jsonl",
        &lines(&[
            json!({"instance_id": "a__b-1", "resolved": true}),
            json!({"instance_id": "a__b-2", "category": "error"}),
            json!({"instance_id": "a__b-3", "resolved": false}),
            json!({"instance_id": "a__b-4", "resolved": true}),
        ]),
    );
    let o = f.run(&correlate_args("study"));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("Predictions without a test verdict count as unresolved: 1 error."),
        "{out}"
    );
    assert!(
        out.contains(
            "With the 1 harness errors left out, similarity AUROC is 0.500 over 3 predictions."
        ),
        "{out}"
    );
    let report = std::fs::read_to_string(f.path("study/report.md")).unwrap();
    assert!(
        report.contains("AUROC without the 1 harness errors (n = 3)"),
        "{report}"
    );
    assert!(report.contains("where the reference gives 0.0"), "{report}");
}

// ---- 5. grade says what it could not find ----

#[test]
fn grade_with_no_logs_names_where_it_looked_and_writes_nothing() {
    let f = Fixture::new();
    std::fs::create_dir(f.path("empty")).unwrap();
    let o = f.run(&grade_args("preds.jsonl", "empty", "out"));
    let err = stderr(&o);
    assert_eq!(code(&o), 3, "{err}");
    assert!(
        err.contains("no saved logs in empty")
            && err.contains("empty/<instance_id>/test_output.txt"),
        "{err}"
    );
    assert!(!f.path("out").exists());
}

#[test]
fn grade_with_misplaced_logs_names_each_path_it_looked_for() {
    // Logs one level too flat (`logs/<id>.txt`) for one instance, right for the other.
    let f = Fixture::new();
    f.write(&format!("tree/{}.txt", IDS[0]), LOG);
    f.write(&format!("tree/{}/test_output.txt", IDS[1]), LOG);
    let o = f.run(&grade_args("preds.jsonl", "tree", "out"));
    let err = stderr(&o);
    assert_eq!(code(&o), 3, "{err}");
    assert!(
        err.contains(&format!(
            "{}: no saved log; looked for tree/{}/test_output.txt",
            IDS[0], IDS[0]
        )),
        "{err}"
    );
    assert!(!err.contains(&format!("{}: no saved log", IDS[1])), "{err}");
    assert!(f.path("out").join(IDS[1]).join("report.json").is_file());
}

#[test]
fn duplicate_predictions_are_samples_in_file_order_in_reward_and_grade() {
    let f = Fixture::new();
    f.write(
        "dup.jsonl",
        &lines(&[pred(IDS[0], GOLD), pred(IDS[0], OTHER), pred(IDS[1], GOLD)]),
    );
    f.write(
        "dup-logs.jsonl",
        &lines(&[
            json!({"instance_id": IDS[0], "test_output": LOG}),
            json!({"instance_id": IDS[0], "sample": 1, "test_output": LOG}),
            json!({"instance_id": IDS[1], "test_output": LOG}),
        ]),
    );
    let o = f.run(&reward_args("dup.jsonl", "r.jsonl"));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let samples: Vec<(String, u64)> = id_samples(&f.path("r.jsonl"));
    let want = vec![
        (IDS[0].to_string(), 0),
        (IDS[0].to_string(), 1),
        (IDS[1].to_string(), 0),
    ];
    assert_eq!(samples, want);
    let o = f.run(&grade_args("dup.jsonl", "dup-logs.jsonl", "out"));
    let err = stderr(&o);
    assert_eq!(code(&o), 0, "{err}");
    assert!(!err.contains("Some("), "debug text: {err}");
    let rows: Vec<(String, u64)> = id_samples(&f.path("out/results.jsonl"));
    assert_eq!(rows, want, "grade keeps every sample, in file order");
    assert!(f
        .path(&format!("out/{}.sample1/report.json", IDS[0]))
        .is_file());
    assert!(f.path("out/org__model.regrade.json").is_file());
    assert!(f.path("out/org__model.regrade.sample1.json").is_file());
}

// ---- 6. exit codes as documented ----

#[test]
fn usage_mistakes_found_after_parsing_exit_2() {
    let f = Fixture::new();
    let run = [
        "run",
        "--dataset",
        "ds.jsonl",
        "--predictions",
        "preds.jsonl",
    ];
    for (extra, says) in [
        (&["--repo", "garbage"][..], "--repo garbage"),
        (&["--cache-level", "bogus"][..], "invalid value 'bogus'"),
        (&["--flavour", "bogus"][..], "invalid value 'bogus'"),
    ] {
        let mut args = run.to_vec();
        args.extend(extra);
        let o = f.run(&args);
        let err = stderr(&o);
        assert_eq!(code(&o), 2, "{args:?}: {err}");
        assert!(err.contains(says), "{err}");
    }
    for args in [
        &[
            "spec",
            "--dataset",
            "ds.jsonl",
            "--output",
            "o",
            "--repo",
            "garbage",
        ][..],
        &[
            "spec",
            "--dataset",
            "ds.jsonl",
            "--output",
            "o",
            "--flavour",
            "alpine",
        ][..],
        &[
            "reward",
            "--dataset",
            "ds.jsonl",
            "--predictions",
            "preds.jsonl",
            "--output",
            "r.jsonl",
            "--variant",
            "search-replace",
            "--repo",
            "garbage",
        ][..],
        &[
            "reward",
            "--dataset",
            "missing.jsonl",
            "--predictions",
            "preds.jsonl",
            "--output",
            "r.jsonl",
        ][..],
    ] {
        let o = f.run(args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn a_garbage_file_costs_a_bounded_number_of_lines_and_exits_3() {
    let f = Fixture::new();
    let garbage: String = (0..5000).map(|i| format!("not json {i}\n")).collect();
    f.write("garbage.jsonl", &garbage);
    for args in [
        &reward_args("garbage.jsonl", "r.jsonl")[..],
        &grade_args("garbage.jsonl", "logs.jsonl", "out")[..],
        &["spec", "--dataset", "garbage.jsonl", "--output", "out"][..],
    ] {
        let o = f.run(args);
        let err = stderr(&o);
        assert_eq!(code(&o), 3, "{args:?}: {err}");
        assert!(
            err.lines().count() <= 25,
            "{args:?}: {} lines",
            err.lines().count()
        );
        assert!(err.contains("(5000 problems in all)"), "{args:?}: {err}");
    }
}

// ---- 7. files people can read ----

fn umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .map(|v| u32::from_str_radix(v.trim(), 8).unwrap())
        .unwrap()
}

#[test]
fn outputs_get_the_ordinary_mode() {
    let f = Fixture::new();
    let o = f.run(&reward_args("preds.jsonl", "r.jsonl"));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = f.run(&grade_args("preds.jsonl", "logs.jsonl", "out"));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let want = 0o666 & !umask();
    for p in [
        f.path("r.jsonl"),
        f.path("out/results.jsonl"),
        f.path("out/org__model.regrade.json"),
        f.path("out").join(IDS[0]).join("report.json"),
    ] {
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, want, "{}: {mode:o}", p.display());
    }
}

#[test]
fn reward_writes_standard_output_for_dash_and_a_json_list_for_dot_json() {
    let f = Fixture::new();
    let o = f.run(&reward_args("preds.jsonl", "-"));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!f.path("-").exists());
    let rows: Vec<Value> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["similarity"], 1.0);
    let o = f.run(&reward_args("preds.jsonl", "r.json"));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let list: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(f.path("r.json")).unwrap()).unwrap();
    assert_eq!(list, rows);
    // What correlate reads back from the list is the same as from the lines.
    let o = f.run(&[
        "correlate",
        "--rewards",
        "r.json",
        "--results",
        "outcomes.jsonl",
        "--output",
        "study",
        "--bootstrap",
        "0",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

// ---- 10. say what the reward is ----

#[test]
fn reward_help_says_how_reward_differs_from_the_reference() {
    let f = Fixture::new();
    let o = f.run(&["reward", "--help"]);
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(
        help.contains("similarity") && help.contains("-1") && help.contains("0.0"),
        "{help}"
    );
    assert!(help.contains("differs from the reference"), "{help}");
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    assert!(
        readme.contains("`reward` differs from the reference"),
        "README must say it where the output is described"
    );
}

// ---- 11. the row's own image ----

#[test]
fn a_row_with_its_own_eval_script_runs_in_its_own_image_and_says_so_once() {
    let f = Fixture::new();
    let ids = [
        "astropy__astropy-1",
        "astropy__astropy-2",
        "astropy__astropy-3",
    ];
    let rows: Vec<Value> = ids
        .iter()
        .map(|id| {
            json!({"instance_id": id, "repo": "astropy/astropy", "version": "4.3",
                   "base_commit": "HEAD", "patch": "", "test_patch": "",
                   "image": format!("own/{id}:1"), "eval_script": "#!/bin/bash\necho hi\n",
                   "docker_image": format!("docker.io/swebench/sweb.eval.x86_64.{id}:latest")})
        })
        .collect();
    f.write("sb5.jsonl", &lines(&rows));
    let o = f.run(&["spec", "--dataset", "sb5.jsonl", "--output", "out"]);
    let err = stderr(&o);
    assert_eq!(code(&o), 0, "{err}");
    for id in ids {
        let spec: Value = serde_json::from_str(
            &std::fs::read_to_string(f.path(&format!("out/{id}/spec.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(spec["official_image"], format!("own/{id}:1"));
    }
    assert_eq!(err.matches("differ").count(), 1, "{err}");
    assert!(
        err.contains("astropy__astropy-1 and 2 more instances"),
        "{err}"
    );
}

// ---- the property: no input changes, nothing lands outside the output ----

/// One command line over the files of a [`Fixture`] with extra links and folders.
#[derive(Debug, Clone)]
enum Cmd {
    Reward { out: String },
    Grade { logs: String, out: String },
    Spec { out: String },
    Correlate { out: String },
}

/// Output paths: fresh names, input names, `..` spellings, links to inputs, folders.
fn out_path() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "new.jsonl",
        "new.json",
        "new.csv",
        "ds.jsonl",
        "preds.jsonl",
        "logs.jsonl",
        "rewards.jsonl",
        "outcomes.jsonl",
        "sub/../preds.jsonl",
        "./ds.jsonl",
        "missing/../logs.jsonl",
        "link-preds.jsonl",
        "link-dir/ds.jsonl",
        "hard-ds.jsonl",
        "sub",
        "sub/deeper",
        "link-dir",
        "logdir",
        "logdir/out",
        ".",
        "..",
        "-",
    ])
    .prop_map(str::to_string)
}

fn cmd() -> impl Strategy<Value = Cmd> {
    prop_oneof![
        out_path().prop_map(|out| Cmd::Reward { out }),
        (
            prop::sample::select(vec!["logs.jsonl", "logdir", "link-dir"]),
            out_path()
        )
            .prop_map(|(logs, out)| Cmd::Grade {
                logs: logs.to_string(),
                out
            }),
        out_path().prop_map(|out| Cmd::Spec { out }),
        out_path().prop_map(|out| Cmd::Correlate { out }),
    ]
}

impl Cmd {
    /// The paths the command reads.
    fn inputs(&self) -> Vec<String> {
        let v = |x: &[&str]| x.iter().map(|s| s.to_string()).collect();
        match self {
            Cmd::Reward { .. } => v(&["ds.jsonl", "preds.jsonl"]),
            Cmd::Grade { logs, .. } => v(&["ds.jsonl", "preds.jsonl", logs]),
            Cmd::Spec { .. } => v(&["ds.jsonl"]),
            Cmd::Correlate { .. } => v(&["rewards.jsonl", "outcomes.jsonl", "ds.jsonl"]),
        }
    }

    fn args(&self) -> (Vec<String>, String) {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        match self {
            Cmd::Reward { out } => (
                s(&[
                    "reward",
                    "--dataset",
                    "ds.jsonl",
                    "--predictions",
                    "preds.jsonl",
                    "--output",
                    out,
                ]),
                out.clone(),
            ),
            Cmd::Grade { logs, out } => (
                s(&[
                    "grade",
                    "--dataset",
                    "ds.jsonl",
                    "--predictions",
                    "preds.jsonl",
                    "--logs",
                    logs,
                    "--output",
                    out,
                ]),
                out.clone(),
            ),
            Cmd::Spec { out } => (
                s(&["spec", "--dataset", "ds.jsonl", "--output", out]),
                out.clone(),
            ),
            Cmd::Correlate { out } => (
                s(&[
                    "correlate",
                    "--rewards",
                    "rewards.jsonl",
                    "--results",
                    "outcomes.jsonl",
                    "--dataset",
                    "ds.jsonl",
                    "--bootstrap",
                    "0",
                    "--output",
                    out,
                ]),
                out.clone(),
            ),
        }
    }
}

proptest! {
    #![proptest_config(common::proptest_config(48))]

    #[test]
    fn no_command_line_changes_an_input_or_writes_outside_its_output(cmd in cmd()) {
        // The fixture sits one folder down, so `..` as an output stays inside the temp folder.
        let f = Fixture::new();
        let root = f.dir.path().to_path_buf();
        let work = root.join("w");
        std::fs::create_dir(&work).unwrap();
        for name in ["ds.jsonl", "preds.jsonl", "logs.jsonl", "rewards.jsonl", "outcomes.jsonl"] {
            std::fs::rename(root.join(name), work.join(name)).unwrap();
        }
        std::fs::create_dir_all(work.join("sub")).unwrap();
        std::fs::create_dir_all(work.join("logdir").join(IDS[0])).unwrap();
        std::fs::write(work.join("logdir").join(IDS[0]).join("test_output.txt"), LOG).unwrap();
        std::fs::create_dir_all(work.join("real-dir")).unwrap();
        std::fs::write(work.join("real-dir/ds.jsonl"), "{}\n").unwrap();
        std::os::unix::fs::symlink("preds.jsonl", work.join("link-preds.jsonl")).unwrap();
        std::os::unix::fs::symlink("logdir", work.join("link-dir")).unwrap();
        std::fs::hard_link(work.join("ds.jsonl"), work.join("hard-ds.jsonl")).unwrap();
        let before = snapshot(&root);
        // The command's input files (inside input folders too), by inode: a hard link or a
        // symbolic link to one is the same input.
        let mut input_ids = std::collections::HashSet::new();
        for input in cmd.inputs() {
            let p = work.join(input);
            let files: Vec<PathBuf> = if p.is_dir() {
                snapshot(&p).into_keys().map(|k| p.join(k)).collect()
            } else {
                vec![p]
            };
            for f in files {
                let m = std::fs::metadata(&f).unwrap();
                input_ids.insert((m.dev(), m.ino()));
            }
        }
        let input_paths: std::collections::HashSet<&PathBuf> = before
            .keys()
            .filter(|p| {
                let m = std::fs::metadata(root.join(p)).unwrap();
                input_ids.contains(&(m.dev(), m.ino()))
            })
            .collect();
        let (args, out) = cmd.args();
        let o = Command::new(common::bin())
            .args(&args)
            .current_dir(&work)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let c = code(&o);
        prop_assert!([0, 2, 3].contains(&c), "{:?}: exit {}: {}", args, c, stderr(&o));
        let after = snapshot(&root);
        let out_abs = swe_eval_core::paths::resolve(&work.join(&out));
        for (p, bytes) in &before {
            let abs = root.join(p);
            let now = after.get(p);
            if now == Some(bytes) {
                continue;
            }
            // Changed or gone: never an input, and only under the output path.
            prop_assert!(!input_paths.contains(p), "{:?} changed input {}", args, p.display());
            prop_assert!(
                out != "-" && swe_eval_core::paths::resolve(&abs).starts_with(&out_abs),
                "{:?} changed {} outside {}", args, abs.display(), out_abs.display()
            );
        }
        // Everything new lies under the output path (resolved as the command sees it).
        for p in after.keys().filter(|p| !before.contains_key(*p)) {
            let abs = root.join(p);
            prop_assert!(
                out != "-" && swe_eval_core::paths::resolve(&abs).starts_with(&out_abs),
                "{:?} wrote {} outside {}", args, abs.display(), out_abs.display()
            );
        }
    }
}

/// The (instance_id, sample) of each row of a JSON Lines output, in file order.
fn id_samples(path: &std::path::Path) -> Vec<(String, u64)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["instance_id"].as_str().unwrap().to_string(),
                v["sample"].as_u64().unwrap(),
            )
        })
        .collect()
}
