//! Honest answers under careless use (issue 22, the second probe): each case of the closing
//! table is a test here, through the binary where the exit code is the point. Then the
//! properties that hold for every command, new ones included: every numeric flag states its
//! range and refuses values outside it (exit 2); no value inside it makes a command use more
//! threads than the machine has cores or more than a bounded amount of memory.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use clap::CommandFactory;
use proptest::prelude::*;
use serde_json::json;

use crate::common;

/// The mini benchmark's dataset and predictions, from the repository.
fn mini(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("datasets/mini")
        .join(file)
}

fn run_bin(args: &[&str]) -> Output {
    Command::new(common::bin())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("swe-eval runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn write_jsonl(path: &Path, rows: &[serde_json::Value]) {
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// An outcome file of `n` instances `<prefix>__x-<i>`, resolved where `resolved(i)`.
fn outcomes(path: &Path, prefix: &str, range: std::ops::Range<usize>, resolved: fn(usize) -> bool) {
    let rows: Vec<_> = range
        .map(|i| json!({"instance_id": format!("{prefix}__x-{i}"), "resolved": resolved(i)}))
        .collect();
    write_jsonl(path, &rows);
}

// ---- 1, 2: compare on runs that do not cover the same instances, or hold two models ----

#[test]
fn compare_of_runs_without_a_common_instance_is_an_error_and_a_partial_overlap_is_stated() {
    let d = tempfile::tempdir().unwrap();
    let (oa, ob, oc) = (
        d.path().join("oa.jsonl"),
        d.path().join("ob.jsonl"),
        d.path().join("oc.jsonl"),
    );
    outcomes(&oa, "a", 0..10, |i| i % 2 == 0);
    outcomes(&ob, "b", 0..10, |i| i % 5 < 2);
    outcomes(&oc, "a", 3..15, |i| i % 3 == 0);
    let out = d.path().join("cmp");
    let o = run_bin(&[
        "compare",
        oa.to_str().unwrap(),
        ob.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("share no instance"), "{}", stderr(&o));
    assert!(!out.join("summary.json").exists(), "nothing written");

    // Partial overlap: the headline says what was paired and what was left out; exit 3.
    let o = run_bin(&[
        "compare",
        oa.to_str().unwrap(),
        oc.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let head = stdout(&o);
    assert!(
        head.contains("paired n = 7; left out: 3 of oa's 10 and 5 of oc's 12 instances"),
        "{head}"
    );
    assert!(
        stderr(&o).contains("3 instances only in oa (a__x-0, a__x-1, a__x-2)"),
        "{}",
        stderr(&o)
    );
    // Asked for the intersection: the same statement, and no problem.
    let o = run_bin(&[
        "compare",
        oa.to_str().unwrap(),
        oc.to_str().unwrap(),
        "--intersection",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("paired n = 7"), "{}", stdout(&o));
}

#[test]
fn compare_of_a_run_folder_with_two_models_compares_each_model() {
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let rows: Vec<_> = (0..10)
        .map(|i| json!({"instance_id": format!("a__x-{i}"), "model": "m1", "sample": 0, "resolved": i < 5}))
        .chain((0..10).map(|i| json!({"instance_id": format!("a__x-{i}"), "model": "m2", "sample": 0, "resolved": i < 2})))
        .collect();
    write_jsonl(&run.join("r1.predictions.jsonl"), &rows);
    let out = d.path().join("cmp");
    let o = run_bin(&[
        "compare",
        run.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("r1.m1: 10 instances, 10 predictions, 5 resolved"),
        "{err}"
    );
    assert!(
        err.contains("r1.m2: 10 instances, 10 predictions, 2 resolved"),
        "{err}"
    );
    assert!(
        !err.contains("more than once"),
        "no model dropped as a duplicate: {err}"
    );
    assert!(
        stdout(&o).contains("r1.m2 resolves 30.0 points fewer than r1.m1"),
        "{}",
        stdout(&o)
    );
}

// ---- 10: every numeric flag has a range, stated in its help and held by its parser ----

/// Every (sub)command, by path.
fn commands() -> Vec<(String, clap::Command)> {
    let mut out = Vec::new();
    let mut stack = vec![(String::from("swe-eval"), swe_eval::cli::Cli::command())];
    while let Some((path, cmd)) = stack.pop() {
        for sub in cmd.get_subcommands() {
            stack.push((format!("{path} {}", sub.get_name()), sub.clone()));
        }
        out.push((path, cmd));
    }
    out
}

/// A numeric flag: its command, long name, and the range its help states.
#[derive(Debug, Clone)]
struct Numeric {
    path: String,
    cmd: clap::Command,
    long: String,
    float: bool,
    min: f64,
    max: f64,
}

fn numeric_flags() -> Vec<Numeric> {
    use std::any::TypeId;
    let ints = [
        TypeId::of::<usize>(),
        TypeId::of::<u64>(),
        TypeId::of::<u32>(),
        TypeId::of::<u16>(),
        TypeId::of::<u8>(),
        TypeId::of::<i64>(),
        TypeId::of::<i32>(),
        TypeId::of::<isize>(),
    ];
    let floats = [TypeId::of::<f64>(), TypeId::of::<f32>()];
    let range = regex::Regex::new(r"\[allowed: (-?[0-9.]+) to (-?[0-9.]+)\]").unwrap();
    let mut out = Vec::new();
    for (path, cmd) in commands() {
        for arg in cmd.get_arguments() {
            let t = arg.get_value_parser().type_id();
            let float = floats.iter().any(|f| t == *f);
            if !float && !ints.iter().any(|i| t == *i) {
                continue;
            }
            let long = arg
                .get_long()
                .expect("numeric flags are long flags")
                .to_string();
            // A seed takes any value of its type: it is not a count.
            if long == "seed" {
                continue;
            }
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            let help = help.replace('\n', " ");
            let c = range.captures(&help).unwrap_or_else(|| {
                panic!("{path} --{long}: its help states no range ([allowed: A to B]): {help}")
            });
            out.push(Numeric {
                path: path.clone(),
                cmd: cmd.clone().mut_args(|a| {
                    a.required(false)
                        .required_unless_present(clap::builder::Resettable::<clap::Id>::Reset)
                }),
                long,
                float,
                min: c[1].parse().unwrap(),
                max: c[2].parse().unwrap(),
            });
        }
    }
    out
}

/// Parses `--long value` alone with the flag's own command: `Ok` or the parser's exit code.
fn parse_flag(n: &Numeric, value: &str) -> Result<(), i32> {
    n.cmd
        .clone()
        .try_get_matches_from(["swe-eval".to_string(), format!("--{}={value}", n.long)])
        .map(|_| ())
        .map_err(|e| {
            assert!(
                matches!(
                    e.kind(),
                    clap::error::ErrorKind::ValueValidation | clap::error::ErrorKind::InvalidValue
                ),
                "{} --{} {value}: refused for another reason: {e}",
                n.path,
                n.long
            );
            e.exit_code()
        })
}

#[test]
fn every_numeric_flag_of_every_command_states_its_range() {
    let flags = numeric_flags();
    let names: Vec<String> = flags
        .iter()
        .map(|n| format!("{} --{}", n.path, n.long))
        .collect();
    // The flags the probe named are among them (the list grows with new commands).
    for want in [
        "reward --workers",
        "correlate --bootstrap",
        "correlate --thresholds",
        "run --timeout",
        "validate --repeat",
        "compare --bootstrap",
    ] {
        assert!(
            names.iter().any(|n| n.ends_with(want)),
            "{want} not found in {names:?}"
        );
    }
    for n in &flags {
        assert!(n.min <= n.max, "{n:?}");
        // The bounds themselves are allowed, one past them is not (exit 2).
        assert_eq!(parse_flag(n, &fmt_num(n, n.min)), Ok(()), "{n:?}");
        assert_eq!(parse_flag(n, &fmt_num(n, n.max)), Ok(()), "{n:?}");
        let step = if n.float { 0.5 } else { 1.0 };
        if n.min > 0.0 || n.float {
            assert_eq!(parse_flag(n, &fmt_num(n, n.min - step)), Err(2), "{n:?}");
        }
        assert_eq!(parse_flag(n, &fmt_num(n, n.max + step)), Err(2), "{n:?}");
        for junk in ["nan", "inf", "-1e300", "1e300", "", "x"] {
            assert_eq!(
                parse_flag(n, junk),
                Err(2),
                "{} --{} {junk}",
                n.path,
                n.long
            );
        }
    }
}

fn fmt_num(n: &Numeric, v: f64) -> String {
    if n.float {
        format!("{v}")
    } else {
        format!("{}", v as i128)
    }
}

proptest! {
    #![proptest_config(common::proptest_config(64))]

    /// Random values (inside, near and far outside each range) are accepted exactly when
    /// inside; outside is the parser's refusal, exit code 2.
    #[test]
    fn numeric_flags_accept_exactly_their_range(pick in any::<prop::sample::Index>(), x in prop_oneof![
        -1e6f64..1e6,
        -2.0f64..2.0,
        (0u64..u64::MAX).prop_map(|v| v as f64),
    ]) {
        let flags = numeric_flags();
        let n = &flags[pick.index(flags.len())];
        let v = if n.float { x } else { x.trunc() };
        let inside = n.min <= v && v <= n.max;
        let got = parse_flag(n, &fmt_num(n, v));
        prop_assert_eq!(got.is_ok(), inside, "{} --{} {}", n.path, n.long, v);
        if !inside {
            prop_assert_eq!(got, Err(2));
        }
    }
}

// ---- 8, 9: no value inside a range takes the machine down ----

/// The most threads and the peak memory (VmHWM, KiB) of a running command, polled from
/// /proc every few milliseconds; with its output.
fn watched(args: &[String]) -> (Output, usize, u64) {
    let mut child = Command::new(common::bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("swe-eval runs");
    let status_path = format!("/proc/{}/status", child.id());
    let (mut threads, mut hwm) = (0usize, 0u64);
    let started = Instant::now();
    // The pipes are read after exit; these commands print little.
    loop {
        if let Ok(text) = std::fs::read_to_string(&status_path) {
            for line in text.lines() {
                let num = |l: &str| {
                    l.split_whitespace()
                        .nth(1)
                        .and_then(|v| v.parse::<u64>().ok())
                };
                if line.starts_with("Threads:") {
                    threads = threads.max(num(line).unwrap_or(0) as usize);
                } else if line.starts_with("VmHWM:") {
                    hwm = hwm.max(num(line).unwrap_or(0));
                }
            }
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{args:?} runs past 120 s"
        );
        std::thread::sleep(Duration::from_millis(3));
    }
    (child.wait_with_output().unwrap(), threads, hwm)
}

/// Threads a command may have beyond its worker pool: the main thread and a few the runtime
/// keeps (signal handling, a blocking reader).
const SPARE_THREADS: usize = 3;

/// Peak memory a small command may reach, whatever its numeric flags say (KiB).
const MEMORY_BOUND_KIB: u64 = 400 * 1024;

proptest! {
    #![proptest_config(common::proptest_config(12))]

    /// `reward` with any worker count, `correlate` and `compare` with any bootstrap count:
    /// never more threads than cores (plus the spare few), memory bounded.
    #[test]
    fn no_value_inside_a_range_takes_more_threads_or_memory_than_the_machine_has(
        which in 0usize..3,
        workers in 1usize..=1024,
        bootstrap in prop_oneof![0usize..=1000, 90_000usize..=100_000],
    ) {
        let d = tempfile::tempdir().unwrap();
        let cores = swe_eval_core::bounds::cores();
        let rewards = d.path().join("rewards.jsonl");
        let outs = d.path().join("outcomes.jsonl");
        let rows: Vec<_> = (0..40).map(|i| json!({"instance_id": format!("a__x-{i}"), "sample": 0, "similarity": i as f64 / 40.0, "reward": i as f64 / 40.0})).collect();
        write_jsonl(&rewards, &rows);
        outcomes(&outs, "a", 0..40, |i| (i * 7) % 10 < 5);
        let other = d.path().join("other.jsonl");
        outcomes(&other, "a", 0..40, |i| i % 2 == 0);
        let s = |p: &Path| p.to_str().unwrap().to_string();
        let args: Vec<String> = match which {
            0 => vec!["reward".into(), "-d".into(), s(&mini("dataset.jsonl")), "-p".into(), s(&mini("predictions.jsonl")), "-o".into(), s(&d.path().join("r.jsonl")), "-j".into(), workers.to_string()],
            1 => vec!["correlate".into(), "--rewards".into(), s(&rewards), "--results".into(), s(&outs), "--bootstrap".into(), bootstrap.to_string(), "-o".into(), s(&d.path().join("c"))],
            _ => vec!["compare".into(), s(&outs), s(&other), "--bootstrap".into(), bootstrap.to_string(), "-o".into(), s(&d.path().join("cmp"))],
        };
        let (o, threads, hwm) = watched(&args);
        prop_assert!(matches!(o.status.code(), Some(0) | Some(3)), "{args:?}: {}", stderr(&o));
        prop_assert!(threads <= cores + SPARE_THREADS, "{args:?}: {threads} threads on {cores} cores");
        prop_assert!(hwm <= MEMORY_BOUND_KIB, "{args:?}: peak {hwm} KiB");
        if which == 0 && workers > cores {
            let note = format!("-j {workers}: this machine can use {cores} worker threads (its cores); using {cores}");
            prop_assert!(stderr(&o).contains(&note), "{}", stderr(&o));
        }
    }
}

// ---- 3: grade with several models, a run id, duplicate rows: one grade, one set of counts ----

/// A test output in which every required test of `inst` passes (or fails).
fn log_of(inst: &serde_json::Value, pass: bool) -> String {
    let mut s = String::from("+ pytest -rA\n>>>>> Start Test Output\n");
    for t in inst["FAIL_TO_PASS"]
        .as_array()
        .unwrap()
        .iter()
        .chain(inst["PASS_TO_PASS"].as_array().unwrap())
    {
        s += &format!(
            "{} {}\n",
            if pass { "PASSED" } else { "FAILED" },
            t.as_str().unwrap()
        );
    }
    s + ">>>>> End Test Output\n"
}

fn mini_rows() -> Vec<serde_json::Value> {
    std::fs::read_to_string(mini("dataset.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn grade_of_two_models_counts_each_and_takes_no_other_models_or_runs_log() {
    let d = tempfile::tempdir().unwrap();
    let rows = mini_rows();
    let mut preds = Vec::new();
    for (k, inst) in rows.iter().enumerate() {
        for (model, pass) in [("model-a", k < 2), ("model-b", k < 6)] {
            preds.push(json!({"instance_id": inst["instance_id"], "model_name_or_path": model, "model_patch": inst["patch"]}));
            let dir = d
                .path()
                .join("logs/logs/run_evaluation/r1")
                .join(model)
                .join(inst["instance_id"].as_str().unwrap());
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("test_output.txt"), log_of(inst, pass)).unwrap();
        }
    }
    let p = d.path().join("preds.jsonl");
    write_jsonl(&p, &preds);
    let ds = mini("dataset.jsonl");
    let out = d.path().join("out");
    let args = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = [
            "grade",
            "-d",
            ds.to_str().unwrap(),
            "-p",
            p.to_str().unwrap(),
            "--logs",
            d.path().join("logs").to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let o = Command::new(common::bin())
        .args(args(&[]))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    // The closing line counts every prediction, then each model's own summary.
    assert!(err.contains("graded 16 prediction(s) (Official mode) of 2 model(s) and sample(s): 8 resolved, 8 unresolved, 0 error(s), 0 empty patch(es)"), "{err}");
    assert!(
        err.contains("model-a.r1.json: 2 resolved, 6 unresolved"),
        "{err}"
    );
    assert!(
        err.contains("model-b.r1.json: 6 resolved, 2 unresolved"),
        "{err}"
    );
    let results = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    assert_eq!(
        results.matches("\"resolved\":true").count(),
        8,
        "the rows agree"
    );

    // A run id the logs do not hold: bad usage, not another run's logs.
    let o = Command::new(common::bin())
        .args(args(&["--run-id", "r9"]))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--run-id r9: the logs in"),
        "{}",
        stderr(&o)
    );

    // A model whose logs are not there gets no other model's log: an error, named.
    let one = d.path().join("one.jsonl");
    write_jsonl(
        &one,
        &[
            json!({"instance_id": rows[0]["instance_id"], "model_name_or_path": "model-c", "model_patch": rows[0]["patch"]}),
        ],
    );
    let o = run_bin(&[
        "grade",
        "-d",
        ds.to_str().unwrap(),
        "-p",
        one.to_str().unwrap(),
        "--logs",
        d.path().join("logs").to_str().unwrap(),
        "-o",
        d.path().join("out3").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("no log of model model-c; the log folders named after it are of model model-a in run r1, model model-b in run r1"), "{}", stderr(&o));
    let row = std::fs::read_to_string(d.path().join("out3/results.jsonl")).unwrap();
    assert!(
        row.contains("\"category\":\"infra_error\""),
        "every prediction has its row: {row}"
    );

    // Two log rows for one prediction: the second is named and left out, not taken.
    let logs = d.path().join("dup.jsonl");
    write_jsonl(
        &logs,
        &[
            json!({"instance_id": rows[0]["instance_id"], "test_output": log_of(&rows[0], true)}),
            json!({"instance_id": rows[0]["instance_id"], "test_output": log_of(&rows[0], false)}),
        ],
    );
    let o = run_bin(&[
        "grade",
        "-d",
        ds.to_str().unwrap(),
        "-p",
        one.to_str().unwrap(),
        "--logs",
        logs.to_str().unwrap(),
        "-o",
        d.path().join("out4").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("dup.jsonl:2: field `instance_id`: a second log of"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("1 resolved, 0 unresolved"),
        "the first row is kept: {}",
        stderr(&o)
    );
}

// ---- 11: one exit-code rule, stated in every --help ----

#[test]
fn every_help_states_the_exit_codes() {
    for (path, _) in commands() {
        let mut args: Vec<&str> = path.split(' ').skip(1).collect();
        args.push("--help");
        let o = run_bin(&args);
        assert_eq!(o.status.code(), Some(0), "{path} --help");
        let text = stdout(&o).replace('\n', " ");
        assert!(
            text.contains("Exit codes: 0 done; 1 failed")
                && text.contains("2 bad usage")
                && text.contains("3 done, but some inputs or jobs had problems"),
            "{path} --help states no exit codes:\n{}",
            stdout(&o)
        );
    }
}

// ---- 4: a zero timeout is bad usage; a resume re-runs what other limits decided ----

#[test]
fn a_zero_timeout_is_refused_and_a_resume_with_another_timeout_runs_timed_out_verdicts_again() {
    use crate::tasks::{
        docker_answers, fix, run_command, trivial_image, verdicts, write_inputs, Task, PYTEST,
    };
    let d = tempfile::tempdir().unwrap();
    let o = run_bin(&[
        "run",
        "--timeout",
        "0",
        "-o",
        d.path().join("z").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--timeout"), "{}", stderr(&o));
    if !docker_answers(None) {
        return;
    }
    let image = trivial_image();
    // The tests take 4 s: past a 2 s timeout, well within 60 s.
    let tasks = [Task::new("t-slow", "sleep 4", PYTEST, &fix())];
    let (ds, preds) = write_inputs(d.path(), &image, &tasks);
    let out = d.path().join("out");
    let run_id = format!("it-resume-limits-{}", std::process::id());
    let run = |timeout: &str| {
        let o = run_command(&ds, &preds, &out, &run_id, &["-j", "1", "-t", timeout])
            .output()
            .unwrap();
        assert!(
            matches!(o.status.code(), Some(0) | Some(3)),
            "{}",
            stderr(&o)
        );
        let v = verdicts(&out, &run_id).remove(0).1;
        (v, stderr(&o))
    };
    let (v, _) = run("2");
    assert!(v.timed_out && v.timeout_secs == Some(2), "{v:?}");
    // The same limit: the verdict is kept.
    let (again, err) = run("2");
    assert_eq!(again, v, "kept under the same timeout: {err}");
    // Another timeout: the timeout said nothing about the patch, so it runs again.
    let (v, err) = run("60");
    assert!(!v.timed_out && v.resolved, "{v:?}\n{err}");
    assert_eq!(v.timeout_secs, Some(60));
    // A verdict on the patch is kept whatever the timeout.
    let (again, err) = run("30");
    assert_eq!(again, v, "{err}");
}

// ---- 12: defaults go with the rows, not with a file's name ----

#[test]
fn the_mini_rows_under_any_file_name_get_the_mini_settings_and_check() {
    use crate::tasks::{docker_answers, verdicts};
    if !docker_answers(None) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    // The mini benchmark's rows and predictions under names that say nothing about it.
    let ds = d.path().join("rows.jsonl");
    let preds = d.path().join("preds.jsonl");
    std::fs::copy(mini("dataset.jsonl"), &ds).unwrap();
    std::fs::copy(mini("predictions.jsonl"), &preds).unwrap();
    let out = d.path().join("out");
    let (ds, preds, out_s) = (
        ds.to_str().unwrap(),
        preds.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let only = ["-i", "swe-eval-mini__calc-1", "-j", "2"];
    let o = run_bin(&[&["run", "-d", ds, "-p", preds, "-o", out_s][..], &only[..]].concat());
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    // The mini run id, its own timeout, and its check of the bundled predictions.
    assert!(
        stdout(&o).contains("mini benchmark: 3/3 verdicts as expected"),
        "{}",
        stdout(&o)
    );
    let found = verdicts(&out, "mini");
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(
        found
            .iter()
            .all(|(_, v)| v.timeout_secs == Some(swe_eval_core::mini::DEFAULT_TIMEOUT_SECS)),
        "{found:?}"
    );
}

// ---- 11: an unwritable or full output folder is exit 1 everywhere; bounded problem lines ----

/// Every command that writes, with its output at `out` (a folder, or a file in it for
/// `reward`), on small inputs written into `inputs`.
fn writing_commands(inputs: &Path, out: &Path) -> Vec<Vec<String>> {
    let ds = mini("dataset.jsonl");
    let preds = mini("predictions.jsonl");
    let one = inputs.join("one.jsonl");
    let logs = inputs.join("logs.jsonl");
    let rewards = inputs.join("rewards.jsonl");
    let (oa, ob) = (inputs.join("oa.jsonl"), inputs.join("ob.jsonl"));
    let rows = mini_rows();
    write_jsonl(
        &one,
        &[
            json!({"instance_id": rows[0]["instance_id"], "model_name_or_path": "m", "model_patch": rows[0]["patch"]}),
        ],
    );
    write_jsonl(
        &logs,
        &[json!({"instance_id": rows[0]["instance_id"], "test_output": log_of(&rows[0], true)})],
    );
    let n = 12;
    outcomes(&oa, "a", 0..n, |i| i % 2 == 0);
    outcomes(&ob, "a", 0..n, |i| i % 3 == 0);
    let reward_rows: Vec<_> = (0..n)
        .map(|i| json!({"instance_id": format!("a__x-{i}"), "sample": 0, "reward": (i as f64) / 12.0}))
        .collect();
    write_jsonl(&rewards, &reward_rows);
    let runx = inputs.join("runx");
    std::fs::create_dir_all(&runx).unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let (ds, o, preds, one, logs) = (s(&ds), s(out), s(&preds), s(&one), s(&logs));
    let (rewards, oa, ob, runx, r) = (
        s(&rewards),
        s(&oa),
        s(&ob),
        s(&runx),
        s(&out.join("r.jsonl")),
    );
    // Temporary folders hold no spaces: one command a line.
    [
        format!("run -d {ds} -p gold -o {o}"),
        format!("validate -d {ds} -o {o}"),
        format!("spec -d {ds} -o {o}"),
        format!("grade -d {ds} -p {one} --logs {logs} -o {o}"),
        format!("reward -d {ds} -p {preds} -o {r}"),
        format!("correlate --rewards {rewards} --results {oa} -o {o}"),
        format!("compare {oa} {ob} -o {o}"),
        format!("submit {runx} -d {ds} -p {one} --logs {logs} -o {o}"),
    ]
    .iter()
    .map(|line| line.split(' ').map(String::from).collect())
    .collect()
}

/// Folders below `dir` (itself excluded) that hold nothing.
fn empty_folders(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            if std::fs::read_dir(&p).unwrap().next().is_none() {
                found.push(p.clone());
            }
            found.extend(empty_folders(&p));
        }
    }
    found
}

#[test]
fn an_unwritable_or_full_output_folder_fails_every_command_and_leaves_no_empty_folder() {
    let inputs = tempfile::tempdir().unwrap();
    // Unwritable: the output would be a folder inside a regular file.
    let file = inputs.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let out = file.join("out");
    for args in writing_commands(inputs.path(), &out) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run_bin(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("a-file/out"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    // Full: a small filesystem with no room left.
    let Some(fs) = crate::faults_disk::SmallFs::mount(256) else {
        return;
    };
    let _filler = fs.fill_leaving(0);
    let commands = writing_commands(inputs.path(), &out).len();
    for i in 0..commands {
        // Each command its own output folder on the full filesystem.
        let args = writing_commands(inputs.path(), &fs.path().join(format!("o{i}"))).remove(i);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run_bin(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.to_lowercase().contains("no space left"),
            "{args:?}: {err}"
        );
        assert_eq!(
            empty_folders(fs.path()),
            Vec::<PathBuf>::new(),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn problems_cost_at_most_20_lines_and_a_count_in_every_command() {
    let d = tempfile::tempdir().unwrap();
    // 60 rows of a repository no spec knows: each a problem of `spec`.
    let rows: Vec<_> = (0..60)
        .map(|i| {
            let mut r = mini_rows()[0].clone();
            r["repo"] = json!("nobody/nothing");
            r["instance_id"] = json!(format!("nobody__nothing-{i}"));
            r
        })
        .collect();
    let bad = d.path().join("rows.jsonl");
    write_jsonl(&bad, &rows);
    let o = run_bin(&[
        "spec",
        "-d",
        bad.to_str().unwrap(),
        "-o",
        d.path().join("s").to_str().unwrap(),
    ]);
    bounded(&o, 22, "(60 problems in all)");
    // 60 predictions for instances the dataset does not have: each a warning of `run`.
    let unknown: Vec<_> = (0..60)
        .map(|i| json!({"instance_id": format!("nope__x-{i}"), "model_name_or_path": "m", "model_patch": "x"}))
        .collect();
    let preds = d.path().join("unknown.jsonl");
    write_jsonl(&preds, &unknown);
    if !crate::tasks::docker_answers(None) {
        return;
    }
    let o = run_bin(&[
        "run",
        "-d",
        mini("dataset.jsonl").to_str().unwrap(),
        "-p",
        preds.to_str().unwrap(),
        "-o",
        d.path().join("r").to_str().unwrap(),
    ]);
    bounded(&o, 25, "(60 in all)");
}

/// Exit 3, at most `lines` lines on stderr, and the count of the rest said.
fn bounded(o: &Output, lines: usize, count: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    let n = err.lines().count();
    assert!(n <= lines, "{n} lines:\n{err}");
    assert!(err.contains(count), "{err}");
}

// ---- 5: a patch with bytes that are not UTF-8 is refused by file, line and field ----

#[test]
fn a_patch_with_bytes_that_are_not_utf8_is_refused_not_changed() {
    let d = tempfile::tempdir().unwrap();
    let rows = mini_rows();
    let good = json!({"instance_id": rows[0]["instance_id"], "model_name_or_path": "m", "model_patch": rows[0]["patch"]});
    let bad = json!({"instance_id": rows[1]["instance_id"], "model_name_or_path": "m", "model_patch": rows[1]["patch"].as_str().unwrap().replacen("\n+", "\n+YY", 1)});
    let bad = bad.to_string().replacen("YY", "\u{0}", 1).into_bytes();
    // The marker becomes two bytes that are not UTF-8 (0xff 0xfe) inside the patch.
    let at = bad.iter().position(|&b| b == 0).unwrap();
    let bad = [&bad[..at], &[0xffu8, 0xfe][..], &bad[at + 1..]].concat();
    let preds = d.path().join("preds.jsonl");
    std::fs::write(
        &preds,
        [good.to_string().as_bytes(), b"\n", &bad, b"\n"].concat(),
    )
    .unwrap();
    let out = d.path().join("r.jsonl");
    let o = run_bin(&[
        "reward",
        "-d",
        mini("dataset.jsonl").to_str().unwrap(),
        "-p",
        preds.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains("preds.jsonl:2") && err.contains("model_patch") && err.contains("not UTF-8"),
        "{err}"
    );
    let written = std::fs::read_to_string(&out).unwrap();
    assert_eq!(written.lines().count(), 1, "{written}");
    assert!(!written.contains('\u{fffd}'), "{written}");
}

// ---- 7: `needs network` counts only tests whose own failure shows a network error ----

/// A log in which the first `k` required tests of `inst` fail with a network error in their own
/// block and the others have no output (they never ran).
fn network_log(inst: &serde_json::Value, k: usize) -> String {
    let tests: Vec<&str> = inst["FAIL_TO_PASS"]
        .as_array()
        .unwrap()
        .iter()
        .chain(inst["PASS_TO_PASS"].as_array().unwrap())
        .map(|t| t.as_str().unwrap())
        .collect();
    let mut log = String::from("+ pytest -rA\n>>>>> Start Test Output\n=== FAILURES ===\n");
    for t in &tests[..k] {
        let name = t.rsplit("::").next().unwrap();
        log += &format!("_____ {name} _____\nE   urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>\n");
    }
    log += "=== short test summary info ===\n";
    for t in &tests[..k] {
        log += &format!("FAILED {t} - urllib.error.URLError\n");
    }
    log + ">>>>> End Test Output\n"
}

#[test]
fn the_network_label_holds_only_when_each_failing_test_shows_a_network_error() {
    let d = tempfile::tempdir().unwrap();
    let inst = &mini_rows()[0];
    let all = inst["FAIL_TO_PASS"].as_array().unwrap().len()
        + inst["PASS_TO_PASS"].as_array().unwrap().len();
    let preds = d.path().join("p.jsonl");
    write_jsonl(
        &preds,
        &[
            json!({"instance_id": inst["instance_id"], "model_name_or_path": "m", "model_patch": inst["patch"]}),
        ],
    );
    // One failed on the network and the rest never ran: no label. All on the network: the label.
    for (k, label) in [(1, false), (all, true)] {
        let logs = d.path().join(format!("logs{k}.jsonl"));
        write_jsonl(
            &logs,
            &[json!({"instance_id": inst["instance_id"], "test_output": network_log(inst, k)})],
        );
        let out = d.path().join(format!("g{k}"));
        let o = run_bin(&[
            "grade",
            "-d",
            mini("dataset.jsonl").to_str().unwrap(),
            "-p",
            preds.to_str().unwrap(),
            "--logs",
            logs.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let text = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
        let row: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(row["resolved"], false, "{row}");
        assert_eq!(row["needs_network"], label, "{k} of {all}: {row}");
    }
}

// ---- 6: submit --verify checks every file the package holds and every file required ----

#[test]
fn verify_checks_every_file_held_and_every_file_required() {
    let d = tempfile::tempdir().unwrap();
    let inst = &mini_rows()[0];
    let id = inst["instance_id"].as_str().unwrap();
    let one = d.path().join("one.jsonl");
    let logs = d.path().join("logs.jsonl");
    write_jsonl(
        &one,
        &[json!({"instance_id": id, "model_name_or_path": "m", "model_patch": inst["patch"]})],
    );
    write_jsonl(
        &logs,
        &[json!({"instance_id": id, "test_output": log_of(inst, true)})],
    );
    let (run, trajs, pkg) = (
        d.path().join("run"),
        d.path().join("trajs"),
        d.path().join("pkg"),
    );
    std::fs::create_dir_all(&run).unwrap();
    std::fs::create_dir_all(&trajs).unwrap();
    std::fs::write(trajs.join(format!("{id}.md")), "# steps").unwrap();
    let ds = mini("dataset.jsonl");
    let p = |p: &Path| p.to_str().unwrap().to_string();
    let built = run_bin(&[
        "submit",
        &p(&run),
        "-d",
        &p(&ds),
        "-p",
        &p(&one),
        "--logs",
        &p(&logs),
        "--trajs",
        &p(&trajs),
        "-o",
        &p(&pkg),
    ]);
    assert!(
        matches!(built.status.code(), Some(0) | Some(3)),
        "{}",
        stderr(&built)
    );
    let verify = |dir: &Path| run_bin(&["submit", "--verify", &p(dir), "-d", &p(&ds)]);
    let o = verify(&pkg);
    assert!(
        stdout(&o).starts_with("verified "),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    // Each case on a copy: (what is done, exit code, what stderr must name).
    type Change = fn(&Path, &str);
    let cases: [(&str, Change, i32, &str); 6] = [
        (
            "no metadata",
            |d, _| std::fs::remove_file(d.join("metadata.yaml")).unwrap(),
            3,
            "missing: metadata.yaml",
        ),
        (
            "no README",
            |d, _| std::fs::remove_file(d.join("README.md")).unwrap(),
            3,
            "missing: README.md",
        ),
        (
            "no trace",
            |d, id| std::fs::remove_file(d.join(format!("trajs/{id}.md"))).unwrap(),
            3,
            "missing: trajs/ trace of",
        ),
        (
            "a stray trace",
            |d, _| std::fs::write(d.join("trajs/notes.txt"), "x").unwrap(),
            1,
            "trajs/notes.txt: names no predicted instance",
        ),
        (
            "a foreign log folder",
            |d, _| {
                std::fs::create_dir_all(d.join("logs/nobody__x-1")).unwrap();
                std::fs::write(d.join("logs/nobody__x-1/patch.diff"), "x").unwrap();
            },
            1,
            "logs/nobody__x-1: not an instance of the dataset",
        ),
        (
            "an extra result",
            |d, _| std::fs::write(d.join("results/extra.json"), "{}").unwrap(),
            1,
            "results/extra.json: not a file the analysis writes",
        ),
    ];
    for (i, (what, change, code, named)) in cases.into_iter().enumerate() {
        let copy = d.path().join(format!("copy{i}"));
        let o = Command::new("cp")
            .args(["-a", &p(&pkg), &p(&copy)])
            .output()
            .unwrap();
        assert!(o.status.success());
        change(&copy, id);
        let o = verify(&copy);
        assert_eq!(
            o.status.code(),
            Some(code),
            "{what}: {}{}",
            stdout(&o),
            stderr(&o)
        );
        assert!(stderr(&o).contains(named), "{what}: {}", stderr(&o));
        assert!(
            !stdout(&o).starts_with("verified "),
            "{what}: {}",
            stdout(&o)
        );
    }
}

// ---- a run that fails before it runs: exit 2 for the command line's mistakes, no folder ----

fn run_bin_unreachable(args: &[&str]) -> Output {
    Command::new(common::bin())
        .args(args)
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .stdin(Stdio::null())
        .output()
        .expect("swe-eval runs")
}

#[test]
fn a_run_that_fails_before_it_runs_leaves_no_output_folder_and_its_own_input_is_never_overwritten()
{
    let d = tempfile::tempdir().unwrap();
    let path = |p: &str| d.path().join(p).to_str().unwrap().to_string();
    // A --flaky map that is missing, or holds a row that is not JSON: exit 2, no folder.
    std::fs::write(d.path().join("bad-flaky.jsonl"), "{\"instance_id\": \n").unwrap();
    for map in ["missing-flaky.jsonl", "bad-flaky.jsonl"] {
        let out = path(&format!("out-{map}"));
        let o = run_bin_unreachable(&["run", "--flaky", &path(map), "-o", &out]);
        assert_eq!(o.status.code(), Some(2), "{map}: {}", stderr(&o));
        assert!(stderr(&o).contains("--flaky"), "{map}: {}", stderr(&o));
        assert!(stderr(&o).contains(map), "{map}: {}", stderr(&o));
        assert!(!Path::new(&out).exists(), "{map}: no output folder");
    }
    // The engine cannot be reached: nothing ran, and the folder the run made is gone again.
    let out = path("out-no-engine");
    let o = run_bin_unreachable(&["run", "-o", &out]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("nonexistent"), "{}", stderr(&o));
    assert!(
        !Path::new(&out).exists(),
        "no output folder: {}",
        stderr(&o)
    );
    // A folder that was there before stays, with what it held.
    std::fs::create_dir(d.path().join("kept")).unwrap();
    std::fs::write(d.path().join("kept/notes.txt"), "mine").unwrap();
    let o = run_bin_unreachable(&["run", "-o", &path("kept")]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(d.path().join("kept/notes.txt")).unwrap(),
        "mine"
    );
    // The predictions are the file the run would write its per-prediction rows to: refused
    // (exit 2) before the engine is even asked, the file as it was.
    let out = path("own");
    std::fs::create_dir(&out).unwrap();
    let preds = d.path().join("own/r3.predictions.jsonl");
    std::fs::copy(mini("predictions.jsonl"), &preds).unwrap();
    let before = std::fs::read(&preds).unwrap();
    let preds_arg = preds.to_str().unwrap();
    let ds = mini("dataset.jsonl");
    let ds = ds.to_str().unwrap();
    let o = run_bin_unreachable(&[
        "run", "-d", ds, "-p", preds_arg, "--run-id", "r3", "-o", &out,
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("r3.predictions.jsonl") && err.contains("--run-id"),
        "{err}"
    );
    assert!(
        !err.contains("nonexistent"),
        "refused before the engine: {err}"
    );
    assert_eq!(std::fs::read(&preds).unwrap(), before);
    // A run id a live process holds: refused (exit 2) before the engine is asked, so before
    // any build; the holder's lock is left as it is.
    let held = swe_eval::runner::Layout::new(Path::new(&out), "busy");
    std::fs::create_dir_all(held.run_dir()).unwrap();
    std::fs::write(held.lock_path(), swe_eval::owner::owner_id()).unwrap();
    let o = run_bin_unreachable(&["run", "--run-id", "busy", "-o", &out]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("run `busy` is in use by another swe-eval process"),
        "{err}"
    );
    assert!(
        !err.contains("nonexistent"),
        "refused before the engine: {err}"
    );
    assert!(held.lock_path().is_file());
    // The re-run the message suggests (another run id) passes that check: it meets the engine.
    let o = run_bin_unreachable(&[
        "run", "-d", ds, "-p", preds_arg, "--run-id", "r4", "-o", &out,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("nonexistent"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&preds).unwrap(), before);
}
