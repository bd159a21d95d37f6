//! Inputs of the study: rewards (from `swe-eval reward`, JSON Lines or CSV) and executed
//! outcomes (a `swe-eval run` output folder, an official SWE-bench run summary, a JSON Lines of
//! `{instance_id, sample, resolved}`, report.json files, or mini-swe-agent's
//! `per_run_results.json`), joined on (instance_id, sample).
//!
//! Samples: with one file, a row's own `sample` field is used (0 when absent). With several
//! files on one side, the k-th file (0-based) is sample k, as when each of k runs was written to
//! its own file; `per_run_results.json` maps its runs to samples 0, 1, ... in file order.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{repo_from_instance_id, Observation, Verdict};
use crate::dataset::{json_values, kind_of, Dataset, InputProblem, LoadError, Loaded, Location};

/// One row of a rewards file.
#[derive(Debug, Clone, PartialEq)]
pub struct RewardRow {
    pub instance_id: String,
    pub sample: Option<u32>,
    pub similarity: f64,
    pub reward: f64,
    pub format: Option<String>,
}

/// One executed outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct OutcomeRow {
    pub instance_id: String,
    pub sample: Option<u32>,
    pub verdict: Verdict,
}

fn problem(path: &Path, line: Option<usize>, field: Option<&str>, message: String) -> InputProblem {
    InputProblem {
        location: Location {
            path: path.to_path_buf(),
            line,
            field: field.map(str::to_string),
        },
        message,
    }
}

fn read(path: &Path) -> Result<Vec<u8>, LoadError> {
    std::fs::read(path).map_err(|source| LoadError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// A number field that may also be written as a string (CSV, or loose JSON).
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn sample_of(obj: &Map<String, Value>) -> Result<Option<u32>, String> {
    match obj.get("sample") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match number(v) {
            Some(x) if x >= 0.0 && x.fract() == 0.0 && x <= u32::MAX as f64 => Ok(Some(x as u32)),
            _ => Err(format!("expected a sample number, found {v}")),
        },
    }
}

/// Reads a rewards file: JSON Lines (or a JSON list) of `swe-eval reward` rows, or its CSV form
/// (by the `.csv` extension). `similarity` falls back to `reward` (floored at 0) and `reward` to
/// `similarity` when a file carries only one of them.
pub fn load_rewards(path: &Path) -> Result<Loaded<RewardRow>, LoadError> {
    let bytes = read(path)?;
    let values = if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
    {
        csv_values(path, &bytes)?
    } else {
        let v = json_values(path, &bytes)?;
        Loaded {
            items: v.items,
            problems: v.problems,
        }
    };
    let mut out = Loaded {
        items: Vec::new(),
        problems: values.problems,
    };
    for (value, line) in values.items {
        match reward_row(&value) {
            Ok(row) => out.items.push(row),
            Err((field, msg)) => out.problems.push(problem(path, line, field, msg)),
        }
    }
    Ok(out)
}

fn reward_row(value: &Value) -> Result<RewardRow, (Option<&'static str>, String)> {
    let obj = value.as_object().ok_or_else(|| {
        (
            None,
            format!("expected an object, found {}", kind_of(value)),
        )
    })?;
    let instance_id = match obj.get("instance_id") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return Err((Some("instance_id"), "missing or not a string".into())),
    };
    let sample = sample_of(obj).map_err(|m| (Some("sample"), m))?;
    let field = |name: &'static str| -> Result<Option<f64>, (Option<&'static str>, String)> {
        match obj.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(v) => match number(v) {
                Some(x) if x.is_finite() => Ok(Some(x)),
                _ => Err((Some(name), format!("expected a finite number, found {v}"))),
            },
        }
    };
    let (similarity, reward) = match (field("similarity")?, field("reward")?) {
        (Some(s), Some(r)) => (s, r),
        (Some(s), None) => (s, s),
        (None, Some(r)) => (r.max(0.0), r),
        (None, None) => return Err((Some("reward"), "neither `similarity` nor `reward`".into())),
    };
    let format = match obj.get("format") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    };
    Ok(RewardRow {
        instance_id,
        sample,
        similarity,
        reward,
        format,
    })
}

