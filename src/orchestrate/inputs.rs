//! A run's inputs: the dataset and the predictions, loaded, checked against each other and
//! narrowed to the instances asked for; or, with neither given, the bundled mini benchmark
//! materialized under the output folder.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use swe_eval_core::dataset::{Dataset, Instance, LoadError};
use swe_eval_core::predictions::{self, Prediction};
use swe_eval_core::repos::RepoSources;

/// The folder of the output folder the bundled mini benchmark is written to when it is the
/// input (rewritten by every run that uses it: an input, never a result).
pub const MINI_FOLDER: &str = "mini";

/// What a run reads: a dataset and predictions, narrowed to some instances; with neither
/// dataset nor predictions, the bundled mini benchmark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// Dataset rows (JSON, JSON Lines, Parquet) or a Hugging Face dataset name.
    pub dataset: Option<PathBuf>,
    /// The split of a Hugging Face dataset name.
    pub split: String,
    /// Predictions (a file, or `gold`).
    pub predictions: Option<String>,
    /// Only these instances (all when empty).
    pub instance_ids: Vec<String>,
    /// Only the reachable ones of them: complete rows whose repository a `--repo` override or
    /// the `--mirrors` folder holds ([`super::Inputs::keep_reachable`]).
    pub reachable: bool,
    /// A flaky map (`validate`'s `flaky.<run_id>.jsonl`): the run marks its predictions on the
    /// instances the map calls flaky ([`super::flaky_marks`]). Read before anything runs.
    pub flaky: Option<PathBuf>,
}

impl Default for Source {
    fn default() -> Self {
        Source {
            dataset: None,
            split: crate::hub::DEFAULT_SPLIT.to_string(),
            predictions: None,
            instance_ids: Vec::new(),
            reachable: false,
            flaky: None,
        }
    }
}

/// The run's inputs, loaded and checked.
pub struct Inputs {
    /// The dataset.
    pub dataset: Dataset,
    /// The predictions that loaded.
    pub predictions: Vec<Prediction>,
    /// The instances the run covers (the dataset, narrowed by `--instance-ids`).
    pub instance_ids: Vec<String>,
    /// Rows and predictions skipped, with file and line.
    pub problems: Vec<String>,
    /// Mirrors of the mini benchmark, when its rows are the dataset (bundled, or read from any
    /// file holding them unchanged: see [`swe_eval_core::mini::holds`]).
    pub mini_mirrors: Option<PathBuf>,
}

impl Inputs {
    /// True when the dataset is the mini benchmark's rows, however it was given.
    pub fn is_mini(&self) -> bool {
        self.mini_mirrors.is_some()
    }

    /// Narrows the instances (and their predictions) to the reachable ones (`--reachable`):
    /// complete rows ([`complete`]) whose repository `repos` holds (a `--repo` override or a
    /// mirror in the `--mirrors` folder), in dataset order. Says what was left out and why;
    /// fails when nothing is left.
    pub fn keep_reachable(&mut self, repos: &RepoSources) -> Result<Reach, InputError> {
        let mut reach = Reach {
            of: self.instance_ids.len(),
            ..Reach::default()
        };
        let ds = &self.dataset;
        self.instance_ids.retain(|id| {
            let Some(inst) = ds.get(id) else {
                return false;
            };
            if !complete(inst) {
                reach.incomplete.push(id.clone());
                false
            } else if !repos.holds(&inst.repo) {
                *reach.unreachable.entry(inst.repo.clone()).or_default() += 1;
                false
            } else {
                true
            }
        });
        reach.kept = self.instance_ids.len();
        let keep: HashSet<&str> = self.instance_ids.iter().map(String::as_str).collect();
        self.predictions
            .retain(|p| keep.contains(p.instance_id.as_str()));
        if reach.kept == 0 {
            return Err(InputError::NoneReachable(reach));
        }
        Ok(reach)
    }
}

/// A complete row: it has a test patch and FAIL_TO_PASS tests, so it can be run and graded
/// (SWE-bench Verified rows all are; a partial copy may lack them).
pub fn complete(inst: &Instance) -> bool {
    inst.test_patch
        .as_deref()
        .is_some_and(|t| !t.trim().is_empty())
        && !inst.fail_to_pass().is_empty()
}

