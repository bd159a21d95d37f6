//! Wire formats: the official per-instance `report.json`, the official run summary
//! `<model>.<run_id>.json` (schema_version 2, plus swe-eval's own fields), and one row per
//! prediction (JSON Lines and CSV) for analyses. These are separate from the grading types so
//! the files keep the official shape whatever the domain types become; every writer is atomic.
//!
//! JSON is written as the official harness writes it (`json.dumps(..., indent=4)`: four-space
//! indent, non-ASCII escaped as `\uXXXX`), so a report is byte-identical to the official one.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fsutil::{self, WriteError};
use crate::grading::{Category, Group, Mode, TestGroups, Verdict};

pub mod html;
pub mod logs;
mod pyjson;
pub use pyjson::{to_python_json, to_python_json_indent};

/// File name of the per-instance report in the official layout.
pub const REPORT_FILE: &str = "report.json";
/// File name of the raw test log in the official layout.
pub const TEST_OUTPUT_FILE: &str = "test_output.txt";

/// A failed report read or write.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// An instance id or model name that cannot be a file name.
    #[error(transparent)]
    Name(#[from] crate::paths::UnsafeComponent),
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A file is not valid JSON of the expected shape.
    #[error("{path}: not an official report.json: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the JSON parser said.
        #[source]
        source: serde_json::Error,
    },
    /// A `report.json` without exactly one instance id key.
    #[error("{path}: expected one instance id key in report.json, found {found}")]
    Shape {
        /// The file.
        path: PathBuf,
        /// How many top-level keys it has.
        found: usize,
    },
    /// A CSV file could not be written.
    #[error("cannot write CSV {path}: {source}")]
    Csv {
        /// The file.
        path: PathBuf,
        /// What the CSV writer said.
        #[source]
        source: csv::Error,
    },
}

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
    pub fn from_verdict(verdict: &Verdict, mode: Mode) -> Option<InstanceReport> {
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

/// The official run summary `<model>.<run_id>.json` (schema_version 2), with swe-eval's
/// additions after the official fields. Official fields keep the official names and order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Instances in the dataset.
    pub total_instances: usize,
    /// Instances with a prediction.
    pub submitted_instances: usize,
    /// Instances with a `report.json` (tests ran and were graded).
    pub completed_instances: usize,
    /// Instances resolved.
    pub resolved_instances: usize,
    /// Instances graded and not resolved.
    pub unresolved_instances: usize,
    /// Instances whose patch was empty.
    pub empty_patch_instances: usize,
    /// Instances with a prediction but no report (apply failure, timeout, harness error).
    pub error_instances: usize,
    /// Ids of the completed instances, sorted.
    pub completed_ids: Vec<String>,
    /// Ids of the dataset's instances without a prediction, sorted.
    pub incomplete_ids: Vec<String>,
    /// Ids of the empty patches, sorted.
    pub empty_patch_ids: Vec<String>,
    /// Ids of the instances with a prediction, sorted.
    pub submitted_ids: Vec<String>,
    /// Ids of the resolved instances, sorted.
    pub resolved_ids: Vec<String>,
    /// Ids of the unresolved instances, sorted.
    pub unresolved_ids: Vec<String>,
    /// Ids of the errors, sorted.
    pub error_ids: Vec<String>,
    /// Always 2, the official schema this follows.
    pub schema_version: u32,
    /// Official leftovers check (containers of this run still present); only when checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unstopped_instances: Option<usize>,
    /// The containers of this run still present; only when checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unstopped_containers: Option<Vec<String>>,
    /// Images this run should have removed and did not; only when checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unremoved_images: Option<Vec<String>>,
    /// swe-eval: the grading mode that decided `resolved_*`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grading_mode: Option<Mode>,
    /// swe-eval: why each error happened (`patch_apply_failed`, `timeout`, ...), ids sorted.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_reasons: BTreeMap<String, Vec<String>>,
    /// swe-eval: how many graded instances strict mode would categorise differently.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict_flipped_instances: Option<usize>,
    /// swe-eval: which instances strict mode flips, sorted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict_flipped_ids: Option<Vec<String>>,
}

