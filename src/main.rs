//! The `swe-eval` binary: parse the command line, call the library, map the result to an
//! exit code (`cli::exit_code`, the one table: 0 done; 1 failed; 2 bad usage; 3 done with
//! problems, or nothing to compute).

use clap::{CommandFactory, FromArgMatches};

fn main() {
    // Every `--help` ends with the exit codes (`cli::with_exit_codes`).
    let matches = swe_eval::cli::with_exit_codes(swe_eval::cli::Cli::command()).get_matches();
    let cli = swe_eval::cli::Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let result = swe_eval::cli::dispatch(cli);
    let code = swe_eval::cli::exit_code(&result);
    if let Err(err) = result {
        for line in swe_eval::cli::error_lines(&err) {
            eprintln!("{line}");
        }
    }
    std::process::exit(code);
}
