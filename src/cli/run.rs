//! `swe-eval run`: apply each prediction in its own container, run the hidden tests, grade
//! them as the official harness does, and write the official reports. With no `--dataset` and
//! no `--predictions` it runs the bundled mini benchmark.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::render::{self, print_report};
use super::{BoxError, CliResult};
use crate::engine::{DockerEngine, Engine, SwarmEngine};
use crate::images::CacheLevel;
use crate::orchestrate::mini_check::check_mini;
use crate::orchestrate::{
    load_inputs, outcome, prepare_options, ImageChoices, ImagePolicy, Inputs, PrepareOptions,
    Troubles, Work,
};
use crate::runner::{self, RunConfig};
use crate::spec::Flavour;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  swe-eval run                                      the bundled mini benchmark
  swe-eval run -d verified.parquet -p preds.jsonl --run-id try1 -j 4
  swe-eval run -d verified.parquet -p gold -i django__django-11099 --namespace ''

Results go under OUTPUT (default results/): logs/run_evaluation/<run_id>/<model>/<instance_id>/
(patch.diff, eval.sh, test_output.txt, report.json, run_instance.log, verdict.json), samples
after the first in <instance_id>.sample<k>/, the official summary <model>.<run_id>.json (sample k:
<model>.<run_id>.sample<k>.json), and <run_id>.predictions.jsonl/.csv with every prediction.

Running again with the same --run-id resumes: predictions whose verdict exists for the same patch
are skipped, changed ones re-run. Ctrl-C (or SIGTERM) once finishes the running jobs and writes
everything; twice kills this run's containers.

Exit codes: 0 done; 1 failed; 2 bad usage; 3 done, but some inputs or jobs had problems
(infrastructure errors, skipped rows, predictions not run).")]
/// `swe-eval run`: what to evaluate, where, and how.
pub struct Args {
    /// Dataset rows (JSON, JSON Lines or Parquet), or a Hugging Face dataset name such as
    /// SWE-bench/SWE-bench_Verified (downloaded once into the Hugging Face cache; HF_ENDPOINT,
    /// HF_HOME, HF_TOKEN are honoured). Without --dataset and --predictions, the bundled mini
    /// benchmark runs.
    #[arg(long, short = 'd', visible_alias = "dataset_name")]
    pub dataset: Option<PathBuf>,
    /// The split of a Hugging Face dataset name given as --dataset.
    #[arg(long, default_value = "test")]
    pub split: String,
    /// Predictions (JSON Lines, JSON list or object keyed by id), or `gold`.
    #[arg(long, short = 'p', visible_alias = "predictions_path")]
    pub predictions: Option<String>,
    /// Run id: names the log folder and the summaries, and is the key for resuming
    /// [default: `mini` for the mini benchmark, else `run-<UTC time>`].
    #[arg(long, visible_alias = "run_id", value_parser = crate::paths::run_id_arg)]
    pub run_id: Option<String>,
    /// Containers run at once [default: min(4, cores)].
    #[arg(long, short = 'j', visible_alias = "max_workers")]
    pub workers: Option<usize>,
    /// Output folder: logs, run summaries and per-prediction files.
    #[arg(
        long,
        short = 'o',
        visible_alias = "report_dir",
        default_value = "results"
    )]
    pub output: PathBuf,
    /// Per-prediction timeout in seconds, from container start [default: 1800; 60 for the
    /// mini benchmark].
    #[arg(long, short = 't')]
    pub timeout: Option<u64>,
    /// Only these instances (space- or comma-separated).
    #[arg(long, short = 'i', visible_alias = "instance_ids", num_args = 1.., value_delimiter = ',')]
    pub instance_ids: Vec<String>,
    /// Strict mode: before the tests, remove files the patch adds that change test collection
    /// (conftest.py, ...) and restore edited ones; summaries use strict grading. The strict
    /// verdict is recorded in every mode.
    #[arg(long)]
    pub strict: bool,
    /// How images are built, kept and removed.
    #[command(flatten)]
    pub images: ImageArgs,
    /// Give the test containers network access (off by default).
    #[arg(long)]
    pub network: bool,
    /// Where the jobs run.
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Where the jobs run.
#[derive(Debug, Clone, clap::Args)]
pub struct EngineArgs {
    /// Where the jobs run.
    #[arg(long = "engine", value_enum, default_value = "docker")]
    pub kind: EngineKind,
    /// With `--engine swarm`: a registry every node can pull from; the run pushes the images
    /// it uses there. Without it, every node must already have them.
    #[arg(long, value_name = "HOST:PORT")]
    pub registry: Option<String>,
}