/// What the summary needs about one submitted prediction (one per instance id, as the
/// official harness keys predictions by id).
#[derive(Debug, Clone, Copy)]
pub struct Submitted<'a> {
    /// The prediction's instance.
    pub instance_id: &'a str,
    /// `model_patch` is null or `""` (officially exactly these are empty patches).
    pub empty_patch: bool,
    /// The verdict, when the prediction was graded; `None` counts as an error as officially
    /// (no report was written).
    pub verdict: Option<&'a Verdict>,
}

impl RunSummary {
    /// Builds the summary as the official `make_run_report` does: instances without a
    /// prediction are incomplete, empty patches are counted apart, an instance with an official
    /// report is completed (resolved or unresolved), any other is an error.
    pub fn build<'a>(
        dataset_ids: impl IntoIterator<Item = &'a str>,
        submitted: &[Submitted<'a>],
        mode: Mode,
    ) -> RunSummary {
        let by_id: HashMap<&str, &Submitted> =
            submitted.iter().map(|s| (s.instance_id, s)).collect();
        let mut s = RunSummary {
            schema_version: 2,
            grading_mode: Some(mode),
            ..RunSummary::default()
        };
        let mut sets: [BTreeSet<String>; 6] = Default::default();
        let [completed, incomplete, empty, resolved, unresolved, errors] = &mut sets;
        let mut flipped = BTreeSet::new();
        let mut reasons: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut total = 0;
        for id in dataset_ids {
            total += 1;
            let Some(sub) = by_id.get(id) else {
                incomplete.insert(id.to_string());
                continue;
            };
            if sub.empty_patch {
                empty.insert(id.to_string());
                continue;
            }
            match sub.verdict {
                Some(v) if v.official_report => {
                    completed.insert(id.to_string());
                    if v.category(mode).is_resolved() {
                        resolved.insert(id.to_string());
                    } else {
                        unresolved.insert(id.to_string());
                    }
                    if v.strict_flips() {
                        flipped.insert(id.to_string());
                    }
                }
                other => {
                    errors.insert(id.to_string());
                    let reason = other
                        .and_then(|v| v.error_reason)
                        .map_or("infra", |r| r.as_str());
                    reasons
                        .entry(reason.to_string())
                        .or_default()
                        .insert(id.to_string());
                }
            }
        }
        let sorted = |set: &BTreeSet<String>| set.iter().cloned().collect::<Vec<_>>();
        s.total_instances = total;
        s.submitted_ids = submitted
            .iter()
            .map(|x| x.instance_id.to_string())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        s.submitted_instances = s.submitted_ids.len();
        s.completed_ids = sorted(completed);
        s.incomplete_ids = sorted(incomplete);
        s.empty_patch_ids = sorted(empty);
        s.resolved_ids = sorted(resolved);
        s.unresolved_ids = sorted(unresolved);
        s.error_ids = sorted(errors);
        s.completed_instances = completed.len();
        s.resolved_instances = resolved.len();
        s.unresolved_instances = unresolved.len();
        s.empty_patch_instances = empty.len();
        s.error_instances = errors.len();
        s.error_reasons = reasons
            .into_iter()
            .map(|(k, v)| (k, v.into_iter().collect()))
            .collect();
        s.strict_flipped_instances = Some(flipped.len());
        s.strict_flipped_ids = Some(flipped.into_iter().collect());
        s
    }
}

/// The official summary file name: `<model with / as __>.<run_id>.json`.
pub fn summary_file_name(model: &str, run_id: &str) -> String {
    format!(
        "{}.{run_id}.json",
        crate::predictions::model_dir_name(model)
    )
}

/// Writes the run summary as the official harness does (indent 4, final newline).
pub fn write_run_summary(path: &Path, summary: &RunSummary) -> Result<(), ReportError> {
    let value = serde_json::to_value(summary).unwrap_or_default();
    let mut text = to_python_json(&value);
    text.push('\n');
    fsutil::write_atomic(path, text.as_bytes())?;
    Ok(())
}