/// CSV rows as JSON objects of strings, with 1-based line numbers (the header is line 1).
fn csv_values(path: &Path, bytes: &[u8]) -> Result<Loaded<(Value, Option<usize>)>, LoadError> {
    let mut rdr = csv::ReaderBuilder::new().flexible(true).from_reader(bytes);
    let headers = rdr
        .headers()
        .map_err(|e| {
            LoadError::Invalid(problem(path, Some(1), None, format!("bad CSV header: {e}")))
        })?
        .clone();
    let mut out = Loaded::default();
    for (i, rec) in rdr.records().enumerate() {
        let line = rec
            .as_ref()
            .ok()
            .and_then(|r| r.position())
            .map_or(i + 2, |p| p.line() as usize);
        match rec {
            Ok(rec) => {
                let obj: Map<String, Value> = headers
                    .iter()
                    .zip(rec.iter())
                    .map(|(h, v)| (h.to_string(), Value::String(v.to_string())))
                    .collect();
                out.items.push((Value::Object(obj), Some(line)));
            }
            Err(e) => {
                out.problems
                    .push(problem(path, Some(line), None, format!("bad CSV row: {e}")))
            }
        }
    }
    Ok(out)
}

/// The categories that mean "no test verdict" in a per-prediction outcome row.
fn no_verdict_category(category: &str) -> bool {
    let c = category.to_ascii_lowercase();
    [
        "error",
        "empty",
        "timeout",
        "timed_out",
        "incomplete",
        "skipped",
        "not_run",
    ]
    .iter()
    .any(|k| c.contains(k))
}

fn outcome_row(value: &Value) -> Result<OutcomeRow, (Option<&'static str>, String)> {
    let obj = value.as_object().ok_or_else(|| {
        (
            None,
            format!("expected an object, found {}", kind_of(value)),
        )
    })?;
    let instance_id = match obj.get("instance_id") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return Err((Some("instance_id"), "missing or not a string".into())),
    };
    let sample = sample_of(obj).map_err(|m| (Some("sample"), m))?;
    let category = obj
        .get("category")
        .and_then(Value::as_str)
        .map(str::to_string);
    let resolved = match obj.get("resolved") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(v) => match number(v) {
            Some(x) if x == 0.0 || x == 1.0 => Some(x == 1.0),
            _ => {
                if let Value::String(s) = v {
                    match s.to_ascii_lowercase().as_str() {
                        "true" => Some(true),
                        "false" => Some(false),
                        "" => None,
                        _ => {
                            return Err((
                                Some("resolved"),
                                format!("expected a boolean, found {v}"),
                            ))
                        }
                    }
                } else {
                    return Err((Some("resolved"), format!("expected a boolean, found {v}")));
                }
            }
        },
    };
    let verdict = match (resolved, category) {
        (Some(true), _) => Verdict::Resolved,
        (_, Some(c)) if no_verdict_category(&c) => Verdict::NoVerdict(c),
        (Some(false), _) => Verdict::Unresolved,
        (None, Some(c)) if c.eq_ignore_ascii_case("resolved") => Verdict::Resolved,
        (None, Some(c)) if c.eq_ignore_ascii_case("unresolved") => Verdict::Unresolved,
        (None, c) => {
            if c.is_none() && !obj.contains_key("resolved") {
                return Err((Some("resolved"), "neither `resolved` nor `category`".into()));
            }
            Verdict::NoVerdict(c.unwrap_or_else(|| "no_verdict".into()))
        }
    };
    Ok(OutcomeRow {
        instance_id,
        sample,
        verdict,
    })
}

