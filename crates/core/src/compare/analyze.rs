//! The comparison computed ([`analyze`], pure): per run the resolve rate and pass@k, per pair
//! of runs the paired difference, flips and similarity change, overall, per repository and per
//! difficulty, and the spread of groups of repeated runs.

use std::collections::{BTreeMap, BTreeSet};

use crate::dataset::Dataset;
use crate::study::{repo_from_instance_id, Outcome};

use super::headline::{overall_headline, pair_headline};
use super::inputs::Run;
use super::stats;
use super::summary::{
    CompareError, Diff, FlakyStats, Options, PairStats, PassAtK, RepeatStats, RunStats,
    SimilarityChange, Summary, FORMAT_VERSION, METHODS,
};

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

/// Checks the options against the runs: names known, unique, pairs of two distinct runs.
fn resolve_names(runs: &[Run], opts: &Options) -> Result<(), CompareError> {
    let mut seen = BTreeSet::new();
    for r in runs {
        if !seen.insert(r.name.as_str()) {
            return Err(CompareError::Request(format!(
                "two runs are named `{}`; name them apart with NAME=PATH",
                r.name
            )));
        }
    }
    let known = |n: &str, what: &str| -> Result<(), CompareError> {
        if seen.contains(n) {
            Ok(())
        } else {
            Err(CompareError::Request(format!(
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
            return Err(CompareError::Request(format!(
                "--repeat {g}: a group needs at least two runs"
            )));
        }
        for m in members {
            known(m, &format!("--repeat {g}"))?;
            if let Some(other) = in_group.insert(m.as_str(), g.as_str()) {
                return Err(CompareError::Request(format!(
                    "run `{m}` is in two --repeat groups ({other} and {g})"
                )));
            }
        }
    }
    for (a, b) in &opts.pairs {
        known(a, "--pair")?;
        known(b, "--pair")?;
        if a == b {
            return Err(CompareError::Request(format!(
                "--pair {a},{b}: a run with itself"
            )));
        }
    }
    if runs.len() < 2 {
        return Err(CompareError::Request(
            "compare needs at least two runs".into(),
        ));
    }
    if !crate::bounds::BOOTSTRAP.contains(opts.bootstrap) {
        return Err(CompareError::Request(format!(
            "--bootstrap {}: {}",
            opts.bootstrap,
            crate::bounds::BOOTSTRAP.describe()
        )));
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
    let (flaky, kept);
    let runs = match &opts.flaky {
        Some(map) => {
            let compared: BTreeSet<&String> = runs.iter().flat_map(|r| r.outcomes.keys()).collect();
            let instances: Vec<String> = compared
                .iter()
                .filter(|id| map.is_flaky(id))
                .map(|id| (*id).clone())
                .collect();
            flaky = Some(FlakyStats {
                map: map.source.clone(),
                n_compared: compared.len(),
                n_validated: compared.iter().filter(|id| map.validated(id)).count(),
                n_flaky: instances.len(),
                instances,
                excluded: opts.exclude_flaky,
            });
            if opts.exclude_flaky {
                kept = runs
                    .iter()
                    .map(|r| {
                        let mut r = r.clone();
                        r.outcomes.retain(|id, _| !map.is_flaky(id));
                        if let Some(s) = &mut r.similarity {
                            s.retain(|(id, _), _| !map.is_flaky(id));
                        }
                        r
                    })
                    .collect::<Vec<_>>();
                &kept[..]
            } else {
                runs
            }
        }
        None => {
            flaky = None;
            runs
        }
    };
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
    let mut pair_stats: Vec<PairStats> = Vec::with_capacity(pairs.len());
    for (a, b) in &pairs {
        let (ra, rb) = (by_name[a.as_str()], by_name[b.as_str()]);
        if !ra.outcomes.keys().any(|id| rb.outcomes.contains_key(id)) {
            let first = |r: &Run| {
                r.outcomes
                    .keys()
                    .take(3)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(CompareError::NoOverlap(format!(
                "runs `{a}` and `{b}` share no instance, so nothing can be paired: `{a}` has {} \
                 ({}{}), `{b}` has {} ({}{}); compare runs of the same instances",
                ra.outcomes.len(),
                first(ra),
                if ra.outcomes.len() > 3 { ", ..." } else { "" },
                rb.outcomes.len(),
                first(rb),
                if rb.outcomes.len() > 3 { ", ..." } else { "" },
            )));
        }
        let mut p = pair(ra, rb, dataset, &unstable, opts);
        p.headline = pair_headline(&p, any_repeats);
        pair_stats.push(p);
    }
    let mut headline = overall_headline(&run_stats, &repeats, &pair_stats, !opts.pairs.is_empty());
    if let Some(f) = &flaky {
        headline.push_str(&format!(
            " {} of the {} compared instances are flaky by {} ({} validated); {}.",
            f.n_flaky,
            f.n_compared,
            f.map.display(),
            f.n_validated,
            if f.excluded {
                "they are left out of every statistic"
            } else {
                "they are counted (--exclude-flaky leaves them out)"
            }
        ));
    }
    Ok(Summary {
        format_version: FORMAT_VERSION,
        headline,
        runs: run_stats,
        repeats,
        unstable: unstable.into_iter().collect(),
        flaky,
        pairs: pair_stats,
        settings: opts.clone(),
        methods: METHODS,
        dataset_used: dataset.is_some(),
    })
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
    let only = |x: &Run, y: &Run| -> Vec<String> {
        x.outcomes
            .keys()
            .filter(|id| !y.outcomes.contains_key(*id))
            .take(5)
            .cloned()
            .collect()
    };
    PairStats {
        a: a.name.clone(),
        b: b.name.clone(),
        headline: String::new(),
        n_only_a: a.outcomes.len() - rows.len(),
        n_only_b: b.outcomes.len() - rows.len(),
        only_a: only(a, b),
        only_b: only(b, a),
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
            model: None,
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
    fn a_flaky_map_counts_the_flaky_instances_compared_and_can_leave_them_out() {
        let a = run(
            "a",
            &[
                ("x__x-1", &[false]),
                ("x__x-2", &[true]),
                ("y__y-1", &[false]),
            ],
        );
        let b = run(
            "b",
            &[
                ("x__x-1", &[true]),
                ("x__x-2", &[true]),
                ("y__y-1", &[true]),
            ],
        );
        let text = r#"{"format_version":1,"instance_id":"x__x-1","flaky":true}
{"format_version":1,"instance_id":"x__x-2","flaky":false}
{"format_version":1,"instance_id":"z__z-9","flaky":true}
"#;
        let map = crate::report::parse_flaky_map(std::path::Path::new("f.jsonl"), text).unwrap();
        let opts = |exclude| Options {
            bootstrap: 0,
            flaky: Some(map.clone()),
            exclude_flaky: exclude,
            ..Options::default()
        };
        let kept = analyze(&[a.clone(), b.clone()], None, &opts(false)).unwrap();
        let f = kept.flaky.as_ref().unwrap();
        assert_eq!(
            (f.n_compared, f.n_validated, f.n_flaky, f.excluded),
            (3, 2, 1, false)
        );
        assert_eq!(f.instances, ["x__x-1"]);
        assert_eq!(kept.pairs[0].to_resolved, ["x__x-1", "y__y-1"]);
        assert!(
            kept.headline
                .contains("1 of the 3 compared instances are flaky by f.jsonl")
                && kept.headline.contains("--exclude-flaky"),
            "{}",
            kept.headline
        );
        // summary.json names the map by its file and keeps its rows out.
        let settings = serde_json::to_value(&kept.settings).unwrap();
        assert_eq!(settings["flaky_map"], "f.jsonl");
        assert!(settings.get("flaky").is_none(), "{settings}");
        let left = analyze(&[a, b], None, &opts(true)).unwrap();
        assert!(left.flaky.as_ref().unwrap().excluded);
        assert_eq!(left.pairs[0].to_resolved, ["y__y-1"]);
        assert_eq!(left.runs[0].n_instances, 2);
        assert!(
            left.headline.contains("left out of every statistic"),
            "{}",
            left.headline
        );
        let none = analyze(
            &[run("a", &[("i", &[true])]), run("b", &[("i", &[true])])],
            None,
            &Options::default(),
        )
        .unwrap();
        assert!(none.flaky.is_none());
        assert!(serde_json::to_value(&none.settings).unwrap()["flaky_map"].is_null());
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
    fn runs_of_other_instances_are_an_error_and_a_partial_overlap_is_stated() {
        let a = run("a", &[("x__x-1", &[true]), ("x__x-2", &[false])]);
        let b = run("b", &[("y__y-1", &[true]), ("y__y-2", &[true])]);
        let err = analyze(&[a.clone(), b], None, &Options::default()).unwrap_err();
        assert!(matches!(err, CompareError::NoOverlap(_)), "{err}");
        assert!(err.to_string().contains("share no instance"), "{err}");

        // Two instances paired, one left out of each run.
        let c = run(
            "c",
            &[
                ("x__x-1", &[false]),
                ("x__x-2", &[true]),
                ("z__z-1", &[true]),
            ],
        );
        let a3 = run(
            "a",
            &[
                ("x__x-1", &[true]),
                ("x__x-2", &[false]),
                ("w__w-1", &[true]),
            ],
        );
        let s = analyze(&[a3.clone(), c.clone()], None, &Options::default()).unwrap();
        let p = &s.pairs[0];
        assert_eq!((p.overall.n, p.n_only_a, p.n_only_b), (2, 1, 1));
        assert_eq!(
            (p.only_a.as_slice(), p.only_b.as_slice()),
            (&["w__w-1".to_string()][..], &["z__z-1".to_string()][..])
        );
        assert!(
            s.headline
                .contains("paired n = 2; left out: 1 of a's 3 and 1 of c's 3 instances)"),
            "{}",
            s.headline
        );
        let problems = s.coverage_problems();
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].contains("1 instance only in a (w__w-1)"),
            "{}",
            problems[0]
        );
        assert!(problems[0].contains("--intersection"), "{}", problems[0]);
        // Asked for the intersection: stated, not a problem.
        let opts = Options {
            intersection: true,
            ..Options::default()
        };
        let s = analyze(&[a3, c], None, &opts).unwrap();
        assert!(s.coverage_problems().is_empty());
        assert_eq!(s.left_out().len(), 1);
        assert!(s.headline.contains("left out"), "{}", s.headline);
    }

    #[test]
    fn bad_requests_are_named() {
        let a = run("a", &[("i", &[true])]);
        let b = run("a", &[("i", &[true])]);
        assert!(analyze(&[a.clone(), b], None, &Options::default())
            .unwrap_err()
            .to_string()
            .contains("two runs are named `a`"));
        let c = run("c", &[("i", &[true])]);
        let opts = Options {
            pairs: vec![("a".into(), "z".into())],
            ..Options::default()
        };
        assert!(analyze(&[a, c], None, &opts)
            .unwrap_err()
            .to_string()
            .contains("`z`"));
    }
}
