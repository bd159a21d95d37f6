//! Rewards and outcomes numbered by sample and joined on (model, instance_id, sample), one
//! study per model.
//!
//! A row's model is its `model_name_or_path` (or `model`), or the model folder of a logs tree,
//! compared as a folder name (`org/m` is `org__m`). A source that names no model (an official
//! run summary, mini-swe-agent's `per_run_results.json`, rows without the field) is taken to be
//! of the one model its own side or else the other side names; with several models named and
//! none to say whose such rows are, the join is refused and `--model` chooses.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::fields::problem;
use super::outcomes::{load_outcomes, OutcomeRow};
use super::rewards::{load_rewards, RewardRow};
use crate::dataset::{Dataset, InputProblem, LoadError, Loaded};
use crate::predictions::model_dir_name;
use crate::study::{repo_from_instance_id, Observation, Outcome};

/// A row that can be numbered by [`assign_samples`]: its model (when named), instance id and
/// sample slot.
pub trait Keyed {
    /// The row's model as written, if any.
    fn model(&self) -> Option<&str>;
    /// The row's instance id and its sample slot, to be filled when absent.
    fn key_mut(&mut self) -> (&str, &mut Option<u32>);
}

impl Keyed for RewardRow {
    fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }
    fn key_mut(&mut self) -> (&str, &mut Option<u32>) {
        (&self.instance_id, &mut self.sample)
    }
}

impl Keyed for OutcomeRow {
    fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }
    fn key_mut(&mut self) -> (&str, &mut Option<u32>) {
        (&self.instance_id, &mut self.sample)
    }
}

/// A model name as the join compares it: as a folder name; `None` stays unnamed.
pub fn model_key(model: Option<&str>) -> Option<String> {
    model.filter(|m| !m.is_empty()).map(model_dir_name)
}

/// Gives each row its sample number (with one file, the row's own `sample`, 0 when absent;
/// with several, the k-th file is sample k) and drops a repeated (model, instance, sample),
/// reporting it. `files` holds each file's rows, in file order.
pub fn assign_samples<T: Keyed>(
    files: Vec<(PathBuf, Vec<T>)>,
    problems: &mut Vec<InputProblem>,
) -> Vec<(String, u32, T)> {
    let several = files.len() > 1;
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (k, (path, rows)) in files.into_iter().enumerate() {
        for mut row in rows {
            let model = model_key(row.model());
            let (id, sample) = row.key_mut();
            let s = if several {
                k as u32
            } else {
                sample.unwrap_or(0)
            };
            *sample = Some(s);
            let id = id.to_string();
            if !seen.insert((model.clone(), id.clone(), s)) {
                let of = model.map(|m| format!(" of model {m}")).unwrap_or_default();
                problems.push(problem(
                    &path,
                    None,
                    Some("instance_id"),
                    format!("{id} sample {s}{of} appears more than once; the first is kept"),
                ));
                continue;
            }
            out.push((id, s, row));
        }
    }
    out
}

/// One model's rewards and outcomes joined.
#[derive(Debug, Clone, Default)]
pub struct Joined {
    /// The model (as a folder name); `None` when neither side names one.
    pub model: Option<String>,
    /// The joined predictions, in reward-file order.
    pub observations: Vec<Observation>,
    /// (instance_id, sample) of rewards without an outcome, in input order.
    pub unmatched_rewards: Vec<(String, u32)>,
    /// (instance_id, sample) of outcomes without a reward, in input order.
    pub unmatched_outcomes: Vec<(String, u32)>,
    /// Unmatched rewards whose (instance, sample) has an outcome of another model: the two
    /// sides are different runs.
    pub model_mismatches: usize,
    /// The first such pair of names: (rewards' model, outcomes' model).
    pub models_differ: Option<(String, String)>,
}

/// Why rewards and outcomes cannot be joined as asked (bad usage: `--model` says how).
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    /// Rows that name no model, while several models are named: whose are they?
    #[error(
        "the {side} rows that name no model cannot be given to one model: the {named_by} name \
         {} ({}); pass --model to choose one (rows without a model are then taken as its)",
        models.len(), models.join(", ")
    )]
    Unattributed {
        /// The side whose rows name no model (`rewards` or `outcomes`).
        side: &'static str,
        /// The side naming several models.
        named_by: &'static str,
        /// The models named.
        models: Vec<String>,
    },
    /// `--model` names a model no row names.
    #[error("--model {model}: no reward or outcome row names it; the inputs name {}", models.join(", "))]
    UnknownModel {
        /// The model asked for.
        model: String,
        /// The models the inputs name.
        models: Vec<String>,
    },
}

