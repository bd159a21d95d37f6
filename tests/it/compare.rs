//! `swe-eval compare`: every statistic against SciPy / statsmodels values kept in
//! tests/fixtures/compare (made by scripts/compare_fixtures.py, which also computes whole
//! comparisons independently), the run forms, bad inputs, and the shared Sonnet 4.5 runs.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

fn fixture(name: &str) -> Value {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/compare")
        .join(name);
    serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap()
}

/// Runs the binary: (exit code, stdout, stderr).
fn swe_eval(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(crate::common::bin())
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The run names of a summary.json, in order.
fn run_names(s: &Value) -> Vec<&str> {
    s["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect()
}

fn summary_of(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap()
}

const TOL: f64 = 1e-12;

fn close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= TOL,
        "{what}: got {got}, oracle {want}"
    );
}

/// Every number in `want` (an oracle object) equals the same key in `got`, recursively;
/// keys the oracle does not have are not checked.
fn matches(got: &Value, want: &Value, path: &str) {
    match (got, want) {
        (_, Value::Object(w)) => {
            for (k, wv) in w {
                let gv = got
                    .get(k)
                    .unwrap_or_else(|| panic!("{path}.{k}: missing in summary.json"));
                matches(gv, wv, &format!("{path}.{k}"));
            }
        }
        (Value::Array(g), Value::Array(w)) => {
            assert_eq!(g.len(), w.len(), "{path}: length");
            for (i, (gv, wv)) in g.iter().zip(w).enumerate() {
                matches(gv, wv, &format!("{path}[{i}]"));
            }
        }
        (Value::Number(g), Value::Number(w)) => {
            close(g.as_f64().unwrap(), w.as_f64().unwrap(), path)
        }
        _ => assert_eq!(got, want, "{path}"),
    }
}

#[test]
fn every_statistic_matches_scipy_and_statsmodels() {
    let fx = fixture("stats.json");
    let u = |v: &Value| v.as_u64().unwrap() as usize;
    for c in fx["wilson"].as_array().unwrap() {
        let [lo, hi] = swe_eval_core::compare::wilson(u(&c["k"]), u(&c["n"])).unwrap();
        close(lo, c["ci"][0].as_f64().unwrap(), &format!("wilson {c}"));
        close(hi, c["ci"][1].as_f64().unwrap(), &format!("wilson {c}"));
    }
    for c in fx["mcnemar"].as_array().unwrap() {
        let got = swe_eval_core::compare::mcnemar_exact(u(&c["b"]), u(&c["c"]));
        let want = c["p"].as_f64().unwrap();
        close(got, want, &format!("mcnemar {c}"));
        assert!(
            (got - want).abs() <= 1e-9 * want,
            "mcnemar {c}: relative error, got {got}"
        );
    }
    let pk = fx["pass_at_k"].as_array().unwrap();
    assert!(pk.len() > 100);
    for c in pk {
        let got = swe_eval_core::compare::pass_at_k(u(&c["n"]), u(&c["c"]), u(&c["k"])).unwrap();
        close(got, c["value"].as_f64().unwrap(), &format!("pass@k {c}"));
    }
    for c in fx["sd"].as_array().unwrap() {
        let v: Vec<f64> = serde_json::from_value(c["values"].clone()).unwrap();
        close(
            swe_eval_core::compare::sd(&v, 1).unwrap(),
            c["ddof1"].as_f64().unwrap(),
            "sd ddof 1",
        );
        close(
            swe_eval_core::compare::sd(&v, 0).unwrap(),
            c["ddof0"].as_f64().unwrap(),
            "sd ddof 0",
        );
    }
    for c in fx["bootstrap"].as_array().unwrap() {
        let v: Vec<f64> = serde_json::from_value(c["values"].clone()).unwrap();
        let (b, seed) = (u(&c["resamples"]), c["seed"].as_u64().unwrap());
        let [lo, hi] = swe_eval_core::compare::bootstrap_mean_ci(&v, b, seed).unwrap();
        let name = c["name"].as_str().unwrap();
        // Exactly the same-seed reimplementation.
        close(lo, c["same_seed"][0].as_f64().unwrap(), name);
        close(hi, c["same_seed"][1].as_f64().unwrap(), name);
        // Within sampling error of NumPy's own bootstrap (20,000 resamples).
        let (nlo, nhi) = (
            c["numpy"][0].as_f64().unwrap(),
            c["numpy"][1].as_f64().unwrap(),
        );
        let slack = 0.1 * (nhi - nlo) + 1e-9;
        assert!(
            (lo - nlo).abs() <= slack && (hi - nhi).abs() <= slack,
            "{name}: [{lo}, {hi}] vs NumPy [{nlo}, {nhi}]"
        );
    }
    for c in fx["group_seed"].as_array().unwrap() {
        assert_eq!(
            swe_eval_core::compare::group_seed(
                c["seed"].as_u64().unwrap(),
                c["label"].as_str().unwrap()
            ),
            c["value"].as_u64().unwrap(),
            "{c}"
        );
    }
}

