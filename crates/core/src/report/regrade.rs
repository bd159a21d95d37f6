//! Grading again from saved test logs (`swe-eval grade`): load the dataset and predictions,
//! find each prediction's log ([`SavedLogs`]), grade it as the official harness does, and write
//! `OUT/<instance_id>/report.json` for every prediction the official harness would write one
//! for, one run summary per model and sample (`OUT/<model>.<run_id>.json`, sample k:
//! `OUT/<model>.<run_id>.sample<k>.json`), one row per prediction in `OUT/results.jsonl` and
//! `OUT/results.csv`, and `OUT/report.html`.
//!
//! One grade, one set of counts: every prediction has one verdict (one that could not be
//! graded is an infrastructure error, [`Graded::ungraded`], and is named among the
//! problems), and that verdict is the one its report, its summary, its row and the counts of
//! [`Regraded::groups`] are made from.
//!
//! Several predictions for one instance are samples, numbered in file order as everywhere
//! (`reward`, `run`): sample k > 0 is graded from the log `<instance_id>.sample<k>` (the
//! folder `swe-eval run` writes for it). A prediction's log must be of its own model (and of
//! `--run-id`'s run when given): another model's log is never taken for it.

use std::path::{Path, PathBuf};

use crate::dataset::{Dataset, InputProblem, LoadError};
use crate::grading::{self, GradeInput, Graded, Mode};
use crate::predictions::{self, Prediction};

use super::logs::{SavedLog, SavedLogs};
use super::{InstanceReport, PredictionRow, ReportError, RunSummary, Submitted, Timings};

/// What to grade.
#[derive(Debug, Clone)]
pub struct RegradeOptions {
    /// Predictions: a file, or `gold`.
    pub predictions: String,
    /// The saved logs: a folder (official layout, or above one) or a JSON Lines file.
    pub logs: PathBuf,
    /// Official or strict grading.
    pub mode: Mode,
    /// The run to grade when the logs hold several, and the summaries' run id (default: the
    /// logs' only run id, else `regrade`).
    pub run_id: Option<String>,
}

/// Why nothing could be graded.
#[derive(Debug, thiserror::Error)]
pub enum RegradeError {
    /// The dataset or the predictions could not be loaded.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The logs could not be read.
    #[error(transparent)]
    Logs(ReportError),
    /// No saved log at all, while some prediction has a patch.
    #[error(
        "no saved logs in {}: looked for {looked_for}, an official logs/run_evaluation tree, or \
         a JSON Lines file of {{instance_id, test_output}}; nothing written",
        logs.display()
    )]
    NoLogs {
        /// The logs path.
        logs: PathBuf,
        /// Where a log was looked for.
        looked_for: String,
    },
    /// `--run-id` names no run of the logs.
    #[error("--run-id {run_id}: the logs in {} hold the runs {}; choose one of them", logs.display(), runs.join(", "))]
    UnknownRun {
        /// The run id asked for.
        run_id: String,
        /// The logs path.
        logs: PathBuf,
        /// The runs the logs hold.
        runs: Vec<String>,
    },
}

impl crate::failure::Classify for RegradeError {
    fn kind(&self) -> crate::failure::ErrorKind {
        use crate::failure::ErrorKind;
        match self {
            RegradeError::Load(e) => e.kind(),
            RegradeError::Logs(e) => e.kind(),
            RegradeError::NoLogs { .. } => ErrorKind::NothingComputable,
            RegradeError::UnknownRun { .. } => ErrorKind::Usage,
        }
    }
}

/// Everything graded.
pub struct Regraded {
    /// The dataset.
    pub dataset: Dataset,
    /// The predictions, in file order.
    pub predictions: Vec<Prediction>,
    /// Each prediction's saved log, same order.
    pub saved: Vec<SavedLog>,
    /// Each prediction's verdict, same order.
    pub verdicts: Vec<Graded>,
    /// What could not be loaded or graded, one line each.
    pub problems: Vec<String>,
    /// The run id of the summaries.
    pub run_id: String,
    /// The grading mode.
    pub mode: Mode,
}

