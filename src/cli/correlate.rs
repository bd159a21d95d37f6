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
    /// Study only this model's rows (rows that name no model count as its) [default: one
    /// study per model the inputs name].
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
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

/// Joins, studies each model, writes the files and prints the headlines.
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
    let joined = study::join(rewards, outcomes, ds.as_ref(), args.model.as_deref())?;
    let opts = Options {
        bootstrap: args.bootstrap,
        seed: args.seed,
        thresholds: args.thresholds.clone(),
        blind_spots: args.blind_spots,
    };
    let studied = joined.iter().filter(|j| !j.observations.is_empty()).count();
    if studied == 0 {
        report_problems(&problems);
        return Err(super::NothingComputable(format!(
            "nothing to study: no reward found its outcome ({n_rewards} reward rows, \
             {n_outcomes} outcome rows{}); nothing written",
            match joined.iter().find_map(|j| j.models_differ.as_ref()) {
                Some((r, o)) =>
                    format!("; the rewards are of {r}, the outcomes of {o}: different runs"),
                None => String::new(),
            }
        ))
        .into());
    }
    let predicted = load_patches(&args.predictions, &mut problems)?;

    // One study per model; several are written to a folder each, named after the model.
    let mut unmatched = 0;
    let mut png_problems = Vec::new();
    let mut lines = Vec::new();
    for j in &joined {
        let name = j
            .model
            .clone()
            .unwrap_or_else(|| "unnamed-model".to_string());
        if j.observations.is_empty() {
            unmatched += j.unmatched_rewards.len() + j.unmatched_outcomes.len();
            lines.push(format!(
                "model {name}: not studied, no reward found its outcome{}",
                unmatched_words(j)
            ));
            continue;
        }
        let summary = study::analyze(j, &opts);
        let dir = if studied > 1 {
            args.output.join(&name)
        } else {
            args.output.clone()
        };
        let patches = patches_for(&summary, j.model.as_deref(), ds.as_ref(), &predicted);
        let written = study::write_study(&dir, &summary, &j.observations, &patches)?;
        unmatched += summary.n_unmatched;
        png_problems.extend(written.png_problems);
        lines.push(format!(
            "{}joined {} predictions; {} resolved, {} without verdict{}",
            if studied > 1 {
                format!("model {name}: ")
            } else {
                String::new()
            },
            summary.n,
            summary.n_resolved,
            summary.n_no_verdict,
            unmatched_words(j)
        ));
        println!(
            "{}{}",
            if studied > 1 {
                format!("{name}: ")
            } else {
                String::new()
            },
            summary.headline
        );
        println!("wrote {} files to {}", written.files.len(), dir.display());
    }
    report_problems(&problems);
    eprintln!(
        "{n_rewards} reward rows, {n_outcomes} outcome rows; {} (open report.html), {:.2} s",
        match studied {
            1 => "one study".to_string(),
            n => format!(
                "{n} studies, one per model, each in its folder under {}",
                args.output.display()
            ),
        },
        started.elapsed().as_secs_f64()
    );
    for line in &lines {
        eprintln!("{line}");
    }
    super::print_problems("warning: ", &png_problems);
    // Unmatched rows are an input problem of their own (exit 3), not only a note.
    Ok(ending(&Troubles::of_inputs(
        problems.len() + png_problems.len() + unmatched,
    )))
}

/// "; unmatched: 2 rewards without an outcome (a__a-1#0, ...), ..." or nothing.
fn unmatched_words(j: &study::Joined) -> String {
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
    let mut parts = Vec::new();
    if !j.unmatched_rewards.is_empty() {
        parts.push(format!(
            "{} rewards without an outcome: {}",
            j.unmatched_rewards.len(),
            show(&j.unmatched_rewards)
        ));
    }
    if !j.unmatched_outcomes.is_empty() {
        parts.push(format!(
            "{} outcomes without a reward: {}",
            j.unmatched_outcomes.len(),
            show(&j.unmatched_outcomes)
        ));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("; unmatched: {}", parts.join("; "))
    }
}

/// The predicted patches of `--predictions`, by (model, instance, sample); with several files
/// the k-th file is sample k, as for `--rewards`.
type Predicted = Vec<(Option<String>, String, u32, String)>;

fn load_patches(
    paths: &[PathBuf],
    problems: &mut Vec<InputProblem>,
) -> Result<Predicted, swe_eval_core::dataset::LoadError> {
    let several = paths.len() > 1;
    let mut out = Vec::new();
    for (k, path) in paths.iter().enumerate() {
        let loaded = swe_eval_core::predictions::load_path(path)?;
        problems.extend(loaded.problems);
        for p in loaded.items {
            let sample = if several { k as u32 } else { p.sample };
            out.push((
                study::model_key(Some(&p.model_name_or_path)),
                p.instance_id,
                sample,
                p.model_patch.unwrap_or_default(),
            ));
        }
    }
    Ok(out)
}

/// The patches one study's blind spots show: the predictions of its model (any, when the
/// study names none) and the dataset's gold patches.
fn patches_for(
    summary: &study::Summary,
    model: Option<&str>,
    ds: Option<&swe_eval_core::dataset::Dataset>,
    predicted: &Predicted,
) -> Patches {
    let mut patches = Patches::default();
    let wanted: Vec<(String, u32)> = summary
        .blind_spots
        .resolved_least_similar
        .iter()
        .chain(&summary.blind_spots.unresolved_most_similar)
        .map(|b| (b.instance_id.clone(), b.sample))
        .collect();
    if let Some(d) = ds {
        for (id, _) in &wanted {
            if let Some(inst) = d.get(id) {
                patches.gold.insert(id.clone(), inst.patch.clone());
            }
        }
    }
    for (m, id, sample, patch) in predicted {
        let key = (id.clone(), *sample);
        if model.is_none_or(|want| m.as_deref() == Some(want)) && wanted.contains(&key) {
            patches.predicted.insert(key, patch.clone());
        }
    }
    patches
}
