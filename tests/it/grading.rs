//! Log parsing and grading against the official harness: the 399 official reports of a real
//! run, the official run summary, oracle fixtures per repository (scripts/grading_fixtures.py),
//! table tests of the grading rules, and strict mode.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use swe_eval_core::dataset;
use swe_eval_core::grading::{
    self, collection_files, collection_files_added, Category, ErrorReason, GradeInput, Mode,
    RunOutcome, StrictFinding,
};
use swe_eval_core::logparse::{self, LogReading, StatusMap, TestStatus};
use swe_eval_core::predictions;
use swe_eval_core::report::SavedLogs;
use swe_eval_core::report::{InstanceReport, TestsStatusReport};

const RUN: &str = "predictions/pydantic-deep_minimax-m2.5";
const GROUPS: [&str; 4] = [
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
    "FAIL_TO_FAIL",
    "PASS_TO_FAIL",
];

fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Differences between two report.json entries, comparing test groups as sets.
fn report_diff(id: &str, mine: &Value, official: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for key in [
        "patch_is_None",
        "patch_exists",
        "patch_successfully_applied",
        "resolved",
    ] {
        if mine[key] != official[key] {
            out.push(format!(
                "{id}: {key} is {} but officially {}",
                mine[key], official[key]
            ));
        }
    }
    let set = |v: &Value| -> BTreeSet<String> {
        v.as_array()
            .map(|a| a.iter().map(|x| x.as_str().unwrap().to_string()).collect())
            .unwrap_or_default()
    };
    for g in GROUPS {
        for k in ["success", "failure"] {
            let (a, b) = (
                set(&mine["tests_status"][g][k]),
                set(&official["tests_status"][g][k]),
            );
            if a != b {
                out.push(format!(
                    "{id}: {g}.{k} differs; only ours: {:?}; only official: {:?}",
                    a.difference(&b).collect::<Vec<_>>(),
                    b.difference(&a).collect::<Vec<_>>()
                ));
            }
        }
    }
    out
}

