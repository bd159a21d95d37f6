//! `swe-eval correlate`: how well does the similarity reward track executed correctness?
//! Joins rewards with outcomes, computes the study, writes summary.json, per_prediction.csv,
//! plots and reports.

use std::path::PathBuf;
use std::time::Instant;

use super::args::DatasetArgs;
use super::CliResult;
use crate::orchestrate::{ending, Troubles};
use swe_eval_core::dataset::InputProblem;
use swe_eval_core::study::{self, Options, Patches};

/// `swe-eval correlate`: the rewards, the outcomes and the study's settings.
#[derive(Debug, clap::Args)]
#[command(mut_arg("dataset", |a| a.help("The dataset: repository and difficulty per instance, and gold patches for blind spots")))]
pub struct Args {
    /// Rewards from `swe-eval reward` (JSON Lines or CSV). Repeat for several runs: the k-th
    /// file is then sample k.
    #[arg(long, required = true, value_name = "FILE")]
    pub rewards: Vec<PathBuf>,
    /// Outcomes: a `swe-eval run` output folder, an official run summary JSON, a JSON Lines of
    /// {instance_id, sample, resolved}, or mini-swe-agent's per_run_results.json (runs are
    /// samples 0, 1, ... in file order). Repeat for several runs: the k-th is then sample k.
    #[arg(long, required = true, value_name = "PATH")]
    pub results: Vec<PathBuf>,
    /// Output folder.
    #[arg(
        long,
        short = 'o',
        default_value = "results/correlate",
        value_name = "DIR"
    )]
    pub output: PathBuf,
    /// The dataset rows.
    #[command(flatten)]
    pub dataset: DatasetArgs,
    /// The predictions the rewards were computed on (for the blind spots' patches); repeat as
    /// --rewards.
    #[arg(
        long,
        short = 'p',
        visible_alias = "predictions_path",
        value_name = "FILE"
    )]
    pub predictions: Vec<PathBuf>,
    /// Bootstrap resamples for the AUROC intervals (0: none) [allowed: 0 to 100000].
    #[arg(long, default_value_t = 1000, value_name = "N", value_parser = super::values::bootstrap())]
    pub bootstrap: usize,
    /// Seed of the bootstrap.
    #[arg(long, default_value_t = 0, value_name = "S")]
    pub seed: u64,
    /// Score thresholds for precision and recall [allowed: -1 to 1].
    #[arg(long, value_delimiter = ',', default_values_t = [0.5, 0.8], value_name = "T,...", value_parser = super::values::threshold())]
    pub thresholds: Vec<f64>,
    /// Blind spots to show of each kind [allowed: 0 to 1000].
    #[arg(long, default_value_t = 10, value_name = "K", value_parser = super::values::blind_spots())]
    pub blind_spots: usize,
}

impl Args {
    /// What the command reads and writes, for the clobber check.
    pub fn io(&self) -> swe_eval_core::paths::IoPlan {
        let mut plan = swe_eval_core::paths::IoPlan::new()
            .output(swe_eval_core::paths::Output::Folder(self.output.clone()));
        for p in &self.rewards {
            plan = plan.input("--rewards", p);
        }
        for p in &self.results {
            plan = plan.input("--results", p);
        }
        for p in &self.predictions {
            plan = plan.input("--predictions", p);
        }
        if let Some(d) = &self.dataset.dataset {
            plan = plan.input("--dataset", d);
        }
        plan
    }
}

pub(crate) fn report_problems(problems: &[InputProblem]) {
    super::print_problems("warning: ", problems);
}

/// Joins, studies, writes the files and prints the headline.
pub fn run(args: Args) -> CliResult {
    let started = Instant::now();
    let mut problems = Vec::new();
    let ds = args.dataset.load()?.map(|(d, probs)| {
        problems.extend(probs);
        d
    });
    let rewards = study::load_rewards_files(&args.rewards, &mut problems)?;
    let outcomes = study::load_outcome_files(&args.results, &mut problems)?;
    let (n_rewards, n_outcomes) = (rewards.len(), outcomes.len());
    let joined = study::join(rewards, outcomes, ds.as_ref());
    let opts = Options {
        bootstrap: args.bootstrap,
        seed: args.seed,
        thresholds: args.thresholds.clone(),
        blind_spots: args.blind_spots,
    };
    let summary = study::analyze(&joined, &opts);
    if summary.n == 0 {
        report_problems(&problems);
        return Err(super::NothingComputable(format!(
            "nothing to study: no reward found its outcome ({n_rewards} reward rows, \
             {n_outcomes} outcome rows{}); nothing written",
            match &summary.models_differ {
                Some([r, o]) =>
                    format!("; the rewards are of {r}, the outcomes of {o}: different runs"),
                None => String::new(),
            }
        ))
        .into());
    }

    let mut patches = Patches::default();
    let wanted: Vec<(String, u32)> = summary
        .blind_spots
        .resolved_least_similar
        .iter()
        .chain(&summary.blind_spots.unresolved_most_similar)
        .map(|b| (b.instance_id.clone(), b.sample))
        .collect();
    if let Some(d) = &ds {
        for (id, _) in &wanted {
            if let Some(inst) = d.get(id) {
                patches.gold.insert(id.clone(), inst.patch.clone());
            }
        }
    }
    let several = args.predictions.len() > 1;
    for (k, path) in args.predictions.iter().enumerate() {
        let loaded = swe_eval_core::predictions::load_path(path)?;
        problems.extend(loaded.problems);
        for p in loaded.items {
            let key = (
                p.instance_id.clone(),
                if several { k as u32 } else { p.sample },
            );
            if wanted.contains(&key) {
                patches.predicted.insert(key, p.patch().to_string());
            }
        }
    }

    let written = study::write_study(&args.output, &summary, &joined.observations, &patches)?;
    report_problems(&problems);
    eprintln!(
        "joined {} predictions ({} reward rows, {} outcome rows); {} resolved, {} without verdict",
        summary.n, n_rewards, n_outcomes, summary.n_resolved, summary.n_no_verdict
    );
    if summary.n_unmatched > 0 {
        let show = |v: &[(String, u32)]| -> String {
            let mut s: Vec<String> = v
                .iter()
                .take(5)
                .map(|(id, k)| format!("{id}#{k}"))
                .collect();
            if v.len() > 5 {
                s.push(format!("... {} more", v.len() - 5));
            }
            s.join(", ")
        };
        if !joined.unmatched_rewards.is_empty() {
            eprintln!(
                "unmatched: {} rewards without an outcome: {}",
                joined.unmatched_rewards.len(),
                show(&joined.unmatched_rewards)
            );
        }
        if !joined.unmatched_outcomes.is_empty() {
            eprintln!(
                "unmatched: {} outcomes without a reward: {}",
                joined.unmatched_outcomes.len(),
                show(&joined.unmatched_outcomes)
            );
        }
    }
    super::print_problems("warning: ", &written.png_problems);
    println!("{}", summary.headline);
    println!(
        "wrote {} files to {} in {:.2} s (open report.html)",
        written.files.len(),
        args.output.display(),
        started.elapsed().as_secs_f64()
    );
    // Unmatched rows are an input problem of their own (exit 3), not only a note.
    Ok(ending(&Troubles::of_inputs(
        problems.len() + written.png_problems.len() + summary.n_unmatched,
    )))
}
