//! What kind of failure an error is: every error type a command can stop with says so itself
//! ([`Classify`]), and the binary maps the kind to an exit code in one place
//! (`cli::exit_code`), with no list of types to look for.
//!
//! | kind | exit code | examples |
//! | --- | --- | --- |
//! | [`ErrorKind::Usage`] | 2 | a malformed `--repo`, an output that is an input, a run id that cannot be a folder name, a path that names nothing |
//! | [`ErrorKind::NothingComputable`] | 3 | an input that is not data at all, no rows, no logs, runs that share no instance |
//! | [`ErrorKind::Failed`] | 1 | an unwritable or full output folder, Docker unreachable, a failed build |
//!
//! The types of the leaf modules (`fsutil`, `paths`, `repos`), which import nothing of the
//! crate, are classified here; every other module classifies its own error types beside them.

/// How a command that stops with an error ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The command line asks for something that cannot be done as asked (exit code 2, as
    /// for the argument parser's own errors): the message says what to change.
    Usage,
    /// The inputs were read but yield nothing the command can compute (exit code 3): the
    /// problems were listed.
    NothingComputable,
    /// The command could not finish (exit code 1): a write, the engine, a build.
    Failed,
}

/// An error that knows what kind of failure it is.
pub trait Classify: std::error::Error {
    /// The kind of failure.
    fn kind(&self) -> ErrorKind;
}

/// `Classify` for types that are always one kind.
macro_rules! always {
    ($kind:ident: $($t:ty),+ $(,)?) => {
        $(impl Classify for $t {
            fn kind(&self) -> ErrorKind {
                ErrorKind::$kind
            }
        })+
    };
}

// The leaf modules' errors: an output that is an input, a name that cannot be a file name, a
// malformed `--repo` are usage mistakes.
always!(
    Usage: crate::fsutil::Clobber,
    crate::paths::OutputError,
    crate::paths::RunIdError,
    crate::paths::UnsafeComponent,
    crate::repos::RepoFlagError,
);

// An unwritable or full output folder, a git command that failed, and the failures of the
// libraries used: the command could not finish.
always!(
    Failed: std::io::Error,
    crate::repos::GitCommandError,
    serde_json::Error,
    csv::Error,
    rayon::ThreadPoolBuildError,
);

impl Classify for crate::fsutil::WriteError {
    fn kind(&self) -> ErrorKind {
        if self.refused_input() {
            // The output is one of the inputs: the command line asked for it.
            ErrorKind::Usage
        } else {
            // An unwritable or full output folder: the command could not finish.
            ErrorKind::Failed
        }
    }
}

/// A usage mistake found after the command line was parsed (exit code 2), with what to
/// change: for checks that have no error type of their own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

impl Classify for UsageError {
    fn kind(&self) -> ErrorKind {
        ErrorKind::Usage
    }
}

/// The input yields nothing the command can compute (exit code 3): no rows, no logs, nothing
/// joined. The problems were listed before.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NothingComputable(pub String);

impl Classify for NothingComputable {
    fn kind(&self) -> ErrorKind {
        ErrorKind::NothingComputable
    }
}

/// The command could not finish (exit code 1), for failures with no error type of their own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Failed(pub String);

impl Classify for Failed {
    fn kind(&self) -> ErrorKind {
        ErrorKind::Failed
    }
}
