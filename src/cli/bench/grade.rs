//! `swe-eval bench grade`: how long parsing and grading saved test logs takes
//! ([`crate::bench::measure_grade`]); prints the figures and the inputs' problems.

use std::path::PathBuf;

use crate::bench::{measure_grade, GradeOptions};
use crate::cli::CliResult;
use crate::orchestrate::{ending, Troubles};

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
    let f = measure_grade(&GradeOptions {
        dataset: args.dataset,
        predictions: args.predictions,
        logs: args.logs,
        repeat: args.repeat,
    })?;
    let (best, median) = (f.best(), f.median());
    println!(
        "grade: {} predictions, {} logs parsed and graded ({:.1} MB), load {:.0} ms; parse+grade best {:.1} ms, median {:.1} ms ({:.0} us per log) over {} passes",
        f.predictions,
        f.graded,
        f.log_bytes as f64 / 1e6,
        f.load.as_secs_f64() * 1e3,
        best.as_secs_f64() * 1e3,
        median.as_secs_f64() * 1e3,
        best.as_secs_f64() * 1e6 / f.graded.max(1) as f64,
        f.passes.len()
    );
    if let Some(path) = args.json {
        let figures = serde_json::json!({
            "predictions": f.predictions,
            "graded_logs": f.graded,
            "log_bytes": f.log_bytes,
            "load_ms": f.load.as_secs_f64() * 1e3,
            "parse_grade_best_ms": best.as_secs_f64() * 1e3,
            "parse_grade_median_ms": median.as_secs_f64() * 1e3,
            "passes": f.passes.len(),
        });
        swe_eval_core::fsutil::write_json_atomic(&path, &figures)?;
    }
    crate::cli::print_problems("", &f.problems);
    Ok(ending(&Troubles::of_inputs(f.problems.len())))
}
