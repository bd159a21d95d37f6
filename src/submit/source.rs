//! The finished run to package ([`Source`]): its predictions, read from a prediction file or
//! back from a run's log tree, where each one's test output is, and the run's own summaries.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use swe_eval_core::predictions::Prediction;
use swe_eval_core::report::{log_key, SavedLog, SavedLogError, SavedLogs};

use super::error::SubmitError;
use super::results;
use super::results::PATCH_FILE;

/// The finished run to package.
pub struct Source {
    /// Every prediction of the run (several models or samples are narrowed down by [`super::build`]).
    pub predictions: Vec<Prediction>,
    /// The predictions file they were read from, for messages (`None`: read back from the
    /// run's own log folders).
    pub predictions_path: Option<String>,
    /// The run's test outputs.
    pub logs: Logs,
    /// Chooses among several runs in a logs tree.
    pub run_id: Option<String>,
    /// The run's own official summaries (`<model>.<run_id>.json`), to cross-check the package.
    pub summaries: Vec<PathBuf>,
}

/// Where each prediction's test output is.
#[derive(Debug)]
pub enum Logs {
    /// Looked up by instance id (and model, run id) in saved logs.
    Saved(SavedLogs),
    /// Each prediction's own log folder, by (model, sample, instance id), as
    /// [`predictions_from_tree`] found them.
    Folders(HashMap<(String, u32, String), PathBuf>),
}

impl Logs {
    /// The saved log of `p` (its own sample's: `<id>.sample<k>` for sample k > 0), with the
    /// folder it came from, if any.
    pub(super) fn find(
        &self,
        p: &Prediction,
        run_id: Option<&str>,
    ) -> Result<(SavedLog, Option<PathBuf>), SubmitError> {
        match self {
            // Folders of other models only: this prediction has no log (warned as no_logs).
            Logs::Saved(saved) => match saved.find(&log_key(p), &p.model_dir_name(), run_id) {
                Err(SavedLogError::NotFor { .. }) => Ok((SavedLog::Missing, None)),
                other => other.map_err(|e| SubmitError::Usage(e.to_string())),
            },
            Logs::Folders(dirs) => {
                let key = (
                    p.model_name_or_path.clone(),
                    p.sample,
                    p.instance_id.clone(),
                );
                match dirs.get(&key) {
                    Some(dir) => Ok((
                        swe_eval_core::report::read_instance_dir(dir)?,
                        Some(dir.clone()),
                    )),
                    None => Ok((SavedLog::Missing, None)),
                }
            }
        }
    }
}

/// An instance id that is safe as one folder name.
pub(super) fn safe_component(id: &str) -> bool {
    !id.is_empty()
        && id != "."
        && id != ".."
        && !id.contains(['/', '\\', '\0'])
        && !id.starts_with('-')
}

/// Predictions read back from a run's log tree, with each one's folder: every folder below
/// `run` holding a `patch.diff` (or only swe-eval's `verdict.json`: an empty patch), as
/// `.../<run_id>/<model>/<instance_id>[.sample<k>]/`.
pub fn predictions_from_tree(
    run: &Path,
    run_id: Option<&str>,
) -> Result<(Vec<Prediction>, Logs), SubmitError> {
    let mut found = Vec::new();
    let mut stack = vec![(run.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|source| SubmitError::Read {
            path: dir.clone(),
            source,
        })?;
        let mut is_prediction = false;
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name == PATCH_FILE || name == swe_eval_core::report::VERDICT_FILE {
                is_prediction = true;
            } else if depth < 6 && entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push((entry.path(), depth + 1));
            }
        }
        if is_prediction {
            found.push(dir);
        }
    }
    let mut preds = Vec::new();
    let mut dirs = HashMap::new();
    let mut runs = BTreeSet::new();
    for dir in found {
        let name = |p: Option<&Path>| {
            p.and_then(Path::file_name)
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string()
        };
        let leaf = name(Some(&dir));
        let model = name(dir.parent());
        let this_run = name(dir.parent().and_then(Path::parent));
        if run_id.is_some_and(|r| r != this_run) {
            continue;
        }
        runs.insert(this_run);
        let (id, sample) = match swe_eval_core::predictions::parse_sample_name(&leaf) {
            (id, Some(k)) => (id, k),
            (_, None) => (leaf.clone(), 0),
        };
        let patch_path = dir.join(PATCH_FILE);
        let patch = if patch_path.is_file() {
            results::read_text(&patch_path)?
        } else {
            String::new()
        };
        dirs.insert((model.clone(), sample, id.clone()), dir.clone());
        preds.push(Prediction {
            instance_id: id,
            model_name_or_path: model,
            model_patch: Some(patch),
            sample,
            line: None,
            extra: Default::default(),
        });
    }
    if runs.len() > 1 {
        return Err(SubmitError::Usage(format!(
            "{} holds several runs ({}); pass --run-id to choose one",
            run.display(),
            runs.into_iter().collect::<Vec<_>>().join(", ")
        )));
    }
    preds.sort_by(|a, b| (&a.instance_id, a.sample).cmp(&(&b.instance_id, b.sample)));
    Ok((preds, Logs::Folders(dirs)))
}

/// The official run summaries at the top of a run folder (`<model>.<run_id>[.sample<k>].json`).
pub fn summaries_in(run: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(run) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "json"))
        .filter(|p| {
            std::fs::read(p)
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .is_some_and(|v| {
                    v.get("resolved_ids").is_some() && v.get("schema_version").is_some()
                })
        })
        .collect();
    v.sort();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_tree_gives_every_sample_with_its_own_folder() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("logs/run_evaluation/r1/org__m");
        // Sample 0 had an empty patch: swe-eval wrote only its verdict.
        std::fs::create_dir_all(model.join("a__b-1")).unwrap();
        std::fs::write(model.join("a__b-1/verdict.json"), b"{}").unwrap();
        std::fs::create_dir_all(model.join("a__b-1.sample1")).unwrap();
        std::fs::write(model.join("a__b-1.sample1/patch.diff"), b"diff").unwrap();
        std::fs::write(model.join("a__b-1.sample1/test_output.txt"), b"log 1").unwrap();
        let (preds, logs) = predictions_from_tree(dir.path(), None).unwrap();
        let got: Vec<(u32, &str)> = preds.iter().map(|p| (p.sample, p.patch())).collect();
        assert_eq!(got, [(0, ""), (1, "diff")]);
        assert_eq!(preds[0].model_name_or_path, "org__m");
        assert_eq!(logs.find(&preds[0], None).unwrap().0, SavedLog::Missing);
        assert_eq!(
            logs.find(&preds[1], None).unwrap().0,
            SavedLog::Output("log 1".into()),
            "each sample's log comes from its own folder"
        );
        let other = dir.path().join("logs/run_evaluation/r2/org__m/a__b-1");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("patch.diff"), b"x").unwrap();
        let e = predictions_from_tree(dir.path(), None).unwrap_err();
        assert!(e.to_string().contains("several runs (r1, r2)"), "{e}");
        assert_eq!(
            predictions_from_tree(dir.path(), Some("r2"))
                .unwrap()
                .0
                .len(),
            1
        );
    }

    #[test]
    fn unsafe_ids_are_refused_as_folder_names() {
        for bad in ["", ".", "..", "a/b", "-rf", "a\\b"] {
            assert!(!safe_component(bad), "{bad:?}");
        }
        assert!(safe_component("django__django-11099"));
    }
}
