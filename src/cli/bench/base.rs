//! `swe-eval bench base`: the offline base image made from nothing, timed
//! ([`crate::bench::measure_base`]); prints the times.

use crate::bench::measure_base;
use crate::cli::{CliResult, Ending, UsageError};
use swe_eval_core::spec::DebianRelease;

/// `swe-eval bench base`: which release.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The Debian release bootstrapped (bullseye, bookworm or trixie).
    #[arg(long, default_value = "bullseye")]
    pub release: String,
    /// Where the jobs run.
    #[command(flatten)]
    pub engine: super::super::args::EngineArgs,
}

/// Bootstraps, imports, prints the times, removes the image.
pub fn run(args: Args) -> CliResult {
    let release = DebianRelease::from_name(&args.release).ok_or_else(|| {
        UsageError(format!(
            "--release {}: not a Debian release this tool bootstraps (bullseye, bookworm, trixie)",
            args.release
        ))
    })?;
    let rt = tokio::runtime::Runtime::new()?;
    let f = rt.block_on(measure_base(&args.engine.choice(), release))?;
    println!(
        "{}: bootstrapped and imported in {:.1} s (debootstrap and tar {:.1} s, import {:.1} s)",
        f.release.name(),
        f.wall.as_secs_f64(),
        f.bootstrap.as_secs_f64(),
        f.import.as_secs_f64()
    );
    Ok(Ending::Clean)
}
