//! Saved test logs for grading again: the official layout
//! (`DIR/<instance_id>/test_output.txt`, or a whole `logs/run_evaluation/<run_id>/<model>/<id>/`
//! tree, or any folder above one), or a JSON Lines file of `{instance_id, test_output}` rows
//! (a bad row is a problem of its own; the other rows still grade). Turns what is found into
//! the [`RunOutcome`] the official harness saw.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use super::{ReportError, TEST_OUTPUT_FILE};
use crate::dataset::{kind_of, InputProblem, RowError};
use crate::grading::RunOutcome;
use crate::logparse::APPLY_PATCH_FAIL;

/// The per-instance harness log of the official layout (holds the apply failure message).
pub const RUN_INSTANCE_LOG: &str = "run_instance.log";

/// swe-eval's verdict of a prediction in its log folder (`runner::store` writes it), which
/// carries the hash of the patch it ran.
pub const VERDICT_FILE: &str = "verdict.json";

/// How deep below the given folder instance folders are looked for
/// (`logs/run_evaluation/<run_id>/<model>/<id>` is five levels).
const MAX_DEPTH: usize = 6;

/// What was saved for one instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SavedLog {
    /// The eval script's output (`test_output.txt`).
    Output(String),
    /// No test output, and the harness log says the patch did not apply.
    ApplyFailed,
    /// Nothing usable was saved (the official harness would count an error).
    Missing,
}

static TIMEOUT_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"Timeout error: \d+ seconds exceeded\.\s*\z").expect("static regex")
});

impl SavedLog {
    /// The outcome the official harness saw: a test output ending with its timeout line was
    /// a timeout (it wrote no report for it), any other output is a finished run.
    pub fn outcome(&self) -> RunOutcome<'_> {
        match self {
            SavedLog::Output(log) if TIMEOUT_LINE.is_match(log) => RunOutcome::TimedOut,
            SavedLog::Output(log) => RunOutcome::Completed {
                log,
                exit_code: None,
            },
            SavedLog::ApplyFailed => RunOutcome::PatchApplyFailed,
            SavedLog::Missing => RunOutcome::Infra,
        }
    }
}

/// An index of saved logs.
#[derive(Debug, Clone)]
pub enum SavedLogs {
    /// `{instance_id, test_output}` rows, held in memory, and the rows that could not be read.
    Jsonl {
        /// The file the rows came from.
        path: PathBuf,
        /// Test output by instance id.
        rows: HashMap<String, String>,
        /// The rows that could not be read.
        problems: Vec<InputProblem>,
    },
    /// Instance folders found below a root, by folder name (several when runs or models differ).
    Tree {
        /// The folder searched.
        root: PathBuf,
        /// Instance id to the folders named after it.
        dirs: HashMap<String, Vec<PathBuf>>,
    },
}

