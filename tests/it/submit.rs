//! `swe-eval submit` on real data: the MiniMax run in `../shared` (its official test outputs,
//! graded by `swe-eval grade` into a run folder) becomes a leaderboard package whose results
//! match the official harness's own summary, `--verify` passes on it, and a tampered number in
//! `results/` or a doctored `report.json` makes `--verify` fail naming what differs.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

use crate::common::bin;

fn swe_eval(args: &[&str]) -> Output {
    let out = Command::new(bin())
        .args(args)
        .output()
        .expect("swe-eval runs");
    eprintln!(
        "swe-eval {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The ids of a JSON list.
fn ids(list: &serde_json::Value) -> BTreeSet<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

/// Checks `swe-eval submit --verify` on `pkg`: passes as it is, then fails on a copy with one
/// number of `results/` changed and on one with a `report.json` claiming a resolution its log
/// does not give.
pub fn verify_detects_tampering(pkg: &Path, dataset: &Path, work: &Path) {
    let ok = swe_eval(&["submit", "--verify", s(pkg), "-d", s(dataset)]);
    assert!(
        matches!(ok.status.code(), Some(0) | Some(3)),
        "the package as written verifies"
    );
    // Verified, or (without traces) every check passed but the package is not complete.
    assert!(
        String::from_utf8_lossy(&ok.stdout).contains("agree with the logs"),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );

    let by_repo = json(&pkg.join("results/resolved_by_repo.json"));
    let (repo, tally) = by_repo.as_object().unwrap().iter().next().unwrap();
    let resolved = tally["resolved"].as_u64().unwrap();
    let tampered = work.join("tampered-number");
    copy_dir(pkg, &tampered);
    let path = tampered.join("results/resolved_by_repo.json");
    let mut v = json(&path);
    v[repo]["resolved"] = (resolved + 1).into();
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let bad = swe_eval(&["submit", "--verify", s(&tampered), "-d", s(dataset)]);
    assert_eq!(
        bad.status.code(),
        Some(1),
        "a tampered number fails --verify"
    );
    let err = String::from_utf8_lossy(&bad.stderr);
    let want = format!(
        "results/resolved_by_repo.json: repository {repo}: resolved is {}, the package's logs give {resolved}",
        resolved + 1
    );
    assert!(err.contains(&want), "names the number: {err}");

    // A report.json saying resolved where its own test output does not resolve.
    let results = json(&pkg.join("results/results.json"));
    let resolved_ids = ids(&results["resolved"]);
    let doctored = work.join("doctored-report");
    copy_dir(pkg, &doctored);
    let victim = std::fs::read_dir(doctored.join("logs"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|id| {
            !resolved_ids.contains(id)
                && doctored.join("logs").join(id).join("report.json").is_file()
        })
        .expect("an unresolved instance with a report");
    let path = doctored.join("logs").join(&victim).join("report.json");
    let mut r = json(&path);
    r[&victim]["resolved"] = true.into();
    std::fs::write(&path, serde_json::to_string_pretty(&r).unwrap()).unwrap();
    let bad = swe_eval(&["submit", "--verify", s(&doctored), "-d", s(dataset)]);
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains(&format!(
            "logs/{victim}/report.json says resolved: true, its test_output.txt grades unresolved"
        )),
        "{err}"
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// The mini benchmark's run folder (from the end-to-end test) as a package of its `mini-demo`
/// model: two samples per instance break the pass@1 rule (warned, sample 0 packaged), the
/// package verifies, and the run's `report.html` lists all 22 predictions in chromium.
pub fn mini_run_packages(results: &Path) {
    let dataset = results.join("mini/dataset.jsonl");
    let work = tempfile::tempdir().unwrap();
    let pkg = work.path().join("pkg");
    let out = swe_eval(&[
        "submit",
        s(results),
        "-d",
        s(&dataset),
        "--model",
        "mini-demo",
        "-o",
        s(&pkg),
    ]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("[pass@1]"));
    let results_json = json(&pkg.join("results/results.json"));
    // mini-demo sample 0 resolves calc-1, iniconf-2 and strutils-2 (datasets/mini/expected.json).
    assert_eq!(
        ids(&results_json["resolved"]),
        [
            "swe-eval-mini__calc-1",
            "swe-eval-mini__iniconf-2",
            "swe-eval-mini__strutils-2"
        ]
        .map(String::from)
        .into(),
    );
    verify_detects_tampering(&pkg, &dataset, work.path());
    a_patch_that_did_not_run_is_refused_in_the_mini_run(results, &pkg, work.path());
    a_sample_is_never_swapped_in_the_mini_run(results, work.path());

    let page = results.join("mini.report.html");
    assert!(page.is_file(), "the run wrote its report.html");
    let Some(chromium) = crate::common::chromium() else {
        return;
    };
    let profile = tempfile::tempdir().unwrap();
    let dom = crate::common::headless_chromium(&chromium, profile.path())
        .arg("--dump-dom")
        .arg(format!("file://{}#verdict=resolved", page.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(dom.contains("<span id=\"total\">22</span>"), "{dom}");
    assert!(dom.contains("<span id=\"shown\">13</span>"), "13 resolved");
}

/// Issue 34, item 1, on the real mini run: every mini-demo patch replaced by a README edit is
/// refused by `submit -p` (named), and the package of the real run with its patch.diff files
/// and all_preds.jsonl replaced by that edit fails `--verify`, naming each patch.
fn a_patch_that_did_not_run_is_refused_in_the_mini_run(results: &Path, pkg: &Path, work: &Path) {
    let dataset = results.join("mini/dataset.jsonl");
    let bundled = std::fs::read_to_string(results.join("mini/predictions.jsonl")).unwrap();
    let mut edited_rows = String::new();
    let mut edited_count = 0;
    for line in bundled.lines() {
        let mut row: serde_json::Value = serde_json::from_str(line).unwrap();
        let has_patch = row["model_patch"]
            .as_str()
            .is_some_and(|p| !p.trim().is_empty());
        if row["model_name_or_path"] == "mini-demo" && has_patch {
            row["model_patch"] = README_EDIT.into();
            if row["sample"].as_u64().unwrap_or(0) == 0 {
                edited_count += 1;
            }
        }
        edited_rows += &(row.to_string() + "\n");
    }
    let edited = work.join("readme-edits.jsonl");
    std::fs::write(&edited, edited_rows).unwrap();
    let refused = work.join("refused");
    let out = swe_eval(&[
        "submit",
        s(results),
        "-d",
        s(&dataset),
        "-p",
        s(&edited),
        "--model",
        "mini-demo",
        "-o",
        s(&refused),
    ]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("[patch]").count(), edited_count, "{err}");
    assert!(
        err.contains(
            "swe-eval-mini__calc-1 (model mini-demo, sample 0): its log ran another patch"
        ),
        "{err}"
    );
    if let Ok(preds) = std::fs::read_to_string(refused.join("all_preds.jsonl")) {
        assert!(
            !preds.contains("(edited)"),
            "no README edit packaged: {preds}"
        );
    }
    let doctored = work.join("doctored-readme");
    copy_dir(pkg, &doctored);
    let mut rows = String::new();
    for line in std::fs::read_to_string(pkg.join("all_preds.jsonl"))
        .unwrap()
        .lines()
    {
        let mut row: serde_json::Value = serde_json::from_str(line).unwrap();
        row["model_patch"] = README_EDIT.into();
        rows += &(row.to_string() + "\n");
    }
    std::fs::write(doctored.join("all_preds.jsonl"), rows).unwrap();
    for e in std::fs::read_dir(doctored.join("logs")).unwrap().flatten() {
        std::fs::write(e.path().join("patch.diff"), README_EDIT).unwrap();
    }
    let bad = swe_eval(&["submit", "--verify", s(&doctored), "-d", s(&dataset)]);
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("mismatch: logs/swe-eval-mini__calc-1/patch.diff is not the patch its test_output.txt ran: its `git status` shows calc/parser.py changed, a file the patch does not touch"),
        "{err}"
    );
}

/// Issue 34, item 2, on the real mini run: with sample 0's folder of calc-1 gone, the package
/// leaves calc-1 out (named) instead of showing sample 1's patch and logs.
fn a_sample_is_never_swapped_in_the_mini_run(results: &Path, work: &Path) {
    let copy = work.join("run-without-calc-1");
    copy_dir(results, &copy);
    std::fs::remove_dir_all(copy.join("logs/run_evaluation/mini/mini-demo/swe-eval-mini__calc-1"))
        .unwrap();
    let pkg = work.join("pkg-without-calc-1");
    let out = swe_eval(&[
        "submit",
        s(&copy),
        "-d",
        s(&copy.join("mini/dataset.jsonl")),
        "--model",
        "mini-demo",
        "-o",
        s(&pkg),
    ]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("[sample] 1 instance(s) have no sample 0 of mini-demo"),
        "{err}"
    );
    assert!(!pkg.join("logs/swe-eval-mini__calc-1").exists());
    let preds = std::fs::read_to_string(pkg.join("all_preds.jsonl")).unwrap();
    assert!(!preds.contains("swe-eval-mini__calc-1"), "{preds}");
}

#[test]
fn minimax_run_packages_as_the_official_harness_scored_it_and_verifies() {
    let shared = crate::require_shared!();
    let dataset = shared.join("partial-verified/swebench_verified_partial.jsonl");
    let run = shared.join("predictions/pydantic-deep_minimax-m2.5");
    let preds = run.join("all_preds.jsonl");
    let logs = run.join("instance_test_outputs.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let graded = dir.path().join("graded");
    let out = swe_eval(&[
        "grade",
        "-d",
        s(&dataset),
        "-p",
        s(&preds),
        "--logs",
        s(&logs),
        "-o",
        s(&graded),
    ]);
    assert!(out.status.code().is_some_and(|c| c == 0 || c == 3));
    // grade writes report.html too, with every prediction in its data.
    let page = std::fs::read_to_string(graded.join("report.html")).unwrap();
    let start = page.find("id=\"data\">").unwrap() + "id=\"data\">".len();
    let data: serde_json::Value =
        serde_json::from_str(&page[start..start + page[start..].find("</script>").unwrap()])
            .unwrap();
    assert_eq!(data["rows"].as_array().unwrap().len(), 486);

    // Three traces (one a folder), and one that names no instance.
    let trajs = dir.path().join("trajs");
    std::fs::create_dir_all(trajs.join("django__django-11099")).unwrap();
    std::fs::write(trajs.join("django__django-11099/steps.json"), b"[]").unwrap();
    std::fs::write(trajs.join("astropy__astropy-12907.traj"), b"{}").unwrap();
    std::fs::write(trajs.join("sympy__sympy-20590.md"), b"# steps").unwrap();
    std::fs::write(trajs.join("notes.txt"), b"x").unwrap();

    let pkg = dir.path().join("20260201_pydantic-deep_minimax-m2.5");
    let out = swe_eval(&[
        "submit",
        s(&graded),
        "-d",
        s(&dataset),
        "-p",
        s(&preds),
        "--logs",
        s(&logs),
        "--trajs",
        s(&trajs),
        "--name",
        "pydantic-deep + MiniMax-M2.5",
        "--report",
        "https://example.org/report",
        "--declare",
        "no-hints",
        "-o",
        s(&pkg),
    ]);
    assert_eq!(out.status.code(), Some(3), "done, with checklist warnings");
    let err = String::from_utf8_lossy(&out.stderr);
    for rule in [
        "[reasoning traces]",
        "[authors]",
        "[resolved_by_time]",
        "[checklist] not declared: \"Does not use SWE-bench test knowledge",
    ] {
        assert!(err.contains(rule), "warns {rule}: {err}");
    }
    assert!(!err.contains("[technical report]"), "a report was given");
    assert!(!err.contains("[pass@1]"), "one prediction per instance");

    // The layout the experiments repository asks for.
    for f in [
        "all_preds.jsonl",
        "metadata.yaml",
        "README.md",
        "results/results.json",
        "results/resolved_by_repo.json",
        "results/resolved_by_time.json",
        "logs/astropy__astropy-12907/patch.diff",
        "logs/astropy__astropy-12907/report.json",
        "logs/astropy__astropy-12907/test_output.txt",
        "trajs/astropy__astropy-12907.traj",
        "trajs/django__django-11099/steps.json",
    ] {
        assert!(pkg.join(f).is_file(), "{f} missing");
    }
    assert!(
        !pkg.join("trajs/notes.txt").exists(),
        "a stray trace is not copied"
    );
    let preds_lines = std::fs::read_to_string(pkg.join("all_preds.jsonl")).unwrap();
    assert_eq!(preds_lines.lines().count(), 486, "one line per prediction");

    // Graded from the package's logs, the score is the official harness's own.
    let official = json(&run.join("harness_summary_report.json"));
    let official_resolved = ids(&official["resolved_ids"]);
    let results = json(&pkg.join("results/results.json"));
    let ours = ids(&results["resolved"]);
    assert_eq!(ours.len(), 229);
    assert_eq!(ours, official_resolved);
    let by_repo = json(&pkg.join("results/resolved_by_repo.json"));
    let (mut resolved, mut total) = (0, 0);
    for t in by_repo.as_object().unwrap().values() {
        resolved += t["resolved"].as_u64().unwrap();
        total += t["total"].as_u64().unwrap();
    }
    assert_eq!((resolved, total), (229, 500));
    assert_eq!(
        results["no_generation"].as_array().unwrap().len(),
        500 - 486 + 54,
        "no prediction, or an empty patch"
    );
    let readme = std::fs::read_to_string(pkg.join("README.md")).unwrap();
    assert!(
        readme.contains("Resolved 229 instances (45.8%)"),
        "{readme}"
    );
    assert!(readme.contains("- [x] Does not use the `hints` field"));
    let meta = std::fs::read_to_string(pkg.join("metadata.yaml")).unwrap();
    assert!(
        meta.contains("  name: \"pydantic-deep + MiniMax-M2.5\"\n"),
        "{meta}"
    );
    assert!(
        meta.contains("  report: \"https://example.org/report\"\n"),
        "{meta}"
    );

    verify_detects_tampering(&pkg, &dataset, dir.path());

    // The output folder may not be an input, nor hold files already; nothing is written then.
    for (output, why) in [
        (pkg.clone(), "not empty"),
        (graded.join("pkg"), "overlaps the input"),
    ] {
        let refused = swe_eval(&[
            "submit",
            s(&graded),
            "-d",
            s(&dataset),
            "-p",
            s(&preds),
            "-o",
            s(&output),
        ]);
        // Bad usage: exit 2, as every command's output that is an input.
        assert_eq!(refused.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&refused.stderr).contains(why));
    }
    assert!(!graded.join("pkg").exists(), "nothing written");
}

/// The 399 official test outputs of the MiniMax run: each shows its own patch (never
/// `Differs`, by line wherever its diffs read whole), and the dataset's gold patch is told
/// apart from the model's wherever the two change different lines.
#[test]
fn patches_are_held_against_the_official_test_outputs() {
    use swe_eval_core::report::{check_output, diff_base, Basis, Check};
    let shared = crate::require_shared!();
    let run = shared.join("predictions/pydantic-deep_minimax-m2.5");
    let rows = |name: &str| -> Vec<serde_json::Value> {
        std::fs::read_to_string(run.join(name))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let patch_of: std::collections::HashMap<String, String> = rows("all_preds.jsonl")
        .into_iter()
        .map(|r| {
            (
                r["instance_id"].as_str().unwrap().to_string(),
                r["model_patch"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let (ds, _) = swe_eval_core::dataset::load_dataset(
        &shared.join("partial-verified/swebench_verified_partial.jsonl"),
    )
    .unwrap();
    let (mut lines, mut files, mut gold_told, mut gold_same) = (0, 0, 0, 0);
    let outputs = rows("instance_test_outputs.jsonl");
    for row in &outputs {
        let id = row["instance_id"].as_str().unwrap();
        let out = row["test_output"].as_str().unwrap();
        let inst = ds.get(id).unwrap();
        assert_eq!(diff_base(out), Some(inst.base_commit.as_str()), "{id}");
        match check_output(out, &patch_of[id]) {
            Check::Same(Basis::Lines) => lines += 1,
            Check::Same(Basis::Files) => files += 1,
            other => panic!("{id}: its own patch: {other:?}"),
        }
        match check_output(out, &inst.patch) {
            Check::Differs(_) => gold_told += 1,
            Check::Same(_) => gold_same += 1,
            Check::Unknown(why) => panic!("{id}: {why}"),
        }
    }
    eprintln!(
        "{} outputs: own patch held by line {lines}, by file {files}; gold patch told apart {gold_told}, not {gold_same}",
        outputs.len()
    );
    assert_eq!(outputs.len(), 399);
    assert!(lines >= 370, "most diffs read whole: {lines}");
    assert!(
        gold_told >= 320,
        "the gold patch is told apart from most runs: {gold_told}"
    );
}

/// The mini dataset (materialized in `dir`) and a finished run of it laid out as `swe-eval run`
/// lays it out, made without Docker: run `r`, model `m`, sample 0 the gold patch and sample 1
/// the gold patch with one added line changed; each folder holds `patch.diff`, the Debian
/// flavour's `eval.sh`, a `verdict.json` with the patch's hash, and a test output whose trace
/// shows that patch in the tree (at the base commit) and every required test passing.
fn fake_run(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    use swe_eval_core::spec::{Flavour, TestSpec};
    let bench = swe_eval_core::mini::materialize(&dir.join("mini")).unwrap();
    let (ds, _) = swe_eval_core::dataset::load_dataset(&bench.dataset).unwrap();
    let run = dir.join("run");
    for inst in &ds.instances {
        for sample in [0u32, 1] {
            let patch = sample_patch(&inst.patch, sample);
            let file = patch
                .lines()
                .find_map(|l| l.strip_prefix("+++ b/"))
                .unwrap()
                .to_string();
            let mut output = format!(
                "+ cd /testbed\n+ git status\nOn branch main\nChanges not staged for commit:\n\
                 \tmodified:   {file}\n\nno changes added to commit\n+ git show\n\
                 commit 222e9e4108d687e0c4f7f3eef84cbbbb157a5cea\nAuthor: SWE-bench <s@s>\n\
                 Date:   Thu Dec 3 14:13:52 2026 +0000\n\n    SWE-bench\n\
                 + git -c core.fileMode=false diff {}\n{patch}+ : '>>>>> Start Test Output'\n",
                inst.base_commit
            );
            for t in inst.fail_to_pass().iter().chain(inst.pass_to_pass()) {
                output += &format!("PASSED {t}\n");
            }
            output += "+ : '>>>>> End Test Output'\n";
            let folder =
                run.join("logs/run_evaluation/r/m")
                    .join(swe_eval_core::predictions::sample_name(
                        &inst.instance_id,
                        sample,
                    ));
            std::fs::create_dir_all(&folder).unwrap();
            std::fs::write(folder.join("patch.diff"), &patch).unwrap();
            std::fs::write(folder.join("test_output.txt"), output).unwrap();
            std::fs::write(
                folder.join("eval.sh"),
                TestSpec::new(inst, Flavour::Debian).unwrap().eval_script,
            )
            .unwrap();
            std::fs::write(
                folder.join("verdict.json"),
                serde_json::json!({"patch_hash": swe_eval_core::predictions::patch_hash(&patch)})
                    .to_string(),
            )
            .unwrap();
        }
    }
    (run, bench.dataset)
}

/// `swe-eval submit RUN -d DATASET EXTRA... -o OUT`.
fn submit_run(run: &Path, dataset: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["submit", s(run), "-d", s(dataset)];
    args.extend_from_slice(extra);
    args.extend(["-o", s(out)]);
    swe_eval(&args)
}

/// Sample 0 is the gold patch; sample 1 changes its first added line (same counts).
fn sample_patch(gold: &str, sample: u32) -> String {
    if sample == 0 {
        return gold.to_string();
    }
    let mut done = false;
    gold.split_inclusive('\n')
        .map(|l| {
            if !done && l.starts_with('+') && !l.starts_with("+++") {
                done = true;
                format!("{} # sample {sample}\n", l.trim_end_matches('\n'))
            } else {
                l.to_string()
            }
        })
        .collect()
}

/// A one-line README edit, the patch that did not run.
const README_EDIT: &str =
    "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-# x\n+# x (edited)\n";

/// Predictions of model `m`: every instance's sample 0 with `patch`.
fn predictions_with(ds: &Path, path: &Path, patch: impl Fn(&str) -> String) {
    let (ds, _) = swe_eval_core::dataset::load_dataset(ds).unwrap();
    let rows: String = ds
        .instances
        .iter()
        .map(|i| {
            serde_json::json!({"instance_id": i.instance_id, "model_name_or_path": "m",
                "model_patch": patch(&i.patch)})
            .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(path, rows).unwrap();
}

/// Item 1 of issue 34: a patch that did not run is never packaged or graded as if it had. Every
/// prediction replaced by a README edit, against the run's real logs: `submit` leaves each out
/// (named with file, line, instance, model, sample) and writes nothing when nothing is left,
/// whether the logs are the run's folders or its test outputs alone; `grade` grades none of
/// them from those logs; `--verify` fails a package whose patch.diff, eval.sh or test output
/// is not the one that ran.
#[test]
fn a_patch_that_did_not_run_is_never_packaged_nor_graded() {
    let d = tempfile::tempdir().unwrap();
    let (run, dataset) = fake_run(d.path());
    let edited = d.path().join("edited.jsonl");
    predictions_with(&dataset, &edited, |_| README_EDIT.to_string());
    let pkg = d.path().join("pkg");
    let out = submit_run(&run, &dataset, &pkg, &["-p", s(&edited)]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "warning: [patch] {}:1: swe-eval-mini__calc-1 (model m, sample 0): its log ran another patch: ",
            edited.display()
        )),
        "{err}"
    );
    assert_eq!(err.matches("[patch]").count(), 8, "{err}");
    assert!(err.contains("nothing to package"), "{err}");
    assert!(!pkg.exists(), "nothing written");

    // The test outputs alone (no folder, no patch.diff): each shows another file changed.
    let outputs = d.path().join("outputs.jsonl");
    let mut rows = String::new();
    for e in std::fs::read_dir(run.join("logs/run_evaluation/r/m"))
        .unwrap()
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.contains(".sample") {
            let log = std::fs::read_to_string(e.path().join("test_output.txt")).unwrap();
            rows +=
                &(serde_json::json!({"instance_id": name, "test_output": log}).to_string() + "\n");
        }
    }
    std::fs::write(&outputs, rows).unwrap();
    let out = submit_run(
        &run,
        &dataset,
        &pkg,
        &["-p", s(&edited), "--logs", s(&outputs)],
    );
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("swe-eval-mini__calc-1 (model m, sample 0): its log ran another patch: its `git status` shows calc/parser.py changed, a file the patch does not touch; not packaged"),
        "{err}"
    );
    assert!(!pkg.exists());

    // grade: none of them graded from those logs.
    let graded = d.path().join("graded");
    let out = swe_eval(&[
        "grade",
        "-d",
        s(&dataset),
        "-p",
        s(&edited),
        "--logs",
        s(&run),
        "-o",
        s(&graded),
    ]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "{}:1: swe-eval-mini__calc-1 (model m, sample 0): its log ran another patch:",
            edited.display()
        )),
        "{err}"
    );
    assert!(
        err.contains("0 resolved, 0 unresolved, 8 error(s)"),
        "{err}"
    );

    // The run's own patches package and verify; a package doctored after the fact does not.
    let out = submit_run(&run, &dataset, &pkg, &["--model", "m"]);
    assert_eq!(out.status.code(), Some(3), "checklist warnings only");
    let ok = swe_eval(&["submit", "--verify", s(&pkg), "-d", s(&dataset)]);
    let said = String::from_utf8_lossy(&ok.stdout);
    assert!(
        said.contains("every patch.diff is the patch its test_output.txt ran (8 shown line by line, 0 by file), 8 test output(s) ran on the dataset's base commit, 8 eval.sh equal the dataset's"),
        "{said}"
    );
    let doctor = |name: &str, f: &dyn Fn(&Path)| -> String {
        let copy = d.path().join(name);
        copy_dir(&pkg, &copy);
        f(&copy);
        let bad = swe_eval(&["submit", "--verify", s(&copy), "-d", s(&dataset)]);
        assert_eq!(bad.status.code(), Some(1), "{name}");
        String::from_utf8_lossy(&bad.stderr).into_owned()
    };
    let err = doctor("readme", &|p| {
        predictions_with(&dataset, &p.join("all_preds.jsonl"), |_| {
            README_EDIT.to_string()
        });
        for e in std::fs::read_dir(p.join("logs")).unwrap().flatten() {
            std::fs::write(e.path().join("patch.diff"), README_EDIT).unwrap();
        }
    });
    assert!(
        err.contains("mismatch: logs/swe-eval-mini__calc-1/patch.diff is not the patch its test_output.txt ran: its `git status` shows calc/parser.py changed, a file the patch does not touch"),
        "{err}"
    );
    assert_eq!(
        err.matches("is not the patch its test_output.txt ran")
            .count(),
        8,
        "{err}"
    );
    // Sample 1's patch in sample 0's package: the same file, other lines.
    let err = doctor("swapped", &|p| {
        predictions_with(&dataset, &p.join("all_preds.jsonl"), |g| sample_patch(g, 1));
        let (ds, _) = swe_eval_core::dataset::load_dataset(&dataset).unwrap();
        for i in &ds.instances {
            std::fs::write(
                p.join("logs").join(&i.instance_id).join("patch.diff"),
                sample_patch(&i.patch, 1),
            )
            .unwrap();
        }
    });
    assert!(err.contains("mismatch: logs/swe-eval-mini__calc-1/patch.diff is not the patch its test_output.txt ran: its `git diff` of calc/parser.py is not the patch's change"), "{err}");
    let err = doctor("script", &|p| {
        let f = p.join("logs/swe-eval-mini__calc-2/eval.sh");
        let script = std::fs::read_to_string(&f).unwrap();
        std::fs::write(&f, script.replace("pytest -rA", "pytest -rA -k nothing")).unwrap();
    });
    assert!(err.contains("mismatch: logs/swe-eval-mini__calc-2/eval.sh: not an eval script rendered for swe-eval-mini__calc-2 from its dataset row (the official flavour's, the Debian flavour's, or the row's own): line "), "{err}");
    // A test output that ran on another commit (calc-2's base commit in calc-1's trace).
    let err = doctor("other-commit", &|p| {
        let (ds, _) = swe_eval_core::dataset::load_dataset(&dataset).unwrap();
        let base = |id: &str| ds.get(id).unwrap().base_commit.clone();
        let log = p.join("logs/swe-eval-mini__calc-1/test_output.txt");
        let text = std::fs::read_to_string(&log).unwrap();
        let moved = text.replace(
            &base("swe-eval-mini__calc-1"),
            &base("swe-eval-mini__calc-2"),
        );
        std::fs::write(&log, moved).unwrap();
    });
    assert!(
        err.contains(
            "mismatch: logs/swe-eval-mini__calc-1/test_output.txt: its tests ran on commit "
        ),
        "{err}"
    );
}

/// Item 2 of issue 34: `submit` packages exactly the sample it says. With sample 0's folder of
/// one instance gone, that instance is left out and named, never given sample 1's patch and
/// logs; `--sample 1` packages sample 1 of every instance, each from its own folder.
#[test]
fn a_missing_sample_is_left_out_never_swapped() {
    let d = tempfile::tempdir().unwrap();
    let (run, dataset) = fake_run(d.path());
    std::fs::remove_dir_all(run.join("logs/run_evaluation/r/m/swe-eval-mini__calc-1")).unwrap();
    let pkg = d.path().join("pkg");
    let out = submit_run(&run, &dataset, &pkg, &[]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("[sample] 1 instance(s) have no sample 0 of m and are not packaged (no other sample is put in its place; --sample chooses another for every instance): swe-eval-mini__calc-1 (has sample 1)"),
        "{err}"
    );
    assert!(
        !pkg.join("logs/swe-eval-mini__calc-1").exists(),
        "no other sample in its place"
    );
    let preds = std::fs::read_to_string(pkg.join("all_preds.jsonl")).unwrap();
    assert_eq!(preds.lines().count(), 7);
    assert!(!preds.contains("# sample 1"), "{preds}");

    let pkg1 = d.path().join("pkg1");
    let out = submit_run(&run, &dataset, &pkg1, &["--sample", "1"]);
    assert_eq!(out.status.code(), Some(3));
    let patch =
        std::fs::read_to_string(pkg1.join("logs/swe-eval-mini__calc-1/patch.diff")).unwrap();
    assert!(patch.contains("# sample 1"), "{patch}");
    let ok = swe_eval(&["submit", "--verify", s(&pkg1), "-d", s(&dataset)]);
    assert_eq!(
        ok.status.code(),
        Some(3),
        "verifies; not complete without traces"
    );
}

/// Item 3 of issue 34: a `submit` that fails part-way (the disk fills while the package is
/// written) leaves no output folder and no partial one; with room again it completes.
#[test]
fn a_failed_submit_leaves_no_output() {
    let Some(fs) = crate::faults_disk::SmallFs::mount(512) else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let (run, dataset) = fake_run(d.path());
    let pkg = fs.path().join("sub/pkg");
    let filler = fs.fill_leaving(6 * 4096);
    let out = submit_run(&run, &dataset, &pkg, &["--model", "m"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr).to_lowercase();
    assert!(err.contains("no space left"), "{err}");
    let left: Vec<String> = std::fs::read_dir(fs.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".filler")
        .collect();
    assert!(left.is_empty(), "a failed submit leaves nothing: {left:?}");
    std::fs::remove_file(filler).unwrap();
    let out = submit_run(&run, &dataset, &pkg, &["--model", "m"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(pkg.join("results/results.json").is_file());
}

/// The 399 eval scripts the official harness wrote for the MiniMax run are, byte for byte, the
/// ones `--verify` renders for their dataset rows (the official flavour): a package holding
/// them as `logs/<id>/eval.sh` verifies them.
#[test]
fn the_official_eval_scripts_are_the_ones_verify_renders() {
    use swe_eval_core::spec::{Flavour, TestSpec};
    let shared = crate::require_shared!();
    let (ds, _) = swe_eval_core::dataset::load_dataset(
        &shared.join("partial-verified/swebench_verified_partial.jsonl"),
    )
    .unwrap();
    let scripts = std::fs::read_to_string(
        shared.join("predictions/pydantic-deep_minimax-m2.5/instance_eval_scripts.jsonl"),
    )
    .unwrap();
    let mut n = 0;
    for line in scripts.lines() {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        let id = row["instance_id"].as_str().unwrap();
        let rendered = TestSpec::new(ds.get(id).unwrap(), Flavour::Official)
            .unwrap()
            .eval_script;
        assert_eq!(rendered, row["eval_sh"].as_str().unwrap(), "{id}");
        n += 1;
    }
    assert_eq!(n, 399);
}

/// A log folder holding only an empty patch's verdict (no test output) still says what ran:
/// a non-empty patch given for it is neither packaged nor graded from it.
#[test]
fn a_patch_given_for_an_empty_patchs_verdict_is_neither_packaged_nor_graded() {
    let d = tempfile::tempdir().unwrap();
    let (run, dataset) = fake_run(d.path());
    let folder = run.join("logs/run_evaluation/r/m/swe-eval-mini__calc-1");
    std::fs::remove_dir_all(&folder).unwrap();
    std::fs::create_dir_all(&folder).unwrap();
    let empty = swe_eval_core::predictions::patch_hash("");
    std::fs::write(
        folder.join("verdict.json"),
        serde_json::json!({"instance_id": "swe-eval-mini__calc-1", "model": "m", "sample": 0,
            "patch_hash": empty, "category": "empty_patch", "resolved": false})
        .to_string(),
    )
    .unwrap();
    let edited = d.path().join("edited.jsonl");
    predictions_with(&dataset, &edited, |gold| {
        if gold.contains("calc/parser.py") {
            README_EDIT.to_string()
        } else {
            gold.to_string()
        }
    });
    let pkg = d.path().join("pkg");
    let out = submit_run(&run, &dataset, &pkg, &["-p", s(&edited)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("swe-eval-mini__calc-1 (model m, sample 0): its log ran another patch: ")
            && err.contains("the run's patch was empty); not packaged"),
        "{err}"
    );
    let preds = std::fs::read_to_string(pkg.join("all_preds.jsonl")).unwrap();
    assert!(!preds.contains("swe-eval-mini__calc-1\""), "{preds}");
    assert!(!pkg.join("logs/swe-eval-mini__calc-1").exists());

    let graded = d.path().join("graded");
    let out = swe_eval(&[
        "grade",
        "-d",
        s(&dataset),
        "-p",
        s(&edited),
        "--logs",
        s(&run),
        "-o",
        s(&graded),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("swe-eval-mini__calc-1 (model m, sample 0): its log ran another patch:")
            && err.contains("the run's patch was empty"),
        "{err}"
    );
}
