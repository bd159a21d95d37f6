//! Why a package could not be built or verified ([`SubmitError`]).

use std::path::PathBuf;

use crate::fsutil::WriteError;
use crate::report::ReportError;

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
    /// The request cannot be met: an output folder that overlaps an input or is not empty,
    /// several runs or models and none chosen, no predictions, an unusable instance id.
    #[error("{0}")]
    Input(String),
}
