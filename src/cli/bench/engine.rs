//! `swe-eval bench engine`: the engine's own cost of a job, with no runner, no grading and no
//! files: `true` run in the trivial fixture image, `--jobs` times at each parallelism of
//! `--parallel`, with the mean time to create and start a container, to run it and to remove
//! it. It is the floor under the harness's overhead per prediction (`bench harness`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures_util::StreamExt;

use super::super::args::EngineArgs;
use crate::cli::{CliResult, Ending};
use crate::engine::{Engine, JobSpec, Limits, LABEL_OWNER, LABEL_RUN_ID, LABEL_TOOL};
use crate::trivial;

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

/// The figures at one parallelism.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Figures {
    /// Jobs at once.
    pub parallel: u32,
    /// Jobs run.
    pub jobs: u32,
    /// Wall time of them all, seconds.
    pub wall_secs: f64,
    /// Mean container creation, file copy and start, milliseconds.
    pub setup_ms: f64,
    /// Mean time the main process ran, milliseconds.
    pub run_ms: f64,
    /// Mean removal, milliseconds.
    pub teardown_ms: f64,
}

/// Runs the measurement and prints one line per parallelism.
pub fn run(args: Args) -> CliResult {
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        let engine = crate::engine::connect(&args.engine.choice()).await?;
        let image = trivial::ensure_image(&engine).await?;
        let owner = crate::owner::owner_id();
        let mut all = Vec::new();
        for &parallel in &args.parallel {
            let run_id = format!("bench-engine-{}-{parallel}", std::process::id());
            let labels = BTreeMap::from([
                (LABEL_TOOL.to_string(), "1".to_string()),
                (LABEL_RUN_ID.to_string(), run_id.clone()),
                (LABEL_OWNER.to_string(), owner.clone()),
            ]);
            let jobs = (0..args.jobs).map(|i| JobSpec {
                image: image.clone(),
                name: format!("swe-eval-{run_id}-{i}"),
                labels: labels.clone(),
                files: vec![],
                command: vec!["true".into()],
                env: vec![],
                working_dir: None,
                limits: Limits::default(),
                network: false,
                timeout: Duration::from_secs(60),
                max_output_bytes: 1 << 16,
                watch: Vec::new(),
                gate: None,
            });
            let t0 = Instant::now();
            let outs: Vec<_> = futures_util::stream::iter(jobs.map(|j| engine.run_job(j)))
                .buffer_unordered(parallel as usize)
                .collect()
                .await;
            let wall = t0.elapsed();
            let mut sums = [Duration::ZERO; 3];
            for o in outs {
                let o = o?;
                sums[0] += o.setup;
                sums[1] += o.run;
                sums[2] += o.teardown;
            }
            let mean = |d: Duration| d.as_secs_f64() * 1000.0 / f64::from(args.jobs);
            let f = Figures {
                parallel,
                jobs: args.jobs,
                wall_secs: wall.as_secs_f64(),
                setup_ms: mean(sums[0]),
                run_ms: mean(sums[1]),
                teardown_ms: mean(sums[2]),
            };
            println!(
                "{} engine, {parallel} at once: {} jobs in {:.2} s = {:.0} ms/job wall; mean setup {:.0} ms, run {:.0} ms, teardown {:.0} ms",
                args.engine.kind.as_str(),
                f.jobs,
                f.wall_secs,
                f.wall_secs * 1000.0 / f64::from(f.jobs),
                f.setup_ms,
                f.run_ms,
                f.teardown_ms
            );
            all.push(f);
        }
        if let Some(path) = &args.json {
            swe_eval_core::fsutil::write_json_atomic(path, &all)?;
        }
        Ok(Ending::Clean)
    })
}
