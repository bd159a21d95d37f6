//! The runs `swe-eval compare` reads. A run argument is `[NAME=]PATH[#RUN]`:
//!
//! - a `swe-eval run` output folder: its `<run_id>.predictions.jsonl` (`#RUN` picks the run id
//!   when the folder holds several), else its `logs/run_evaluation/<run_id>/<model>/` tree,
//!   else its run summaries `<model>.<run_id>.json`;
//! - an official `logs/run_evaluation/<run_id>/<model>/` folder (one `report.json` per instance
//!   folder; `<id>.sample<k>` folders are sample k; a folder without `report.json` is an error
//!   verdict, as the official harness writes none then), or its `<run_id>/` parent;
//! - an official run summary `<model>.<run_id>.json`, or a JSON Lines of
//!   `{instance_id, sample, resolved}` rows (the study's readers, `crate::study::load_outcomes`);
//! - mini-swe-agent's `per_run_results.json` (run name -> instance -> 0/1): `#RUN` picks one
//!   run; without it every run in the file becomes a run of its own, named by its key.
//!
//! A source that holds the outcomes of several models (a run folder with several model
//! folders or summaries, a per-prediction file whose rows name several models) is one run per
//! model, named `<name>.<model>`: no model's outcomes are dropped as duplicates of another's.
//!
//! A run's name is NAME when given, else the run key or run id, else the file's stem; names
//! must be unique.

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::dataset::{InputProblem, LoadError};
use crate::failure::UsageError;
use crate::study::{assign_samples, model_key, OutcomeRow};
use crate::study::{load_outcomes, load_rewards, Outcome};

/// One parsed run argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSpec {
    /// The argument as given.
    pub arg: String,
    /// `NAME=`: the run's name, when given.
    pub name: Option<String>,
    /// PATH: a run folder or an outcome file.
    pub path: PathBuf,
    /// `#RUN`: the run id or run key inside PATH.
    pub select: Option<String>,
}

/// Is `s` usable as a run name (and as part of a file name)?
fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 100
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+'))
}

impl RunSpec {
    /// Parses `[NAME=]PATH[#RUN]`. A prefix before `=` is a name only when it is a valid name
    /// (letters, digits, `.`, `_`, `-`, `+`) and the whole argument is not an existing path; the
    /// same for a `#` suffix.
    pub fn parse(arg: &str) -> Result<RunSpec, UsageError> {
        let mut rest = arg;
        let mut name = None;
        if !Path::new(arg).exists() {
            if let Some((n, p)) = arg.split_once('=') {
                if !valid_name(n) {
                    return Err(UsageError(format!(
                        "run `{arg}`: `{n}` is not a run name (use letters, digits, `.`, `_`, `-`, `+`)"
                    )));
                }
                name = Some(n.to_string());
                rest = p;
            }
        }
        let mut select = None;
        if !Path::new(rest).exists() {
            if let Some((p, s)) = rest.rsplit_once('#') {
                if s.is_empty() {
                    return Err(UsageError(format!("run `{arg}`: nothing after `#`")));
                }
                select = Some(s.to_string());
                rest = p;
            }
        }
        if rest.is_empty() {
            return Err(UsageError(format!("run `{arg}`: no path")));
        }
        Ok(RunSpec {
            arg: arg.to_string(),
            name,
            path: PathBuf::from(rest),
            select,
        })
    }
}

/// One run's outcomes, by instance, each instance's verdicts in sample order.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// The run's name (its argument's `NAME=`, else derived from the path).
    pub name: String,
    /// Where it came from (`PATH`, `PATH#RUN`).
    pub source: String,
    /// The model whose outcomes these are (as a folder name), when the source names one.
    pub model: Option<String>,
    /// Instance -> (sample, outcome), in sample order.
    pub outcomes: BTreeMap<String, Vec<(u32, Outcome)>>,
    /// Similarity per (instance, sample), from `--rewards`, when given.
    pub similarity: Option<HashMap<(String, u32), f64>>,
}

fn invalid(path: &Path, field: Option<&str>, message: String) -> LoadError {
    LoadError::Invalid(InputProblem::new(
        path.to_path_buf(),
        None,
        field.map(str::to_string),
        message,
    ))
}

