//! One row per prediction ([`PredictionRow`]) for analyses, as JSON Lines and CSV.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::fsutil::{self, WriteError};
use crate::grading::{Category, Graded, Mode, TestGroups};

use super::error::ReportError;

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
        verdict: &Graded,
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
            needs_network: verdict
                .needs_network
                .as_ref()
                .is_some_and(crate::grading::NetworkEvidence::explains_all),
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
