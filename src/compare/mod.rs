//! `swe-eval compare`: is the difference between two runs (checkpoints, prompts, scaffolds)
//! real? Per run, the resolve rate with its 95% interval and, with several samples per
//! instance, pass@1 and pass@k; per pair of runs, paired by instance, the difference with a
//! paired bootstrap interval, McNemar's exact test and the instances that flipped, overall, per
//! repository and per difficulty, and what changed in the similarity reward; for groups of
//! repeated runs of one system, the spread and the instances whose verdict is unstable, and how
//! much of each difference those instances could explain.
//!
//! Flow: `inputs` reads each run (reusing the study's outcome and reward readers);
//! [`analyze`] computes everything (pure, `stats`); `plots` draws the forest plot of
//! per-repository differences; `report` writes summary.json, the CSVs, the plots and
//! report.md / report.html. Nothing here runs Docker.
//!
//! Rates: a prediction without a test verdict (harness error, empty patch, missing from a run)
//! counts as unresolved, as the official resolve rate counts it. With several samples per
//! instance an instance's rate is the share of its samples resolved, and a run's rate is their
//! mean over instances (pass@1).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::dataset::Dataset;
use crate::study::{repo_from_instance_id, Outcome};

pub mod inputs;
pub mod plots;
pub mod report;
pub mod stats;

pub use inputs::{load_runs, Run, RunSpec};
pub use report::{write_compare, WriteCompareError};

/// The version of summary.json's layout; raised when a field changes meaning or goes away.
pub const FORMAT_VERSION: u32 = 1;

/// Settings of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Options {
    /// Bootstrap resamples for the intervals of differences (0: none).
    pub bootstrap: usize,
    /// Seed of the bootstrap: the same seed gives the same intervals.
    pub seed: u64,
    /// Groups of repeated runs of one system: (group name, run names).
    pub repeats: Vec<(String, Vec<String>)>,
    /// The pairs to compare, as (A, B) run names (B minus A); empty: every pair, in argument
    /// order (the later run is B).
    pub pairs: Vec<(String, String)>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            bootstrap: 5000,
            seed: 0,
            repeats: Vec::new(),
            pairs: Vec::new(),
        }
    }
}

/// A bad comparison request (unknown run name, a run in a pair with itself, ...).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CompareError(pub String);

/// pass@k over the instances that have at least k samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PassAtK {
    /// The k of pass@k.
    pub k: usize,
    /// Instances with at least k samples, over which the value is averaged.
    pub instances: usize,
    /// pass@k, 0..1.
    pub value: f64,
}

/// One run on its own.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunStats {
    /// The run's name (`NAME=` of its argument, else derived from its path: the run id or the
    /// file's stem).
    pub name: String,
    /// The file or folder the run was read from.
    pub source: String,
    /// Instances with at least one prediction.
    pub n_instances: usize,
    /// Predictions (samples of all instances).
    pub n_predictions: usize,
    /// Fewest samples of an instance.
    pub min_samples: usize,
    /// Most samples of an instance.
    pub max_samples: usize,
    /// Predictions resolved.
    pub n_resolved: usize,
    /// Predictions without a test verdict (counted unresolved).
    pub n_no_verdict: usize,
    /// [`RunStats::n_no_verdict`] by reason (`error`, `empty_patch`, `missing_from_run`, ...).
    pub no_verdict_by_reason: BTreeMap<String, usize>,
    /// The resolve rate; with several samples per instance, pass@1 (the mean over instances of
    /// the share of samples resolved).
    pub resolve_rate: Option<f64>,
    /// The 95% interval of `resolve_rate` (see [`Methods::rate_interval`]).
    pub ci95: Option<[f64; 2]>,
    /// How `ci95` was computed.
    pub ci_method: &'static str,
    /// pass@k for k = 1 up to the most samples of an instance (one sample: pass@1 only).
    pub pass_at_k: Vec<PassAtK>,
    /// Mean similarity over its predictions with a reward (`--rewards`).
    pub mean_similarity: Option<f64>,
    /// Predictions with a similarity in `--rewards`: how many `mean_similarity` averages.
    pub n_with_similarity: usize,
}

