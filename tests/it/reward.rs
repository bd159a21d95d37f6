//! The SWE-RL reward against its reference: the 486 real predictions and the hand-written edge
//! cases (exact parity), property tests against CPython's difflib and `unidiff` (run in one
//! Python process per batch), bad input, and the `swe-eval reward` command end to end.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use proptest::prelude::*;
use serde_json::{json, Value};
use swe_eval_core::reward::{self, Files};
use swe_eval_core::unidiff;

use crate::common::{self, git};

fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12
}

#[test]
fn unidiff_reward_equals_reference_on_486_predictions() {
    let shared = crate::require_shared!();
    let fixtures = read_jsonl(&shared.join("reward-fixtures/swerl_unidiff_rewards.jsonl"));
    let (ds, _) = swe_eval_core::dataset::load_dataset(
        &shared.join("partial-verified/swebench_verified_partial.jsonl"),
    )
    .unwrap();
    let preds = swe_eval_core::predictions::load_path(
        &shared.join("predictions/pydantic-deep_minimax-m2.5/all_preds.jsonl"),
    )
    .unwrap();
    assert_eq!(preds.items.len(), 486);
    assert_eq!(fixtures.len(), 486);
    let want: HashMap<&str, &Value> = fixtures
        .iter()
        .map(|r| (r["instance_id"].as_str().unwrap(), r))
        .collect();
    let results = reward::unidiff_rewards(&ds, &preds.items);
    let mut checked_files = 0;
    for (p, got) in preds.items.iter().zip(&results) {
        let got = got.as_ref().unwrap();
        let row = want[p.instance_id.as_str()];
        let reference = row["reward"].as_f64().unwrap();
        assert!(
            close(got.similarity, reference),
            "{}: {} vs reference {reference}",
            p.instance_id,
            got.similarity
        );
        let ref_files = row["per_file"].as_array().unwrap();
        assert_eq!(
            got.files.len(),
            ref_files.len(),
            "{}: file count",
            p.instance_id
        );
        for rf in ref_files {
            let path = rf["path"].as_str().unwrap();
            let f = got
                .files
                .iter()
                .find(|f| f.path == path)
                .unwrap_or_else(|| panic!("{}: no file {path}", p.instance_id));
            assert!(
                close(f.similarity, rf["similarity"].as_f64().unwrap()),
                "{}: {path}",
                p.instance_id
            );
            assert_eq!(
                f.in_pred,
                rf["in_pred"].as_bool().unwrap(),
                "{}: {path} in_pred",
                p.instance_id
            );
            assert_eq!(
                f.in_oracle,
                rf["in_oracle"].as_bool().unwrap(),
                "{}: {path} in_oracle",
                p.instance_id
            );
            checked_files += 1;
        }
        // The empty predictions are the ones the reference marks empty.
        assert_eq!(
            got.format == reward::Format::Empty,
            row["empty_patch"].as_bool().unwrap(),
            "{}",
            p.instance_id
        );
        assert_eq!(
            got.reward,
            if got.format.is_ok() {
                got.similarity
            } else {
                -1.0
            }
        );
    }
    assert!(
        checked_files >= 486,
        "per-file values were compared ({checked_files})"
    );
}

