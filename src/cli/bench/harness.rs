//! `swe-eval bench harness`: the harness's own overhead per prediction (everything but the test
//! command) on a real engine, and the orchestrator's memory with thousands of predictions
//! queued.
//!
//! Trivial tasks: a one-file repository, a patch that applies with `git apply`, and an eval
//! script whose test command is `true` between the official markers. Three phases:
//! 1. `--predictions` distinct predictions at `--workers`: wall time per prediction (the
//!    figure to compare with the official harness) and the mean job latency.
//! 2. `--queued` predictions queued on the real engine, stopped gracefully after
//!    `--queued-run` of them finished: peak memory (VmHWM) with the whole queue held.
//! 3. The same number run to the end on the fake engine (every file written): peak memory.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::cli::{failed, CliError, CliResult, Ending};
use crate::engine::Engine;
use crate::orchestrate::{execute_ready, Ready};
use crate::runner::{self, RunConfig, RunEvent, RunReport};
use crate::session::Event;
use crate::trivial;

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

/// The figures of one phase.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Phase {
    /// What the phase ran (`real engine, trivial tasks`, `fake engine, 5000 run to the end`, ...).
    pub name: String,
    /// Predictions in the phase.
    pub predictions: usize,
    /// Predictions that got a verdict.
    pub completed: usize,
    /// Concurrent jobs.
    pub workers: usize,
    /// Wall time of the phase, seconds.
    pub wall_secs: f64,
    /// Wall time divided by completed predictions.
    pub secs_per_prediction: f64,
    /// Mean of each job's own time (container create to removal, grading, files).
    pub mean_job_secs: f64,
    /// Peak resident memory of this process so far (VmHWM), MiB.
    pub peak_rss_mib: f64,
    /// Resident memory at the end of the phase (VmRSS), MiB.
    pub rss_mib: f64,
}

/// Peak and current resident memory of this process, MiB (Linux `/proc/self/status`).
pub fn memory_mib() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// `n` trivial predictions over `n` instances sharing `image`, each patch distinct.
fn trivial_plan(n: usize, image: &str, command: &str) -> Ready {
    let mut plan = Ready::default();
    for i in 0..n {
        let id = format!("bench__trivial-{i}");
        plan.setups
            .insert(id.clone(), trivial::setup(&id, image, command));
        plan.predictions.push(trivial::prediction(
            &id,
            "bench",
            0,
            &trivial::fix(&i.to_string()),
        ));
        plan.instance_ids.push(id);
    }
    plan
}

/// Runs `plan` into `dir`; with `stop_after`, sends one interrupt once that many verdicts are
/// in.
async fn timed<E: Engine>(
    engine: Arc<E>,
    name: &str,
    plan: Ready,
    cfg: RunConfig,
    dir: &Path,
    stop_after: Option<usize>,
) -> Result<(Phase, RunReport), CliError> {
    let n = plan.predictions.len();
    let workers = cfg.workers;
    let (itx, irx) = mpsc::unbounded_channel();
    let (etx, mut erx) = mpsc::unbounded_channel();
    let watcher = tokio::spawn(async move {
        let (mut done, mut job_secs) = (0usize, 0.0f64);
        while let Some(ev) = erx.recv().await {
            if let Event::Run(RunEvent::Verdict { verdict, .. }) = ev {
                done += 1;
                job_secs += verdict.total_secs;
                if Some(done) == stop_after {
                    let _ = itx.send(());
                }
            }
        }
        (done, job_secs)
    });
    let t = Instant::now();
    let report = execute_ready(engine, plan, cfg, dir, irx, etx).await?;
    let wall = t.elapsed().as_secs_f64();
    let (done, job_secs) = watcher
        .await
        .map_err(|e| failed(format!("the job watcher stopped: {e}")))?;
    let (peak, rss) = memory_mib();
    let phase = Phase {
        name: name.to_string(),
        predictions: n,
        completed: done,
        workers,
        wall_secs: wall,
        secs_per_prediction: wall / done.max(1) as f64,
        mean_job_secs: job_secs / done.max(1) as f64,
        peak_rss_mib: peak,
        rss_mib: rss,
    };
    Ok((phase, report))
}

