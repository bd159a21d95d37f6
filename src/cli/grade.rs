//! `swe-eval grade`: grade again from saved test logs, as the official harness grades them.
//! The grading and the files are `swe_eval_core::report::regrade`; this parses the arguments and
//! prints the problems and the counts (one line per model and sample when there are several).

use std::path::PathBuf;

use super::args::DatasetFile;
use super::CliResult;
use crate::orchestrate::{ending, Troubles};
use swe_eval_core::grading::Mode;
use swe_eval_core::report::{self, Group, RegradeOptions};

/// `swe-eval grade`: the dataset, predictions and saved logs to grade.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
#[command(mut_arg("dataset", |a| a.help("Dataset rows (JSON, JSON Lines or Parquet) with FAIL_TO_PASS and PASS_TO_PASS, or a Hugging Face dataset name")))]
pub struct Args {
    /// The dataset rows, with FAIL_TO_PASS and PASS_TO_PASS.
    #[command(flatten)]
    pub dataset: DatasetFile,
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
    /// Grade with the later hardening (see `swe_eval_core::grading`); the default reproduces the
    /// official harness v4.1.0 exactly.
    #[arg(long)]
    pub strict: bool,
    /// Run id for the summary's name, and to choose among several runs in a logs tree
    /// (default: the tree's only run id, else `regrade`). A run id the tree does not hold is
    /// refused (exit 2).
    #[arg(long, visible_alias = "run_id", value_parser = swe_eval_core::paths::run_id_arg)]
    pub run_id: Option<String>,
}

impl Args {
    /// What the command reads and writes, for the clobber check.
    pub fn io(&self) -> swe_eval_core::paths::IoPlan {
        swe_eval_core::paths::IoPlan::new()
            .input("--dataset", &self.dataset.dataset)
            .input_spec("--predictions", &self.predictions)
            .input("--logs", &self.logs)
            .output(swe_eval_core::paths::Output::Folder(self.output.clone()))
    }
}

const AFTER_HELP: &str = "\
Writes OUT/<instance_id>/report.json for every prediction the official harness would write
one for, one run summary per model and sample (OUT/<model>.<run_id>.json; sample k:
OUT/<model>.<run_id>.sample<k>.json), one row per prediction in OUT/results.jsonl and .csv,
and OUT/report.html. Each prediction is graded from its own model's log folder (and its
run's, with --run-id); a prediction whose log is not found, or that cannot be graded, is an
error in every file and is named on stderr. A second log row for one prediction is left out
and named. A log that ran another patch than the prediction's (its folder's patch.diff or
verdict.json, or its test output's git status and git diff) is not the prediction's log: the
prediction is named with its file, line, model and sample and counts as an error. With no
logs at all nothing is written.";

/// Grades every prediction from its log, writes the files, prints the counts.
pub fn run(args: Args) -> CliResult {
    let dataset = crate::hub::load_dataset_split(&args.dataset.dataset, &args.dataset.split)?;
    let opts = RegradeOptions {
        predictions: args.predictions.clone(),
        logs: args.logs.clone(),
        mode: if args.strict {
            Mode::Strict
        } else {
            Mode::Official
        },
        run_id: args.run_id.clone(),
    };
    let graded = report::regrade(&opts, dataset)?;
    let groups = graded.write(&args.output)?;
    super::print_problems("", &graded.problems);
    let total = |f: fn(&Group) -> usize| groups.iter().map(f).sum::<usize>();
    let counts = |g: &[&Group]| {
        let sum = |f: fn(&Group) -> usize| g.iter().map(|x| f(x)).sum::<usize>();
        let mut line = format!(
            "{} resolved, {} unresolved, {} error(s), {} empty patch(es)",
            sum(|g| g.summary.resolved_instances),
            sum(|g| g.summary.unresolved_instances),
            sum(|g| g.summary.error_instances),
            sum(|g| g.summary.empty_patch_instances),
        );
        let no_output = sum(|g| g.without_test_output);
        if no_output > 0 {
            line += &format!(
                " ({no_output} of the unresolved have no test output: `error` in results.jsonl)"
            );
        }
        line
    };
    let all: Vec<&Group> = groups.iter().collect();
    eprintln!(
        "graded {} prediction(s) ({:?} mode) of {} model(s) and sample(s): {}; strict grading flips {}; wrote {}",
        graded.predictions.len(),
        graded.mode,
        groups.len(),
        counts(&all),
        total(|g| g.summary.strict_flipped_instances.unwrap_or(0)),
        args.output.display()
    );
    if groups.len() > 1 {
        let lines: Vec<String> = groups
            .iter()
            .map(|g| format!("  {}: {}", g.file, counts(&[g])))
            .collect();
        super::print_problems("", &lines);
    }
    Ok(ending(&Troubles::of_inputs(graded.problems.len())))
}
