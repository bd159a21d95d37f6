//! What loading gives ([`Loaded`]): the rows, and each [`InputProblem`] named by file, line
//! and field; what is wrong with one row before its file and line are attached
//! ([`RowError`]); and why a file could not be loaded at all ([`LoadError`]).

use std::path::{Path, PathBuf};

/// Where in an input file a problem is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file.
    pub path: PathBuf,
    /// 1-based line for JSON Lines and JSON; row number (1-based) for Parquet.
    pub line: Option<usize>,
    /// The field at fault, when one can be named.
    pub field: Option<String>,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        Ok(())
    }
}

/// A problem with one row (the other rows still load) or with a whole file.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{location}: {message}")]
pub struct InputProblem {
    /// Where the problem is.
    pub location: Location,
    /// What is wrong there.
    pub message: String,
}

impl InputProblem {
    /// A problem at `path`, on `line` and in `field` when they are known: `message`.
    pub fn new(
        path: impl Into<PathBuf>,
        line: Option<usize>,
        field: Option<String>,
        message: impl Into<String>,
    ) -> InputProblem {
        InputProblem {
            location: Location {
                path: path.into(),
                line,
                field,
            },
            message: message.into(),
        }
    }
}

/// What is wrong with one row, as its reader finds it: the field at fault (none for the row
/// as a whole) and what is wrong there. The loader that knows the file and the line makes it
/// an [`InputProblem`] ([`RowError::at`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", field.as_ref().map(|f| format!("field `{f}`: ")).unwrap_or_default())]
pub struct RowError {
    /// The field at fault, when one can be named.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl RowError {
    /// Field `field` is at fault: `message`.
    pub fn in_field(field: impl Into<String>, message: impl Into<String>) -> RowError {
        RowError {
            field: Some(field.into()),
            message: message.into(),
        }
    }

    /// The row as a whole is at fault: `message`.
    pub fn whole(message: impl Into<String>) -> RowError {
        RowError {
            field: None,
            message: message.into(),
        }
    }

    /// The problem this is at `path`, on `line` when it is known.
    pub fn at(self, path: &Path, line: Option<usize>) -> InputProblem {
        InputProblem::new(path.to_path_buf(), line, self.field, self.message)
    }
}

/// A file that could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not in a readable format at all.
    #[error("{0}")]
    Invalid(InputProblem),
    /// A dataset named rather than given as a file (a Hugging Face dataset name) whose files
    /// could not be had: the fetching side's error.
    #[error(transparent)]
    Fetch(Box<dyn std::error::Error + Send + Sync + 'static>),
}

impl crate::failure::Classify for LoadError {
    fn kind(&self) -> crate::failure::ErrorKind {
        use crate::failure::ErrorKind;
        match self {
            // A path that names nothing is a usage mistake; a file that is not data is input.
            LoadError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                ErrorKind::Usage
            }
            _ => ErrorKind::NothingComputable,
        }
    }
}

/// What a loader produced: the rows that loaded, and the problems of those that did not.
#[derive(Debug, Clone)]
pub struct Loaded<T> {
    /// The rows that loaded.
    pub items: Vec<T>,
    /// The rows that did not, and why.
    pub problems: Vec<InputProblem>,
}

impl<T> Default for Loaded<T> {
    fn default() -> Self {
        Loaded {
            items: Vec::new(),
            problems: Vec::new(),
        }
    }
}
