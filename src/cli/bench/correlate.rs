//! `swe-eval bench correlate`: not written yet.

use crate::cli::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> CliResult {
    Err("`swe-eval bench correlate` is not implemented yet".into())
}
