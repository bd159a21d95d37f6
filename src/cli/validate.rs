//! `swe-eval validate`: run each instance's gold patch and no patch at all, `-k` times each,
//! and flag the instances whose verdicts cannot be trusted: gold does not resolve, the
//! untouched tree already resolves, or a verdict changes between repetitions (flaky tests).
//! Writes `<output>/validate.<run_id>.json`; exits 3 when any instance is flagged. The
//! validation itself is `orchestrate::validate`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::render;
use super::run::ImageArgs;
use super::CliResult;
use crate::engine::DockerEngine;
use crate::orchestrate::validate::{findings, gold_and_empty, Finding};
use crate::orchestrate::{load_inputs, outcome, prepare_options, ImagePolicy, Troubles, Work};
use crate::runner::{self, Category, Layout, RunConfig};

/// `swe-eval validate`: the instances, the repetitions and where the results go.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Dataset rows (JSON, JSON Lines or Parquet), or a Hugging Face dataset name
    /// [default: the bundled mini benchmark].
    #[arg(long, short = 'd', visible_alias = "dataset_name")]
    pub dataset: Option<PathBuf>,
    /// The split of a Hugging Face dataset name given as --dataset.
    #[arg(long, default_value = "test")]
    pub split: String,
    /// Only these instances (space- or comma-separated).
    #[arg(long, short = 'i', visible_alias = "instance_ids", num_args = 1.., value_delimiter = ',')]
    pub instance_ids: Vec<String>,
    /// Repetitions of each of the gold and the empty run.
    #[arg(short = 'k', long, default_value_t = 2)]
    pub repeat: u32,
    /// Run id.
    #[arg(
        long,
        visible_alias = "run_id",
        default_value = "validate",
        value_parser = crate::paths::run_id_arg
    )]
    pub run_id: String,
    /// Containers run at once [default: min(4, cores)].
    #[arg(long, short = 'j', visible_alias = "max_workers")]
    pub workers: Option<usize>,
    /// Output folder.
    #[arg(
        long,
        short = 'o',
        visible_alias = "report_dir",
        default_value = "results"
    )]
    pub output: PathBuf,
    /// Per-run timeout in seconds [default: 1800; 60 for the mini benchmark].
    #[arg(long, short = 't')]
    pub timeout: Option<u64>,
    /// How images are built, kept and removed.
    #[command(flatten)]
    pub images: ImageArgs,
}

impl Args {
    /// What the command reads and writes, for the clobber check.
    pub fn io(&self) -> crate::paths::IoPlan {
        self.images.io(&self.output, self.dataset.as_deref())
    }
}

/// Validates through `crate::orchestrate::validate`, rendering its events.
pub fn run(args: Args) -> CliResult {
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(run_async(args))
}

async fn run_async(mut args: Args) -> CliResult {
    args.output = std::path::absolute(&args.output)?;
    let (dataset, preds) = match &args.dataset {
        Some(d) => (Some(d.as_path()), Some("gold")),
        None => (None, None),
    };
    let inputs = load_inputs(
        dataset,
        &args.split,
        preds,
        &args.instance_ids,
        &args.output,
    )?;
    for p in &inputs.problems {
        eprintln!("warning: {p}");
    }
    let mini = inputs.is_mini();
    let k = args.repeat.max(1);
    let predictions = gold_and_empty(&inputs, k);
    let workers = args.workers.unwrap_or_else(runner::default_workers).max(1);
    let (choices, cache_level) = args.images.choices()?;
    let opts = prepare_options(&args.output, &choices, inputs.mini_mirrors.clone())?;
    let mut config = RunConfig::new(&args.run_id, args.output.clone());
    config.workers = workers;
    config.dedupe = false;
    config.durations = Some(crate::orchestrate::durations_file(&args.output));
    config.run_empty = true;
    config.timeout = Duration::from_secs(args.timeout.unwrap_or(if mini {
        crate::mini::DEFAULT_TIMEOUT_SECS
    } else {
        1800
    }));
    let engine = Arc::new(DockerEngine::connect().await?);
    let work = Work {
        dataset: &inputs.dataset,
        predictions,
        instance_ids: inputs.instance_ids.clone(),
    };
    let images = ImagePolicy {
        prepare: &opts,
        keep: cache_level,
    };
    let (report, prep) = render::execute(engine, work, config, images).await?;
    render::print_preparation(&prep);

    let layout = Layout::new(&args.output, &args.run_id);
    let findings = findings(&layout, &inputs.instance_ids)?;
    let flagged: Vec<&Finding> = findings.iter().filter(|f| f.flagged()).collect();
    let names = |v: &[Category]| v.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(",");
    for f in &findings {
        let mut why = Vec::new();
        if f.gold_not_resolved && f.gold_needs_network {
            why.push("gold does not resolve (needs network: rerun with --network)");
        } else if f.gold_not_resolved {
            why.push("gold does not resolve");
        }
        if f.empty_resolves {
            why.push("resolves without a patch");
        }
        if f.flaky {
            why.push("verdict changes between runs");
        }
        println!(
            "{:<40} gold [{}] empty [{}]{}",
            f.instance_id,
            names(&f.gold),
            names(&f.empty),
            if why.is_empty() {
                String::new()
            } else {
                format!("  FLAGGED: {}", why.join("; "))
            }
        );
    }
    let out_path = args.output.join(format!("validate.{}.json", args.run_id));
    crate::fsutil::write_json_atomic(&out_path, &findings)?;
    println!(
        "{} instances, {} flagged, k = {k}; {} containers run in {:.1} s; wrote {}",
        findings.len(),
        flagged.len(),
        report.jobs_run,
        report.wall.as_secs_f64(),
        out_path.display()
    );
    for p in &report.problems {
        eprintln!("warning: {p}");
    }
    let troubles =
        Troubles::of_run(inputs.problems.len(), &report).with_failed_checks(flagged.len());
    Ok(outcome(&troubles))
}
