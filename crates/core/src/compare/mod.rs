//! `swe-eval compare`: is the difference between two runs (checkpoints, prompts, scaffolds)
//! real? Per run, the resolve rate with its 95% interval and, with several samples per
//! instance, pass@1 and pass@k; per pair of runs, paired by instance, the difference with a
//! paired bootstrap interval, McNemar's exact test and the instances that flipped, overall, per
//! repository and per difficulty, and what changed in the similarity reward; for groups of
//! repeated runs of one system, the spread and the instances whose verdict is unstable, and how
//! much of each difference those instances could explain. With a flaky map from `validate`
//! (`--flaky`), how many of the compared instances are flaky, marked in per_instance.csv, and
//! left out of every statistic on request (`--exclude-flaky`).
//!
//! Flow: `inputs` reads each run (reusing the study's outcome and reward readers);
//! [`analyze`] computes everything (pure, `stats`); `plots` draws the forest plot of
//! per-repository differences; `report` writes summary.json, the CSVs, the plots and
//! report.md / report.html. Nothing here runs Docker.
//!
//! Rates: a prediction without a test verdict (harness error, empty patch, missing from a run)
//! counts as unresolved, as the official resolve rate counts it. With several samples per
//! instance an instance's rate is the share of its samples resolved, and a run's rate is their
//! mean over instances (pass@1).

mod analyze;
mod headline;
mod inputs;
mod plots;
mod report;
mod stats;
mod summary;

pub use analyze::{analyze, labels};
pub use headline::p_text;
pub use inputs::{check_output, load_all, load_runs, Run, RunSpec};
pub use report::write_compare;
pub use stats::{bootstrap_mean_ci, group_seed, mcnemar_exact, pass_at_k, sd, wilson};
pub use summary::{
    CompareError, Diff, FlakyStats, Methods, Options, PairStats, PassAtK, RepeatStats, RunStats,
    SimilarityChange, Summary, FORMAT_VERSION, METHODS,
};
