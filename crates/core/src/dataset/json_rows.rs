//! Rows from JSON and JSON Lines, each located by its line, and a row's value read into an
//! [`Instance`] with every problem named by field.

use std::path::Path;

use serde_json::{Map, Value};

use super::instance::Instance;
use super::loaded::{InputProblem, LoadError, Loaded};

/// Rows with the line they came from.
pub(super) type Located<T> = Loaded<(T, Option<usize>)>;

pub(super) fn load_json_rows(path: &Path, bytes: &[u8]) -> Result<Located<Instance>, LoadError> {
    let values = json_values(path, bytes)?;
    let mut out = Located::default();
    for (value, line) in values.items {
        match instance_from_value(value) {
            Ok(inst) => out.items.push((inst, line)),
            Err((field, message)) => {
                out.problems
                    .push(InputProblem::new(path.to_path_buf(), line, field, message))
            }
        }
    }
    out.problems.extend(values.problems);
    out.problems.sort_by_key(|p| p.location.line);
    Ok(out)
}

/// Turns one JSON value into an instance, naming the field at fault when it fails.
pub fn instance_from_value(value: Value) -> Result<Instance, (Option<String>, String)> {
    let Value::Object(map) = value else {
        return Err((
            None,
            format!("expected an object, found {}", kind_of(&value)),
        ));
    };
    for required in ["instance_id", "repo"] {
        match map.get(required) {
            Some(Value::String(s)) if !s.is_empty() => {}
            Some(other) => {
                return Err((
                    Some(required.into()),
                    format!("expected a non-empty string, found {}", kind_of(other)),
                ))
            }
            None => return Err((Some(required.into()), "missing".into())),
        }
    }
    // Ids name folders (`<output>/<instance_id>/`): one safe path component.
    if let Some(Value::String(id)) = map.get("instance_id") {
        crate::paths::check_component("instance_id", id)
            .map_err(|e| (Some("instance_id".to_string()), e.to_string()))?;
    }
    let has_patch_field = map.contains_key("patch");
    // Deserialize field by field on failure so the message can name the field.
    match serde_json::from_value::<Instance>(Value::Object(map.clone())) {
        Ok(inst) => Ok(Instance {
            has_patch_field,
            ..inst
        }),
        Err(e) => {
            for (key, v) in &map {
                let mut single = Map::new();
                single.insert("instance_id".into(), Value::String("x".into()));
                single.insert("repo".into(), Value::String("x".into()));
                single.insert(key.clone(), v.clone());
                if let Err(fe) = serde_json::from_value::<Instance>(Value::Object(single)) {
                    return Err((Some(key.clone()), fe.to_string()));
                }
            }
            Err((None, e.to_string()))
        }
    }
}

/// The JSON type of a value, as messages name it (`a string, not a number`).
pub fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Splits a JSON or JSON Lines file into values with their 1-based line numbers. A JSON
/// document whose top level is a list yields its elements (line = where each starts); an
/// object keyed by id yields its values with the key injected as `instance_id` if absent.
/// A row holding bytes that are not UTF-8 is refused with its file, line and field, never read
/// with the bytes replaced: the patch applied and scored would not be the user's. (SWE-bench's
/// tools read these files as UTF-8 with Python's strict decoder and stop at such a byte; here
/// only the row is left out.)
pub fn json_values(path: &Path, bytes: &[u8]) -> Result<Located<Value>, LoadError> {
    let bad = non_utf8_lines(bytes);
    if bad.is_empty() {
        return json_values_of(path, bytes);
    }
    let mut all = json_values_of(path, bytes)?;
    // A row spans the lines from its start to the next row's start.
    let starts: Vec<usize> = all.items.iter().filter_map(|(_, line)| *line).collect();
    let mut out = Located {
        items: Vec::new(),
        problems: std::mem::take(&mut all.problems),
    };
    for (value, line) in all.items {
        let start = line.unwrap_or(1);
        let end = starts
            .iter()
            .copied()
            .find(|&l| l > start)
            .unwrap_or(usize::MAX);
        match bad.iter().find(|(l, _)| (start..end).contains(l)) {
            None => out.items.push((value, line)),
            Some(&(bad_line, column)) => {
                let fields = replaced_fields(&value);
                out.problems.push(InputProblem::new(
                    path.to_path_buf(),
                    Some(bad_line),
                    fields.first().cloned(),
                    format!(
                        "bytes that are not UTF-8 (byte {column} of the line{}); the row is left \
                         out, not read with the bytes replaced (SWE-bench's tools refuse the file)",
                        if fields.len() > 1 {
                            format!("; also in {}", fields[1..].join(", "))
                        } else {
                            String::new()
                        }
                    ),
                ));
            }
        }
    }
    out.problems.sort_by_key(|p| p.location.line);
    Ok(out)
}

/// (1-based line, 1-based byte of the line) of the first byte that is not UTF-8, per line.
fn non_utf8_lines(bytes: &[u8]) -> Vec<(usize, usize)> {
    if std::str::from_utf8(bytes).is_ok() {
        return Vec::new();
    }
    bytes
        .split(|&b| b == b'\n')
        .enumerate()
        .filter_map(|(i, line)| {
            std::str::from_utf8(line)
                .err()
                .map(|e| (i + 1, e.valid_up_to() + 1))
        })
        .collect()
}

/// The top-level fields of `value` holding U+FFFD after a lossy reading (where the bytes were).
fn replaced_fields(value: &Value) -> Vec<String> {
    let Value::Object(map) = value else {
        return Vec::new();
    };
    map.iter()
        .filter(|(_, v)| v.to_string().contains('\u{fffd}'))
        .map(|(k, _)| k.clone())
        .collect()
}

