//! `swe-eval run`: not written yet.

use super::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> CliResult {
    Err("`swe-eval run` is not implemented yet".into())
}