/// One prediction's outcome, flat, for analyses: the per-prediction wire format (JSON Lines
/// and CSV), version [`crate::wire::GRADE_ROWS_VERSION`], described in docs/formats.md.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PredictionRow {
    /// The prediction's instance.
    pub instance_id: String,
    /// The prediction's model.
    pub model: String,
    /// The prediction's sample number (0, 1, ...).
    pub sample: u32,
    /// SHA-256 of the patch text.
    pub patch_hash: String,
    /// The category under the run's grading mode: resolved, unresolved, error, empty_patch.
    pub category: String,
    /// For errors: patch_apply_failed, timeout, no_test_output or infra.
    pub error_reason: Option<String>,
    /// `category` is `resolved`.
    pub resolved: bool,
    /// The grading mode of `category` and `resolved`.
    pub mode: String,
    /// The official category (equals `category` in official mode).
    pub official_category: String,
    /// The strict category (equals `category` in strict mode).
    pub strict_category: String,
    /// Strict findings, `;`-separated (`skipped_fail_to_pass;exit_code_disagrees`).
    pub strict_findings: String,
    /// Unresolved only because every failing required test failed with a network error.
    #[serde(default)]
    pub needs_network: bool,
    /// FAIL_TO_PASS tests that passed (none when no tests ran).
    pub fail_to_pass_success: Option<usize>,
    /// FAIL_TO_PASS tests that did not pass.
    pub fail_to_pass_failure: Option<usize>,
    /// PASS_TO_PASS tests that passed.
    pub pass_to_pass_success: Option<usize>,
    /// PASS_TO_PASS tests that did not pass.
    pub pass_to_pass_failure: Option<usize>,
    /// The test command's exit status, when known.
    pub exit_code: Option<i32>,
    /// Seconds spent applying the patch, running the eval script, and in total (with setup).
    pub apply_secs: Option<f64>,
    /// Seconds running the eval script.
    pub test_secs: Option<f64>,
    /// Seconds for the whole job.
    pub total_secs: Option<f64>,
    /// [`crate::wire::GRADE_ROWS_VERSION`]; rows written before the field are version 1.
    #[serde(default = "crate::wire::unversioned")]
    pub format_version: u32,
}

/// Per-phase timings the runner measured (all optional; grading from logs has none).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timings {
    /// Seconds applying the patch.
    pub apply_secs: Option<f64>,
    /// Seconds running the eval script.
    pub test_secs: Option<f64>,
    /// Seconds for the whole job, with setup.
    pub total_secs: Option<f64>,
}

impl PredictionRow {
    /// The row for one graded prediction.
    pub fn new(
        pred: &crate::predictions::Prediction,
        verdict: &Verdict,
        mode: Mode,
        timings: Timings,
    ) -> PredictionRow {
        let category: Category = verdict.category(mode);
        let groups = verdict.tests(mode);
        let count = |f: fn(&TestGroups) -> usize| groups.map(f);
        PredictionRow {
            instance_id: pred.instance_id.clone(),
            model: pred.model_name_or_path.clone(),
            sample: pred.sample,
            patch_hash: pred.patch_hash(),
            category: category.as_str().to_string(),
            error_reason: verdict.error_reason.map(|r| r.as_str().to_string()),
            resolved: category.is_resolved(),
            mode: match mode {
                Mode::Official => "official".into(),
                Mode::Strict => "strict".into(),
            },
            official_category: verdict.category.as_str().to_string(),
            strict_category: verdict.strict_category.as_str().to_string(),
            strict_findings: verdict
                .strict_findings
                .iter()
                .map(|f| f.as_str())
                .collect::<Vec<_>>()
                .join(";"),
            needs_network: verdict.needs_network.is_some(),
            fail_to_pass_success: count(|g| g.fail_to_pass.success.len()),
            fail_to_pass_failure: count(|g| g.fail_to_pass.failure.len()),
            pass_to_pass_success: count(|g| g.pass_to_pass.success.len()),
            pass_to_pass_failure: count(|g| g.pass_to_pass.failure.len()),
            exit_code: verdict.exit_code,
            apply_secs: timings.apply_secs,
            test_secs: timings.test_secs,
            total_secs: timings.total_secs,
            format_version: crate::wire::GRADE_ROWS_VERSION,
        }
    }
}