/// The engine that runs the jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineKind {
    /// Containers on the daemon at DOCKER_HOST (or the local socket).
    Docker,
    /// One-shot services on the Docker Swarm cluster that daemon manages (images are built there).
    Swarm,
}

impl EngineArgs {
    /// The Swarm engine's settings; `--registry` without `--engine swarm` is an error.
    pub fn swarm_options(&self) -> Result<Option<crate::engine::SwarmOptions>, BoxError> {
        match self.kind {
            EngineKind::Docker if self.registry.is_some() => {
                Err("--registry is for --engine swarm (a single daemon needs no registry)".into())
            }
            EngineKind::Docker => Ok(None),
            EngineKind::Swarm => Ok(Some(crate::engine::SwarmOptions {
                registry: self.registry.clone(),
                ..Default::default()
            })),
        }
    }
}

impl Args {
    /// What the command reads and writes, for the clobber check.
    pub fn io(&self) -> crate::paths::IoPlan {
        let plan = self.images.io(&self.output, self.dataset.as_deref());
        match &self.predictions {
            Some(p) => plan.input_spec("--predictions", p),
            None => plan,
        }
    }
}

/// Where images and repositories come from; shared by `run` and `validate`.
#[derive(Debug, Clone, clap::Args)]
pub struct ImageArgs {
    /// Take a repository from a local clone, bundle or URL instead of GitHub (repeatable).
    #[arg(long = "repo", value_name = "OWNER/NAME=PATH_OR_URL")]
    pub repos: Vec<String>,
    /// A folder of mirrors: `<owner>__<name>` clones or `.bundle` files.
    #[arg(long, env = "SWE_EVAL_MIRRORS")]
    pub mirrors: Option<PathBuf>,
    /// Registry/namespace of prebuilt official images (`''` builds locally).
    #[arg(long)]
    pub namespace: Option<String>,
    /// Which images to keep after the run. Only images this run created are removed; one
    /// another live run still uses is kept until that run ends.
    #[arg(long, visible_alias = "cache_level", value_enum, default_value_t = CacheLevel::Env)]
    pub cache_level: CacheLevel,
    /// A PEM certificate bundle that image builds trust (for a TLS-intercepting proxy).
    #[arg(long)]
    pub ca_cert: Option<PathBuf>,
    /// Image flavour: `official` (conda, as the official images) or `debian` (offline base)
    /// [default: official; debian for the mini benchmark].
    #[arg(long, env = "SWE_EVAL_FLAVOUR", value_enum)]
    pub flavour: Option<Flavour>,
    /// Image builds at once [default: half the cores, 1 to 4]. Images are prepared while the
    /// jobs run (an instance's jobs start as soon as its image is ready), so builds and tests
    /// share the machine; they are bounded apart because they load it differently: a test is
    /// mostly CPU, a build mostly the daemon writing layers, git and installers on disk and
    /// network. --workers bounds the tests.
    #[arg(long, value_name = "N")]
    pub build_jobs: Option<usize>,
}

impl ImageArgs {
    /// The files a command with these options reads and writes: `output`, `--dataset` and
    /// what [`ImageArgs::inputs`] adds.
    pub fn io(
        &self,
        output: &std::path::Path,
        dataset: Option<&std::path::Path>,
    ) -> crate::paths::IoPlan {
        let mut plan =
            crate::paths::IoPlan::new().output(crate::paths::Output::Folder(output.to_path_buf()));
        if let Some(d) = dataset {
            plan = plan.input("--dataset", d);
        }
        self.inputs(plan)
    }

    /// Adds the files these options read to `plan` (the repositories are only read by git).
    pub fn inputs(&self, plan: crate::paths::IoPlan) -> crate::paths::IoPlan {
        match &self.ca_cert {
            Some(ca) => plan.input("--ca-cert", ca),
            None => plan,
        }
    }
}

