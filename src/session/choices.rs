//! The choices of whoever executes predictions (`run`, `validate`, `serve`): what the user
//! chose, each `None` standing for its default, and every default filled in here, in one
//! place ([`RunOptions::run_config`], [`RunOptions::prepare`]).

use std::path::PathBuf;
use std::time::Duration;

use super::image_choices::{durations_file, prepare_options, ImageChoices, OptionsError};
use super::prepare::PrepareOptions;
use crate::engine::EngineChoice;
use crate::images::CacheLevel;
use crate::runner::{default_workers, RunConfig};

/// The official harness's per-prediction timeout (`--timeout`, seconds from container start).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

/// The mini benchmark's timeout: every task's tests run in well under 2 s, and its
/// deadlocked prediction has to time out without holding up the run.
pub const MINI_TIMEOUT: Duration = Duration::from_secs(swe_eval_core::mini::DEFAULT_TIMEOUT_SECS);

/// The run id of the mini benchmark when none is given.
pub const MINI_RUN_ID: &str = "mini";

/// How a run executes, as the user chose it; `None` fields take their defaults.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The output folder (logs, summaries, per-prediction files).
    pub output: PathBuf,
    /// The run id [default: [`MINI_RUN_ID`] for the mini benchmark, else `run-<UTC time>`].
    pub run_id: Option<String>,
    /// Containers at once [default: [`default_workers`], min(4, cores)].
    pub workers: Option<usize>,
    /// Per-prediction timeout from container start [default: [`DEFAULT_TIMEOUT`];
    /// [`MINI_TIMEOUT`] for the mini benchmark].
    pub timeout: Option<Duration>,
    /// Strict grading in the summaries (the strict verdict is recorded in every mode).
    pub strict: bool,
    /// Network access for the job containers.
    pub network: bool,
    /// Where images and repositories come from.
    pub images: ImageChoices,
    /// Which images to keep after the run.
    pub keep: CacheLevel,
    /// Where the jobs run.
    pub engine: EngineChoice,
}

impl RunOptions {
    /// Every choice at its default, writing into `output`.
    pub fn new(output: PathBuf) -> Self {
        RunOptions {
            output,
            run_id: None,
            workers: None,
            timeout: None,
            strict: false,
            network: false,
            images: ImageChoices::default(),
            keep: CacheLevel::Env,
            engine: EngineChoice::default(),
        }
    }

    /// The run id: the one chosen, else the default for the input (`mini` is the mini
    /// benchmark's).
    pub fn run_id(&self, mini: bool) -> String {
        match &self.run_id {
            Some(id) => id.clone(),
            None if mini => MINI_RUN_ID.to_string(),
            None => time_run_id(std::time::SystemTime::now()),
        }
    }

    /// The per-prediction timeout: the one chosen, else the default for the input.
    pub fn timeout(&self, mini: bool) -> Duration {
        self.timeout
            .unwrap_or(if mini { MINI_TIMEOUT } else { DEFAULT_TIMEOUT })
    }

    /// The runner's settings for run `run_id` (see [`RunOptions::run_id`]) on an input that is
    /// (`mini`) or is not the mini benchmark, every default filled in.
    pub fn run_config(&self, run_id: &str, mini: bool) -> RunConfig {
        let mut config = RunConfig::new(run_id);
        config.workers = self.workers.unwrap_or_else(default_workers).max(1);
        config.timeout = self.timeout(mini);
        config.strict = self.strict;
        config.network = self.network;
        config.durations = Some(durations_file(&self.output));
        config
    }

    /// How images are prepared (`mini_mirrors`: the mini benchmark's repositories, which
    /// also make Debian the default flavour). Refuses first a timeout, worker count or build
    /// count outside its range ([`RunOptions::check`]).
    pub fn prepare(&self, mini_mirrors: Option<PathBuf>) -> Result<PrepareOptions, OptionsError> {
        self.check()?;
        prepare_options(&self.output, &self.images, mini_mirrors)
    }

    /// The chosen counts and timeout against their ranges ([`swe_eval_core::bounds`]), whichever face
    /// set them: a zero timeout would time out every job before it starts.
    pub fn check(&self) -> Result<(), OptionsError> {
        use swe_eval_core::bounds::{BUILD_JOBS, TIMEOUT_SECS, WORKERS};
        let out = |what: &str, v: String, range: String| {
            Err(OptionsError::OutOfRange(format!("{what} {v}: {range}")))
        };
        if let Some(t) = self.timeout {
            if t.subsec_nanos() != 0 || !TIMEOUT_SECS.contains(t.as_secs()) {
                return out(
                    "--timeout",
                    format!("{:?}", t),
                    TIMEOUT_SECS.describe() + " seconds",
                );
            }
        }
        if let Some(w) = self.workers.filter(|&w| !WORKERS.contains(w)) {
            return out("--workers", w.to_string(), WORKERS.describe());
        }
        if let Some(b) = self.images.build_jobs.filter(|&b| !BUILD_JOBS.contains(b)) {
            return out("--build-jobs", b.to_string(), BUILD_JOBS.describe());
        }
        Ok(())
    }
}

/// `run-YYYYMMDDTHHMMSS` (UTC) of `now`: sortable, and one folder name.
pub fn time_run_id(now: std::time::SystemTime) -> String {
    let secs = now
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "run-{y:04}{m:02}{d:02}T{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_run_ids_are_utc_civil_dates() {
        let at = |s: u64| time_run_id(std::time::UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "run-19700101T000000");
        // 2026-11-29 10:15:00 UTC, and a leap day.
        assert_eq!(at(1_795_947_300), "run-20261129T101500");
        assert_eq!(at(951_782_400), "run-20000229T000000");
    }

    #[test]
    fn defaults_are_filled_in_one_place() {
        let opts = RunOptions::new(PathBuf::from("/out"));
        assert_eq!(opts.run_id(true), "mini");
        assert!(opts.run_id(false).starts_with("run-"));
        assert_eq!(opts.timeout(false), DEFAULT_TIMEOUT);
        assert_eq!(opts.timeout(true), MINI_TIMEOUT);
        let config = opts.run_config("r", false);
        assert_eq!(config.timeout, Duration::from_secs(1800));
        assert_eq!(config.workers, default_workers());
        assert!(config.durations.is_some());
        let chosen = RunOptions {
            run_id: Some("mine".into()),
            workers: Some(0),
            timeout: Some(Duration::from_secs(5)),
            network: true,
            strict: true,
            ..opts
        };
        assert_eq!(chosen.run_id(true), "mine");
        let config = chosen.run_config("mine", true);
        assert_eq!(config.workers, 1, "at least one worker");
        assert_eq!(config.timeout, Duration::from_secs(5));
        assert!(config.network && config.strict);
    }
}

#[cfg(test)]
mod range_tests {
    use super::*;

    #[test]
    fn a_zero_timeout_and_counts_out_of_range_are_refused_by_any_face() {
        let ok = RunOptions::new(PathBuf::from("/out"));
        assert!(ok.check().is_ok());
        for (opts, want) in [
            (
                RunOptions {
                    timeout: Some(Duration::ZERO),
                    ..ok.clone()
                },
                "--timeout 0ns: [allowed: 1 to 604800] seconds",
            ),
            (
                RunOptions {
                    workers: Some(100_000),
                    ..ok.clone()
                },
                "--workers 100000: [allowed: 1 to 1024]",
            ),
        ] {
            let e = opts.check().unwrap_err();
            assert_eq!(e.to_string(), want);
            assert_eq!(
                swe_eval_core::failure::Classify::kind(&e),
                swe_eval_core::failure::ErrorKind::Usage
            );
        }
    }
}
