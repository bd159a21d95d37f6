//! `swe-eval bench reward`: the whole unified-diff reward against plain Python on the same
//! files ([`crate::bench::measure_reward`]); prints the figures: the steps, the speed-up, the
//! agreement of the two, peak memory, and the pathological pairs.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;

use crate::bench::{measure_reward, PythonBaseline, RewardFigures, RewardOptions};
use crate::cli::{CliResult, Ending};

/// `swe-eval bench reward`: which predictions, how often, and the Python baseline.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Dataset (default: the shared partial SWE-bench Verified).
    #[arg(long, short = 'd')]
    pub dataset: Option<PathBuf>,
    /// Predictions (default: the shared 486 pydantic-deep predictions).
    #[arg(long, short = 'p')]
    pub predictions: Option<PathBuf>,
    /// Timed runs of the Rust side; the best and the median are reported [allowed: 1 to 1000].
    #[arg(long, default_value_t = 5, value_parser = crate::cli::values::bench(swe_eval_core::bounds::BENCH_PASSES))]
    pub iterations: usize,
    /// Python interpreter for the baseline.
    #[arg(long, default_value = "python3")]
    pub python: String,
    /// Skip the Python baseline.
    #[arg(long)]
    pub no_python: bool,
    /// Size of each pathological patch, in KB (0 skips it) [allowed: 0 to 10240].
    #[arg(long, default_value_t = 300, value_parser = crate::cli::values::bench(swe_eval_core::bounds::BENCH_PATCH_KB))]
    pub pathological_kb: usize,
    /// Worker threads [default: every core] [allowed: 1 to 1024]; at most the cores are used.
    #[arg(long, short = 'j', visible_alias = "jobs", value_parser = crate::cli::values::workers())]
    pub workers: Option<usize>,
    /// Also write the figures as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Times both implementations on the same files, checks they agree, and prints the figures.
pub fn run(args: Args) -> CliResult {
    let f = measure_reward(&RewardOptions {
        dataset: args.dataset,
        predictions: args.predictions,
        iterations: args.iterations,
        python: (!args.no_python).then_some(args.python),
        pathological_kb: args.pathological_kb,
        workers: args.workers,
    })?;
    let doc = print(&f);
    if let Some(path) = &args.json {
        swe_eval_core::fsutil::write_json_atomic(path, &doc)?;
    }
    Ok(Ending::Clean)
}

/// Prints the figures; returns them as the `--json` document.
fn print(f: &RewardFigures) -> serde_json::Value {
    if let Some(note) = f.workers.note("worker threads", "its cores") {
        eprintln!("note: {note}");
    }
    let (best, median) = (f.best(), f.median());
    let b = f.runs.first().copied().unwrap_or_default();
    println!(
        "rust:   best run: load dataset {:.1} ms, load predictions {:.1} ms, rewards {:.1} ms, write {:.1} ms",
        secs(b.load_dataset) * 1e3,
        secs(b.load_predictions) * 1e3,
        secs(b.rewards) * 1e3,
        secs(b.write) * 1e3
    );
    println!(
        "rust:   {} rewards, end to end best {:.1} ms, median {:.1} ms ({} threads, {} runs)",
        f.rows,
        secs(best) * 1e3,
        secs(median) * 1e3,
        f.threads,
        f.runs.len()
    );
    let command_best = f.command_runs.first().copied();
    if let Some(c) = command_best {
        println!(
            "rust:   `swe-eval reward` as a process: best {:.1} ms, median {:.1} ms",
            secs(c) * 1e3,
            secs(f.command_runs[f.command_runs.len() / 2]) * 1e3
        );
    }
    let slowest: Vec<String> = f
        .slowest
        .iter()
        .map(|(d, id)| format!("{id} {:.1} ms", secs(*d) * 1e3))
        .collect();
    println!(
        "rust:   one core, rewards only: {:.1} ms; slowest: {}",
        secs(f.serial) * 1e3,
        slowest.join(", ")
    );

    let python = match &f.python {
        PythonBaseline::Ran(py) => {
            let wall = secs(py.wall);
            let speedup = wall / secs(best);
            let speedup_command = command_best.map(|c| wall / secs(c));
            println!(
                "python: {} rewards, wall {wall:.2} s (reward computation alone {:.2} s)",
                py.rows, py.compute_secs
            );
            println!(
                "speed-up: {speedup:.0}x end to end in process (python wall / rust best), {:.0}x as processes (python wall / `swe-eval reward` wall), {:.0}x against python's computation alone; max |rust - python| = {:e} over {} rows",
                speedup_command.unwrap_or(f64::NAN),
                py.compute_secs / secs(best),
                py.max_abs_diff,
                py.rows.min(f.rows)
            );
            json!({"wall_s": wall, "compute_s": py.compute_secs, "rows": py.rows,
                "speedup_end_to_end": speedup, "speedup_as_processes": speedup_command,
                "speedup_vs_compute": py.compute_secs / secs(best), "max_abs_diff": py.max_abs_diff})
        }
        PythonBaseline::Failed { stderr } => {
            eprintln!("python baseline failed: {stderr}");
            serde_json::Value::Null
        }
        PythonBaseline::NotRun { python, source } => {
            eprintln!("python baseline not run ({python}): {source}");
            serde_json::Value::Null
        }
        PythonBaseline::Skipped => serde_json::Value::Null,
    };

    let patho = match &f.pathological {
        Some(p) => {
            println!(
                "pathological: two patches of {} and {} KB sharing little: similarity {:.4} in {:.2} s (one core)",
                p.pred_bytes / 1024,
                p.oracle_bytes / 1024,
                p.similarity,
                secs(p.time)
            );
            println!(
                "pathological: a {} KB patch against itself with one character in 20 changed: similarity {:.4} in {:.2} s (one core)",
                p.pred_bytes / 1024,
                p.near_similarity,
                secs(p.near_time)
            );
            json!({"pred_bytes": p.pred_bytes, "oracle_bytes": p.oracle_bytes,
                "similarity": p.similarity, "seconds": secs(p.time),
                "near_copy": {"similarity": p.near_similarity, "seconds": secs(p.near_time)}})
        }
        None => serde_json::Value::Null,
    };

    println!(
        "peak memory (VmHWM): {} MB",
        f.peak_rss_kib
            .map_or("?".into(), |kb| format!("{:.1}", kb as f64 / 1024.0))
    );
    json!({
        "rows": f.rows, "threads": f.threads, "rust_one_core_rewards_s": secs(f.serial),
        "rust_best_s": secs(best), "rust_median_s": secs(median),
        "command_best_s": command_best.map(secs),
        "rust_best_steps_s": {"load_dataset": secs(b.load_dataset), "load_predictions": secs(b.load_predictions),
            "rewards": secs(b.rewards), "write": secs(b.write)},
        "python": python, "pathological": patho, "peak_rss_kb": f.peak_rss_kib,
    })
}
