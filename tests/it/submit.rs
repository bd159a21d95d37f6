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