/// A problem with one instance's saved logs.
#[derive(Debug, thiserror::Error)]
pub enum SavedLogError {
    /// The instance's report could not be written.
    #[error(transparent)]
    Report(#[from] ReportError),
    /// Several log folders are named after the instance.
    #[error("{id}: several log folders match ({}); pass --run-id to choose", .dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "))]
    Ambiguous {
        /// The instance.
        id: String,
        /// The folders that match it.
        dirs: Vec<PathBuf>,
    },
    /// The instance has log folders, but each of another model or run than the prediction's:
    /// they are not its logs.
    #[error("{id}: no log of {want}; the log folders named after it are of {} ({})", .found.join(", "), .dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "))]
    NotFor {
        /// The instance.
        id: String,
        /// What was looked for: `model m` or `model m in run r`.
        want: String,
        /// The models (and runs) the folders are of.
        found: Vec<String>,
        /// The folders.
        dirs: Vec<PathBuf>,
    },
}

impl SavedLogs {
    /// Opens a JSON Lines file or indexes a folder.
    pub fn open(path: &Path) -> Result<SavedLogs, ReportError> {
        let read_err = |source| ReportError::Read {
            path: path.to_path_buf(),
            source,
        };
        let meta = std::fs::metadata(path).map_err(read_err)?;
        if meta.is_file() {
            return Self::from_jsonl(path);
        }
        let mut dirs: HashMap<String, Vec<PathBuf>> = HashMap::new();
        let mut stack = vec![(path.to_path_buf(), 0usize)];
        while let Some((dir, depth)) = stack.pop() {
            let entries = std::fs::read_dir(&dir).map_err(|source| ReportError::Read {
                path: dir.clone(),
                source,
            })?;
            let mut is_instance = false;
            for entry in entries {
                let entry = entry.map_err(|source| ReportError::Read {
                    path: dir.clone(),
                    source,
                })?;
                let name = entry.file_name();
                // A folder with only a verdict (an empty patch's) is an instance's too: what it
                // ran is held against a given patch.
                if name == TEST_OUTPUT_FILE || name == RUN_INSTANCE_LOG || name == VERDICT_FILE {
                    is_instance = true;
                } else if depth < MAX_DEPTH && entry.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push((entry.path(), depth + 1));
                }
            }
            if is_instance {
                if let Some(id) = dir.file_name().and_then(|n| n.to_str()) {
                    dirs.entry(id.to_string()).or_default().push(dir.clone());
                }
            }
        }
        for v in dirs.values_mut() {
            v.sort();
        }
        Ok(SavedLogs::Tree {
            root: path.to_path_buf(),
            dirs,
        })
    }

    fn from_jsonl(path: &Path) -> Result<SavedLogs, ReportError> {
        let text = std::fs::read(path).map_err(|source| ReportError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let text = String::from_utf8_lossy(&text);
        let mut rows = HashMap::new();
        // The line each key was first read on: a second log for one prediction is a problem
        // of its own (the first is kept), never a silent replacement.
        let mut first_line: HashMap<String, usize> = HashMap::new();
        let mut problems = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match jsonl_row(line) {
                Ok((id, log)) => {
                    if let Some(first) = first_line.get(&id) {
                        problems.push(InputProblem::new(
                            path,
                            Some(i + 1),
                            Some("instance_id".into()),
                            format!(
                                "a second log of {id} (the first is on line {first}); this one is left out"
                            ),
                        ));
                        continue;
                    }
                    first_line.insert(id.clone(), i + 1);
                    rows.insert(id, log);
                }
                Err(e) => problems.push(e.at(path, Some(i + 1))),
            }
        }
        Ok(SavedLogs::Jsonl {
            path: path.to_path_buf(),
            rows,
            problems,
        })
    }

    /// The rows of a JSON Lines file that could not be read (none for a folder): their
    /// instances count as having no log.
    pub fn problems(&self) -> &[InputProblem] {
        match self {
            SavedLogs::Jsonl { problems, .. } => problems,
            SavedLogs::Tree { .. } => &[],
        }
    }

    /// Where the log of `key` (an instance id, or `<id>.sample<k>` for sample k > 0) was looked
    /// for, for messages about logs that are not there.
    pub fn looked_for(&self, key: &str) -> String {
        match self {
            SavedLogs::Jsonl { path, .. } => {
                format!("a row with instance_id {key} in {}", path.display())
            }
            SavedLogs::Tree { root, .. } => format!(
                "{}/{key}/{TEST_OUTPUT_FILE} (or a folder {key} with {TEST_OUTPUT_FILE} or \
                 {RUN_INSTANCE_LOG} at most {MAX_DEPTH} levels below {})",
                root.display(),
                root.display()
            ),
        }
    }

    /// Number of instances with something saved.
    pub fn len(&self) -> usize {
        match self {
            SavedLogs::Jsonl { rows, .. } => rows.len(),
            SavedLogs::Tree { dirs, .. } => dirs.len(),
        }
    }

