//! `swe-eval bench harness`: the harness's own overhead per prediction on a real engine and
//! its memory with thousands of predictions queued ([`crate::bench::measure_harness`]); prints
//! each phase as it ends.

use crate::bench::{measure_harness, HarnessEvent, HarnessOptions, Phase};
use crate::cli::{CliResult, Ending};

/// `swe-eval bench harness`: how many predictions in each phase, and how many at once.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Predictions timed on the real engine [allowed: 0 to 100000].
    #[arg(long, default_value_t = 50, value_parser = crate::cli::values::bench(swe_eval_core::bounds::BENCH_JOBS))]
    pub predictions: usize,
    /// Containers at once [allowed: 1 to 1024]; at most the engine's CPUs are used.
    #[arg(long, short = 'j', default_value_t = 2, value_parser = crate::cli::values::workers())]
    pub workers: usize,
    /// Predictions queued for the memory measurement [allowed: 0 to 100000].
    #[arg(long, default_value_t = 5000, value_parser = crate::cli::values::bench(swe_eval_core::bounds::BENCH_JOBS))]
    pub queued: usize,
    /// How many of the queued predictions run on the real engine before a graceful stop
    /// (0 skips that phase) [allowed: 0 to 100000].
    #[arg(long, default_value_t = 40, value_parser = crate::cli::values::bench(swe_eval_core::bounds::BENCH_JOBS))]
    pub queued_run: usize,
    /// Skip the fake-engine run of all queued predictions.
    #[arg(long)]
    pub no_fake: bool,
    /// Also time the official harness on the same image, eval script and predictions: the
    /// Python of a venv with `swebench==5.0.2` (e.g. `/tmp/sb5/bin/python`).
    #[arg(long, value_name = "PYTHON")]
    pub official: Option<std::path::PathBuf>,
    /// Also write the figures as JSON here.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
}

fn print(p: &Phase) {
    println!(
        "{:<34} {:>5}/{:<5} done  {:>7.2} s  {:>6.3} s/prediction  job {:>6.3} s  peak RSS {:>6.1} MiB",
        p.name, p.completed, p.predictions, p.wall_secs, p.secs_per_prediction, p.mean_job_secs, p.peak_rss_mib
    );
}

/// Prints what the benchmark reports as it goes.
fn show(event: HarnessEvent<'_>) {
    match event {
        HarnessEvent::PreparingImage => eprintln!("preparing the trivial image..."),
        HarnessEvent::Phase(p) => print(p),
        HarnessEvent::Official { official, ours } => {
            print(official);
            println!(
                "official / swe-eval per prediction: {:.3} s / {:.3} s = {:.1}x",
                official.secs_per_prediction,
                ours.secs_per_prediction,
                official.secs_per_prediction / ours.secs_per_prediction.max(1e-9)
            );
        }
        HarnessEvent::Ungraded(counts) => {
            eprintln!("warning: not every trivial prediction was graded: {counts:?}")
        }
        HarnessEvent::OfficialIncomplete { completed, of } => {
            eprintln!("warning: the official harness completed {completed} of {of}")
        }
        HarnessEvent::FakeUnresolved { resolved, of } => {
            eprintln!("warning: fake run resolved {resolved} of {of}")
        }
        HarnessEvent::FakeSkipped => eprintln!(
            "note: the fake-engine phase needs a build with the fake engine \
             (cargo run --release --features testing -- bench harness); skipped"
        ),
    }
}

/// Runs the phases and prints their figures.
pub fn run(args: Args) -> CliResult {
    let rt = tokio::runtime::Runtime::new()?;
    let opts = HarnessOptions {
        predictions: args.predictions,
        workers: args.workers,
        queued: args.queued,
        queued_run: args.queued_run,
        fake: !args.no_fake,
        official: args.official,
    };
    let phases = rt.block_on(measure_harness(&opts, show))?;
    if let Some(path) = &args.json {
        swe_eval_core::fsutil::write_json_atomic(path, &phases)?;
    }
    Ok(Ending::Clean)
}