impl clap::ValueEnum for CacheLevel {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            CacheLevel::None,
            CacheLevel::Base,
            CacheLevel::Env,
            CacheLevel::Instance,
        ]
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let (name, help) = match self {
            CacheLevel::None => ("none", "remove every image the run built or pulled"),
            CacheLevel::Base => ("base", "keep base images"),
            CacheLevel::Env => ("env", "keep base and environment images"),
            CacheLevel::Instance => ("instance", "keep every image"),
        };
        Some(clap::builder::PossibleValue::new(name).help(help))
    }
}

impl ImageArgs {
    /// The choices as the library takes them (the flavour and cache level parsed).
    pub fn choices(&self) -> Result<(ImageChoices, CacheLevel), BoxError> {
        let choices = ImageChoices {
            repos: self.repos.clone(),
            mirrors: self.mirrors.clone(),
            namespace: self.namespace.clone(),
            ca_cert: self.ca_cert.clone(),
            flavour: self.flavour,
            build_jobs: self.build_jobs,
        };
        Ok((choices, self.cache_level))
    }
}

/// Runs the evaluation through `crate::orchestrate`, rendering its events.
pub fn run(args: Args) -> CliResult {
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(run_async(args))
}

async fn run_async(mut args: Args) -> CliResult {
    // Git and the image builder run in other folders: relative paths must not change meaning.
    args.output = std::path::absolute(&args.output)?;
    let inputs = load_inputs(
        args.dataset.as_deref(),
        &args.split,
        args.predictions.as_deref(),
        &args.instance_ids,
        &args.output,
    )?;
    let mini = inputs.is_mini();
    for p in &inputs.problems {
        eprintln!("warning: {p}");
    }
    let run_id =
        args.run_id
            .clone()
            .unwrap_or_else(|| if mini { "mini".into() } else { time_run_id() });
    let workers = args.workers.unwrap_or_else(runner::default_workers).max(1);
    let (choices, cache_level) = args.images.choices()?;
    let opts = prepare_options(&args.output, &choices, inputs.mini_mirrors.clone())?;

    let mut config = RunConfig::new(&run_id, args.output.clone());
    config.workers = workers;
    config.strict = args.strict;
    config.durations = Some(crate::orchestrate::durations_file(&args.output));
    config.network = args.network;
    config.timeout = Duration::from_secs(args.timeout.unwrap_or(if mini {
        crate::mini::DEFAULT_TIMEOUT_SECS
    } else {
        1800
    }));

    match args.engine.swarm_options()? {
        None => {
            let engine = Arc::new(DockerEngine::connect().await?);
            run_on(engine, &args, inputs, config, &opts, cache_level, mini).await
        }
        Some(swarm) => {
            let engine = Arc::new(SwarmEngine::connect(swarm).await?);
            run_on(engine, &args, inputs, config, &opts, cache_level, mini).await
        }
    }
}

/// The run on a connected engine: images, jobs, cleanup, report.
async fn run_on<E: Engine>(
    engine: Arc<E>,
    args: &Args,
    inputs: Inputs,
    config: RunConfig,
    opts: &PrepareOptions,
    cache_level: CacheLevel,
    mini: bool,
) -> CliResult {
    let input_problems = inputs.problems.len();
    let work = Work {
        dataset: &inputs.dataset,
        predictions: inputs.predictions,
        instance_ids: inputs.instance_ids,
    };
    let images = ImagePolicy {
        prepare: opts,
        keep: cache_level,
    };
    let (report, prep) = render::execute(engine, work, config, images).await?;
    print_report(&report);
    render::print_preparation(&prep);
    let mut mismatches = 0;
    if mini {
        match check_mini(&report, args.strict) {
            Ok(check) => {
                println!("{}", check.summary);
                for m in &check.mismatches {
                    eprintln!("warning: {m}");
                }
                mismatches = check.mismatches.len();
            }
            Err(e) => eprintln!("warning: cannot compare with the expected verdicts: {e}"),
        }
    }
    let troubles = Troubles::of_run(input_problems, &report).with_failed_checks(mismatches);
    Ok(outcome(&troubles))
}

/// `run-YYYYMMDDTHHMMSS` (UTC).
fn time_run_id() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "run-{y:04}{m:02}{d:02}T{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_run_id_is_sortable_and_plausible() {
        let id = time_run_id();
        assert!(id.starts_with("run-20"), "{id}");
        assert_eq!(id.len(), "run-20261129T101500".len());
    }
}
