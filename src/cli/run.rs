//! `swe-eval run`: apply each prediction in its own container, run the hidden tests, grade
//! them as the official harness does, and write the official reports. With no `--dataset` and
//! no `--predictions` it runs the bundled mini benchmark.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::{BoxError, CliResult, Outcome};
use crate::dataset::{self, Dataset, Instance};
use crate::engine::{DockerEngine, Engine};
use crate::images::hold::{self, hold_labels, Holding};
use crate::images::{self, CacheLevel};
use crate::repos::RepoSources;
use crate::predictions::{self, Prediction};
use crate::runner::prepare::{self, PrepareOptions};
use crate::runner::{self, Category, Plan, RunConfig, RunReport};
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
are skipped, changed ones re-run. Ctrl-C once finishes the running jobs and writes everything;
twice kills this run's containers.

Exit codes: 0 done; 1 failed; 2 bad usage; 3 done, but some inputs or jobs had problems
(infrastructure errors, skipped rows, predictions not run).")]
pub struct Args {
    /// Dataset rows (JSON, JSON Lines or Parquet). Without --dataset and --predictions, the
    /// bundled mini benchmark runs.
    #[arg(long, short = 'd')]
    pub dataset: Option<PathBuf>,
    /// Predictions (JSON Lines, JSON list or object keyed by id), or `gold`.
    #[arg(long, short = 'p')]
    pub predictions: Option<String>,
    /// Run id: names the log folder and the summaries, and is the key for resuming
    /// [default: `mini` for the mini benchmark, else `run-<UTC time>`].
    #[arg(long)]
    pub run_id: Option<String>,
    /// Containers run at once [default: min(4, cores)].
    #[arg(long, short = 'j')]
    pub workers: Option<usize>,
    /// Output folder.
    #[arg(long, short = 'o', default_value = "results")]
    pub output: PathBuf,
    /// Per-prediction timeout in seconds, from container start [default: 1800; 60 for the
    /// mini benchmark].
    #[arg(long, short = 't')]
    pub timeout: Option<u64>,
    /// Only these instances (space- or comma-separated).
    #[arg(long, short = 'i', num_args = 1.., value_delimiter = ',')]
    pub instance_ids: Vec<String>,
    /// Strict mode: before the tests, remove files the patch adds that change test collection
    /// (conftest.py, ...) and restore edited ones; summaries use strict grading. The strict
    /// verdict is recorded in every mode.
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub images: ImageArgs,
    /// Give the test containers network access (off by default).
    #[arg(long)]
    pub network: bool,
}

/// Where images and repositories come from; shared by `run` and `validate`.
#[derive(Debug, Clone, clap::Args)]
pub struct ImageArgs {
    /// Take a repository from a local clone, bundle or URL instead of GitHub (repeatable).
    #[arg(long = "repo", value_name = "OWNER/NAME=PATH_OR_URL")]
    pub repos: Vec<String>,
    /// A folder of mirrors: `<owner>__<name>` clones or `.bundle` files.
    #[arg(long)]
    pub mirrors: Option<PathBuf>,
    /// Registry/namespace of prebuilt official images (`''` builds locally).
    #[arg(long)]
    pub namespace: Option<String>,
    /// Which images to keep after the run: none, base, env or instance. Only images this run
    /// created are removed; one another live run still uses is kept until that run ends.
    #[arg(long, default_value = "env")]
    pub cache_level: String,
    /// A PEM certificate bundle that image builds trust (for a TLS-intercepting proxy).
    #[arg(long)]
    pub ca_cert: Option<PathBuf>,
    /// Image flavour: `official` (conda, as the official images) or `debian` (offline base)
    /// [default: official; debian for the mini benchmark].
    #[arg(long)]
    pub flavour: Option<String>,
}

/// The run's inputs, loaded and checked.
pub struct Inputs {
    pub dataset: Dataset,
    pub predictions: Vec<Prediction>,
    /// The instances the run covers (the dataset, narrowed by `--instance-ids`).
    pub instance_ids: Vec<String>,
    /// Rows and predictions skipped, with file and line.
    pub problems: Vec<String>,
    /// Mirrors of the mini benchmark, when it is the input.
    pub mini_mirrors: Option<PathBuf>,
}

