//! How a command ends, as an exit code: the one table every command follows.
//!
//! | code | when |
//! | --- | --- |
//! | 0 | done, nothing left to look at |
//! | 1 | the command could not finish (an unwritable or full output folder, Docker unreachable, ...) |
//! | 2 | bad usage: the argument parser's errors, a numeric flag outside its range, and mistakes found after parsing (an output that is an input, a malformed `--repo`, ...) |
//! | 3 | done, but some inputs or jobs had problems (listed on stderr), or the input yields nothing to compute |
//!
//! A finished command's [`Ending`] says 0 or 3 (decided by `orchestrate::ending`); a failed
//! one's [`CliError`] carries the [`ErrorKind`] its library error gave itself
//! (`failure::Classify`): no list of error types is looked for here.

use crate::orchestrate::Ending;
use swe_eval_core::failure::{Classify, ErrorKind};

pub use swe_eval_core::failure::{Failed, NothingComputable, UsageError};

/// What every subcommand's `run` returns: how it ended, or the error that stopped it.
pub type CliResult = Result<Ending, CliError>;

/// The error that stopped a command, with its kind. Made from any library error by `?`
/// (through [`Classify`]); a plain message is a failure (exit code 1).
#[derive(Debug)]
pub struct CliError {
    kind: ErrorKind,
    error: Box<dyn std::error::Error + Send + Sync + 'static>,
}

impl CliError {
    /// What kind of failure it is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for CliError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

impl<E: Classify + Send + Sync + 'static> From<E> for CliError {
    fn from(e: E) -> Self {
        CliError {
            kind: e.kind(),
            error: Box::new(e),
        }
    }
}

// `priority` is a leaf of the crate (it imports nothing, not even `failure`), so its error is
// classified here: a value out of range is the command line's; a refusal, the machine's.
impl Classify for crate::priority::NiceError {
    fn kind(&self) -> ErrorKind {
        match self {
            crate::priority::NiceError::OutOfRange(_) => ErrorKind::Usage,
            _ => ErrorKind::Failed,
        }
    }
}

/// A failure with no error type of its own (exit code 1), from its message.
pub fn failed(message: impl Into<String>) -> CliError {
    Failed(message.into()).into()
}

/// The exit code of a command's result: the table above, in one place.
pub fn exit_code(result: &CliResult) -> i32 {
    match result {
        Ok(Ending::Clean) => 0,
        Ok(Ending::WithProblems) => 3,
        Ok(Ending::OutputFailed) => 1,
        Err(e) => match e.kind() {
            ErrorKind::Failed => 1,
            ErrorKind::Usage => 2,
            ErrorKind::NothingComputable => 3,
        },
    }
}

/// The exit codes as every `--help` states them (after its own notes).
pub const EXIT_CODES: &str = "\
Exit codes: 0 done; 1 failed (an unwritable or full output folder among the causes); 2 bad
usage (also a numeric flag outside its range, and mistakes found after parsing, such as an
output that is an input); 3 done, but some inputs or jobs had problems (each on stderr, at
most 20 lines and then a count), or the input yields nothing to compute.";

/// `cmd` with [`EXIT_CODES`] after the help of it and of every subcommand below it, so that
/// every `--help` states them, a new command's included.
pub fn with_exit_codes(cmd: clap::Command) -> clap::Command {
    let after = match cmd.get_after_help() {
        Some(text) => format!("{text}\n\n{EXIT_CODES}"),
        None => EXIT_CODES.to_string(),
    };
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    names.iter().fold(cmd.after_help(after), |cmd, name| {
        cmd.mut_subcommand(name, with_exit_codes)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_maps_to_its_code_and_messages_are_failures() {
        let usage: CliResult = Err(UsageError("x".into()).into());
        let nothing: CliResult = Err(NothingComputable("x".into()).into());
        let failed: CliResult = Err(super::failed("disk full"));
        assert_eq!(exit_code(&usage), 2);
        assert_eq!(exit_code(&nothing), 3);
        assert_eq!(exit_code(&failed), 1);
        assert_eq!(exit_code(&Ok(Ending::Clean)), 0);
        assert_eq!(exit_code(&Ok(Ending::WithProblems)), 3);
        // A library error keeps the kind it gives itself.
        let clobber: CliResult = Err(swe_eval_core::paths::UnsafeComponent {
            what: "run id".into(),
            value: "..".into(),
            reason: "x",
        }
        .into());
        assert_eq!(exit_code(&clobber), 2);
    }
}