fn print(p: &Phase) {
    println!(
        "{:<34} {:>5}/{:<5} done  {:>7.2} s  {:>6.3} s/prediction  job {:>6.3} s  peak RSS {:>6.1} MiB",
        p.name, p.completed, p.predictions, p.wall_secs, p.secs_per_prediction, p.mean_job_secs, p.peak_rss_mib
    );
}

/// Times the official harness (SWE-bench 5 rows naming `image` and `eval_script`) on the
/// same trivial predictions, in a scratch folder.
fn official(
    python: &std::path::Path,
    image: &str,
    n: usize,
    workers: usize,
) -> Result<Phase, CliError> {
    let dir = tempfile::tempdir()?;
    let plan = trivial_plan(n, image, "true");
    let mut rows = Vec::new();
    let mut preds = String::new();
    for p in &plan.predictions {
        let setup = &plan.setups[&p.instance_id];
        rows.push(serde_json::json!({
            "instance_id": p.instance_id, "repo": setup.instance.repo, "version": "0.1",
            "base_commit": "HEAD", "image": image, "eval_script": setup.eval_script,
            "log_parser": "parse_log_pytest", "eval_type": "pass_and_fail",
            "FAIL_TO_PASS": serde_json::to_string(setup.instance.fail_to_pass())?,
            "PASS_TO_PASS": serde_json::to_string(setup.instance.pass_to_pass())?,
            "patch": "", "test_patch": "", "problem_statement": "", "hints_text": "",
            "created_at": "", "environment_setup_commit": "",
        }));
        preds.push_str(&serde_json::to_string(&serde_json::json!({
            "instance_id": p.instance_id, "model_name_or_path": "bench", "model_patch": p.patch(),
        }))?);
        preds.push('\n');
    }
    std::fs::write(dir.path().join("dataset.json"), serde_json::to_vec(&rows)?)?;
    std::fs::write(dir.path().join("preds.jsonl"), preds)?;
    let t = Instant::now();
    let out = std::process::Command::new(python)
        .args([
            "-m",
            "swebench.harness.run_evaluation",
            "-d",
            "dataset.json",
            "-p",
            "preds.jsonl",
        ])
        .args([
            "--max_workers",
            &workers.to_string(),
            "-id",
            "bench",
            "-t",
            "120",
        ])
        .current_dir(dir.path())
        .output()?;
    let wall = t.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(failed(format!(
            "official harness failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("bench.bench.json"))?)?;
    // `true` prints no test results, so both harnesses grade these unresolved; what must
    // match is that every prediction was graded.
    let completed = summary["completed_instances"].as_u64().unwrap_or(0) as usize;
    if completed != n {
        eprintln!("warning: the official harness completed {completed} of {n}");
    }
    let (peak, rss) = memory_mib();
    Ok(Phase {
        name: "official harness 5.0.2, same tasks".into(),
        predictions: n,
        completed,
        workers,
        wall_secs: wall,
        secs_per_prediction: wall / n.max(1) as f64,
        mean_job_secs: f64::NAN,
        peak_rss_mib: peak,
        rss_mib: rss,
    })
}

/// Runs the phases and prints their figures.
pub fn run(args: Args) -> CliResult {
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(run_async(args))
}

async fn run_async(args: Args) -> CliResult {
    let mut phases = Vec::new();
    // Through the engine type every run uses, so the runner is compiled for one engine type.
    let engine = Arc::new(crate::engine::connect(&Default::default()).await?);
    eprintln!("preparing the trivial image...");
    let image = trivial::ensure_image(&*engine).await?;
    let config = |run_id: &str| {
        let mut c = RunConfig::new(run_id);
        c.workers = args.workers.max(1);
        c.timeout = Duration::from_secs(120);
        c
    };

    // Warm-up (page cache, image layers), not counted.
    let warm = tempfile::tempdir()?;
    timed(
        engine.clone(),
        "warm-up",
        trivial_plan(2, &image, "true"),
        config("warm"),
        warm.path(),
        None,
    )
    .await?;

    let dir = tempfile::tempdir()?;
    let (p, r) = timed(
        engine.clone(),
        "real engine, trivial tasks",
        trivial_plan(args.predictions, &image, "true"),
        config("bench"),
        dir.path(),
        None,
    )
    .await?;
    print(&p);
    if r.count(runner::Category::Resolved) + r.count(runner::Category::Unresolved)
        != args.predictions
    {
        eprintln!(
            "warning: not every trivial prediction was graded: {:?}",
            r.counts
        );
    }
    phases.push(p);

    if let Some(python) = &args.official {
        let p = official(python, &image, args.predictions, args.workers.max(1))?;
        print(&p);
        let ours = phases[0].secs_per_prediction;
        println!(
            "official / swe-eval per prediction: {:.3} s / {:.3} s = {:.1}x",
            p.secs_per_prediction,
            ours,
            p.secs_per_prediction / ours.max(1e-9)
        );
        phases.push(p);
    }

    if args.queued_run > 0 {
        let dir = tempfile::tempdir()?;
        let (p, _) = timed(
            engine.clone(),
            &format!("real engine, {} queued", args.queued),
            trivial_plan(args.queued, &image, "true"),
            config("bench-queued"),
            dir.path(),
            Some(args.queued_run),
        )
        .await?;
        print(&p);
        phases.push(p);
    }

    if !args.no_fake {
        if let Some(p) = fake_phase(&args, &image, config).await? {
            phases.push(p);
        }
    }

    if let Some(path) = &args.json {
        swe_eval_core::fsutil::write_json_atomic(path, &phases)?;
    }
    Ok(Ending::Clean)
}

/// The queued predictions run to the end on the fake engine (every file written): the peak
/// memory of a long run without the daemon's time. `None` when the build has no fake engine.
#[cfg(feature = "testing")]
async fn fake_phase(
    args: &Args,
    image: &str,
    config: impl Fn(&str) -> RunConfig,
) -> Result<Option<Phase>, CliError> {
    use crate::engine::{exited, FakeEngine};
    let fake = FakeEngine::new();
    fake.add_image(image);
    // Answers as the driver would for a resolved trivial task (markers carry the nonce).
    fake.on_image(image, |job| {
        let driver = job.files.iter().find(|f| f.path == runner::DRIVER_PATH);
        let text = driver.map(|f| String::from_utf8_lossy(&f.contents).into_owned()).unwrap_or_default();
        let nonce = text.lines().find_map(|l| l.strip_prefix("N=")).unwrap_or("").to_string();
        Ok(exited(
            0,
            &format!(
                ">>>>> Applied Patch\n>>>>> swe-eval {nonce} apply ok git apply --verbose\n>>>>> swe-eval {nonce} eval start\n\
                 + : '>>>>> Start Test Output'\nPASSED t::test_f\nPASSED t::test_ok\n=== 2 passed in 0.01s ===\n\
                 + : '>>>>> End Test Output'\n>>>>> Test Exit Code: 0\n>>>>> swe-eval {nonce} eval end 0\n"
            ),
        ))
    });
    let dir = tempfile::tempdir()?;
    let (p, r) = timed(
        Arc::new(fake),
        &format!("fake engine, {} run to the end", args.queued),
        trivial_plan(args.queued, image, "true"),
        config("bench-fake"),
        dir.path(),
        None,
    )
    .await?;
    print(&p);
    if r.count(runner::Category::Resolved) != args.queued {
        eprintln!(
            "warning: fake run resolved {} of {}",
            r.count(runner::Category::Resolved),
            args.queued
        );
    }
    Ok(Some(p))
}

/// Without the `testing` feature the fake engine is not in the binary.
#[cfg(not(feature = "testing"))]
async fn fake_phase(
    _: &Args,
    _: &str,
    _: impl Fn(&str) -> RunConfig,
) -> Result<Option<Phase>, CliError> {
    eprintln!(
        "note: the fake-engine phase needs a build with the fake engine \
         (cargo run --release --features testing -- bench harness); skipped"
    );
    Ok(None)
}
