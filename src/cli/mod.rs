//! Command-line definitions (clap), one file per subcommand. Each subcommand's `run` takes its
//! parsed arguments, calls the library and reports what happened; nothing here holds logic
//! that a library user would need (the run workflow is `crate::orchestrate`; `render` draws
//! its events).

use clap::{Parser, Subcommand};

pub mod bench;
pub mod compare;
pub mod correlate;
pub mod grade;
pub mod render;
pub mod reward;
pub mod run;
pub mod spec;
pub mod submit;
pub mod validate;

/// Boxed library error, turned into `anyhow` only by the binary.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// How a command ended when it did not fail outright (decided by
/// [`crate::orchestrate::outcome`], the one rule for every command).
pub use crate::orchestrate::Outcome;

pub type CliResult = Result<Outcome, BoxError>;

/// Evaluate SWE-bench predictions: execute them in Docker and grade them as the official
/// harness does, score them with the SWE-RL similarity reward, and study how the two agree.
///
/// Run `swe-eval run` with no arguments to evaluate the bundled mini benchmark.
#[derive(Debug, Parser)]
#[command(name = "swe-eval", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Apply each prediction in its own container, run the hidden tests, grade, and report.
    Run(run::Args),
    /// Compute the SWE-RL similarity reward of each prediction without executing anything.
    Reward(reward::Args),
    /// Correlate executed outcomes with the reward: AUROC, calibration, best of n, blind spots.
    Correlate(correlate::Args),
    /// Compare runs paired by instance: differences with intervals, McNemar, flips, noise.
    Compare(compare::Args),
    /// Write the eval script and Dockerfiles of each dataset instance.
    Spec(spec::Args),
    /// Grade again from saved test logs, as the official harness grades them.
    Grade(grade::Args),
    /// Run gold and empty patches k times and flag instances whose verdicts are not stable.
    Validate(validate::Args),
    /// Package a finished run as a SWE-bench leaderboard submission, or check one (--verify).
    Submit(submit::Args),
    /// Measure the speed of the reward, grading, correlation and harness overhead.
    Bench(bench::Args),
}

pub fn dispatch(cli: Cli) -> CliResult {
    match cli.command {
        Command::Run(a) => run::run(a),
        Command::Reward(a) => reward::run(a),
        Command::Correlate(a) => correlate::run(a),
        Command::Compare(a) => compare::run(a),
        Command::Spec(a) => spec::run(a),
        Command::Grade(a) => grade::run(a),
        Command::Validate(a) => validate::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Submit(a) => submit::run(a),
    }
}
