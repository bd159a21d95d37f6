//! What a comparison finds, as `summary.json` carries it: the [`Summary`] of every run, pair
//! and group of repeated runs, with the [`Options`] it was computed with.

use std::collections::BTreeMap;

use serde::Serialize;

/// The version of summary.json's layout; raised when a field changes meaning or goes away.
pub const FORMAT_VERSION: u32 = 1;

/// Settings of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Options {
    /// Bootstrap resamples for the intervals of differences (0: none).
    pub bootstrap: usize,
    /// Seed of the bootstrap: the same seed gives the same intervals.
    pub seed: u64,
    /// Groups of repeated runs of one system: (group name, run names).
    pub repeats: Vec<(String, Vec<String>)>,
    /// The pairs to compare, as (A, B) run names (B minus A); empty: every pair, in argument
    /// order (the later run is B).
    pub pairs: Vec<(String, String)>,
    /// The user asked for the comparison over the instances both runs of a pair have: the
    /// instances left out are then stated but are not a problem (see
    /// [`Summary::coverage_problems`]).
    pub intersection: bool,
    /// The flaky map given (`--flaky`, from `swe-eval validate`), if any. summary.json names
    /// only its file (as `flaky_map`): `flaky` there says what came of its rows.
    #[serde(rename = "flaky_map", serialize_with = "map_source")]
    pub flaky: Option<crate::report::FlakyMap>,
    /// Leave the instances the map calls flaky out of every statistic (`--exclude-flaky`).
    pub exclude_flaky: bool,
}

fn map_source<S: serde::Serializer>(
    map: &Option<crate::report::FlakyMap>,
    s: S,
) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&map.as_ref().map(|m| &m.source), s)
}

/// What the flaky map says of the compared instances.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlakyStats {
    /// The map.
    pub map: std::path::PathBuf,
    /// The instances of any run compared.
    pub n_compared: usize,
    /// How many of them the map has a row for (were validated).
    pub n_validated: usize,
    /// How many of them the map calls flaky.
    pub n_flaky: usize,
    /// Those instances, sorted.
    pub instances: Vec<String>,
    /// True when they were left out of every statistic (`--exclude-flaky`).
    pub excluded: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            bootstrap: 5000,
            seed: 0,
            repeats: Vec::new(),
            pairs: Vec::new(),
            intersection: false,
            flaky: None,
            exclude_flaky: false,
        }
    }
}

/// Why runs could not be compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompareError {
    /// A bad request: an unknown run name, a run in a pair with itself, fewer than two runs,
    /// a bootstrap count out of its range (bad usage).
    #[error("{0}")]
    Request(String),
    /// Two runs of a pair share no instance: there is nothing to pair (the input yields
    /// nothing to compute).
    #[error("{0}")]
    NoOverlap(String),
}

impl crate::failure::Classify for CompareError {
    fn kind(&self) -> crate::failure::ErrorKind {
        match self {
            CompareError::Request(_) => crate::failure::ErrorKind::Usage,
            CompareError::NoOverlap(_) => crate::failure::ErrorKind::NothingComputable,
        }
    }
}

/// pass@k over the instances that have at least k samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PassAtK {
    /// The k of pass@k.
    pub k: usize,
    /// Instances with at least k samples, over which the value is averaged.
    pub instances: usize,
    /// pass@k, 0..1.
    pub value: f64,
}

/// One run on its own.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunStats {
    /// The run's name (`NAME=` of its argument, else derived from its path: the run id or the
    /// file's stem).
    pub name: String,
    /// The file or folder the run was read from.
    pub source: String,
    /// Instances with at least one prediction.
    pub n_instances: usize,
    /// Predictions (samples of all instances).
    pub n_predictions: usize,
    /// Fewest samples of an instance.
    pub min_samples: usize,
    /// Most samples of an instance.
    pub max_samples: usize,
    /// Predictions resolved.
    pub n_resolved: usize,
    /// Predictions without a test verdict (counted unresolved).
    pub n_no_verdict: usize,
    /// [`RunStats::n_no_verdict`] by reason (`error`, `empty_patch`, `missing_from_run`, ...).
    pub no_verdict_by_reason: BTreeMap<String, usize>,
    /// The resolve rate; with several samples per instance, pass@1 (the mean over instances of
    /// the share of samples resolved).
    pub resolve_rate: Option<f64>,
    /// The 95% interval of `resolve_rate` (see [`Methods::rate_interval`]).
    pub ci95: Option<[f64; 2]>,
    /// How `ci95` was computed.
    pub ci_method: &'static str,
    /// pass@k for k = 1 up to the most samples of an instance (one sample: pass@1 only).
    pub pass_at_k: Vec<PassAtK>,
    /// Mean similarity over its predictions with a reward (`--rewards`).
    pub mean_similarity: Option<f64>,
    /// Predictions with a similarity in `--rewards`: how many `mean_similarity` averages.
    pub n_with_similarity: usize,
}

