//! `swe-eval bench grade`: how long parsing and grading saved test logs takes. Loads the
//! dataset, predictions and logs once (timed apart), then parses and grades every log
//! `--repeat` times in memory and reports the best and median pass.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::cli::CliResult;
use crate::orchestrate::{ending, Troubles};
use swe_eval_core::report::{grade_all, load_inputs, read_logs, SavedLogs};

const SHARED: &str = "../shared/datasets";

/// `swe-eval bench grade`: what to parse and grade, and how often.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Dataset rows (default: the shared partial Verified dataset).
    #[arg(long, short = 'd')]
    pub dataset: Option<PathBuf>,
    /// Predictions (default: the shared pydantic-deep run).
    #[arg(long, short = 'p')]
    pub predictions: Option<String>,
    /// Saved logs, as for `swe-eval grade` (default: that run's 399 official test outputs).
    #[arg(long)]
    pub logs: Option<PathBuf>,
    /// Timed passes over all logs [allowed: 1 to 1000].
    #[arg(long, default_value_t = 5, value_parser = crate::cli::values::bench(swe_eval_core::bounds::BENCH_PASSES))]
    pub repeat: usize,
    /// Also write the figures as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Loads the inputs once, then parses and grades every log `--repeat` times and prints the figures.
pub fn run(args: Args) -> CliResult {
    let run_dir = format!("{SHARED}/predictions/pydantic-deep_minimax-m2.5");
    let dataset = args.dataset.unwrap_or_else(|| {
        PathBuf::from(format!(
            "{SHARED}/partial-verified/swebench_verified_partial.jsonl"
        ))
    });
    let predictions = args
        .predictions
        .unwrap_or_else(|| format!("{run_dir}/all_preds.jsonl"));
    let logs_path = args
        .logs
        .unwrap_or_else(|| PathBuf::from(format!("{run_dir}/instance_test_outputs.jsonl")));

    let t = Instant::now();
    let mut problems = Vec::new();
    let (ds, preds) = load_inputs(
        swe_eval_core::dataset::load_dataset(&dataset)?,
        &predictions,
        &mut problems,
    )?;
    let logs = SavedLogs::open(&logs_path)?;
    let saved = read_logs(&preds, &predictions, &logs, None, &mut problems);
    let load = t.elapsed();
    let log_bytes: usize = saved
        .iter()
        .map(|s| match s {
            swe_eval_core::report::SavedLog::Output(o) => o.len(),
            _ => 0,
        })
        .sum();

    let mut passes: Vec<Duration> = Vec::new();
    let mut graded = 0;
    for _ in 0..args.repeat.max(1) {
        let mut sink = Vec::new();
        let t = Instant::now();
        let verdicts = grade_all(&ds, &preds, &saved, &mut sink);
        passes.push(t.elapsed());
        graded = verdicts.iter().filter(|v| v.tests.is_some()).count();
    }
    passes.sort();
    let best = passes[0];
    let median = passes[passes.len() / 2];
    println!(
        "grade: {} predictions, {graded} logs parsed and graded ({:.1} MB), load {:.0} ms; parse+grade best {:.1} ms, median {:.1} ms ({:.0} us per log) over {} passes",
        preds.len(),
        log_bytes as f64 / 1e6,
        load.as_secs_f64() * 1e3,
        best.as_secs_f64() * 1e3,
        median.as_secs_f64() * 1e3,
        best.as_secs_f64() * 1e6 / graded.max(1) as f64,
        passes.len()
    );
    if let Some(path) = args.json {
        let figures = serde_json::json!({
            "predictions": preds.len(),
            "graded_logs": graded,
            "log_bytes": log_bytes,
            "load_ms": load.as_secs_f64() * 1e3,
            "parse_grade_best_ms": best.as_secs_f64() * 1e3,
            "parse_grade_median_ms": median.as_secs_f64() * 1e3,
            "passes": passes.len(),
        });
        swe_eval_core::fsutil::write_json_atomic(&path, &figures)?;
    }
    crate::cli::print_problems("", &problems);
    Ok(ending(&Troubles::of_inputs(problems.len())))
}
