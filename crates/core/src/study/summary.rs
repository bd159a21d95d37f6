//! What the study finds, as `summary.json` carries it: the [`Summary`] with its statistics per
//! score, the blind spots, and the [`Options`] and settings it was computed with.

use std::collections::BTreeMap;

use serde::Serialize;

use super::bestofn::BestOfN;
use super::outcome::Observation;
use super::stats;

/// Settings of the study.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Options {
    /// Bootstrap resamples for the AUROC interval (0: no interval).
    pub bootstrap: usize,
    /// Seed of the bootstrap (the same seed gives the same interval).
    pub seed: u64,
    /// Score thresholds for precision and recall.
    pub thresholds: Vec<f64>,
    /// How many blind spots of each kind to show.
    pub blind_spots: usize,
}

impl Options {
    /// The resamples drawn: `bootstrap`, at most [`crate::bounds::BOOTSTRAP`]'s maximum (the
    /// statistics of every resample are kept for the percentiles, so the count bounds memory;
    /// the command line refuses more).
    pub fn resamples(&self) -> usize {
        self.bootstrap.min(crate::bounds::BOOTSTRAP.max)
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            bootstrap: 1000,
            seed: 0,
            thresholds: vec![0.5, 0.8],
            blind_spots: 10,
        }
    }
}

/// Every statistic of one score over one set of predictions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stats {
    /// Predictions.
    pub n: usize,
    /// Of them resolved.
    pub n_resolved: usize,
    /// `n_resolved / n`; `None` without predictions.
    pub resolve_rate: Option<f64>,
    /// Probability that a resolved prediction scores above an unresolved one (ties count half).
    pub auroc: Option<f64>,
    /// Bootstrap 95% interval of `auroc`, when resamples were asked for.
    pub auroc_ci95: Option<[f64; 2]>,
    /// Pearson correlation of the score with resolved (0/1).
    pub point_biserial: Option<f64>,
    /// Spearman rank correlation of the score with resolved.
    pub spearman: Option<f64>,
    /// Kendall's tau-b of the score with resolved.
    pub kendall_tau_b: Option<f64>,
    /// Mean score of the resolved predictions.
    pub mean_resolved: Option<f64>,
    /// Mean score of the others.
    pub mean_unresolved: Option<f64>,
    /// Median score of the resolved predictions.
    pub median_resolved: Option<f64>,
    /// Median score of the others.
    pub median_unresolved: Option<f64>,
    /// Precision and recall at each threshold.
    pub precision_recall: Vec<stats::PrecisionRecall>,
    /// Resolve rate by score bin.
    pub calibration: Vec<stats::CalibrationBin>,
    /// Too few predictions for a reading of the AUROC (see [`READING_MIN_N`]): the AUROC is
    /// given, without words or interval.
    pub small_sample: bool,
    /// The share of (resolved, unresolved) pairs with equal scores, which the AUROC counts one
    /// half; 1.0: the score ranks nothing. `None` without a pair.
    pub tied_pairs: Option<f64>,
}

/// The fewest predictions from which the study reads an AUROC (in words, with an interval).
pub const READING_MIN_N: usize = 20;

/// The fewest predictions of each outcome (resolved, unresolved) for a reading.
pub const READING_MIN_EACH: usize = 5;

/// What an AUROC says, by how it was measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reading {
    /// The predictions are of one outcome only: no AUROC.
    NoPairs,
    /// Fewer predictions than a reading needs ([`READING_MIN_N`], [`READING_MIN_EACH`]).
    SmallSample(f64),
    /// Every (resolved, unresolved) pair is tied: the score ranks nothing.
    AllTied,
    /// An AUROC to read.
    Read(f64),
}

impl Stats {
    /// True when `n` predictions, `n_resolved` of them resolved, are too few for a reading.
    pub fn too_few(n: usize, n_resolved: usize) -> bool {
        n < READING_MIN_N || n_resolved.min(n - n_resolved) < READING_MIN_EACH
    }

    /// What this AUROC says (see [`Reading`]).
    pub fn reading(&self) -> Reading {
        match self.auroc {
            None => Reading::NoPairs,
            Some(a) if self.small_sample => Reading::SmallSample(a),
            Some(_) if self.tied_pairs == Some(1.0) => Reading::AllTied,
            Some(a) => Reading::Read(a),
        }
    }
}

/// The study of one score: overall, per repository, per difficulty, ROC curve, best of n.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScoreStudy {
    /// Over all predictions.
    #[serde(flatten)]
    pub overall: Stats,
    /// By repository `owner/name`.
    pub per_repo: BTreeMap<String, Stats>,
    /// By the dataset's difficulty (`unknown` without one).
    pub per_difficulty: BTreeMap<String, Stats>,
    /// Picking one of n samples by this score, for each n.
    pub best_of_n: Vec<BestOfN>,
    /// The ROC curve, thinned to at most [`ROC_POINTS`] points for plotting.
    pub roc: Vec<stats::RocPoint>,
}

/// At most this many unmatched keys of each side are listed in summary.json.
pub const UNMATCHED_SHOWN: usize = 100;