impl crate::failure::Classify for JoinError {
    fn kind(&self) -> crate::failure::ErrorKind {
        crate::failure::ErrorKind::Usage
    }
}

/// The models named on one side, in first-seen order.
fn named<T: Keyed>(rows: &[(String, u32, T)]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in rows.iter().filter_map(|(_, _, r)| model_key(r.model())) {
        if !out.contains(&m) {
            out.push(m);
        }
    }
    out
}

/// Whose rows that name no model are, on a side naming `own` models, the other naming
/// `other`: the side's one model, else the other side's one model, else nobody's when neither
/// side names any; otherwise the join cannot say.
fn unnamed_owner(
    own: &[String],
    other: &[String],
    side: &'static str,
    other_side: &'static str,
) -> Result<Option<String>, JoinError> {
    match (own, other) {
        ([one], _) | ([], [one]) => Ok(Some(one.clone())),
        ([], []) => Ok(None),
        ([], many) => Err(JoinError::Unattributed {
            side,
            named_by: other_side,
            models: many.to_vec(),
        }),
        (many, _) => Err(JoinError::Unattributed {
            side,
            named_by: side,
            models: many.to_vec(),
        }),
    }
}

/// Joins rewards and outcomes, both already numbered by [`assign_samples`], on (model,
/// instance_id, sample): one [`Joined`] per model, in the order the models first appear
/// (rewards first). `only` keeps one model (rows naming no model count as its). Repository and
/// difficulty come from the dataset when it has the instance, else the repository from the
/// instance id.
pub fn join(
    rewards: Vec<(String, u32, RewardRow)>,
    outcomes: Vec<(String, u32, OutcomeRow)>,
    dataset: Option<&Dataset>,
    only: Option<&str>,
) -> Result<Vec<Joined>, JoinError> {
    let (rm, om) = (named(&rewards), named(&outcomes));
    let has_unnamed = |v: &[(String, u32, RewardRow)]| v.iter().any(|r| r.2.model.is_none());
    let has_unnamed_o = |v: &[(String, u32, OutcomeRow)]| v.iter().any(|r| r.2.model.is_none());
    let (r_unnamed, o_unnamed) = match only {
        Some(m) => {
            let m = model_dir_name(m);
            let mut all: Vec<String> = rm.iter().chain(&om).cloned().collect();
            all.sort();
            all.dedup();
            if !all.is_empty() && !all.contains(&m) {
                return Err(JoinError::UnknownModel {
                    model: m,
                    models: all,
                });
            }
            (Some(m.clone()), Some(m))
        }
        None => (
            if has_unnamed(&rewards) {
                unnamed_owner(&rm, &om, "rewards", "outcomes")?
            } else {
                None
            },
            if has_unnamed_o(&outcomes) {
                unnamed_owner(&om, &rm, "outcomes", "rewards")?
            } else {
                None
            },
        ),
    };
    let keep = |m: &Option<String>| only.is_none_or(|o| m.as_deref() == Some(&model_dir_name(o)));
    let owner = |m: Option<&str>, unnamed: &Option<String>| model_key(m).or(unnamed.clone());

    // Outcomes by (model, instance, sample), and the models in first-seen order.
    let mut models: Vec<Option<String>> = Vec::new();
    let note = |m: &Option<String>, models: &mut Vec<Option<String>>| {
        if !models.contains(m) {
            models.push(m.clone());
        }
    };
    // Each model key's name as first written, for messages (`org/m`, not the key `org__m`).
    let mut written: HashMap<String, String> = HashMap::new();
    let mut rewards_of: Vec<(Option<String>, String, u32, RewardRow)> = Vec::new();
    for (id, s, row) in rewards {
        let m = owner(row.model.as_deref(), &r_unnamed);
        if let (Some(k), Some(w)) = (&m, row.model.as_deref()) {
            written.entry(k.clone()).or_insert_with(|| w.to_string());
        }
        if keep(&m) {
            note(&m, &mut models);
            rewards_of.push((m, id, s, row));
        }
    }
    let mut outcome_keys: Vec<(Option<String>, String, u32)> = Vec::new();
    let mut by_key: HashMap<(Option<String>, String, u32), (usize, Outcome)> = HashMap::new();
    for (id, s, row) in outcomes {
        let m = owner(row.model.as_deref(), &o_unnamed);
        if let (Some(k), Some(w)) = (&m, row.model.as_deref()) {
            written.entry(k.clone()).or_insert_with(|| w.to_string());
        }
        if keep(&m) {
            note(&m, &mut models);
            by_key.insert(
                (m.clone(), id.clone(), s),
                (outcome_keys.len(), row.outcome),
            );
            outcome_keys.push((m, id, s));
        }
    }
    // (instance, sample) -> the models with an outcome for it, to name different runs.
    let mut outcome_models: HashMap<(&str, u32), Vec<&Option<String>>> = HashMap::new();
    for (m, id, s) in &outcome_keys {
        outcome_models.entry((id, *s)).or_default().push(m);
    }
    let mut joined: Vec<Joined> = models
        .iter()
        .map(|m| Joined {
            model: m.clone(),
            ..Default::default()
        })
        .collect();
    let slot = |m: &Option<String>| models.iter().position(|x| x == m).unwrap_or(0);
    let mut used = vec![false; outcome_keys.len()];
    for (m, id, s, row) in rewards_of {
        let j = &mut joined[slot(&m)];
        let Some(&(i, ref verdict)) = by_key.get(&(m.clone(), id.clone(), s)) else {
            if let Some(other) = outcome_models
                .get(&(id.as_str(), s))
                .and_then(|v| v.iter().find(|o| ***o != m))
            {
                j.model_mismatches += 1;
                let name = |k: &Option<String>| {
                    k.as_ref()
                        .map(|k| written.get(k).unwrap_or(k).clone())
                        .unwrap_or_default()
                };
                j.models_differ
                    .get_or_insert_with(|| (name(&m), name(other)));
            }
            j.unmatched_rewards.push((id, s));
            continue;
        };
        used[i] = true;
        let inst = dataset.and_then(|d| d.get(&id));
        j.observations.push(Observation {
            repo: inst.map_or_else(|| repo_from_instance_id(&id), |x| x.repo.clone()),
            difficulty: inst.and_then(|x| x.difficulty.clone()),
            instance_id: id,
            sample: s,
            similarity: row.similarity,
            reward: row.reward,
            format: row.format,
            outcome: verdict.clone(),
        });
    }
    for ((m, id, s), u) in outcome_keys.into_iter().zip(used) {
        if !u {
            joined[slot(&m)].unmatched_outcomes.push((id, s));
        }
    }
    Ok(joined)
}

