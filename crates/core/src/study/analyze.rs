//! The study computed ([`analyze`], pure): per score the agreement with execution and its
//! intervals, per repository and difficulty, the blind spots, and the headline.

use std::collections::BTreeMap;

use rayon::prelude::*;

use super::bestofn;
use super::inputs::Joined;
use super::outcome::{Observation, Outcome};
use super::stats;
use super::summary::{
    BlindSpot, BlindSpots, Options, Reading, Score, ScoreStudy, Settings, Stats, Summary,
    READING_MIN_EACH, READING_MIN_N, ROC_POINTS, UNMATCHED_SHOWN,
};

/// Computes the statistics of `scores` against `resolved`; `ci` is the bootstrap interval,
/// computed by the caller for both scores from the same resamples.
fn stats_of(scores: &[f64], resolved: &[bool], ci: Option<[f64; 2]>, opts: &Options) -> Stats {
    let split = |want: bool| -> Vec<f64> {
        scores
            .iter()
            .zip(resolved)
            .filter(|(_, &r)| r == want)
            .map(|(&s, _)| s)
            .collect()
    };
    let (pos, neg) = (split(true), split(false));
    let y: Vec<f64> = resolved.iter().map(|&r| r as u8 as f64).collect();
    Stats {
        n: scores.len(),
        n_resolved: pos.len(),
        resolve_rate: (!scores.is_empty()).then(|| pos.len() as f64 / scores.len() as f64),
        auroc: stats::auroc(scores, resolved),
        auroc_ci95: ci,
        point_biserial: stats::point_biserial(scores, resolved),
        spearman: stats::spearman(scores, resolved),
        kendall_tau_b: stats::kendall_tau_b(scores, &y),
        mean_resolved: stats::mean(&pos),
        mean_unresolved: stats::mean(&neg),
        median_resolved: stats::median(&pos),
        median_unresolved: stats::median(&neg),
        precision_recall: opts
            .thresholds
            .iter()
            .map(|&t| stats::precision_recall(scores, resolved, t))
            .collect(),
        calibration: stats::calibration(scores, resolved),
        small_sample: Stats::too_few(scores.len(), pos.len()),
        tied_pairs: stats::tied_pairs(scores, resolved),
    }
}

/// Both scores' statistics over the observations picked by `idx` (intervals are added later).
fn group_stats(obs: &[Observation], idx: &[usize], opts: &Options) -> [Stats; 2] {
    let resolved: Vec<bool> = idx.iter().map(|&i| obs[i].outcome.resolved()).collect();
    let one = |s: Score| {
        let col: Vec<f64> = idx.iter().map(|&i| s.of(&obs[i])).collect();
        stats_of(&col, &resolved, None, opts)
    };
    let (a, b) = rayon::join(|| one(Score::Similarity), || one(Score::Reward));
    [a, b]
}

/// Bootstrap intervals of both scores, overall (`[k][0][0]`), per repository (`[k][1][r]`)
/// and per difficulty (`[k][2][d]`) for score k, from one set of resamples stratified by
/// (repository, difficulty).
fn all_intervals(
    obs: &[Observation],
    repo_of: &[u32],
    n_repos: usize,
    diff_of: &[u32],
    n_diffs: usize,
    opts: &Options,
) -> Vec<Vec<Vec<Option<[f64; 2]>>>> {
    let resolved: Vec<bool> = obs.iter().map(|o| o.outcome.resolved()).collect();
    let zeros = vec![0u32; obs.len()];
    let strata: Vec<u32> = repo_of
        .iter()
        .zip(diff_of)
        .map(|(&r, &d)| r * n_diffs as u32 + d)
        .collect();
    let cols: Vec<Vec<f64>> = Score::BOTH
        .iter()
        .map(|s| obs.iter().map(|o| s.of(o)).collect())
        .collect();
    // A grouping with a single group is the overall level again: its pass is skipped and
    // the overall interval reused (e.g. every difficulty `unknown` without --dataset).
    let levels: [(&[u32], usize); 3] = [(&zeros, 1), (repo_of, n_repos), (diff_of, n_diffs)];
    let needed: Vec<usize> = (0..3).filter(|&l| l == 0 || levels[l].1 > 1).collect();
    let mut series = Vec::new();
    for col in &cols {
        for &l in &needed {
            series.push(stats::Series {
                scores: col,
                groups: levels[l].0,
                n_groups: levels[l].1,
            });
        }
    }
    let mut flat =
        stats::bootstrap_auroc_ci_grouped(&series, &resolved, &strata, opts.resamples(), opts.seed)
            .into_iter();
    (0..2)
        .map(|_| {
            let got: Vec<_> = flat.by_ref().take(needed.len()).collect();
            (0..3)
                .map(|l| match needed.iter().position(|&x| x == l) {
                    Some(k) => got[k].clone(),
                    None => vec![got[0][0]; levels[l].1],
                })
                .collect()
        })
        .collect()
}

