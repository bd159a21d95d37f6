//! `run` as one library call: load the inputs, fill in the defaults, connect the engine chosen,
//! execute (images prepared beside the jobs), check the mini benchmark's verdicts, and decide
//! how the run ended. Reports through [`Event`]s; prints nothing.

use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use super::ending::{ending, Ending, Troubles};
use super::error::WorkflowError;
use super::flaky_marks::{flaky_marks, flaky_marks_name, FlakyMarks};
use super::inputs::Source;
use super::inputs::{load_inputs, InputError};
use super::mini_check::{check_mini, MiniCheck};
use super::workflow::{execute, ImagePolicy, RunOutput, Work};
use crate::runner::{Layout, RunReport};
use crate::session::RunOptions;
use crate::session::{notice, Event, Level, PrepTimes};

/// A finished run.
pub struct Evaluated {
    /// The run's id (chosen, or the default for its input).
    pub run_id: String,
    /// What the runner did and wrote.
    pub report: RunReport,
    /// Where image preparation's time went.
    pub prep: PrepTimes,
    /// The mini benchmark's verdicts against the expected ones, when it was the input and the
    /// comparison could be made (a failure to compare is a warning event).
    pub mini: Option<MiniCheck>,
    /// With a flaky map (`Source::flaky`): the run's predictions on flaky instances, and the
    /// file they were written to (`<run_id>.flaky.json`).
    pub flaky: Option<(FlakyMarks, std::path::PathBuf)>,
    /// How the run ended: clean, or with problems to look at.
    pub ending: Ending,
}

/// Runs the predictions `source` names with `opts`. `interrupts` delivers one message per
/// Ctrl-C (see [`execute`]); `events` receives everything the user should see, input problems
/// first (as warnings).
pub async fn evaluate(
    source: &Source,
    opts: &RunOptions,
    interrupts: UnboundedReceiver<()>,
    events: UnboundedSender<Event>,
) -> Result<Evaluated, WorkflowError> {
    let mut opts = opts.clone();
    // Git and the image builder run in other folders: relative paths must not change meaning.
    opts.output = crate::session::absolute(&opts.output)?;
    // An unwritable or full output folder fails now, not after hours of image builds.
    swe_eval_core::fsutil::ready_folder(&opts.output)?;
    let mut inputs = load_inputs(source, &opts.output)?;
    let flaky_map = match &source.flaky {
        Some(p) => Some((
            p.clone(),
            swe_eval_core::report::read_flaky_map(p).map_err(InputError::from)?,
        )),
        None => None,
    };
    for p in &inputs.problems {
        notice(&events, Level::Warning, p.clone());
    }
    let mini = inputs.is_mini();
    let run_id = opts.run_id(mini);
    let prepare = opts.prepare(inputs.mini_mirrors.clone())?;
    if source.reachable {
        let reach = inputs.keep_reachable(&prepare.repos)?;
        notice(&events, Level::Note, reach.to_string());
    }
    let config = opts.run_config(&run_id, mini);
    let engine = Arc::new(crate::engine::connect(&opts.engine).await?);
    let work = Work {
        dataset: &inputs.dataset,
        predictions: inputs.predictions.clone(),
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
    let (report, prep) = execute(
        engine,
        work,
        config,
        &output,
        images,
        interrupts,
        events.clone(),
    )
    .await?;
    let mut failed_checks = 0;
    // Only the bundled predictions have expected verdicts; a user's own patches on the mini
    // tasks get the mini settings and no check.
    let bundled = if mini {
        swe_eval_core::mini::bundled_keys(&inputs.predictions)
    } else {
        Default::default()
    };
    let check = if !bundled.is_empty() {
        match check_mini(&report, opts.strict, &bundled) {
            Ok(check) => {
                failed_checks = check.mismatches.len();
                Some(check)
            }
            Err(e) => {
                let message = format!("cannot compare with the expected verdicts: {e}");
                notice(&events, Level::Warning, message);
                None
            }
        }
    } else {
        None
    };
    let flaky = match &flaky_map {
        Some((path, map)) => {
            let layout = Layout::new(&opts.output, &run_id);
            let marks = flaky_marks(map, path, &layout, &inputs.instance_ids)?;
            let file = opts.output.join(flaky_marks_name(&run_id));
            swe_eval_core::fsutil::write_json_atomic(&file, &marks)?;
            Some((marks, file))
        }
        None => None,
    };
    let troubles =
        Troubles::of_run(inputs.problems.len(), &report).with_failed_checks(failed_checks);
    Ok(Evaluated {
        run_id,
        report,
        prep,
        mini: check,
        flaky,
        ending: ending(&troubles),
    })
}