    /// True when no instance has logs.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The run ids of a `run_evaluation/<run_id>/<model>/<id>` tree (or one below the
    /// folder), sorted; empty for other layouts.
    pub fn run_ids(&self) -> Vec<String> {
        let SavedLogs::Tree { root, dirs } = self else {
            return Vec::new();
        };
        let mut ids: Vec<String> = dirs
            .values()
            .flatten()
            .filter_map(|d| {
                let parts = relative_parts(root, d);
                let at = parts.iter().position(|p| *p == "run_evaluation")?;
                // run_evaluation/<run_id>/<model>/<id>
                (parts.len() == at + 4).then(|| parts[at + 1].to_string())
            })
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }

    /// The run id when the folder is (or holds) a `run_evaluation/<run_id>/...` tree with
    /// exactly one run.
    pub fn run_id(&self) -> Option<String> {
        let mut ids = self.run_ids();
        (ids.len() == 1).then(|| ids.remove(0))
    }

    /// The saved log of `instance_id` for a prediction of model `model_dir`. In a tree, an
    /// instance folder's parent is its model folder and the one above that its run (when the
    /// folder sits that deep below the root): a folder of another model, or of another run than
    /// `run_id` when given, is not this prediction's log (an error naming what was found, not
    /// another model's log taken silently). Several folders left: an error asking for
    /// `--run-id`.
    pub fn get(
        &self,
        instance_id: &str,
        model_dir: &str,
        run_id: Option<&str>,
    ) -> Result<SavedLog, SavedLogError> {
        Ok(self.find(instance_id, model_dir, run_id)?.0)
    }

    /// [`SavedLogs::get`], with the log's folder when it came from one (a tree).
    pub fn find(
        &self,
        instance_id: &str,
        model_dir: &str,
        run_id: Option<&str>,
    ) -> Result<(SavedLog, Option<PathBuf>), SavedLogError> {
        let (root, candidates) = match self {
            SavedLogs::Jsonl { rows, .. } => {
                let log = rows
                    .get(instance_id)
                    .map_or(SavedLog::Missing, |s| SavedLog::Output(s.clone()));
                return Ok((log, None));
            }
            SavedLogs::Tree { root, dirs } => match dirs.get(instance_id) {
                Some(c) => (root, c),
                None => return Ok((SavedLog::Missing, None)),
            },
        };
        // (run, model) of a folder, as far as its depth below the root tells.
        let place = |d: &Path| {
            let parts = relative_parts(root, d);
            let n = parts.len();
            let at = |k: usize| (n > k).then(|| parts[n - 1 - k].to_string());
            (at(2), at(1))
        };
        let chosen: Vec<&PathBuf> = candidates
            .iter()
            .filter(|d| {
                let (run, model) = place(d);
                model.is_none_or(|m| m == model_dir)
                    && run_id.is_none_or(|want| run.is_none_or(|r| r == want))
            })
            .collect();
        match chosen.as_slice() {
            [one] => Ok((read_instance_dir(one)?, Some(one.to_path_buf()))),
            [] => Err(SavedLogError::NotFor {
                id: instance_id.to_string(),
                want: match run_id {
                    Some(r) => format!("model {model_dir} in run {r}"),
                    None => format!("model {model_dir}"),
                },
                found: candidates
                    .iter()
                    .map(|d| match place(d) {
                        (Some(r), Some(m)) => format!("model {m} in run {r}"),
                        (None, Some(m)) => format!("model {m}"),
                        _ => "no model".to_string(),
                    })
                    .collect(),
                dirs: candidates.clone(),
            }),
            _ => Err(SavedLogError::Ambiguous {
                id: instance_id.to_string(),
                dirs: chosen.into_iter().cloned().collect(),
            }),
        }
    }
}

/// The components of `dir` below `root`, as text.
fn relative_parts<'a>(root: &Path, dir: &'a Path) -> Vec<&'a str> {
    dir.strip_prefix(root)
        .map(|rel| {
            rel.components()
                .filter_map(|c| c.as_os_str().to_str())
                .collect()
        })
        .unwrap_or_default()
}

