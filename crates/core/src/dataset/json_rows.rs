//! Rows from JSON and JSON Lines, each located by its line, and a row's value read into an
//! [`Instance`] with every problem named by field.

use std::path::Path;

use serde_json::{Map, Value};

use super::instance::Instance;
use super::loaded::{InputProblem, LoadError, Loaded, RowError};

/// Rows with the line they came from.
pub(super) type Located<T> = Loaded<(T, Option<usize>)>;

pub(super) fn load_json_rows(path: &Path, bytes: &[u8]) -> Result<Located<Instance>, LoadError> {
    let values = json_values(path, bytes)?;
    let mut out = Located::default();
    for (value, line) in values.items {
        match instance_from_value(value) {
            Ok(inst) => out.items.push((inst, line)),
            Err(e) => out.problems.push(e.at(path, line)),
        }
    }
    out.problems.extend(values.problems);
    out.problems.sort_by_key(|p| p.location.line);
    Ok(out)
}

/// Turns one JSON value into an instance, naming the field at fault when it fails.
pub fn instance_from_value(value: Value) -> Result<Instance, RowError> {
    let Value::Object(map) = value else {
        return Err(RowError::whole(format!(
            "expected an object, found {}",
            kind_of(&value)
        )));
    };
    for required in ["instance_id", "repo"] {
        match map.get(required) {
            Some(Value::String(s)) if !s.is_empty() => {}
            Some(other) => {
                return Err(RowError::in_field(
                    required,
                    format!("expected a non-empty string, found {}", kind_of(other)),
                ))
            }
            None => return Err(RowError::in_field(required, "missing")),
        }
    }
    // Ids name folders (`<output>/<instance_id>/`): one safe path component.
    if let Some(Value::String(id)) = map.get("instance_id") {
        crate::paths::check_component("instance_id", id)
            .map_err(|e| RowError::in_field("instance_id", e.to_string()))?;
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
                    return Err(RowError::in_field(key.clone(), fe.to_string()));
                }
            }
            Err(RowError::whole(e.to_string()))
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
///
/// Two kinds of text no program can take as the user wrote it are refused row by row, with
/// the file, line and field, never read changed (the patch applied and scored would not be the
/// user's), and the other rows are read:
/// - bytes that are not UTF-8 (SWE-bench's tools read these files as UTF-8 with Python's strict
///   decoder and stop at such a byte);
/// - a lone UTF-16 surrogate escape (`\ud800` with no low half after it, or a low half alone).
///   Python's `json` reads it into a string that no UTF-8 file can hold: the official harness
///   then fails writing the patch to `patch.diff` (`UnicodeEncodeError`) and counts the
///   instance as an error, with no test run. Here the row is refused instead, naming where.
pub fn json_values(path: &Path, bytes: &[u8]) -> Result<Located<Value>, LoadError> {
    let mut flaws: Vec<Flaw> = non_utf8_lines(bytes)
        .into_iter()
        .map(|(line, column)| Flaw {
            line,
            field: None,
            message: format!(
                "bytes that are not UTF-8 (byte {column} of the line); the row is left out, not \
                 read with the bytes replaced (SWE-bench's tools refuse the file)"
            ),
        })
        .collect();
    let text = String::from_utf8_lossy(bytes);
    let lone = lone_surrogates(&text);
    if flaws.is_empty() && lone.is_empty() {
        return json_values_of(path, &text);
    }
    // Each lone escape is read as U+FFFD (same length, so lines and columns stay), and the row
    // holding it is refused below.
    let mut readable = text.into_owned();
    for l in &lone {
        readable.replace_range(l.offset..l.offset + 6, "\\ufffd");
        flaws.push(Flaw {
            line: l.line,
            field: l.field.clone(),
            message: format!(
                "a lone surrogate escape {} (column {}): half of a UTF-16 pair, not a character. \
                 Python's json module reads it, but no UTF-8 file can hold it: the official \
                 harness fails writing such a patch and counts the instance as an error. The \
                 row is left out",
                l.escape, l.column
            ),
        });
    }
    flaws.sort_by_key(|f| f.line);
    let mut all = json_values_of(path, &readable)?;
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
        let here: Vec<&Flaw> = flaws
            .iter()
            .filter(|f| (start..end).contains(&f.line))
            .collect();
        let Some(first) = here.first() else {
            out.items.push((value, line));
            continue;
        };
        // Bytes that are not UTF-8 were read as U+FFFD: the fields holding one are named.
        let fields = match &first.field {
            Some(f) => vec![f.clone()],
            None => replaced_fields(&value),
        };
        let mut message = first.message.clone();
        if fields.len() > 1 {
            message += &format!("; also in {}", fields[1..].join(", "));
        }
        if here.len() > 1 {
            message += &format!("; {} more such place(s) in this row", here.len() - 1);
        }
        out.problems.push(InputProblem::new(
            path.to_path_buf(),
            Some(first.line),
            fields.first().cloned(),
            message,
        ));
    }
    out.problems.sort_by_key(|p| p.location.line);
    Ok(out)
}

