//! `swe-eval bench`: measure the speed of each part on real or synthetic inputs. One file per
//! target; each prints its figures and writes them as JSON when `--json` is given.

use super::CliResult;

pub mod correlate;
pub mod grade;
pub mod harness;
pub mod reward;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub target: Target,
}

#[derive(Debug, clap::Subcommand)]
pub enum Target {
    /// The whole `reward` computation on a predictions file, against plain Python.
    Reward(reward::Args),
    /// Log parsing and grading of saved test logs.
    Grade(grade::Args),
    /// `correlate` on synthetic predictions.
    Correlate(correlate::Args),
    /// Harness overhead per prediction (everything but the test command) on a real engine.
    Harness(harness::Args),
}

pub fn run(args: Args) -> CliResult {
    match args.target {
        Target::Reward(a) => reward::run(a),
        Target::Grade(a) => grade::run(a),
        Target::Correlate(a) => correlate::run(a),
        Target::Harness(a) => harness::run(a),
    }
}