fn sorted_children(dir: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let rd = std::fs::read_dir(dir).map_err(|source| LoadError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut v: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    v.sort();
    Ok(v)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Picks one of `options` (name, value) by `select`, or the only one; errors name the choices.
fn pick<T: Clone>(
    path: &Path,
    what: &str,
    options: &[(String, T)],
    select: Option<&str>,
) -> Result<(String, T), LoadError> {
    let names = || {
        options
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match select {
        Some(s) => options
            .iter()
            .find(|(n, _)| n == s)
            .cloned()
            .ok_or_else(|| {
                invalid(
                    path,
                    None,
                    format!("no {what} `{s}` here (found: {})", names()),
                )
            }),
        None if options.len() == 1 => Ok(options[0].clone()),
        None => Err(invalid(
            path,
            None,
            format!(
                "holds {} {what}s ({}); pick one as PATH#{}",
                options.len(),
                names(),
                what.replace(' ', "_").to_uppercase()
            ),
        )),
    }
}

/// The keys of mini-swe-agent's `per_run_results.json` (run -> instance -> 0/1), in file order;
/// `Ok(None)` when the file is not shaped as one (an object of objects), and an error naming
/// `<run>.<instance>` when it is but a verdict is not 0, 1, true or false.
fn per_run_keys(path: &Path, bytes: &[u8]) -> Result<Option<Vec<String>>, LoadError> {
    let Ok(Value::Object(obj)) = serde_json::from_slice::<Value>(bytes) else {
        return Ok(None);
    };
    if obj.is_empty() || !obj.values().all(Value::is_object) {
        return Ok(None);
    }
    for (run, m) in obj.iter().filter_map(|(k, v)| Some((k, v.as_object()?))) {
        for (id, v) in m {
            let ok = v.is_boolean() || v.as_f64().is_some_and(|x| x == 0.0 || x == 1.0);
            if !ok {
                return Err(invalid(
                    path,
                    Some(&format!("{run}.{id}")),
                    format!("expected 0, 1, true or false, found {v}"),
                ));
            }
        }
    }
    Ok(Some(obj.keys().cloned().collect()))
}

/// Reads an official `<model>/` folder: one `<id>/report.json` per instance (`<id>.sample<k>`
/// for sample k); an instance folder without one has no verdict (`error`).
pub fn read_model_dir(
    dir: &Path,
    problems: &mut Vec<InputProblem>,
) -> Result<Vec<OutcomeRow>, LoadError> {
    let mut rows = Vec::new();
    for child in sorted_children(dir)? {
        if !child.is_dir() {
            continue;
        }
        let folder = file_name(&child);
        let (id, sample) = crate::predictions::parse_sample_name(&folder);
        let report = child.join(crate::report::REPORT_FILE);
        let verdict = if report.is_file() {
            match crate::report::read_instance_report(&report) {
                Ok((rid, rep)) => {
                    if rid != id {
                        problems.push(InputProblem::new(
                            report.clone(),
                            None,
                            Some(rid.clone()),
                            format!("report of `{rid}` in the folder of `{id}`; kept as `{id}`"),
                        ));
                    }
                    Outcome::of_resolved(rep.resolved)
                }
                Err(e) => {
                    problems.push(InputProblem::new(
                        report.clone(),
                        None,
                        None,
                        format!("{e}; instance left out"),
                    ));
                    continue;
                }
            }
        } else {
            Outcome::NoVerdict("error".into())
        };
        rows.push(OutcomeRow {
            instance_id: id,
            sample,
            outcome: verdict,
            model: None,
        });
    }
    Ok(rows)
}

fn has_reports(dir: &Path) -> bool {
    sorted_children(dir)
        .unwrap_or_default()
        .iter()
        .any(|c| c.join(crate::report::REPORT_FILE).is_file())
}

/// `run_evaluation/<run_id>/`: the outcomes of every model folder in it, each row carrying its
/// folder's name as its model (several models become several runs, see [`split_by_model`]).
fn read_run_dir(
    run_dir: &Path,
    problems: &mut Vec<InputProblem>,
) -> Result<Vec<OutcomeRow>, LoadError> {
    let models: Vec<PathBuf> = sorted_children(run_dir)?
        .into_iter()
        .filter(|p| p.is_dir())
        .collect();
    if models.is_empty() {
        return Err(invalid(run_dir, None, "no model folder in this run".into()));
    }
    let mut rows = Vec::new();
    for dir in models {
        let model = file_name(&dir);
        for mut row in read_model_dir(&dir, problems)? {
            row.model = Some(model.clone());
            rows.push(row);
        }
    }
    Ok(rows)
}

/// One source's rows as runs: one run named `name` when the rows name at most one model; one
/// run per model otherwise, named `<name>.<model>` in the order the models first appear, so
/// that no model's outcomes are dropped as duplicates of another's.
fn split_by_model(name: &str, rows: Vec<OutcomeRow>) -> Vec<(String, Vec<OutcomeRow>)> {
    let mut groups: Vec<(Option<String>, Vec<OutcomeRow>)> = Vec::new();
    for row in rows {
        let key = model_key(row.model.as_deref());
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(row),
            None => groups.push((key, vec![row])),
        }
    }
    if groups.len() <= 1 {
        let rows = groups.pop().map(|(_, v)| v).unwrap_or_default();
        return vec![(name.to_string(), rows)];
    }
    groups
        .into_iter()
        .map(|(model, rows)| {
            let model = model.unwrap_or_else(|| "unnamed-model".to_string());
            (format!("{name}.{model}"), rows)
        })
        .collect()
}

/// The outcomes and default name of a folder run.
fn load_dir(
    dir: &Path,
    select: Option<&str>,
    problems: &mut Vec<InputProblem>,
) -> Result<(String, Vec<OutcomeRow>), LoadError> {
    let children = sorted_children(dir)?;
    let preds: Vec<(String, PathBuf)> = children
        .iter()
        .filter(|p| p.is_file())
        .filter_map(|p| {
            file_name(p)
                .strip_suffix(".predictions.jsonl")
                .map(|id| (id.to_string(), p.clone()))
        })
        .collect();
    if !preds.is_empty() {
        let (id, file) = pick(dir, "run id", &preds, select)?;
        let loaded = load_outcomes(&file)?;
        problems.extend(loaded.problems);
        return Ok((id, loaded.items));
    }
    let run_eval = dir.join("logs").join("run_evaluation");
    if run_eval.is_dir() {
        let runs: Vec<(String, PathBuf)> = sorted_children(&run_eval)?
            .into_iter()
            .filter(|p| p.is_dir())
            .map(|p| (file_name(&p), p))
            .collect();
        let (id, run_dir) = pick(&run_eval, "run id", &runs, select)?;
        return Ok((id, read_run_dir(&run_dir, problems)?));
    }
    let run_id_of = |model_dir: &Path| {
        model_dir
            .parent()
            .map(file_name)
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| file_name(model_dir))
    };
    if has_reports(dir) {
        return Ok((run_id_of(dir), read_model_dir(dir, problems)?));
    }
    let sub: Vec<PathBuf> = children.iter().filter(|p| p.is_dir()).cloned().collect();
    if !sub.is_empty() && sub.iter().any(|p| has_reports(p)) {
        return Ok((file_name(dir), read_run_dir(dir, problems)?));
    }
    let summaries: Vec<(String, (String, PathBuf))> = children
        .iter()
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "json"))
        .filter(|p| {
            std::fs::read(p)
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .is_some_and(|v| v.get("resolved_ids").is_some())
        })
        .map(|p| {
            let stem = file_name(p).trim_end_matches(".json").to_string();
            let (model, run) = stem.rsplit_once('.').unwrap_or(("", &stem));
            (run.to_string(), (model.to_string(), p.clone()))
        })
        .collect();
    if !summaries.is_empty() {
        // One run id may have a summary per model: every model of the chosen run id is read.
        let mut run_ids: Vec<(String, ())> = Vec::new();
        for (run, _) in &summaries {
            if !run_ids.iter().any(|(r, _)| r == run) {
                run_ids.push((run.clone(), ()));
            }
        }
        let (run, ()) = pick(dir, "run id", &run_ids, select)?;
        let mut rows = Vec::new();
        for (_, (model, file)) in summaries.iter().filter(|(r, _)| *r == run) {
            let loaded = load_outcomes(file)?;
            problems.extend(loaded.problems);
            for mut row in loaded.items {
                if row.model.is_none() && !model.is_empty() {
                    row.model = Some(model.clone());
                }
                rows.push(row);
            }
        }
        return Ok((run, rows));
    }
    Err(invalid(
        dir,
        None,
        "no run found: no <run_id>.predictions.jsonl, no logs/run_evaluation tree, no \
         <id>/report.json folders, no run summary <model>.<run_id>.json"
            .into(),
    ))
}

