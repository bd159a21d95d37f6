//! The reward-versus-execution study behind `swe-eval correlate`: how well does resemblance to
//! the human patch (the SWE-RL similarity and reward) track executed correctness, where does it
//! fail, and is it good enough to choose among samples?
//!
//! Flow: `inputs` reads rewards and outcomes and joins them on (model, instance, sample) into
//! [`Observation`]s, one set per model; [`analyze`] computes every statistic of one set (pure,
//! `stats` and `bestofn`); `plots` draws SVG (and rasterizes it to PNG); `report` writes
//! summary.json, per_prediction.csv, report.md and report.html.

mod analyze;
mod bestofn;
mod inputs;
mod outcome;
mod plots;
mod report;
mod stats;
mod summary;

pub use analyze::{analyze, auroc_words, interval_words};
pub use bestofn::{best_of_n, BestOfN, Sample};
pub use inputs::{
    assign_samples, join, load_outcome_files, load_outcomes, load_rewards, load_rewards_files,
    model_key, JoinError, Joined, Keyed, OutcomeRow, RewardRow,
};
pub use outcome::{repo_from_instance_id, Observation, Outcome};
pub(crate) use plots::{Chart, BLUE, GREEN, GREY, RED};
pub use plots::{RasterError, Rasterizer};
pub(crate) use report::{esc, html_table, md_table, Table, CSS};
pub use report::{write_study, WriteReportError};
pub use report::{Patches, PredictionCsvRow, SummaryFile, Written};
pub use stats::{
    auroc, bootstrap_auroc_ci, calibration, kendall_tau_b, mean, median, point_biserial,
    precision_recall, roc_curve, spearman, tied_pairs, CalibrationBin, PrecisionRecall, RocPoint,
};
pub(crate) use stats::{percentile_sorted, stream_seed, SplitMix};
pub use summary::{
    BlindSpot, BlindSpots, Options, Reading, Score, ScoreStudy, Settings, Stats, Summary,
    READING_MIN_EACH, READING_MIN_N, ROC_POINTS, UNMATCHED_SHOWN,
};
