//! Where a run's files go, and the verdict store that makes resume exact.
//!
//! Layout under the output folder (the official one, plus a few files of ours):
//!
//! ```text
//! logs/run_evaluation/<run_id>/<model>/<instance_id>/          sample 0
//! logs/run_evaluation/<run_id>/<model>/<instance_id>.sample<k>/ sample k > 0
//!     patch.diff eval.sh test_output.txt report.json run_instance.log   (official)
//!     verdict.json                                                       (ours, written last)
//! <model>.<run_id>.json            official run summary of sample 0
//! <model>.<run_id>.sample<k>.json  the same for sample k
//! <run_id>.predictions.jsonl/.csv  one row per prediction, all samples
//! ```
//!
//! `verdict.json` is written atomically and last, so its presence means the prediction is
//! done. It records what produced it (its `identity`, `swe_eval_core::identity`): a resumed run
//! keeps it, grades its saved log again, or runs it again by comparing that identity with the
//! one the run would use (`orchestrate`'s resume).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

// Re-exported where they used to live, for callers not yet moved to `crate::owner`.
pub use crate::owner::{owner_id, owner_is_dead};
use swe_eval_core::predictions::model_dir_name;

use swe_eval_core::report::VERDICT_FILE;

/// How a prediction ended: grading's category, the one of the whole crate.
pub use swe_eval_core::grading::Category;

/// The verdict of one prediction: `verdict.json`, and one row of the per-prediction files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The prediction's instance.
    pub instance_id: String,
    /// The prediction's model.
    pub model: String,
    /// The prediction's sample number.
    pub sample: u32,
    /// SHA-256 of the patch; a resume reuses the verdict only for the same hash.
    pub patch_hash: String,
    /// The run that wrote it.
    pub run_id: String,
    /// Official grading.
    pub category: Category,
    /// `category` is `Resolved`.
    pub resolved: bool,
    /// Strict grading (exit-code cross-check and the other hardenings); equal to `category`
    /// when the strict grader finds nothing to object to.
    pub strict_category: Category,
    /// `strict_category` is `Resolved`.
    pub strict_resolved: bool,
    /// A `report.json` was written (the official summary then counts the instance completed).
    #[serde(default)]
    pub official_report: bool,
    /// How the patch applied (the apply command that exited 0), if it did.
    pub applied_with: Option<String>,
    /// FAIL_TO_PASS tests that passed.
    pub fail_to_pass_success: usize,
    /// FAIL_TO_PASS tests that did not pass.
    pub fail_to_pass_failure: usize,
    /// PASS_TO_PASS tests that passed.
    pub pass_to_pass_success: usize,
    /// PASS_TO_PASS tests that did not pass.
    pub pass_to_pass_failure: usize,
    /// The test command's exit status, when the eval script reported it.
    pub test_exit_code: Option<i32>,
    /// The job hit its timeout.
    pub timed_out: bool,
    /// The grading module's error kind, for errors and infra errors.
    #[serde(default)]
    pub error_reason: Option<swe_eval_core::grading::ErrorReason>,
    /// Why the prediction is an error or infra error, or what strict grading objected to.
    pub reason: Option<String>,
    /// Unresolved only because every failing required test failed with a network error
    /// (`reason` says which); the verdict says nothing about the patch.
    #[serde(default)]
    pub needs_network: bool,
    /// Engine failures retried before this verdict.
    pub infra_retries: u32,
    /// Seconds: container setup, run, teardown, and the whole job as the runner saw it.
    pub setup_secs: f64,
    /// Seconds running the job.
    pub run_secs: f64,
    /// Seconds removing the container.
    pub teardown_secs: f64,
    /// Seconds for the whole job.
    pub total_secs: f64,
    /// Seconds of the run before the eval script started: the driver and the apply step
    /// (`None` where the engine did not time the output as it came: Swarm, older verdicts).
    #[serde(default)]
    pub apply_secs: Option<f64>,
    /// Seconds of the eval script before its tests: checking out the test files, applying the
    /// test patch, the eval-time reinstall.
    #[serde(default)]
    pub before_tests_secs: Option<f64>,
    /// Seconds between the official `Start Test Output` and `End Test Output` markers.
    #[serde(default)]
    pub tests_secs: Option<f64>,
    /// Seconds from the end of the tests to the container's exit.
    #[serde(default)]
    pub after_tests_secs: Option<f64>,
    /// `model/sample` of the prediction whose identical patch actually ran, when this one
    /// shared its verdict instead of running.
    pub shared_from: Option<String>,
    /// The timeout the job ran under, in seconds (`None` in verdicts written before it was
    /// recorded, and for predictions not run).
    #[serde(default)]
    pub timeout_secs: Option<u64>,
    /// The kernel killed the job's container for memory (as Docker reports it; Swarm does not).
    #[serde(default)]
    pub oom_killed: bool,
    /// The memory limit the job ran under, in bytes (`None`: no limit, or not recorded).
    #[serde(default)]
    pub memory_bytes: Option<i64>,
    /// What produced it: each input's hash and the limits (`swe_eval_core::identity`), so a
    /// resume can tell whether it stands for the run at hand (`None` in verdicts written before
    /// it was recorded: their inputs are unknown, and a resume runs them again).
    #[serde(default)]
    pub identity: Option<swe_eval_core::identity::Identity>,
}