/// Numbers the rows (the row's own `sample`, 0 when absent), drops repeated (instance, sample)
/// keys with a problem, and groups them by instance.
fn to_run(
    name: String,
    source: String,
    path: &Path,
    rows: Vec<OutcomeRow>,
    problems: &mut Vec<InputProblem>,
) -> Run {
    let model = rows.first().and_then(|r| model_key(r.model.as_deref()));
    let numbered = assign_samples(vec![(path.to_path_buf(), rows)], problems);
    let mut outcomes: BTreeMap<String, Vec<(u32, Outcome)>> = BTreeMap::new();
    for (id, s, row) in numbered {
        outcomes.entry(id).or_default().push((s, row.outcome));
    }
    for v in outcomes.values_mut() {
        v.sort_by_key(|(s, _)| *s);
    }
    Run {
        name,
        source,
        model,
        outcomes,
        similarity: None,
    }
}

/// Loads the run(s) one argument names: several for a whole `per_run_results.json`, and one per
/// model where a folder or file holds the outcomes of several models.
pub fn load_runs(spec: &RunSpec, problems: &mut Vec<InputProblem>) -> Result<Vec<Run>, LoadError> {
    let path = &spec.path;
    let source = match &spec.select {
        Some(s) => format!("{}#{s}", path.display()),
        None => path.display().to_string(),
    };
    if path.is_dir() {
        let (id, rows) = load_dir(path, spec.select.as_deref(), problems)?;
        let name = spec.name.clone().unwrap_or(id);
        return Ok(split_runs(&name, &source, path, rows, problems));
    }
    let bytes = std::fs::read(path).map_err(|source| LoadError::Io {
        path: path.clone(),
        source,
    })?;
    if let Some(keys) = per_run_keys(path, &bytes)? {
        let loaded = load_outcomes(path)?;
        problems.extend(loaded.problems);
        let mut by_run: Vec<Vec<OutcomeRow>> = vec![Vec::new(); keys.len()];
        for mut row in loaded.items {
            let k = row.sample.unwrap_or(0) as usize;
            row.sample = None;
            if let Some(v) = by_run.get_mut(k) {
                v.push(row);
            }
        }
        let runs: Vec<(String, usize)> = keys.iter().cloned().zip(0..).collect();
        let chosen: Vec<(String, usize)> = match &spec.select {
            Some(_) => vec![pick(path, "run key", &runs, spec.select.as_deref())?],
            None => runs,
        };
        let several = chosen.len() > 1;
        return Ok(chosen
            .into_iter()
            .map(|(key, k)| {
                let name = match (&spec.name, several) {
                    (Some(n), false) => n.clone(),
                    (Some(n), true) => format!("{n}.{key}"),
                    (None, _) => key.clone(),
                };
                let src = format!("{}#{key}", path.display());
                to_run(name, src, path, std::mem::take(&mut by_run[k]), problems)
            })
            .collect());
    }
    if let Some(s) = &spec.select {
        return Err(invalid(
            path,
            None,
            format!("`#{s}` picks a run inside a folder or a per_run_results.json; this file holds one run"),
        ));
    }
    let loaded = load_outcomes(path)?;
    problems.extend(loaded.problems);
    let stem = file_name(path);
    let stem = stem
        .strip_suffix(".predictions.jsonl")
        .or_else(|| stem.strip_suffix(".jsonl"))
        .or_else(|| stem.strip_suffix(".json"))
        .unwrap_or(&stem)
        .to_string();
    let name = spec.name.clone().unwrap_or(stem);
    Ok(split_runs(&name, &source, path, loaded.items, problems))
}