fn to_files(v: &Value) -> Files {
    v.as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn edge_cases_of_both_variants_equal_reference() {
    let shared = crate::require_shared!();
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(shared.join("reward-fixtures/swerl_edge_cases.json")).unwrap(),
    )
    .unwrap();
    let ctx = to_files(&doc["code_context"]);
    let oracle = to_files(&doc["oracle_new_content"]);
    let (mut sr, mut ud) = (0, 0);
    for case in doc["cases"].as_array().unwrap() {
        let name = case["case"].as_str().unwrap();
        let want = case["reward"].as_f64().unwrap();
        let (got, files) = if let Some(output) = case.get("model_output") {
            sr += 1;
            let r = reward::search_replace_reward(&ctx, &oracle, output.as_str().unwrap());
            match case["error"].as_str() {
                Some(msg) => assert_eq!(r.format.as_string(), msg, "{name}"),
                None => assert!(r.format.is_ok(), "{name}: {:?}", r.format),
            }
            assert_eq!(
                r.reward,
                if r.format.is_ok() { r.similarity } else { -1.0 },
                "{name}"
            );
            (r.similarity, r.files)
        } else {
            ud += 1;
            let texts = |k: &str| {
                case[k]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap().to_string())
                    .collect::<Vec<_>>()
            };
            let (o, p) = (texts("oracle_patches"), texts("pred_patches"));
            let o: Vec<&str> = o.iter().map(String::as_str).collect();
            let p: Vec<&str> = p.iter().map(String::as_str).collect();
            reward::calculate_reward_unidiff(&o, &p)
        };
        assert!(close(got, want), "{name}: {got} vs reference {want}");
        let ref_files = case["per_file"].as_array().unwrap();
        assert_eq!(files.len(), ref_files.len(), "{name}: files {files:?}");
        for rf in ref_files {
            let f = files
                .iter()
                .find(|f| f.path == rf["path"].as_str().unwrap())
                .unwrap();
            assert!(
                close(f.similarity, rf["similarity"].as_f64().unwrap()),
                "{name}: {}",
                f.path
            );
        }
    }
    assert!(
        sr >= 10 && ud >= 5,
        "both variants covered ({sr} search/replace, {ud} unidiff)"
    );
}

// ---------------------------------------------------------------- property tests vs Python

/// Runs the oracle script on a batch of cases in one Python process; `None` (through the skip
/// helper) when python3 or unidiff is missing.
fn python_batch(cases: &[Value]) -> Option<Vec<Value>> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/reward_oracle.py");
    let child = Command::new("python3")
        .arg(&script)
        .arg("batch")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = crate::common::prerequisite("python3 (the reward oracle)", child)?;
    let input = serde_json::to_vec(cases).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("No module named 'unidiff'") {
            return crate::common::prerequisite(
                "the Python unidiff package",
                Err("scripts/setup.sh --tests installs it"),
            );
        }
        panic!("oracle failed: {err}");
    }
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

/// Text from a small alphabet with lines, spaces, non-ASCII, line-break oddities.
fn text_strategy(max: usize) -> impl Strategy<Value = String> {
    let pieces = prop_oneof![
        Just("a"),
        Just("b"),
        Just("c"),
        Just(" "),
        Just("\n"),
        Just("é"),
        Just("€"),
        Just("𝟘"),
        Just("\r\n"),
        Just("\t"),
        Just("\u{1c}"),
        Just("x = 1"),
        Just("def f():"),
        Just("ab"),
    ];
    proptest::collection::vec(pieces, 0..max).prop_map(|v| v.concat())
}

/// Diff-like text: mostly well-formed lines with random damage, to reach every parser branch.
fn diff_strategy() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        3 => Just("diff --git a/f.py b/f.py\n".to_string()),
        1 => Just("diff --git a/x b/y b/z\n".to_string()),
        1 => Just("diff --git s3://p q s3://r\n".to_string()),
        1 => Just("diff --git one two\n".to_string()),
        2 => Just("--- a/f.py\n".to_string()),
        2 => Just("+++ b/f.py\n".to_string()),
        1 => Just("--- /dev/null\n".to_string()),
        1 => Just("+++ b/g.py\t2020-01-01\n".to_string()),
        1 => Just("--- a/old.py\n".to_string()),
        1 => Just("+++ b/new.py\n".to_string()),
        1 => Just("new file mode 100644\n".to_string()),
        1 => Just("deleted file mode 100644\n".to_string()),
        1 => Just("index 123..456 100644\n".to_string()),
        3 => (0u8..4, 0u8..3, 0u8..4, 0u8..3).prop_map(|(a, b, c, d)| format!("@@ -{a},{b} +{c},{d} @@ def é():\n")),
        1 => Just("@@ -1 +1 @@\n".to_string()),
        1 => Just("@@ -\u{661} +1,\u{662} @@\n".to_string()),
        12 => (prop_oneof![Just(' '), Just('+'), Just('-')], text_strategy(4))
            .prop_map(|(prefix, t)| format!("{prefix}{}\n", t.replace(['\n', '\r'], ""))),
        1 => Just("\n".to_string()),
        1 => Just("\r\n".to_string()),
        1 => Just("\\ No newline at end of file\n".to_string()),
        1 => Just("Binary files a/x.png and b/x.png differ\n".to_string()),
        1 => Just("GIT binary patch\n".to_string()),
        1 => text_strategy(3),
    ];
    proptest::collection::vec(line, 0..14).prop_map(|v| v.concat())
}