/// The name of a run's lock file, inside its log folder.
pub const LOCK_FILE: &str = ".swe-eval.lock";

/// Paths of one run.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The output folder.
    pub output: PathBuf,
    /// The run's id.
    pub run_id: String,
}

impl Layout {
    /// The layout of run `run_id` under `output`.
    pub fn new(output: &Path, run_id: &str) -> Self {
        Layout {
            output: output.to_path_buf(),
            run_id: run_id.to_string(),
        }
    }

    /// `logs/run_evaluation/<run_id>`.
    pub fn run_dir(&self) -> PathBuf {
        self.output
            .join("logs")
            .join("run_evaluation")
            .join(&self.run_id)
    }

    /// The log folder of one prediction.
    pub fn prediction_dir(&self, model: &str, instance_id: &str, sample: u32) -> PathBuf {
        self.run_dir()
            .join(model_dir_name(model))
            .join(swe_eval_core::predictions::sample_name(instance_id, sample))
    }

    /// The official run summary of one model's sample.
    pub fn summary_path(&self, model: &str, sample: u32) -> PathBuf {
        self.output
            .join(swe_eval_core::predictions::summary_file_name(
                model,
                &self.run_id,
                sample,
            ))
    }

    /// `<run_id>.predictions.jsonl`: every verdict of the run, one a line.
    pub fn jsonl_path(&self) -> PathBuf {
        self.output
            .join(format!("{}.predictions.jsonl", self.run_id))
    }

    /// `<run_id>.predictions.csv`: the same as CSV.
    pub fn csv_path(&self) -> PathBuf {
        self.output.join(format!("{}.predictions.csv", self.run_id))
    }

    /// The files a run of `predictions` writes at its end: each model's and sample's run
    /// summary, the per-prediction JSON Lines and CSV, and `report.html`.
    pub fn closing_files(
        &self,
        predictions: &[swe_eval_core::predictions::Prediction],
    ) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = predictions
            .iter()
            .map(|p| self.summary_path(&p.model_name_or_path, p.sample))
            .collect();
        files.sort();
        files.dedup();
        files.extend([
            self.jsonl_path(),
            self.csv_path(),
            self.output.join(format!("{}.report.html", self.run_id)),
        ]);
        files
    }

    /// The run's lock file, inside its log folder.
    pub fn lock_path(&self) -> PathBuf {
        self.run_dir().join(LOCK_FILE)
    }
}

/// A verdict as written: the verdict wire format, version [`swe_eval_core::wire::VERDICT_VERSION`]
/// (docs/formats.md), the version first, then the verdict's fields. `verdict.json` is one;
/// each row of a run's `<run_id>.predictions.jsonl` is one (the CSV has the same columns, the
/// version last). Files written before the version field are read as version 1.
#[derive(Debug, Serialize)]
pub struct VerdictFile<'a> {
    /// [`swe_eval_core::wire::VERDICT_VERSION`].
    pub format_version: u32,
    /// The verdict's fields, at the top level of the object.
    #[serde(flatten)]
    pub verdict: &'a Verdict,
}

/// A verdict as read: any version this build reads.
#[derive(Deserialize)]
struct VerdictFileIn {
    #[serde(default)]
    format_version: Option<serde_json::Value>,
    #[serde(flatten)]
    verdict: Verdict,
}

impl<'a> VerdictFile<'a> {
    /// `verdict` in the current verdict format.
    pub fn new(verdict: &'a Verdict) -> Self {
        VerdictFile {
            format_version: swe_eval_core::wire::VERDICT_VERSION,
            verdict,
        }
    }
}

