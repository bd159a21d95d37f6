//! `swe-eval bench engine`: the engine's own cost of a job ([`crate::bench::measure_engine`]);
//! prints a line per parallelism as it is measured.

use super::super::args::EngineArgs;
use crate::bench::{measure_engine, EngineFigures};
use crate::cli::{CliResult, Ending};

/// `swe-eval bench engine`: how many jobs, how many at once, on which engine.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Jobs at each parallelism [allowed: 1 to 1000].
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub jobs: u32,
    /// Jobs at once, one measurement each (comma-separated) [allowed: 1 to 64].
    #[arg(long, value_delimiter = ',', default_values_t = [1u32, 2],
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub parallel: Vec<u32>,
    /// Where the jobs run.
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Also write the figures as JSON here.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
}

/// Runs the measurement and prints one line per parallelism.
pub fn run(args: Args) -> CliResult {
    let rt = tokio::runtime::Runtime::new()?;
    let kind = args.engine.kind.as_str();
    let line = |f: &EngineFigures| {
        println!(
            "{kind} engine, {} at once: {} jobs in {:.2} s = {:.0} ms/job wall; mean setup {:.0} ms, run {:.0} ms, teardown {:.0} ms",
            f.parallel,
            f.jobs,
            f.wall_secs,
            f.wall_secs * 1000.0 / f64::from(f.jobs),
            f.setup_ms,
            f.run_ms,
            f.teardown_ms
        )
    };
    let all = rt.block_on(measure_engine(
        &args.engine.choice(),
        args.jobs,
        &args.parallel,
        line,
    ))?;
    if let Some(path) = &args.json {
        swe_eval_core::fsutil::write_json_atomic(path, &all)?;
    }
    Ok(Ending::Clean)
}