/// [`json_values`] with bytes that are not UTF-8 read as U+FFFD (the caller refuses such rows).
fn json_values_of(path: &Path, bytes: &[u8]) -> Result<Located<Value>, LoadError> {
    let text = String::from_utf8_lossy(bytes);
    let trimmed = text.trim_start_matches('\u{feff}');
    let first = trimmed.trim_start().chars().next();
    let mut out = Located::default();
    let whole_doc = matches!(first, Some('[')) || {
        // `{` may start a JSON object document or the first line of JSON Lines.
        matches!(first, Some('{')) && serde_json::from_str::<Value>(trimmed).is_ok() && {
            // A single-line JSON Lines file parses as one object too; it is a document keyed
            // by id only if every value is an object and it has no `instance_id` of its own.
            let v: Value = serde_json::from_str(trimmed).unwrap_or(Value::Null);
            v.as_object()
                .is_some_and(|m| !m.contains_key("instance_id") && m.values().all(Value::is_object))
        }
    };
    if whole_doc {
        let value: Value = serde_json::from_str(trimmed).map_err(|e| {
            LoadError::Invalid(InputProblem::new(
                path.to_path_buf(),
                Some(e.line()),
                None,
                format!("invalid JSON: {e}"),
            ))
        })?;
        let starts = element_start_lines(trimmed);
        match value {
            Value::Array(items) => {
                for (i, item) in items.into_iter().enumerate() {
                    out.items.push((item, starts.get(i).copied()));
                }
            }
            Value::Object(map) => {
                for (i, (key, mut item)) in map.into_iter().enumerate() {
                    if let Value::Object(obj) = &mut item {
                        obj.entry("instance_id").or_insert(Value::String(key));
                    }
                    out.items.push((item, starts.get(i).copied()));
                }
            }
            other => {
                return Err(LoadError::Invalid(InputProblem::new(
                    path.to_path_buf(),
                    Some(1),
                    None,
                    format!(
                        "expected a list of rows or an object keyed by instance id, found {}",
                        kind_of(&other)
                    ),
                )))
            }
        }
        return Ok(out);
    }
    for (i, line) in trimmed.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(v) => out.items.push((v, Some(i + 1))),
            Err(e) => out.problems.push(InputProblem::new(
                path.to_path_buf(),
                Some(i + 1),
                None,
                format!("invalid JSON at column {}: {e}", e.column()),
            )),
        }
    }
    Ok(out)
}

/// 1-based line numbers where each top-level element of a JSON list or object starts.
fn element_start_lines(text: &str) -> Vec<usize> {
    let mut lines = Vec::new();
    let (mut depth, mut in_str, mut escaped, mut line) = (0usize, false, false, 1usize);
    let mut expecting = false;
    for c in text.chars() {
        if c == '\n' {
            line += 1;
        }
        if in_str {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
            continue;
        }
        if expecting && !c.is_whitespace() && c != ']' && c != '}' {
            lines.push(line);
            expecting = false;
        }
        match c {
            '"' => in_str = true,
            '[' | '{' => {
                depth += 1;
                if depth == 1 {
                    expecting = true;
                }
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            ',' if depth == 1 => expecting = true,
            _ => {}
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row with a byte that is not UTF-8 in `field`, between two good rows.
    fn rows_with_a_bad_byte(field: &str) -> Vec<Vec<u8>> {
        (0..3)
            .map(|i| {
                let row = serde_json::json!({"instance_id": format!("a__b-{i}"), field: "x YY y"});
                let text = row.to_string().into_bytes();
                if i == 1 {
                    let at = text.windows(2).position(|w| w == b"YY").unwrap();
                    [&text[..at], &[0xff, 0xfe][..], &text[at + 2..]].concat()
                } else {
                    text
                }
            })
            .collect()
    }

    #[test]
    fn a_row_with_bytes_that_are_not_utf8_is_refused_by_file_line_and_field_never_changed() {
        let path = Path::new("preds.jsonl");
        for field in ["model_patch", "patch"] {
            let rows = rows_with_a_bad_byte(field);
            // JSON Lines: the row on line 2 is refused, the others read as written.
            let lines = json_values(path, &rows.join(&b'\n')).unwrap();
            let ids: Vec<&str> = lines
                .items
                .iter()
                .map(|(v, _)| v["instance_id"].as_str().unwrap())
                .collect();
            assert_eq!(ids, ["a__b-0", "a__b-2"]);
            assert!(lines.items.iter().all(|(v, _)| v[field] == "x YY y"));
            assert_eq!(lines.problems.len(), 1);
            let p = &lines.problems[0];
            assert_eq!(
                (p.location.line, p.location.field.as_deref()),
                (Some(2), Some(field))
            );
            assert!(p.message.contains("not UTF-8"), "{}", p.message);
            // A JSON list over several lines: the element holding the byte, and only it.
            let list = [&b"[\n"[..], &rows.join(&b",\n"[..]), &b"\n]\n"[..]].concat();
            let listed = json_values(path, &list).unwrap();
            assert_eq!(listed.items.len(), 2, "{:?}", listed.problems);
            assert_eq!(listed.problems[0].location.line, Some(3));
            assert_eq!(listed.problems[0].location.field.as_deref(), Some(field));
        }
        // U+FFFD written as such is the user's text: read as is.
        let own = "{\"instance_id\": \"a__b-0\", \"model_patch\": \"\u{fffd}\"}";
        let read = json_values(path, own.as_bytes()).unwrap();
        assert!(read.problems.is_empty());
        assert_eq!(read.items[0].0["model_patch"], "\u{fffd}");
    }
}
