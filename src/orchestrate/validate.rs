//! Validation of a dataset: each instance's gold patch and no patch at all, run `k` times
//! each, and the instances whose verdicts cannot be trusted flagged: gold does not resolve,
//! the untouched tree already resolves, or a verdict changes between repetitions (flaky
//! tests).

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use crate::runner::{Layout, RunError, RunReport};
use swe_eval_core::predictions::Prediction;

use super::ending::{ending, Ending, Troubles};
use super::error::WorkflowError;
use super::evaluate::{refuse_inputs, MadeFolder};
use super::findings::{findings, Finding, Repeats, EMPTY, GOLD};
use super::inputs::Source;
use super::inputs::{load_inputs, Inputs};
use super::workflow::{execute, ImagePolicy, RunOutput, Work};
use crate::session::RunOptions;
use crate::session::{notice, Event, Level, PrepTimes};

/// The run id of a validation when none is given.
pub const VALIDATE_RUN_ID: &str = "validate";

/// The flaky map's file name for validation `run_id`: `flaky.<run_id>.jsonl`.
pub fn flaky_map_name(run_id: &str) -> String {
    format!("flaky.{run_id}.jsonl")
}

/// Repetitions of each of the gold and the empty run when none is given.
pub const DEFAULT_REPEAT: u32 = 2;

/// A finished validation.
pub struct Validated {
    /// The run's id.
    pub run_id: String,
    /// Runs of the gold and of the empty patch per instance.
    pub repeats: Repeats,
    /// What the runner did and wrote.
    pub report: RunReport,
    /// Where image preparation's time went.
    pub prep: PrepTimes,
    /// One finding per instance, in dataset order.
    pub findings: Vec<Finding>,
    /// Where the findings were written (`validate.<run_id>.json` in the output folder).
    pub file: PathBuf,
    /// Where the flaky map was written ([`flaky_map_name`] in the output folder): one row per
    /// instance, for `run --flaky` and `compare --flaky`.
    pub flaky_map: PathBuf,
    /// How it ended: with problems when an instance is flagged or a job had trouble.
    pub ending: Ending,
}

/// Validates the instances of `source`'s dataset (its predictions are ignored: the gold patch
/// and the empty patch are run as often as `repeats` says; with no dataset, the mini
/// benchmark's instances).
/// `opts.run_id` defaults to [`VALIDATE_RUN_ID`] here. Writes the findings to
/// `validate.<run_id>.json` in the output folder.
pub async fn validate(
    source: &Source,
    repeats: Repeats,
    opts: &RunOptions,
    interrupts: UnboundedReceiver<()>,
    events: UnboundedSender<Event>,
) -> Result<Validated, WorkflowError> {
    let mut opts = opts.clone();
    opts.output = crate::session::absolute(&opts.output)?;
    let made = MadeFolder::new(&opts.output);
    made.settle(run(source, repeats, &opts, interrupts, events).await)
}

