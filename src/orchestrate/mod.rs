//! The run workflow as a library: load the inputs, take the run's lock, resume, run the rest
//! through a session (`crate::session`: images prepared beside the jobs), write every verdict
//! into the run's folder, and decide how the run ended. `run` and `validate` call it; it
//! reports through the session's events and never prints, so the CLI only parses arguments,
//! wires the pieces and renders events.
//!
//! - `evaluate`, `validate`: `run` and `validate` as one call each, from a [`Source`] and
//!   `session::RunOptions` to a finished run.
//! - `inputs`: dataset and predictions loaded and narrowed (or the mini benchmark).
//! - `workflow`: the run's lock, resume, the session, the verdicts written, the summaries.
//! - `ending`: the one rule that decides a command's exit code.
//! - `mini_check`, `validate`: the checks `run` (mini benchmark) and `validate` make of the
//!   verdicts; `findings`: what `validate` found per instance (its flaky map's rows);
//!   `flaky_marks`: `run --flaky`, a run's predictions on the instances a flaky map marks.
//! - `error`: why a workflow could not finish.
//! - `check_env`: the Debian environments built and compared with SWE-bench's frozen ones.
//! - `image_set`: images as a job of their own (`swe-eval images build`): a selection's
//!   images and their names, prepared without running anything.

mod check_env;
mod ending;
mod error;
mod evaluate;
mod findings;
mod flaky_marks;
mod image_set;
mod inputs;
mod mini_check;
#[cfg(test)]
mod run_tests;
mod validate;
mod workflow;
#[cfg(test)]
mod workflow_tests;

pub use check_env::{
    check_envs, check_envs_with, check_spec, CheckEnvOptions, CheckEnvReport, EnvReport, Overall,
};
pub use ending::{ending, Ending, Troubles};
pub use error::WorkflowError;
pub use evaluate::{evaluate, Evaluated};
pub use findings::{
    findings, judge, read_verdicts, test_flips, Finding, FindingsError, Repeats, EMPTY, GOLD,
};
pub use flaky_marks::{flaky_marks, flaky_marks_name, FlakyMarks, MarkedPrediction};
pub use image_set::{
    build_images, image_names, image_set, list_images, select_images, ImageSet, Selected,
};
pub use inputs::{complete, load_inputs, InputError, Inputs, Reach, Source};
pub use mini_check::{check_mini, MiniCheck, MiniCheckError};
pub use validate::{
    flaky_map_name, gold_and_empty, validate, Validated, DEFAULT_REPEAT, VALIDATE_RUN_ID,
};
pub use workflow::{execute, execute_ready, ImagePolicy, Ready, RunOutput, Work};