/// A group of repeated runs of one system.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RepeatStats {
    /// The group's name (`--repeat NAME=RUN,RUN,...`).
    pub name: String,
    /// Its runs, by name.
    pub runs: Vec<String>,
    /// Each run's resolve rate (pass@1), in `runs` order.
    pub rates: Vec<f64>,
    /// Mean of `rates`.
    pub mean: f64,
    /// The sample standard deviation of the rates (n - 1); none with one run.
    pub sd: Option<f64>,
    /// The population standard deviation (n).
    pub sd_population: f64,
    /// The lowest rate.
    pub min: f64,
    /// The highest rate.
    pub max: f64,
    /// max - min.
    pub range: f64,
    /// Instances every run of the group has.
    pub n_instances: usize,
    /// Of those, instances resolved in every prediction of the group.
    pub n_always: usize,
    /// Instances resolved in no prediction of the group.
    pub n_never: usize,
    /// Instances resolved in some predictions of the group but not all.
    pub n_unstable: usize,
    /// Those unstable instances, by id.
    pub unstable: Vec<String>,
    /// pass@k over all the group's predictions of those instances (runs as samples).
    pub pass_at_k: Vec<PassAtK>,
}

/// A difference between two runs over some instances.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diff {
    /// Instances over which the difference is taken (in both runs).
    pub n: usize,
    /// Run A's resolve rate over those instances.
    pub rate_a: f64,
    /// Run B's resolve rate over those instances.
    pub rate_b: f64,
    /// rate_b - rate_a.
    pub difference: f64,
    /// Paired percentile bootstrap 95% interval of the difference.
    pub ci95: Option<[f64; 2]>,
    /// McNemar's exact p-value; only when both runs have one sample per instance.
    pub mcnemar_p: Option<f64>,
    /// Instances resolved in B but not A (with several samples: whose rate rose).
    pub n_to_resolved: usize,
    /// Instances resolved in A but not B (with several samples: whose rate fell).
    pub n_to_unresolved: usize,
}

/// How the similarity reward moved between the two runs (`--rewards` for both).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimilarityChange {
    /// Instances with a similarity in both runs (mean over samples).
    pub n: usize,
    /// Run A's mean similarity over those instances.
    pub mean_a: f64,
    /// Run B's mean similarity over those instances.
    pub mean_b: f64,
    /// Mean of the per-instance differences (B - A).
    pub mean_difference: f64,
    /// Paired bootstrap 95% interval of `mean_difference`.
    pub ci95: Option<[f64; 2]>,
    /// Mean per-instance difference over the instances that flipped to resolved.
    pub mean_difference_to_resolved: Option<f64>,
    /// Mean per-instance difference over the instances that flipped to unresolved.
    pub mean_difference_to_unresolved: Option<f64>,
    /// Instances whose similarity changed at all (patches differ).
    pub n_changed: usize,
}

/// One pair of runs, paired by instance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairStats {
    /// Run A's name (the baseline).
    pub a: String,
    /// Run B's name (the difference is B minus A).
    pub b: String,
    /// The pair's answer in one sentence.
    pub headline: String,
    /// Instances in A only (left out of the pair).
    pub n_only_a: usize,
    /// Instances in B only.
    pub n_only_b: usize,
    /// The first few of the instances in A only, by id (at most 5).
    pub only_a: Vec<String>,
    /// The first few of the instances in B only, by id (at most 5).
    pub only_b: Vec<String>,
    /// The difference over every paired instance.
    #[serde(flatten)]
    pub overall: Diff,
    /// Both runs have one sample per instance (flips and McNemar are about verdicts).
    pub single_sample: bool,
    /// Instances resolved in B but not A, by id.
    pub to_resolved: Vec<String>,
    /// Instances resolved in A but not B, by id.
    pub to_unresolved: Vec<String>,
    /// Flips to resolved on instances unstable across repeated runs (`--repeat`); the
    /// difference splits as `difference = difference_unstable + difference_stable`.
    pub n_to_resolved_unstable: usize,
    /// Flips to unresolved on unstable instances.
    pub n_to_unresolved_unstable: usize,
    /// The part of `difference` the unstable instances make.
    pub difference_unstable: f64,
    /// The part of `difference` the other instances make.
    pub difference_stable: f64,
    /// The difference per repository.
    pub per_repo: BTreeMap<String, Diff>,
    /// The difference per difficulty (`unknown` without a dataset).
    pub per_difficulty: BTreeMap<String, Diff>,
    /// How the similarity moved, when both runs have rewards.
    pub similarity: Option<SimilarityChange>,
}