/// Text in a row that cannot be read as written: where, in which field when known, and why.
struct Flaw {
    line: usize,
    field: Option<String>,
    message: String,
}

/// A `\uXXXX` escape of a JSON string that is half of a surrogate pair with no other half.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LoneSurrogate {
    /// Byte offset of its backslash in the text.
    offset: usize,
    /// 1-based line.
    line: usize,
    /// 1-based byte of the line where the escape starts.
    column: usize,
    /// The escape as written (`\ud800`).
    escape: String,
    /// The key of the object whose value holds the string (the innermost object), if any.
    field: Option<String>,
}

/// Every lone surrogate escape in the JSON strings of `text`, found by a scan that knows
/// strings, escapes, objects and keys only (anything else is left to the JSON parser).
fn lone_surrogates(text: &str) -> Vec<LoneSurrogate> {
    let b = text.as_bytes();
    let hex4 = |at: usize| -> Option<u16> {
        let digits = text.get(at..at + 4)?;
        if digits.bytes().all(|c| c.is_ascii_hexdigit()) {
            u16::from_str_radix(digits, 16).ok()
        } else {
            None
        }
    };
    // Per open object: its current key, and whether the next string is a key.
    let mut objects: Vec<Option<(Option<String>, bool)>> = Vec::new();
    let mut out = Vec::new();
    let (mut i, mut line, mut line_start) = (0usize, 1usize, 0usize);
    while i < b.len() {
        match b[i] {
            b'\n' => {
                line += 1;
                line_start = i + 1;
            }
            b'{' => objects.push(Some((None, true))),
            b'[' => objects.push(None),
            b'}' | b']' => {
                objects.pop();
            }
            b':' => {
                if let Some(Some((_, want_key))) = objects.last_mut() {
                    *want_key = false;
                }
            }
            b',' => {
                if let Some(Some((_, want_key))) = objects.last_mut() {
                    *want_key = true;
                }
            }
            b'"' => {
                let is_key = matches!(objects.last(), Some(Some((_, true))));
                let field = objects
                    .iter()
                    .rev()
                    .flatten()
                    .next()
                    .and_then(|o| o.0.clone());
                let mut key = String::new();
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' && b[j] != b'\n' {
                    if b[j] != b'\\' {
                        let ch = text[j..].chars().next().unwrap_or('\u{fffd}');
                        key.push(ch);
                        j += ch.len_utf8();
                        continue;
                    }
                    match b.get(j + 1) {
                        Some(b'u') => match hex4(j + 2) {
                            Some(hi @ 0xD800..=0xDBFF) => {
                                let low = (b.get(j + 6) == Some(&b'\\')
                                    && b.get(j + 7) == Some(&b'u'))
                                .then(|| hex4(j + 8))
                                .flatten()
                                .filter(|lo| (0xDC00..=0xDFFF).contains(lo));
                                match low {
                                    Some(lo) => {
                                        let c = 0x10000
                                            + ((u32::from(hi) - 0xD800) << 10)
                                            + (u32::from(lo) - 0xDC00);
                                        key.extend(char::from_u32(c));
                                        j += 12;
                                    }
                                    None => {
                                        out.push(lone_at(text, j, line, line_start, field.clone()));
                                        j += 6;
                                    }
                                }
                            }
                            Some(0xDC00..=0xDFFF) => {
                                out.push(lone_at(text, j, line, line_start, field.clone()));
                                j += 6;
                            }
                            Some(c) => {
                                key.extend(char::from_u32(u32::from(c)));
                                j += 6;
                            }
                            None => j += 2,
                        },
                        Some(&c) => {
                            // The escaped character whole (a backslash before a multi-byte
                            // character is invalid JSON, left to the parser to name).
                            let ch = text[j + 1..].chars().next().unwrap_or('\u{fffd}');
                            key.push(match c {
                                b'n' => '\n',
                                b't' => '\t',
                                b'r' => '\r',
                                _ => ch,
                            });
                            j += 1 + ch.len_utf8();
                        }
                        None => j += 1,
                    }
                }
                if is_key {
                    if let Some(Some((k, _))) = objects.last_mut() {
                        *k = Some(key);
                    }
                }
                // The closing quote (or the end of the line, for a broken string).
                i = j;
                if b.get(i) == Some(&b'\n') {
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

fn lone_at(
    text: &str,
    at: usize,
    line: usize,
    line_start: usize,
    field: Option<String>,
) -> LoneSurrogate {
    LoneSurrogate {
        offset: at,
        line,
        column: at - line_start + 1,
        escape: text[at..at + 6].to_string(),
        field,
    }
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

/// [`json_values`] on text already decoded (the caller refuses the rows it had to change).
fn json_values_of(path: &Path, text: &str) -> Result<Located<Value>, LoadError> {
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

    #[test]
    fn a_backslash_before_a_multibyte_character_is_an_error_never_a_panic() {
        // Invalid JSON (a backslash before `é` or `😀`): the scan steps over the whole
        // character and the parser refuses the row.
        for text in [r#"{"a": "x\éy \ud800"}"#, r#"{"a": "\😀"}"#] {
            assert!(lone_surrogates(text).len() <= 1);
            let read = json_values(Path::new("p.jsonl"), text.as_bytes());
            assert!(
                read.as_ref().map_or(true, |r| r.items.is_empty()),
                "{text}: {:?}",
                read.map(|r| r.items.len())
            );
        }
    }

    #[test]
    fn lone_surrogates_are_found_with_their_field_and_pairs_and_escaped_backslashes_are_not() {
        let text = concat!(
            r#"{"instance_id": "a", "model_patch": "ok \ud83d\ude00 and \\ud800 is text"}"#,
            "\n",
            r#"{"instance_id": "b", "extra": {"k": ["\udc00"]}, "model_patch": "x\uD800y"}"#,
            "\n"
        );
        let found = lone_surrogates(text);
        let got: Vec<(usize, usize, &str, Option<&str>)> = found
            .iter()
            .map(|l| (l.line, l.column, l.escape.as_str(), l.field.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                (2, 39, r"\udc00", Some("k")),
                (2, 67, r"\uD800", Some("model_patch")),
            ]
        );
        let read = json_values(Path::new("p.jsonl"), text.as_bytes()).unwrap();
        assert_eq!(
            read.items.len(),
            1,
            "the row with a pair and an escaped backslash is read"
        );
        assert_eq!(
            read.items[0].0["model_patch"],
            "ok \u{1f600} and \\ud800 is text"
        );
        let p = &read.problems[0];
        assert_eq!(
            (p.location.line, p.location.field.as_deref()),
            (Some(2), Some("k"))
        );
        assert!(
            p.message
                .contains(r"lone surrogate escape \udc00 (column 39)"),
            "{}",
            p.message
        );
        assert!(p.message.contains("1 more such place(s)"), "{}", p.message);
    }
}
