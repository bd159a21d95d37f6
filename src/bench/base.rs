//! `bench base`: the offline base image made from nothing, timed: `debootstrap` of a Debian
//! release into a root file system, packed as a tar, then imported as an image under a
//! throwaway name (removed after), so the measurement never touches the base image runs use.

use std::time::{Duration, Instant};

use super::BenchError;
use crate::engine::{Engine, EngineChoice};
use crate::images::{build_base, BaseOptions};
use swe_eval_core::spec::DebianRelease;

/// What `bench base` measured.
#[derive(Debug, Clone, Copy)]
pub struct BaseFigures {
    /// The release bootstrapped.
    pub release: DebianRelease,
    /// From the start to the image imported.
    pub wall: Duration,
    /// `debootstrap` and the tar.
    pub bootstrap: Duration,
    /// The import.
    pub import: Duration,
}

/// Bootstraps `release` and imports it on the engine `choice` names under a throwaway tag,
/// then removes that image.
pub async fn measure_base(
    choice: &EngineChoice,
    release: DebianRelease,
) -> Result<BaseFigures, BenchError> {
    let engine = crate::engine::connect(choice).await?;
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
    removed?;
    Ok(BaseFigures {
        release,
        wall,
        bootstrap: out.bootstrap,
        import: out.import,
    })
}
