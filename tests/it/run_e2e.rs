//! End to end on the real engine: `swe-eval run` with no arguments runs the bundled mini
//! benchmark; every verdict must be the one `datasets/mini/expected.json` writes down (official
//! and strict), the official files must exist and parse, no container may be left, and a
//! second run with the same run id must recompute nothing. Skipped with a message when no
//! Docker daemon answers (CI starts one and fails instead).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Command;

use swe_eval::engine::{DockerEngine, Engine, LABEL_TOOL};
use swe_eval::runner::{Category, Layout, Verdict, LABEL_OWNER};
use swe_eval_core::grading::{ErrorReason, Mode};

use crate::common::bin;

fn daemon() -> Option<tokio::runtime::Runtime> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(crate::common::docker_engine())?;
    Some(rt)
}

/// A category with its error kind (none unless it is an error), as expected.json writes it.
fn graded(c: Category, reason: Option<ErrorReason>) -> (Category, Option<ErrorReason>) {
    match c {
        Category::Error | Category::InfraError => (c, reason),
        _ => (c, None),
    }
}

struct Run {
    stdout: String,
    code: i32,
    pid: u32,
}

fn swe_eval(dir: &Path, args: &[&str]) -> Run {
    let child = Command::new(bin())
        .arg("run")
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn swe-eval");
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    Run {
        stdout,
        code: out.status.code().unwrap_or(-1),
        pid,
    }
}

