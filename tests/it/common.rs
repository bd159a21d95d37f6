//! Helpers shared by the integration tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use proptest::test_runner::{Config as ProptestConfig, RngSeed};

/// The seed property tests start from unless `PROPTEST_RNG_SEED` names another: a CI run then
/// checks the same inputs every time (a red run is reproducible, a green one stays green), and
/// `PROPTEST_RNG_SEED=<n>` explores new ones by hand.
pub const PROPTEST_SEED: u64 = 0x5e5e_e7a1_2026_1129;

/// `cases` cases from [`PROPTEST_SEED`], or from `PROPTEST_RNG_SEED` when it is set.
pub fn proptest_config(cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::with_cases(cases);
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(PROPTEST_SEED);
    }
    config
}

/// The shared datasets folder (`$SWE_EVAL_SHARED/datasets`, default `../shared/datasets` beside
/// the crate), or `None` with a message when it is not there (a user's clone has none; CI does).
pub fn shared_datasets() -> Option<PathBuf> {
    let root = std::env::var_os("SWE_EVAL_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    let ds = root.join("datasets");
    if ds.is_dir() {
        Some(ds)
    } else {
        eprintln!(
            "skipped: shared datasets not found at {} (set SWE_EVAL_SHARED)",
            ds.display()
        );
        None
    }
}

/// Returns early from a test (skipping it, with a message) when the shared data is missing.
#[macro_export]
macro_rules! require_shared {
    () => {
        match $crate::common::shared_datasets() {
            Some(d) => d,
            None => return,
        }
    };
}

/// The built `swe-eval` binary.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_swe-eval"))
}

/// Held by every test that runs the mini benchmark's images through `swe-eval run`: a run
/// removes the instance images it built (cache level `env`), which another run in flight may
/// still be about to use.
pub static MINI_IMAGES: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Takes `MINI_IMAGES`, even after another test panicked while holding it.
pub fn mini_images_turn() -> std::sync::MutexGuard<'static, ()> {
    MINI_IMAGES.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `git` in `dir` with a throwaway identity (commits need one; the machine may have none),
/// failing the test on error; returns the trimmed standard output.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(["-c", "commit.gpgsign=false"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
