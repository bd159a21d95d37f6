//! `swe-eval bench correlate`: the whole study timed on synthetic predictions
//! ([`crate::bench::measure_correlate`]); target: 100,000 predictions in under one second with
//! the default 1,000 bootstrap resamples.

use std::path::PathBuf;

use crate::bench::{measure_correlate, CorrelateOptions};
use crate::cli::{CliResult, Ending};
use swe_eval_core::study;

/// `swe-eval bench correlate`: the study's statistics timed on synthetic predictions.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Synthetic predictions (5 samples per instance, 40 repositories, 4 difficulties)
    /// [allowed: 2 to 1000000].
    #[arg(long, default_value_t = 100_000, value_parser = crate::cli::values::bench(swe_eval_core::bounds::BENCH_PREDICTIONS))]
    pub n: usize,
    /// Bootstrap resamples [allowed: 0 to 100000].
    #[arg(long, default_value_t = 1000, value_parser = crate::cli::values::bootstrap())]
    pub bootstrap: usize,
    /// Seed of the synthetic predictions and the bootstrap.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Also write the outputs (JSON, CSV, plots, reports) to this folder and time it.
    #[arg(long, value_name = "DIR")]
    pub write: Option<PathBuf>,
    /// Write the figures as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Times the study (and, with an output folder, its files) and prints the figures.
pub fn run(args: Args) -> CliResult {
    let f = measure_correlate(&CorrelateOptions {
        n: args.n,
        bootstrap: args.bootstrap,
        seed: args.seed,
        write: args.write.clone(),
    })?;
    let summary = &f.summary;
    println!(
        "correlate on {} synthetic predictions ({} instances, {} repositories), {} bootstrap \
         resamples, {} threads",
        summary.n,
        summary.n_instances,
        summary.similarity.per_repo.len(),
        args.bootstrap,
        f.threads
    );
    println!(
        "  analyze (all statistics, overall + per repo + per difficulty, both scores): {:.3} s \
         (target < 1 s: {})",
        f.analyze_secs,
        if f.analyze_secs < 1.0 {
            "met"
        } else {
            "NOT met"
        }
    );
    let overall = &summary.similarity.overall;
    println!(
        "  similarity AUROC {}, {}",
        overall
            .auroc
            .map_or_else(|| "n/a".to_string(), |a| format!("{a:.4}")),
        study::interval_words(overall.auroc_ci95).unwrap_or_else(|| match overall.reading() {
            study::Reading::Read(_) => "no interval (--bootstrap 0)".to_string(),
            _ => "no interval (too few predictions, or every pair tied)".to_string(),
        })
    );
    if let Some((files, secs)) = f.written {
        println!("  write {files} files (JSON, CSV, 5 SVG + PNG, reports): {secs:.3} s");
    }
    if let Some(path) = &args.json {
        let v = serde_json::json!({
            "n": summary.n,
            "bootstrap": args.bootstrap,
            "threads": f.threads,
            "analyze_seconds": f.analyze_secs,
            "write_seconds": f.written.map(|(_, secs)| secs),
        });
        swe_eval_core::fsutil::write_json_atomic(path, &v)?;
    }
    Ok(Ending::Clean)
}