/// Writes `dir/verdict.json` atomically in the current verdict format.
pub fn write_verdict(
    dir: &Path,
    verdict: &Verdict,
) -> Result<(), swe_eval_core::fsutil::WriteError> {
    swe_eval_core::fsutil::write_json_atomic(&dir.join(VERDICT_FILE), &VerdictFile::new(verdict))
}

/// Why a verdict could not be had.
#[derive(Debug, thiserror::Error)]
pub enum VerdictError {
    /// Not JSON, or not a verdict.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// Of a format version this build does not read.
    #[error(transparent)]
    Version(#[from] swe_eval_core::wire::VersionError),
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The file's content is not a verdict this build reads.
    #[error("{}: {source}", path.display())]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong with its content.
        #[source]
        source: Box<VerdictError>,
    },
}

/// Parses one verdict in the verdict format (a `verdict.json`, or a row of a run's
/// per-prediction JSON Lines): the verdict, or why not (not JSON, not a verdict, or of a newer
/// format version).
pub fn parse_verdict(text: &[u8]) -> Result<Verdict, VerdictError> {
    let file: VerdictFileIn = serde_json::from_slice(text)?;
    swe_eval_core::wire::check(
        file.format_version.as_ref(),
        swe_eval_core::wire::VERDICT_VERSION,
        "a verdict",
    )?;
    Ok(file.verdict)
}

/// Reads a `verdict.json`: the verdict, or why it cannot be read, naming the file.
pub fn read_verdict(path: &Path) -> Result<Verdict, VerdictError> {
    let bytes = std::fs::read(path).map_err(|source| VerdictError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_verdict(&bytes).map_err(|e| VerdictError::File {
        path: path.to_path_buf(),
        source: Box::new(e),
    })
}

/// Why a run's lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The lock file could not be created.
    #[error("cannot create the run lock {path}: {source}")]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A live process holds the run's lock.
    #[error("run `{run_id}` is in use by another swe-eval process (lock {path}); wait for it or choose another --run-id")]
    Busy {
        /// The run.
        run_id: String,
        /// The lock file.
        path: PathBuf,
    },
}

/// Held for the whole run so two processes never write the same run's verdicts. The lock
/// file names its owner (see [`crate::owner::owner_id`]); a lock whose owner is gone (a run killed with
/// SIGKILL) is taken over. Removed when dropped.
#[derive(Debug)]
pub struct RunLock {
    path: PathBuf,
}

impl Drop for RunLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Refuses early, without taking the lock, when a live process holds the run's lock: what a
/// command checks before it reaches the engine, so a second run on a busy run id is refused
/// before anything is built ([`lock`] still decides, when the run starts).
pub fn refuse_if_locked(layout: &Layout) -> Result<(), LockError> {
    let path = layout.lock_path();
    let owner = std::fs::read_to_string(&path).unwrap_or_default();
    let owner = owner.trim();
    if owner.is_empty() || owner_is_dead(owner) {
        return Ok(());
    }
    Err(LockError::Busy {
        run_id: layout.run_id.clone(),
        path,
    })
}

