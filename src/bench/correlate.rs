//! `bench correlate`: the whole study (every statistic, per repository and per difficulty,
//! bootstrap intervals, best of n) on synthetic predictions; target: 100,000 predictions in
//! under one second with the default 1,000 bootstrap resamples.

use std::path::PathBuf;
use std::time::Instant;

use super::BenchError;
use swe_eval_core::study::{self, Joined, Observation, Options, Summary};

/// What `bench correlate` times.
#[derive(Debug, Clone)]
pub struct CorrelateOptions {
    /// Synthetic predictions (5 samples per instance, 40 repositories, 4 difficulties).
    pub n: usize,
    /// Bootstrap resamples.
    pub bootstrap: usize,
    /// Seed of the synthetic predictions and the bootstrap.
    pub seed: u64,
    /// Also write the study's files to this folder, timed.
    pub write: Option<PathBuf>,
}

/// What `bench correlate` measured.
#[derive(Debug, Clone)]
pub struct CorrelateFigures {
    /// The study of the synthetic predictions.
    pub summary: Summary,
    /// The threads it ran on.
    pub threads: usize,
    /// Seconds the study took.
    pub analyze_secs: f64,
    /// With a folder: the files written and the seconds that took.
    pub written: Option<(usize, f64)>,
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
fn synthetic(n: usize, seed: u64) -> Vec<Observation> {
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

/// Times the study of `opts.n` synthetic predictions (and, with a folder, its files).
pub fn measure_correlate(opts: &CorrelateOptions) -> Result<CorrelateFigures, BenchError> {
    let joined = Joined {
        observations: synthetic(opts.n, opts.seed),
        ..Default::default()
    };
    let study_opts = Options {
        bootstrap: opts.bootstrap,
        seed: opts.seed,
        ..Options::default()
    };
    let threads = rayon::current_num_threads();
    let t = Instant::now();
    let summary = study::analyze(&joined, &study_opts);
    let analyze_secs = t.elapsed().as_secs_f64();
    let written = match &opts.write {
        Some(dir) => {
            let t = Instant::now();
            let w = study::write_study(dir, &summary, &joined.observations, &Default::default())?;
            Some((w.files.len(), t.elapsed().as_secs_f64()))
        }
        None => None,
    };
    Ok(CorrelateFigures {
        summary,
        threads,
        analyze_secs,
        written,
    })
}
