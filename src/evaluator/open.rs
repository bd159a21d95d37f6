//! An evaluator from the user's choices, in one call (what `swe-eval serve` starts): the
//! dataset loaded (the bundled mini benchmark's when none is given), the defaults filled in
//! from the same [`RunOptions`] as `run`, the engine chosen connected.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;

use super::core::{Evaluator, StartError};
use super::evaluation::GradedBy;
use super::options::EvaluatorOptions;
use super::request::Bounds;
use crate::engine::{AnyEngine, ConnectError};
use crate::hub::DEFAULT_SPLIT;
use crate::session::{OptionsError, RunOptions};
use swe_eval_core::dataset::{Dataset, LoadError};

/// The dataset a server evaluates against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetSource {
    /// Dataset rows, or a Hugging Face dataset name; `None`: the mini benchmark.
    pub dataset: Option<PathBuf>,
    /// The split of a Hugging Face dataset name.
    pub split: String,
    /// Only these instances (all when empty).
    pub instance_ids: Vec<String>,
}

impl Default for DatasetSource {
    fn default() -> Self {
        DatasetSource {
            dataset: None,
            split: DEFAULT_SPLIT.to_string(),
            instance_ids: Vec::new(),
        }
    }
}

/// What a server adds to the run options (each `None` takes its default).
#[derive(Debug, Clone, Default)]
pub struct ServeChoices {
    /// Prepare every instance's image at start.
    pub prepare_all: bool,
    /// Most requests accepted and not done [default: [`super::DEFAULT_MAX_QUEUE`]].
    pub max_queue: Option<usize>,
    /// The deadline of a request that names none [default: [`super::DEFAULT_DEADLINE`]].
    pub deadline: Option<Duration>,
    /// Bounds on a request [default: [`Bounds::default`]].
    pub bounds: Option<Bounds>,
    /// The grading the reward follows [default: strict]. With the strict one the jobs run
    /// strict as well (collection-altering files removed before the tests), whatever the run
    /// options say: a `conftest.py` that turns failures into passes then cannot pass, and a
    /// correct fix that also touches such a file is still graded on its tests, where grading the
    /// official run's log could only void it. With the official one the jobs run as the run
    /// options say (as the official harness unless `strict`).
    pub reward: GradedBy,
}

/// Why an evaluator could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The dataset could not be loaded.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The mini benchmark could not be written into the state folder.
    #[error("cannot write the mini benchmark to {}: {source}", dir.display())]
    Mini {
        /// Where it was to go.
        dir: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// No instance is left to serve.
    #[error("no instance to serve: {0}")]
    Empty(String),
    /// The image and repository choices cannot be used.
    #[error(transparent)]
    Options(#[from] OptionsError),
    /// No engine: a wrong choice, or it did not answer.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// The evaluator could not start.
    #[error(transparent)]
    Start(#[from] StartError),
}

/// An opened evaluator.
pub struct Opened {
    /// The evaluator.
    pub evaluator: Arc<Evaluator<AnyEngine>>,
    /// Problems it survives, as they happen.
    pub notices: UnboundedReceiver<String>,
    /// Rows of the dataset skipped, with file, line and field.
    pub problems: Vec<String>,
    /// Instances served.
    pub instances: usize,
    /// The dataset is the bundled mini benchmark.
    pub mini: bool,
}

/// Opens an evaluator of `source` with the run options `run` (its `output` is the state
/// folder) and the server's `choices`.
pub async fn open(
    source: &DatasetSource,
    run: &RunOptions,
    choices: &ServeChoices,
) -> Result<Opened, OpenError> {
    let mut run = run.clone();
    run.output = std::path::absolute(&run.output).unwrap_or(run.output.clone());
    if choices.reward == GradedBy::Strict {
        run.strict = true;
    }
    let state = run.output.clone();
    let (dataset, problems, mirrors) = load(source, &state)?;
    let mini = mirrors.is_some();
    let prepare = run.prepare(mirrors)?;
    let config = run.run_config("serve", mini);
    let mut opts = EvaluatorOptions::new(state, config, prepare);
    opts.keep = run.keep;
    opts.prepare_all = choices.prepare_all;
    opts.reward = choices.reward;
    if let Some(q) = choices.max_queue {
        opts.max_queue = q;
    }
    if let Some(d) = choices.deadline {
        opts.default_deadline = d;
    }
    if let Some(b) = choices.bounds {
        opts.bounds = b;
    }
    let instances = dataset.instances.len();
    let engine = Arc::new(crate::engine::connect(&run.engine).await?);
    let (evaluator, notices) = Evaluator::start(engine, dataset, opts).await?;
    Ok(Opened {
        evaluator: Arc::new(evaluator),
        notices,
        problems,
        instances,
        mini,
    })
}

/// The dataset of `source` (the mini benchmark, materialized under `state`, when none is
/// named), narrowed to its instances; the rows skipped; the mini benchmark's mirrors.
fn load(
    source: &DatasetSource,
    state: &Path,
) -> Result<(Dataset, Vec<String>, Option<PathBuf>), OpenError> {
    let (path, mirrors) = match &source.dataset {
        Some(d) => (d.clone(), None),
        None => {
            let dir = state.join("mini");
            let bench = swe_eval_core::mini::materialize(&dir)
                .map_err(|source| OpenError::Mini { dir, source })?;
            (bench.dataset, Some(bench.mirrors))
        }
    };
    let (ds, skipped) = crate::hub::load_dataset_split(&path, &source.split)?;
    let mut problems: Vec<String> = skipped.iter().map(ToString::to_string).collect();
    let ds = if source.instance_ids.is_empty() {
        ds
    } else {
        for id in &source.instance_ids {
            if ds.get(id).is_none() {
                problems.push(format!("--instance-ids: {id} is not in the dataset"));
            }
        }
        Dataset::new(
            ds.instances
                .into_iter()
                .filter(|i| source.instance_ids.contains(&i.instance_id))
                .collect(),
        )
    };
    if ds.instances.is_empty() {
        return Err(OpenError::Empty(format!(
            "the dataset {} has none{}",
            path.display(),
            if source.instance_ids.is_empty() {
                ""
            } else {
                " of the --instance-ids"
            }
        )));
    }
    Ok((ds, problems, mirrors))
}

impl swe_eval_core::failure::Classify for OpenError {
    fn kind(&self) -> swe_eval_core::failure::ErrorKind {
        use swe_eval_core::failure::ErrorKind;
        match self {
            OpenError::Load(e) => e.kind(),
            OpenError::Options(e) => e.kind(),
            OpenError::Connect(e) => e.kind(),
            OpenError::Start(e) => e.kind(),
            OpenError::Empty(_) => ErrorKind::NothingComputable,
            OpenError::Mini { .. } => ErrorKind::Failed,
        }
    }
}