/// Takes the run's lock, or says who holds it.
pub fn lock(layout: &Layout) -> Result<RunLock, LockError> {
    let path = layout.lock_path();
    let io = |source| LockError::Io {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(layout.run_dir()).map_err(io)?;
    // The lock appears with its owner already written: the owner goes to a temporary file
    // that is then hard-linked to the lock's name, which is atomic and fails when the lock
    // exists. So an empty or unreadable lock is never one being written: it is a torn one
    // (or of an older format) and is taken over like a dead owner's. Two tries: the second
    // after removing a stale lock; of two processes taking it over, only one link wins.
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!("{LOCK_FILE}."))
        .tempfile_in(layout.run_dir())
        .map_err(io)?;
    {
        use std::io::Write;
        tmp.write_all(owner_id().as_bytes()).map_err(io)?;
        tmp.as_file().sync_all().map_err(io)?;
    }
    for _ in 0..2 {
        match std::fs::hard_link(tmp.path(), &path) {
            Ok(()) => return Ok(RunLock { path }),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let owner = std::fs::read_to_string(&path).unwrap_or_default();
                let owner = owner.trim();
                if !owner.is_empty() && !owner_is_dead(owner) {
                    break;
                }
                let _ = std::fs::remove_file(&path);
            }
            Err(e) => return Err(io(e)),
        }
    }
    Err(LockError::Busy {
        run_id: layout.run_id.clone(),
        path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::owner::hostname;

    fn a_verdict() -> Verdict {
        serde_json::from_value(serde_json::json!({
            "instance_id": "a__b-1", "model": "m", "sample": 0, "patch_hash": "h",
            "run_id": "r", "category": "resolved", "resolved": true,
            "strict_category": "resolved", "strict_resolved": true, "official_report": true,
            "applied_with": "git apply --verbose", "fail_to_pass_success": 1,
            "fail_to_pass_failure": 0, "pass_to_pass_success": 2, "pass_to_pass_failure": 0,
            "test_exit_code": 0, "timed_out": false, "reason": null, "infra_retries": 0,
            "setup_secs": 1.0, "run_secs": 2.0, "teardown_secs": 0.5, "total_secs": 3.5,
            "shared_from": null
        }))
        .unwrap()
    }

    #[test]
    fn verdict_json_carries_its_version_and_older_and_newer_files_are_handled() {
        let dir = tempfile::tempdir().unwrap();
        let v = a_verdict();
        write_verdict(dir.path(), &v).unwrap();
        let path = dir.path().join(VERDICT_FILE);
        let text = std::fs::read_to_string(&path).unwrap();
        let obj: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(obj["format_version"], swe_eval_core::wire::VERDICT_VERSION);
        assert!(
            text.trim_start().starts_with("{\n  \"format_version\""),
            "{text}"
        );
        assert_eq!(read_verdict(&path).unwrap(), v);

        // A file from before the version field: version 1, read as is.
        let mut old = obj.clone();
        old.as_object_mut().unwrap().remove("format_version");
        std::fs::write(&path, old.to_string()).unwrap();
        assert_eq!(read_verdict(&path).unwrap(), v);

        // A newer format is refused (and a resume runs the prediction again).
        let mut newer = obj;
        newer["format_version"] = (swe_eval_core::wire::VERDICT_VERSION + 1).into();
        std::fs::write(&path, newer.to_string()).unwrap();
        let err = read_verdict(&path).unwrap_err().to_string();
        assert!(
            err.contains("verdict.json") && err.contains("newer swe-eval"),
            "{err}"
        );
    }

    #[test]
    fn layout_follows_the_official_tree_and_names_samples() {
        let l = Layout::new(Path::new("out"), "r1");
        assert_eq!(
            l.prediction_dir("org/model", "a__b-1", 0),
            Path::new("out/logs/run_evaluation/r1/org__model/a__b-1")
        );
        assert_eq!(
            l.prediction_dir("m", "a__b-1", 2),
            Path::new("out/logs/run_evaluation/r1/m/a__b-1.sample2")
        );
        assert_eq!(
            l.summary_path("org/model", 0),
            Path::new("out/org__model.r1.json")
        );
        assert_eq!(l.summary_path("m", 1), Path::new("out/m.r1.sample1.json"));
    }

    #[test]
    fn lock_is_exclusive_names_its_owner_and_takes_over_stale_ones() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path(), "r");
        let held = lock(&layout).unwrap();
        assert_eq!(
            std::fs::read_to_string(layout.lock_path()).unwrap(),
            owner_id()
        );
        assert!(
            matches!(lock(&layout), Err(LockError::Busy { .. })),
            "a live owner keeps it"
        );
        drop(held);
        assert!(!layout.lock_path().exists());
        // A torn (empty) lock and a dead owner's lock are both taken over.
        for stale in [String::new(), format!("{}:999999999:1", hostname())] {
            std::fs::write(layout.lock_path(), &stale).unwrap();
            let l = lock(&layout).unwrap();
            assert_eq!(
                std::fs::read_to_string(layout.lock_path()).unwrap(),
                owner_id()
            );
            drop(l);
        }
        let leftovers: Vec<_> = std::fs::read_dir(layout.run_dir()).unwrap().collect();
        assert!(
            leftovers.is_empty(),
            "no temporary lock files left: {leftovers:?}"
        );
    }

    #[test]
    fn a_second_lock_on_the_same_run_is_refused_and_a_dead_owners_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let l = Layout::new(dir.path(), "r");
        let held = lock(&l).unwrap();
        assert!(matches!(lock(&l), Err(LockError::Busy { .. })));
        drop(held);
        assert!(!l.lock_path().exists(), "released on drop");
        std::fs::write(
            l.lock_path(),
            format!("{}:{}:1", hostname(), std::process::id()),
        )
        .unwrap();
        let _taken = lock(&l).expect("a lock left by a dead process is taken over");
    }
}
