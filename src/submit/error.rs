//! Why a package could not be built or verified ([`SubmitError`]).

use std::path::PathBuf;

use swe_eval_core::fsutil::WriteError;
use swe_eval_core::report::ReportError;

/// Why a package could not be built or verified.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    /// An input could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file of the package could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// A run's report file could not be read or written.
    #[error(transparent)]
    Report(#[from] ReportError),
    /// The request cannot be met as asked (bad usage): an output folder that overlaps an
    /// input or is not empty, several runs or models and none chosen, a model or package that
    /// is not there.
    #[error("{0}")]
    Usage(String),
    /// The inputs yield no package: no predictions, an unusable instance id.
    #[error("{0}")]
    Input(String),
    /// Every prediction was left out (each named in `warnings`): nothing is written.
    #[error("nothing to package: no prediction of {model} (sample {sample}) is left (see the warnings); nothing written")]
    NothingToPackage {
        /// The model chosen.
        model: String,
        /// The sample chosen.
        sample: u32,
        /// Why each prediction was left out, and the other warnings.
        warnings: Vec<super::Warning>,
    },
    /// The package written disagrees with its own logs graded again (each difference named);
    /// it is not kept.
    #[error("the package does not verify ({} difference(s)); nothing written", .0.len())]
    Unverified(Vec<String>),
}

impl swe_eval_core::failure::Classify for SubmitError {
    fn kind(&self) -> swe_eval_core::failure::ErrorKind {
        use swe_eval_core::failure::ErrorKind;
        match self {
            SubmitError::Usage(_) => ErrorKind::Usage,
            SubmitError::Input(_) => ErrorKind::NothingComputable,
            SubmitError::Unverified(_) => ErrorKind::Failed,
            SubmitError::NothingToPackage { .. } => ErrorKind::NothingComputable,
            SubmitError::Report(e) => e.kind(),
            SubmitError::Read { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                ErrorKind::Usage
            }
            SubmitError::Write(e) => e.kind(),
            SubmitError::Read { .. } => ErrorKind::Failed,
        }
    }
}