proptest! {
    // Each case is a batch of 60 inputs answered by one Python process; PROPTEST_CASES=100
    // checks 6,000 inputs per property.
    #![proptest_config(crate::common::proptest_config(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(8)
    ))]

    /// Each proptest case is a batch of 60 random pairs checked in one Python run.
    #[test]
    fn matching_blocks_and_ratio_equal_cpython(pairs in proptest::collection::vec((text_strategy(40), text_strategy(40)), 60)) {
        let cases: Vec<Value> = pairs.iter().map(|(a, b)| json!({"op": "blocks", "a": a, "b": b})).collect();
        let Some(answers) = python_batch(&cases) else { return Ok(()) };
        for ((a, b), want) in pairs.iter().zip(answers) {
            let got: Vec<Vec<usize>> = reward::char_matching_blocks(a, b).iter().map(|m| vec![m.a, m.b, m.size]).collect();
            let want_blocks: Vec<Vec<usize>> = serde_json::from_value(want["blocks"].clone()).unwrap();
            prop_assert_eq!(&got, &want_blocks, "a={:?} b={:?}", a, b);
            let want_ratio: f64 = want["ratio"].as_str().unwrap().parse().unwrap();
            prop_assert_eq!(reward::ratio(a, b), want_ratio, "a={:?} b={:?}", a, b);
        }
    }

    #[test]
    fn unidiff_parse_and_render_equal_the_package(texts in proptest::collection::vec(diff_strategy(), 60)) {
        let cases: Vec<Value> = texts.iter().map(|t| json!({"op": "unidiff", "text": t})).collect();
        let Some(answers) = python_batch(&cases) else { return Ok(()) };
        for (t, want) in texts.iter().zip(answers) {
            let parsed = unidiff::parse(t);
            prop_assert_eq!(parsed.is_ok(), want["ok"].as_bool().unwrap(), "text={:?} got {:?}", t, parsed.as_ref().err());
            // The lenient reading (grading, spec) notes a refusal exactly where the package
            // refuses, and reads what the package reads the same.
            let (lenient, refused) = unidiff::parse_lenient(t);
            prop_assert_eq!(refused.first(), parsed.as_ref().err(), "text={:?}", t);
            if let Ok(set) = &parsed {
                prop_assert_eq!(&lenient, set, "text={:?}", t);
            }
            if let Ok(set) = parsed {
                let files: Vec<(String, String)> = serde_json::from_value(want["files"].clone()).unwrap();
                prop_assert_eq!(reward::filelevel_diff(&set), files, "text={:?}", t);
                prop_assert_eq!(set.to_string(), want["str"].as_str().unwrap(), "text={:?}", t);
            }
        }
    }

    #[test]
    fn normalized_patch_equals_difflib_unified_diff(pairs in proptest::collection::vec((text_strategy(30), text_strategy(30)), 60)) {
        let cases: Vec<Value> = pairs.iter().map(|(a, b)| json!({"op": "normalized", "old": a, "new": b})).collect();
        let Some(answers) = python_batch(&cases) else { return Ok(()) };
        for ((a, b), want) in pairs.iter().zip(answers) {
            prop_assert_eq!(reward::normalized_patch(a, b), want["patch"].as_str().unwrap(), "old={:?} new={:?}", a, b);
        }
    }
}

