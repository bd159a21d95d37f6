//! Command-line definitions (clap), one file per subcommand. Each subcommand's `run` takes its
//! parsed arguments, calls the library and reports what happened; nothing here holds logic
//! that a library user would need (the run workflow is `crate::orchestrate`; `render` draws
//! its events).

// The doc comments of the argument structs are the `--help` text, written for a terminal:
// `<think>`, `<split>` and `[default: ...]` are meant literally there, not as HTML or links.
#![allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]

mod args;
mod bench;
mod command;
mod compare;
mod correlate;
mod error_text;
mod exit;
mod grade;
mod images;
mod problems;
mod progress;
mod render;
mod reward;
mod run;
mod serve;
mod spec;
mod submit;
mod validate;
mod values;

/// How a command ended when it did not fail outright (decided by
/// [`crate::orchestrate::ending()`], the one rule for every command).
pub use crate::orchestrate::Ending;
pub use command::{dispatch, Cli, Command};
pub use error_text::error_lines;
pub use exit::{
    exit_code, failed, with_exit_codes, CliError, CliResult, Failed, NothingComputable, UsageError,
    EXIT_CODES,
};
pub use problems::{print_problems, PROBLEMS_SHOWN};
