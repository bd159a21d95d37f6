//! Helpers shared by the integration tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

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

/// The environment variable that turns every skip into a failure: CI (`.ci/run`) sets it to
/// `1`, so a green run cannot hide a test that did not run for want of Docker, the shared data,
/// the Python oracles, git, chromium or root.
pub const REQUIRE_ALL: &str = "SWE_EVAL_REQUIRE_ALL";

/// Whether a missing prerequisite fails the test (`SWE_EVAL_REQUIRE_ALL=1`) instead of
/// skipping it.
pub fn require_all() -> bool {
    std::env::var(REQUIRE_ALL).is_ok_and(|v| v == "1")
}

/// The one place that decides whether a test runs without its prerequisite `what`: `Ok` gives
/// the prerequisite back; `Err(why)` prints `skipped: <what> (<why>)` and gives `None` on a
/// user's machine, and panics with the same text when `SWE_EVAL_REQUIRE_ALL=1` (CI).
pub fn prerequisite<T, E: std::fmt::Display>(what: &str, found: Result<T, E>) -> Option<T> {
    match found {
        Ok(v) => Some(v),
        Err(why) => {
            let why = why.to_string();
            let why = why.trim();
            let missing = if why.is_empty() {
                format!("{what} is not available")
            } else {
                format!("{what} is not available ({why})")
            };
            if require_all() {
                panic!("{missing}, and {REQUIRE_ALL}=1 requires every prerequisite");
            }
            eprintln!("skipped: {missing}");
            None
        }
    }
}

/// [`prerequisite`] for a yes/no check: true when the test may go on.
pub fn require(what: &str, available: bool) -> bool {
    prerequisite(what, if available { Ok(()) } else { Err("") }).is_some()
}

/// Whether `program --version` runs and succeeds (through [`require`]).
pub fn require_program(program: &str) -> bool {
    let ok = Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    require(program, ok)
}

/// The shared datasets folder (`$SWE_EVAL_SHARED/datasets`, default `../shared/datasets` beside
/// the crate), or `None` (through [`prerequisite`]) when it is not there: a user's clone has
/// none; CI does.
pub fn shared_datasets() -> Option<PathBuf> {
    let root = std::env::var_os("SWE_EVAL_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    let ds = root.join("datasets");
    let found = if ds.is_dir() {
        Ok(ds)
    } else {
        Err(format!("{} not found; set SWE_EVAL_SHARED", ds.display()))
    };
    prerequisite("the shared SWE-bench data", found)
}

/// Returns early from a test (skipping it, or failing under `SWE_EVAL_REQUIRE_ALL=1`) when the
/// shared data is missing.
#[macro_export]
macro_rules! require_shared {
    () => {
        match $crate::common::shared_datasets() {
            Some(d) => d,
            None => return,
        }
    };
}

/// A connected Docker engine, or `None` (through [`prerequisite`], with the adapter's advice
/// on how to start a daemon).
pub async fn docker_engine() -> Option<swe_eval::engine::DockerEngine> {
    prerequisite(
        "a Docker daemon",
        swe_eval::engine::DockerEngine::connect().await,
    )
}

/// Debian's chromium (installed by scripts/setup.sh --tests), or `None` through [`prerequisite`].
pub fn chromium() -> Option<PathBuf> {
    let found = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .ok_or("apt-get install chromium");
    prerequisite("chromium", found)
}

/// `chromium` headless, offline and with a fresh profile in `profile`: add the action
/// (`--screenshot=...`, `--dump-dom`) and the URL.
pub fn headless_chromium(chromium: &Path, profile: &Path) -> Command {
    let mut c = Command::new(chromium);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// How many colours a PNG has (up to 51, sampling every 7th pixel): a blank or one-colour
/// screenshot has 1.
pub fn png_colours(path: &Path) -> usize {
    let pm = resvg::tiny_skia::Pixmap::load_png(path).unwrap();
    let mut seen = std::collections::HashSet::new();
    for px in pm.pixels().iter().step_by(7) {
        seen.insert((px.red(), px.green(), px.blue()));
        if seen.len() > 50 {
            break;
        }
    }
    seen.len()
}

/// The built `swe-eval` binary.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_swe-eval"))
}

/// The built binary at `dest`, where another user can run it: a hard link when `dest` is on
/// the binary's file system, else a copy. A copy is open for writing while it is made, and a
/// child that another test thread forks in that window inherits the descriptor until it
/// execs; running the copy then fails with "Text file busy" (ETXTBSY). A link is never
/// open for writing; [`spawn_unless_busy`] covers the copy.
pub fn place_bin(dest: &Path) {
    if std::fs::hard_link(bin(), dest).is_err() {
        std::fs::copy(bin(), dest).unwrap();
    }
}

/// Runs `start` (a spawn or an output of a freshly written executable), again while it fails
/// with ETXTBSY, for up to 10 s (see [`place_bin`]).
pub fn spawn_unless_busy<T>(mut start: impl FnMut() -> std::io::Result<T>) -> std::io::Result<T> {
    let t0 = Instant::now();
    loop {
        match start() {
            Err(e)
                if e.kind() == std::io::ErrorKind::ExecutableFileBusy
                    && t0.elapsed() < Duration::from_secs(10) =>
            {
                std::thread::sleep(Duration::from_millis(50))
            }
            r => return r,
        }
    }
}

/// Held by every test that runs the mini benchmark's images. Runs at once share them safely:
/// a run holds each image it uses, and another run's cleanup (cache level `env`) keeps a held
/// image and hands it over (README, `--cache-level`). So a test whose checks are about its own
/// run takes it shared ([`mini_images_shared`]); a test that needs the daemon's mini images to
/// itself (which of them exist, what a build or a prune does to them) takes it alone
/// ([`mini_images_turn`]).
pub static MINI_IMAGES: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Takes `MINI_IMAGES` alone (no other mini run of this process in flight), even after another
/// test panicked while holding it.
pub fn mini_images_turn() -> std::sync::RwLockWriteGuard<'static, ()> {
    MINI_IMAGES.write().unwrap_or_else(|p| p.into_inner())
}