/// Lines repeated enough that `autojunk` marks some "popular" (a `b` of 200+ lines).
#[test]
fn long_line_diffs_with_popular_lines_equal_difflib() {
    let mut cases = Vec::new();
    let mut pairs = Vec::new();
    for seed in 0..6u64 {
        let mut x = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut gen = |n: usize| {
            (0..n)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    match (x >> 33) % 7 {
                        0..=2 => "    pass".to_string(),
                        3 => String::new(),
                        _ => format!("line {}", (x >> 40) % 50),
                    }
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        let (a, b) = (gen(260), gen(240));
        cases.push(json!({"op": "normalized", "old": a, "new": b}));
        pairs.push((a, b));
    }
    let Some(answers) = python_batch(&cases) else {
        return;
    };
    for ((a, b), want) in pairs.iter().zip(answers) {
        assert_eq!(
            reward::normalized_patch(a, b),
            want["patch"].as_str().unwrap()
        );
    }
}

// ---------------------------------------------------------------- bad input

#[test]
fn binary_and_non_utf8_patches_do_not_panic() {
    let junk: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
    let text = String::from_utf8_lossy(&junk).into_owned();
    let gold = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n";
    for pred in [
        text.clone(),
        format!("{gold}{text}"),
        format!("diff --git a/i.png b/i.png\nGIT binary patch\nliteral 5\n{text}"),
        "\u{0}\u{0}@@ -1 +1 @@\n\u{fffd}".to_string(),
    ] {
        let r = reward::unidiff_reward(gold, &pred);
        assert!((0.0..=1.0).contains(&r.similarity), "{r:?}");
        let _ = reward::search_replace_reward(&Files::new(), &Files::new(), &pred);
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Runs `swe-eval reward --dataset D --predictions P --output OUT` plus `extra`.
fn run_reward(ds: &Path, preds: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(common::bin())
        .arg("reward")
        .args(extra)
        .arg("--dataset")
        .arg(ds)
        .arg("--predictions")
        .arg(preds)
        .arg("--output")
        .arg(out)
        .output()
        .unwrap()
}

const GOLD: &str = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n x = 1\n-y = 2\n+y = 3\n z = 4\n";

#[test]
fn cli_reports_unknown_instances_and_malformed_lines_and_writes_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let ds = write(
        dir.path(),
        "ds.jsonl",
        &format!(
            "{}\n",
            json!({"instance_id": "o__r-1", "repo": "o/r", "base_commit": "abc", "patch": GOLD})
        ),
    );
    let preds = write(
        dir.path(),
        "preds.jsonl",
        &[
            json!({"instance_id": "o__r-1", "model_name_or_path": "m", "model_patch": GOLD})
                .to_string(),
            json!({"instance_id": "nope-9", "model_name_or_path": "m", "model_patch": GOLD})
                .to_string(),
            r#"{"instance_id": "o__r-1", "model_name_or_path": "m", "model_patch": 5}"#.to_string(),
            json!({"instance_id": "o__r-1", "model_name_or_path": "m", "model_patch": ""})
                .to_string(),
        ]
        .join("\n"),
    );
    let out = dir.path().join("out.jsonl");
    let res = run_reward(&ds, &preds, &out, &[]);
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(3), "stderr: {stderr}");
    assert!(
        stderr.contains("nope-9"),
        "unknown instance named: {stderr}"
    );
    assert!(
        stderr.contains("preds.jsonl:3") && stderr.contains("model_patch"),
        "file, line, field: {stderr}"
    );
    let rows = read_jsonl(&out);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["similarity"], 1.0);
    assert_eq!(rows[0]["format"], "ok");
    assert_eq!(
        rows[0]["format_version"],
        swe_eval_core::wire::REWARDS_VERSION
    );
    assert_eq!(rows[0]["files"][0]["path"], "a.py");
    assert_eq!(rows[1]["sample"], 1);
    assert_eq!(rows[1]["format"], "empty");
    assert_eq!(rows[1]["reward"], -1.0);
    assert_eq!(rows[1]["similarity"], 0.0);

    let csv_out = dir.path().join("out.csv");
    let res = run_reward(&ds, &preds, &csv_out, &[]);
    assert_eq!(res.status.code(), Some(3));
    let csv = std::fs::read_to_string(&csv_out).unwrap();
    assert_eq!(
        csv.lines().next().unwrap(),
        "instance_id,model_name_or_path,sample,similarity,reward,format,format_version"
    );
    assert!(csv.lines().nth(1).unwrap().ends_with(",1"), "{csv}");
    assert_eq!(csv.lines().count(), 3);
}

/// A dataset of one row (written to `dir/ds.jsonl`) and a prediction row of its gold patch.
fn one_row(dir: &Path) -> (PathBuf, String) {
    let ds = write(
        dir,
        "ds.jsonl",
        &json!({"instance_id": "o__r-1", "repo": "o/r", "base_commit": "abc", "patch": GOLD})
            .to_string(),
    );
    let good = json!({"instance_id": "o__r-1", "model_name_or_path": "m", "model_patch": GOLD})
        .to_string();
    (ds, good)
}

