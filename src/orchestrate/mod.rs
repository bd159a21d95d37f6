//! The run workflow as a library: load the inputs, prepare and hold the images, execute the
//! plan, clean up, and decide how the run ended. `run`, `validate` and `bench` call it; it
//! reports through [`Event`]s and never prints, so the CLI only parses arguments, wires the
//! pieces and renders events.
//!
//! - `inputs`: dataset and predictions loaded and narrowed (or the mini benchmark).
//! - `options`: the user's image and repository choices turned into [`PrepareOptions`].
//! - `prepare`: test specs and images for the instances with predictions.
//! - `workflow`: prepare while executing, release and clean up, as events.
//! - `prep_times`: where image preparation's time went (per kind of image and phase).
//! - `outcome`: the one rule that decides a command's exit code.
//! - `mini_check`, `validate`: the checks `run` (mini benchmark) and `validate` make of the
//!   verdicts.
//! - `trivial`: a one-file task image for benchmarks and real-engine tests.
//! - `check_env`: the Debian environments built and compared with SWE-bench's frozen ones.

pub mod check_env;
pub mod inputs;
pub mod mini_check;
pub mod options;
pub mod outcome;
pub mod prep_times;
pub mod prepare;
pub mod trivial;
pub mod validate;
pub mod workflow;
#[cfg(test)]
mod workflow_tests;

pub use inputs::{load_inputs, InputError, Inputs};
pub use options::{
    default_build_jobs, durations_file, prepare_options, ImageChoices, OptionsError,
};
pub use outcome::{outcome, Outcome, Troubles};
pub use prep_times::PrepTimes;
pub use prepare::PrepareOptions;
pub use workflow::{execute, run_plan, Event, ImagePolicy, Level, Notice, Work};