/// Loads the dataset and predictions (or materializes the mini benchmark into `output/mini`).
pub fn load_inputs(
    dataset: Option<&Path>,
    predictions: Option<&str>,
    instance_ids: &[String],
    output: &Path,
) -> Result<Inputs, BoxError> {
    let mut problems = Vec::new();
    let (ds_path, pred_spec, mini_mirrors) = match (dataset, predictions) {
        (None, None) => {
            let dir = output.join("mini");
            let bench = crate::mini::materialize(&dir).map_err(|e| {
                format!("cannot write the mini benchmark to {}: {e}", dir.display())
            })?;
            (
                bench.dataset,
                bench.predictions.to_string_lossy().into_owned(),
                Some(bench.mirrors),
            )
        }
        (Some(d), Some(p)) => (d.to_path_buf(), p.to_string(), None),
        (None, Some(_)) => return Err("--predictions needs --dataset".into()),
        (Some(_), None) => return Err("--dataset needs --predictions (a file, or `gold`)".into()),
    };
    let (ds, ds_problems) = dataset::load_dataset(&ds_path)?;
    problems.extend(ds_problems.iter().map(ToString::to_string));
    let loaded = predictions::load(&pred_spec, Some(&ds))?;
    problems.extend(loaded.problems.iter().map(ToString::to_string));
    let checked = predictions::check_against(&ds, loaded.items, Path::new(&pred_spec));
    problems.extend(checked.problems.iter().map(ToString::to_string));
    let mut ids: Vec<String> = ds.instances.iter().map(|i| i.instance_id.clone()).collect();
    if !instance_ids.is_empty() {
        for id in instance_ids {
            if ds.get(id).is_none() {
                problems.push(format!("--instance-ids: {id} is not in the dataset"));
            }
        }
        ids.retain(|id| instance_ids.contains(id));
    }
    let keep: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
    let predictions = checked
        .items
        .into_iter()
        .filter(|p| keep.contains(p.instance_id.as_str()))
        .collect();
    Ok(Inputs {
        dataset: ds,
        predictions,
        instance_ids: ids,
        problems,
        mini_mirrors,
    })
}

/// Image and repository options from the flags (`mini_mirrors` when the input is the mini
/// benchmark, which also makes Debian the default flavour).
pub fn prepare_options(
    output: &Path,
    a: &ImageArgs,
    mini_mirrors: Option<PathBuf>,
    workers: usize,
) -> Result<PrepareOptions, BoxError> {
    let flavour: Flavour = match a.flavour.as_deref() {
        Some(f) => f.parse()?,
        None if mini_mirrors.is_some() => Flavour::Debian,
        None => Flavour::Official,
    };
    let mirrors = match &a.mirrors {
        Some(m) => Some(std::path::absolute(m)?),
        None => mini_mirrors,
    };
    let mut sources = RepoSources {
        mirrors,
        ..Default::default()
    };
    for r in &a.repos {
        sources.add_override(&absolute_repo_flag(r))?;
    }
    let ca_cert = match &a.ca_cert {
        Some(p) => Some(
            std::fs::read(p).map_err(|e| format!("cannot read --ca-cert {}: {e}", p.display()))?,
        ),
        None => None,
    };
    Ok(PrepareOptions {
        flavour,
        namespace: a.namespace.clone(),
        ca_cert,
        repos: sources,
        repo_cache: repo_cache_dir(output),
        build_logs: output.join("logs").join("build_images"),
        parallel: workers,
    })
}

/// The bare repository cache: `$SWE_EVAL_CACHE/repos`, else `$XDG_CACHE_HOME/swe-eval/repos`,
/// else `~/.cache/swe-eval/repos`, else under the output folder.
fn repo_cache_dir(output: &Path) -> PathBuf {
    if let Some(d) = std::env::var_os("SWE_EVAL_CACHE") {
        return PathBuf::from(d).join("repos");
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("swe-eval").join("repos");
    }
    if let Some(h) = std::env::var_os("HOME") {
        return PathBuf::from(h)
            .join(".cache")
            .join("swe-eval")
            .join("repos");
    }
    output.join(".cache").join("repos")
}