/// Runs `args` with `--pair A,B` for each of the fixture's pairs, its bootstrap settings and
/// `--output out`; checks the summary against the fixture's oracle values and returns it with
/// the standard output.
fn run_against_oracle(mut args: Vec<String>, fx: &Value, out: &Path) -> (Value, String) {
    for p in fx["pairs"].as_array().unwrap() {
        args.extend([
            "--pair".into(),
            format!("{},{}", p[0].as_str().unwrap(), p[1].as_str().unwrap()),
        ]);
    }
    // The oracle pairs the instances both runs have (run M lacks one of A's).
    args.extend([
        "--intersection".into(),
        "--bootstrap".into(),
        fx["bootstrap"].to_string(),
        "--seed".into(),
        fx["seed"].to_string(),
        "--output".into(),
        out.display().to_string(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, stdout, stderr) = swe_eval(&args);
    assert_eq!(code, 0, "{stderr}");
    let s = summary_of(out);
    check_against_oracle(&s, &fx["expected"]);
    (s, stdout)
}

fn write_jsonl(path: &Path, rows: &[Value]) {
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// Checks summary.json against an oracle's `expected` (runs by name, repeats, unstable, pairs).
fn check_against_oracle(s: &Value, want: &Value) {
    assert_eq!(s["format_version"], json!(1));
    for list in ["runs", "repeats"] {
        for (name, w) in want[list].as_object().unwrap() {
            let got = s[list]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["name"] == json!(name))
                .unwrap_or_else(|| panic!("{list}: {name} missing"));
            matches(got, w, &format!("{list}.{name}"));
        }
    }
    matches(&s["unstable"], &want["unstable"], "unstable");
    let pairs = want["pairs"].as_array().unwrap();
    assert_eq!(s["pairs"].as_array().unwrap().len(), pairs.len());
    for (i, w) in pairs.iter().enumerate() {
        matches(&s["pairs"][i], w, &format!("pairs[{i}]"));
    }
}

#[test]
fn synthetic_runs_match_the_oracle() {
    let fx = fixture("synthetic.json");
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let mut args: Vec<String> = vec!["compare".into()];
    for (name, rows) in fx["runs"].as_object().unwrap() {
        let p = d.join(format!("{name}.jsonl"));
        write_jsonl(&p, rows.as_array().unwrap());
        args.push(p.display().to_string());
    }
    for (name, rows) in fx["rewards"].as_object().unwrap() {
        let p = d.join(format!("{name}.rewards.jsonl"));
        write_jsonl(&p, rows.as_array().unwrap());
        args.extend(["--rewards".into(), format!("{name}={}", p.display())]);
    }
    let ds = d.join("dataset.jsonl");
    write_jsonl(&ds, fx["dataset"].as_array().unwrap());
    for (g, members) in fx["repeats"].as_object().unwrap() {
        let m: Vec<&str> = members
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        args.extend(["--repeat".into(), format!("{g}={}", m.join(","))]);
    }
    let out = d.join("out");
    args.extend(["--dataset".into(), ds.display().to_string()]);
    let (s, stdout) = run_against_oracle(args, &fx, &out);
    // The multi-sample pair has no McNemar test, the single-sample one has.
    assert!(s["pairs"][1]["mcnemar_p"].is_null());
    assert!(
        s["pairs"][1]["similarity"].is_null(),
        "M has no rewards: no similarity change"
    );
    assert!(s["pairs"][0]["similarity"]["n"].as_u64().unwrap() > 0);
    assert_eq!(s["pairs"][1]["n_only_a"], json!(1), "M lacks one instance");
    // Outputs: the headline first, a forest plot per pair, the CSVs.
    let headline = s["headline"].as_str().unwrap();
    assert!(stdout.starts_with(headline), "{stdout}");
    assert!(headline.starts_with("B resolves "), "{headline}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains(&format!("**{headline}**")));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 2, "one forest plot per pair");
    for (k, stem) in ["forest_1_B_vs_A", "forest_2_M_vs_A"].iter().enumerate() {
        let png = std::fs::read(out.join(format!("{stem}.png"))).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        let svg = std::fs::read_to_string(out.join(format!("{stem}.svg"))).unwrap();
        let per_repo = fx["expected"]["pairs"][k]["per_repo"].as_object().unwrap();
        for (repo, d) in per_repo {
            let row = format!("{repo} ({})", d["n"]);
            assert!(svg.contains(&row), "{stem}: no row `{row}`");
        }
    }
    let csv = std::fs::read_to_string(out.join("per_prediction.csv")).unwrap();
    let n_pred: usize = fx["runs"]
        .as_object()
        .unwrap()
        .values()
        .map(|r| r.as_array().unwrap().len())
        .sum();
    assert_eq!(csv.lines().count(), n_pred + 1);
    let flips = std::fs::read_to_string(out.join("flips.csv")).unwrap();
    let p0 = &fx["expected"]["pairs"][0];
    let n_flips =
        p0["to_resolved"].as_array().unwrap().len() + p0["to_unresolved"].as_array().unwrap().len();
    assert_eq!(
        flips.lines().filter(|l| l.starts_with("A,B,")).count(),
        n_flips
    );
}

const SONNET_RUNS: [&str; 7] = [
    "i0_run1", "i0_run2", "i0_run3", "i0_run4", "i0_run5", "i1c", "i1d",
];

/// The seven Sonnet 4.5 runs: i0_run1 against i1c and every pair of the five i0 runs, checked
/// against the Python oracle and against the figures the source publishes.
#[test]
fn sonnet_runs_match_the_oracle_and_the_source() {
    let shared = crate::require_shared!();
    let dir = shared.join("predictions/mini-swe-agent_claude-sonnet-4.5");
    let fx = fixture("sonnet.json");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let per_run = dir.join("per_run_results.json");
    let args: Vec<String> = vec![
        "compare".into(),
        per_run.display().to_string(),
        "--repeat".into(),
        format!("i0={}", SONNET_RUNS[..5].join(",")),
        "--dataset".into(),
        shared
            .join("partial-verified/swebench_verified_partial.jsonl")
            .display()
            .to_string(),
    ];
    let (s, stdout) = run_against_oracle(args, &fx, &out);
    let names = run_names(&s);
    assert_eq!(names, SONNET_RUNS, "every run of the file, by its key");

    // The source's own summary.json: i0 rates 79, 75, 77, 76, 72 (n = 100 each), mean 75.8,
    // population sd 2.32; 66 tasks always resolved, 16 never, 18 unstable; i1c 74.
    let g = &s["repeats"][0];
    let rates: Vec<f64> = serde_json::from_value(g["rates"].clone()).unwrap();
    assert_eq!(rates, [0.79, 0.75, 0.77, 0.76, 0.72]);
    assert!((g["sd_population"].as_f64().unwrap() * 100.0 - 2.32).abs() < 0.005);
    assert_eq!(
        (&g["n_always"], &g["n_never"], &g["n_unstable"]),
        (&json!(66), &json!(16), &json!(18))
    );
    let p = &s["pairs"][0];
    assert_eq!((&p["a"], &p["b"]), (&json!("i0_run1"), &json!("i1c")));
    assert_eq!(p["n"], json!(100));
    assert!((p["difference"].as_f64().unwrap() + 0.05).abs() < 1e-12);
    // Hand check: 4 flips to resolved, 9 to unresolved; 2 * P(X <= 4), X ~ Bin(13, 1/2).
    let tail: f64 = [1.0, 13.0, 78.0, 286.0, 715.0].iter().sum::<f64>() / 8192.0;
    assert!((p["mcnemar_p"].as_f64().unwrap() - 2.0 * tail).abs() < 1e-15);
    eprintln!("{stdout}");

    // The same pair by picking the two runs with #KEY gives the same numbers.
    let out2 = tmp.path().join("out2");
    let a = format!("{}#i0_run1", per_run.display());
    let b = format!("{}#i1c", per_run.display());
    let (code, _, stderr) = swe_eval(&[
        "compare",
        &a,
        &b,
        "--bootstrap",
        &fx["bootstrap"].to_string(),
        "--output",
        out2.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let s2 = summary_of(&out2);
    for k in [
        "difference",
        "ci95",
        "mcnemar_p",
        "to_resolved",
        "to_unresolved",
    ] {
        assert_eq!(s2["pairs"][0][k], p[k], "{k}");
    }
}

/// One run written in each form `compare` reads; any two forms agree exactly.
#[test]
fn every_run_form_reads_the_same_outcomes() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let verdicts = [
        ("a__a-1", Some(true)),
        ("a__a-2", Some(false)),
        ("b__b-1", Some(true)),
        ("b__b-2", None), // no report.json: an error
    ];
    // A swe-eval output folder with two runs.
    let run_dir = d.join("results");
    for run in ["r1", "r2"] {
        let model = run_dir.join(format!("logs/run_evaluation/{run}/m"));
        let mut rows = Vec::new();
        for (id, v) in verdicts {
            let inst = model.join(id);
            std::fs::create_dir_all(&inst).unwrap();
            if let Some(r) = v {
                let rep = json!({ id: {"patch_is_None": false, "patch_exists": true,
                    "patch_successfully_applied": true, "resolved": r}});
                std::fs::write(inst.join("report.json"), rep.to_string()).unwrap();
            }
            let category = match v {
                Some(true) => "resolved",
                Some(false) => "unresolved",
                None => "error",
            };
            rows.push(json!({"instance_id": id, "sample": 0, "category": category,
                             "resolved": v == Some(true)}));
        }
        write_jsonl(&run_dir.join(format!("{run}.predictions.jsonl")), &rows);
    }
    let summary = d.join("m.r1.json");
    std::fs::write(
        &summary,
        json!({"submitted_ids": ["a__a-1", "a__a-2", "b__b-1", "b__b-2"],
               "completed_ids": ["a__a-1", "a__a-2", "b__b-1"], "resolved_ids": ["a__a-1", "b__b-1"],
               "error_ids": ["b__b-2"]})
        .to_string(),
    )
    .unwrap();
    let forms = [
        format!("x={}#r1", run_dir.display()),
        format!("{}/logs/run_evaluation/r2/m", run_dir.display()),
        format!("{}/logs/run_evaluation/r1", run_dir.display()),
        summary.display().to_string(),
    ];
    let out = d.join("cmp");
    let mut args = vec!["compare"];
    args.extend(forms.iter().map(String::as_str));
    args.extend(["--output", out.to_str().unwrap(), "--bootstrap", "200"]);
    let (code, _, stderr) = swe_eval(&args);
    assert_eq!(code, 0, "{stderr}");
    let s = summary_of(&out);
    let names = run_names(&s);
    assert_eq!(names, ["x", "r2", "r1", "m.r1"]);
    for r in s["runs"].as_array().unwrap() {
        assert_eq!(
            (&r["n_instances"], &r["n_resolved"], &r["n_no_verdict"]),
            (&json!(4), &json!(2), &json!(1)),
            "{}",
            r["name"]
        );
    }
    for p in s["pairs"].as_array().unwrap() {
        assert_eq!(p["difference"], json!(0.0));
        assert_eq!(p["mcnemar_p"], json!(1.0));
        assert_eq!(p["to_resolved"], json!([]));
    }

    // A folder with two runs needs #RUN, and the error names them.
    let (code, _, stderr) = swe_eval(&[
        "compare",
        run_dir.to_str().unwrap(),
        &summary.display().to_string(),
        "--output",
        d.join("o2").to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("holds 2 run ids (r1, r2)") && stderr.contains("PATH#RUN_ID"),
        "{stderr}"
    );
}

#[test]
fn bad_inputs_are_named_and_inputs_are_never_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let a = d.join("a.jsonl");
    let b = d.join("b.jsonl");
    std::fs::write(
        &a,
        "{\"instance_id\": \"x-1\", \"resolved\": true}\n\
         {\"instance_id\": \"x-2\", \"resolved\": \"maybe\"}\n\
         {\"instance_id\": \"x-3\", \"resolved\": false}\n",
    )
    .unwrap();
    std::fs::write(
        &b,
        "{\"instance_id\": \"x-1\", \"resolved\": false}\n\
         {\"instance_id\": \"x-3\", \"resolved\": false}\n",
    )
    .unwrap();
    // Runs a and b with more arguments, into `out`.
    let ab = |extra: &[&str], out: &Path| {
        let mut args = vec!["compare", a.to_str().unwrap(), b.to_str().unwrap()];
        args.extend(extra);
        args.extend(["--output", out.to_str().unwrap()]);
        swe_eval(&args)
    };
    let out = d.join("out");
    let (code, _, stderr) = ab(&[], &out);
    assert_eq!(code, 3, "done, with an input problem: {stderr}");
    assert!(
        stderr.contains(&format!("{}:2: field `resolved`", a.display())),
        "{stderr}"
    );
    let s = summary_of(&out);
    assert_eq!(
        s["pairs"][0]["n"],
        json!(2),
        "the bad row is left out, not the file"
    );

    // The output folder may not be an input, nor hold one.
    for bad_out in [d.to_path_buf(), d.join(".")] {
        let (code, _, stderr) = ab(&[], &bad_out);
        assert_eq!(code, 2, "bad usage: {stderr}");
        assert!(stderr.contains("holds the input"), "{stderr}");
    }
    let (code, _, stderr) = ab(&["--pair", "a,zz"], &d.join("o3"));
    assert_ne!(code, 0);
    assert!(
        stderr.contains("`zz`") && stderr.contains("a, b"),
        "{stderr}"
    );
    // A per_run_results.json with a verdict that is not 0/1 names the run and instance; a run
    // with no outcome left is refused after its rows' problems are shown.
    let pr = d.join("per_run.json");
    std::fs::write(&pr, r#"{"r1": {"x-1": 1, "x-2": 2}}"#).unwrap();
    let empty = d.join("bad.jsonl");
    std::fs::write(&empty, "{\"instance_id\": \"x-1\", \"resolved\": \"x\"}\n").unwrap();
    for (run, wants) in [
        (
            &pr,
            &["field `r1.x-2`: expected 0, 1, true or false, found 2"][..],
        ),
        (
            &empty,
            &[
                "bad.jsonl:1: field `resolved`",
                "run `bad`",
                "has no outcomes",
            ][..],
        ),
    ] {
        let out = d.join("o5");
        let (code, _, stderr) = swe_eval(&[
            "compare",
            run.to_str().unwrap(),
            b.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ]);
        // An input that yields nothing to compare: exit 3, as every command.
        assert_eq!(code, 3, "{stderr}");
        for want in wants {
            assert!(stderr.contains(want), "{want}: {stderr}");
        }
        assert!(!out.exists(), "nothing written");
    }
    let missing = format!("a={}", d.join("missing.jsonl").display());
    let (code, _, stderr) = ab(&["--rewards", &missing], &d.join("o4"));
    assert_ne!(code, 0);
    assert!(stderr.contains("missing.jsonl"), "{stderr}");
}
