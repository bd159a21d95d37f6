//! Inputs of the study: rewards (from `swe-eval reward`, JSON Lines or CSV) and executed
//! outcomes (a `swe-eval run` output folder, an official SWE-bench run summary, a JSON Lines of
//! `{instance_id, sample, resolved}`, report.json files, or mini-swe-agent's
//! `per_run_results.json`), joined on (model, instance_id, sample), one study per model (see
//! `join` for rows that name no model).
//!
//! Samples: with one file, a row's own `sample` field is used (0 when absent). With several
//! files on one side, the k-th file (0-based) is sample k, as when each of k runs was written to
//! its own file; `per_run_results.json` maps its runs to samples 0, 1, ... in file order.

mod fields;
mod join;
mod outcomes;
mod rewards;

pub use join::{
    assign_samples, join, load_outcome_files, load_rewards_files, model_key, JoinError, Joined,
    Keyed,
};
pub use outcomes::{load_outcomes, OutcomeRow};
pub use rewards::{load_rewards, RewardRow};