/// What `--reachable` kept of the instances asked for, and what it left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reach {
    /// The instances asked for (the dataset, narrowed by `--instance-ids`).
    pub of: usize,
    /// The instances kept.
    pub kept: usize,
    /// Left out as incomplete (no test patch or no FAIL_TO_PASS), in dataset order.
    pub incomplete: Vec<String>,
    /// Left out for want of a source: repository -> instances.
    pub unreachable: std::collections::BTreeMap<String, usize>,
}

impl std::fmt::Display for Reach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "--reachable: {} of {} instances kept (complete, repository in --mirrors or --repo)",
            self.kept, self.of
        )?;
        let mut out = Vec::new();
        if !self.incomplete.is_empty() {
            out.push(format!(
                "{} incomplete (no test_patch or FAIL_TO_PASS)",
                self.incomplete.len()
            ));
        }
        if !self.unreachable.is_empty() {
            let repos: Vec<String> = self
                .unreachable
                .iter()
                .map(|(r, n)| format!("{r} {n}"))
                .collect();
            out.push(format!(
                "{} whose repository has no local source ({})",
                self.unreachable.values().sum::<usize>(),
                repos.join(", ")
            ));
        }
        if !out.is_empty() {
            write!(f, "; left out: {}", out.join("; "))?;
        }
        Ok(())
    }
}

/// Why the inputs could not be loaded at all.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The bundled mini benchmark could not be written out.
    #[error("cannot write the mini benchmark to {}: {source}", dir.display())]
    Mini {
        /// Where it was to go.
        dir: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Predictions were given without a dataset.
    #[error("--predictions needs --dataset")]
    PredictionsWithoutDataset,
    /// A dataset was given without predictions.
    #[error("--dataset needs --predictions (a file, or `gold`)")]
    DatasetWithoutPredictions,
    /// The dataset or the predictions could not be read.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// `--reachable` left no instance.
    #[error("{0}: nothing to do (give --mirrors a folder holding the repositories, or --repo)")]
    NoneReachable(Reach),
}

impl swe_eval_core::failure::Classify for InputError {
    fn kind(&self) -> swe_eval_core::failure::ErrorKind {
        use swe_eval_core::failure::ErrorKind;
        match self {
            InputError::Mini { .. } => ErrorKind::Failed,
            InputError::PredictionsWithoutDataset | InputError::DatasetWithoutPredictions => {
                ErrorKind::Usage
            }
            InputError::NoneReachable(_) => ErrorKind::NothingComputable,
            InputError::Load(e) => e.kind(),
        }
    }
}