/// The instances that have predictions, in dataset order.
pub fn needed<'a>(ds: &'a Dataset, preds: &[&Prediction]) -> Vec<&'a Instance> {
    let want: std::collections::HashSet<&str> =
        preds.iter().map(|p| p.instance_id.as_str()).collect();
    ds.instances
        .iter()
        .filter(|i| want.contains(i.instance_id.as_str()))
        .collect()
}

/// Prepares specs and images for the instances with predictions, telling the user what fails.
/// Releases this process's image holds, then removes the images `prepared` created that
/// `level` does not keep. An image another run still holds is kept, and said so.
pub async fn release_and_clean<E: Engine>(
    engine: &E,
    prepared: &images::Prepared,
    level: CacheLevel,
) {
    for (hold, e) in hold::release(engine, &crate::owner::owner_id()).await {
        eprintln!("warning: image hold {hold} not removed: {e}");
    }
    let report = images::cleanup(engine, prepared, level).await;
    for (image, holder) in &report.handed_over {
        eprintln!(
            "note: image {image} kept for now: still used by {holder}; the first run to find it unused removes it"
        );
    }
    for (image, e) in &report.errors {
        eprintln!("warning: image {image} not removed: {e}");
    }
    if !report.removed.is_empty() {
        eprintln!(
            "removed {} image(s) the cache level does not keep",
            report.removed.len()
        );
    }
}

/// Prepares the images `preds` need, printing what happens. Every image found or made is
/// held for run `run_id` (see `images::hold`) until [`release_and_clean`].
pub async fn prepare_verbose<E: Engine>(
    engine: Arc<E>,
    run_id: &str,
    ds: &Dataset,
    preds: &[&Prediction],
    opts: &PrepareOptions,
) -> prepare::Prepare {
    let needed = needed(ds, preds);
    if needed.is_empty() {
        return prepare::Prepare::default();
    }
    eprintln!(
        "preparing images for {} instances ({} flavour)...",
        needed.len(),
        opts.flavour
    );
    let holding = Holding::new(engine, hold_labels(&crate::owner::owner_id(), run_id));
    let prepared = prepare::prepare(&holding, &needed, opts).await;
    for w in &prepared.warnings {
        eprintln!("note: {w}");
    }
    for (id, f) in &prepared.images.failed {
        eprintln!("warning: {id}: image {} failed: {}", f.image, f.message);
    }
    prepared
}

/// Setups for every instance with predictions: the prepared ones, and for instances whose
/// predictions are all done already (resume), a stand-in that is never run.
pub fn with_stand_ins(
    mut setups: std::collections::HashMap<String, Arc<runner::Setup>>,
    ds: &Dataset,
    preds: &[Prediction],
) -> std::collections::HashMap<String, Arc<runner::Setup>> {
    for p in preds {
        if setups.contains_key(&p.instance_id) {
            continue;
        }
        if let Some(inst) = ds.get(&p.instance_id) {
            setups.insert(
                p.instance_id.clone(),
                Arc::new(runner::Setup {
                    instance: inst.clone(),
                    image: Err("image not prepared: the instance had nothing left to run".into()),
                    eval_script: String::new(),
                    log_parser: crate::logparse::parser_for_repo(&inst.repo).to_string(),
                }),
            );
        }
    }
    setups
}

/// Runs the plan with Ctrl-C wired in and the progress bar drawn; returns the report.
pub async fn execute<E: Engine>(
    engine: Arc<E>,
    plan: Plan,
    config: RunConfig,
) -> Result<RunReport, BoxError> {
    let (itx, irx) = mpsc::unbounded_channel();
    let signals = tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            if itx.send(()).is_err() {
                break;
            }
        }
    });
    let (etx, erx) = mpsc::unbounded_channel();
    let visible = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let bar = tokio::spawn(crate::progress::show(erx, visible));
    let report = runner::run(engine, plan, config, irx, etx).await;
    signals.abort();
    let _ = bar.await;
    Ok(report?)
}