/// One source's rows as runs, one per model (see [`split_by_model`]); a run of one model of
/// several has `@<model>` in its source.
fn split_runs(
    name: &str,
    source: &str,
    path: &Path,
    rows: Vec<OutcomeRow>,
    problems: &mut Vec<InputProblem>,
) -> Vec<Run> {
    let groups = split_by_model(name, rows);
    let several = groups.len() > 1;
    groups
        .into_iter()
        .map(|(run_name, rows)| {
            let src = match (several, rows.first().and_then(|r| r.model.as_deref())) {
                (true, Some(m)) => format!("{source}@{m}"),
                _ => source.to_string(),
            };
            to_run(run_name, src, path, rows, problems)
        })
        .collect()
}

/// Reads a rewards file (`swe-eval reward` output, JSON Lines or CSV) into similarity per
/// (instance, sample) for the run of `model`: rows naming another model are not this run's and
/// are left out; rows naming none are taken as the run's. A run that names no model takes a
/// file of one model, and refuses one of several (whose would they be?). Repeated keys are
/// dropped with a problem.
pub fn load_similarity(
    path: &Path,
    model: Option<&str>,
    problems: &mut Vec<InputProblem>,
) -> Result<HashMap<(String, u32), f64>, LoadRunsError> {
    let loaded = load_rewards(path)?;
    problems.extend(loaded.problems);
    let mut named: Vec<String> = loaded
        .items
        .iter()
        .filter_map(|r| model_key(r.model.as_deref()))
        .collect();
    named.sort();
    named.dedup();
    if model.is_none() && named.len() > 1 {
        return Err(LoadRunsError::Request(format!(
            "--rewards {}: the file holds the rewards of {} models ({}) and the run names no \
             model; give a file of one model's rewards",
            path.display(),
            named.len(),
            named.join(", ")
        )));
    }
    let rows: Vec<_> = loaded
        .items
        .into_iter()
        .filter(|r| {
            model.is_none()
                || model_key(r.model.as_deref()).is_none_or(|m| Some(m.as_str()) == model)
        })
        .collect();
    let numbered = assign_samples(vec![(path.to_path_buf(), rows)], problems);
    Ok(numbered
        .into_iter()
        .map(|(id, s, row)| ((id, s), row.similarity))
        .collect())
}

