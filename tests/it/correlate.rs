//! `swe-eval correlate`: every statistic against SciPy / scikit-learn values kept in
//! tests/fixtures/correlate (made by scripts/stats_fixtures.py), the input formats, the real
//! data the issue names, and the HTML report in a real headless browser.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use swe_eval_core::study::{self, Observation, Options, Outcome};

fn fixture(name: &str) -> Value {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/correlate")
        .join(name);
    serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap()
}

fn f64s(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn close(got: Option<f64>, want: &Value, tol: f64, what: &str) {
    match (got, want.as_f64()) {
        (Some(g), Some(w)) => assert!((g - w).abs() <= tol, "{what}: got {g}, SciPy/sklearn {w}"),
        (None, None) => {}
        (g, _) => panic!("{what}: got {g:?}, SciPy/sklearn {want}"),
    }
}

const CASES: [&str; 3] = [
    "small_ties.json",
    "continuous.json",
    "heavy_ties_format_errors.json",
];

#[test]
fn every_statistic_matches_scipy_and_scikit_learn() {
    for name in CASES {
        let fx = fixture(name);
        let x = f64s(&fx["scores"]);
        let y: Vec<bool> = fx["resolved"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_bool().unwrap())
            .collect();
        let yf: Vec<f64> = y.iter().map(|&r| r as u8 as f64).collect();
        let e = &fx["expected"];
        let t = 1e-12;
        close(
            study::auroc(&x, &y),
            &e["auroc"],
            t,
            &format!("{name} auroc (roc_auc_score)"),
        );
        close(
            study::point_biserial(&x, &y),
            &e["point_biserial"],
            t,
            &format!("{name} pointbiserialr"),
        );
        close(
            study::spearman(&x, &y),
            &e["spearman"],
            t,
            &format!("{name} spearmanr"),
        );
        close(
            study::kendall_tau_b(&x, &yf),
            &e["kendall_tau_b"],
            t,
            &format!("{name} kendalltau"),
        );
        let split = |want: bool| -> Vec<f64> {
            x.iter()
                .zip(&y)
                .filter(|(_, &r)| r == want)
                .map(|(&s, _)| s)
                .collect()
        };
        close(
            study::mean(&split(true)),
            &e["mean_resolved"],
            t,
            "mean resolved",
        );
        close(
            study::mean(&split(false)),
            &e["mean_unresolved"],
            t,
            "mean unresolved",
        );
        close(
            study::median(&split(true)),
            &e["median_resolved"],
            t,
            "median resolved",
        );
        close(
            study::median(&split(false)),
            &e["median_unresolved"],
            t,
            "median unresolved",
        );
        for pr in e["precision_recall"].as_array().unwrap() {
            let th = pr["threshold"].as_f64().unwrap();
            let got = study::precision_recall(&x, &y, th);
            close(
                got.precision,
                &pr["precision"],
                t,
                &format!("{name} precision_score @ {th}"),
            );
            close(
                got.recall,
                &pr["recall"],
                t,
                &format!("{name} recall_score @ {th}"),
            );
        }
        // calibration_curve(strategy="uniform") sees only the in-range scores; our extra bin
        // for scores below 0 is checked apart.
        let cal = study::calibration(&x, &y);
        let inr: Vec<_> = cal.iter().filter(|b| b.lo >= 0.0).collect();
        let c = &e["calibration"];
        assert_eq!(
            inr.len(),
            c["n"].as_array().unwrap().len(),
            "{name}: non-empty bins"
        );
        for (i, b) in inr.iter().enumerate() {
            let bin = c["bins_nonempty"][i].as_u64().unwrap() as f64;
            assert!(
                (b.lo - bin * 0.1).abs() < 1e-9,
                "{name}: bin {i} starts at {}",
                b.lo
            );
            assert_eq!(
                b.n as u64,
                c["n"][i].as_u64().unwrap(),
                "{name}: bin {i} count"
            );
            close(
                Some(b.resolve_rate),
                &c["resolve_rate"][i],
                t,
                "calibration prob_true",
            );
            close(
                Some(b.mean_score),
                &c["mean_score"][i],
                1e-9,
                "calibration prob_pred",
            );
        }
        let below: Vec<_> = cal.iter().filter(|b| b.hi <= 0.0).collect();
        let n_neg = x.iter().filter(|&&s| s < 0.0).count();
        assert_eq!(
            below.iter().map(|b| b.n).sum::<usize>(),
            n_neg,
            "{name}: the < 0 bin"
        );
        let roc = study::roc_curve(&x, &y);
        let (fpr, tpr, thr) = (
            f64s(&e["roc"]["fpr"]),
            f64s(&e["roc"]["tpr"]),
            f64s(&e["roc"]["thresholds"]),
        );
        assert_eq!(roc.len(), fpr.len(), "{name}: roc_curve points");
        for (i, p) in roc.iter().enumerate() {
            assert!(
                (p.fpr - fpr[i]).abs() < t && (p.tpr - tpr[i]).abs() < t && p.threshold == thr[i],
                "{name}: roc point {i}"
            );
        }
        // The bootstrap uses its own generator, so it is compared with NumPy's percentile
        // bootstrap (4,000 resamples) within sampling error, not exactly.
        let ci = study::bootstrap_auroc_ci(&[&x], &y, 4000, 11)[0].unwrap();
        let want = f64s(&e["auroc_ci95_numpy_bootstrap"]);
        let tol = if x.len() < 50 { 0.06 } else { 0.02 };
        for k in 0..2 {
            assert!(
                (ci[k] - want[k]).abs() < tol,
                "{name}: CI bound {k}: {} vs NumPy {}",
                ci[k],
                want[k]
            );
        }
    }
}

#[test]
fn best_of_n_matches_the_python_reference() {
    let fx = fixture("best_of_n.json");
    let rows = fx["rows"].as_array().unwrap();
    let samples: Vec<study::Sample<'_>> = rows
        .iter()
        .map(|r| study::Sample {
            instance_id: r["instance_id"].as_str().unwrap(),
            sample: r["sample"].as_u64().unwrap() as u32,
            score: r["score"].as_f64().unwrap(),
            resolved: r["resolved"].as_bool().unwrap(),
        })
        .collect();
    let got = study::best_of_n(&samples);
    let want = fx["expected"].as_array().unwrap();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert_eq!(
            g.instances as u64,
            w["instances"].as_u64().unwrap(),
            "n={}",
            g.n
        );
        for (name, v) in [
            ("max_score", g.max_score),
            ("max_score_ties_random", g.max_score_ties_random),
            ("random", g.random),
            ("first", g.first),
            ("oracle", g.oracle),
        ] {
            close(Some(v), &w[name], 1e-12, &format!("n={} {name}", g.n));
        }
    }
}