/// Loads the dataset and predictions `source` names (or, with neither, materializes the mini
/// benchmark into `output/mini`). A dataset that is a Hugging Face name is read from the
/// source's split (see [`crate::hub::load_dataset_split`]).
pub fn load_inputs(source: &Source, output: &Path) -> Result<Inputs, InputError> {
    let split = source.split.as_str();
    let instance_ids = &source.instance_ids;
    let mut problems = Vec::new();
    let (ds_path, pred_spec, mini_mirrors) =
        match (source.dataset.as_deref(), source.predictions.as_deref()) {
            (None, None) => {
                let dir = output.join(MINI_FOLDER);
                let bench =
                    swe_eval_core::mini::materialize(&dir).map_err(|source| InputError::Mini {
                        dir: dir.clone(),
                        source,
                    })?;
                (
                    bench.dataset,
                    bench.predictions.to_string_lossy().into_owned(),
                    Some(bench.mirrors),
                )
            }
            (Some(d), Some(p)) => (d.to_path_buf(), p.to_string(), None),
            (None, Some(_)) => return Err(InputError::PredictionsWithoutDataset),
            (Some(_), None) => return Err(InputError::DatasetWithoutPredictions),
        };
    let (ds, ds_problems) = crate::hub::load_dataset_split(&ds_path, split)?;
    // The rows decide, not the file's name: the mini benchmark's rows get its settings and
    // its repositories wherever they were read from.
    let mini_mirrors = match mini_mirrors {
        None if swe_eval_core::mini::holds(&ds.instances) => {
            let dir = output.join(MINI_FOLDER).join("mirrors");
            Some(
                swe_eval_core::mini::materialize_mirrors(&dir)
                    .map_err(|source| InputError::Mini { dir, source })?,
            )
        }
        m => m,
    };
    problems.extend(ds_problems.iter().map(ToString::to_string));
    let loaded = predictions::load(&pred_spec, Some(&ds))?;
    problems.extend(loaded.problems.iter().map(ToString::to_string));
    let checked = predictions::check_against(&ds, loaded.items, Path::new(&pred_spec));
    problems.extend(checked.problems.iter().map(ToString::to_string));
    let mut ids: Vec<String> = ds.instances.iter().map(|i| i.instance_id.clone()).collect();
    if !instance_ids.is_empty() {
        for id in instance_ids {
            if ds.get(id).is_none() {
                problems.push(format!("--instance-ids: {id} is not in the dataset"));
            }
        }
        ids.retain(|id| instance_ids.contains(id));
    }
    let keep: HashSet<&str> = ids.iter().map(String::as_str).collect();
    let predictions = checked
        .items
        .into_iter()
        .filter(|p| keep.contains(p.instance_id.as_str()))
        .collect();
    Ok(Inputs {
        dataset: ds,
        predictions,
        instance_ids: ids,
        problems,
        mini_mirrors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mini_inputs_load_with_no_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let inputs = load_inputs(&Source::default(), dir.path()).unwrap();
        assert!(inputs.problems.is_empty(), "{:?}", inputs.problems);
        assert!(inputs.instance_ids.len() >= 8);
        assert_eq!(
            inputs.predictions.len(),
            swe_eval_core::mini::expected().len()
        );
        assert!(inputs.mini_mirrors.unwrap().is_dir());
        let only = Source {
            instance_ids: vec!["swe-eval-mini__calc-1".into()],
            ..Source::default()
        };
        let one = load_inputs(&only, dir.path()).unwrap();
        assert_eq!(one.instance_ids, ["swe-eval-mini__calc-1"]);
        assert!(one
            .predictions
            .iter()
            .all(|p| p.instance_id == "swe-eval-mini__calc-1"));
    }

    fn source(dataset: Option<&str>, predictions: Option<&str>) -> Source {
        Source {
            dataset: dataset.map(Into::into),
            predictions: predictions.map(Into::into),
            ..Source::default()
        }
    }

    #[test]
    fn the_mini_rows_get_the_mini_settings_from_any_file_and_other_rows_never_do() {
        use crate::session::{RunOptions, DEFAULT_TIMEOUT, MINI_TIMEOUT};
        use swe_eval_core::spec::Flavour;
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let settings = |inputs: &Inputs| {
            let opts = RunOptions::new(out.clone());
            let mini = inputs.is_mini();
            let prepare = opts.prepare(inputs.mini_mirrors.clone()).unwrap();
            (
                opts.run_config("r", mini).timeout,
                prepare.flavour,
                opts.run_id(mini),
            )
        };
        let bare = load_inputs(&Source::default(), &out).unwrap();
        assert_eq!(
            settings(&bare),
            (MINI_TIMEOUT, Flavour::Debian, "mini".into())
        );
        // The same rows under names that say nothing about the mini benchmark, in JSON Lines
        // and as a JSON list, with the bundled predictions and with `gold`.
        let rows: Vec<serde_json::Value> = swe_eval_core::mini::DATASET
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let jsonl = dir.path().join("rows.jsonl");
        std::fs::write(&jsonl, swe_eval_core::mini::DATASET).unwrap();
        let list = dir.path().join("verified-subset.json");
        std::fs::write(&list, serde_json::to_vec(&rows).unwrap()).unwrap();
        let preds = dir.path().join("p.jsonl");
        std::fs::write(&preds, swe_eval_core::mini::PREDICTIONS).unwrap();
        for (d, p) in [(&jsonl, preds.to_str().unwrap()), (&list, "gold")] {
            let inputs = load_inputs(&source(d.to_str(), Some(p)), &out).unwrap();
            assert!(inputs.is_mini(), "{}", d.display());
            assert_eq!(settings(&inputs), settings(&bare), "{}", d.display());
            let mirrors = inputs.mini_mirrors.unwrap();
            for (name, _) in swe_eval_core::mini::REPOS {
                assert!(mirrors
                    .join(swe_eval_core::mini::mirror_file_name(name))
                    .is_file());
            }
        }
        // One field changed in one row, or a row that is not the mini's: the general defaults.
        let mut changed = rows.clone();
        changed[0]["base_commit"] = serde_json::json!("0".repeat(40));
        let mut extra = rows.clone();
        let mut other = rows[0].clone();
        other["instance_id"] = serde_json::json!("someone__else-1");
        extra.push(other);
        for (name, rows) in [
            ("mini/dataset.jsonl", changed),
            ("mini-dataset.jsonl", extra),
        ] {
            let d = dir.path().join(name.replace('/', "_"));
            let text: Vec<String> = rows.iter().map(ToString::to_string).collect();
            std::fs::write(&d, text.join("\n")).unwrap();
            let inputs = load_inputs(&source(d.to_str(), Some("gold")), &out).unwrap();
            assert!(!inputs.is_mini(), "{name}");
            let (timeout, flavour, run_id) = settings(&inputs);
            assert_eq!(
                (timeout, flavour),
                (DEFAULT_TIMEOUT, Flavour::Official),
                "{name}"
            );
            assert!(run_id.starts_with("run-"), "{run_id}");
        }
    }

    #[test]
    fn reachable_keeps_the_complete_rows_of_the_repositories_held_locally() {
        let dir = tempfile::tempdir().unwrap();
        let mut inputs = load_inputs(&Source::default(), dir.path()).unwrap();
        // calc from the mirrors folder, strutils through --repo; intervals and iniconf from
        // nowhere local; strutils-2 made incomplete.
        let mirrors = dir.path().join("some-mirrors");
        std::fs::create_dir_all(&mirrors).unwrap();
        let calc = swe_eval_core::mini::mirror_file_name("calc");
        std::fs::copy(
            inputs.mini_mirrors.as_ref().unwrap().join(&calc),
            mirrors.join(&calc),
        )
        .unwrap();
        let mut repos = RepoSources {
            mirrors: Some(mirrors),
            ..Default::default()
        };
        repos
            .add_override("swe-eval-mini/strutils=/srv/strutils.bundle")
            .unwrap();
        let mut rows = inputs.dataset.instances.clone();
        for r in &mut rows {
            if r.instance_id == "swe-eval-mini__strutils-2" {
                r.fail_to_pass = None;
            }
        }
        inputs.dataset = Dataset::new(rows);
        let all = inputs.instance_ids.len();
        let reach = inputs.keep_reachable(&repos).unwrap();
        let kept = [
            "swe-eval-mini__calc-1",
            "swe-eval-mini__calc-2",
            "swe-eval-mini__strutils-1",
        ];
        assert_eq!(inputs.instance_ids, kept);
        assert!(inputs
            .predictions
            .iter()
            .all(|p| kept.contains(&p.instance_id.as_str())));
        assert!(!inputs.predictions.is_empty());
        assert_eq!((reach.of, reach.kept), (all, 3));
        assert_eq!(reach.incomplete, ["swe-eval-mini__strutils-2"]);
        let left: usize = reach.unreachable.values().sum();
        assert_eq!(left, all - 4);
        assert!(!reach.unreachable.contains_key("swe-eval-mini/calc"));
        let said = reach.to_string();
        assert!(
            said.contains("3 of 8 instances kept")
                && said.contains("1 incomplete")
                && said.contains("swe-eval-mini/iniconf 2"),
            "{said}"
        );
        // Nothing held: an error that says why, not an empty run.
        let err = inputs.keep_reachable(&RepoSources::default()).unwrap_err();
        assert!(matches!(err, InputError::NoneReachable(_)));
        assert!(err.to_string().contains("0 of 3 instances kept"), "{err}");
    }

    #[test]
    fn a_dataset_without_predictions_and_the_reverse_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            load_inputs(&source(None, Some("gold")), dir.path()),
            Err(InputError::PredictionsWithoutDataset)
        ));
        assert!(matches!(
            load_inputs(&source(Some("d.jsonl"), None), dir.path()),
            Err(InputError::DatasetWithoutPredictions)
        ));
    }
}