/// A group of repeated runs of one system.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RepeatStats {
    /// The group's name (`--repeat NAME=RUN,RUN,...`).
    pub name: String,
    /// Its runs, by name.
    pub runs: Vec<String>,
    /// Each run's resolve rate (pass@1), in `runs` order.
    pub rates: Vec<f64>,
    /// Mean of `rates`.
    pub mean: f64,
    /// The sample standard deviation of the rates (n - 1); none with one run.
    pub sd: Option<f64>,
    /// The population standard deviation (n).
    pub sd_population: f64,
    /// The lowest rate.
    pub min: f64,
    /// The highest rate.
    pub max: f64,
    /// max - min.
    pub range: f64,
    /// Instances every run of the group has.
    pub n_instances: usize,
    /// Of those, instances resolved in every prediction of the group.
    pub n_always: usize,
    /// Instances resolved in no prediction of the group.
    pub n_never: usize,
    /// Instances resolved in some predictions of the group but not all.
    pub n_unstable: usize,
    /// Those unstable instances, by id.
    pub unstable: Vec<String>,
    /// pass@k over all the group's predictions of those instances (runs as samples).
    pub pass_at_k: Vec<PassAtK>,
}

/// A difference between two runs over some instances.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diff {
    /// Instances over which the difference is taken (in both runs).
    pub n: usize,
    /// Run A's resolve rate over those instances.
    pub rate_a: f64,
    /// Run B's resolve rate over those instances.
    pub rate_b: f64,
    /// rate_b - rate_a.
    pub difference: f64,
    /// Paired percentile bootstrap 95% interval of the difference.
    pub ci95: Option<[f64; 2]>,
    /// McNemar's exact p-value; only when both runs have one sample per instance.
    pub mcnemar_p: Option<f64>,
    /// Instances resolved in B but not A (with several samples: whose rate rose).
    pub n_to_resolved: usize,
    /// Instances resolved in A but not B (with several samples: whose rate fell).
    pub n_to_unresolved: usize,
}

/// How the similarity reward moved between the two runs (`--rewards` for both).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimilarityChange {
    /// Instances with a similarity in both runs (mean over samples).
    pub n: usize,
    /// Run A's mean similarity over those instances.
    pub mean_a: f64,
    /// Run B's mean similarity over those instances.
    pub mean_b: f64,
    /// Mean of the per-instance differences (B - A).
    pub mean_difference: f64,
    /// Paired bootstrap 95% interval of `mean_difference`.
    pub ci95: Option<[f64; 2]>,
    /// Mean per-instance difference over the instances that flipped to resolved.
    pub mean_difference_to_resolved: Option<f64>,
    /// Mean per-instance difference over the instances that flipped to unresolved.
    pub mean_difference_to_unresolved: Option<f64>,
    /// Instances whose similarity changed at all (patches differ).
    pub n_changed: usize,
}

/// One pair of runs, paired by instance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairStats {
    /// Run A's name (the baseline).
    pub a: String,
    /// Run B's name (the difference is B minus A).
    pub b: String,
    /// The pair's answer in one sentence.
    pub headline: String,
    /// Instances in A only (left out of the pair).
    pub n_only_a: usize,
    /// Instances in B only.
    pub n_only_b: usize,
    /// The difference over every paired instance.
    #[serde(flatten)]
    pub overall: Diff,
    /// Both runs have one sample per instance (flips and McNemar are about verdicts).
    pub single_sample: bool,
    /// Instances resolved in B but not A, by id.
    pub to_resolved: Vec<String>,
    /// Instances resolved in A but not B, by id.
    pub to_unresolved: Vec<String>,
    /// Flips to resolved on instances unstable across repeated runs (`--repeat`); the
    /// difference splits as `difference = difference_unstable + difference_stable`.
    pub n_to_resolved_unstable: usize,
    /// Flips to unresolved on unstable instances.
    pub n_to_unresolved_unstable: usize,
    /// The part of `difference` the unstable instances make.
    pub difference_unstable: f64,
    /// The part of `difference` the other instances make.
    pub difference_stable: f64,
    /// The difference per repository.
    pub per_repo: BTreeMap<String, Diff>,
    /// The difference per difficulty (`unknown` without a dataset).
    pub per_difficulty: BTreeMap<String, Diff>,
    /// How the similarity moved, when both runs have rewards.
    pub similarity: Option<SimilarityChange>,
}