/// Takes `MINI_IMAGES` shared with other tests' runs of the mini images.
pub fn mini_images_shared() -> std::sync::RwLockReadGuard<'static, ()> {
    MINI_IMAGES.read().unwrap_or_else(|p| p.into_inner())
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

/// Runs the integration test `test` (its full path, e.g. `engine::a_test`) alone in a child
/// process of this test binary with `env` set (`None` removes a variable) and
/// `SWE_EVAL_IT_CHILD=1`, which the test reads to know it is the child; returns the child's
/// standard output after checking it succeeded. For tests that must change the process's
/// environment (where the engine is found) without disturbing the others.
pub fn rerun_alone(test: &str, env: &[(&str, Option<&str>)]) -> String {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([test, "--exact", "--nocapture"])
        .env("SWE_EVAL_IT_CHILD", "1");
    for (k, v) in env {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    let out = c.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}");
    text
}

/// Whether this process is the child [`rerun_alone`] started.
pub fn is_rerun_child() -> bool {
    std::env::var_os("SWE_EVAL_IT_CHILD").is_some()
}

/// Polls `f` every `every` until it gives `Some`, or `None` once `limit` has passed (`f` is
/// asked once more at the end): the one polling loop of the tests.
pub fn poll<T>(limit: Duration, every: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let t0 = Instant::now();
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if t0.elapsed() >= limit {
            return f();
        }
        std::thread::sleep(every);
    }
}

/// [`poll`] for a condition, every 100 ms: whether it held within `limit`.
pub fn poll_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    poll(limit, Duration::from_millis(100), || cond().then_some(())).is_some()
}

/// [`poll`] every half second, panicking with `what` when `limit` passes.
pub fn wait_for<T>(what: &str, limit: Duration, f: impl FnMut() -> Option<T>) -> T {
    poll(limit, Duration::from_millis(500), f)
        .unwrap_or_else(|| panic!("timed out after {limit:?} waiting for {what}"))
}

/// [`poll`] for async tests: awaits `f` every `every` until it gives `Some`, or `None` once
/// `limit` has passed.
pub async fn poll_async<T, F, Fut>(limit: Duration, every: Duration, mut f: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let t0 = Instant::now();
    loop {
        if let Some(v) = f().await {
            return Some(v);
        }
        if t0.elapsed() >= limit {
            return f().await;
        }
        tokio::time::sleep(every).await;
    }
}

// A finished `swe-eval run` of the mini benchmark, read back.

pub(crate) struct Finished {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

pub(crate) fn finish(child: Child) -> Finished {
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!("{stdout}\n{stderr}");
    Finished {
        code: out.status.code().unwrap_or(-1),
        stdout,
        stderr,
    }
}

/// Every file named `name` under a run's log tree.
pub(crate) fn run_files(results: &Path, run_id: &str, name: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![results.join("logs/run_evaluation").join(run_id)];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == name) {
                found.push(p);
            }
        }
    }
    found
}

pub(crate) fn verdict_files(results: &Path, run_id: &str) -> usize {
    run_files(results, run_id, "verdict.json").len()
}

pub(crate) fn assert_mini_ok(run: &Finished) {
    assert_eq!(run.code, 0, "the run is clean:\n{}", run.stdout);
    assert_mini_verdicts(run);
}

pub(crate) fn assert_mini_verdicts(run: &Finished) {
    assert!(
        run.stdout
            .contains("mini benchmark: 22/22 verdicts as expected"),
        "{}",
        run.stdout
    );
}