fn run_bin(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(crate::common::bin())
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn summary_of(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn input_formats_and_the_join() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let rewards_csv = write(
        d,
        "r.csv",
        "instance_id,model_name_or_path,sample,similarity,reward,format\n\
         a__a-1,m,0,0.9,0.9,ok\na__a-2,m,0,0.1,0.1,ok\nb__b-3,m,0,0.0,-1,empty\nz__z-9,m,0,0.5,0.5,ok\n",
    );
    // An official summary: 1 resolved, 2 completed unresolved, 3 an empty patch, y absent.
    let summary = write(
        d,
        "s.json",
        r#"{"resolved_ids":["a__a-1"],"completed_ids":["a__a-1","a__a-2"],"empty_patch_ids":["b__b-3"],
           "error_ids":[],"submitted_ids":["a__a-1","a__a-2","b__b-3","y__y-4"]}"#,
    );
    let mut problems = Vec::new();
    let r = study::load_rewards_files(std::slice::from_ref(&rewards_csv), &mut problems).unwrap();
    let o = study::load_outcome_files(std::slice::from_ref(&summary), &mut problems).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    let joined = study::join(r, o, None, None).unwrap();
    assert_eq!(
        joined.len(),
        1,
        "the summary names no model: it is the rewards' model m"
    );
    let j = &joined[0];
    assert_eq!(j.model.as_deref(), Some("m"));
    assert_eq!(j.observations.len(), 3);
    assert_eq!(j.unmatched_rewards, vec![("z__z-9".to_string(), 0)]);
    assert_eq!(
        j.unmatched_outcomes,
        vec![("y__y-4".to_string(), 0)],
        "submitted, never completed"
    );
    assert_eq!(
        j.observations[2].outcome,
        Outcome::NoVerdict("empty_patch".into())
    );
    assert_eq!(j.observations[2].reward, -1.0);
    assert_eq!(
        j.observations[0].repo, "a/a",
        "repo from the id without a dataset"
    );

    // The same outcomes as JSON Lines (with a bad line), as a run folder, and as report.json files.
    let jsonl = write(
        d,
        "o.jsonl",
        "{\"instance_id\":\"a__a-1\",\"sample\":0,\"resolved\":true,\"category\":\"resolved\"}\n\
         {\"instance_id\":\"a__a-2\",\"resolved\":false,\"category\":\"unresolved\"}\n\
         {\"instance_id\":\"b__b-3\",\"resolved\":null,\"category\":\"empty_patch\"}\n\
         {\"instance_id\":\"c__c-5\",\"resolved\":\"maybe\"}\n",
    );
    let l = study::load_outcomes(&jsonl).unwrap();
    assert_eq!(l.items.len(), 3);
    assert_eq!(l.problems.len(), 1);
    assert_eq!(l.problems[0].location.line, Some(4), "{}", l.problems[0]);
    let run_dir = d.join("run");
    std::fs::create_dir_all(&run_dir).unwrap();
    std::fs::copy(&jsonl, run_dir.join("predictions.jsonl")).unwrap();
    assert_eq!(
        study::load_outcomes(&run_dir).unwrap().items,
        l.items,
        "a run folder's JSONL"
    );
    let rep_dir = d.join("official");
    for (id, res) in [("a__a-1", true), ("a__a-2", false)] {
        let p = rep_dir.join("logs/run_evaluation/run1/model").join(id);
        std::fs::create_dir_all(&p).unwrap();
        write(
            &p,
            "report.json",
            &format!(r#"{{"{id}": {{"resolved": {res}, "patch_exists": true}}}}"#),
        );
    }
    let reps = study::load_outcomes(&rep_dir).unwrap();
    assert_eq!(reps.items.len(), 2);
    assert!(reps
        .items
        .iter()
        .any(|o| o.instance_id == "a__a-1" && o.outcome == Outcome::Resolved));

    // per_run_results.json: runs are samples in file order; several rewards files likewise.
    let per_run = write(
        d,
        "per_run.json",
        r#"{"r1": {"a__a-1": 1, "a__a-2": 0}, "r2": {"a__a-1": 0, "a__a-2": 1}}"#,
    );
    let o = study::load_outcome_files(&[per_run], &mut problems).unwrap();
    let r0 = write(d, "r0.jsonl", "{\"instance_id\":\"a__a-1\",\"sample\":0,\"similarity\":0.2,\"reward\":0.2}\n{\"instance_id\":\"a__a-2\",\"sample\":0,\"similarity\":0.3,\"reward\":0.3}\n");
    let r1 = write(d, "r1.jsonl", "{\"instance_id\":\"a__a-1\",\"sample\":0,\"similarity\":0.8,\"reward\":0.8}\n{\"instance_id\":\"a__a-2\",\"sample\":0,\"similarity\":0.1,\"reward\":0.1}\n");
    let r = study::load_rewards_files(&[r0, r1], &mut problems).unwrap();
    let j = study::join(r, o, None, None).unwrap().remove(0);
    assert!(j.unmatched_rewards.is_empty() && j.unmatched_outcomes.is_empty());
    let s = study::analyze(
        &j,
        &Options {
            bootstrap: 50,
            ..Options::default()
        },
    );
    assert_eq!(s.max_samples, 2);
    let b2 = &s.reward.best_of_n[1];
    // a-1: samples (0.2, resolved) (0.8, not): the max picks the unresolved one; a-2: (0.3, not), (0.1, resolved).
    assert_eq!(
        (b2.max_score, b2.random, b2.first, b2.oracle),
        (0.0, 0.5, 0.5, 1.0)
    );

    // The binary end to end on the CSV + summary, reporting the unmatched rows.
    let out = d.join("out");
    let (ok, stdout, stderr) = correlate(&rewards_csv, &summary, &out, &["--bootstrap", "100"]);
    // Unmatched rows are an input problem: the study is written, the exit code is 3 (not
    // success), and the headline says so first.
    assert!(!ok, "unmatched rows must not exit 0: {stderr}");
    assert!(
        stderr.contains("1 rewards without an outcome: z__z-9#0"),
        "{stderr}"
    );
    assert!(stdout.contains("AUROC"), "{stdout}");
    assert!(
        stdout.starts_with("Unmatched: 1 rewards without an outcome and 1 outcomes"),
        "{stdout}"
    );
    let sj = summary_of(&out);
    assert_eq!(
        (
            sj["n"].as_u64(),
            sj["n_resolved"].as_u64(),
            sj["n_unmatched"].as_u64()
        ),
        (Some(3), Some(1), Some(2))
    );
    assert_eq!(sj["n_no_verdict"].as_u64(), Some(1));
    assert_eq!(sj["unmatched_rewards"], serde_json::json!(["z__z-9#0"]));
    assert_eq!(sj["unmatched_outcomes"], serde_json::json!(["y__y-4#0"]));
    assert_eq!(sj["similarity"]["auroc"].as_f64(), Some(1.0));
    for key in [
        "auroc",
        "auroc_ci95",
        "point_biserial",
        "spearman",
        "kendall_tau_b",
        "per_repo",
        "per_difficulty",
        "calibration",
        "best_of_n",
    ] {
        assert!(
            sj["reward"].get(key).is_some(),
            "reward.{key} in summary.json"
        );
    }
    let csv = std::fs::read_to_string(out.join("per_prediction.csv")).unwrap();
    assert_eq!(csv.lines().count(), 4);
    assert!(
        csv.starts_with("instance_id,sample,repo,difficulty,similarity,reward,format,resolved,verdict,format_version\n"),
        "{csv}"
    );
    let version = swe_eval_core::wire::STUDY_ROWS_VERSION;
    assert!(
        csv.lines()
            .nth(3)
            .unwrap()
            .ends_with(&format!("false,empty_patch,{version}")),
        "{csv}"
    );
}

/// Observations made up from a fixture, with repos, difficulties and 3 samples per instance.
fn synthetic() -> Vec<Observation> {
    let fx = fixture("heavy_ties_format_errors.json");
    let x = f64s(&fx["scores"]);
    let y = fx["resolved"].as_array().unwrap();
    let diffs = ["<15 min fix", "15 min - 1 hour", "1-4 hours"];
    x.iter()
        .zip(y)
        .enumerate()
        .map(|(i, (&s, r))| Observation {
            instance_id: format!("org{}__repo{}-{}", (i / 3) % 5, (i / 3) % 5, i / 3),
            sample: (i % 3) as u32,
            repo: format!("org{}/repo{}", (i / 3) % 5, (i / 3) % 5),
            difficulty: Some(diffs[i % 3].to_string()),
            similarity: s.max(0.0),
            reward: s,
            format: Some(if s < 0.0 { "unparsable" } else { "ok" }.into()),
            outcome: Outcome::of_resolved(r.as_bool().unwrap()),
        })
        .collect()
}

/// The study of [`synthetic`], written to a temporary folder.
fn synthetic_study(bootstrap: usize) -> (tempfile::TempDir, study::Summary, study::Written) {
    let obs = synthetic();
    let joined = study::Joined {
        observations: obs.clone(),
        ..Default::default()
    };
    let s = study::analyze(
        &joined,
        &Options {
            bootstrap,
            ..Options::default()
        },
    );
    let tmp = tempfile::tempdir().unwrap();
    let w = study::write_study(tmp.path(), &s, &obs, &Default::default()).unwrap();
    (tmp, s, w)
}

/// The Markdown report as a person reads it, on the fixed synthetic study: any change to its
/// wording, tables or figures shows up as a snapshot diff to review
/// (`INSTA_UPDATE=always cargo test --test it correlate::report_md` accepts one).
#[test]
fn report_md_reads_as_reviewed() {
    let (tmp, _, _) = synthetic_study(200);
    let md = std::fs::read_to_string(tmp.path().join("report.md")).unwrap();
    insta::assert_snapshot!("study_report_md", md);
}

#[test]
fn plots_rasterize_with_every_label_and_the_report_embeds_them() {
    let (tmp, s, w) = synthetic_study(200);
    assert_eq!(s.max_samples, 3);
    assert!(
        w.png_problems.is_empty(),
        "missing text or failed PNG: {:?}",
        w.png_problems
    );
    for stem in [
        "roc",
        "distribution_similarity",
        "distribution_reward",
        "calibration",
        "best_of_n",
    ] {
        let png = tmp.path().join(format!("{stem}.png"));
        assert!(crate::common::png_colours(&png) > 5, "{stem}.png is drawn");
        let svg = std::fs::read_to_string(tmp.path().join(format!("{stem}.svg"))).unwrap();
        assert!(
            svg.matches("<text").count() >= 8,
            "{stem}.svg has its labels"
        );
    }
    let html = std::fs::read_to_string(tmp.path().join("report.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 5, "all plots inline");
    assert!(html.contains(&s.headline.replace('&', "&amp;")));
    let md = std::fs::read_to_string(tmp.path().join("report.md")).unwrap();
    assert!(md.contains("![ROC curve](roc.png)") && md.contains("## Per repository"));
}

/// The HTML report as a person sees it: Debian's chromium takes a screenshot, which must be
/// a real picture (not empty, not one colour).
#[test]
fn html_report_renders_in_headless_chromium() {
    let Some(chromium) = crate::common::chromium() else {
        return;
    };
    let (tmp, _, _) = synthetic_study(100);
    let shot = tmp.path().join("shot.png");
    let profile = tmp.path().join("profile");
    let status = crate::common::headless_chromium(&chromium, &profile)
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1280,2000")
        .arg(format!(
            "file://{}",
            tmp.path().join("report.html").display()
        ))
        .output()
        .unwrap();
    assert!(
        shot.is_file(),
        "no screenshot: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    assert!(
        std::fs::metadata(&shot).unwrap().len() > 10_000,
        "screenshot is not empty"
    );
    assert!(
        crate::common::png_colours(&shot) > 20,
        "screenshot is not a single colour"
    );
    if let Some(keep) = std::env::var_os("SWE_EVAL_KEEP_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
}

/// Rewards by `swe-eval reward` into `out`; the test fails when the command fails (there is no
/// stored fallback: a broken reward command must turn these tests red).
fn reward_cmd(dataset: &Path, preds: &Path, out: &Path) -> PathBuf {
    let (ok, _, stderr) = run_bin(&[
        "reward",
        "--dataset",
        dataset.to_str().unwrap(),
        "--predictions",
        preds.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(ok, "`swe-eval reward` failed: {}", stderr.trim());
    assert!(
        out.is_file(),
        "`swe-eval reward` wrote no {}",
        out.display()
    );
    out.to_path_buf()
}

#[test]
fn pydantic_deep_similarity_auroc_is_0_7704() {
    let shared = crate::require_shared!();
    let preds = shared.join("predictions/pydantic-deep_minimax-m2.5");
    let dataset = shared.join("partial-verified/swebench_verified_partial.jsonl");
    let tmp = tempfile::tempdir().unwrap();
    // End to end: reward, then correlate.
    let rewards = reward_cmd(
        &dataset,
        &preds.join("all_preds.jsonl"),
        &tmp.path().join("r.jsonl"),
    );
    let out = tmp.path().join("out");
    let (ok, _, stderr) = run_bin(&[
        "correlate",
        "--rewards",
        rewards.to_str().unwrap(),
        "--results",
        preds.join("harness_summary_report.json").to_str().unwrap(),
        "--dataset",
        dataset.to_str().unwrap(),
        "--predictions",
        preds.join("all_preds.jsonl").to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    let s = summary_of(&out);
    assert_eq!(
        s["format_version"],
        swe_eval_core::wire::STUDY_SUMMARY_VERSION
    );
    assert_eq!(s["n"].as_u64(), Some(486), "all submitted predictions");
    assert_eq!(s["n_resolved"].as_u64(), Some(229));
    assert_eq!(
        s["n_no_verdict"].as_u64(),
        Some(33 + 54),
        "errors and empty patches"
    );
    assert_eq!(s["n_unmatched"].as_u64(), Some(0));
    let auroc = s["similarity"]["auroc"].as_f64().unwrap();
    assert!((auroc - 0.7704).abs() < 5e-5, "similarity AUROC {auroc}");
    assert_eq!(
        s["similarity"]["per_difficulty"].as_object().unwrap().len(),
        4,
        "Verified's difficulty buckets"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("diff --git"), "blind spots show patches");
}

/// Seven runs of mini-swe-agent on the same 100 tasks are seven samples per instance.
#[test]
fn mini_swe_agent_best_of_seven() {
    let shared = crate::require_shared!();
    let dir = shared.join("predictions/mini-swe-agent_claude-sonnet-4.5");
    let dataset = shared.join("partial-verified/swebench_verified_partial.jsonl");
    let tmp = tempfile::tempdir().unwrap();
    let runs = [
        "full_i0_run1",
        "full_i0_run2",
        "full_i0_run3",
        "full_i0_run4",
        "full_i0_run5",
        "full_i1c",
        "full_i1d",
    ];
    let mut args: Vec<String> = vec!["correlate".into()];
    for run in runs {
        let preds = dir.join(run).join("preds.json");
        let r = reward_cmd(&dataset, &preds, &tmp.path().join(format!("{run}.jsonl")));
        args.extend(["--rewards".into(), r.display().to_string()]);
        args.extend(["--predictions".into(), preds.display().to_string()]);
    }
    let out = tmp.path().join("out");
    args.extend([
        "--results".into(),
        dir.join("per_run_results.json").display().to_string(),
        "--dataset".into(),
        dataset.display().to_string(),
        "--output".into(),
        out.display().to_string(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ok, stdout, stderr) = run_bin(&args);
    assert!(ok, "{stderr}");
    let s = summary_of(&out);
    assert_eq!(
        (s["n"].as_u64(), s["max_samples"].as_u64()),
        (Some(700), Some(7))
    );
    assert_eq!(s["n_unmatched"].as_u64(), Some(0));
    assert_eq!(
        s["n_no_verdict"].as_u64(),
        Some(4),
        "tasks missing from a run (no valid patch)"
    );
    let b = s["reward"]["best_of_n"].as_array().unwrap();
    assert_eq!(b.len(), 7);
    let get = |n: usize, k: &str| b[n - 1][k].as_f64().unwrap();
    // The source's own summary.json: 529 of 700 resolved over the seven runs; run 1 resolves
    // 79; over the five i0 runs 16 tasks are never resolved (pass@5 = 84%).
    assert!((get(7, "random") - 529.0 / 700.0).abs() < 1e-12);
    assert_eq!(get(1, "first"), 0.79);
    assert_eq!(get(7, "first"), 0.79);
    assert!((get(5, "oracle") - 0.84).abs() < 1e-12);
    // Picking by reward depends on the reward: these are the figures of the rewards
    // `swe-eval reward` computes here, whose similarities equal those of the Python oracle
    // (scripts/reward_oracle.py unidiff) on all 700 predictions (checked by hand). A reward that
    // said nothing (the same score everywhere) would pick the first sample: max_score 0.79.
    assert_eq!(get(2, "max_score"), 0.78);
    assert_eq!(get(7, "max_score"), 0.8);
    assert!((get(7, "max_score_ties_random") - 0.8085714285714286).abs() < 1e-12);
    for n in 1..=7 {
        assert!(get(n, "random") <= get(n, "oracle") && get(n, "max_score") <= get(n, "oracle"));
        assert_eq!(b[n - 1]["instances"].as_u64(), Some(100));
    }
    eprintln!("{stdout}");
}

/// swe-eval's own rewards and per-prediction rows carry `format_version`; the study reads
/// them, reads rows without it (older files) as version 1, and refuses a newer version with
/// the file, line and field named while keeping the other rows.
#[test]
fn format_versions_of_the_inputs_are_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let v = swe_eval_core::wire::REWARDS_VERSION;
    let rewards = write(
        d,
        "r.jsonl",
        &format!(
            "{{\"instance_id\":\"a__a-1\",\"similarity\":0.5,\"reward\":0.5,\"format_version\":{v}}}\n\
             {{\"instance_id\":\"a__a-2\",\"similarity\":0.25,\"reward\":0.25}}\n\
             {{\"instance_id\":\"a__a-3\",\"similarity\":0.5,\"reward\":0.5,\"format_version\":{}}}\n",
            v + 1
        ),
    );
    let loaded = study::load_rewards(&rewards).unwrap();
    let ids: Vec<&str> = loaded
        .items
        .iter()
        .map(|r| r.instance_id.as_str())
        .collect();
    assert_eq!(ids, ["a__a-1", "a__a-2"]);
    assert_eq!(loaded.problems.len(), 1, "{:?}", loaded.problems);
    let p = &loaded.problems[0];
    assert_eq!(
        (p.location.line, p.location.field.as_deref()),
        (Some(3), Some("format_version"))
    );
    assert!(p.message.contains("newer swe-eval"), "{}", p.message);

    let v = swe_eval_core::wire::VERDICT_VERSION;
    let rows = write(
        d,
        "run.predictions.jsonl",
        &format!(
            "{{\"instance_id\":\"a__a-1\",\"resolved\":true,\"category\":\"resolved\",\"format_version\":{v}}}\n\
             {{\"instance_id\":\"a__a-2\",\"resolved\":false,\"category\":\"unresolved\",\"format_version\":{}}}\n",
            v + 1
        ),
    );
    let loaded = study::load_outcomes(&rows).unwrap();
    assert_eq!(loaded.items.len(), 1);
    assert_eq!(loaded.problems.len(), 1, "{:?}", loaded.problems);
    assert_eq!(
        loaded.problems[0].location.field.as_deref(),
        Some("format_version")
    );
    // `grade` rows: version 1 said `error` with reason `infra` for a prediction without a log,
    // version 2 says `infra_error`; both read as `infra_error`, a newer version is refused.
    let v = swe_eval_core::wire::GRADE_ROWS_VERSION;
    assert_eq!(v, 2);
    let grade_row = |id: &str, category: &str, reason: &str, version: Option<u32>| {
        let mut row = json!({"instance_id": id, "resolved": false, "category": category,
            "official_category": category, "strict_category": category, "error_reason": reason});
        if let Some(version) = version {
            row["format_version"] = json!(version);
        }
        row.to_string()
    };
    let rows = write(
        d,
        "results.jsonl",
        &[
            grade_row("a__a-1", "error", "infra", None),
            grade_row("a__a-2", "error", "infra", Some(1)),
            grade_row("a__a-3", "infra_error", "infra", Some(2)),
            grade_row("a__a-4", "error", "timeout", Some(1)),
            grade_row("a__a-5", "error", "timeout", Some(v + 1)),
        ]
        .join("\n"),
    );
    let loaded = study::load_outcomes(&rows).unwrap();
    let got: Vec<(&str, &str)> = loaded
        .items
        .iter()
        .map(|r| (r.instance_id.as_str(), r.outcome.label()))
        .collect();
    assert_eq!(
        got,
        [
            ("a__a-1", "infra_error"),
            ("a__a-2", "infra_error"),
            ("a__a-3", "infra_error"),
            ("a__a-4", "error")
        ]
    );
    assert_eq!(loaded.problems.len(), 1, "{:?}", loaded.problems);
    assert_eq!(loaded.problems[0].location.line, Some(5));
}

/// `swe-eval correlate --rewards R --results O -o OUT` and `extra`.
fn correlate(
    rewards: &Path,
    outcomes: &Path,
    out: &Path,
    extra: &[&str],
) -> (bool, String, String) {
    let mut args = vec![
        "correlate",
        "--rewards",
        rewards.to_str().unwrap(),
        "--results",
        outcomes.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run_bin(&args)
}

/// Two joined predictions, or scores all equal, are stated as such: no "tracks correctness
/// strongly" on two rows, no "CI 0.500-0.500" on scores that rank nothing; the headline,
/// summary.json and report.md say the same.
#[test]
fn small_samples_and_ties_are_stated_not_read() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let rewards = write(
        d,
        "r.jsonl",
        "{\"instance_id\":\"a__a-1\",\"similarity\":0.9,\"reward\":0.9}\n\
         {\"instance_id\":\"a__a-2\",\"similarity\":0.1,\"reward\":0.1}\n",
    );
    let outcomes = write(
        d,
        "o.jsonl",
        "{\"instance_id\":\"a__a-1\",\"resolved\":true}\n\
         {\"instance_id\":\"a__a-2\",\"resolved\":false}\n",
    );
    let out = d.join("two");
    let (ok, stdout, stderr) = correlate(&rewards, &outcomes, &out, &[]);
    assert!(ok, "{stderr}");
    let first = stdout.lines().next().unwrap();
    assert!(
        first.starts_with(
            "Too few predictions to tell whether resemblance tracks correctness: 2 joined \
             (1 resolved, 1 not)"
        ),
        "{first}"
    );
    assert!(
        !stdout.contains("strongly") && !stdout.contains("CI"),
        "{stdout}"
    );
    let sj = summary_of(&out);
    assert_eq!(sj["similarity"]["small_sample"], true);
    assert_eq!(sj["similarity"]["auroc"].as_f64(), Some(1.0));
    assert!(sj["similarity"]["auroc_ci95"].is_null());
    assert!(sj["settings"]["small_sample_rule"]
        .as_str()
        .unwrap()
        .contains("at least 20 joined predictions"));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("| AUROC [95% CI] | 1.000 (small sample) |"),
        "{md}"
    );

    // Forty predictions whose rewards are all equal: the score ranks nothing.
    let (mut r, mut o) = (String::new(), String::new());
    for i in 0..40 {
        r += &format!("{{\"instance_id\":\"a__a-{i}\",\"similarity\":0.0,\"reward\":-1}}\n");
        o += &format!(
            "{{\"instance_id\":\"a__a-{i}\",\"resolved\":{}}}\n",
            i % 4 == 0
        );
    }
    let (rewards, outcomes) = (write(d, "r40.jsonl", &r), write(d, "o40.jsonl", &o));
    let out = d.join("tied");
    let (ok, stdout, stderr) = correlate(&rewards, &outcomes, &out, &[]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.starts_with(
            "No reading: every resolved and unresolved prediction of the 40 joined has the same \
             similarity, so it ranks nothing (AUROC 0.500 by ties alone, no interval)."
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("0.500-0.500"), "{stdout}");
    let sj = summary_of(&out);
    assert_eq!(sj["reward"]["tied_pairs"].as_f64(), Some(1.0));
    assert!(sj["reward"]["auroc_ci95"].is_null());
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("| AUROC [95% CI] | 0.500 (all tied) | 0.500 (all tied) |"),
        "{md}"
    );
}

/// `bench correlate` prints its interval as an interval, not as a Rust value.
#[test]
fn bench_correlate_prints_an_interval() {
    let (ok, stdout, stderr) = run_bin(&["bench", "correlate", "--n", "500", "--bootstrap", "50"]);
    assert!(ok, "{stderr}");
    let line = stdout
        .lines()
        .find(|l| l.contains("similarity AUROC"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(!line.contains("Some("), "{line}");
    assert!(line.contains(", 95% CI 0."), "{line}");
    let (ok, stdout, _) = run_bin(&["bench", "correlate", "--n", "500", "--bootstrap", "0"]);
    assert!(
        ok && stdout.contains("no interval (--bootstrap 0)"),
        "{stdout}"
    );
}

/// Rows of two models with the same instances and samples (what `swe-eval serve` exports after
/// seeing two model names): every row is kept, one study per model in its own folder, no
/// warning; `--model` studies one; outcomes that name no model against two models are refused
/// with how to choose.
#[test]
fn two_models_are_studied_apart_never_dropped_as_duplicates() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let (mut r, mut o) = (String::new(), String::new());
    for (m, model) in ["org/m1", "m2"].iter().enumerate() {
        for i in 0..30 {
            for sample in 0..2 {
                let resolved = (i + sample + m) % 3 == 0;
                let score = if resolved { 0.8 } else { 0.3 } + 0.001 * i as f64;
                r += &format!(
                    "{{\"instance_id\":\"a__a-{i}\",\"model_name_or_path\":\"{model}\",\"sample\":{sample},\"similarity\":{score},\"reward\":{score},\"format_version\":1}}\n"
                );
                o += &format!(
                    "{{\"instance_id\":\"a__a-{i}\",\"model_name_or_path\":\"{model}\",\"sample\":{sample},\"resolved\":{resolved},\"category\":\"{}\",\"mask\":false}}\n",
                    if resolved { "resolved" } else { "unresolved" }
                );
            }
        }
    }
    let (rewards, outcomes) = (
        write(d, "rewards.jsonl", &r),
        write(d, "outcomes.jsonl", &o),
    );
    let out = d.join("study");
    let (ok, stdout, stderr) = correlate(&rewards, &outcomes, &out, &[]);
    assert!(ok, "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    assert!(!stderr.contains("more than once"), "{stderr}");
    for (model, line) in ["org__m1", "m2"].iter().zip(stdout.lines().step_by(2)) {
        assert!(
            line.starts_with(&format!("{model}: Resemblance tracks correctness")),
            "{line}"
        );
        let sj = summary_of(&out.join(model));
        assert_eq!(sj["model"], *model);
        assert_eq!(sj["n"].as_u64(), Some(60), "{model}: every row kept");
        assert_eq!(sj["n_unmatched"].as_u64(), Some(0));
    }
    let one = d.join("one");
    let (ok, stdout, _) = correlate(&rewards, &outcomes, &one, &["--model", "m2"]);
    assert!(ok && stdout.starts_with("Resemblance"), "{stdout}");
    assert_eq!(summary_of(&one)["model"], "m2");

    // An official summary names no model: whose outcomes would they be?
    let summary = write(
        d,
        "s.json",
        r#"{"resolved_ids":["a__a-0"],"submitted_ids":["a__a-0","a__a-1"],"completed_ids":["a__a-0","a__a-1"]}"#,
    );
    let out = Command::new(crate::common::bin())
        .args(["correlate", "--rewards"])
        .arg(&rewards)
        .arg("--results")
        .arg(&summary)
        .arg("-o")
        .arg(d.join("refused"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the outcomes rows that name no model cannot be given to one model: the rewards name 2 (org__m1, m2); pass --model"),
        "{err}"
    );
    assert!(!d.join("refused").exists(), "nothing written");
}

/// Issue 34, item 4, on the real mini run: the rewards of the bundled predictions (mini-gold
/// and mini-demo) correlate with the run's outcomes model by model, without a warning.
pub fn mini_run_correlates_with_its_rewards(results: &Path) {
    let work = tempfile::tempdir().unwrap();
    let rewards = reward_cmd(
        &results.join("mini/dataset.jsonl"),
        &results.join("mini/predictions.jsonl"),
        &work.path().join("rewards.jsonl"),
    );
    let out = work.path().join("study");
    let (ok, stdout, stderr) = correlate(&rewards, results, &out, &[]);
    assert!(ok, "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    assert!(stdout.starts_with("mini-gold: "), "{stdout}");
    assert!(
        stdout.contains("\nmini-demo: Too few predictions"),
        "{stdout}"
    );
    for (model, n) in [("mini-gold", 8), ("mini-demo", 14)] {
        let sj = summary_of(&out.join(model));
        assert_eq!(sj["n"].as_u64(), Some(n), "{model}");
        assert_eq!(sj["n_unmatched"].as_u64(), Some(0), "{model}");
    }
}
