//! Best of n: with several samples per instance, how often does picking the sample with the
//! highest score give a resolved prediction, against a random pick, the first sample, and an
//! oracle that knows the outcome (pass@n)?

use std::collections::BTreeMap;

use serde::Serialize;

/// Resolve rates for one n, over the instances that have at least n samples, each taking its
/// first n samples (by sample number).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BestOfN {
    /// How many samples each instance contributes.
    pub n: usize,
    /// Instances with at least n samples.
    pub instances: usize,
    /// Pick the highest score; a tie goes to the lowest sample number (as a trainer that
    /// keeps the first best candidate would).
    pub max_score: f64,
    /// Pick the highest score, ties broken uniformly at random (expected value).
    pub max_score_ties_random: f64,
    /// A uniformly random sample (expected value: the mean resolve rate of the n samples).
    pub random: f64,
    /// Sample 0 (the first of the n).
    pub first: f64,
    /// At least one of the n samples is resolved (pass@n with n samples).
    pub oracle: f64,
}

/// One scored, judged sample.
#[derive(Debug, Clone, Copy)]
pub struct Sample<'a> {
    /// The instance.
    pub instance_id: &'a str,
    /// The sample number.
    pub sample: u32,
    /// The score the pick is made by.
    pub score: f64,
    /// The executed verdict.
    pub resolved: bool,
}

/// Best of n for n = 1..=max samples per instance. Empty when no instance has a sample.
pub fn best_of_n(samples: &[Sample<'_>]) -> Vec<BestOfN> {
    let mut by: BTreeMap<&str, Vec<&Sample<'_>>> = BTreeMap::new();
    for s in samples {
        by.entry(s.instance_id).or_default().push(s);
    }
    for v in by.values_mut() {
        v.sort_by_key(|s| s.sample);
    }
    let max_n = by.values().map(Vec::len).max().unwrap_or(0);
    (1..=max_n)
        .map(|n| {
            let mut acc = [0.0f64; 5];
            let mut m = 0usize;
            for group in by.values().filter(|g| g.len() >= n) {
                let g = &group[..n];
                m += 1;
                let best = g.iter().map(|s| s.score).fold(f64::NEG_INFINITY, f64::max);
                let top: Vec<_> = g.iter().filter(|s| s.score == best).collect();
                let hits = |it: &mut dyn Iterator<Item = bool>| it.filter(|&r| r).count() as f64;
                acc[0] += top[0].resolved as u8 as f64;
                acc[1] += hits(&mut top.iter().map(|s| s.resolved)) / top.len() as f64;
                acc[2] += hits(&mut g.iter().map(|s| s.resolved)) / n as f64;
                acc[3] += g[0].resolved as u8 as f64;
                acc[4] += g.iter().any(|s| s.resolved) as u8 as f64;
            }
            let rate = |x: f64| x / m as f64;
            BestOfN {
                n,
                instances: m,
                max_score: rate(acc[0]),
                max_score_ties_random: rate(acc[1]),
                random: rate(acc[2]),
                first: rate(acc[3]),
                oracle: rate(acc[4]),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_go_to_the_lowest_sample() {
        let s = |sample, score, resolved| Sample {
            instance_id: "a",
            sample,
            score,
            resolved,
        };
        // Sample 1 and 2 tie at the top; 1 is unresolved, 2 resolved.
        let rows = [s(2, 0.9, true), s(0, 0.1, true), s(1, 0.9, false)];
        let b = best_of_n(&rows);
        assert_eq!(b.len(), 3);
        assert_eq!(b[0].max_score, 1.0, "n=1 has only sample 0");
        assert_eq!(b[2].max_score, 0.0, "tie between 1 and 2 goes to 1");
        assert_eq!(b[2].max_score_ties_random, 0.5);
        assert!((b[2].random - 2.0 / 3.0).abs() < 1e-15);
        assert_eq!(b[2].first, 1.0);
        assert_eq!(b[2].oracle, 1.0);
    }
}
