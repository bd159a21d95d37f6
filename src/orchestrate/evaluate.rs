//! `run` as one library call: load the inputs, fill in the defaults, connect the engine chosen,
//! execute (images prepared beside the jobs), check the mini benchmark's verdicts, and decide
//! how the run ended. Reports through [`Event`]s; prints nothing.

use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use super::ending::{ending, Ending, Troubles};
use super::error::WorkflowError;
use super::flaky_marks::{flaky_marks, flaky_marks_name, FlakyMarks};
use super::inputs::load_inputs;
use super::inputs::Source;
use super::mini_check::{check_mini, MiniCheck};
use super::workflow::{execute, ImagePolicy, RunOutput, Work};
use crate::runner::{Layout, RunError, RunReport};
use crate::session::RunOptions;
use crate::session::{notice, Event, Level, PrepTimes};

/// Refuses the run when a file it would write is one of its inputs.
pub(super) fn refuse_inputs(writes: &[std::path::PathBuf]) -> Result<(), WorkflowError> {
    for f in writes {
        swe_eval_core::fsutil::refuse_if_input(f).map_err(WorkflowError::Clobber)?;
    }
    Ok(())
}

/// An output folder a workflow made: removed again when the workflow fails and the folder
/// holds no file but run locks and the written-out mini benchmark (the engine away, a refused input), so a failed start leaves
/// nothing behind. A folder that was there before, or one holding a verdict or a build log,
/// is left as it is: nothing computed is lost.
pub(super) struct MadeFolder(Option<std::path::PathBuf>);

impl MadeFolder {
    /// Notes whether `output` is there yet.
    pub(super) fn new(output: &std::path::Path) -> Self {
        MadeFolder((!output.exists()).then(|| output.to_path_buf()))
    }

    /// `done`, after removing the folder this workflow made when it failed with nothing in it.
    pub(super) fn settle<T>(self, done: Result<T, WorkflowError>) -> Result<T, WorkflowError> {
        if let (Err(_), Some(dir)) = (&done, &self.0) {
            if !holds_a_file(dir) {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
        done
    }
}

/// Whether the output folder `dir` holds, at any depth, a file that is not a run lock, leaving
/// out the bundled mini benchmark written out as the input.
fn holds_a_file(dir: &std::path::Path) -> bool {
    holds(dir, Some(super::inputs::MINI_FOLDER))
}

fn holds(dir: &std::path::Path, skip: Option<&str>) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return true;
    };
    entries.flatten().any(|e| match e.file_type() {
        Ok(t) if t.is_dir() => skip.is_none_or(|s| e.file_name() != s) && holds(&e.path(), None),
        Ok(_) => !e
            .file_name()
            .to_string_lossy()
            .starts_with(crate::runner::LOCK_FILE),
        Err(_) => true,
    })
}

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
    // The flaky map is read before anything is written: a map that cannot be used is the
    // command line's mistake, and the output folder is not even made.
    let flaky_map = match &source.flaky {
        Some(p) => Some((
            p.clone(),
            swe_eval_core::report::read_flaky_map(p).map_err(WorkflowError::Flaky)?,
        )),
        None => None,
    };
    let made = MadeFolder::new(&opts.output);
    made.settle(run(source, &opts, flaky_map, interrupts, events).await)
}

/// [`evaluate`] once the flaky map is read.
async fn run(
    source: &Source,
    opts: &RunOptions,
    flaky_map: Option<(std::path::PathBuf, swe_eval_core::report::FlakyMap)>,
    interrupts: UnboundedReceiver<()>,
    events: UnboundedSender<Event>,
) -> Result<Evaluated, WorkflowError> {
    // An unwritable or full output folder fails now, not after hours of image builds.
    swe_eval_core::fsutil::ready_folder(&opts.output)?;
    let mut inputs = load_inputs(source, &opts.output)?;
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
    // A file the run would write that is one of its inputs is refused before anything runs.
    let layout = Layout::new(&opts.output, &run_id);
    let mut writes = layout.closing_files(&inputs.predictions);
    if flaky_map.is_some() {
        writes.push(opts.output.join(flaky_marks_name(&run_id)));
    }
    refuse_inputs(&writes)?;
    // A run id another live run holds is refused before the engine is asked for anything.
    crate::runner::refuse_if_locked(&Layout::new(&opts.output, &run_id)).map_err(RunError::from)?;
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