/// Statistic definitions, written into summary.json so the file explains itself.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Methods {
    /// How a run's resolve-rate interval is computed.
    pub rate_interval: &'static str,
    /// The pass@k estimator.
    pub pass_at_k: &'static str,
    /// How the interval of a difference is computed.
    pub difference_interval: &'static str,
    /// The McNemar test.
    pub mcnemar: &'static str,
    /// What makes an instance unstable, and the unstable part of a difference.
    pub unstable: &'static str,
    /// How a prediction without a test verdict counts.
    pub no_verdict: &'static str,
}

/// The definitions every summary.json carries.
pub const METHODS: Methods = Methods {
    rate_interval: "one sample per instance: Wilson score 95% interval; several: percentile \
                    bootstrap over instances of pass@1 (same resamples and seed as below)",
    pass_at_k: "unbiased estimator of Chen et al. (2021), 1 - C(n-c, k) / C(n, k) per instance, \
                averaged over instances with at least k samples",
    difference_interval: "paired percentile bootstrap 95% interval: instances resampled with \
                          replacement, mean of per-instance differences; SplitMix64 streams \
                          from the seed (per repository or difficulty, the seed mixed with the \
                          group's label)",
    mcnemar: "McNemar's exact test: two-sided binomial test of the discordant pairs at 1/2; \
              not corrected for multiple comparisons",
    unstable: "an instance is unstable when the runs of a --repeat group disagree on it; the \
               unstable part of a difference is the net flips on such instances over the \
               paired instances",
    no_verdict: "predictions without a test verdict (error, empty patch, missing from a run) \
                 count as unresolved",
};

/// What `compare` found; written as summary.json.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// [`FORMAT_VERSION`], first in the file.
    pub format_version: u32,
    /// The answer first.
    pub headline: String,
    /// Each run on its own, in argument order.
    pub runs: Vec<RunStats>,
    /// Each `--repeat` group.
    pub repeats: Vec<RepeatStats>,
    /// Union of the unstable instances of every repeat group.
    pub unstable: Vec<String>,
    /// Each pair compared.
    pub pairs: Vec<PairStats>,
    /// The settings used.
    pub settings: Options,
    /// The statistics' definitions ([`METHODS`]).
    pub methods: Methods,
    /// Repository and difficulty come from this dataset (else from the instance id, and
    /// difficulty `unknown`).
    pub dataset_used: bool,
}

/// Repository and difficulty of an instance.
pub fn labels(id: &str, dataset: Option<&Dataset>) -> (String, String) {
    let inst = dataset.and_then(|d| d.get(id));
    let repo = inst.map_or_else(|| repo_from_instance_id(id), |i| i.repo.clone());
    let diff = inst
        .and_then(|i| i.difficulty.clone())
        .unwrap_or_else(|| "unknown".into());
    (repo, diff)
}

/// Share of an instance's samples resolved.
fn rate_of(v: &[(u32, Outcome)]) -> f64 {
    v.iter().filter(|(_, x)| x.resolved()).count() as f64 / v.len() as f64
}

fn pass_at_k_of(counts: &[(usize, usize)]) -> Vec<PassAtK> {
    let max = counts.iter().map(|c| c.0).max().unwrap_or(0);
    (1..=max)
        .filter_map(|k| {
            let vals: Vec<f64> = counts
                .iter()
                .filter_map(|&(n, c)| stats::pass_at_k(n, c, k))
                .collect();
            Some(PassAtK {
                k,
                instances: vals.len(),
                value: stats::mean(&vals)?,
            })
        })
        .collect()
}