pub fn run(args: Args) -> CliResult {
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(run_async(args))
}

async fn run_async(mut args: Args) -> CliResult {
    // Git and the image builder run in other folders: relative paths must not change meaning.
    args.output = std::path::absolute(&args.output)?;
    let inputs = load_inputs(
        args.dataset.as_deref(),
        args.predictions.as_deref(),
        &args.instance_ids,
        &args.output,
    )?;
    let mini = inputs.mini_mirrors.is_some();
    for p in &inputs.problems {
        eprintln!("warning: {p}");
    }
    let run_id =
        args.run_id
            .clone()
            .unwrap_or_else(|| if mini { "mini".into() } else { time_run_id() });
    let workers = args.workers.unwrap_or_else(runner::default_workers).max(1);
    let cache_level: CacheLevel = args.images.cache_level.parse()?;
    let opts = prepare_options(
        &args.output,
        &args.images,
        inputs.mini_mirrors.clone(),
        workers,
    )?;

    let mut config = RunConfig::new(&run_id, args.output.clone());
    config.workers = workers;
    config.strict = args.strict;
    config.network = args.network;
    config.timeout = Duration::from_secs(args.timeout.unwrap_or(if mini {
        crate::mini::DEFAULT_TIMEOUT_SECS
    } else {
        1800
    }));

    let engine = Arc::new(DockerEngine::connect().await?);
    let pending = runner::pending(&inputs.predictions, &config);
    let prepared = prepare_verbose(engine.clone(), &run_id, &inputs.dataset, &pending, &opts).await;
    let plan = Plan {
        setups: with_stand_ins(prepared.setups, &inputs.dataset, &inputs.predictions),
        predictions: inputs.predictions,
        instance_ids: inputs.instance_ids,
    };
    let report = execute(engine.clone(), plan, config).await?;
    release_and_clean(&*engine, &prepared.images, cache_level).await;
    print_report(&report);
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
    let troubled = mismatches > 0
        || !inputs.problems.is_empty()
        || !report.problems.is_empty()
        || report.not_run > 0
        || report.count(Category::InfraError) > 0;
    Ok(if troubled {
        Outcome::WithProblems
    } else {
        Outcome::Clean
    })
}

/// The mini benchmark's verdicts against `datasets/mini/expected.json`.
struct MiniCheck {
    summary: String,
    mismatches: Vec<String>,
}

/// Reads the run's per-prediction JSONL back and compares each verdict (official and strict,
/// with the error kind) with the one the benchmark expects. Predictions the run did not cover
/// (`--instance-ids`) are left out of the count. A `--strict` run is held to the strict verdicts.
fn check_mini(report: &RunReport, strict: bool) -> Result<MiniCheck, crate::cli::BoxError> {
    let jsonl = report
        .files
        .iter()
        .find(|f| f.extension().is_some_and(|e| e == "jsonl"))
        .ok_or("the run wrote no per-prediction JSONL")?;
    let text = std::fs::read_to_string(jsonl)?;
    let mut got = std::collections::HashMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let row: serde_json::Value = serde_json::from_str(line)?;
        let key = (
            row["instance_id"].as_str().unwrap_or_default().to_string(),
            row["model"].as_str().unwrap_or_default().to_string(),
            row["sample"].as_u64().unwrap_or(u64::MAX),
        );
        got.insert(key, row);
    }
    let expected: Vec<serde_json::Value> = serde_json::from_str(crate::mini::EXPECTED)?;
    let (mut checked, mut mismatches) = (0, Vec::new());
    for e in &expected {
        let key = (
            e["instance_id"].as_str().unwrap_or_default().to_string(),
            e["model_name_or_path"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            e["sample"].as_u64().unwrap_or(u64::MAX),
        );
        let Some(row) = got.get(&key) else { continue };
        checked += 1;
        let kind = |v: &serde_json::Value, field: &str| v[field].as_str().unwrap_or("").to_string();
        // A strict run changes what runs (collection files removed), so only its strict
        // verdict is expected to match; its official one is of a different execution.
        let official = |v: &serde_json::Value| {
            if strict {
                String::new()
            } else {
                kind(v, "category")
            }
        };
        let want = (
            official(e),
            kind(e, "strict_category"),
            kind(e, "error_kind"),
        );
        let have = (
            official(row),
            kind(row, "strict_category"),
            if kind(row, "category") == "error" {
                kind(row, "error_reason")
            } else {
                String::new()
            },
        );
        if want != have {
            mismatches.push(format!(
                "{} {} sample {}: expected {} / strict {} {}, got {} / strict {} {} ({})",
                key.0,
                key.1,
                key.2,
                want.0,
                want.1,
                want.2,
                have.0,
                have.1,
                have.2,
                kind(e, "reason")
            ));
        }
    }
    let summary = if mismatches.is_empty() {
        format!("  mini benchmark: {checked}/{checked} verdicts as expected (datasets/mini/expected.json, {})", if strict { "strict" } else { "official and strict" })
    } else {
        format!(
            "  mini benchmark: {} of {checked} verdicts differ from datasets/mini/expected.json",
            mismatches.len()
        )
    };
    Ok(MiniCheck {
        summary,
        mismatches,
    })
}

