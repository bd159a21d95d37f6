//! `bench engine`: the engine's own cost of a job, with no runner, no grading and no files:
//! `true` run in the trivial fixture image, a number of times at each parallelism asked for,
//! with the mean time to create and start a container, to run it and to remove it. It is the
//! floor under the harness's overhead per prediction (`bench harness`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures_util::StreamExt;

use super::BenchError;
use crate::engine::{Engine, EngineChoice, JobSpec, Limits, LABEL_OWNER, LABEL_RUN_ID, LABEL_TOOL};
use crate::trivial;

/// The figures at one parallelism.
#[derive(Debug, Clone, serde::Serialize)]
pub struct EngineFigures {
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

/// Runs `jobs` jobs at each parallelism of `parallel` on the engine `choice` names, handing
/// each parallelism's figures to `measured` as soon as they are in; returns them all.
pub async fn measure_engine(
    choice: &EngineChoice,
    jobs: u32,
    parallel: &[u32],
    mut measured: impl FnMut(&EngineFigures),
) -> Result<Vec<EngineFigures>, BenchError> {
    let engine = crate::engine::connect(choice).await?;
    let image = trivial::ensure_image(&engine).await?;
    let owner = crate::owner::owner_id();
    let mut all = Vec::new();
    for &parallel in parallel {
        let run_id = format!("bench-engine-{}-{parallel}", std::process::id());
        let labels = BTreeMap::from([
            (LABEL_TOOL.to_string(), "1".to_string()),
            (LABEL_RUN_ID.to_string(), run_id.clone()),
            (LABEL_OWNER.to_string(), owner.clone()),
        ]);
        let specs = (0..jobs).map(|i| JobSpec {
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
        let outs: Vec<_> = futures_util::stream::iter(specs.map(|j| engine.run_job(j)))
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
        let mean = |d: Duration| d.as_secs_f64() * 1000.0 / f64::from(jobs);
        let f = EngineFigures {
            parallel,
            jobs,
            wall_secs: wall.as_secs_f64(),
            setup_ms: mean(sums[0]),
            run_ms: mean(sums[1]),
            teardown_ms: mean(sums[2]),
        };
        measured(&f);
        all.push(f);
    }
    Ok(all)
}