/// One `{instance_id, test_output}` row, or the field at fault (if one) and why.
fn jsonl_row(line: &str) -> Result<(String, String), RowError> {
    // serde's position is within the line (always "line 1"): only its column is kept.
    let value: serde_json::Value = serde_json::from_str(line).map_err(|e| {
        let text = e.to_string();
        let what = text
            .rsplit_once(" at line ")
            .map_or(text.as_str(), |(w, _)| w);
        RowError::whole(format!("invalid JSON at column {}: {what}", e.column()))
    })?;
    let serde_json::Value::Object(mut obj) = value else {
        return Err(RowError::whole("expected an object"));
    };
    let mut string = |field: &'static str| match obj.remove(field) {
        Some(serde_json::Value::String(s)) => Ok(s),
        Some(other) => Err(RowError::in_field(
            field,
            format!("expected a string, found {}", kind_of(&other)),
        )),
        None => Err(RowError::in_field(field, "missing")),
    };
    let id = string("instance_id")?;
    let log = string("test_output")?;
    // Sample k > 0 is keyed as the run layout names its folder.
    let sample = obj.get("sample").and_then(serde_json::Value::as_u64);
    let key = match sample.and_then(|k| u32::try_from(k).ok()) {
        Some(k) => crate::predictions::sample_name(&id, k),
        None => id,
    };
    Ok((key, log))
}

/// Reads one instance folder of the official layout.
pub fn read_instance_dir(dir: &Path) -> Result<SavedLog, ReportError> {
    let read = |name: &str| -> Result<Option<String>, ReportError> {
        let p = dir.join(name);
        match std::fs::read(&p) {
            Ok(b) => Ok(Some(String::from_utf8_lossy(&b).into_owned())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(ReportError::Read { path: p, source }),
        }
    };
    if let Some(out) = read(TEST_OUTPUT_FILE)? {
        return Ok(SavedLog::Output(out));
    }
    match read(RUN_INSTANCE_LOG)? {
        Some(log) if log.contains(APPLY_PATCH_FAIL) => Ok(SavedLog::ApplyFailed),
        _ => Ok(SavedLog::Missing),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_official_tree_and_classifies() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().join("logs/run_evaluation/r1/org__m");
        std::fs::create_dir_all(base.join("a")).unwrap();
        std::fs::create_dir_all(base.join("b")).unwrap();
        std::fs::create_dir_all(base.join("c")).unwrap();
        std::fs::write(base.join("a/test_output.txt"), "x").unwrap();
        std::fs::write(
            base.join("b/run_instance.log"),
            ">>>>> Patch Apply Failed:\nerr",
        )
        .unwrap();
        std::fs::write(
            base.join("c/test_output.txt"),
            "...\n\nTimeout error: 1800 seconds exceeded.",
        )
        .unwrap();
        let logs = SavedLogs::open(t.path()).unwrap();
        assert_eq!(logs.run_id().as_deref(), Some("r1"));
        assert_eq!(
            logs.get("a", "org__m", None).unwrap(),
            SavedLog::Output("x".into())
        );
        assert_eq!(
            logs.get("b", "org__m", None).unwrap(),
            SavedLog::ApplyFailed
        );
        assert_eq!(
            logs.get("c", "org__m", None).unwrap().outcome(),
            RunOutcome::TimedOut
        );
        assert_eq!(logs.get("zz", "org__m", None).unwrap(), SavedLog::Missing);
    }

    #[test]
    fn several_runs_need_a_run_id() {
        let t = tempfile::tempdir().unwrap();
        for run in ["r1", "r2"] {
            let d = t.path().join(run).join("m").join("a");
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("test_output.txt"), run).unwrap();
        }
        let logs = SavedLogs::open(t.path()).unwrap();
        assert!(matches!(
            logs.get("a", "m", None),
            Err(SavedLogError::Ambiguous { .. })
        ));
        assert_eq!(
            logs.get("a", "m", Some("r2")).unwrap(),
            SavedLog::Output("r2".into())
        );
    }
}
