//! `swe-eval validate`: run each instance's gold patch and no patch at all, `-k` times each,
//! and flag the instances whose verdicts cannot be trusted: gold does not resolve, the
//! untouched tree already resolves, or a verdict changes between repetitions (flaky tests).
//! Writes `<output>/validate.<run_id>.json`; exits 3 when any instance is flagged.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use super::run::{
    execute, load_inputs, prepare_options, prepare_verbose, release_and_clean, with_stand_ins,
    ImageArgs,
};
use super::{CliResult, Outcome};
use crate::engine::DockerEngine;
use crate::images::CacheLevel;
use crate::predictions::Prediction;
use crate::runner::{self, Category, Layout, Plan, RunConfig, Verdict};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Dataset rows (JSON, JSON Lines or Parquet) [default: the bundled mini benchmark].
    #[arg(long, short = 'd')]
    pub dataset: Option<PathBuf>,
    /// Only these instances (space- or comma-separated).
    #[arg(long, short = 'i', num_args = 1.., value_delimiter = ',')]
    pub instance_ids: Vec<String>,
    /// Repetitions of each of the gold and the empty run.
    #[arg(short = 'k', long, default_value_t = 2)]
    pub repeat: u32,
    /// Run id [default: `validate`].
    #[arg(long, default_value = "validate")]
    pub run_id: String,
    /// Containers run at once [default: min(4, cores)].
    #[arg(long, short = 'j')]
    pub workers: Option<usize>,
    /// Output folder.
    #[arg(long, short = 'o', default_value = "results")]
    pub output: PathBuf,
    /// Per-run timeout in seconds [default: 1800; 60 for the mini benchmark].
    #[arg(long, short = 't')]
    pub timeout: Option<u64>,
    #[command(flatten)]
    pub images: ImageArgs,
}

/// What validation found about one instance.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub instance_id: String,
    /// Categories of the gold runs, then of the empty runs, in sample order.
    pub gold: Vec<Category>,
    pub empty: Vec<Category>,
    pub gold_not_resolved: bool,
    pub empty_resolves: bool,
    pub flaky: bool,
}

impl Finding {
    pub fn flagged(&self) -> bool {
        self.gold_not_resolved || self.empty_resolves || self.flaky
    }
}

/// Judges one instance from its gold and empty verdicts.
pub fn judge(instance_id: &str, gold: Vec<Category>, empty: Vec<Category>) -> Finding {
    let varies = |v: &[Category]| v.windows(2).any(|w| w[0] != w[1]);
    Finding {
        instance_id: instance_id.to_string(),
        gold_not_resolved: gold.is_empty() || gold.iter().any(|c| *c != Category::Resolved),
        empty_resolves: empty.contains(&Category::Resolved),
        flaky: varies(&gold) || varies(&empty),
        gold,
        empty,
    }
}

const GOLD: &str = "gold";
const EMPTY: &str = "empty";

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
    let inputs = load_inputs(dataset, preds, &args.instance_ids, &args.output)?;
    for p in &inputs.problems {
        eprintln!("warning: {p}");
    }
    let mini = inputs.mini_mirrors.is_some();
    let k = args.repeat.max(1);
    let mut predictions = Vec::new();
    for id in &inputs.instance_ids {
        let Some(inst) = inputs.dataset.get(id) else {
            continue;
        };
        for sample in 0..k {
            for (model, patch) in [(GOLD, inst.patch.clone()), (EMPTY, String::new())] {
                predictions.push(Prediction {
                    instance_id: id.clone(),
                    model_name_or_path: model.to_string(),
                    model_patch: Some(patch),
                    sample,
                    line: None,
                    extra: Default::default(),
                });
            }
        }
    }
    let workers = args.workers.unwrap_or_else(runner::default_workers).max(1);
    let cache_level: CacheLevel = args.images.cache_level.parse()?;
    let opts = prepare_options(
        &args.output,
        &args.images,
        inputs.mini_mirrors.clone(),
        workers,
    )?;
    let mut config = RunConfig::new(&args.run_id, args.output.clone());
    config.workers = workers;
    config.dedupe = false;
    config.run_empty = true;
    config.timeout = Duration::from_secs(args.timeout.unwrap_or(if mini {
        crate::mini::DEFAULT_TIMEOUT_SECS
    } else {
        1800
    }));
    let engine = Arc::new(DockerEngine::connect().await?);
    let pending = runner::pending(&predictions, &config);
    let prepared = prepare_verbose(
        engine.clone(),
        &args.run_id,
        &inputs.dataset,
        &pending,
        &opts,
    )
    .await;
    let plan = Plan {
        setups: with_stand_ins(prepared.setups, &inputs.dataset, &predictions),
        predictions,
        instance_ids: inputs.instance_ids.clone(),
    };
    let report = execute(engine.clone(), plan, config).await?;
    release_and_clean(&*engine, &prepared.images, cache_level).await;

    // The verdicts, from the run's per-prediction file (resumed ones included).
    let layout = Layout::new(&args.output, &args.run_id);
    let text = std::fs::read_to_string(layout.jsonl_path())?;
    let mut by: BTreeMap<(String, String), BTreeMap<u32, Category>> = BTreeMap::new();
    for line in text.lines() {
        let v: Verdict = serde_json::from_str(line)?;
        by.entry((v.instance_id, v.model))
            .or_default()
            .insert(v.sample, v.category);
    }
    let mut take = |id: &str, model: &str| -> Vec<Category> {
        by.remove(&(id.to_string(), model.to_string()))
            .map(|m| m.into_values().collect())
            .unwrap_or_default()
    };
    let findings: Vec<Finding> = inputs
        .instance_ids
        .iter()
        .map(|id| {
            let gold = take(id, GOLD);
            let empty = take(id, EMPTY);
            judge(id, gold, empty)
        })
        .collect();

    let flagged: Vec<&Finding> = findings.iter().filter(|f| f.flagged()).collect();
    let names = |v: &[Category]| v.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(",");
    for f in &findings {
        let mut why = Vec::new();
        if f.gold_not_resolved {
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
    let troubled = !flagged.is_empty() || report.not_run > 0 || !report.problems.is_empty();
    Ok(if troubled {
        Outcome::WithProblems
    } else {
        Outcome::Clean
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use Category::*;

    #[test]
    fn judging_flags_each_kind_of_untrustworthy_instance() {
        let cases = [
            (
                vec![Resolved, Resolved],
                vec![Unresolved, Unresolved],
                false,
                "healthy",
            ),
            (
                vec![Resolved, Unresolved],
                vec![Unresolved, Unresolved],
                true,
                "gold flips",
            ),
            (
                vec![Unresolved, Unresolved],
                vec![Unresolved, Unresolved],
                true,
                "gold never resolves",
            ),
            (
                vec![Resolved, Resolved],
                vec![Resolved, Resolved],
                true,
                "resolves without a patch",
            ),
            (
                vec![Resolved, Resolved],
                vec![Unresolved, Error],
                true,
                "empty run flips",
            ),
            (vec![], vec![], true, "nothing ran"),
        ];
        for (gold, empty, flagged, why) in cases {
            assert_eq!(judge("x", gold, empty).flagged(), flagged, "{why}");
        }
        let f = judge(
            "x",
            vec![Resolved, Unresolved],
            vec![Unresolved, Unresolved],
        );
        assert!(f.flaky && f.gold_not_resolved && !f.empty_resolves);
    }
}