/// `owner/name=PATH` with PATH made absolute when it is a local path that exists.
pub fn absolute_repo_flag(flag: &str) -> String {
    match flag.split_once('=') {
        Some((repo, src)) if Path::new(src).exists() => match std::path::absolute(src) {
            Ok(p) => format!("{repo}={}", p.display()),
            Err(_) => flag.to_string(),
        },
        _ => flag.to_string(),
    }
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

/// The closing lines of a run.
pub fn print_report(r: &RunReport) {
    let c = |cat| r.count(cat);
    println!(
        "run {}: {} predictions, {} resumed, {} containers run, {:.1} s",
        r.run_id,
        r.predictions,
        r.resumed,
        r.jobs_run,
        r.wall.as_secs_f64()
    );
    println!(
        "  resolved {} · unresolved {} · error {} · empty patch {} · infrastructure error {}",
        c(Category::Resolved),
        c(Category::Unresolved),
        c(Category::Error),
        c(Category::EmptyPatch),
        c(Category::InfraError)
    );
    let s = |cat| r.strict_counts.get(&cat).copied().unwrap_or(0);
    println!(
        "  strict grading: resolved {} · unresolved {} · error {}",
        s(Category::Resolved),
        s(Category::Unresolved),
        s(Category::Error)
    );
    if r.infra_retries > 0 {
        println!("  engine retries: {}", r.infra_retries);
    }
    if r.interrupted {
        println!(
            "  interrupted{}: {} predictions not run; run again with --run-id {} to finish",
            if r.killed { " (containers killed)" } else { "" },
            r.not_run,
            r.run_id
        );
    } else if r.not_run > 0 {
        println!("  {} predictions not run", r.not_run);
    }
    for p in &r.problems {
        eprintln!("warning: {p}");
    }
    for f in &r.files {
        println!("  wrote {}", f.display());
    }
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

    #[test]
    fn mini_inputs_load_with_no_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let inputs = load_inputs(None, None, &[], dir.path()).unwrap();
        assert!(inputs.problems.is_empty(), "{:?}", inputs.problems);
        assert!(inputs.instance_ids.len() >= 8);
        assert_eq!(inputs.predictions.len(), crate::mini::expected().len());
        assert!(inputs.mini_mirrors.unwrap().is_dir());
        let one = load_inputs(None, None, &["swe-eval-mini__calc-1".into()], dir.path()).unwrap();
        assert_eq!(one.instance_ids, ["swe-eval-mini__calc-1"]);
        assert!(one
            .predictions
            .iter()
            .all(|p| p.instance_id == "swe-eval-mini__calc-1"));
    }
}