/// One model's sample: its run summary, as written.
#[derive(Debug, Clone)]
pub struct Group {
    /// The model.
    pub model: String,
    /// The sample number.
    pub sample: u32,
    /// The summary's file name.
    pub file: String,
    /// The summary: the group's counts.
    pub summary: RunSummary,
    /// Predictions of the group whose log has no test output: the summary counts them
    /// completed and unresolved, as the official harness does; their rows say `error`.
    pub without_test_output: usize,
}

/// The key of a prediction's log: its instance id for sample 0, `<id>.sample<k>` for sample
/// k, as `swe-eval run` names its folders (`predictions::sample_name`).
pub fn log_key(p: &Prediction) -> String {
    predictions::sample_name(&p.instance_id, p.sample)
}

/// Loads the predictions against a loaded dataset (with the problems of its rows), reporting
/// row problems.
pub fn load_inputs(
    dataset: (Dataset, Vec<InputProblem>),
    predictions: &str,
    problems: &mut Vec<String>,
) -> Result<(Dataset, Vec<Prediction>), LoadError> {
    let (ds, ds_problems) = dataset;
    problems.extend(
        ds_problems
            .iter()
            .map(|p| format!("skipped dataset row: {p}")),
    );
    let loaded = predictions::load(predictions, Some(&ds))?;
    problems.extend(
        loaded
            .problems
            .iter()
            .map(|p| format!("skipped prediction: {p}")),
    );
    let checked = predictions::check_against(&ds, loaded.items, Path::new(predictions));
    problems.extend(
        checked
            .problems
            .iter()
            .map(|p| format!("skipped prediction: {p}")),
    );
    Ok((ds, checked.items))
}

/// Reads every prediction's saved log (the I/O part), keyed like `preds`; reports the rows
/// of a logs file that could not be read, and each prediction with a patch whose log is not
/// there, naming where it was looked for (it counts as an error, as the official harness
/// counts it). A log that ran another patch than the prediction's (its folder's `patch.diff`,
/// `verdict.json`, or its test output's `git status` and `git diff`, `super::check_log`) is
/// not the prediction's: named with the predictions file, line, model and sample, and the
/// prediction counts as having no log (an error), never graded from it.
pub fn read_logs(
    preds: &[Prediction],
    preds_path: &str,
    logs: &SavedLogs,
    run_id: Option<&str>,
    problems: &mut Vec<String>,
) -> Vec<SavedLog> {
    problems.extend(
        logs.problems()
            .iter()
            .map(|p| format!("skipped log row: {p}")),
    );
    // In parallel over the cores (each log is read and held against its patch), the problems
    // kept in prediction order.
    use rayon::prelude::*;
    let found: Vec<(SavedLog, Option<String>)> = preds
        .par_iter()
        .map(|p| {
            if p.patch().is_empty() {
                return (SavedLog::Missing, None);
            }
            let key = log_key(p);
            let failed = |e: &dyn std::fmt::Display| {
                (SavedLog::Missing, Some(format!("{e}; graded as an error")))
            };
            match logs.find(&key, &p.model_dir_name(), run_id) {
                Ok((SavedLog::Missing, folder))
                    if folder.is_none()
                        || !matches!(
                            super::check_log(folder.as_deref(), &SavedLog::Missing, p.patch()),
                            Ok(super::Check::Differs(_))
                        ) =>
                {
                    (
                        SavedLog::Missing,
                        Some(format!(
                            "{key}: no saved log; looked for {}; graded as an error",
                            logs.looked_for(&key)
                        )),
                    )
                }
                Ok((log, folder)) => match super::check_log(folder.as_deref(), &log, p.patch()) {
                    Ok(super::Check::Differs(why)) => (
                        SavedLog::Missing,
                        Some(format!(
                            "{}: {} (model {}, sample {}): its log ran another patch: {why}; \
                             not graded from it (counted as an error)",
                            prediction_at(preds_path, p),
                            p.instance_id,
                            p.model_name_or_path,
                            p.sample
                        )),
                    ),
                    Ok(_) => (log, None),
                    Err(e) => failed(&e),
                },
                Err(e) => failed(&e),
            }
        })
        .collect();
    found
        .into_iter()
        .map(|(log, problem)| {
            problems.extend(problem);
            log
        })
        .collect()
}

/// `FILE:LINE` of a prediction (its position for `gold`), for messages.
pub fn prediction_at(preds_path: &str, p: &Prediction) -> String {
    match p.line {
        Some(l) => format!("{preds_path}:{l}"),
        None => preds_path.to_string(),
    }
}