/// [`validate`] once its output folder is known.
async fn run(
    source: &Source,
    repeats: Repeats,
    opts: &RunOptions,
    interrupts: UnboundedReceiver<()>,
    events: UnboundedSender<Event>,
) -> Result<Validated, WorkflowError> {
    swe_eval_core::fsutil::ready_folder(&opts.output)?;
    let source = Source {
        predictions: source.dataset.as_ref().map(|_| "gold".to_string()),
        ..source.clone()
    };
    let mut inputs = load_inputs(&source, &opts.output)?;
    for p in &inputs.problems {
        notice(&events, Level::Warning, p.clone());
    }
    let mini = inputs.is_mini();
    let repeats = Repeats {
        gold: repeats.gold.max(1),
        ..repeats
    };
    let run_id = opts
        .run_id
        .clone()
        .unwrap_or_else(|| VALIDATE_RUN_ID.to_string());
    let prepare = opts.prepare(inputs.mini_mirrors.clone())?;
    if source.reachable {
        let reach = inputs.keep_reachable(&prepare.repos)?;
        notice(&events, Level::Note, reach.to_string());
    }
    let mut config = opts.run_config(&run_id, mini);
    config.dedupe = false;
    config.run_empty = true;
    let predictions = gold_and_empty(&inputs, repeats);
    // A file the validation would write that is one of its inputs is refused before it runs.
    let mut writes = Layout::new(&opts.output, &run_id).closing_files(&predictions);
    writes.extend([
        opts.output.join(format!("validate.{run_id}.json")),
        opts.output.join(flaky_map_name(&run_id)),
    ]);
    refuse_inputs(&writes)?;
    // A run id another live run holds is refused before the engine is asked for anything.
    crate::runner::refuse_if_locked(&Layout::new(&opts.output, &run_id)).map_err(RunError::from)?;
    let engine = Arc::new(crate::engine::connect(&opts.engine).await?);
    let work = Work {
        dataset: &inputs.dataset,
        predictions,
        instance_ids: inputs.instance_ids.clone(),
    };
    let images = ImagePolicy {
        prepare: &prepare,
        keep: opts.keep,
        setups: Default::default(),
    };
    let output = RunOutput {
        folder: opts.output.clone(),
        summaries: true,
    };
    let (report, prep) = execute(engine, work, config, &output, images, interrupts, events).await?;
    let layout = Layout::new(&opts.output, &run_id);
    let findings = findings(&layout, &inputs.dataset, &inputs.instance_ids, repeats)?;
    let file = opts.output.join(format!("validate.{run_id}.json"));
    swe_eval_core::fsutil::write_json_atomic(&file, &findings)?;
    let rows: Vec<_> = findings
        .iter()
        .filter(|f| f.runs_missing == 0 || f.flaky)
        .map(|f| {
            let repo = inputs.dataset.get(&f.instance_id).map_or("", |i| &i.repo);
            f.flaky_row(repo)
        })
        .collect();
    let flaky_map = opts.output.join(flaky_map_name(&run_id));
    swe_eval_core::fsutil::write_atomic(
        &flaky_map,
        swe_eval_core::report::flaky_map_text(&rows).as_bytes(),
    )?;
    let flagged = findings.iter().filter(|f| f.flagged()).count();
    let troubles = Troubles::of_run(inputs.problems.len(), &report).with_failed_checks(flagged);
    Ok(Validated {
        run_id,
        repeats,
        report,
        prep,
        findings,
        file,
        flaky_map,
        ending: ending(&troubles),
    })
}

/// The predictions of a validation: for each instance of `inputs`, `repeats.gold` samples of
/// the gold patch and `repeats.empty` of the empty patch.
pub fn gold_and_empty(inputs: &Inputs, repeats: Repeats) -> Vec<Prediction> {
    let mut predictions = Vec::new();
    for id in &inputs.instance_ids {
        let Some(inst) = inputs.dataset.get(id) else {
            continue;
        };
        for sample in 0..repeats.gold.max(repeats.empty) {
            let mut push = |model: &str, patch: String| {
                predictions.push(Prediction {
                    instance_id: id.clone(),
                    model_name_or_path: model.to_string(),
                    model_patch: Some(patch),
                    sample,
                    line: None,
                    extra: Default::default(),
                })
            };
            if sample < repeats.gold {
                push(GOLD, inst.patch.clone());
            }
            if sample < repeats.empty {
                push(EMPTY, String::new());
            }
        }
    }
    predictions
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The validation's predictions per instance and model, as (model, samples) counts.
    fn counts(repeats: Repeats) -> (usize, Vec<(String, Vec<u32>)>) {
        let dir = tempfile::tempdir().unwrap();
        let inputs = super::super::load_inputs(&Source::default(), dir.path()).unwrap();
        let first = inputs.instance_ids[0].clone();
        let predictions = gold_and_empty(&inputs, repeats);
        let mut of_first: Vec<(String, Vec<u32>)> = Vec::new();
        for p in predictions.iter().filter(|p| p.instance_id == first) {
            match of_first
                .iter_mut()
                .find(|(m, _)| *m == p.model_name_or_path)
            {
                Some((_, samples)) => samples.push(p.sample),
                None => of_first.push((p.model_name_or_path.clone(), vec![p.sample])),
            }
        }
        assert_eq!(
            predictions.len(),
            inputs.instance_ids.len() * (repeats.gold + repeats.empty) as usize
        );
        (inputs.instance_ids.len(), of_first)
    }

    #[test]
    fn each_runs_gold_and_empty_k_times_and_gold_only_runs_no_empty_patch() {
        let (n, each) = counts(Repeats::each(3));
        assert!(n > 1);
        assert_eq!(
            each,
            [
                (GOLD.to_string(), vec![0, 1, 2]),
                (EMPTY.to_string(), vec![0, 1, 2])
            ]
        );
        let (_, gold) = counts(Repeats::gold_only(3));
        assert_eq!(gold, [(GOLD.to_string(), vec![0, 1, 2])]);
        let (_, uneven) = counts(Repeats { gold: 1, empty: 2 });
        assert_eq!(
            uneven,
            [(GOLD.to_string(), vec![0]), (EMPTY.to_string(), vec![0, 1])]
        );
    }
}
