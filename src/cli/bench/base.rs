//! `swe-eval bench base`: the offline base image made from nothing, timed: `debootstrap` of a
//! Debian release into a root file system, packed as a tar, then imported as an image under a
//! throwaway name (removed after), so the measurement never touches the base image runs use.

use std::time::Instant;

use crate::cli::{CliResult, Ending, UsageError};
use crate::engine::Engine;
use crate::images::{build_base, BaseOptions};
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
    rt.block_on(async {
        let engine = crate::engine::connect(&args.engine.choice()).await?;
        let tag = format!(
            "swe-eval-bench/base.debian-{}:{}",
            release.name(),
            std::process::id()
        );
        let t0 = Instant::now();
        let built = build_base(&engine, release, &tag, &BaseOptions::default()).await;
        let wall = t0.elapsed();
        let removed = engine.remove_image(&tag).await;
        let out = built?;
        println!(
            "{}: bootstrapped and imported in {:.1} s (debootstrap and tar {:.1} s, import {:.1} s)",
            release.name(),
            wall.as_secs_f64(),
            out.bootstrap.as_secs_f64(),
            out.import.as_secs_f64()
        );
        removed?;
        Ok(Ending::Clean)
    })
}
