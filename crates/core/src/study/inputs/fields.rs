//! Helpers every input format shares: problems with file, line and field, reading a file,
//! numbers written loosely, the `sample` field.

use std::path::Path;

use serde_json::{Map, Value};

use crate::dataset::{InputProblem, LoadError, Loaded, RowError};

pub(super) fn problem(
    path: &Path,
    line: Option<usize>,
    field: Option<&str>,
    message: String,
) -> InputProblem {
    InputProblem::new(path.to_path_buf(), line, field.map(str::to_string), message)
}

pub(super) fn read(path: &Path) -> Result<Vec<u8>, LoadError> {
    std::fs::read(path).map_err(|source| LoadError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// A number field that may also be written as a string (CSV, or loose JSON).
pub(super) fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// The model a row names under `first` or else `second`, if any.
pub(super) fn model_of(obj: &Map<String, Value>, first: &str, second: &str) -> Option<String> {
    [first, second]
        .iter()
        .find_map(|k| obj.get(*k).and_then(Value::as_str))
        .filter(|m| !m.is_empty())
        .map(str::to_string)
}

/// The row's `sample`, when it gives one.
pub(super) fn sample_of(obj: &Map<String, Value>) -> Result<Option<u32>, RowError> {
    match obj.get("sample") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match number(v) {
            Some(x) if x >= 0.0 && x.fract() == 0.0 && x <= u32::MAX as f64 => Ok(Some(x as u32)),
            _ => Err(RowError::in_field(
                "sample",
                format!("expected a sample number, found {v}"),
            )),
        },
    }
}

/// Turns located values into rows with `row`, keeping the values' problems and adding one
/// (file, line, field) problem per value `row` refuses.
pub(super) fn rows_of<T>(
    path: &Path,
    values: Loaded<(Value, Option<usize>)>,
    row: impl Fn(&Value) -> Result<T, RowError>,
) -> Loaded<T> {
    let mut out = Loaded {
        items: Vec::new(),
        problems: values.problems,
    };
    for (value, line) in values.items {
        match row(&value) {
            Ok(r) => out.items.push(r),
            Err(e) => out.problems.push(e.at(path, line)),
        }
    }
    out
}

/// The object of a row and its non-empty `instance_id`, or what is wrong with it.
pub(super) fn object_with_id(value: &Value) -> Result<(&Map<String, Value>, String), RowError> {
    let obj = value.as_object().ok_or_else(|| {
        RowError::whole(format!(
            "expected an object, found {}",
            crate::dataset::kind_of(value)
        ))
    })?;
    match obj.get("instance_id") {
        Some(Value::String(s)) if !s.is_empty() => Ok((obj, s.clone())),
        _ => Err(RowError::in_field("instance_id", "missing or not a string")),
    }
}