/// Outcomes from an official run summary (schema 2: `resolved_ids`, `completed_ids`,
/// `error_ids`, `empty_patch_ids`, `submitted_ids`). Every submitted prediction gets a row.
fn summary_outcomes(obj: &Map<String, Value>) -> Vec<OutcomeRow> {
    let ids = |k: &str| -> Vec<String> {
        obj.get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let set = |k: &str| ids(k).into_iter().collect::<HashSet<_>>();
    let (resolved, empty, error) = (
        set("resolved_ids"),
        set("empty_patch_ids"),
        set("error_ids"),
    );
    let mut completed = set("completed_ids");
    completed.extend(ids("unresolved_ids"));
    let mut universe = ids("submitted_ids");
    let mut seen: HashSet<String> = universe.iter().cloned().collect();
    // Ids listed only elsewhere (a summary without `submitted_ids`) still count.
    for k in [
        "resolved_ids",
        "unresolved_ids",
        "completed_ids",
        "error_ids",
        "empty_patch_ids",
    ] {
        for id in ids(k) {
            if seen.insert(id.clone()) {
                universe.push(id);
            }
        }
    }
    universe
        .into_iter()
        .map(|id| {
            let verdict = if resolved.contains(&id) {
                Verdict::Resolved
            } else if empty.contains(&id) {
                Verdict::NoVerdict("empty_patch".into())
            } else if error.contains(&id) {
                Verdict::NoVerdict("error".into())
            } else if completed.contains(&id) {
                Verdict::Unresolved
            } else {
                Verdict::NoVerdict("incomplete".into())
            };
            OutcomeRow {
                instance_id: id,
                sample: None,
                verdict,
            }
        })
        .collect()
}

/// Is this mini-swe-agent's `per_run_results.json`: run name -> instance id -> 0/1?
fn is_per_run(obj: &Map<String, Value>) -> bool {
    !obj.is_empty()
        && obj.values().all(|run| {
            run.as_object().is_some_and(|m| {
                m.values()
                    .all(|v| v.is_boolean() || v.as_f64().is_some_and(|x| x == 0.0 || x == 1.0))
            })
        })
}

/// Outcomes from one file or folder. See the module comment for the formats.
pub fn load_outcomes(path: &Path) -> Result<Loaded<OutcomeRow>, LoadError> {
    if path.is_dir() {
        return load_outcome_dir(path);
    }
    let bytes = read(path)?;
    if let Ok(Value::Object(obj)) = serde_json::from_slice::<Value>(&bytes) {
        if obj.contains_key("resolved_ids") || obj.contains_key("submitted_ids") {
            return Ok(Loaded {
                items: summary_outcomes(&obj),
                problems: Vec::new(),
            });
        }
        if is_per_run(&obj) {
            // A task missing from one run but present in another had no valid patch in that
            // run; the source counts it unresolved, so it becomes a row without a verdict.
            let mut all: Vec<&String> = Vec::new();
            let mut seen = HashSet::new();
            for run in obj.values().filter_map(Value::as_object) {
                all.extend(run.keys().filter(|id| seen.insert(*id)));
            }
            let mut items = Vec::new();
            for (k, run) in obj.values().filter_map(Value::as_object).enumerate() {
                for id in &all {
                    let verdict = match run.get(*id) {
                        None => Verdict::NoVerdict("missing_from_run".into()),
                        Some(v) if v.as_bool() == Some(true) || v.as_f64() == Some(1.0) => {
                            Verdict::Resolved
                        }
                        Some(_) => Verdict::Unresolved,
                    };
                    items.push(OutcomeRow {
                        instance_id: (*id).clone(),
                        sample: Some(k as u32),
                        verdict,
                    });
                }
            }
            return Ok(Loaded {
                items,
                problems: Vec::new(),
            });
        }
    }
    let values = json_values(path, &bytes)?;
    let mut out = Loaded {
        items: Vec::new(),
        problems: values.problems,
    };
    for (value, line) in values.items {
        match outcome_row(&value) {
            Ok(row) => out.items.push(row),
            Err((field, msg)) => out.problems.push(problem(path, line, field, msg)),
        }
    }
    Ok(out)
}

/// A `swe-eval run` output folder: its per-prediction JSON Lines (any top-level `*.jsonl` whose
/// rows carry `instance_id` and `resolved` or `category`); failing that, the official layout's
/// `logs/run_evaluation/<run>/<model>/<id>/report.json`; failing that, a run summary `*.json`.
fn load_outcome_dir(dir: &Path) -> Result<Loaded<OutcomeRow>, LoadError> {
    let listing = |d: &Path, ext: &str| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == ext))
            .collect();
        v.sort();
        v
    };
    for file in listing(dir, "jsonl") {
        let loaded = load_outcomes(&file)?;
        if !loaded.items.is_empty() {
            return Ok(loaded);
        }
    }
    let mut reports = Vec::new();
    find_reports(&dir.join("logs").join("run_evaluation"), 0, &mut reports);
    reports.sort();
    if !reports.is_empty() {
        let mut out = Loaded::default();
        for file in reports {
            let bytes = read(&file)?;
            match serde_json::from_slice::<Value>(&bytes) {
                Ok(Value::Object(obj)) => {
                    for (id, rep) in obj {
                        let resolved = rep.get("resolved").and_then(Value::as_bool);
                        out.items.push(OutcomeRow {
                            instance_id: id,
                            sample: None,
                            verdict: match resolved {
                                Some(true) => Verdict::Resolved,
                                Some(false) => Verdict::Unresolved,
                                None => Verdict::NoVerdict("error".into()),
                            },
                        });
                    }
                }
                _ => out.problems.push(problem(
                    &file,
                    None,
                    None,
                    "not a report.json object".into(),
                )),
            }
        }
        return Ok(out);
    }
    for file in listing(dir, "json") {
        let bytes = read(&file)?;
        if let Ok(Value::Object(obj)) = serde_json::from_slice::<Value>(&bytes) {
            if obj.contains_key("resolved_ids") {
                return Ok(Loaded {
                    items: summary_outcomes(&obj),
                    problems: Vec::new(),
                });
            }
        }
    }
    Err(LoadError::Invalid(problem(
        dir,
        None,
        None,
        "no outcomes found: no per-prediction *.jsonl, no logs/run_evaluation/**/report.json, \
         no run summary *.json"
            .into(),
    )))
}