fn load_files<T: Keyed>(
    paths: &[PathBuf],
    load: fn(&Path) -> Result<Loaded<T>, LoadError>,
    problems: &mut Vec<InputProblem>,
) -> Result<Vec<(String, u32, T)>, LoadError> {
    let mut files = Vec::new();
    for p in paths {
        let l = load(p)?;
        problems.extend(l.problems);
        files.push((p.clone(), l.items));
    }
    Ok(assign_samples(files, problems))
}

/// Loads and numbers several rewards files (see [`assign_samples`]).
pub fn load_rewards_files(
    paths: &[PathBuf],
    problems: &mut Vec<InputProblem>,
) -> Result<Vec<(String, u32, RewardRow)>, LoadError> {
    load_files(paths, load_rewards, problems)
}

/// Loads and numbers several outcome sources (see [`assign_samples`]).
pub fn load_outcome_files(
    paths: &[PathBuf],
    problems: &mut Vec<InputProblem>,
) -> Result<Vec<(String, u32, OutcomeRow)>, LoadError> {
    load_files(paths, load_outcomes, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reward(id: &str, model: Option<&str>, sample: u32, score: f64) -> RewardRow {
        RewardRow {
            instance_id: id.into(),
            sample: Some(sample),
            similarity: score,
            reward: score,
            format: None,
            model: model.map(str::to_string),
        }
    }

    fn outcome(id: &str, model: Option<&str>, sample: u32, resolved: bool) -> OutcomeRow {
        OutcomeRow {
            instance_id: id.into(),
            sample: Some(sample),
            outcome: Outcome::of_resolved(resolved),
            model: model.map(str::to_string),
        }
    }

    fn numbered<T: Keyed>(rows: Vec<T>, problems: &mut Vec<InputProblem>) -> Vec<(String, u32, T)> {
        assign_samples(vec![(PathBuf::from("f.jsonl"), rows)], problems)
    }

    /// Two models with the same instances and samples (a `serve` export that saw two model
    /// names): nothing is dropped as a duplicate, each reward joins its own model's outcome.
    #[test]
    fn two_models_of_the_same_keys_are_joined_apart() {
        let mut problems = Vec::new();
        let r = numbered(
            vec![
                reward("a__a-1", Some("org/m1"), 0, 0.9),
                reward("a__a-1", Some("m2"), 0, 0.1),
            ],
            &mut problems,
        );
        let o = numbered(
            vec![
                outcome("a__a-1", Some("m2"), 0, false),
                outcome("a__a-1", Some("org__m1"), 0, true),
            ],
            &mut problems,
        );
        assert!(problems.is_empty(), "{problems:?}");
        let j = join(r, o, None, None).unwrap();
        let got: Vec<(Option<&str>, usize, bool)> = j
            .iter()
            .map(|j| {
                (
                    j.model.as_deref(),
                    j.observations.len(),
                    j.observations[0].outcome.resolved(),
                )
            })
            .collect();
        assert_eq!(got, [(Some("org__m1"), 1, true), (Some("m2"), 1, false)]);
        assert!(j.iter().all(|j| j.unmatched_rewards.is_empty()));
    }

    /// The same key twice for one model is still a repeat.
    #[test]
    fn a_repeated_key_of_one_model_is_reported_with_its_model() {
        let mut problems = Vec::new();
        let r = numbered(
            vec![
                reward("a__a-1", Some("m"), 0, 0.9),
                reward("a__a-1", Some("m"), 0, 0.1),
            ],
            &mut problems,
        );
        assert_eq!(r.len(), 1);
        assert!(
            problems[0]
                .to_string()
                .contains("a__a-1 sample 0 of model m appears more than once"),
            "{}",
            problems[0]
        );
    }

    /// Outcomes that name no model (an official summary) are the one model of the rewards;
    /// with two models named, the join is refused and `--model` says whose they are.
    #[test]
    fn unnamed_rows_join_one_model_and_are_refused_between_two() {
        let mut problems = Vec::new();
        let o = || numbered(vec![outcome("a__a-1", None, 0, true)], &mut Vec::new());
        let r1 = numbered(vec![reward("a__a-1", Some("m1"), 0, 0.5)], &mut problems);
        let j = join(r1, o(), None, None).unwrap();
        assert_eq!((j.len(), j[0].observations.len()), (1, 1));
        assert_eq!(j[0].model.as_deref(), Some("m1"));

        let two = || {
            numbered(
                vec![
                    reward("a__a-1", Some("m1"), 0, 0.5),
                    reward("a__a-1", Some("m2"), 0, 0.7),
                ],
                &mut Vec::new(),
            )
        };
        let e = join(two(), o(), None, None).unwrap_err();
        assert!(matches!(e, JoinError::Unattributed { .. }));
        assert_eq!(
            e.to_string(),
            "the outcomes rows that name no model cannot be given to one model: the rewards name \
             2 (m1, m2); pass --model to choose one (rows without a model are then taken as its)"
        );
        let j = join(two(), o(), None, Some("m2")).unwrap();
        assert_eq!(j.len(), 1);
        assert_eq!(j[0].observations[0].similarity, 0.7);
        let e = join(two(), o(), None, Some("m3")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--model m3: no reward or outcome row names it; the inputs name m1, m2"
        );
        // Neither side names a model: joined on (instance, sample) as one study.
        let r = numbered(vec![reward("a__a-1", None, 0, 0.5)], &mut problems);
        let j = join(r, o(), None, None).unwrap();
        assert_eq!((j.len(), j[0].model.as_deref()), (1, None));
        assert_eq!(j[0].observations.len(), 1);
    }

    /// Rewards of one model and outcomes of another share keys: they are different runs, and
    /// nothing joins.
    #[test]
    fn different_models_on_the_two_sides_are_named_as_different_runs() {
        let mut problems = Vec::new();
        let r = numbered(vec![reward("a__a-1", Some("gold"), 0, 1.0)], &mut problems);
        let o = numbered(
            vec![outcome("a__a-1", Some("demo"), 0, true)],
            &mut problems,
        );
        let j = join(r, o, None, None).unwrap();
        assert!(j.iter().all(|j| j.observations.is_empty()));
        assert_eq!(j[0].model_mismatches, 1);
        assert_eq!(
            j[0].models_differ,
            Some(("gold".to_string(), "demo".to_string()))
        );
    }
}