fn run_stats(run: &Run, opts: &Options) -> RunStats {
    let mut n_pred = 0;
    let mut n_resolved = 0;
    let mut by_reason: BTreeMap<String, usize> = BTreeMap::new();
    let mut counts = Vec::new();
    for v in run.outcomes.values() {
        n_pred += v.len();
        let c = v.iter().filter(|(_, x)| x.resolved()).count();
        n_resolved += c;
        counts.push((v.len(), c));
        for (_, x) in v {
            if let Outcome::NoVerdict(why) = x {
                *by_reason.entry(why.clone()).or_default() += 1;
            }
        }
    }
    let rates: Vec<f64> = run.outcomes.values().map(|v| rate_of(v)).collect();
    let (min_s, max_s) = (
        counts.iter().map(|c| c.0).min().unwrap_or(0),
        counts.iter().map(|c| c.0).max().unwrap_or(0),
    );
    let single = max_s <= 1;
    let resolve_rate = stats::mean(&rates);
    let ci95 = if single {
        stats::wilson(n_resolved, n_pred)
    } else {
        stats::bootstrap_mean_ci(&rates, opts.bootstrap, opts.seed)
    };
    let sims: Vec<f64> = run
        .similarity
        .as_ref()
        .map(|m| {
            run.outcomes
                .iter()
                .flat_map(|(id, v)| {
                    v.iter()
                        .filter_map(|(s, _)| m.get(&(id.clone(), *s)).copied())
                })
                .collect()
        })
        .unwrap_or_default();
    RunStats {
        name: run.name.clone(),
        source: run.source.clone(),
        n_instances: run.outcomes.len(),
        n_predictions: n_pred,
        min_samples: min_s,
        max_samples: max_s,
        n_resolved,
        n_no_verdict: by_reason.values().sum(),
        no_verdict_by_reason: by_reason,
        resolve_rate,
        ci95,
        ci_method: if single {
            "Wilson score"
        } else {
            "percentile bootstrap over instances"
        },
        pass_at_k: pass_at_k_of(&counts),
        mean_similarity: stats::mean(&sims),
        n_with_similarity: sims.len(),
    }
}

fn repeat_stats(name: &str, members: &[&Run], stats_of: &[RunStats]) -> RepeatStats {
    let rates: Vec<f64> = stats_of
        .iter()
        .map(|s| s.resolve_rate.unwrap_or(0.0))
        .collect();
    let common: Vec<&String> = members[0]
        .outcomes
        .keys()
        .filter(|id| members.iter().all(|r| r.outcomes.contains_key(*id)))
        .collect();
    let (mut always, mut never) = (0, 0);
    let mut unstable = Vec::new();
    let mut counts = Vec::new();
    for id in &common {
        let all: Vec<bool> = members
            .iter()
            .flat_map(|r| r.outcomes[*id].iter().map(|(_, v)| v.resolved()))
            .collect();
        let c = all.iter().filter(|&&x| x).count();
        counts.push((all.len(), c));
        if c == all.len() {
            always += 1;
        } else if c == 0 {
            never += 1;
        } else {
            unstable.push((*id).clone());
        }
    }
    let min = rates.iter().copied().fold(f64::INFINITY, f64::min);
    let max = rates.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    RepeatStats {
        name: name.to_string(),
        runs: members.iter().map(|r| r.name.clone()).collect(),
        mean: stats::mean(&rates).unwrap_or(0.0),
        sd: stats::sd(&rates, 1),
        sd_population: stats::sd(&rates, 0).unwrap_or(0.0),
        min,
        max,
        range: max - min,
        rates,
        n_instances: common.len(),
        n_always: always,
        n_never: never,
        n_unstable: unstable.len(),
        unstable,
        pass_at_k: pass_at_k_of(&counts),
    }
}

/// The difference over `ids` (each with its per-instance rates and verdict-level flip).
fn diff_of(rows: &[&PairRow], single: bool, bootstrap: usize, seed: u64) -> Diff {
    let n = rows.len();
    let a: Vec<f64> = rows.iter().map(|r| r.a).collect();
    let b: Vec<f64> = rows.iter().map(|r| r.b).collect();
    let d: Vec<f64> = rows.iter().map(|r| r.b - r.a).collect();
    let up = rows.iter().filter(|r| r.b > r.a).count();
    let down = rows.iter().filter(|r| r.b < r.a).count();
    let (ra, rb) = (
        stats::mean(&a).unwrap_or(0.0),
        stats::mean(&b).unwrap_or(0.0),
    );
    Diff {
        n,
        rate_a: ra,
        rate_b: rb,
        difference: rb - ra,
        ci95: stats::bootstrap_mean_ci(&d, bootstrap, seed),
        mcnemar_p: single.then(|| stats::mcnemar_exact(down, up)),
        n_to_resolved: up,
        n_to_unresolved: down,
    }
}

struct PairRow<'a> {
    id: &'a str,
    repo: String,
    difficulty: String,
    a: f64,
    b: f64,
}