fn find_reports(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    // <run>/<model>/<id>/report.json: three levels below run_evaluation.
    if depth > 3 {
        return;
    }
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            find_reports(&p, depth + 1, out);
        } else if depth == 3 && p.file_name().is_some_and(|n| n == "report.json") {
            out.push(p);
        }
    }
}

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
    pub observations: Vec<Observation>,
    /// (instance_id, sample) of rewards without an outcome, in input order.
    pub unmatched_rewards: Vec<(String, u32)>,
    /// (instance_id, sample) of outcomes without a reward, in input order.
    pub unmatched_outcomes: Vec<(String, u32)>,
}

/// Joins rewards and outcomes on (instance_id, sample), both already numbered by
/// [`assign_samples`]. Repository and difficulty come from the dataset when it has the
/// instance, else the repository from the instance id.
pub fn join(
    rewards: Vec<(String, u32, RewardRow)>,
    outcomes: Vec<(String, u32, OutcomeRow)>,
    dataset: Option<&Dataset>,
) -> Joined {
    let mut by_key: HashMap<(String, u32), (usize, Verdict)> = HashMap::new();
    let mut outcome_keys = Vec::with_capacity(outcomes.len());
    for (i, (id, s, row)) in outcomes.into_iter().enumerate() {
        outcome_keys.push((id.clone(), s));
        by_key.insert((id, s), (i, row.verdict));
    }
    let mut used = vec![false; outcome_keys.len()];
    let mut joined = Joined::default();
    for (id, s, row) in rewards {
        let Some((i, verdict)) = by_key.remove(&(id.clone(), s)) else {
            joined.unmatched_rewards.push((id, s));
            continue;
        };
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
            verdict,
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

/// A row that can be numbered by [`assign_samples`].
pub trait Keyed {
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