/// A malformed `--repo` is bad usage (exit 2) whatever the variant, as in `run`; nothing is
/// written.
#[test]
fn a_malformed_repo_flag_is_bad_usage() {
    let dir = tempfile::tempdir().unwrap();
    let (ds, good) = one_row(dir.path());
    let preds = write(dir.path(), "p.jsonl", &good);
    let out = dir.path().join("out.jsonl");
    for variant in ["unidiff", "search-replace"] {
        let res = run_reward(
            &ds,
            &preds,
            &out,
            &["--repo", "garbage", "--variant", variant],
        );
        let stderr = String::from_utf8_lossy(&res.stderr);
        assert_eq!(res.status.code(), Some(2), "{variant}: {stderr}");
        assert_eq!(
            stderr.lines().next(),
            Some("error: `--repo garbage`: expected owner/name=PATH_OR_URL"),
            "{stderr}"
        );
        assert!(!out.exists(), "nothing written");
    }
}

/// A lone UTF-16 surrogate escape (`\ud800`) in a patch is refused by file, line and field,
/// in JSON Lines and in a JSON list; the other rows are scored.
#[test]
fn a_lone_surrogate_in_a_patch_is_refused_by_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let (ds, good) = one_row(dir.path());
    // Written by hand: no JSON library writes a lone surrogate.
    let bad = r#"{"instance_id": "o__r-1", "model_name_or_path": "m2", "model_patch": "x\ud800y"}"#;
    for (name, text, line) in [
        ("p.jsonl", format!("{good}\n{bad}\n"), 2),
        ("p.json", format!("[\n{good},\n\n{bad}\n]\n"), 4),
    ] {
        let preds = write(dir.path(), name, &text);
        let out = dir.path().join(format!("{name}.out.jsonl"));
        let res = run_reward(&ds, &preds, &out, &[]);
        let stderr = String::from_utf8_lossy(&res.stderr);
        assert_eq!(res.status.code(), Some(3), "{stderr}");
        let first = stderr.lines().next().unwrap();
        assert!(
            first.starts_with(&format!(
                "problem: {}:{line}: field `model_patch`: a lone surrogate escape \\ud800",
                preds.display()
            )),
            "{first}"
        );
        assert!(first.contains("Python"), "{first}");
        assert_eq!(read_jsonl(&out).len(), 1, "the good row is scored");
    }
}

// ---------------------------------------------------------------- search/replace with git

/// Files read from a commit: a missing commit is an error, a missing file is left out, and
/// invalid UTF-8 is replaced rather than refused.
#[test]
fn git_files_missing_commit_is_an_error_and_missing_files_are_left_out() {
    use swe_eval_core::reward::{read_files, GitError};
    if !common::require_program("git") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q"]);
    std::fs::write(dir.path().join("a.txt"), b"caf\xe9\n").unwrap();
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-qm", "c"]);
    let head = git(dir.path(), &["rev-parse", "HEAD"]);
    let files = read_files(dir.path(), &head, &["a.txt".into(), "gone.txt".into()]).unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(
        files["a.txt"], "caf\u{fffd}\n",
        "invalid UTF-8 is replaced, not refused"
    );
    let err = read_files(dir.path(), "0123456789abcdef0123456789abcdef01234567", &[]).unwrap_err();
    assert!(matches!(err, GitError::NoCommit { .. }), "{err}");
}

