//! Why a workflow (`evaluate`, `validate`) could not finish.

use super::inputs::InputError;
use crate::engine::ConnectError;
use crate::runner::RunError;
use crate::session::OptionsError;

/// Why a workflow could not finish. Each variant is its cause as is (`Display` and `source`
/// pass through), so a caller classifies it by [`WorkflowError::cause`].
#[derive(Debug, thiserror::Error)]
pub enum WorkflowError {
    /// The dataset or predictions could not be loaded.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The image and repository choices cannot be used.
    #[error(transparent)]
    Options(#[from] OptionsError),
    /// No engine: a wrong choice, or it did not answer.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// The run could not start or finish its files.
    #[error(transparent)]
    Run(#[from] RunError),
    /// A validation's verdicts could not be read back.
    #[error(transparent)]
    Findings(#[from] super::findings::FindingsError),
    /// A result file could not be written.
    #[error(transparent)]
    Write(#[from] swe_eval_core::fsutil::WriteError),
    /// The `--flaky` map cannot be read (missing, unreadable, or a bad row): the command line
    /// asks for a file that cannot be used.
    #[error("--flaky: {0}")]
    Flaky(#[source] swe_eval_core::dataset::LoadError),
    /// A file the run would write is one of its inputs.
    #[error("the run would write {}, which is the input {} ({}): choose another --output folder or --run-id", .0.output.display(), .0.input.display(), .0.flag)]
    Clobber(swe_eval_core::fsutil::Clobber),
}

impl swe_eval_core::failure::Classify for WorkflowError {
    fn kind(&self) -> swe_eval_core::failure::ErrorKind {
        match self {
            WorkflowError::Input(e) => e.kind(),
            WorkflowError::Options(e) => e.kind(),
            WorkflowError::Connect(e) => e.kind(),
            WorkflowError::Run(e) => e.kind(),
            WorkflowError::Findings(e) => e.kind(),
            WorkflowError::Write(e) => e.kind(),
            WorkflowError::Flaky(_) | WorkflowError::Clobber(_) => {
                swe_eval_core::failure::ErrorKind::Usage
            }
        }
    }
}

impl WorkflowError {
    /// The error this one stands for.
    pub fn cause(&self) -> &(dyn std::error::Error + 'static) {
        match self {
            WorkflowError::Input(e) => e,
            WorkflowError::Options(e) => e,
            WorkflowError::Connect(e) => e,
            WorkflowError::Run(e) => e,
            WorkflowError::Findings(e) => e,
            WorkflowError::Write(e) => e,
            WorkflowError::Flaky(e) => e,
            WorkflowError::Clobber(e) => e,
        }
    }
}