/// A run's standard output (its closing report) as a reviewed snapshot holds it: the wall time,
/// the seconds of where the jobs' time went and the run's folder redacted, and the
/// engine-retry line (which depends on the daemon's luck) and the image preparation lines
/// (which depend on what the daemon already holds) left out.
fn closing_report(stdout: &str, dir: &Path) -> String {
    let secs = regex::Regex::new(r"containers run, \d+\.\d s").unwrap();
    let any_secs = regex::Regex::new(r"\d+\.\d s").unwrap();
    stdout
        .lines()
        .filter(|l| !l.starts_with("  engine retries:"))
        .filter(|l| {
            !l.starts_with("  image preparation:") && !l.starts_with("    where the time went:")
        })
        .map(|l| {
            let l = secs.replace(l, "containers run, [secs] s");
            let l = if l.starts_with("  where the jobs' time went") {
                any_secs.replace_all(&l, "[secs] s")
            } else {
                l
            };
            l.replace(&dir.display().to_string(), "[dir]")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn verdicts(jsonl: &Path) -> HashMap<(String, String, u32), Verdict> {
    std::fs::read_to_string(jsonl)
        .unwrap_or_else(|e| panic!("{}: {e}", jsonl.display()))
        .lines()
        .map(|l| serde_json::from_str::<Verdict>(l).unwrap())
        .map(|v| ((v.instance_id.clone(), v.model.clone(), v.sample), v))
        .collect()
}

fn containers_of(rt: &tokio::runtime::Runtime, pid: u32) -> Vec<String> {
    rt.block_on(async {
        let e = DockerEngine::connect().await.unwrap();
        let all = e
            .list_containers(BTreeMap::from([(LABEL_TOOL.to_string(), String::new())]))
            .await
            .unwrap();
        all.into_iter()
            .filter(|c| {
                c.labels
                    .get(LABEL_OWNER)
                    .is_some_and(|o| o.contains(&format!(":{pid}:")))
            })
            .map(|c| c.name)
            .collect()
    })
}

/// Checks every verdict against expected.json under `mode` (the category the run reports).
fn check_verdicts(results: &Path, run_id: &str, mode: Mode) {
    let got = verdicts(&Layout::new(results, run_id).jsonl_path());
    let expected = swe_eval_core::mini::expected();
    assert_eq!(
        got.len(),
        expected.len(),
        "one verdict per bundled prediction"
    );
    let mut wrong = Vec::new();
    for e in &expected {
        let key = (
            e.instance_id.clone(),
            e.model_name_or_path.clone(),
            e.sample,
        );
        let v = &got[&key];
        let official = graded(v.category, v.error_reason);
        let strict = graded(v.strict_category, v.error_reason);
        // A strict run reports the strict verdict (collection files removed before the tests);
        // a default run reports the official one and records the strict one beside it.
        let ok = match mode {
            Mode::Official => {
                official == graded(e.category, e.error_reason)
                    && strict == graded(e.strict_category, e.error_reason)
            }
            Mode::Strict => strict == graded(e.strict_category, e.error_reason),
        };
        if !ok {
            wrong.push(format!(
                "{} {}#{} ({}): got {:?}/{:?}, want {:?}/{:?}: {:?}",
                e.instance_id,
                e.model_name_or_path,
                e.sample,
                e.case,
                official,
                strict,
                e.category,
                e.strict_category,
                v.reason
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "verdicts differ from expected.json:\n{}",
        wrong.join("\n")
    );
}

/// The official files of every prediction exist and parse.
fn check_official_files(results: &Path, run_id: &str) {
    let layout = Layout::new(results, run_id);
    let got = verdicts(&layout.jsonl_path());
    for v in got.values() {
        let dir = layout.prediction_dir(&v.model, &v.instance_id, v.sample);
        if v.category == Category::EmptyPatch {
            continue;
        }
        for f in ["patch.diff", "eval.sh", "run_instance.log"] {
            assert!(dir.join(f).is_file(), "{}: {f} missing", dir.display());
        }
        // A patch that did not apply ran no eval script: no test output, as officially.
        let applied = v.error_reason != Some(ErrorReason::PatchApplyFailed);
        assert_eq!(
            dir.join("test_output.txt").is_file(),
            applied,
            "{}: test_output.txt",
            dir.display()
        );
        let report = dir.join("report.json");
        assert_eq!(report.is_file(), v.official_report, "{}", dir.display());
        if v.official_report {
            let (id, r) = swe_eval_core::report::read_instance_report(&report).unwrap();
            assert_eq!(id, v.instance_id);
            assert_eq!(
                r.resolved,
                v.category == Category::Resolved,
                "{}",
                report.display()
            );
        }
    }
    for (model, sample, resolved) in [
        ("mini-gold", 0, Some(8)),
        ("mini-demo", 0, None),
        ("mini-demo", 1, None),
    ] {
        let path = layout.summary_path(model, sample);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let s: swe_eval_core::report::RunSummary = serde_json::from_str(&text).unwrap();
        assert_eq!(s.schema_version, 2);
        assert_eq!(s.total_instances, 8);
        if let Some(n) = resolved {
            assert_eq!(s.resolved_instances, n, "{}", path.display());
        }
    }
    // Each job's run is split into its parts where the engine timed the markers (Docker), and
    // the parts add up to the run.
    let ran: Vec<&Verdict> = got
        .values()
        .filter(|v| v.applied_with.is_some() && !v.timed_out && v.shared_from.is_none())
        .collect();
    assert!(!ran.is_empty());
    for v in ran {
        let parts = [
            v.apply_secs,
            v.before_tests_secs,
            v.tests_secs,
            v.after_tests_secs,
        ];
        assert!(
            parts.iter().all(Option::is_some),
            "{} {}: parts {parts:?}",
            v.instance_id,
            v.model
        );
        let sum: f64 = parts.iter().flatten().sum();
        assert!(
            (sum - v.run_secs).abs() < 0.01,
            "{}: parts {parts:?} add to {sum}, run {}",
            v.instance_id,
            v.run_secs
        );
        assert!(v.tests_secs.unwrap() > 0.0, "{}", v.instance_id);
    }
    let csv = std::fs::read_to_string(layout.csv_path()).unwrap();
    assert_eq!(
        csv.lines().count(),
        got.len() + 1,
        "CSV: header and one row per prediction"
    );
}

#[test]
fn mini_benchmark_runs_with_no_arguments_and_resumes_without_recomputing() {
    let _turn = crate::common::mini_images_shared();
    let Some(rt) = daemon() else { return };
    let dir = tempfile::tempdir().unwrap();
    let first = swe_eval(dir.path(), &[]);
    assert_eq!(first.code, 0, "a clean run exits 0");
    insta::assert_snapshot!(
        "mini_run_closing_report",
        closing_report(&first.stdout, dir.path()),
        "what `swe-eval run` prints at the end of the mini benchmark"
    );
    let results = dir.path().join("results");
    check_verdicts(&results, "mini", Mode::Official);
    check_official_files(&results, "mini");
    crate::submit::mini_run_packages(&results);
    crate::correlate::mini_run_correlates_with_its_rewards(&results);
    assert!(
        containers_of(&rt, first.pid).is_empty(),
        "no container of the run is left"
    );

    let layout = Layout::new(&results, "mini");
    let stamp = |v: &Verdict| {
        let p = layout
            .prediction_dir(&v.model, &v.instance_id, v.sample)
            .join("verdict.json");
        std::fs::metadata(p).unwrap().modified().unwrap()
    };
    let before: HashMap<_, _> = verdicts(&layout.jsonl_path())
        .into_iter()
        .map(|(k, v)| (k, stamp(&v)))
        .collect();
    let second = swe_eval(dir.path(), &[]);
    assert_eq!(second.code, 0);
    insta::assert_snapshot!(
        "mini_run_closing_report_resumed",
        closing_report(&second.stdout, dir.path()),
        "the closing report of the same run again: everything resumed"
    );
    assert!(
        second.stdout.contains(" 0 containers run"),
        "{}",
        second.stdout
    );
    let after: HashMap<_, _> = verdicts(&layout.jsonl_path())
        .into_iter()
        .map(|(k, v)| (k, stamp(&v)))
        .collect();
    assert_eq!(before, after, "no verdict rewritten by the second run");
    check_verdicts(&results, "mini", Mode::Official);
}

#[test]
fn mini_benchmark_strict_run_gives_the_strict_verdicts() {
    let _turn = crate::common::mini_images_shared();
    let Some(rt) = daemon() else { return };
    let dir = tempfile::tempdir().unwrap();
    let run = swe_eval(
        dir.path(),
        &[
            "--strict",
            "--run-id",
            "mini-strict",
            "--output",
            "out",
            "--timeout",
            "10",
        ],
    );
    assert_eq!(run.code, 0);
    check_verdicts(&dir.path().join("out"), "mini-strict", Mode::Strict);
    assert!(containers_of(&rt, run.pid).is_empty());
}

/// `swe-eval validate` runs gold and the empty patch k times: on the mini benchmark nothing is
/// flagged; with one task's gold patch swapped for a partial fix, that task is flagged as
/// "gold does not resolve" and the other is not. `--gold-only` runs no empty patch.
#[test]
fn validate_flags_a_gold_patch_that_does_not_resolve() {
    let _turn = crate::common::mini_images_shared();
    let Some(_rt) = daemon() else { return };
    let dir = tempfile::tempdir().unwrap();
    let bench = swe_eval_core::mini::materialize(&dir.path().join("mini")).unwrap();
    let partial = std::fs::read_to_string(&bench.predictions)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|p| p["instance_id"] == "swe-eval-mini__calc-1" && p["case"] == "partial")
        .expect("the mini benchmark has a partial fix of calc-1");
    let rows: Vec<String> = std::fs::read_to_string(&bench.dataset)
        .unwrap()
        .lines()
        .map(|l| {
            let mut row: serde_json::Value = serde_json::from_str(l).unwrap();
            if row["instance_id"] == "swe-eval-mini__calc-1" {
                row["patch"] = partial["model_patch"].clone();
            }
            row.to_string()
        })
        .collect();
    let broken = dir.path().join("broken.jsonl");
    std::fs::write(&broken, rows.join("\n") + "\n").unwrap();

    let validate = |args: &[&str]| {
        let out = Command::new(bin())
            .args(["validate", "-d"])
            .arg(&broken)
            .args(args)
            .args(["--flavour", "debian", "--timeout", "60", "--output"])
            .arg(dir.path().join("out"))
            .arg("--mirrors")
            .arg(&bench.mirrors)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out, text)
    };
    let ids = "swe-eval-mini__calc-1,swe-eval-mini__strutils-2";
    let (out, text) = validate(&["-i", ids, "-k", "2"]);
    let report: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("out/validate.validate.json"))
            .unwrap_or_else(|e| panic!("no validate report ({e}):\n{text}")),
    )
    .unwrap();
    let by_id = |id: &str| {
        report
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["instance_id"] == id)
            .unwrap_or_else(|| panic!("{id} missing:\n{text}"))
            .clone()
    };
    let calc = by_id("swe-eval-mini__calc-1");
    assert_eq!(calc["gold_not_resolved"], true, "{calc}\n{text}");
    assert_eq!(
        calc["gold"],
        serde_json::json!(["unresolved", "unresolved"])
    );
    let strutils = by_id("swe-eval-mini__strutils-2");
    for flag in ["gold_not_resolved", "empty_resolves", "flaky"] {
        assert_eq!(strutils[flag], false, "{flag}: {strutils}\n{text}");
    }
    assert_eq!(
        strutils["empty"],
        serde_json::json!(["unresolved", "unresolved"])
    );
    assert_ne!(
        out.status.code(),
        Some(0),
        "a flagged instance is not a clean result\n{text}"
    );

    // --gold-only: the gold patch k times, no empty-patch run; a sound instance exits 0.
    let (out, text) = validate(&[
        "-i",
        "swe-eval-mini__strutils-2",
        "-k",
        "2",
        "--gold-only",
        "--run-id",
        "gold-only",
    ]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("k = 2 (gold only)"), "{text}");
    assert!(text.contains("empty [not run]"), "{text}");
    let report: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("out/validate.gold-only.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        report[0]["gold"],
        serde_json::json!(["resolved", "resolved"])
    );
    assert_eq!(report[0]["empty"], serde_json::json!([]), "{report}");
}

/// The flaky map end to end: calc-1 gets a PASS_TO_PASS test that passes only with no network
/// (`socket.if_nameindex()` is loopback alone). `validate -k 1` runs it without the network;
/// the same validation with `-k 2 --network` keeps those verdicts (a resume keeps verdicts on
/// the patch) and runs sample 1 with the network, where the test fails: the flaky map then
/// says calc-1 is flaky, with that test and its statuses per run. `run --flaky` marks the
/// run's prediction on calc-1; a map with a bad row stops `run` and `compare` before anything,
/// naming the line and the field.
#[test]
fn validate_writes_the_flaky_map_with_the_flipping_test_and_run_marks_it() {
    let _turn = crate::common::mini_images_shared();
    let Some(_rt) = daemon() else { return };
    let dir = tempfile::tempdir().unwrap();
    let bench = swe_eval_core::mini::materialize(&dir.path().join("mini")).unwrap();
    let id = "swe-eval-mini__calc-1";
    let flip = "tests/test_flip.py::test_sees_only_loopback";
    let rows: Vec<String> = std::fs::read_to_string(&bench.dataset)
        .unwrap()
        .lines()
        .map(|l| {
            let mut row: serde_json::Value = serde_json::from_str(l).unwrap();
            if row["instance_id"] == id {
                let test_patch = row["test_patch"].as_str().unwrap().to_string()
                    + "diff --git a/tests/test_flip.py b/tests/test_flip.py\n\
                       new file mode 100644\n\
                       --- /dev/null\n\
                       +++ b/tests/test_flip.py\n\
                       @@ -0,0 +1,5 @@\n\
                       +import socket\n\
                       +\n\
                       +\n\
                       +def test_sees_only_loopback():\n\
                       +    assert [n for _, n in socket.if_nameindex()] == [\"lo\"]\n";
                row["test_patch"] = test_patch.into();
                row["PASS_TO_PASS"]
                    .as_array_mut()
                    .unwrap()
                    .push(flip.into());
            }
            row.to_string()
        })
        .collect();
    let data = dir.path().join("flip.jsonl");
    std::fs::write(&data, rows.join("\n") + "\n").unwrap();
    let out = dir.path().join("out");
    let swe_eval = |args: &[&str]| {
        let o = Command::new(bin())
            .args(args)
            .arg("-d")
            .arg(&data)
            .args(["--flavour", "debian", "--timeout", "60", "--mirrors"])
            .arg(&bench.mirrors)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        (o.status.code(), text)
    };
    let validate = ["validate", "-i", id, "--run-id", "flip"];
    let (_, text) = swe_eval(&[&validate[..], &["-k", "1"]].concat());
    let map_path = out.join("flaky.flip.jsonl");
    let first = std::fs::read_to_string(&map_path).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let row: serde_json::Value = serde_json::from_str(first.trim()).unwrap();
    assert_eq!(
        (&row["flaky"], &row["gold"]),
        (&serde_json::json!(false), &serde_json::json!(["resolved"])),
        "{row}\n{text}"
    );
    let (code, text) = swe_eval(&[&validate[..], &["-k", "2", "--network"]].concat());
    assert_eq!(code, Some(3), "a flaky instance is flagged\n{text}");
    assert!(text.contains("1 flaky"), "{text}");
    assert!(
        text.contains(&format!("test status changes between runs: {flip}")),
        "{text}"
    );
    let map = swe_eval_core::report::read_flaky_map(&map_path).unwrap();
    let row = &map.rows[id];
    assert!(row.flaky, "{row:?}");
    assert_eq!(row.repo, "swe-eval-mini/calc");
    assert_eq!(
        row.gold,
        [Category::Resolved, Category::Unresolved],
        "{row:?}"
    );
    let flipped: Vec<&str> = row.tests.iter().map(|t| t.test.as_str()).collect();
    assert_eq!(flipped, [flip], "{row:?}");
    let s = |x: &str| Some(x.to_string());
    assert_eq!(row.tests[0].gold, [s("PASSED"), s("FAILED")]);
    assert_eq!(row.tests[0].empty, [s("PASSED"), s("FAILED")]);

    // A run with the map marks its prediction on calc-1.
    let map_arg = map_path.to_str().unwrap();
    let (code, text) = swe_eval(&[
        "run", "-p", "gold", "-i", id, "--run-id", "marked", "--flaky", map_arg,
    ]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("1 of the run's 1 instances (1 validated)"),
        "{text}"
    );
    let marks: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("marked.flaky.json")).unwrap()).unwrap();
    assert_eq!(marks["flaky_instances"], serde_json::json!([id]), "{marks}");
    assert_eq!(marks["predictions"][0]["category"], "resolved", "{marks}");
    assert_eq!(
        marks["predictions"][0]["flipping_tests"],
        serde_json::json!([flip]),
        "{marks}"
    );

    // A bad row: nothing runs, the line and the field are named.
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        first.trim().to_string()
            + "\n{\"format_version\":1,\"instance_id\":\"x\",\"flaky\":\"often\"}\n",
    )
    .unwrap();
    let bad_arg = bad.to_str().unwrap();
    let (code, text) = swe_eval(&[
        "run", "-p", "gold", "-i", id, "--run-id", "bad", "--flaky", bad_arg,
    ]);
    assert_ne!(code, Some(0), "{text}");
    assert!(text.contains("bad.jsonl:2: field `flaky`"), "{text}");
    assert!(
        !out.join("bad.predictions.jsonl").exists(),
        "nothing ran: {text}"
    );
    let o = Command::new(bin())
        .arg("compare")
        .arg(format!("a={}#marked", out.display()))
        .arg(format!("b={}#marked", out.display()))
        .arg("--flaky")
        .arg(&bad)
        .arg("-o")
        .arg(dir.path().join("cmp"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{text}");
    assert!(text.contains("bad.jsonl:2: field `flaky`"), "{text}");
}

/// Image preparation overlaps the jobs on the real engine: the mini benchmark's gold patches,
/// with instance ids of this process only (so their instance images are built here, never
/// found from another run), one build at a time: the first jobs are dispatched before the last
/// instance image starts building, every prediction still gets its verdict, and the instance
/// images built are removed at the end (cache level `env`).
#[test]
fn the_first_jobs_run_while_later_instance_images_build() {
    use std::sync::Arc;
    use swe_eval::images::{BuildEvent, CacheLevel, Phase, Stage};
    use swe_eval::orchestrate::{execute, load_inputs, ImagePolicy, RunOutput, Work};
    use swe_eval::runner::{RunConfig, RunEvent};
    use swe_eval::session::{prepare_options, Event, ImageChoices};
    use swe_eval_core::dataset::Dataset;
    use swe_eval_core::predictions::Prediction;

    let _turn = crate::common::mini_images_shared();
    let Some(rt) = daemon() else { return };
    if !crate::common::require_program("git") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let inputs = load_inputs(&swe_eval::orchestrate::Source::default(), &out).unwrap();
    let ours = |id: &str| format!("{id}-overlap{}", std::process::id());
    let instances = inputs
        .instance_ids
        .iter()
        .map(|id| {
            let mut i = inputs.dataset.get(id).unwrap().clone();
            i.instance_id = ours(id);
            i
        })
        .collect();
    let dataset = Dataset::new(instances);
    let predictions: Vec<Prediction> = inputs
        .predictions
        .iter()
        .filter(|p| p.model_name_or_path == "mini-gold")
        .map(|p| Prediction {
            instance_id: ours(&p.instance_id),
            ..p.clone()
        })
        .collect();
    assert_eq!(predictions.len(), 8, "one gold patch per mini instance");
    let choices = ImageChoices {
        build_jobs: Some(1),
        ..Default::default()
    };
    let opts = prepare_options(&out, &choices, inputs.mini_mirrors.clone()).unwrap();
    let mut config = RunConfig::new("overlap");
    config.workers = 2;
    config.timeout = std::time::Duration::from_secs(120);
    let work = Work {
        dataset: &dataset,
        predictions,
        instance_ids: inputs.instance_ids.iter().map(|id| ours(id)).collect(),
    };
    let images = ImagePolicy {
        prepare: &opts,
        keep: CacheLevel::Env,
        setups: Default::default(),
    };
    let output = RunOutput {
        folder: out.clone(),
        summaries: true,
    };
    let (etx, mut erx) = tokio::sync::mpsc::unbounded_channel();
    let (_itx, irx) = tokio::sync::mpsc::unbounded_channel();
    let engine = Arc::new(rt.block_on(DockerEngine::connect()).unwrap());
    let (report, times) = rt
        .block_on(execute(
            engine.clone(),
            work,
            config,
            &output,
            images,
            irx,
            etx,
        ))
        .unwrap();
    let mut events = Vec::new();
    while let Ok(e) = erx.try_recv() {
        events.push(e);
    }

    let instance_builds: Vec<(usize, String)> = events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            Event::Build(BuildEvent::Started {
                stage: Stage::Instance,
                image,
            }) => Some((i, image.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        instance_builds.len(),
        8,
        "every instance image built by this run: {instance_builds:?}"
    );
    let first_job = events
        .iter()
        .position(|e| matches!(e, Event::Run(RunEvent::JobStarted { .. })))
        .expect("jobs ran");
    let (last_build, _) = instance_builds.last().unwrap();
    assert!(
        first_job < *last_build,
        "the first job (event {first_job}) was dispatched before the last instance image started building (event {last_build})"
    );
    let ok_builds = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::Build(BuildEvent::Timed {
                    stage: Stage::Instance,
                    phase: Phase::Build,
                    ok: true,
                    ..
                })
            )
        })
        .count();
    assert_eq!(ok_builds, 8);
    assert_eq!((times.ready, times.failed), (8, 0));
    assert_eq!(times.stages[&Stage::Instance].built, 8);

    assert_eq!(report.verdicts_written(), 8, "{report:?}");
    assert_eq!(report.count(Category::InfraError), 0, "{report:?}");
    assert_eq!(report.not_run, 0);
    for (_, image) in &instance_builds {
        assert!(
            !rt.block_on(engine.image_exists(image)).unwrap(),
            "{image} removed at cache level env"
        );
    }
    eprintln!(
        "overlap: {} of 8 instance image builds started after the first job was dispatched",
        instance_builds
            .iter()
            .filter(|(i, _)| *i > first_job)
            .count()
    );
}

