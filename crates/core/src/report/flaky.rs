//! The flaky map (docs/formats.md, "Flaky map"): what `swe-eval validate -k N` saw of each
//! instance across its N gold and N empty runs, one JSON object per line, and which instances
//! are flaky: a verdict that differs between runs of the same patch, or a FAIL_TO_PASS /
//! PASS_TO_PASS test whose status does. `validate` writes it; `run --flaky` and
//! `compare --flaky` read it to mark (or leave out) the flaky instances.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::dataset::{InputProblem, LoadError};
use crate::grading::Category;
use crate::wire::FLAKY_MAP_VERSION;

/// A test's status in a run whose log parsed, where the test was not in the log.
pub const MISSING: &str = "MISSING";

/// One validated instance: a row of the flaky map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlakyRow {
    /// [`crate::wire::FLAKY_MAP_VERSION`], first in the row.
    pub format_version: u32,
    /// The instance.
    pub instance_id: String,
    /// Its repository (`owner/name`).
    #[serde(default)]
    pub repo: String,
    /// True when a verdict or a graded test's status differs between runs of one patch.
    pub flaky: bool,
    /// The verdicts of the gold runs, in sample order.
    #[serde(default)]
    pub gold: Vec<Category>,
    /// The verdicts of the runs with no patch, in sample order.
    #[serde(default)]
    pub empty: Vec<Category>,
    /// The FAIL_TO_PASS and PASS_TO_PASS tests whose status differs between runs of one patch.
    #[serde(default)]
    pub tests: Vec<TestFlip>,
}

/// A graded test whose status is not stable: per run, the status its log gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestFlip {
    /// The test, as FAIL_TO_PASS / PASS_TO_PASS name it.
    pub test: String,
    /// Per gold run (sample order): `PASSED`, `FAILED`, `SKIPPED`, `ERROR`, `XFAIL`,
    /// [`MISSING`] (the log parsed, the test is not in it), or `null` (no log parsed).
    pub gold: Vec<Option<String>>,
    /// The same for the runs with no patch.
    pub empty: Vec<Option<String>>,
}

/// A flaky map as read: its rows by instance.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlakyMap {
    /// The file it was read from (empty for a map built in memory).
    pub source: std::path::PathBuf,
    /// Instance -> its row (the last row of an instance wins).
    pub rows: BTreeMap<String, FlakyRow>,
}

impl FlakyMap {
    /// True when the map says `instance_id` is flaky.
    pub fn is_flaky(&self, instance_id: &str) -> bool {
        self.rows.get(instance_id).is_some_and(|r| r.flaky)
    }

    /// True when the map has a row for `instance_id` (it was validated).
    pub fn validated(&self, instance_id: &str) -> bool {
        self.rows.contains_key(instance_id)
    }

    /// The flaky instances, sorted.
    pub fn flaky_ids(&self) -> Vec<String> {
        self.rows
            .values()
            .filter(|r| r.flaky)
            .map(|r| r.instance_id.clone())
            .collect()
    }
}

/// The map's text: one row per line.
pub fn flaky_map_text(rows: &[FlakyRow]) -> String {
    let mut out = String::new();
    for r in rows {
        out.push_str(&serde_json::to_string(r).expect("a flaky row serializes"));
        out.push('\n');
    }
    out
}

/// Reads a flaky map. Any row that is not a flaky-map row refuses the whole file, naming the
/// file, the line and the field: a map with a row read wrong would mark the wrong instances.
pub fn read_flaky_map(path: &Path) -> Result<FlakyMap, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_flaky_map(path, &text)
}

