//! The official run summary `<model>.<run_id>.json` ([`RunSummary`], schema_version 2, plus
//! swe-eval's own fields).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::fsutil::{self};
use crate::grading::{Graded, Mode};

use super::error::ReportError;
use super::pyjson::to_python_json;

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
    pub verdict: Option<&'a Graded>,
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

/// Writes the run summary as the official harness does (indent 4, final newline).
pub fn write_run_summary(path: &Path, summary: &RunSummary) -> Result<(), ReportError> {
    let value = serde_json::to_value(summary).unwrap_or_default();
    let mut text = to_python_json(&value);
    text.push('\n');
    fsutil::write_atomic(path, text.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grading::{Category, ErrorReason, Graded, Mode, TestGroups};

    fn verdict(category: Category, official_report: bool) -> Graded {
        Graded {
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
        let error = |reason, official_report| Graded {
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
}
