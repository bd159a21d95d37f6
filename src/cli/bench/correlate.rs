//! `swe-eval bench correlate`: the whole study (every statistic, per repository and per
//! difficulty, bootstrap intervals, best of n) on synthetic predictions; target: 100,000
//! predictions in under one second with the default 1,000 bootstrap resamples.

use std::path::PathBuf;
use std::time::Instant;

use crate::cli::{CliResult, Ending};
use swe_eval_core::study::{self, Joined, Observation, Options};

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

/// A tiny generator for reproducible synthetic data (xorshift64*).
struct Gen(u64);

impl Gen {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Synthetic observations: each instance has a difficulty that sets its resolve chance; the
/// similarity leans higher when resolved, is rounded to 1e-3 (so ties occur, as in real data),
/// and 5% of predictions are malformed (reward -1).
pub fn synthetic(n: usize, seed: u64) -> Vec<Observation> {
    const DIFFS: [&str; 4] = ["<15 min fix", "15 min - 1 hour", "1-4 hours", ">4 hours"];
    let mut g = Gen(seed.wrapping_mul(2).wrapping_add(0x9E37_79B9_7F4A_7C15) | 1);
    (0..n)
        .map(|i| {
            let inst = i / 5;
            let d = inst % 4;
            let p = [0.7, 0.45, 0.2, 0.05][d];
            let resolved = g.unit() < p;
            let raw =
                (0.45 * g.unit() + 0.55 * g.unit() * g.unit() + if resolved { 0.25 } else { 0.0 })
                    .min(1.0);
            let similarity = (raw * 1000.0).round() / 1000.0;
            let malformed = g.unit() < 0.05;
            Observation {
                instance_id: format!("org{0}__repo{0}-{inst}", inst % 40),
                sample: (i % 5) as u32,
                repo: format!("org{0}/repo{0}", inst % 40),
                difficulty: Some(DIFFS[d].to_string()),
                similarity,
                reward: if malformed { -1.0 } else { similarity },
                format: Some(if malformed { "unparsable" } else { "ok" }.to_string()),
                outcome: study::Outcome::of_resolved(resolved),
            }
        })
        .collect()
}

/// Times the study (and, with an output folder, its files) and prints the figures.
pub fn run(args: Args) -> CliResult {
    let joined = Joined {
        observations: synthetic(args.n, args.seed),
        ..Default::default()
    };
    let opts = Options {
        bootstrap: args.bootstrap,
        seed: args.seed,
        ..Options::default()
    };
    let threads = rayon::current_num_threads();
    let t = Instant::now();
    let summary = study::analyze(&joined, &opts);
    let analyze_s = t.elapsed().as_secs_f64();
    println!(
        "correlate on {} synthetic predictions ({} instances, {} repositories), {} bootstrap \
         resamples, {threads} threads",
        summary.n,
        summary.n_instances,
        summary.similarity.per_repo.len(),
        args.bootstrap
    );
    println!(
        "  analyze (all statistics, overall + per repo + per difficulty, both scores): {analyze_s:.3} s \
         (target < 1 s: {})",
        if analyze_s < 1.0 { "met" } else { "NOT met" }
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
    let mut write_s = None;
    if let Some(dir) = &args.write {
        let t = Instant::now();
        let w = study::write_study(dir, &summary, &joined.observations, &Default::default())?;
        let s = t.elapsed().as_secs_f64();
        println!(
            "  write {} files (JSON, CSV, 5 SVG + PNG, reports): {s:.3} s",
            w.files.len()
        );
        write_s = Some(s);
    }
    if let Some(path) = &args.json {
        let v = serde_json::json!({
            "n": summary.n,
            "bootstrap": args.bootstrap,
            "threads": threads,
            "analyze_seconds": analyze_s,
            "write_seconds": write_s,
        });
        swe_eval_core::fsutil::write_json_atomic(path, &v)?;
    }
    Ok(Ending::Clean)
}