fn thin(roc: Vec<stats::RocPoint>) -> Vec<stats::RocPoint> {
    if roc.len() <= ROC_POINTS {
        return roc;
    }
    let step = roc.len() as f64 / (ROC_POINTS - 1) as f64;
    let mut out: Vec<_> = (0..ROC_POINTS - 1)
        .map(|k| roc[(k as f64 * step) as usize])
        .collect();
    out.push(roc[roc.len() - 1]);
    out
}

/// Groups observation indices by a key (BTreeMap: reports list groups in name order).
fn groups_by(
    obs: &[Observation],
    key: impl Fn(&Observation) -> String,
) -> BTreeMap<String, Vec<usize>> {
    let mut m: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, o) in obs.iter().enumerate() {
        m.entry(key(o)).or_default().push(i);
    }
    m
}

/// Runs the whole study on joined observations.
pub fn analyze(joined: &Joined, opts: &Options) -> Summary {
    let obs = &joined.observations;
    let by_repo = groups_by(obs, |o| o.repo.clone());
    let by_diff = groups_by(obs, |o| {
        o.difficulty
            .clone()
            .unwrap_or_else(|| "unknown".to_string())
    });
    let ids = |groups: &BTreeMap<String, Vec<usize>>| {
        let mut of = vec![0u32; obs.len()];
        for (g, idx) in groups.values().enumerate() {
            for &i in idx {
                of[i] = g as u32;
            }
        }
        of
    };
    let (repo_of, diff_of) = (ids(&by_repo), ids(&by_diff));
    let all_idx: Vec<usize> = (0..obs.len()).collect();
    let overall = BTreeMap::from([(String::new(), all_idx)]);
    // (level, group number, name, members); level 0 is everything, 1 repositories,
    // 2 difficulties.
    let groups: Vec<(usize, usize, &String, &Vec<usize>)> = [&overall, &by_repo, &by_diff]
        .iter()
        .enumerate()
        .flat_map(|(level, m)| {
            m.iter()
                .enumerate()
                .map(move |(g, (k, v))| (level, g, k, v))
        })
        .collect();
    // The bootstrap and the other statistics are independent: run them side by side, and the
    // groups in parallel.
    let (ci, done) = rayon::join(
        || all_intervals(obs, &repo_of, by_repo.len(), &diff_of, by_diff.len(), opts),
        || {
            groups
                .par_iter()
                .map(|&(_, _, _, idx)| group_stats(obs, idx, opts))
                .collect::<Vec<[Stats; 2]>>()
        },
    );
    let mut per = [
        BTreeMap::new(),
        BTreeMap::new(),
        BTreeMap::new(),
        BTreeMap::new(),
        BTreeMap::new(),
        BTreeMap::new(),
    ];
    for ((level, g, name, _), mut pair) in groups.into_iter().zip(done) {
        for (k, st) in pair.iter_mut().enumerate() {
            // No interval where there is no reading: a bootstrap of a handful of predictions,
            // or of scores that are all tied, gives a narrow interval that means nothing.
            st.auroc_ci95 = match st.reading() {
                Reading::Read(_) => ci[k][level][g],
                _ => None,
            };
        }
        let [s, r] = pair;
        per[2 * level].insert(name.clone(), s);
        per[2 * level + 1].insert(name.clone(), r);
    }
    let [mut all_s, mut all_r, repo_s, repo_r, diff_s, diff_r] = per;
    let take = |m: &mut BTreeMap<String, Stats>| m.pop_first().map(|(_, v)| v);
    let (sim_all, rew_all) = match (take(&mut all_s), take(&mut all_r)) {
        (Some(a), Some(b)) => (a, b),
        // No observations at all: the statistics of nothing.
        _ => {
            let [a, b] = group_stats(obs, &[], opts);
            (a, b)
        }
    };
    let resolved: Vec<bool> = obs.iter().map(|o| o.outcome.resolved()).collect();
    let study = |score: Score, overall: Stats, per_repo, per_difficulty| {
        let col: Vec<f64> = obs.iter().map(|o| score.of(o)).collect();
        let samples: Vec<bestofn::Sample<'_>> = obs
            .iter()
            .map(|o| bestofn::Sample {
                instance_id: &o.instance_id,
                sample: o.sample,
                score: score.of(o),
                resolved: o.outcome.resolved(),
            })
            .collect();
        ScoreStudy {
            overall,
            per_repo,
            per_difficulty,
            best_of_n: bestofn::best_of_n(&samples),
            roc: thin(stats::roc_curve(&col, &resolved)),
        }
    };
    let similarity = study(Score::Similarity, sim_all, repo_s, diff_s);
    let reward = study(Score::Reward, rew_all, repo_r, diff_r);

    let mut no_verdict_by_reason = BTreeMap::new();
    for o in obs {
        if let Outcome::NoVerdict(why) = &o.outcome {
            *no_verdict_by_reason.entry(why.clone()).or_insert(0) += 1;
        }
    }
    let n_resolved = resolved.iter().filter(|&&r| r).count();
    let n_no_verdict = no_verdict_by_reason.values().sum();
    let kept: Vec<&Observation> = obs.iter().filter(|o| !is_harness_error(o)).collect();
    let kept_resolved: Vec<bool> = kept.iter().map(|o| o.outcome.resolved()).collect();
    let kept_auroc = |score: Score| {
        let col: Vec<f64> = kept.iter().map(|o| score.of(o)).collect();
        stats::auroc(&col, &kept_resolved)
    };
    let instances = groups_by(obs, |o| o.instance_id.clone());
    let mut summary = Summary {
        headline: String::new(),
        model: joined.model.clone(),
        n: obs.len(),
        n_resolved,
        n_unresolved: obs.len() - n_resolved - n_no_verdict,
        n_no_verdict,
        no_verdict_by_reason: no_verdict_by_reason.clone(),
        resolve_rate: (!obs.is_empty()).then(|| n_resolved as f64 / obs.len() as f64),
        n_unmatched: joined.unmatched_rewards.len() + joined.unmatched_outcomes.len(),
        n_unmatched_rewards: joined.unmatched_rewards.len(),
        n_unmatched_outcomes: joined.unmatched_outcomes.len(),
        n_model_mismatch: joined.model_mismatches,
        models_differ: joined.models_differ.clone().map(|(a, b)| [a, b]),
        no_verdict_counted: no_verdict_sentence(&no_verdict_by_reason),
        n_harness_errors: obs.len() - kept.len(),
        n_without_harness_errors: kept.len(),
        similarity_auroc_without_harness_errors: kept_auroc(Score::Similarity),
        reward_auroc_without_harness_errors: kept_auroc(Score::Reward),
        unmatched_rewards: keys(&joined.unmatched_rewards),
        unmatched_outcomes: keys(&joined.unmatched_outcomes),
        n_instances: instances.len(),
        max_samples: instances.values().map(Vec::len).max().unwrap_or(0),
        similarity,
        reward,
        blind_spots: blind_spots(obs, opts.blind_spots),
        settings: Settings {
            bootstrap: opts.resamples(),
            seed: opts.seed,
            thresholds: opts.thresholds.clone(),
            auroc: "Mann-Whitney U / (n_resolved * n_unresolved); ties count one half",
            bootstrap_method: "percentile interval; each (repository, difficulty) cell is \
                               resampled with replacement to its own size (a stratified \
                               bootstrap, so per-group intervals come from the same resamples); \
                               a resample lacking a class is dropped for that group",
            calibration_bins: "ten equal-width bins over [0, 1] as scikit-learn's \
                               calibration_curve(strategy=\"uniform\"): [0, 0.1], (0.1, 0.2], ...; \
                               scores below 0 (malformed patch, reward -1) in a bin of their own",
            best_of_n_rule: "instances with at least n samples, first n by sample number; \
                             max_score breaks ties by the lowest sample number, \
                             max_score_ties_random by a uniform pick among the tied",
            no_verdict_rule: "predictions without a test verdict (error, empty patch) count as \
                              unresolved; the AUROCs without harness errors leave out those \
                              whose reason is an error (empty patches stay, unresolved)",
            small_sample_rule: SMALL_SAMPLE_RULE,
            ties_rule: "equal scores of a resolved and an unresolved prediction count one half \
                        in the AUROC; `tied_pairs` is the share of such pairs, named in the \
                        headline from 10%; when every pair is tied the score ranks nothing and \
                        no AUROC is read (0.500 by ties alone, no interval)",
        },
    };
    summary.headline = headline(&summary);
    summary
}

