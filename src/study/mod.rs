//! The reward-versus-execution study behind `swe-eval correlate`: how well does resemblance to
//! the human patch (the SWE-RL similarity and reward) track executed correctness, where does it
//! fail, and is it good enough to choose among samples?
//!
//! Flow: `inputs` reads rewards and outcomes and joins them on (instance, sample) into
//! [`Observation`]s; [`analyze`] computes every statistic (pure, `stats` and `bestofn`);
//! `plots` draws SVG (and rasterizes it to PNG); `report` writes summary.json,
//! per_prediction.csv, report.md and report.html.

mod analyze;
pub mod bestofn;
pub mod inputs;
mod outcome;
pub mod plots;
pub mod report;
pub mod stats;
mod summary;

pub use analyze::{analyze, auroc_words};
pub use bestofn::BestOfN;
pub use inputs::{join, load_outcomes, load_rewards, Joined, OutcomeRow, RewardRow};
pub use outcome::{repo_from_instance_id, Observation, Outcome};
pub use report::{write_study, WriteStudyError};
pub use summary::{
    BlindSpot, BlindSpots, Options, Score, ScoreStudy, Settings, Stats, Summary, ROC_POINTS,
    UNMATCHED_SHOWN,
};
