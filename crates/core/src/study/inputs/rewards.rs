//! Rewards: `swe-eval reward` rows, as JSON Lines (or a JSON list) or as CSV.

use std::path::Path;

use serde_json::{Map, Value};

use super::fields::{number, object_with_id, problem, read, rows_of, sample_of};
use crate::dataset::{json_values, LoadError, Loaded, RowError};

/// One row of a rewards file.
#[derive(Debug, Clone, PartialEq)]
pub struct RewardRow {
    /// The instance.
    pub instance_id: String,
    /// The sample, when the input says (else numbered by file order).
    pub sample: Option<u32>,
    /// The reference similarity, 0..1.
    pub similarity: f64,
    /// The reward, -1..1.
    pub reward: f64,
    /// The reward's format verdict (`ok`, `empty`, ...), when given.
    pub format: Option<String>,
    /// `model_name_or_path` (or `model`), when the row names one.
    pub model: Option<String>,
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
        json_values(path, &bytes)?
    };
    Ok(rows_of(path, values, reward_row))
}

fn reward_row(value: &Value) -> Result<RewardRow, RowError> {
    let (obj, instance_id) = object_with_id(value)?;
    crate::wire::check(
        obj.get(crate::wire::FIELD),
        crate::wire::REWARDS_VERSION,
        "a rewards row",
    )
    .map_err(|e| RowError::in_field(crate::wire::FIELD, e.to_string()))?;
    let sample = sample_of(obj)?;
    let field = |name: &'static str| -> Result<Option<f64>, RowError> {
        match obj.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(v) => match number(v) {
                Some(x) if x.is_finite() => Ok(Some(x)),
                _ => Err(RowError::in_field(
                    name,
                    format!("expected a finite number, found {v}"),
                )),
            },
        }
    };
    let (similarity, reward) = match (field("similarity")?, field("reward")?) {
        (Some(s), Some(r)) => (s, r),
        (Some(s), None) => (s, s),
        (None, Some(r)) => (r.max(0.0), r),
        (None, None) => {
            return Err(RowError::in_field(
                "reward",
                "neither `similarity` nor `reward`",
            ))
        }
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
        model: super::fields::model_of(obj, "model_name_or_path", "model"),
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