/// Why one prediction is not graded from its saved log (the others still are).
#[derive(Debug, thiserror::Error)]
enum NotGraded {
    /// Its instance is not in the dataset.
    #[error("{instance_id}: not in the dataset; not graded")]
    NotInDataset {
        /// The prediction's instance.
        instance_id: String,
    },
    /// Its log is there, but the dataset's row does not say which tests must pass.
    #[error("{instance_id}: dataset row has no FAIL_TO_PASS/PASS_TO_PASS; not graded")]
    NoTestLists {
        /// The prediction's instance.
        instance_id: String,
    },
    /// The row names a log parser this grader does not have.
    #[error("{instance_id}: {source}; not graded")]
    Parser {
        /// The prediction's instance.
        instance_id: String,
        /// The parser named.
        #[source]
        source: crate::logparse::UnknownParser,
    },
}

/// Grades every prediction from its saved log (no I/O), in parallel over the cores. A
/// prediction that cannot be graded gets [`Graded::ungraded`] and a problem line.
pub fn grade_all(
    ds: &Dataset,
    preds: &[Prediction],
    saved: &[SavedLog],
    problems: &mut Vec<String>,
) -> Vec<Graded> {
    use rayon::prelude::*;
    let results: Vec<Result<Graded, NotGraded>> = preds
        .par_iter()
        .zip(saved)
        .map(|(p, log)| {
            let instance_id = || p.instance_id.clone();
            let Some(inst) = ds.get(&p.instance_id) else {
                return Err(NotGraded::NotInDataset {
                    instance_id: instance_id(),
                });
            };
            if matches!(log, SavedLog::Output(_))
                && (inst.fail_to_pass.is_none() || inst.pass_to_pass.is_none())
            {
                return Err(NotGraded::NoTestLists {
                    instance_id: instance_id(),
                });
            }
            let input = GradeInput::for_instance(inst, p.model_patch.as_deref(), log.outcome());
            grading::grade(&input).map_err(|source| NotGraded::Parser {
                instance_id: instance_id(),
                source,
            })
        })
        .collect();
    results
        .into_iter()
        .map(|r| {
            r.unwrap_or_else(|e| {
                problems.push(e.to_string());
                Graded::ungraded()
            })
        })
        .collect()
}

/// Loads the predictions against `dataset` (loaded, with its rows' problems: rows with
/// FAIL_TO_PASS and PASS_TO_PASS), reads the logs and grades (nothing written).
pub fn regrade(
    opts: &RegradeOptions,
    dataset: (Dataset, Vec<InputProblem>),
) -> Result<Regraded, RegradeError> {
    let mut problems = Vec::new();
    let (ds, preds) = load_inputs(dataset, &opts.predictions, &mut problems)?;
    let logs = SavedLogs::open(&opts.logs).map_err(RegradeError::Logs)?;
    if logs.is_empty() && preds.iter().any(|p| !p.patch().is_empty()) {
        return Err(RegradeError::NoLogs {
            logs: opts.logs.clone(),
            looked_for: logs.looked_for("<instance_id>"),
        });
    }
    let runs = logs.run_ids();
    if let Some(r) = &opts.run_id {
        if !runs.is_empty() && !runs.contains(r) {
            return Err(RegradeError::UnknownRun {
                run_id: r.clone(),
                logs: opts.logs.clone(),
                runs,
            });
        }
    }
    let run_id = opts
        .run_id
        .clone()
        .or_else(|| logs.run_id())
        .unwrap_or_else(|| "regrade".to_string());
    let saved = read_logs(
        &preds,
        &opts.predictions,
        &logs,
        opts.run_id.as_deref(),
        &mut problems,
    );
    let verdicts = grade_all(&ds, &preds, &saved, &mut problems);
    Ok(Regraded {
        dataset: ds,
        predictions: preds,
        saved,
        verdicts,
        problems,
        run_id,
        mode: opts.mode,
    })
}

