//! `swe-eval reward`: the SWE-RL similarity reward of each prediction, without executing
//! anything. One JSON line per prediction in input order (or CSV when the output ends in
//! `.csv`); predictions for instances not in the dataset and malformed rows are reported on
//! stderr, the others are still written, and the exit code is 3.

use std::path::PathBuf;

use super::CliResult;
use crate::orchestrate::{outcome, Troubles};
use crate::repos::RepoSources;
use crate::reward::batch::{self, RewardRecord};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Variant {
    /// Predictions are unified diffs (SWE-bench format), compared with the gold patch.
    Unidiff,
    /// Predictions are raw SWE-RL outputs (<think>, <solution>, SEARCH/REPLACE blocks);
    /// original files come from local git repositories at each instance's base commit.
    SearchReplace,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Dataset rows: JSON list, JSON Lines, or Parquet; or a Hugging Face dataset name.
    #[arg(long, short = 'd', visible_alias = "dataset_name")]
    pub dataset: PathBuf,
    /// The split of a Hugging Face dataset name given as --dataset.
    #[arg(long, default_value = "test")]
    pub split: String,
    /// Predictions: JSONL, JSON list, JSON object keyed by instance id, or `gold`.
    #[arg(long, short = 'p', visible_alias = "predictions_path")]
    pub predictions: String,
    /// Where to write the rewards: JSON Lines, or CSV (no per-file column) if it ends in .csv.
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
    /// Worker threads [default: every core].
    #[arg(long, short = 'j', visible_aliases = ["jobs", "max_workers"])]
    pub workers: Option<usize>,
}

pub fn run(args: Args) -> CliResult {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.workers.unwrap_or(0))
        .build()?;
    pool.install(|| run_in_pool(args))
}

fn run_in_pool(args: Args) -> CliResult {
    let (dataset, ds_problems) = crate::dataset::load_dataset_split(&args.dataset, &args.split)?;
    let loaded = crate::predictions::load(&args.predictions, Some(&dataset))?;
    let mut problems: Vec<String> = ds_problems.iter().map(ToString::to_string).collect();
    problems.extend(loaded.problems.iter().map(ToString::to_string));
    let preds = loaded.items;
    let results = match args.variant {
        Variant::Unidiff => batch::unidiff_rewards(&dataset, &preds),
        Variant::SearchReplace => {
            let mut source = RepoSources {
                mirrors: args.mirrors.clone(),
                ..Default::default()
            };
            for flag in &args.repos {
                source.add_override(flag)?;
            }
            batch::search_replace_rewards(&dataset, &preds, &source)
        }
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
    let is_csv = args
        .output
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    let bytes = if is_csv {
        batch::to_csv(&records)?
    } else {
        batch::to_jsonl(&records)
    };
    crate::fsutil::write_atomic(&args.output, &bytes)?;
    for p in &problems {
        eprintln!("problem: {p}");
    }
    eprintln!(
        "wrote {} rewards to {}{}",
        records.len(),
        args.output.display(),
        if problems.is_empty() {
            String::new()
        } else {
            format!(" ({} problems)", problems.len())
        }
    );
    Ok(outcome(&Troubles::of_inputs(problems.len())))
}
