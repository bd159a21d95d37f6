//! Executed outcomes, in five formats: a `swe-eval run` output folder, an official SWE-bench
//! run summary, a JSON Lines of `{instance_id, sample, resolved}`, report.json files, and
//! mini-swe-agent's `per_run_results.json`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::fields::{number, object_with_id, problem, read, rows_of, sample_of};
use crate::dataset::{json_values, LoadError, Loaded, RowError};
use crate::grading::Category;
use crate::study::Outcome;

/// One executed outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct OutcomeRow {
    /// The instance.
    pub instance_id: String,
    /// The sample, when the input says (else numbered by file order).
    pub sample: Option<u32>,
    /// What the execution said.
    pub outcome: Outcome,
    /// `model` (or `model_name_or_path`), when the source names one.
    pub model: Option<String>,
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

fn outcome_row(value: &Value) -> Result<OutcomeRow, RowError> {
    let (obj, instance_id) = object_with_id(value)?;
    // swe-eval's own per-prediction rows carry their format's version: a run's rows are
    // verdicts, `grade`'s rows have `official_category`. Other tools' rows have none (read as
    // version 1, whose fields are the ones used here).
    let grade_row = obj.contains_key("official_category");
    let supported = if grade_row {
        crate::wire::GRADE_ROWS_VERSION
    } else {
        crate::wire::VERDICT_VERSION
    };
    let version = crate::wire::check(
        obj.get(crate::wire::FIELD),
        supported,
        "a per-prediction row",
    )
    .map_err(|e| RowError::in_field(crate::wire::FIELD, e.to_string()))?;
    let sample = sample_of(obj)?;
    let mut category = obj
        .get("category")
        .and_then(Value::as_str)
        .map(str::to_string);
    // A grade row of version 1 called a prediction without a log `error` with reason `infra`;
    // version 2 (and every verdict) calls it `infra_error`.
    let infra = obj.get("error_reason").and_then(Value::as_str) == Some("infra");
    if grade_row && version < 2 && infra && category.as_deref() == Some("error") {
        category = Some(Category::InfraError.as_str().to_string());
    }
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
                            return Err(RowError::in_field(
                                "resolved",
                                format!("expected a boolean, found {v}"),
                            ))
                        }
                    }
                } else {
                    return Err(RowError::in_field(
                        "resolved",
                        format!("expected a boolean, found {v}"),
                    ));
                }
            }
        },
    };
    let verdict = match (resolved, category) {
        (Some(true), _) => Outcome::Resolved,
        (_, Some(c)) if no_verdict_category(&c) => Outcome::NoVerdict(c),
        (Some(false), _) => Outcome::Unresolved,
        (None, Some(c)) if c.eq_ignore_ascii_case("resolved") => Outcome::Resolved,
        (None, Some(c)) if c.eq_ignore_ascii_case("unresolved") => Outcome::Unresolved,
        (None, c) => {
            if c.is_none() && !obj.contains_key("resolved") {
                return Err(RowError::in_field(
                    "resolved",
                    "neither `resolved` nor `category`",
                ));
            }
            Outcome::NoVerdict(c.unwrap_or_else(|| "no_verdict".into()))
        }
    };
    Ok(OutcomeRow {
        instance_id,
        sample,
        outcome: verdict,
        model: super::fields::model_of(obj, "model", "model_name_or_path"),
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
            let outcome = if resolved.contains(&id) {
                Category::Resolved.into()
            } else if empty.contains(&id) {
                Category::EmptyPatch.into()
            } else if error.contains(&id) {
                Category::Error.into()
            } else if completed.contains(&id) {
                Category::Unresolved.into()
            } else {
                // Submitted, never completed: no category of the official harness says so.
                Outcome::NoVerdict("incomplete".into())
            };
            OutcomeRow {
                instance_id: id,
                sample: None,
                outcome,
                model: None,
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
                        None => Outcome::NoVerdict("missing_from_run".into()),
                        Some(v) if v.as_bool() == Some(true) || v.as_f64() == Some(1.0) => {
                            Outcome::Resolved
                        }
                        Some(_) => Outcome::Unresolved,
                    };
                    items.push(OutcomeRow {
                        instance_id: (*id).clone(),
                        sample: Some(k as u32),
                        outcome: verdict,
                        model: None,
                    });
                }
            }
            return Ok(Loaded {
                items,
                problems: Vec::new(),
            });
        }
    }
    Ok(rows_of(path, json_values(path, &bytes)?, outcome_row))
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
                        // logs/run_evaluation/<run>/<model>/<id>/report.json
                        let model = file
                            .parent()
                            .and_then(Path::parent)
                            .and_then(Path::file_name)
                            .map(|m| m.to_string_lossy().into_owned());
                        out.items.push(OutcomeRow {
                            instance_id: id,
                            sample: None,
                            model,
                            outcome: resolved
                                .map_or_else(|| Category::Error.into(), Outcome::of_resolved),
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
