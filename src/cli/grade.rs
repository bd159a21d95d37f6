//! `swe-eval grade`: grade again from saved test logs, as the official harness grades them.
//! Writes `OUT/<instance_id>/report.json` for every prediction the official harness would
//! write one for, the run summary `OUT/<model>.<run_id>.json`, and one row per prediction in
//! `OUT/results.jsonl` and `OUT/results.csv`.
//!
//! Several predictions for one instance are samples, numbered in file order as everywhere
//! (`reward`, `run`): sample k > 0 is graded from the log `<instance_id>.sample<k>` (the
//! folder `swe-eval run` writes for it) into `OUT/<instance_id>.sample<k>/report.json` and
//! `OUT/<model>.<run_id>.sample<k>.json`. A prediction whose log is not found is named with
//! the path looked for; with no logs at all nothing is written and the exit code is 3.

use std::path::{Path, PathBuf};

use super::{CliError, CliResult};
use crate::dataset::{self, Dataset};
use crate::grading::{self, GradeInput, Mode, Verdict};
use crate::orchestrate::{outcome, Troubles};
use crate::predictions::{self, Prediction};
use crate::report::{
    self, InstanceReport, PredictionRow, RunSummary, SavedLog, SavedLogs, Submitted, Timings,
};

/// `swe-eval grade`: the dataset, predictions and saved logs to grade.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Dataset rows (JSON, JSON Lines or Parquet) with FAIL_TO_PASS and PASS_TO_PASS, or a
    /// Hugging Face dataset name.
    #[arg(long, short = 'd', visible_alias = "dataset_name")]
    pub dataset: PathBuf,
    /// The split of a Hugging Face dataset name given as --dataset.
    #[arg(long, default_value = "test")]
    pub split: String,
    /// Predictions (JSON Lines, JSON list or object), or `gold`.
    #[arg(long, short = 'p', visible_alias = "predictions_path")]
    pub predictions: String,
    /// Saved logs: `DIR/<instance_id>/test_output.txt`, an official `logs/run_evaluation`
    /// tree (or any folder above one), or a JSON Lines file of `{instance_id, test_output}`.
    #[arg(long)]
    pub logs: PathBuf,
    /// Folder for `<instance_id>/report.json`, the run summary and `results.{jsonl,csv}`.
    #[arg(long, short = 'o', visible_alias = "report_dir")]
    pub output: PathBuf,
    /// Grade with the later hardening (see `swe_eval::grading`); the default reproduces the
    /// official harness v4.1.0 exactly.
    #[arg(long)]
    pub strict: bool,
    /// Run id for the summary's name, and to choose among several runs in a logs tree
    /// (default: the tree's only run id, else `regrade`).
    #[arg(long, visible_alias = "run_id", value_parser = crate::paths::run_id_arg)]
    pub run_id: Option<String>,
}

impl Args {
    /// What the command reads and writes, for the clobber check.
    pub fn io(&self) -> crate::paths::IoPlan {
        crate::paths::IoPlan::new()
            .input("--dataset", &self.dataset)
            .input_spec("--predictions", &self.predictions)
            .input("--logs", &self.logs)
            .output(crate::paths::Output::Folder(self.output.clone()))
    }
}

/// Everything graded, for the writers and for `bench grade`.
pub struct Graded {
    /// The predictions, in file order.
    pub predictions: Vec<Prediction>,
    /// One per prediction, same order; `None` when it could not be graded (a problem).
    pub verdicts: Vec<Option<Verdict>>,
    /// What could not be loaded or graded, one line each.
    pub problems: Vec<String>,
}

/// The key of a prediction's log: its instance id for sample 0, `<id>.sample<k>` for sample
/// k, as `swe-eval run` names its folders (one rule for samples across reward, run and grade).
pub fn log_key(p: &Prediction) -> String {
    if p.sample == 0 {
        p.instance_id.clone()
    } else {
        format!("{}.sample{}", p.instance_id, p.sample)
    }
}

/// Reads every prediction's saved log (the I/O part), keyed like `preds`; reports the rows
/// of a logs file that could not be read, and each prediction with a patch whose log is not
/// there, naming where it was looked for (it counts as an error, as the official harness
/// counts it).
pub fn read_logs(
    preds: &[Prediction],
    logs: &SavedLogs,
    run_id: Option<&str>,
    problems: &mut Vec<String>,
) -> Vec<SavedLog> {
    problems.extend(
        logs.problems()
            .iter()
            .map(|p| format!("skipped log row: {p}")),
    );
    preds
        .iter()
        .map(|p| {
            if p.patch().is_empty() {
                return SavedLog::Missing;
            }
            let key = log_key(p);
            let log = logs
                .get(&key, &p.model_dir_name(), run_id)
                .unwrap_or_else(|e| {
                    problems.push(e.to_string());
                    SavedLog::Missing
                });
            if log == SavedLog::Missing {
                problems.push(format!(
                    "{key}: no saved log; looked for {}; graded as an error",
                    logs.looked_for(&key)
                ));
            }
            log
        })
        .collect()
}