/// A prediction whose missing verdict is the harness's failure, not the patch's (an error
/// of the run; an empty patch is the model's and stays).
fn is_harness_error(o: &Observation) -> bool {
    matches!(&o.outcome, Outcome::NoVerdict(why) if why.to_ascii_lowercase().contains("error"))
}

/// "Predictions without a verdict count as unresolved: 33 error, 54 empty_patch." or that
/// there were none.
fn no_verdict_sentence(by_reason: &BTreeMap<String, usize>) -> String {
    if by_reason.is_empty() {
        return "Every joined prediction has a test verdict.".to_string();
    }
    let parts: Vec<String> = by_reason
        .iter()
        .map(|(why, n)| format!("{n} {why}"))
        .collect();
    format!(
        "Predictions without a test verdict count as unresolved: {}.",
        parts.join(", ")
    )
}

pub(super) fn keys(v: &[(String, u32)]) -> Vec<String> {
    v.iter()
        .take(UNMATCHED_SHOWN)
        .map(|(id, s)| format!("{id}#{s}"))
        .collect()
}

/// The resolved predictions least similar to gold and the unresolved most similar.
pub(super) fn blind_spots(obs: &[Observation], k: usize) -> BlindSpots {
    let spot = |o: &Observation| BlindSpot {
        instance_id: o.instance_id.clone(),
        sample: o.sample,
        repo: o.repo.clone(),
        similarity: o.similarity,
        reward: o.reward,
        verdict: o.outcome.label().to_string(),
    };
    let mut pos: Vec<&Observation> = obs.iter().filter(|o| o.outcome.resolved()).collect();
    // Unresolved with a test verdict: an error or an empty patch says nothing about resemblance.
    let mut neg: Vec<&Observation> = obs
        .iter()
        .filter(|o| o.outcome == Outcome::Unresolved)
        .collect();
    let key = |o: &&Observation| (o.instance_id.clone(), o.sample);
    pos.sort_by(|a, b| {
        a.similarity
            .total_cmp(&b.similarity)
            .then_with(|| key(a).cmp(&key(b)))
    });
    neg.sort_by(|a, b| {
        b.similarity
            .total_cmp(&a.similarity)
            .then_with(|| key(a).cmp(&key(b)))
    });
    BlindSpots {
        resolved_least_similar: pos.into_iter().take(k).map(spot).collect(),
        unresolved_most_similar: neg.into_iter().take(k).map(spot).collect(),
    }
}