/// The categories of run `run_id`'s verdicts in `out`, by (instance, model, sample).
fn categories(out: &Path, run_id: &str) -> BTreeMap<(String, String, u32), String> {
    verdicts(&Layout::new(out, run_id).jsonl_path())
        .into_iter()
        .map(|(k, v)| (k, v.category.as_str().to_string()))
        .collect()
}

/// The line a resumed run prints about its earlier verdicts.
fn resume_line(stdout: &str) -> String {
    stdout
        .lines()
        .find(|l| l.starts_with("  resumed from the earlier verdicts:"))
        .unwrap_or("")
        .trim()
        .to_string()
}

/// A verdict records what produced it, and a run with the same id decides by that record:
/// the mini run resumed after each kind of change. A test list changed: its instance's
/// verdicts are graded again from their saved logs (no container), each equal to a fresh
/// run's. The test patch changed (and with it the eval script): its instance's run again.
/// The timeout changed: only the verdict the timeout decided runs again. `--network` given:
/// the verdict that needed it runs again; taken away again: the verdict that had it runs again.
#[test]
fn a_resume_keeps_grades_again_or_runs_again_by_what_produced_each_verdict() {
    let _turn = crate::common::mini_images_shared();
    let Some(_rt) = daemon() else { return };
    let dir = tempfile::tempdir().unwrap();
    let bench = swe_eval_core::mini::materialize(&dir.path().join("mini")).unwrap();
    let mirrors = bench.mirrors.display().to_string();
    let calc = "swe-eval-mini__calc-1";
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(&bench.dataset)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &serde_json::Value| {
            [calc, "swe-eval-mini__calc-2", "swe-eval-mini__iniconf-1"]
                .contains(&r["instance_id"].as_str().unwrap())
        })
        .collect();
    let write = |name: &str, rows: &[serde_json::Value]| {
        let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
        std::fs::write(dir.path().join(name), text).unwrap();
    };
    write("ds.jsonl", &rows);
    // A test that does not exist added to calc-1's FAIL_TO_PASS: its gold no longer resolves.
    let mut tests = rows.clone();
    for r in tests.iter_mut().filter(|r| r["instance_id"] == calc) {
        let mut f2p: Vec<String> = match &r["FAIL_TO_PASS"] {
            serde_json::Value::String(s) => serde_json::from_str(s).unwrap(),
            v => serde_json::from_value(v.clone()).unwrap(),
        };
        let file = f2p[0].split("::").next().unwrap().to_string();
        f2p.push(format!("{file}::test_that_does_not_exist"));
        r["FAIL_TO_PASS"] = serde_json::json!(f2p);
    }
    write("tests.jsonl", &tests);
    // calc-1's test patch with one more added line (and so another eval script).
    let mut patched = tests.clone();
    let header = regex::Regex::new(r"@@ -(\d+),(\d+) \+(\d+),(\d+) @@").unwrap();
    for r in patched.iter_mut().filter(|r| r["instance_id"] == calc) {
        let tp = r["test_patch"].as_str().unwrap();
        let c = header.captures(tp).unwrap();
        let more = c[4].parse::<u32>().unwrap() + 1;
        let new_header = format!("@@ -{},{} +{},{more} @@", &c[1], &c[2], &c[3]);
        let first_hunk_end = tp[c.get(0).unwrap().end()..]
            .find("\ndiff --git")
            .map_or(tp.len(), |i| c.get(0).unwrap().end() + i + 1);
        let mut changed = tp[..first_hunk_end].replacen(&c[0], &new_header, 1);
        if !changed.ends_with('\n') {
            changed.push('\n');
        }
        changed.push_str("+# the test patch changed\n");
        changed.push_str(&tp[first_hunk_end..]);
        r["test_patch"] = serde_json::json!(changed);
    }
    write("patched.jsonl", &patched);
    // The bundled predictions of these instances.
    let preds: Vec<String> = std::fs::read_to_string(&bench.predictions)
        .unwrap()
        .lines()
        .filter(|l| {
            rows.iter()
                .any(|r| l.contains(r["instance_id"].as_str().unwrap()))
        })
        .map(String::from)
        .collect();
    std::fs::write(dir.path().join("preds.jsonl"), preds.join("\n") + "\n").unwrap();
    let go = |data: &str, run_id: &str, extra: &[&str]| {
        let args: Vec<&str> = [
            "-d",
            data,
            "-p",
            "preds.jsonl",
            "--flavour",
            "debian",
            "--mirrors",
            &mirrors,
            "--run-id",
            run_id,
            "-o",
            "out",
            "-j",
            "2",
        ]
        .into_iter()
        .chain(extra.iter().copied())
        .collect();
        swe_eval(dir.path(), &args)
    };
    let out = dir.path().join("out");
    let n = preds.len();
    let calc_preds = preds.iter().filter(|l| l.contains(calc)).count();
    assert!(
        n >= 6 && calc_preds >= 3,
        "{n} predictions, {calc_preds} of calc-1"
    );

    let first = go("ds.jsonl", "r", &["--timeout", "8"]);
    assert_eq!(first.code, 0, "{}", first.stdout);
    let again = go("ds.jsonl", "r", &["--timeout", "8"]);
    assert_eq!(
        resume_line(&again.stdout),
        format!("resumed from the earlier verdicts: {n} kept as they were")
    );
    assert!(
        again.stdout.contains(" 0 containers run"),
        "{}",
        again.stdout
    );

    // The test lists: graded again, no container; as a fresh run grades them.
    let regraded = go("tests.jsonl", "r", &["--timeout", "8"]);
    assert_eq!(
        resume_line(&regraded.stdout),
        format!(
            "resumed from the earlier verdicts: {} kept as they were; {calc_preds} graded again from their saved logs (test lists changed {calc_preds})",
            n - calc_preds
        )
    );
    assert!(
        regraded.stdout.contains(" 0 containers run"),
        "{}",
        regraded.stdout
    );
    go("tests.jsonl", "fresh-tests", &["--timeout", "8"]);
    assert_eq!(categories(&out, "r"), categories(&out, "fresh-tests"));
    let gold = &categories(&out, "r")[&(calc.to_string(), "mini-gold".to_string(), 0)];
    assert_eq!(
        gold, "unresolved",
        "a required test that does not exist fails the gold"
    );

    // The test patch (and so the eval script): its instance's predictions run again.
    let rerun = go("patched.jsonl", "r", &["--timeout", "8"]);
    assert_eq!(
        resume_line(&rerun.stdout),
        format!(
            "resumed from the earlier verdicts: {} kept as they were; {calc_preds} run again (eval script changed and test patch changed {calc_preds})",
            n - calc_preds
        )
    );
    go("patched.jsonl", "fresh-patched", &["--timeout", "8"]);
    assert_eq!(categories(&out, "r"), categories(&out, "fresh-patched"));

    // A longer timeout: only the verdict it decided (the endless loop) runs again.
    let longer = go("patched.jsonl", "r", &["--timeout", "9"]);
    assert_eq!(
        resume_line(&longer.stdout),
        format!(
            "resumed from the earlier verdicts: {} kept as they were; 1 run again (timeout changed 1)",
            n - 1
        )
    );
    // The network given: the verdict that needed it runs again; taken away: the one that had it.
    let network = go("patched.jsonl", "r", &["--timeout", "9", "--network"]);
    assert_eq!(
        resume_line(&network.stdout),
        format!(
            "resumed from the earlier verdicts: {} kept as they were; 1 run again (network changed 1)",
            n - 1
        )
    );
    let without = go("patched.jsonl", "r", &["--timeout", "9"]);
    assert_eq!(
        resume_line(&without.stdout),
        format!(
            "resumed from the earlier verdicts: {} kept as they were; 1 run again (network changed 1)",
            n - 1
        )
    );
    // Every verdict names what produced it: a kept one, the earlier run's inputs.
    for v in verdicts(&Layout::new(&out, "r").jsonl_path()).values() {
        let id = v.identity.as_ref().expect("an identity");
        assert_eq!(id.patch, v.patch_hash);
        if v.category != Category::EmptyPatch {
            assert_eq!(Some(id.limits.timeout_secs), v.timeout_secs, "{v:?}");
        }
        assert!(!id.limits.network);
    }
}
