//! `swe-eval reward`: the SWE-RL similarity reward of each prediction, without executing
//! anything. One JSON line per prediction in input order (a JSON list when the output ends in
//! `.json`, CSV when it ends in `.csv`, JSON Lines on standard output for `-`); predictions
//! for instances not in the dataset and malformed rows are reported on stderr, the others are
//! still written, and the exit code is 3.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::args::DatasetFile;
use super::CliResult;
use crate::orchestrate::{ending, Troubles};
use swe_eval_core::paths::is_stdout;
use swe_eval_core::repos::RepoSources;
use swe_eval_core::reward::{self, RewardRecord};

/// Which reward, by the form of the predictions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Variant {
    /// Predictions are unified diffs (SWE-bench format), compared with the gold patch.
    Unidiff,
    /// Predictions are raw SWE-RL outputs (<think>, <solution>, SEARCH/REPLACE blocks);
    /// original files come from local git repositories at each instance's base commit.
    SearchReplace,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "\
What the two scores are:
  similarity  the difflib ratio of the predicted patch against the gold patch, 0..1. It equals
              the SWE-RL reference implementation's score, including 0.0 for empty and
              unparsable patches.
  reward      similarity where `format` is `ok`; -1 where it is not (empty, unparsable or,
              for search-replace, a malformed answer). Here it differs from the reference,
              which gives 0.0: use `similarity` to compare with the reference's numbers.

Output: JSON Lines (one row per prediction, in input order), a JSON list when --output ends in
.json, CSV (no per-file column) when it ends in .csv, JSON Lines on standard output for `-`.
An output that is one of the inputs is refused (exit 2).")]
/// `swe-eval reward`: the predictions, the dataset and where the rewards go.
#[command(mut_arg("dataset", |a| a.help("Dataset rows: JSON list, JSON Lines, or Parquet; or a Hugging Face dataset name")))]
pub struct Args {
    /// The dataset rows, with the gold patches.
    #[command(flatten)]
    pub dataset: DatasetFile,
    /// Predictions: JSONL, JSON list, JSON object keyed by instance id, or `gold`.
    #[arg(long, short = 'p', visible_alias = "predictions_path")]
    pub predictions: String,
    /// Where to write the rewards: JSON Lines; a JSON list if it ends in .json; CSV (no
    /// per-file column) if it ends in .csv; `-` for JSON Lines on standard output.
    #[arg(long, short = 'o')]
    pub output: PathBuf,
    /// What the predictions are, and so how they are compared with the gold patch.
    #[arg(long, value_enum, default_value_t = Variant::Unidiff)]
    pub variant: Variant,
    /// A local clone of a repository, as owner/name=PATH (search-replace variant; repeatable).
    #[arg(long = "repo", value_name = "OWNER/NAME=PATH")]
    pub repos: Vec<String>,
    /// A folder of clones named owner__name, owner/name or name (search-replace variant).
    #[arg(long)]
    pub mirrors: Option<PathBuf>,
    /// Worker threads [default: every core] [allowed: 1 to 1024]; at most the cores are used
    /// (the command says so when it uses fewer).
    #[arg(long, short = 'j', visible_aliases = ["jobs", "max_workers"], value_parser = super::values::workers())]
    pub workers: Option<usize>,
}

impl Args {
    /// What the command reads and writes, for the clobber check.
    pub fn io(&self) -> swe_eval_core::paths::IoPlan {
        use swe_eval_core::paths::{is_stdout, IoPlan, Output};
        IoPlan::new()
            .input("--dataset", &self.dataset.dataset)
            .input_spec("--predictions", &self.predictions)
            .output(if is_stdout(&self.output) {
                Output::Stdout
            } else {
                Output::File(self.output.clone())
            })
    }
}

/// How the rewards are written, from the output's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// One JSON object per line.
    JsonLines,
    /// One JSON list.
    JsonList,
    /// CSV with a header (no per-file column).
    Csv,
}

impl OutputFormat {
    /// `.csv` is CSV, `.json` a JSON list, anything else (and `-`) JSON Lines.
    pub fn of(path: &Path) -> OutputFormat {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("csv") => OutputFormat::Csv,
            Some("json") => OutputFormat::JsonList,
            _ => OutputFormat::JsonLines,
        }
    }

    /// The format's name in messages (`JSON Lines`, `a JSON list`, `CSV`).
    pub fn name(self) -> &'static str {
        match self {
            OutputFormat::JsonLines => "JSON Lines",
            OutputFormat::JsonList => "a JSON list",
            OutputFormat::Csv => "CSV",
        }
    }
}

/// Scores every prediction and writes the rewards, on at most as many threads as cores.
pub fn run(args: Args) -> CliResult {
    let (result, workers) = reward::with_workers(args.workers, || run_in_pool(args))?;
    if let Some(note) = workers.note("worker threads", "its cores") {
        eprintln!("note: {note}");
    }
    result
}

fn run_in_pool(args: Args) -> CliResult {
    // Every `--repo` is checked before anything is read, whatever the variant: a malformed one
    // is bad usage (exit 2), as in `run`, not a flag silently unused.
    let mut source = RepoSources {
        mirrors: args.mirrors.clone(),
        ..Default::default()
    };
    for flag in &args.repos {
        source.add_override(flag)?;
    }
    // A file's rows must carry the gold patch; a hub split always does.
    let (dataset, ds_problems) = if args.dataset.dataset.exists() {
        swe_eval_core::dataset::load_with_gold(&args.dataset.dataset)?
    } else {
        args.dataset.load()?
    };
    let loaded = swe_eval_core::predictions::load(&args.predictions, Some(&dataset))?;
    let mut problems: Vec<String> = ds_problems.iter().map(ToString::to_string).collect();
    problems.extend(loaded.problems.iter().map(ToString::to_string));
    let preds = loaded.items;
    let results = match args.variant {
        Variant::Unidiff => reward::unidiff_rewards(&dataset, &preds),
        Variant::SearchReplace => reward::search_replace_rewards(&dataset, &preds, &source),
    };
    let mut records = Vec::with_capacity(preds.len());
    for (p, r) in preds.iter().zip(&results) {
        match r {
            Ok(r) => records.push(RewardRecord::new(p, r)),
            Err(e) => {
                let at = p
                    .line
                    .map(|l| format!("{}:{l}: ", args.predictions))
                    .unwrap_or_default();
                problems.push(format!("{at}{e}"));
            }
        }
    }
    let format = OutputFormat::of(&args.output);
    let bytes = match format {
        OutputFormat::Csv => reward::rewards_csv(&records)?,
        OutputFormat::JsonList => reward::rewards_json_list(&records),
        OutputFormat::JsonLines => reward::rewards_jsonl(&records),
    };
    if is_stdout(&args.output) {
        let mut out = std::io::stdout().lock();
        out.write_all(&bytes)?;
        out.flush()?;
    } else {
        swe_eval_core::fsutil::write_atomic(&args.output, &bytes)?;
    }
    super::print_problems("problem: ", &problems);
    eprintln!(
        "wrote {} rewards to {} ({}){}",
        records.len(),
        if is_stdout(&args.output) {
            "standard output".to_string()
        } else {
            args.output.display().to_string()
        },
        format.name(),
        if problems.is_empty() {
            String::new()
        } else {
            format!(" ({} problems)", problems.len())
        }
    );
    if records.is_empty() {
        return Err(super::NothingComputable(format!(
            "no prediction could be scored ({} problems)",
            problems.len()
        ))
        .into());
    }
    Ok(ending(&Troubles::of_inputs(problems.len())))
}