/// How the study decides that a sample is too small, as summary.json's settings say it.
const SMALL_SAMPLE_RULE: &str = "an AUROC is read (in words, with a bootstrap interval) from at \
     least 20 joined predictions with at least 5 resolved and 5 unresolved; below that, overall \
     or in a repository or difficulty, it is given without words or interval and marked \
     `small_sample`";

/// A bootstrap interval as the headline writes it (`95% CI 0.712-0.790`); `None` without one.
pub fn interval_words(ci: Option<[f64; 2]>) -> Option<String> {
    ci.map(|[lo, hi]| format!("95% CI {lo:.3}-{hi:.3}"))
}

/// " N% of resolved-unresolved pairs have equal similarity ..." from 10% of pairs tied.
fn ties_sentence(tied: Option<f64>) -> String {
    match tied {
        Some(t) if t >= 0.1 => format!(
            " {:.0}% of resolved-unresolved pairs have equal similarity, each counted one half.",
            t * 100.0
        ),
        _ => String::new(),
    }
}

/// How an AUROC reads, in words (the usual rough bands), as an adverb for the headline.
pub fn auroc_words(a: f64) -> &'static str {
    match a {
        a if a >= 0.9 => "strongly",
        a if a >= 0.8 => "well",
        a if a >= 0.7 => "fairly",
        a if a >= 0.6 => "weakly",
        a if a > 0.5 => "barely",
        _ => "not at all",
    }
}

