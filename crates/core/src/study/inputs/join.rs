//! Rewards and outcomes numbered by sample and joined on (instance_id, sample).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::fields::problem;
use super::outcomes::{load_outcomes, OutcomeRow};
use super::rewards::{load_rewards, RewardRow};
use crate::dataset::{Dataset, InputProblem, LoadError, Loaded};
use crate::study::{repo_from_instance_id, Observation, Outcome};

/// Gives each row its sample number (see the module comment) and drops repeated keys,
/// reporting them. `rows` holds each file's rows, in file order.
pub fn assign_samples<T>(
    files: Vec<(PathBuf, Vec<T>)>,
    key: impl Fn(&mut T) -> (&str, &mut Option<u32>),
    problems: &mut Vec<InputProblem>,
) -> Vec<(String, u32, T)> {
    let several = files.len() > 1;
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (k, (path, rows)) in files.into_iter().enumerate() {
        for mut row in rows {
            let (id, sample) = key(&mut row);
            let s = if several {
                k as u32
            } else {
                sample.unwrap_or(0)
            };
            *sample = Some(s);
            let id = id.to_string();
            if !seen.insert((id.clone(), s)) {
                problems.push(problem(
                    &path,
                    None,
                    Some("instance_id"),
                    format!("{id} sample {s} appears more than once; the first is kept"),
                ));
                continue;
            }
            out.push((id, s, row));
        }
    }
    out
}

/// Rewards and outcomes joined.
#[derive(Debug, Clone, Default)]
pub struct Joined {
    /// The joined predictions, in reward-file order.
    pub observations: Vec<Observation>,
    /// (instance_id, sample) of rewards without an outcome, in input order.
    pub unmatched_rewards: Vec<(String, u32)>,
    /// (instance_id, sample) of outcomes without a reward, in input order.
    pub unmatched_outcomes: Vec<(String, u32)>,
    /// Keys found on both sides whose model names differ (not joined; they are among the
    /// unmatched of both sides).
    pub model_mismatches: usize,
    /// The first such pair of names: (rewards' model, outcomes' model).
    pub models_differ: Option<(String, String)>,
}

/// True when two model names differ (compared as folder names: `org/m` is `org__m`).
fn models_differ(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.replace('/', "__") != b.replace('/', "__"),
        _ => false,
    }
}

/// Joins rewards and outcomes on (instance_id, sample), both already numbered by
/// `assign_samples`. Repository and difficulty come from the dataset when it has the
/// instance, else the repository from the instance id.
pub fn join(
    rewards: Vec<(String, u32, RewardRow)>,
    outcomes: Vec<(String, u32, OutcomeRow)>,
    dataset: Option<&Dataset>,
) -> Joined {
    let mut by_key: HashMap<(String, u32), (usize, Outcome, Option<String>)> = HashMap::new();
    let mut outcome_keys = Vec::with_capacity(outcomes.len());
    for (i, (id, s, row)) in outcomes.into_iter().enumerate() {
        outcome_keys.push((id.clone(), s));
        by_key.insert((id, s), (i, row.outcome, row.model));
    }
    let mut used = vec![false; outcome_keys.len()];
    let mut joined = Joined::default();
    for (id, s, row) in rewards {
        let Some((i, verdict, model)) = by_key.remove(&(id.clone(), s)) else {
            joined.unmatched_rewards.push((id, s));
            continue;
        };
        // Both sides name a model and they differ: two different runs, not one prediction.
        if models_differ(row.model.as_deref(), model.as_deref()) {
            joined.model_mismatches += 1;
            joined.models_differ.get_or_insert_with(|| {
                (
                    row.model.clone().unwrap_or_default(),
                    model.clone().unwrap_or_default(),
                )
            });
            joined.unmatched_rewards.push((id, s));
            continue;
        }
        used[i] = true;
        let inst = dataset.and_then(|d| d.get(&id));
        joined.observations.push(Observation {
            repo: inst.map_or_else(|| repo_from_instance_id(&id), |x| x.repo.clone()),
            difficulty: inst.and_then(|x| x.difficulty.clone()),
            instance_id: id,
            sample: s,
            similarity: row.similarity,
            reward: row.reward,
            format: row.format,
            outcome: verdict,
        });
    }
    joined.unmatched_outcomes = outcome_keys
        .into_iter()
        .zip(used)
        .filter(|(_, u)| !u)
        .map(|(k, _)| k)
        .collect();
    joined
}

/// A row that can be numbered by `assign_samples`.
pub trait Keyed {
    /// The row's instance id and its sample slot, to be filled when absent.
    fn key_mut(&mut self) -> (&str, &mut Option<u32>);
}

impl Keyed for RewardRow {
    fn key_mut(&mut self) -> (&str, &mut Option<u32>) {
        (&self.instance_id, &mut self.sample)
    }
}

impl Keyed for OutcomeRow {
    fn key_mut(&mut self) -> (&str, &mut Option<u32>) {
        (&self.instance_id, &mut self.sample)
    }
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
    Ok(assign_samples(files, T::key_mut, problems))
}

/// Loads and numbers several rewards files (see the module comment on samples).
pub fn load_rewards_files(
    paths: &[PathBuf],
    problems: &mut Vec<InputProblem>,
) -> Result<Vec<(String, u32, RewardRow)>, LoadError> {
    load_files(paths, load_rewards, problems)
}

/// Loads and numbers several outcome sources (see the module comment on samples).
pub fn load_outcome_files(
    paths: &[PathBuf],
    problems: &mut Vec<InputProblem>,
) -> Result<Vec<(String, u32, OutcomeRow)>, LoadError> {
    load_files(paths, load_outcomes, problems)
}
