//! How a command's failure becomes an exit code: the error types that mean bad usage (2) or
//! nothing computable (3), and [`error_exit_code`], which looks through an error's causes.

use crate::orchestrate::Outcome;

/// Boxed library error, turned into `anyhow` only by the binary.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What every subcommand's `run` returns: how it ended, or the error that stopped it.
pub type CliResult = Result<Outcome, BoxError>;

/// Bad usage found after parsing (a malformed `--repo`, an output that is an input, ...):
/// exit code 2, like clap's own errors.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// The input yields nothing the command can compute (no rows, no logs, nothing joined):
/// exit code 3. The problems were already listed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NothingComputable(pub String);

/// The exit code of a command that failed with `err`: 2 for bad usage (including an output
/// that is an input, and names that cannot be file names), 3 for inputs that could not be
/// read as data or yield nothing, 1 for everything else. Looks through the error's causes.
pub fn error_exit_code(err: &(dyn std::error::Error + 'static)) -> i32 {
    let mut next = Some(err);
    while let Some(e) = next {
        // A workflow's error is its cause as is.
        if let Some(w) = e.downcast_ref::<crate::orchestrate::WorkflowError>() {
            return error_exit_code(w.cause());
        }
        if let Some(crate::engine::ConnectError::Choice(_)) =
            e.downcast_ref::<crate::engine::ConnectError>()
        {
            return 2;
        }
        if e.is::<UsageError>()
            || e.is::<crate::fsutil::Clobber>()
            || e.is::<crate::paths::OutputError>()
            || e.is::<crate::paths::UnsafeComponent>()
            || e.is::<crate::repos::RepoFlagError>()
            || matches!(
                e.downcast_ref::<crate::orchestrate::OptionsError>(),
                Some(crate::orchestrate::OptionsError::RepoFlag(_))
            )
            || matches!(
                e.downcast_ref::<crate::report::ReportError>(),
                Some(crate::report::ReportError::Name(_))
            )
        {
            return 2;
        }
        if let Some(load) = e.downcast_ref::<crate::dataset::LoadError>() {
            // A path that names nothing is a usage mistake; a file that is not data is input.
            return match load {
                crate::dataset::LoadError::Io { source, .. }
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    2
                }
                _ => 3,
            };
        }
        if e.is::<NothingComputable>() {
            return 3;
        }
        // `io::Error::other(inner)` hides `inner` from `source()`.
        if let Some(inner) = e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            let code = error_exit_code(inner);
            if code != 1 {
                return code;
            }
        }
        next = e.source();
    }
    1
}