pub(super) fn headline(s: &Summary) -> String {
    let o = &s.similarity.overall;
    let mut h = String::new();
    if s.n_unmatched > 0 {
        h.push_str(&format!(
            "Unmatched: {} rewards without an outcome and {} outcomes without a reward are left \
             out of every figure",
            s.n_unmatched_rewards, s.n_unmatched_outcomes
        ));
        match &s.models_differ {
            Some([r, o]) => h.push_str(&format!(
                " ({} pairs name different models: rewards of {r}, outcomes of {o}; these are \
                 different runs). ",
                s.n_model_mismatch
            )),
            None => h.push_str(". "),
        }
    }
    h.push_str(&match o.reading() {
        Reading::Read(a) => {
            let ci = interval_words(o.auroc_ci95)
                .map(|w| format!(" ({w})"))
                .unwrap_or_default();
            format!(
                "Resemblance tracks correctness {}: similarity AUROC {a:.3}{ci} over {} \
                 predictions: a resolved prediction is more similar to the human patch \
                 than an unresolved one {:.0}% of the time.{}",
                auroc_words(a),
                s.n,
                a * 100.0,
                ties_sentence(o.tied_pairs)
            )
        }
        Reading::SmallSample(a) => format!(
            "Too few predictions to tell whether resemblance tracks correctness: {} joined \
             ({} resolved, {} not); a reading needs at least {READING_MIN_N}, with at least \
             {READING_MIN_EACH} of each outcome. Similarity AUROC {a:.3} over {} \
             resolved-unresolved pair(s), without an interval.{}",
            s.n,
            o.n_resolved,
            o.n - o.n_resolved,
            o.n_resolved * (o.n - o.n_resolved),
            ties_sentence(o.tied_pairs)
        ),
        Reading::AllTied => format!(
            "No reading: every resolved and unresolved prediction of the {} joined has the same \
             similarity, so it ranks nothing (AUROC 0.500 by ties alone, no interval).",
            s.n
        ),
        Reading::NoPairs => format!(
            "No AUROC: the {} joined predictions do not include both resolved and unresolved ones.",
            s.n
        ),
    });
    if s.n_no_verdict > 0 {
        h.push(' ');
        h.push_str(&s.no_verdict_counted);
    }
    if s.n_harness_errors > 0 {
        h.push_str(&format!(
            " With the {} harness errors left out, similarity AUROC is {} over {} predictions.",
            s.n_harness_errors,
            s.similarity_auroc_without_harness_errors
                .map_or("n/a".to_string(), |a| format!("{a:.3}")),
            s.n_without_harness_errors
        ));
    }
    if let Some(b) = s.reward.best_of_n.last().filter(|b| b.n > 1) {
        h.push_str(&format!(
            " Picking the highest-reward of {} samples resolves {:.1}% of {} instances, against \
             {:.1}% for a random sample and {:.1}% for an oracle (pass@{}).",
            b.n,
            b.max_score * 100.0,
            b.instances,
            b.random * 100.0,
            b.oracle * 100.0,
            b.n
        ));
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::Outcome;

    fn joined(rows: &[(f64, bool)]) -> Joined {
        Joined {
            observations: rows
                .iter()
                .enumerate()
                .map(|(i, &(score, resolved))| Observation {
                    instance_id: format!("a__a-{i}"),
                    sample: 0,
                    repo: "a/a".into(),
                    difficulty: None,
                    similarity: score,
                    reward: score,
                    format: Some("ok".into()),
                    outcome: Outcome::of_resolved(resolved),
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn two_predictions_are_a_small_sample_without_words_or_interval() {
        let s = analyze(&joined(&[(0.9, true), (0.1, false)]), &Options::default());
        let o = &s.similarity.overall;
        assert_eq!(o.auroc, Some(1.0));
        assert!(o.small_sample);
        assert_eq!(o.auroc_ci95, None, "no interval on two predictions");
        assert!(
            s.headline.starts_with(
                "Too few predictions to tell whether resemblance tracks correctness: 2 joined \
                 (1 resolved, 1 not); a reading needs at least 20, with at least 5 of each \
                 outcome. Similarity AUROC 1.000 over 1 resolved-unresolved pair(s), without \
                 an interval."
            ),
            "{}",
            s.headline
        );
        assert!(!s.headline.contains("strongly"), "{}", s.headline);
        assert!(s.settings.small_sample_rule.contains("at least 20"));
        assert!(s
            .settings
            .small_sample_rule
            .contains("5 resolved and 5 unresolved"));
        assert_eq!((READING_MIN_N, READING_MIN_EACH), (20, 5));
    }

    #[test]
    fn enough_predictions_but_too_few_of_one_outcome_is_a_small_sample_too() {
        let mut rows: Vec<(f64, bool)> = (0..30).map(|i| (i as f64 / 30.0, false)).collect();
        rows.extend([(0.9, true), (0.95, true), (0.97, true), (0.99, true)]);
        let s = analyze(&joined(&rows), &Options::default());
        assert!(s.similarity.overall.small_sample, "4 resolved of 34");
        assert!(
            s.headline.starts_with("Too few predictions"),
            "{}",
            s.headline
        );
        rows.push((0.98, true));
        let s = analyze(&joined(&rows), &Options::default());
        assert!(
            !s.similarity.overall.small_sample,
            "5 of each and 35 in all"
        );
        assert!(s
            .headline
            .starts_with("Resemblance tracks correctness strongly"));
        assert!(s.headline.contains("(95% CI "), "{}", s.headline);
    }

    #[test]
    fn equal_scores_rank_nothing_and_ties_are_named() {
        let rows: Vec<(f64, bool)> = (0..40).map(|i| (0.0, i % 3 == 0)).collect();
        let s = analyze(&joined(&rows), &Options::default());
        let o = &s.similarity.overall;
        assert_eq!((o.auroc, o.tied_pairs), (Some(0.5), Some(1.0)));
        assert_eq!(o.auroc_ci95, None, "no 0.500-0.500 interval");
        assert_eq!(o.reading(), Reading::AllTied);
        assert!(
            s.headline.starts_with(
                "No reading: every resolved and unresolved prediction of the 40 joined has the \
                 same similarity, so it ranks nothing (AUROC 0.500 by ties alone, no interval)."
            ),
            "{}",
            s.headline
        );
        // Half the scores tied at 0 across outcomes: read, and the ties named.
        let rows: Vec<(f64, bool)> = (0..40)
            .map(|i| {
                let resolved = i % 2 == 0;
                let score = if i < 20 {
                    0.0
                } else if resolved {
                    0.9
                } else {
                    0.2
                };
                (score, resolved)
            })
            .collect();
        let s = analyze(&joined(&rows), &Options::default());
        let t = s.similarity.overall.tied_pairs.unwrap();
        assert!((t - 0.25).abs() < 1e-12, "{t}");
        assert!(
            s.headline.contains(
                " 25% of resolved-unresolved pairs have equal similarity, each counted one half."
            ),
            "{}",
            s.headline
        );
    }
}
