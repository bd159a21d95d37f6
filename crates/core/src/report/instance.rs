//! The official per-instance `report.json` ([`InstanceReport`]): written byte for byte as
//! the official harness writes it, and read back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fsutil::{self};
use crate::grading::{Graded, Group, Mode, TestGroups};

use super::error::ReportError;
use super::pyjson::to_python_json;

/// File name of the per-instance report in the official layout.
pub const REPORT_FILE: &str = "report.json";

/// File name of the raw test log in the official layout.
pub const TEST_OUTPUT_FILE: &str = "test_output.txt";

/// One official test group (`{"success": [...], "failure": [...]}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupReport {
    /// Tests of the group that passed.
    pub success: Vec<String>,
    /// Tests of the group that did not pass.
    pub failure: Vec<String>,
}

impl From<&Group> for GroupReport {
    fn from(g: &Group) -> Self {
        GroupReport {
            success: g.success.clone(),
            failure: g.failure.clone(),
        }
    }
}

/// The official `tests_status` object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestsStatusReport {
    /// Tests the patch must make pass.
    #[serde(rename = "FAIL_TO_PASS")]
    pub fail_to_pass: GroupReport,
    /// Tests that must keep passing.
    #[serde(rename = "PASS_TO_PASS")]
    pub pass_to_pass: GroupReport,
    /// Always empty, as officially.
    #[serde(rename = "FAIL_TO_FAIL")]
    pub fail_to_fail: GroupReport,
    /// Always empty, as officially.
    #[serde(rename = "PASS_TO_FAIL")]
    pub pass_to_fail: GroupReport,
}

impl From<&TestGroups> for TestsStatusReport {
    fn from(t: &TestGroups) -> Self {
        TestsStatusReport {
            fail_to_pass: (&t.fail_to_pass).into(),
            pass_to_pass: (&t.pass_to_pass).into(),
            fail_to_fail: (&t.fail_to_fail).into(),
            pass_to_fail: (&t.pass_to_fail).into(),
        }
    }
}

/// The value under the instance id in an official `report.json`
/// (`{"<instance_id>": InstanceReport}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceReport {
    /// Officially always false here (a missing patch gets no report).
    #[serde(rename = "patch_is_None")]
    pub patch_is_none: bool,
    /// Officially always true here.
    pub patch_exists: bool,
    /// The patch applied.
    pub patch_successfully_applied: bool,
    /// Every required test passed.
    pub resolved: bool,
    /// Absent when the log was rejected (missing or failure markers), as officially.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests_status: Option<TestsStatusReport>,
}

impl InstanceReport {
    /// The report the official harness writes for this verdict under `mode`, or `None` when
    /// it writes none (empty patch, apply failure, timeout, infrastructure error).
    pub fn from_verdict(verdict: &Graded, mode: Mode) -> Option<InstanceReport> {
        if !verdict.official_report {
            return None;
        }
        Some(InstanceReport {
            patch_is_none: false,
            patch_exists: true,
            patch_successfully_applied: verdict.patch_applied,
            resolved: verdict.category(mode).is_resolved(),
            tests_status: verdict.tests(mode).map(TestsStatusReport::from),
        })
    }
}

/// `report.json` text exactly as the official harness writes it (no final newline).
pub fn instance_report_json(instance_id: &str, report: &InstanceReport) -> String {
    let mut map = serde_json::Map::new();
    map.insert(
        instance_id.to_string(),
        serde_json::to_value(report).unwrap_or_default(),
    );
    to_python_json(&serde_json::Value::Object(map))
}

/// Writes `dir/<instance_id>/report.json` atomically; returns its path.
pub fn write_instance_report(
    dir: &Path,
    instance_id: &str,
    report: &InstanceReport,
) -> Result<PathBuf, ReportError> {
    let path = crate::paths::join_component(dir, "instance_id", instance_id)?.join(REPORT_FILE);
    fsutil::write_atomic(&path, instance_report_json(instance_id, report).as_bytes())?;
    Ok(path)
}

/// Reads an official `report.json`: its instance id and report.
pub fn read_instance_report(path: &Path) -> Result<(String, InstanceReport), ReportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let map: BTreeMap<String, InstanceReport> =
        serde_json::from_str(&text).map_err(|source| ReportError::Parse {
            path: path.to_path_buf(),
            source,
        })?;
    if map.len() != 1 {
        return Err(ReportError::Shape {
            path: path.to_path_buf(),
            found: map.len(),
        });
    }
    Ok(map.into_iter().next().expect("one entry checked above"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_json_is_byte_identical_to_python() {
        let r = InstanceReport {
            patch_is_none: false,
            patch_exists: true,
            patch_successfully_applied: true,
            resolved: false,
            tests_status: Some(TestsStatusReport {
                fail_to_pass: GroupReport {
                    success: vec![],
                    failure: vec!["t\u{e9}st \"q\"".into()],
                },
                ..Default::default()
            }),
        };
        // json.dumps({"x": {...}}, indent=4) in Python 3.11.
        let expected = "{\n    \"x\": {\n        \"patch_is_None\": false,\n        \"patch_exists\": true,\n        \"patch_successfully_applied\": true,\n        \"resolved\": false,\n        \"tests_status\": {\n            \"FAIL_TO_PASS\": {\n                \"success\": [],\n                \"failure\": [\n                    \"t\\u00e9st \\\"q\\\"\"\n                ]\n            },\n            \"PASS_TO_PASS\": {\n                \"success\": [],\n                \"failure\": []\n            },\n            \"FAIL_TO_FAIL\": {\n                \"success\": [],\n                \"failure\": []\n            },\n            \"PASS_TO_FAIL\": {\n                \"success\": [],\n                \"failure\": []\n            }\n        }\n    }\n}";
        assert_eq!(instance_report_json("x", &r), expected);
    }
}