fn grouped(
    rows: &[PairRow<'_>],
    key: impl Fn(&PairRow<'_>) -> String,
    kind: &str,
    single: bool,
    opts: &Options,
) -> BTreeMap<String, Diff> {
    let mut groups: BTreeMap<String, Vec<&PairRow<'_>>> = BTreeMap::new();
    for r in rows {
        groups.entry(key(r)).or_default().push(r);
    }
    groups
        .into_iter()
        .map(|(name, rs)| {
            let seed = stats::group_seed(opts.seed, &format!("{kind}:{name}"));
            let d = diff_of(&rs, single, opts.bootstrap, seed);
            (name, d)
        })
        .collect()
}

/// Points with one decimal and a sign word: "4.2 points more".
fn points(d: f64) -> String {
    let p = (d * 100.0).abs();
    if p < 0.05 {
        "as many".into()
    } else {
        format!(
            "{p:.1} point{} {}",
            if (p - 1.0).abs() < 0.05 { "" } else { "s" },
            if d > 0.0 { "more" } else { "fewer" }
        )
    }
}

/// A p-value for prose: three significant digits, or "< 0.001".
pub fn p_text(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else {
        format!("p = {}", trim_sig(p))
    }
}

fn trim_sig(p: f64) -> String {
    if p >= 0.995 {
        return "1".into();
    }
    let digits = (2 - p.log10().floor() as i32).max(0) as usize;
    format!("{p:.digits$}")
}

fn pair_headline(p: &PairStats, any_repeats: bool) -> String {
    let o = &p.overall;
    let mut s = if (o.difference * 100.0).abs() < 0.05 {
        format!(
            "{} resolves as many instances as {} ({:.1}% each",
            p.b,
            p.a,
            o.rate_a * 100.0
        )
    } else {
        format!(
            "{} resolves {} than {} ({:.1}% vs {:.1}%",
            p.b,
            points(o.difference),
            p.a,
            o.rate_b * 100.0,
            o.rate_a * 100.0
        )
    };
    let _ = std::fmt::Write::write_fmt(&mut s, format_args!(", n = {})", o.n));
    if let Some([lo, hi]) = o.ci95 {
        s.push_str(&format!(", 95% CI {:.1} to {:.1}", lo * 100.0, hi * 100.0));
    }
    if let Some(pv) = o.mcnemar_p {
        s.push_str(&format!(", McNemar {}", p_text(pv)));
    }
    let (up, down) = (o.n_to_resolved, o.n_to_unresolved);
    if p.single_sample {
        s.push_str(&format!(
            "; {up} instance{} flipped to resolved, {down} to unresolved.",
            if up == 1 { "" } else { "s" }
        ));
    } else {
        s.push_str(&format!(
            "; {up} instance{} resolved more often, {down} less often.",
            if up == 1 { "" } else { "s" }
        ));
    }
    if any_repeats && up + down > 0 {
        let u = p.n_to_resolved_unstable + p.n_to_unresolved_unstable;
        let share = if u == up + down {
            format!("All {u} are")
        } else {
            format!("{u} of these {} are", up + down)
        };
        s.push_str(&format!(
            " {share} unstable across repeated runs of one system; they account for \
             {:+.1} of the {:+.1} points (the stable instances alone: {:+.1}).",
            p.difference_unstable * 100.0,
            o.difference * 100.0,
            p.difference_stable * 100.0
        ));
    }
    s
}

fn repeat_sentence(g: &RepeatStats) -> String {
    format!(
        "The {} repeated runs of {} resolve {:.1}% to {:.1}% (mean {:.1}%, sd {:.2} points, range \
         {:.1}); of {} instances {} are always resolved, {} never, {} unstable.",
        g.runs.len(),
        g.name,
        g.min * 100.0,
        g.max * 100.0,
        g.mean * 100.0,
        g.sd.unwrap_or(0.0) * 100.0,
        g.range * 100.0,
        g.n_instances,
        g.n_always,
        g.n_never,
        g.n_unstable
    )
}

/// Checks the options against the runs: names known, unique, pairs of two distinct runs.
fn resolve_names(runs: &[Run], opts: &Options) -> Result<(), CompareError> {
    let mut seen = BTreeSet::new();
    for r in runs {
        if !seen.insert(r.name.as_str()) {
            return Err(CompareError(format!(
                "two runs are named `{}`; name them apart with NAME=PATH",
                r.name
            )));
        }
    }
    let known = |n: &str, what: &str| -> Result<(), CompareError> {
        if seen.contains(n) {
            Ok(())
        } else {
            Err(CompareError(format!(
                "{what} names run `{n}`, which is not among the runs ({})",
                runs.iter()
                    .map(|r| r.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
    };
    let mut in_group = BTreeMap::new();
    for (g, members) in &opts.repeats {
        if members.len() < 2 {
            return Err(CompareError(format!(
                "--repeat {g}: a group needs at least two runs"
            )));
        }
        for m in members {
            known(m, &format!("--repeat {g}"))?;
            if let Some(other) = in_group.insert(m.as_str(), g.as_str()) {
                return Err(CompareError(format!(
                    "run `{m}` is in two --repeat groups ({other} and {g})"
                )));
            }
        }
    }
    for (a, b) in &opts.pairs {
        known(a, "--pair")?;
        known(b, "--pair")?;
        if a == b {
            return Err(CompareError(format!("--pair {a},{b}: a run with itself")));
        }
    }
    if runs.len() < 2 {
        return Err(CompareError("compare needs at least two runs".into()));
    }
    Ok(())
}

/// Computes the comparison.
pub fn analyze(
    runs: &[Run],
    dataset: Option<&Dataset>,
    opts: &Options,
) -> Result<Summary, CompareError> {
    resolve_names(runs, opts)?;
    let by_name: BTreeMap<&str, &Run> = runs.iter().map(|r| (r.name.as_str(), r)).collect();
    let run_stats: Vec<RunStats> = runs.iter().map(|r| run_stats(r, opts)).collect();
    let stats_by_name: BTreeMap<&str, &RunStats> =
        run_stats.iter().map(|s| (s.name.as_str(), s)).collect();
    let repeats: Vec<RepeatStats> = opts
        .repeats
        .iter()
        .map(|(g, members)| {
            let rs: Vec<&Run> = members.iter().map(|m| by_name[m.as_str()]).collect();
            let ss: Vec<RunStats> = members
                .iter()
                .map(|m| stats_by_name[m.as_str()].clone())
                .collect();
            repeat_stats(g, &rs, &ss)
        })
        .collect();
    let unstable: BTreeSet<String> = repeats
        .iter()
        .flat_map(|g| g.unstable.iter().cloned())
        .collect();
    let pairs: Vec<(String, String)> = if opts.pairs.is_empty() {
        let mut v = Vec::new();
        for i in 0..runs.len() {
            for j in i + 1..runs.len() {
                v.push((runs[i].name.clone(), runs[j].name.clone()));
            }
        }
        v
    } else {
        opts.pairs.clone()
    };
    let any_repeats = !repeats.is_empty();
    let pair_stats: Vec<PairStats> = pairs
        .iter()
        .map(|(a, b)| {
            let mut p = pair(
                by_name[a.as_str()],
                by_name[b.as_str()],
                dataset,
                &unstable,
                opts,
            );
            p.headline = pair_headline(&p, any_repeats);
            p
        })
        .collect();
    let headline = overall_headline(&run_stats, &repeats, &pair_stats, !opts.pairs.is_empty());
    Ok(Summary {
        format_version: FORMAT_VERSION,
        headline,
        runs: run_stats,
        repeats,
        unstable: unstable.into_iter().collect(),
        pairs: pair_stats,
        settings: opts.clone(),
        methods: METHODS,
        dataset_used: dataset.is_some(),
    })
}

fn overall_headline(
    runs: &[RunStats],
    repeats: &[RepeatStats],
    pairs: &[PairStats],
    pairs_chosen: bool,
) -> String {
    let mut parts = Vec::new();
    if pairs.len() == 1 || pairs_chosen {
        parts.extend(pairs.iter().map(|p| p.headline.clone()));
    } else {
        let rate = |r: &RunStats| r.resolve_rate.unwrap_or(0.0);
        if let (Some(lo), Some(hi)) = (
            runs.iter().min_by(|x, y| rate(x).total_cmp(&rate(y))),
            runs.iter().max_by(|x, y| rate(x).total_cmp(&rate(y))),
        ) {
            parts.push(format!(
                "Across {} runs the resolve rate ranges from {:.1}% ({}) to {:.1}% ({}).",
                runs.len(),
                rate(lo) * 100.0,
                lo.name,
                rate(hi) * 100.0,
                hi.name
            ));
        }
        let significant = pairs
            .iter()
            .filter(|p| p.overall.mcnemar_p.is_some_and(|x| x < 0.05))
            .count();
        if let Some(big) = pairs.iter().max_by(|x, y| {
            x.overall
                .difference
                .abs()
                .total_cmp(&y.overall.difference.abs())
        }) {
            let sig = match significant {
                0 => "none".to_string(),
                n => format!("{n}"),
            };
            parts.push(format!(
                "Largest of {} pairwise differences ({sig} at McNemar p < 0.05, uncorrected): {}",
                pairs.len(),
                big.headline
            ));
        }
    }
    parts.extend(repeats.iter().map(repeat_sentence));
    parts.join(" ")
}

fn pair(
    a: &Run,
    b: &Run,
    dataset: Option<&Dataset>,
    unstable: &BTreeSet<String>,
    opts: &Options,
) -> PairStats {
    let single = a
        .outcomes
        .values()
        .chain(b.outcomes.values())
        .all(|v| v.len() == 1);
    let rows: Vec<PairRow<'_>> = a
        .outcomes
        .iter()
        .filter_map(|(id, va)| {
            let vb = b.outcomes.get(id)?;
            let (repo, difficulty) = labels(id, dataset);
            Some(PairRow {
                id,
                repo,
                difficulty,
                a: rate_of(va),
                b: rate_of(vb),
            })
        })
        .collect();
    let refs: Vec<&PairRow<'_>> = rows.iter().collect();
    let overall = diff_of(&refs, single, opts.bootstrap, opts.seed);
    let n = rows.len().max(1) as f64;
    let to_resolved: Vec<String> = rows
        .iter()
        .filter(|r| r.b > r.a)
        .map(|r| r.id.to_string())
        .collect();
    let to_unresolved: Vec<String> = rows
        .iter()
        .filter(|r| r.b < r.a)
        .map(|r| r.id.to_string())
        .collect();
    let diff_sum = |pick: &dyn Fn(&PairRow<'_>) -> bool| -> f64 {
        rows.iter()
            .filter(|r| pick(r))
            .map(|r| r.b - r.a)
            .sum::<f64>()
            / n
    };
    let difference_unstable = diff_sum(&|r| unstable.contains(r.id));
    let difference_stable = diff_sum(&|r| !unstable.contains(r.id));
    let similarity = similarity_change(a, b, &rows, opts);
    PairStats {
        a: a.name.clone(),
        b: b.name.clone(),
        headline: String::new(),
        n_only_a: a.outcomes.len() - rows.len(),
        n_only_b: b.outcomes.len() - rows.len(),
        single_sample: single,
        n_to_resolved_unstable: to_resolved.iter().filter(|i| unstable.contains(*i)).count(),
        n_to_unresolved_unstable: to_unresolved
            .iter()
            .filter(|i| unstable.contains(*i))
            .count(),
        to_resolved,
        to_unresolved,
        difference_unstable,
        difference_stable,
        per_repo: grouped(&rows, |r| r.repo.clone(), "repo", single, opts),
        per_difficulty: grouped(&rows, |r| r.difficulty.clone(), "difficulty", single, opts),
        similarity,
        overall,
    }
}

/// Mean similarity of an instance's samples that have one.
fn instance_similarity(run: &Run, id: &str) -> Option<f64> {
    let m = run.similarity.as_ref()?;
    let v: Vec<f64> = run
        .outcomes
        .get(id)?
        .iter()
        .filter_map(|(s, _)| m.get(&(id.to_string(), *s)).copied())
        .collect();
    stats::mean(&v)
}

fn similarity_change(
    a: &Run,
    b: &Run,
    rows: &[PairRow<'_>],
    opts: &Options,
) -> Option<SimilarityChange> {
    a.similarity.as_ref()?;
    b.similarity.as_ref()?;
    let mut sa = Vec::new();
    let mut sb = Vec::new();
    let mut d = Vec::new();
    let (mut up, mut down) = (Vec::new(), Vec::new());
    for r in rows {
        let (Some(x), Some(y)) = (instance_similarity(a, r.id), instance_similarity(b, r.id))
        else {
            continue;
        };
        sa.push(x);
        sb.push(y);
        d.push(y - x);
        if r.b > r.a {
            up.push(y - x);
        } else if r.b < r.a {
            down.push(y - x);
        }
    }
    Some(SimilarityChange {
        n: d.len(),
        mean_a: stats::mean(&sa)?,
        mean_b: stats::mean(&sb)?,
        mean_difference: stats::mean(&d)?,
        ci95: stats::bootstrap_mean_ci(
            &d,
            opts.bootstrap,
            stats::group_seed(opts.seed, "similarity"),
        ),
        mean_difference_to_resolved: stats::mean(&up),
        mean_difference_to_unresolved: stats::mean(&down),
        n_changed: d.iter().filter(|x| x.abs() > 1e-12).count(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str, verdicts: &[(&str, &[bool])]) -> Run {
        Run {
            name: name.into(),
            source: name.into(),
            outcomes: verdicts
                .iter()
                .map(|(id, v)| {
                    (
                        id.to_string(),
                        v.iter()
                            .enumerate()
                            .map(|(s, &r)| (s as u32, Outcome::of_resolved(r)))
                            .collect(),
                    )
                })
                .collect(),
            similarity: None,
        }
    }

    #[test]
    fn flips_and_unstable_share() {
        let a = run(
            "a",
            &[
                ("x__x-1", &[true]),
                ("x__x-2", &[false]),
                ("y__y-1", &[true]),
                ("y__y-2", &[false]),
            ],
        );
        let b = run(
            "b",
            &[
                ("x__x-1", &[false]),
                ("x__x-2", &[true]),
                ("y__y-1", &[true]),
                ("y__y-2", &[true]),
            ],
        );
        let a2 = run(
            "a2",
            &[
                ("x__x-1", &[true]),
                ("x__x-2", &[true]),
                ("y__y-1", &[true]),
                ("y__y-2", &[false]),
            ],
        );
        let opts = Options {
            bootstrap: 200,
            repeats: vec![("A".into(), vec!["a".into(), "a2".into()])],
            pairs: vec![("a".into(), "b".into())],
            ..Options::default()
        };
        let s = analyze(&[a, b, a2], None, &opts).unwrap();
        let p = &s.pairs[0];
        assert_eq!(p.to_resolved, ["x__x-2", "y__y-2"]);
        assert_eq!(p.to_unresolved, ["x__x-1"]);
        assert_eq!(s.unstable, ["x__x-2"]);
        assert_eq!(
            (p.n_to_resolved_unstable, p.n_to_unresolved_unstable),
            (1, 0)
        );
        assert!((p.overall.difference - 0.25).abs() < 1e-15);
        assert!((p.difference_unstable - 0.25).abs() < 1e-15);
        assert!(p.difference_stable.abs() < 1e-15);
        assert_eq!(p.per_repo["x/x"].n, 2);
        assert!(
            s.headline
                .starts_with("b resolves 25.0 points more than a (75.0% vs 50.0%, n = 4)"),
            "{}",
            s.headline
        );
        assert_eq!(s.repeats[0].n_unstable, 1);
    }

    #[test]
    fn bad_requests_are_named() {
        let a = run("a", &[("i", &[true])]);
        let b = run("a", &[("i", &[true])]);
        assert!(analyze(&[a.clone(), b], None, &Options::default())
            .unwrap_err()
            .0
            .contains("two runs are named `a`"));
        let c = run("c", &[("i", &[true])]);
        let opts = Options {
            pairs: vec![("a".into(), "z".into())],
            ..Options::default()
        };
        assert!(analyze(&[a, c], None, &opts).unwrap_err().0.contains("`z`"));
    }

    #[test]
    fn p_values_read_well() {
        assert_eq!(p_text(0.7265625), "p = 0.727");
        assert_eq!(p_text(0.0081), "p = 0.00810");
        assert_eq!(p_text(0.0004), "p < 0.001");
        assert_eq!(p_text(1.0), "p = 1");
        assert_eq!(p_text(0.05), "p = 0.0500");
    }
}
