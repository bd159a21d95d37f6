//! The `swe-eval` binary: parse the command line, call the library, map errors to exit codes.
//!
//! Exit codes: 0 success; 1 the command failed (message on stderr); 2 bad usage (clap, or
//! found later: see `cli::error_exit_code`); 3 the command finished but some inputs or jobs
//! had problems (listed on stderr), or the input yields nothing computable.

use clap::Parser;

fn main() {
    let cli = swe_eval::cli::Cli::parse();
    match swe_eval::cli::dispatch(cli) {
        Ok(outcome) => std::process::exit(outcome.exit_code()),
        Err(err) => {
            let code = swe_eval::cli::error_exit_code(&*err);
            let err = anyhow::anyhow!(err);
            eprintln!("error: {err}");
            for cause in err.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            std::process::exit(code);
        }
    }
}