/// Writes rows as JSON Lines, atomically.
pub fn write_rows_jsonl(path: &Path, rows: &[PredictionRow]) -> Result<(), ReportError> {
    let mut out = Vec::new();
    for row in rows {
        serde_json::to_writer(&mut out, row).map_err(|e| WriteError {
            path: path.to_path_buf(),
            step: "serialize",
            source: std::io::Error::other(e),
        })?;
        out.push(b'\n');
    }
    fsutil::write_atomic(path, &out)?;
    Ok(())
}

/// Writes rows as CSV with a header, atomically.
pub fn write_rows_csv(path: &Path, rows: &[PredictionRow]) -> Result<(), ReportError> {
    let csv_err = |source| ReportError::Csv {
        path: path.to_path_buf(),
        source,
    };
    let mut w = csv::Writer::from_writer(Vec::new());
    for row in rows {
        w.serialize(row).map_err(csv_err)?;
    }
    let bytes = w.into_inner().map_err(|e| csv_err(e.into_error().into()))?;
    fsutil::write_atomic(path, &bytes)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grading::ErrorReason;

    fn verdict(category: Category, official_report: bool) -> Verdict {
        Verdict {
            category,
            error_reason: None,
            tests: official_report.then(TestGroups::default),
            official_report,
            patch_applied: official_report,
            strict_category: category,
            strict_tests: None,
            strict_findings: vec![],
            exit_code: None,
            needs_network: None,
        }
    }

    #[test]
    fn summary_counts_as_official() {
        let resolved = verdict(Category::Resolved, true);
        let unresolved = verdict(Category::Unresolved, true);
        let error = |reason, official_report| Verdict {
            error_reason: Some(reason),
            ..verdict(Category::of_error(reason), official_report)
        };
        let rejected = error(ErrorReason::NoTestOutput, true);
        let timeout = error(ErrorReason::Timeout, false);
        let sub = [
            Submitted {
                instance_id: "a",
                empty_patch: false,
                verdict: Some(&resolved),
            },
            Submitted {
                instance_id: "b",
                empty_patch: false,
                verdict: Some(&unresolved),
            },
            Submitted {
                instance_id: "c",
                empty_patch: true,
                verdict: None,
            },
            Submitted {
                instance_id: "d",
                empty_patch: false,
                verdict: Some(&timeout),
            },
            Submitted {
                instance_id: "e",
                empty_patch: false,
                verdict: None,
            },
            Submitted {
                instance_id: "g",
                empty_patch: false,
                verdict: Some(&rejected),
            },
        ];
        let s = RunSummary::build(["a", "b", "c", "d", "e", "f", "g"], &sub, Mode::Official);
        assert_eq!(s.total_instances, 7);
        assert_eq!(s.submitted_instances, 6);
        assert_eq!(s.resolved_ids, ["a"]);
        assert_eq!(
            s.unresolved_ids,
            ["b", "g"],
            "a rejected log still has an official report"
        );
        assert_eq!(s.completed_ids, ["a", "b", "g"]);
        assert_eq!(s.empty_patch_ids, ["c"]);
        assert_eq!(s.error_ids, ["d", "e"]);
        assert_eq!(s.incomplete_ids, ["f"]);
        assert_eq!(s.error_reasons["timeout"], ["d"]);
        assert_eq!(s.schema_version, 2);
    }

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

    #[test]
    fn rows_round_trip_through_jsonl_and_csv() {
        let dir = tempfile::tempdir().unwrap();
        let row = PredictionRow {
            instance_id: "a".into(),
            category: "resolved".into(),
            resolved: true,
            ..Default::default()
        };
        write_rows_jsonl(&dir.path().join("r.jsonl"), std::slice::from_ref(&row)).unwrap();
        let back: PredictionRow = serde_json::from_str(
            std::fs::read_to_string(dir.path().join("r.jsonl"))
                .unwrap()
                .trim(),
        )
        .unwrap();
        assert_eq!(back, row);
        write_rows_csv(&dir.path().join("r.csv"), &[row]).unwrap();
        let text = std::fs::read_to_string(dir.path().join("r.csv")).unwrap();
        assert!(text.starts_with("instance_id,model,sample,"), "{text}");
    }
}
