//! Why a report file could not be read or written ([`ReportError`]).

use std::path::PathBuf;

use crate::fsutil::WriteError;

/// A failed report read or write.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// An instance id or model name that cannot be a file name.
    #[error(transparent)]
    Name(#[from] crate::paths::UnsafeComponent),
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A file is not valid JSON of the expected shape.
    #[error("{path}: not an official report.json: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the JSON parser said.
        #[source]
        source: serde_json::Error,
    },
    /// A `report.json` without exactly one instance id key.
    #[error("{path}: expected one instance id key in report.json, found {found}")]
    Shape {
        /// The file.
        path: PathBuf,
        /// How many top-level keys it has.
        found: usize,
    },
    /// A CSV file could not be written.
    #[error("cannot write CSV {path}: {source}")]
    Csv {
        /// The file.
        path: PathBuf,
        /// What the CSV writer said.
        #[source]
        source: csv::Error,
    },
}

impl crate::failure::Classify for ReportError {
    fn kind(&self) -> crate::failure::ErrorKind {
        use crate::failure::ErrorKind;
        match self {
            ReportError::Name(_) => ErrorKind::Usage,
            ReportError::Write(e) => crate::failure::Classify::kind(e),
            ReportError::Read { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                ErrorKind::Usage
            }
            ReportError::Parse { .. } | ReportError::Shape { .. } => ErrorKind::NothingComputable,
            _ => ErrorKind::Failed,
        }
    }
}