/// A failed load of the runs.
#[derive(Debug, thiserror::Error)]
pub enum LoadRunsError {
    /// The run's file or folder could not be read.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The request does not fit the runs: `--rewards` for an unknown run or given twice for
    /// one.
    #[error("{0}")]
    Request(String),
    /// A run has no outcomes: nothing to compare.
    #[error("{0}")]
    Empty(String),
}

impl crate::failure::Classify for LoadRunsError {
    fn kind(&self) -> crate::failure::ErrorKind {
        use crate::failure::ErrorKind;
        match self {
            LoadRunsError::Load(e) => e.kind(),
            LoadRunsError::Request(_) => ErrorKind::Usage,
            LoadRunsError::Empty(_) => ErrorKind::NothingComputable,
        }
    }
}

/// Loads every run argument, then attaches each `(run name, rewards file)`; reward rows
/// without an outcome in their run are problems (left out).
pub fn load_all(
    specs: &[RunSpec],
    rewards: &[(String, PathBuf)],
    problems: &mut Vec<InputProblem>,
) -> Result<Vec<Run>, LoadRunsError> {
    let mut runs = Vec::new();
    for spec in specs {
        for run in load_runs(spec, problems)? {
            if run.outcomes.is_empty() {
                return Err(LoadRunsError::Empty(format!(
                    "run `{}` ({}) has no outcomes",
                    run.name, run.source
                )));
            }
            runs.push(run);
        }
    }
    for (name, file) in rewards {
        let Some(run) = runs.iter_mut().find(|r| &r.name == name) else {
            return Err(LoadRunsError::Request(format!(
                "--rewards {name}={}: no run is named `{name}` ({})",
                file.display(),
                runs.iter()
                    .map(|r| r.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        if run.similarity.is_some() {
            return Err(LoadRunsError::Request(format!(
                "--rewards given twice for run `{name}`"
            )));
        }
        let sims = load_similarity(file, run.model.as_deref(), problems)?;
        let mut orphans: Vec<&(String, u32)> = sims
            .keys()
            .filter(|(id, s)| {
                !run.outcomes
                    .get(id)
                    .is_some_and(|v| v.iter().any(|(k, _)| k == s))
            })
            .collect();
        orphans.sort();
        if let Some((id, s)) = orphans.first() {
            problems.push(InputProblem::new(file.clone(), None, Some("instance_id".into()), format!(
                    "{} reward rows have no outcome in run `{name}` (first: {id} sample {s}); left out",
                    orphans.len()
                )));
        }
        run.similarity = Some(sims);
    }
    Ok(runs)
}

/// A path made absolute, with `.` and `..` resolved lexically, then its longest existing
/// ancestor canonicalized (symbolic links).
fn normalized(p: &Path) -> PathBuf {
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    };
    let mut lexical = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            other => lexical.push(other),
        }
    }
    let mut existing = lexical.clone();
    let mut tail = Vec::new();
    while !existing.exists() {
        match (existing.file_name(), existing.parent()) {
            (Some(n), Some(parent)) => {
                tail.push(n.to_os_string());
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    let mut out = existing.canonicalize().unwrap_or(existing);
    out.extend(tail.into_iter().rev());
    out
}

/// Refuses an output folder that is one of the inputs or holds one (the report files written
/// there could overwrite it).
pub fn check_output(output: &Path, inputs: &[&Path]) -> Result<(), UsageError> {
    let out = normalized(output);
    for input in inputs {
        let i = normalized(input);
        if i == out {
            return Err(UsageError(format!(
                "the output folder {} is an input; choose another --output",
                output.display()
            )));
        }
        if i.starts_with(&out) {
            return Err(UsageError(format!(
                "the output folder {} holds the input {}; choose another --output",
                output.display(),
                input.display()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_arguments() {
        let s = RunSpec::parse("base=results/x.jsonl").unwrap();
        assert_eq!(
            (s.name.as_deref(), s.path.as_path(), s.select.as_deref()),
            (Some("base"), Path::new("results/x.jsonl"), None)
        );
        let s = RunSpec::parse("per_run_results.json#i0_run1").unwrap();
        assert_eq!((s.name, s.select.as_deref()), (None, Some("i0_run1")));
        let s = RunSpec::parse("a=results#r1").unwrap();
        assert_eq!(
            (s.name.as_deref(), s.select.as_deref()),
            (Some("a"), Some("r1"))
        );
        assert!(RunSpec::parse("a b=x")
            .unwrap_err()
            .0
            .contains("not a run name"));
        assert!(RunSpec::parse("x#")
            .unwrap_err()
            .0
            .contains("nothing after"));
        assert!(RunSpec::parse("a=").unwrap_err().0.contains("no path"));
    }

    fn outcome_row(id: &str, model: &str, resolved: bool) -> String {
        serde_json::json!({"instance_id": id, "model": model, "sample": 0, "resolved": resolved})
            .to_string()
    }

    #[test]
    fn a_source_of_several_models_is_one_run_per_model() {
        let d = tempfile::tempdir().unwrap();
        // A run folder whose per-prediction file holds two models.
        let run = d.path().join("run");
        std::fs::create_dir(&run).unwrap();
        let rows: Vec<String> = (0..4)
            .map(|i| outcome_row(&format!("a__a-{i}"), "org/m1", i < 3))
            .chain((0..4).map(|i| outcome_row(&format!("a__a-{i}"), "m2", i < 1)))
            .collect();
        std::fs::write(run.join("r1.predictions.jsonl"), rows.join("\n")).unwrap();
        let mut problems = Vec::new();
        let runs = load_runs(
            &RunSpec::parse(run.to_str().unwrap()).unwrap(),
            &mut problems,
        )
        .unwrap();
        assert!(
            problems.is_empty(),
            "nothing dropped as a duplicate: {problems:?}"
        );
        let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["r1.org__m1", "r1.m2"]);
        let resolved = |r: &Run| {
            r.outcomes
                .values()
                .flatten()
                .filter(|(_, o)| o.resolved())
                .count()
        };
        assert_eq!((resolved(&runs[0]), resolved(&runs[1])), (3, 1));
        assert!(runs[1].source.ends_with("@m2"), "{}", runs[1].source);

        // An official tree with two model folders: the same.
        let tree = d.path().join("logs/run_evaluation/r2");
        for (m, res) in [("ma", true), ("mb", false)] {
            let dir = tree.join(m).join("a__a-1");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join("report.json"),
                serde_json::json!({"a__a-1": {
                    "patch_is_None": false, "patch_exists": true,
                    "patch_successfully_applied": true, "resolved": res,
                    "tests_status": {
                        "FAIL_TO_PASS": {"success": [], "failure": []},
                        "PASS_TO_PASS": {"success": [], "failure": []},
                        "FAIL_TO_FAIL": {"success": [], "failure": []},
                        "PASS_TO_FAIL": {"success": [], "failure": []}
                    }
                }})
                .to_string(),
            )
            .unwrap();
        }
        let runs = load_runs(
            &RunSpec::parse(tree.to_str().unwrap()).unwrap(),
            &mut problems,
        )
        .unwrap();
        let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["r2.ma", "r2.mb"], "{problems:?}");
        // One model: the run keeps its plain name.
        std::fs::write(
            run.join("r1.predictions.jsonl"),
            outcome_row("a__a-0", "m2", true),
        )
        .unwrap();
        let runs = load_runs(
            &RunSpec::parse(run.to_str().unwrap()).unwrap(),
            &mut problems,
        )
        .unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].name, "r1");
    }

    /// A rewards file of two models gives each model's run its own model's similarity, never
    /// the other's for the same (instance, sample); a run naming no model refuses such a file.
    #[test]
    fn rewards_attach_to_the_run_of_their_model() {
        let d = tempfile::tempdir().unwrap();
        let run = d.path().join("run");
        std::fs::create_dir(&run).unwrap();
        let rows = [
            outcome_row("a__a-1", "m1", true),
            outcome_row("a__a-1", "m2", false),
        ];
        std::fs::write(run.join("r1.predictions.jsonl"), rows.join("\n")).unwrap();
        let rewards = d.path().join("rewards.jsonl");
        std::fs::write(
            &rewards,
            "{\"instance_id\":\"a__a-1\",\"model_name_or_path\":\"m2\",\"sample\":0,\"similarity\":0.2}\n\
             {\"instance_id\":\"a__a-1\",\"model_name_or_path\":\"m1\",\"sample\":0,\"similarity\":0.9}\n",
        )
        .unwrap();
        let spec = RunSpec::parse(run.to_str().unwrap()).unwrap();
        let mut problems = Vec::new();
        let runs = load_all(
            std::slice::from_ref(&spec),
            &[
                ("r1.m1".to_string(), rewards.clone()),
                ("r1.m2".to_string(), rewards.clone()),
            ],
            &mut problems,
        )
        .unwrap();
        assert!(problems.is_empty(), "no duplicate dropped: {problems:?}");
        let sim = |r: &Run| r.similarity.as_ref().unwrap()[&("a__a-1".to_string(), 0)];
        assert_eq!((sim(&runs[0]), sim(&runs[1])), (0.9, 0.2));

        let summary = d.path().join("m.r.json");
        std::fs::write(
            &summary,
            r#"{"resolved_ids":["a__a-1"],"submitted_ids":["a__a-1"]}"#,
        )
        .unwrap();
        let spec = RunSpec::parse(&format!("s={}", summary.display())).unwrap();
        let e = load_all(&[spec], &[("s".to_string(), rewards)], &mut problems).unwrap_err();
        assert!(
            e.to_string()
                .contains("holds the rewards of 2 models (m1, m2) and the run names no model"),
            "{e}"
        );
    }

    #[test]
    fn output_may_not_be_or_hold_an_input() {
        let d = tempfile::tempdir().unwrap();
        let run = d.path().join("run");
        std::fs::create_dir(&run).unwrap();
        let f = run.join("a.jsonl");
        std::fs::write(&f, "").unwrap();
        assert!(check_output(&run, &[&f])
            .unwrap_err()
            .0
            .contains("holds the input"));
        assert!(check_output(&run.join("."), &[&run])
            .unwrap_err()
            .0
            .contains("is an input"));
        assert!(
            check_output(&run.join("cmp"), &[&f, &run]).is_ok(),
            "beside the inputs is fine"
        );
        assert!(check_output(&d.path().join("x/../run"), &[&run]).is_err());
    }
}