#[test]
fn search_replace_from_git_and_converted_patch_applies() {
    if !crate::common::require_program("git") {
        return;
    }
    let repo = tempfile::tempdir().unwrap();
    let r = repo.path();
    git(r, &["init", "-q"]);
    std::fs::write(r.join("a.py"), "x = 1\ny = 2\nz = 4\n").unwrap();
    git(r, &["add", "."]);
    git(
        r,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "base",
        ],
    );
    let base = git(r, &["rev-parse", "HEAD"]);
    let output = "<think>fix y</think>\n<solution>\n```python\n### a.py\n<<<<<<< SEARCH\ny = 2\n=======\ny = 3\n>>>>>>> REPLACE\n```\n\n```python\n### new.py\n<<<<<<< SEARCH\n\n=======\nprint(1)\n>>>>>>> REPLACE\n```\n</solution>";

    let dir = tempfile::tempdir().unwrap();
    let ds = write(
        dir.path(),
        "ds.jsonl",
        &format!(
            "{}\n",
            json!({"instance_id": "o__r-1", "repo": "o/r", "base_commit": base, "patch": GOLD})
        ),
    );
    let preds = write(
        dir.path(),
        "preds.jsonl",
        &json!({"instance_id": "o__r-1", "model_name_or_path": "m", "model_patch": output})
            .to_string(),
    );
    let out = dir.path().join("out.jsonl");
    let res = {
        let repo_arg = format!("o/r={}", r.display());
        run_reward(
            &ds,
            &preds,
            &out,
            &["--variant", "search-replace", "--repo", &repo_arg],
        )
    };
    assert_eq!(
        res.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&res.stderr)
    );
    let rows = read_jsonl(&out);
    // a.py is exactly the gold change; new.py is an extra file: (1 + 0) / 2.
    assert_eq!(rows[0]["similarity"], 0.5, "{rows:?}");
    assert_eq!(rows[0]["format"], "ok");

    // The same through a folder of mirrors named owner__name.
    let mirrors = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(r, mirrors.path().join("o__r")).unwrap();
    let out2 = dir.path().join("out2.jsonl");
    let mirrors_arg = mirrors.path().to_str().unwrap();
    let res = run_reward(
        &ds,
        &preds,
        &out2,
        &["--variant", "search-replace", "--mirrors", mirrors_arg],
    );
    assert_eq!(
        res.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&res.stderr)
    );
    assert_eq!(read_jsonl(&out2)[0]["similarity"], 0.5);
    // Without any repository, the instance is reported and the exit code says so.
    let res = run_reward(&ds, &preds, &out2, &["--variant", "search-replace"]);
    assert_eq!(res.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&res.stderr).contains("no local repository for o/r"));

    // The converted patch applies with git and gives the edited files.
    let originals = reward::read_files(r, &base, &["a.py".into(), "new.py".into()]).unwrap();
    assert_eq!(originals.len(), 1, "new.py does not exist at base");
    let patch = reward::to_git_patch(&originals, output).unwrap();
    let patch_file = write(dir.path(), "p.diff", &patch);
    git(r, &["apply", patch_file.to_str().unwrap()]);
    assert_eq!(
        std::fs::read_to_string(r.join("a.py")).unwrap(),
        "x = 1\ny = 3\nz = 4\n"
    );
    // The reference's empty SEARCH on a new file leaves no final newline; git is told so.
    assert_eq!(
        std::fs::read_to_string(r.join("new.py")).unwrap(),
        "print(1)"
    );
}

/// An output of `n` blocks on `m.py`, each replacing `x` by `x` twice: every block doubles the
/// file (the replacement contains its own search text).
fn doubling_output(n: usize) -> String {
    let block = "```python\n### m.py\n<<<<<<< SEARCH\nx\n=======\nx\nx\n>>>>>>> REPLACE\n```\n";
    format!(
        "<think>grow</think>\n<solution>\n{}</solution>",
        block.repeat(n)
    )
}

#[test]
fn search_replace_that_doubles_the_file_is_capped() {
    let ctx = Files::from([("m.py".to_string(), "x\n".to_string())]);
    // 24 doublings: 32 MiB, past the 16 MiB floor of the cap, and still cheap to compute
    // without the cap (30 would need gigabytes).
    let got = reward::edited_files(&ctx, &doubling_output(24));
    let err = match got {
        Err(e) => e,
        Ok(files) => panic!("a {} byte file from 2 bytes was accepted", files[0].1.len()),
    };
    assert_eq!(err.to_string(), "edited file exceeds 16777216 bytes");
    // A few doublings stay well under the cap and are applied as the reference does.
    let small = reward::edited_files(&ctx, &doubling_output(3)).unwrap();
    assert_eq!(small, [("m.py".to_string(), "x\n".repeat(8))]);
    // The report's 30 blocks: refused before anything large is allocated, by the reward and
    // by the patch conversion alike.
    let r = reward::search_replace_reward(&ctx, &Files::new(), &doubling_output(30));
    assert_eq!(r.similarity, -1.0);
    assert_eq!(r.format.as_string(), "edited file exceeds 16777216 bytes");
    assert!(reward::to_git_patch(&ctx, &doubling_output(30)).is_err());
}