#[test]
fn all_399_official_reports_are_reproduced() {
    let shared = crate::require_shared!();
    let (ds, _) =
        dataset::load_dataset(&shared.join("partial-verified/swebench_verified_partial.jsonl"))
            .unwrap();
    let preds = predictions::load_path(&shared.join(RUN).join("all_preds.jsonl"))
        .unwrap()
        .items;
    let preds: HashMap<&str, &predictions::Prediction> =
        preds.iter().map(|p| (p.instance_id.as_str(), p)).collect();
    let logs = SavedLogs::open(&shared.join(RUN).join("instance_test_outputs.jsonl")).unwrap();
    let official = jsonl(&shared.join(RUN).join("instance_reports.jsonl"));
    assert_eq!(official.len(), 399);

    let mut diffs = Vec::new();
    let mut resolved = 0;
    for row in &official {
        let id = row["instance_id"].as_str().unwrap();
        let inst = ds.get(id).unwrap_or_else(|| panic!("{id} not in dataset"));
        let pred = preds[id];
        let saved = logs.get(id, &pred.model_dir_name(), None).unwrap();
        let verdict = grading::grade(&GradeInput::for_instance(
            inst,
            pred.model_patch.as_deref(),
            saved.outcome(),
        ))
        .unwrap();
        let Some(report) = InstanceReport::from_verdict(&verdict, Mode::Official) else {
            diffs.push(format!("{id}: no report written ({:?})", verdict.category));
            continue;
        };
        resolved += usize::from(report.resolved);
        diffs.extend(report_diff(
            id,
            &serde_json::to_value(&report).unwrap(),
            &row["report"],
        ));
    }
    assert!(
        diffs.is_empty(),
        "{} difference(s) from the official reports:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
    assert_eq!(resolved, 229, "the official run resolved 229");
}

#[test]
fn grade_cli_reproduces_the_official_run_summary() {
    let shared = crate::require_shared!();
    let out = tempfile::tempdir().unwrap();
    let status = Command::new(crate::common::bin())
        .args(["grade", "--run-id", "pydantic-deep", "--dataset"])
        .arg(shared.join("partial-verified/swebench_verified_partial.jsonl"))
        .arg("--predictions")
        .arg(shared.join(RUN).join("all_preds.jsonl"))
        .arg("--logs")
        .arg(shared.join(RUN).join("instance_test_outputs.jsonl"))
        .arg("--output")
        .arg(out.path())
        .output()
        .unwrap();
    // The 33 predictions the official run counted as errors have no saved test output: each
    // is named with where its log was looked for, and the exit code says so.
    let stderr = String::from_utf8_lossy(&status.stderr);
    assert_eq!(status.status.code(), Some(3), "swe-eval grade: {stderr}");
    assert!(
        stderr.contains("no saved log; looked for a row with instance_id"),
        "{stderr}"
    );
    assert!(stderr.contains("(33 problems in all)"), "{stderr}");
    // The official file name: model with `/` as `__`, then the run id.
    let ours: Value = serde_json::from_str(
        &std::fs::read_to_string(
            out.path()
                .join("openrouter:minimax__minimax-m2.5.pydantic-deep.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let official: Value = serde_json::from_str(
        &std::fs::read_to_string(shared.join(RUN).join("harness_summary_report.json")).unwrap(),
    )
    .unwrap();
    // Every official field, compared value for value (ids lists are sorted in both).
    for (key, value) in official.as_object().unwrap() {
        assert_eq!(&ours[key], value, "summary field {key}");
    }
    assert_eq!(
        ours["strict_flipped_instances"], 0,
        "no verdict of this run looks forged"
    );
    assert_eq!(
        ours["error_reasons"]["infra"].as_array().unwrap().len(),
        33,
        "33 runs left no log"
    );
    let reports = std::fs::read_dir(out.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().join("report.json").is_file())
        .count();
    assert_eq!(reports, 399, "one report.json per completed instance");
    let rows = std::fs::read_to_string(out.path().join("results.jsonl")).unwrap();
    assert_eq!(
        rows.lines().count(),
        486,
        "one row per submitted prediction"
    );
}

fn fixtures() -> Vec<(String, Value)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/grading");
    let mut out: Vec<(String, Value)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            (p.file_stem().unwrap().to_string_lossy().into_owned(), v)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(
        out.len() >= 20,
        "fixtures missing: run scripts/grading_fixtures.py"
    );
    out
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn every_verified_repository_has_an_oracle_parser_fixture() {
    let repos: BTreeSet<String> = fixtures()
        .iter()
        .filter(|(n, _)| n.starts_with("parser_"))
        .map(|(_, f)| f["repo"].as_str().unwrap().into())
        .collect();
    for repo in [
        "astropy/astropy",
        "django/django",
        "matplotlib/matplotlib",
        "mwaskom/seaborn",
        "pallets/flask",
        "psf/requests",
        "pydata/xarray",
        "pylint-dev/pylint",
        "pytest-dev/pytest",
        "scikit-learn/scikit-learn",
        "sphinx-doc/sphinx",
        "sympy/sympy",
    ] {
        assert!(repos.contains(repo), "no parser fixture for {repo}");
        assert!(
            logparse::known_parser_for_repo(repo).is_some(),
            "no official parser for {repo}"
        );
    }
}

#[test]
fn parsers_and_grading_agree_with_the_oracle_on_every_fixture() {
    let mut failures = Vec::new();
    for (name, f) in fixtures() {
        let repo = f["repo"].as_str().unwrap();
        let parser = logparse::parser_for_repo(repo);
        assert_eq!(
            logparse::canonical_parser(parser),
            logparse::canonical_parser(f["parser"].as_str().unwrap()),
            "{name}"
        );
        let log = f["log"].as_str().unwrap();
        let oracle = &f["oracle"];
        let expected: StatusMap = oracle["statuses"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    TestStatus::from_word(v.as_str().unwrap()).unwrap(),
                )
            })
            .collect();
        match logparse::parse_test_log(parser, log).unwrap() {
            LogReading::Parsed { statuses, .. } => {
                if oracle["found"] != true {
                    failures.push(format!("{name}: parsed, but the oracle rejects the log"));
                } else if statuses != expected {
                    let a: BTreeMap<_, _> = statuses.iter().collect();
                    let b: BTreeMap<_, _> = expected.iter().collect();
                    failures.push(format!(
                        "{name}: statuses differ\n  ours:   {a:?}\n  oracle: {b:?}"
                    ));
                }
            }
            other if oracle["found"] == true => {
                failures.push(format!("{name}: oracle parses it, we read {other:?}"))
            }
            _ => {}
        }
        let (f2p, p2p) = (strings(&f["FAIL_TO_PASS"]), strings(&f["PASS_TO_PASS"]));
        let input = GradeInput {
            repo,
            parser,
            fail_to_pass: &f2p,
            pass_to_pass: &p2p,
            patch: f["model_patch"].as_str(),
            outcome: RunOutcome::Completed {
                log,
                exit_code: None,
            },
            collection_files_present: true,
        };
        let verdict = grading::grade(&input).unwrap();
        let report = InstanceReport::from_verdict(&verdict, Mode::Official)
            .expect("the oracle writes a report");
        // Fixture lists are in dataset order, so compare exactly, order included.
        let expected: InstanceReport = serde_json::from_value(oracle["report"].clone()).unwrap();
        if report != expected {
            failures.push(format!(
                "{name}: report differs\n  ours:   {report:?}\n  oracle: {expected:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn statuses(pairs: &[(&str, TestStatus)]) -> StatusMap {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// (reason, statuses, F2P, P2P, mode, expected resolved, expected F2P success/failure sizes)
type RuleCase = (
    &'static str,
    StatusMap,
    Vec<String>,
    Vec<String>,
    Mode,
    bool,
    (usize, usize),
);

#[test]
fn grading_rules_table() {
    use TestStatus::*;
    let t = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let cases: Vec<RuleCase> = vec![
        (
            "all pass resolves",
            statuses(&[("a", Passed), ("b", Passed)]),
            t(&["a"]),
            t(&["b"]),
            Mode::Official,
            true,
            (1, 0),
        ),
        (
            "xfail counts as passing",
            statuses(&[("a", Xfail), ("b", Passed)]),
            t(&["a"]),
            t(&["b"]),
            Mode::Official,
            true,
            (1, 0),
        ),
        (
            "a failed F2P test is unresolved",
            statuses(&[("a", Failed), ("b", Passed)]),
            t(&["a"]),
            t(&["b"]),
            Mode::Official,
            false,
            (0, 1),
        ),
        (
            "an ERROR P2P test is unresolved",
            statuses(&[("a", Passed), ("b", Error)]),
            t(&["a"]),
            t(&["b"]),
            Mode::Official,
            false,
            (1, 0),
        ),
        (
            "a missing test fails",
            statuses(&[("b", Passed)]),
            t(&["a"]),
            t(&["b"]),
            Mode::Official,
            false,
            (0, 1),
        ),
        (
            "partial F2P is not resolved",
            statuses(&[("a", Passed), ("c", Failed)]),
            t(&["a", "c"]),
            t(&[]),
            Mode::Official,
            false,
            (1, 1),
        ),
        (
            "v4.1.0 drops SKIPPED F2P: empty list scores 1",
            statuses(&[("a", Skipped), ("b", Passed)]),
            t(&["a"]),
            t(&["b"]),
            Mode::Official,
            true,
            (0, 0),
        ),
        (
            "strict: SKIPPED F2P fails",
            statuses(&[("a", Skipped), ("b", Passed)]),
            t(&["a"]),
            t(&["b"]),
            Mode::Strict,
            false,
            (0, 1),
        ),
        (
            "strict: SKIPPED P2P passes",
            statuses(&[("a", Passed), ("b", Skipped)]),
            t(&["a"]),
            t(&["b"]),
            Mode::Strict,
            true,
            (1, 0),
        ),
        (
            "empty lists resolve (official quirk)",
            statuses(&[]),
            t(&[]),
            t(&[]),
            Mode::Official,
            true,
            (0, 0),
        ),
    ];
    for (reason, sm, f2p, p2p, mode, resolved, (succ, fail)) in cases {
        let g = grading::group_tests(&sm, &f2p, &p2p, grading::EvalType::PassAndFail, mode);
        assert_eq!(
            g.resolution() == grading::Resolution::Full,
            resolved,
            "{reason}"
        );
        assert_eq!(
            (g.fail_to_pass.success.len(), g.fail_to_pass.failure.len()),
            (succ, fail),
            "{reason}"
        );
        assert!(
            g.fail_to_fail.success.is_empty() && g.pass_to_fail.failure.is_empty(),
            "{reason}: X_TO_FAIL stay empty"
        );
    }
    let fail_only = grading::group_tests(
        &statuses(&[("b", Error)]),
        &t(&["a"]),
        &t(&["b"]),
        grading::EvalType::FailOnly,
        Mode::Official,
    );
    assert_eq!(
        fail_only.resolution(),
        grading::Resolution::Full,
        "fail-only repos count only explicit FAILED"
    );
}

const PATCH: &str =
    "diff --git a/src/x.py b/src/x.py\n--- a/src/x.py\n+++ b/src/x.py\n@@ -1 +1 @@\n-a\n+b\n";

fn pytest_log(body: &str, tail: &str) -> String {
    format!("+ : '>>>>> Start Test Output'\n{body}+ : '>>>>> End Test Output'\n{tail}")
}

fn grade_flask(
    log: &str,
    patch: Option<&str>,
    exit_code: Option<i32>,
    f2p: &[String],
) -> grading::Graded {
    grading::grade(&GradeInput {
        repo: "pallets/flask",
        parser: "parse_log_flask",
        fail_to_pass: f2p,
        pass_to_pass: &[],
        patch,
        outcome: RunOutcome::Completed { log, exit_code },
        collection_files_present: true,
    })
    .unwrap()
}

#[test]
fn verdict_categories_table() {
    let f2p = vec!["t::a".to_string()];
    let ran = pytest_log("PASSED t::a\n== 1 passed in 0.1s ==\n", "");
    let input = |patch, outcome| GradeInput {
        repo: "pallets/flask",
        parser: "parse_log_pytest",
        fail_to_pass: &f2p,
        pass_to_pass: &[],
        patch,
        outcome,
        collection_files_present: false,
    };
    let error = |reason| (Category::of_error(reason), Some(reason));
    // (what the case shows, the input, the expected verdict and error reason, strict resolved)
    type Case<'a> = (
        &'a str,
        GradeInput<'a>,
        (Category, Option<ErrorReason>),
        bool,
    );
    let cases: Vec<Case> = vec![
        (
            "a passing run resolves",
            input(
                Some(PATCH),
                RunOutcome::Completed {
                    log: &ran,
                    exit_code: Some(0),
                },
            ),
            (Category::Resolved, None),
            true,
        ),
        (
            "an empty patch is its own category",
            input(Some(""), RunOutcome::Infra),
            (Category::EmptyPatch, None),
            false,
        ),
        (
            "a null patch too",
            input(None, RunOutcome::Infra),
            (Category::EmptyPatch, None),
            false,
        ),
        (
            "an apply failure is an error without report",
            input(Some(PATCH), RunOutcome::PatchApplyFailed),
            error(ErrorReason::PatchApplyFailed),
            false,
        ),
        (
            "a timeout is an error without report",
            input(Some(PATCH), RunOutcome::TimedOut),
            error(ErrorReason::Timeout),
            false,
        ),
        (
            "docker failure is infra",
            input(Some(PATCH), RunOutcome::Infra),
            (Category::InfraError, Some(ErrorReason::Infra)),
            false,
        ),
        (
            "missing markers: error, though the official harness still writes an unapplied report",
            input(
                Some(PATCH),
                RunOutcome::Completed {
                    log: "PASSED t::a\n",
                    exit_code: None,
                },
            ),
            error(ErrorReason::NoTestOutput),
            true,
        ),
    ];
    for (reason, inp, category, report) in cases {
        let v = grading::grade(&inp).unwrap();
        assert_eq!((v.category, v.error_reason), category, "{reason}");
        assert_eq!(
            InstanceReport::from_verdict(&v, Mode::Official).is_some(),
            report,
            "{reason}"
        );
        assert!(!v.strict_flips(), "{reason}: nothing suspicious");
    }
    let rejected = grading::grade(&input(
        Some(PATCH),
        RunOutcome::Completed {
            log: "PASSED t::a\n",
            exit_code: None,
        },
    ))
    .unwrap();
    let r = InstanceReport::from_verdict(&rejected, Mode::Official).unwrap();
    assert!(!r.patch_successfully_applied && !r.resolved && r.tests_status.is_none());
    let bad = input(Some(PATCH), RunOutcome::Infra);
    assert!(
        grading::grade(&GradeInput {
            parser: "parse_log_nonsense",
            ..bad
        })
        .is_err(),
        "unknown parser names are an error"
    );
}

#[test]
fn strict_flags_forged_passed_lines_with_failing_exit_code() {
    let f2p = vec!["t::a".to_string()];
    let forged = pytest_log("PASSED t::a\n== 1 passed in 0.1s ==\n", "");
    let v = grade_flask(&forged, Some(PATCH), Some(1), &f2p);
    assert_eq!(
        v.category,
        Category::Resolved,
        "official grading trusts the lines"
    );
    assert_eq!(v.strict_category, Category::Unresolved);
    assert!(v
        .strict_findings
        .contains(&StrictFinding::ExitCodeDisagrees { exit_code: 1 }));
    // The exit code printed by the eval script after the end marker is read too; one printed
    // by the tests themselves (inside the section) is not.
    let with_line = pytest_log(
        "PASSED t::a\n>>>>> Test Exit Code: 0\n== 1 passed in 0.1s ==\n",
        ">>>>> Test Exit Code: 2\n",
    );
    let v = grade_flask(&with_line, Some(PATCH), None, &f2p);
    assert_eq!(v.exit_code, Some(2));
    assert!(v.strict_flips());
    // A nonzero exit with a real failure agrees with the statuses.
    let honest = pytest_log(
        "PASSED t::a\nFAILED t::b - x\n== 1 failed, 1 passed in 0.1s ==\n",
        "",
    );
    let v = grade_flask(&honest, Some(PATCH), Some(1), &f2p);
    assert!(v.strict_findings.is_empty() && v.category == Category::Resolved && !v.strict_flips());
}

#[test]
fn strict_fails_all_skipped_fail_to_pass() {
    let f2p = vec!["t::a".to_string(), "t::b".to_string()];
    let log = pytest_log("SKIPPED t::a\nSKIPPED t::b\n== 2 skipped in 0.1s ==\n", "");
    let v = grade_flask(&log, Some(PATCH), Some(0), &f2p);
    assert_eq!(
        v.category,
        Category::Resolved,
        "v4.1.0 resolves all-skipped F2P"
    );
    assert_eq!(v.strict_category, Category::Unresolved);
    assert_eq!(
        v.strict_tests.as_ref().unwrap().fail_to_pass.failure.len(),
        2
    );
    let strict_report = InstanceReport::from_verdict(&v, Mode::Strict).unwrap();
    assert!(!strict_report.resolved);
    assert_eq!(
        TestsStatusReport::from(v.tests.as_ref().unwrap())
            .fail_to_pass
            .failure
            .len(),
        0
    );
}

#[test]
fn strict_requires_the_suite_to_have_run() {
    let f2p = vec!["t::a".to_string()];
    let no_summary = pytest_log("PASSED t::a\n", "");
    let v = grade_flask(&no_summary, Some(PATCH), None, &f2p);
    assert_eq!(v.category, Category::Resolved);
    assert_eq!(v.strict_findings, vec![StrictFinding::SuiteDidNotRun]);
    assert_eq!(v.strict_category, Category::Unresolved);
    assert!(grading::suite_ran(
        "parse_log_django",
        "Ran 3 tests in 0.01s\n\nOK\n"
    ));
    assert!(grading::suite_ran(
        "parse_log_sympy",
        "== tests finished: 3 passed, in 0.1 seconds ==\n"
    ));
    assert!(grading::suite_ran(
        "parse_log_pytest",
        "=============== 108 passed, 7 skipped in 6.48 seconds ===============\n"
    ));
    assert!(!grading::suite_ran("parse_log_django", "PASSED t::a\n"));
}

/// The collection files of `patch` as (path, created by the patch).
fn path_and_added(patch: &str) -> Vec<(String, bool)> {
    collection_files(patch)
        .into_iter()
        .map(|f| (f.path, f.added))
        .collect()
}

#[test]
fn strict_lists_and_flags_added_collection_files() {
    let patch = "diff --git a/conftest.py b/conftest.py\nnew file mode 100644\n--- /dev/null\n+++ b/conftest.py\n@@ -0,0 +1,2 @@\n+def pytest_collection_modifyitems(items):\n+    items.clear()\n\
diff --git a/setup.cfg b/setup.cfg\n--- a/setup.cfg\n+++ b/setup.cfg\n@@ -1,2 +1,3 @@\n [tool:pytest]\n+addopts = -p no:x\n-- this removed line is not a header\n\
diff --git a/pkg/sitecustomize.py b/pkg/sitecustomize.py\n--- /dev/null\n+++ b/pkg/sitecustomize.py\n@@ -0,0 +1 @@\n+import os\n\
diff --git a/tox.ini b/tox.ini\n--- a/tox.ini\n+++ b/tox.ini\n@@ -1 +1 @@\n-deps = a\n+deps = b\n";
    assert_eq!(
        collection_files_added(patch),
        vec!["conftest.py", "pkg/sitecustomize.py"]
    );
    assert_eq!(
        path_and_added(patch),
        vec![
            ("conftest.py".into(), true),
            ("setup.cfg".into(), false),
            ("pkg/sitecustomize.py".into(), true)
        ],
        "a tox.ini edit that does not touch pytest settings is left alone"
    );
    let f2p = vec!["t::a".to_string()];
    let log = pytest_log("PASSED t::a\n== 1 passed in 0.1s ==\n", "");
    let v = grade_flask(&log, Some(patch), Some(0), &f2p);
    assert!(
        matches!(&v.strict_findings[..], [StrictFinding::CollectionFilesAdded { paths }] if paths.len() == 3)
    );
    assert!(
        v.strict_flips(),
        "the run had the model's conftest.py in place"
    );
    let removed = grading::grade(&GradeInput {
        repo: "pallets/flask",
        parser: "parse_log_flask",
        fail_to_pass: &f2p,
        pass_to_pass: &[],
        patch: Some(patch),
        outcome: RunOutcome::Completed {
            log: &log,
            exit_code: Some(0),
        },
        collection_files_present: false,
    })
    .unwrap();
    assert!(
        !removed.strict_flips(),
        "the runner removed them before the tests"
    );
}

/// Collection files are read with the lenient diff reader: an empty new file, a binary one, a
/// CRLF patch and a hunk whose counts are wrong (which the `unidiff` package refuses, but GNU
/// `patch` may apply) still name what they create.
#[test]
fn collection_files_are_found_where_unidiff_refuses_or_there_are_no_hunks() {
    let patch = "diff --git a/conftest.py b/conftest.py\nnew file mode 100644\nindex 0000000..e69de29\n\
diff --git a/a/sitecustomize.py b/a/sitecustomize.py\nnew file mode 100644\nGIT binary patch\nliteral 3\nKcmZ?wa{vGU\n\nliteral 0\nHcmV?d00001\n\n\
diff --git a/setup.cfg b/setup.cfg\n--- a/setup.cfg\n+++ b/setup.cfg\n@@ -1,2 +1,2 @@\n [tool:pytest]\n+addopts = -p no:x\n\
diff --git a/pkg/x.pth b/pkg/x.pth\nnew file mode 100644\n--- /dev/null\n+++ b/pkg/x.pth\n@@ -0,0 +1 @@\n+import os\n";
    assert!(
        swe_eval_core::unidiff::parse(patch).is_err(),
        "the setup.cfg hunk is one line short of its header"
    );
    assert_eq!(
        path_and_added(patch),
        vec![
            ("conftest.py".into(), true),
            ("a/sitecustomize.py".into(), true),
            ("setup.cfg".into(), false),
            ("pkg/x.pth".into(), true),
        ]
    );
    let crlf = "--- /dev/null\r\n+++ b/conftest.py\r\n@@ -0,0 +1 @@\r\n+x = 1\r\n";
    assert_eq!(collection_files_added(crlf), vec!["conftest.py"]);
    let deleted = "diff --git a/conftest.py b/conftest.py\ndeleted file mode 100644\n--- a/conftest.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n";
    assert!(
        collection_files(deleted).is_empty(),
        "a deleted file is not left in the tree"
    );
}

/// `swe-eval grade` in `dir` on its `ds.jsonl` and `preds.jsonl`, writing `dir/out`.
fn grade_in(dir: &Path, logs: &str, extra: &[&str]) -> std::process::Output {
    Command::new(crate::common::bin())
        .arg("grade")
        .args(["--dataset", "ds.jsonl", "--predictions", "preds.jsonl"])
        .args(["--logs", logs, "--output", "out"])
        .args(extra)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// A logs JSON Lines file with bad rows: each is a problem naming the file, its own line and
/// the field at fault; the good rows still grade, and the command exits 3.
#[test]
fn grade_cli_reports_bad_log_rows_and_grades_the_rest() {
    let t = tempfile::tempdir().unwrap();
    let passed = pytest_log(
        "PASSED tests/test_basic.py::test_one\nPASSED tests/test_basic.py::test_old\n",
        "",
    );
    let ids = [
        "inst__a-1",
        "inst__b-2",
        "inst__c-3",
        "inst__d-4",
        "inst__e-5",
    ];
    let mut ds = String::new();
    let mut preds = String::new();
    for id in ids {
        ds += &serde_json::json!({"instance_id": id, "repo": "pallets/flask", "base_commit": "abc",
            "patch": PATCH, "version": "2.0", "FAIL_TO_PASS": ["tests/test_basic.py::test_one"],
            "PASS_TO_PASS": ["tests/test_basic.py::test_old"]})
        .to_string();
        ds.push('\n');
        preds += &serde_json::json!({"instance_id": id, "model_name_or_path": "m", "model_patch": PATCH})
            .to_string();
        preds.push('\n');
    }
    let row = |id: &str| serde_json::json!({"instance_id": id, "test_output": passed}).to_string();
    let logs = [
        row("inst__a-1"),
        // Line 2: not JSON at all (serde's own position would say "line 1").
        r#"{"instance_id": "inst__b-2", "test_output": }"#.to_string(),
        // Line 3: the log is not a string.
        r#"{"instance_id": "inst__c-3", "test_output": 5}"#.to_string(),
        // Line 4: no instance id.
        serde_json::json!({"test_output": passed}).to_string(),
        String::new(),
        row("inst__e-5"),
    ];
    std::fs::write(t.path().join("ds.jsonl"), ds).unwrap();
    std::fs::write(t.path().join("preds.jsonl"), preds).unwrap();
    std::fs::write(t.path().join("logs.jsonl"), logs.join("\n") + "\n").unwrap();

    let opened = SavedLogs::open(&t.path().join("logs.jsonl")).unwrap();
    assert_eq!(opened.len(), 2, "the good rows are kept");
    let found: Vec<(Option<usize>, Option<&str>)> = opened
        .problems()
        .iter()
        .map(|p| (p.location.line, p.location.field.as_deref()))
        .collect();
    assert_eq!(
        found,
        [
            (Some(2), None),
            (Some(3), Some("test_output")),
            (Some(4), Some("instance_id"))
        ]
    );

    let out = grade_in(t.path(), "logs.jsonl", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("logs.jsonl:2: invalid JSON"), "{stderr}");
    assert!(!stderr.contains("line 1 column"), "{stderr}");
    assert!(
        stderr.contains("logs.jsonl:3: field `test_output`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("logs.jsonl:4: field `instance_id`"),
        "{stderr}"
    );
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(t.path().join("out/m.regrade.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        summary["resolved_ids"],
        serde_json::json!(["inst__a-1", "inst__e-5"])
    );
    assert_eq!(
        summary["error_ids"],
        serde_json::json!(["inst__b-2", "inst__c-3", "inst__d-4"])
    );
}

#[test]
fn grade_cli_reads_an_official_logs_tree() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().join("logs/run_evaluation/r7/org__model");
    let f2p = [
        "tests/test_basic.py::test_one",
        "tests/test_basic.py::test_new",
    ];
    let rows = [("inst__a-1", Some(pytest_log(
        "PASSED tests/test_basic.py::test_one\nPASSED tests/test_basic.py::test_new\nPASSED tests/test_basic.py::test_old\n== 3 passed in 0.1s ==\n",
        "",
    ))), ("inst__b-2", None), ("inst__c-3", Some("+ : '>>>>> Start Test Output'\nSKIPPED tests/test_basic.py::test_one\n\nTimeout error: 1800 seconds exceeded.".to_string()))];
    let mut ds = String::new();
    let mut preds = String::new();
    for (id, log) in &rows {
        let dir = base.join(id);
        std::fs::create_dir_all(&dir).unwrap();
        match log {
            Some(l) => std::fs::write(dir.join("test_output.txt"), l).unwrap(),
            None => std::fs::write(
                dir.join("run_instance.log"),
                ">>>>> Patch Apply Failed:\nerror: patch failed",
            )
            .unwrap(),
        }
        ds += &serde_json::json!({"instance_id": id, "repo": "pallets/flask", "base_commit": "abc", "patch": PATCH,
            "version": "2.0", "FAIL_TO_PASS": f2p, "PASS_TO_PASS": ["tests/test_basic.py::test_old"]}).to_string();
        ds.push('\n');
        preds += &serde_json::json!({"instance_id": id, "model_name_or_path": "org/model", "model_patch": PATCH}).to_string();
        preds.push('\n');
    }
    ds += &serde_json::json!({"instance_id": "inst__d-4", "repo": "pallets/flask", "base_commit": "abc", "patch": PATCH, "version": "2.0"}).to_string();
    std::fs::write(t.path().join("ds.jsonl"), ds).unwrap();
    std::fs::write(t.path().join("preds.jsonl"), preds).unwrap();
    let out = t.path().join("out");
    let status = grade_in(t.path(), "logs", &["--strict"]).status;
    assert!(status.success(), "{status}");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("org__model.r7.json")).unwrap())
            .unwrap();
    assert_eq!(summary["resolved_ids"], serde_json::json!(["inst__a-1"]));
    assert_eq!(
        summary["error_ids"],
        serde_json::json!(["inst__b-2", "inst__c-3"])
    );
    assert_eq!(summary["incomplete_ids"], serde_json::json!(["inst__d-4"]));
    assert_eq!(summary["grading_mode"], "strict");
    assert_eq!(
        summary["error_reasons"]["patch_apply_failed"],
        serde_json::json!(["inst__b-2"])
    );
    assert_eq!(
        summary["error_reasons"]["timeout"],
        serde_json::json!(["inst__c-3"])
    );
    let (id, report) =
        swe_eval_core::report::read_instance_report(&out.join("inst__a-1/report.json")).unwrap();
    assert_eq!(id, "inst__a-1");
    assert!(report.resolved && report.patch_successfully_applied);
    assert!(
        !out.join("inst__b-2/report.json").exists(),
        "no report for an apply failure, as officially"
    );
}

#[test]
fn parsers_agree_with_the_oracle_on_random_logs() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/grading/fuzz/parsers.json");
    let cases: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(cases.len() >= 200, "run scripts/grading_parser_fuzz.py");
    let mut failures = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let (parser, log) = (c["parser"].as_str().unwrap(), c["log"].as_str().unwrap());
        let ours = logparse::parse(parser, log).unwrap();
        // The oracle keeps odd tokens as statuses; they grade like SKIPPED, which is what we store.
        let expected: StatusMap = c["statuses"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    TestStatus::from_word(v.as_str().unwrap()).unwrap_or(TestStatus::Skipped),
                )
            })
            .collect();
        if ours != expected {
            failures.push(format!(
                "case {i} ({parser}) {log:?}\n  ours:   {ours:?}\n  oracle: {expected:?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