/// Parses a flaky map's text (`path` names it in errors).
pub fn parse_flaky_map(path: &Path, text: &str) -> Result<FlakyMap, LoadError> {
    let bad = |line: usize, field: Option<&str>, message: String| {
        LoadError::Invalid(InputProblem::new(
            path,
            Some(line),
            field.map(str::to_string),
            message,
        ))
    };
    let mut map = FlakyMap {
        source: path.to_path_buf(),
        ..FlakyMap::default()
    };
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line)
            .map_err(|e| bad(n, None, format!("not a JSON object: {e}")))?;
        let Value::Object(obj) = &v else {
            return Err(bad(n, None, "not a JSON object".into()));
        };
        crate::wire::check(obj.get("format_version"), FLAKY_MAP_VERSION, "a flaky map")
            .map_err(|e| bad(n, Some("format_version"), e.to_string()))?;
        if !obj.get("instance_id").is_some_and(Value::is_string) {
            return Err(bad(
                n,
                Some("instance_id"),
                "missing, or not a string".into(),
            ));
        }
        if !obj.get("flaky").is_some_and(Value::is_boolean) {
            return Err(bad(n, Some("flaky"), "missing, or not true/false".into()));
        }
        for field in ["repo", "gold", "empty", "tests"] {
            let Some(value) = obj.get(field) else {
                continue;
            };
            let check = match field {
                "repo" => serde_json::from_value::<String>(value.clone()).map(drop),
                "gold" | "empty" => {
                    serde_json::from_value::<Vec<Category>>(value.clone()).map(drop)
                }
                _ => serde_json::from_value::<Vec<TestFlip>>(value.clone()).map(drop),
            };
            check.map_err(|e| bad(n, Some(field), e.to_string()))?;
        }
        let mut obj = obj.clone();
        obj.insert("format_version".into(), FLAKY_MAP_VERSION.into());
        let row: FlakyRow =
            serde_json::from_value(Value::Object(obj)).map_err(|e| bad(n, None, e.to_string()))?;
        map.rows.insert(row.instance_id.clone(), row);
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, flaky: bool) -> FlakyRow {
        FlakyRow {
            format_version: FLAKY_MAP_VERSION,
            instance_id: id.into(),
            repo: "o/r".into(),
            flaky,
            gold: vec![Category::Resolved, Category::Unresolved],
            empty: vec![Category::Unresolved, Category::Unresolved],
            tests: vec![TestFlip {
                test: "t.py::a".into(),
                gold: vec![Some("PASSED".into()), Some("FAILED".into())],
                empty: vec![Some("FAILED".into()), None],
            }],
        }
    }

    #[test]
    fn a_map_reads_back_as_written() {
        let rows = [row("a", true), row("b", false)];
        let text = flaky_map_text(&rows);
        assert!(text.starts_with("{\"format_version\":1,"), "{text}");
        let map = parse_flaky_map(Path::new("m.jsonl"), &text).unwrap();
        assert_eq!(map.rows["a"], rows[0]);
        assert!(map.is_flaky("a") && !map.is_flaky("b") && !map.is_flaky("c"));
        assert!(map.validated("b") && !map.validated("c"));
        assert_eq!(map.flaky_ids(), ["a"]);
    }

    #[test]
    fn a_bad_row_names_the_file_the_line_and_the_field() {
        let good = flaky_map_text(&[row("a", true)]);
        let good = good.trim_end();
        let cases = [
            ("not json", None, "not a JSON object"),
            ("[1]", None, "not a JSON object"),
            (
                r#"{"format_version":2,"instance_id":"x","flaky":true}"#,
                Some("format_version"),
                "newer",
            ),
            (
                r#"{"format_version":1,"flaky":true}"#,
                Some("instance_id"),
                "missing",
            ),
            (
                r#"{"format_version":1,"instance_id":"x","flaky":"yes"}"#,
                Some("flaky"),
                "true/false",
            ),
            (
                r#"{"format_version":1,"instance_id":"x","flaky":true,"gold":["maybe"]}"#,
                Some("gold"),
                "unknown variant",
            ),
            (
                r#"{"format_version":1,"instance_id":"x","flaky":true,"tests":[{"test":1}]}"#,
                Some("tests"),
                "invalid type",
            ),
        ];
        for (line, field, says) in cases {
            let text = format!("{good}\n\n{line}\n");
            let err = parse_flaky_map(Path::new("m.jsonl"), &text).unwrap_err();
            let LoadError::Invalid(p) = &err else {
                panic!("{line}: {err}")
            };
            assert_eq!(p.location.line, Some(3), "{line}");
            assert_eq!(p.location.field.as_deref(), field, "{line}");
            let said = err.to_string();
            assert!(
                said.contains("m.jsonl") && said.contains(says),
                "{line}: {said}"
            );
        }
        let missing = read_flaky_map(Path::new("/nonexistent/flaky.jsonl")).unwrap_err();
        assert!(matches!(missing, LoadError::Io { .. }));
    }
}