/// Statistic definitions, written into summary.json so the file explains itself.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Methods {
    /// How a run's resolve-rate interval is computed.
    pub rate_interval: &'static str,
    /// The pass@k estimator.
    pub pass_at_k: &'static str,
    /// How the interval of a difference is computed.
    pub difference_interval: &'static str,
    /// The McNemar test.
    pub mcnemar: &'static str,
    /// What makes an instance unstable, and the unstable part of a difference.
    pub unstable: &'static str,
    /// How a prediction without a test verdict counts.
    pub no_verdict: &'static str,
}

/// The definitions every summary.json carries.
pub const METHODS: Methods = Methods {
    rate_interval: "one sample per instance: Wilson score 95% interval; several: percentile \
                    bootstrap over instances of pass@1 (same resamples and seed as below)",
    pass_at_k: "unbiased estimator of Chen et al. (2021), 1 - C(n-c, k) / C(n, k) per instance, \
                averaged over instances with at least k samples",
    difference_interval: "paired percentile bootstrap 95% interval: instances resampled with \
                          replacement, mean of per-instance differences; SplitMix64 streams \
                          from the seed (per repository or difficulty, the seed mixed with the \
                          group's label)",
    mcnemar: "McNemar's exact test: two-sided binomial test of the discordant pairs at 1/2; \
              not corrected for multiple comparisons",
    unstable: "an instance is unstable when the runs of a --repeat group disagree on it; the \
               unstable part of a difference is the net flips on such instances over the \
               paired instances",
    no_verdict: "predictions without a test verdict (error, empty patch, missing from a run) \
                 count as unresolved",
};

/// What `compare` found; written as summary.json.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// [`FORMAT_VERSION`], first in the file.
    pub format_version: u32,
    /// The answer first.
    pub headline: String,
    /// Each run on its own, in argument order.
    pub runs: Vec<RunStats>,
    /// Each `--repeat` group.
    pub repeats: Vec<RepeatStats>,
    /// Union of the unstable instances of every repeat group.
    pub unstable: Vec<String>,
    /// With a flaky map: how many of the compared instances it calls flaky, and whether they
    /// were left out.
    pub flaky: Option<FlakyStats>,
    /// Each pair compared.
    pub pairs: Vec<PairStats>,
    /// The settings used.
    pub settings: Options,
    /// The statistics' definitions ([`METHODS`]).
    pub methods: Methods,
    /// Repository and difficulty come from this dataset (else from the instance id, and
    /// difficulty `unknown`).
    pub dataset_used: bool,
}

impl Summary {
    /// One line per pair whose runs do not cover the same instances: how many of each run's
    /// instances the pair left out, and which (the first few).
    pub fn left_out(&self) -> Vec<String> {
        // "2 instances only in a (x, y, ...)", or nothing when there are none.
        let only = |n: usize, run: &str, first: &[String]| -> Option<String> {
            (n > 0).then(|| {
                format!(
                    "{n} instance{} only in {run} ({}{})",
                    if n == 1 { "" } else { "s" },
                    first.join(", "),
                    if n > first.len() { ", ..." } else { "" }
                )
            })
        };
        self.pairs
            .iter()
            .filter(|p| p.n_only_a + p.n_only_b > 0)
            .map(|p| {
                let parts: Vec<String> = [
                    only(p.n_only_a, &p.a, &p.only_a),
                    only(p.n_only_b, &p.b, &p.only_b),
                ]
                .into_iter()
                .flatten()
                .collect();
                format!(
                    "{} vs {}: compared on the {} instances both have; left out: {}",
                    p.a,
                    p.b,
                    p.overall.n,
                    parts.join("; ")
                )
            })
            .collect()
    }

    /// The pairs' left-out instances as problems (each makes the exit code 3), unless the user
    /// asked for the intersection ([`Options::intersection`]): a comparison over fewer
    /// instances than the runs hold is not the comparison of the runs.
    pub fn coverage_problems(&self) -> Vec<String> {
        if self.settings.intersection {
            Vec::new()
        } else {
            self.left_out()
                .into_iter()
                .map(|l| format!("{l} (pass --intersection to compare the shared instances only)"))
                .collect()
        }
    }
}
