//! `swe-eval run`: apply each prediction in its own container, run the hidden tests, grade
//! them as the official harness does, and write the official reports. With no `--dataset` and
//! no `--predictions` it runs the bundled mini benchmark. The run itself is
//! `orchestrate::evaluate`; this file maps the flags onto its options and renders it.

use super::args::{DatasetArgs, ExecArgs, Reachable};
use super::render::{self, print_report};
use super::CliResult;
use crate::orchestrate::{self, Source};

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  swe-eval run                                      the bundled mini benchmark
  swe-eval run -d verified.parquet -p preds.jsonl --run-id try1 -j 4
  swe-eval run -d verified.parquet -p gold -i django__django-11099 --namespace ''
  swe-eval run -d verified.jsonl -p gold --reachable --mirrors /src/mirrors --run-id all-gold

Without --dataset and --predictions, the bundled mini benchmark runs. Its settings (Debian images
from its own mirrors, a 30 s timeout, run id `mini`) go with its rows, not with a file name: a
dataset whose every row is a mini benchmark row, unchanged, gets them from any file
(datasets/mini/dataset.jsonl, a copy, another name). The bundled predictions' verdicts are then
checked against the expected ones; a patch of your own on the mini tasks is not checked. Every
other dataset gets the general defaults (official images, 1800 s, run id run-<UTC time>),
whatever its file is called.

Results go under OUTPUT (default results/): logs/run_evaluation/<run_id>/<model>/<instance_id>/
(patch.diff, eval.sh, test_output.txt, report.json, run_instance.log, verdict.json), samples
after the first in <instance_id>.sample<k>/, the official summary <model>.<run_id>.json (sample k:
<model>.<run_id>.sample<k>.json), and <run_id>.predictions.jsonl/.csv with every prediction.

Running again with the same --run-id resumes. It keeps every verdict on the patch (resolved,
unresolved, a patch that did not apply, no test output, an empty patch) and runs again: changed
patches; infrastructure errors (they say nothing about the patch); and verdicts this run's own
limits decided, a timeout or a kill for memory, when this run's --timeout or memory limit is not
the one they ran under (a patch that timed out at 60 s may pass at 1800 s). Ctrl-C (or SIGTERM)
once finishes the running jobs and writes everything; twice kills this run's containers.

Problems of a run (exit code 3): infrastructure errors, skipped rows, predictions not run.")]
/// `swe-eval run`: what to evaluate, where, and how.
pub struct Args {
    /// The dataset.
    #[command(flatten)]
    pub dataset: DatasetArgs,
    /// Predictions (JSON Lines, JSON list or object keyed by id), or `gold`.
    #[arg(long, short = 'p', visible_alias = "predictions_path")]
    pub predictions: Option<String>,
    /// Run id: names the log folder and the summaries, and is the key for resuming
    /// [default: `mini` for the mini benchmark's rows, else `run-<UTC time>`].
    #[arg(long, visible_alias = "run_id", value_parser = swe_eval_core::paths::run_id_arg)]
    pub run_id: Option<String>,
    /// Strict mode: before the tests, remove files the patch adds that change test collection
    /// (conftest.py, ...) and restore edited ones; summaries use strict grading. The strict
    /// verdict is recorded in every mode.
    #[arg(long)]
    pub strict: bool,
    /// Every reachable instance.
    #[command(flatten)]
    pub reachable: Reachable,
    /// A flaky map from `swe-eval validate -k N` (its flaky.<run_id>.jsonl): the predictions on
    /// the instances it calls flaky are listed in OUTPUT/<run_id>.flaky.json and the closing
    /// lines, with the tests that flipped (their verdicts may change on a rerun). Read before
    /// anything runs: a bad row stops the run, naming its line and field.
    #[arg(long, value_name = "FILE")]
    pub flaky: Option<std::path::PathBuf>,
    /// How the predictions execute.
    #[command(flatten)]
    pub exec: ExecArgs,
}

impl Args {
    /// What the command reads and writes, for the clobber check.
    pub fn io(&self) -> swe_eval_core::paths::IoPlan {
        let plan = self.exec.io(self.dataset.dataset.as_deref());
        let plan = match &self.flaky {
            Some(f) => plan.input("--flaky", f),
            None => plan,
        };
        match &self.predictions {
            Some(p) => plan.input_spec("--predictions", p),
            None => plan,
        }
    }
}

/// Runs the evaluation through `crate::orchestrate::evaluate`, rendering its events.
pub fn run(args: Args) -> CliResult {
    let source = Source {
        dataset: args.dataset.dataset.clone(),
        split: args.dataset.split.clone(),
        predictions: args.predictions.clone(),
        instance_ids: args.exec.instance_ids.clone(),
        reachable: args.reachable.reachable,
        flaky: args.flaky.clone(),
    };
    let opts = args.exec.options(args.run_id.clone(), args.strict);
    let rt = tokio::runtime::Runtime::new()?;
    let done = rt.block_on(render::rendered(|interrupts, events| {
        orchestrate::evaluate(&source, &opts, interrupts, events)
    }))?;
    print_report(&done.report);
    render::print_preparation(&done.prep);
    if let Some(check) = &done.mini {
        println!("{}", check.summary);
        super::print_problems("warning: ", &check.mismatches);
    }
    if let Some((marks, file)) = &done.flaky {
        print_flaky(marks, file);
    }
    Ok(done.ending)
}

/// The closing lines of `--flaky`: how many of the run's instances are flaky, and each
/// prediction on them with its verdict.
fn print_flaky(marks: &orchestrate::FlakyMarks, file: &std::path::Path) {
    println!(
        "flaky ({}): {} of the run's {} instances ({} validated); their verdicts may change on a \
         rerun; wrote {}",
        marks.map.display(),
        marks.flaky_instances.len(),
        marks.instances,
        marks.validated,
        file.display()
    );
    let lines: Vec<String> = marks
        .predictions
        .iter()
        .map(|p| {
            format!(
                "{} {} sample {}: {} (flipped in validation: {})",
                p.instance_id,
                p.model,
                p.sample,
                p.category.as_str(),
                if p.flipping_tests.is_empty() {
                    "the verdict".to_string()
                } else {
                    p.flipping_tests.join(", ")
                }
            )
        })
        .collect();
    super::print_problems("  flaky: ", &lines);
}