impl Regraded {
    /// One run summary per model and sample, in the order each first appears: the counts of
    /// every output and of the closing lines.
    pub fn groups(&self) -> Vec<Group> {
        // (model, sample) -> its predictions' indices, in first-seen order.
        let mut keys: Vec<((&str, u32), Vec<usize>)> = Vec::new();
        for (i, p) in self.predictions.iter().enumerate() {
            let key = (p.model_name_or_path.as_str(), p.sample);
            match keys.iter_mut().find(|(k, _)| *k == key) {
                Some((_, v)) => v.push(i),
                None => keys.push((key, vec![i])),
            }
        }
        keys.into_iter()
            .map(|((model, sample), members)| {
                let submitted: Vec<Submitted<'_>> = members
                    .iter()
                    .map(|&i| Submitted {
                        instance_id: &self.predictions[i].instance_id,
                        empty_patch: self.predictions[i].patch().is_empty(),
                        verdict: Some(&self.verdicts[i]),
                    })
                    .collect();
                let summary = RunSummary::build(
                    self.dataset
                        .instances
                        .iter()
                        .map(|i| i.instance_id.as_str()),
                    &submitted,
                    self.mode,
                );
                let file = predictions::summary_file_name(model, &self.run_id, sample);
                let without_test_output = members
                    .iter()
                    .filter(|&&i| {
                        let v = &self.verdicts[i];
                        v.official_report && v.tests.is_none()
                    })
                    .count();
                Group {
                    model: model.to_string(),
                    sample,
                    file,
                    summary,
                    without_test_output,
                }
            })
            .collect()
    }

    /// Writes the reports, the run summaries, the rows and `report.html` into `out`; returns
    /// the groups written.
    pub fn write(&self, out: &Path) -> Result<Vec<Group>, ReportError> {
        let mut rows = Vec::with_capacity(self.predictions.len());
        for (p, v) in self.predictions.iter().zip(&self.verdicts) {
            if let Some(r) = InstanceReport::from_verdict(v, self.mode) {
                super::write_instance_report(out, &log_key(p), &r)?;
            }
            rows.push(PredictionRow::new(p, v, self.mode, Timings::default()));
        }
        let groups = self.groups();
        for g in &groups {
            let path = crate::paths::join_component(out, "run summary file name", &g.file)?;
            super::write_run_summary(&path, &g.summary)?;
        }
        super::write_rows_jsonl(&out.join("results.jsonl"), &rows)?;
        super::write_rows_csv(&out.join("results.csv"), &rows)?;
        super::html::write_graded(
            &out.join("report.html"),
            &self.run_id,
            &self.dataset,
            &self.predictions,
            &self.verdicts,
            &self.saved,
            self.mode,
        )?;
        Ok(groups)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jsonl(path: &Path, rows: &[serde_json::Value]) {
        let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
        std::fs::write(path, text).unwrap();
    }

    /// Official grading of `preds` from `logs`, every run.
    fn official(preds: &Path, logs: PathBuf) -> RegradeOptions {
        RegradeOptions {
            predictions: preds.to_string_lossy().into_owned(),
            logs,
            mode: Mode::Official,
            run_id: None,
        }
    }

    fn log(inst: &crate::dataset::Instance, pass: bool) -> String {
        let mut s = String::from(">>>>> Start Test Output\n");
        for t in inst.fail_to_pass().iter().chain(inst.pass_to_pass()) {
            s += &format!("{} {t}\n", if pass { "PASSED" } else { "FAILED" });
        }
        s + ">>>>> End Test Output\n"
    }

    /// Two models' logs in one tree: each prediction is graded from its own model's folder,
    /// each model gets its own summary, and every prediction has a row.
    #[test]
    fn two_models_in_one_tree_are_graded_apart_and_counted_once() {
        let d = tempfile::tempdir().unwrap();
        let bench = crate::mini::materialize(&d.path().join("mini")).unwrap();
        let (ds, _) = crate::dataset::load_dataset(&bench.dataset).unwrap();
        let loaded = || crate::dataset::load_dataset(&bench.dataset).unwrap();
        let mut preds = Vec::new();
        for (k, inst) in ds.instances.iter().enumerate() {
            for (model, pass) in [("model-a", k < 2), ("model-b", k < 6)] {
                preds.push(serde_json::json!({
                    "instance_id": inst.instance_id, "model_name_or_path": model,
                    "model_patch": inst.patch,
                }));
                let dir = d
                    .path()
                    .join("logs/logs/run_evaluation/r1")
                    .join(model)
                    .join(&inst.instance_id);
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join("test_output.txt"), log(inst, pass)).unwrap();
            }
        }
        let preds_path = d.path().join("preds.jsonl");
        jsonl(&preds_path, &preds);
        let opts = official(&preds_path, d.path().join("logs"));
        let g = regrade(&opts, loaded()).unwrap();
        assert!(g.problems.is_empty(), "{:?}", g.problems);
        assert_eq!(g.run_id, "r1");
        let groups = g.write(&d.path().join("out")).unwrap();
        let counts: Vec<(String, usize, usize)> = groups
            .iter()
            .map(|g| {
                (
                    g.model.clone(),
                    g.summary.resolved_instances,
                    g.summary.unresolved_instances,
                )
            })
            .collect();
        assert_eq!(counts, [("model-a".into(), 2, 6), ("model-b".into(), 6, 2)]);
        let rows = std::fs::read_to_string(d.path().join("out/results.jsonl")).unwrap();
        assert_eq!(rows.lines().count(), 16);
        assert_eq!(rows.matches("\"resolved\":true").count(), 8);

        // A run id the logs do not hold is bad usage, not another run's logs.
        let err = regrade(
            &RegradeOptions {
                run_id: Some("r9".into()),
                ..opts.clone()
            },
            loaded(),
        )
        .err()
        .unwrap();
        assert!(matches!(err, RegradeError::UnknownRun { .. }), "{err}");
        // A model with no folder of its own gets no other model's log.
        let one = d.path().join("one.jsonl");
        jsonl(
            &one,
            &[serde_json::json!({
                "instance_id": ds.instances[0].instance_id, "model_name_or_path": "model-c",
                "model_patch": ds.instances[0].patch,
            })],
        );
        let g = regrade(
            &RegradeOptions {
                predictions: one.to_string_lossy().into_owned(),
                ..opts
            },
            loaded(),
        )
        .unwrap();
        assert_eq!(g.verdicts[0].category, grading::Category::InfraError);
        assert!(
            g.problems[0].contains("no log of model model-c"),
            "{:?}",
            g.problems
        );
    }