/// Grades every prediction from its saved log (no I/O), in parallel over the cores.
pub fn grade_all(
    ds: &Dataset,
    preds: &[Prediction],
    saved: &[SavedLog],
    problems: &mut Vec<String>,
) -> Vec<Option<Verdict>> {
    use rayon::prelude::*;
    let results: Vec<Result<Option<Verdict>, String>> = preds
        .par_iter()
        .zip(saved)
        .map(|(p, log)| {
            let Some(inst) = ds.get(&p.instance_id) else {
                return Ok(None);
            };
            if matches!(log, SavedLog::Output(_))
                && (inst.fail_to_pass.is_none() || inst.pass_to_pass.is_none())
            {
                return Err(format!(
                    "{}: dataset row has no FAIL_TO_PASS/PASS_TO_PASS; not graded",
                    p.instance_id
                ));
            }
            let input = GradeInput::for_instance(inst, p.model_patch.as_deref(), log.outcome());
            grading::grade(&input)
                .map(Some)
                .map_err(|e| format!("{}: {e}", p.instance_id))
        })
        .collect();
    results
        .into_iter()
        .map(|r| {
            r.unwrap_or_else(|e| {
                problems.push(e);
                None
            })
        })
        .collect()
}

/// Loads the dataset and predictions, reporting row problems.
pub fn load_inputs(
    dataset: &Path,
    split: &str,
    predictions: &str,
    problems: &mut Vec<String>,
) -> Result<(Dataset, Vec<Prediction>), CliError> {
    let (ds, ds_problems) = dataset::load_dataset_split(dataset, split)?;
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

/// Grades every prediction from its log and writes the reports, summary and rows.
pub fn run(args: Args) -> CliResult {
    let mode = if args.strict {
        Mode::Strict
    } else {
        Mode::Official
    };
    let mut problems = Vec::new();
    let (ds, preds) = load_inputs(&args.dataset, &args.split, &args.predictions, &mut problems)?;
    let logs = SavedLogs::open(&args.logs)?;
    if logs.is_empty() && preds.iter().any(|p| !p.patch().is_empty()) {
        super::print_problems("", &problems);
        return Err(super::NothingComputable(format!(
            "no saved logs in {}: looked for {}, an official logs/run_evaluation tree, or a \
             JSON Lines file of {{instance_id, test_output}}; nothing written",
            args.logs.display(),
            logs.looked_for("<instance_id>")
        ))
        .into());
    }
    let run_id = args
        .run_id
        .clone()
        .or_else(|| logs.run_id())
        .unwrap_or_else(|| "regrade".to_string());
    let saved = read_logs(&preds, &logs, args.run_id.as_deref(), &mut problems);
    let verdicts = grade_all(&ds, &preds, &saved, &mut problems);
    let graded = Graded {
        predictions: preds,
        verdicts,
        problems,
    };
    let summary = write_outputs(&args.output, &ds, &graded, mode, &run_id)?;
    report::write_graded(
        &args.output.join("report.html"),
        &run_id,
        &ds,
        &graded.predictions,
        &graded.verdicts,
        &saved,
        mode,
    )?;
    super::print_problems("", &graded.problems);
    eprintln!(
        "graded {} prediction(s) ({mode:?} mode): {} resolved, {} unresolved, {} error(s), {} empty patch(es); strict grading flips {}; wrote {}",
        graded.predictions.len(),
        summary.resolved_instances,
        summary.unresolved_instances,
        summary.error_instances,
        summary.empty_patch_instances,
        summary.strict_flipped_instances.unwrap_or(0),
        args.output.display()
    );
    Ok(outcome(&Troubles::of_inputs(graded.problems.len())))
}

/// Writes the reports, one run summary per model and sample (`<model>.<run_id>.json`, sample
/// k: `<model>.<run_id>.sample<k>.json`) and the rows; returns the summary of the first model's
/// sample 0 (for the closing line).
pub fn write_outputs(
    out: &Path,
    ds: &Dataset,
    g: &Graded,
    mode: Mode,
    run_id: &str,
) -> Result<RunSummary, CliError> {
    let mut rows = Vec::new();
    // (model, sample) -> submitted predictions, in first-seen order.
    let mut groups: Vec<((&str, u32), Vec<Submitted<'_>>)> = Vec::new();
    for (p, v) in g.predictions.iter().zip(&g.verdicts) {
        if let Some(v) = v {
            if let Some(r) = InstanceReport::from_verdict(v, mode) {
                report::write_instance_report(out, &log_key(p), &r)?;
            }
            rows.push(PredictionRow::new(p, v, mode, Timings::default()));
        }
        let key = (p.model_name_or_path.as_str(), p.sample);
        let sub = Submitted {
            instance_id: &p.instance_id,
            empty_patch: p.patch().is_empty(),
            verdict: v.as_ref(),
        };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, subs)) => subs.push(sub),
            None => groups.push((key, vec![sub])),
        }
    }
    if groups.is_empty() {
        groups.push((("none", 0), Vec::new()));
    }
    let mut first = None;
    for ((model, sample), submitted) in &groups {
        let summary = RunSummary::build(
            ds.instances.iter().map(|i| i.instance_id.as_str()),
            submitted,
            mode,
        );
        let name = crate::predictions::summary_file_name(model, run_id, 0);
        let name = if *sample == 0 {
            name
        } else {
            format!("{}.sample{sample}.json", name.trim_end_matches(".json"))
        };
        report::write_run_summary(
            &crate::paths::join_component(out, "run summary file name", &name)?,
            &summary,
        )?;
        first.get_or_insert(summary);
    }
    report::write_rows_jsonl(&out.join("results.jsonl"), &rows)?;
    report::write_rows_csv(&out.join("results.csv"), &rows)?;
    Ok(first.expect("at least one group"))
}