/// At most this many ROC points are kept (100,000 predictions would give 100,000).
pub const ROC_POINTS: usize = 400;

/// Which score a statistic is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Score {
    /// SWE-RL's similarity, 0..1.
    Similarity,
    /// The reward: the similarity, or -1 for a prediction that is not a valid edit.
    Reward,
}

impl Score {
    /// Both scores, similarity first.
    pub const BOTH: [Score; 2] = [Score::Similarity, Score::Reward];

    /// `similarity` or `reward`.
    pub fn name(self) -> &'static str {
        match self {
            Score::Similarity => "similarity",
            Score::Reward => "reward",
        }
    }

    /// This score of an observation.
    pub fn of(self, o: &Observation) -> f64 {
        match self {
            Score::Similarity => o.similarity,
            Score::Reward => o.reward,
        }
    }
}

/// A prediction where resemblance and correctness disagree most.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlindSpot {
    /// The instance.
    pub instance_id: String,
    /// The sample number.
    pub sample: u32,
    /// The repository, `owner/name`.
    pub repo: String,
    /// The similarity.
    pub similarity: f64,
    /// The reward.
    pub reward: f64,
    /// The verdict's label.
    pub verdict: String,
}

/// The predictions where similarity and the verdict disagree most, both ways.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlindSpots {
    /// Resolved, yet least similar to the human patch (correct but different).
    pub resolved_least_similar: Vec<BlindSpot>,
    /// Unresolved, yet most similar to the human patch (close but wrong).
    pub unresolved_most_similar: Vec<BlindSpot>,
}

/// What `correlate` found; written as summary.json.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// The answer in one sentence.
    pub headline: String,
    /// The model studied (as a folder name); `None` when neither input names one.
    pub model: Option<String>,
    /// Joined predictions (with a reward and an outcome).
    pub n: usize,
    /// Of them resolved.
    pub n_resolved: usize,
    /// Unresolved with a test verdict.
    pub n_unresolved: usize,
    /// Without a verdict (counted as unresolved), by reason.
    pub n_no_verdict: usize,
    /// `n_no_verdict` by reason (`error`, `empty_patch`, ...).
    pub no_verdict_by_reason: BTreeMap<String, usize>,
    /// `n_resolved / n`; `None` without predictions.
    pub resolve_rate: Option<f64>,
    /// Rows on either side that found no partner (left out of every statistic).
    pub n_unmatched: usize,
    /// Rewards without an outcome.
    pub n_unmatched_rewards: usize,
    /// Outcomes without a reward.
    pub n_unmatched_outcomes: usize,
    /// Pairs left out because the two sides name different models, and the first such names
    /// (rewards' model, outcomes' model).
    pub n_model_mismatch: usize,
    /// The first differing pair of model names: rewards', outcomes'.
    pub models_differ: Option<[String; 2]>,
    /// How predictions without a verdict were counted, in one plain sentence.
    pub no_verdict_counted: String,
    /// Predictions whose missing verdict is a harness error (reason containing `error`).
    pub n_harness_errors: usize,
    /// The AUROCs with the harness errors left out (empty patches stay, as unresolved): an
    /// infrastructure failure says nothing about the patch.
    pub n_without_harness_errors: usize,
    /// Similarity AUROC without harness errors.
    pub similarity_auroc_without_harness_errors: Option<f64>,
    /// Reward AUROC without harness errors.
    pub reward_auroc_without_harness_errors: Option<f64>,
    /// The first [`UNMATCHED_SHOWN`] unmatched keys of each side, as `instance_id#sample`.
    pub unmatched_rewards: Vec<String>,
    /// The same for outcomes without a reward.
    pub unmatched_outcomes: Vec<String>,
    /// Distinct instances among the joined predictions.
    pub n_instances: usize,
    /// The most samples any instance has.
    pub max_samples: usize,
    /// The similarity's statistics.
    pub similarity: ScoreStudy,
    /// The reward's statistics.
    pub reward: ScoreStudy,
    /// Where resemblance and correctness disagree most.
    pub blind_spots: BlindSpots,
    /// The settings and the definitions used, so the file explains itself.
    pub settings: Settings,
}

/// How the study was computed, written into summary.json.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Settings {
    /// Bootstrap resamples (0: no interval).
    pub bootstrap: usize,
    /// The bootstrap's seed.
    pub seed: u64,
    /// Thresholds of the precision/recall table.
    pub thresholds: Vec<f64>,
    /// How AUROC is computed.
    pub auroc: &'static str,
    /// How the interval is computed.
    pub bootstrap_method: &'static str,
    /// How the calibration bins are cut.
    pub calibration_bins: &'static str,
    /// How best of n picks and counts.
    pub best_of_n_rule: &'static str,
    /// What a prediction without a verdict counts as.
    pub no_verdict_rule: &'static str,
    /// When the sample is too small for a reading, and what is reported then.
    pub small_sample_rule: &'static str,
    /// How tied scores are counted and reported.
    pub ties_rule: &'static str,
}