    /// A log whose patch.diff is another patch than the prediction's is not its log: the
    /// prediction is named (file, line, model, sample) and counted an error; each sample is
    /// held against its own folder.
    #[test]
    fn a_log_of_another_patch_is_never_graded_as_the_predictions() {
        let d = tempfile::tempdir().unwrap();
        let bench = crate::mini::materialize(&d.path().join("mini")).unwrap();
        let loaded = || crate::dataset::load_dataset(&bench.dataset).unwrap();
        let (ds, _) = loaded();
        let inst = &ds.instances[0];
        let model = d.path().join("logs/logs/run_evaluation/r1/m");
        for (folder, patch) in [
            (inst.instance_id.clone(), "the patch that ran\n"),
            (format!("{}.sample1", inst.instance_id), "sample one\n"),
        ] {
            std::fs::create_dir_all(model.join(&folder)).unwrap();
            std::fs::write(model.join(&folder).join("patch.diff"), patch).unwrap();
            std::fs::write(model.join(&folder).join("test_output.txt"), log(inst, true)).unwrap();
        }
        let preds_path = d.path().join("preds.jsonl");
        let pred = |patch: &str| {
            serde_json::json!({"instance_id": inst.instance_id, "model_name_or_path": "m",
                "model_patch": patch})
        };
        jsonl(
            &preds_path,
            &[pred("another patch\n"), pred("sample one\n")],
        );
        let opts = official(&preds_path, d.path().join("logs"));
        let g = regrade(&opts, loaded()).unwrap();
        assert_eq!(g.problems.len(), 1, "{:?}", g.problems);
        assert!(
            g.problems[0].starts_with(&format!(
                "{}:1: {} (model m, sample 0): its log ran another patch: ",
                preds_path.display(),
                inst.instance_id
            )),
            "{}",
            g.problems[0]
        );
        assert_eq!(g.verdicts[0].category, grading::Category::InfraError);
        assert!(
            g.verdicts[1].category(Mode::Official).is_resolved(),
            "sample 1 is graded from its own folder, whose patch it is"
        );
    }
}
