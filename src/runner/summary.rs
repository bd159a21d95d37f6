//! The run's closing files: the official run summary per model and sample, and the
//! per-prediction JSONL and CSV. All are rebuilt from the verdicts at the end of every run
//! (resumed verdicts included), so a run killed midway and resumed still ends with complete,
//! duplicate-free files.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::store::{Category, Layout, Verdict, VerdictFile};
use super::Key;
use swe_eval_core::dataset::Dataset;
use swe_eval_core::fsutil::write_atomic;
use swe_eval_core::grading::{self, ErrorReason, Mode};
use swe_eval_core::predictions::Prediction;
use swe_eval_core::report::{self, ReportError, RunSummary, Submitted};

/// The grading module's view of a stored verdict, enough for the run summary (the test lists
/// are not kept in memory; they are in each prediction's `report.json`).
fn to_grading(v: &Verdict) -> grading::Graded {
    // A stored error always says why; one from an older format without a reason is counted
    // as the official harness counts a log it cannot read.
    let error_reason = match v.category {
        Category::Error => Some(v.error_reason.unwrap_or(ErrorReason::NoTestOutput)),
        Category::InfraError => Some(ErrorReason::Infra),
        _ => None,
    };
    grading::Graded {
        category: v.category,
        error_reason,
        tests: None,
        official_report: v.official_report,
        patch_applied: v.applied_with.is_some(),
        strict_category: v.strict_category,
        strict_tests: None,
        strict_findings: Vec::new(),
        exit_code: v.test_exit_code,
        needs_network: None,
    }
}

/// What a run's closing files are made of besides its verdicts.
#[derive(Debug, Clone, Copy)]
pub struct RunInputs<'a> {
    /// The dataset (each prediction's instance: its repository and gold patch).
    pub dataset: &'a Dataset,
    /// The run's predictions (those of instances the dataset lacks are left out).
    pub predictions: &'a [Prediction],
    /// The instances the run covers, for the summaries' totals and `incomplete_ids`.
    pub instance_ids: &'a [String],
}

/// Writes every summary, the JSONL and the CSV; returns their paths.
pub fn write_all(
    layout: &Layout,
    plan: RunInputs<'_>,
    verdicts: &BTreeMap<Key, Verdict>,
    mode: Mode,
    leftovers: &[String],
) -> Result<Vec<PathBuf>, ReportError> {
    // Per model and sample: each submitted instance with its verdict. A prediction left
    // without a verdict (an interrupted run) is left out, so it counts as incomplete rather
    // than as an error of the model.
    // (model, sample) -> (instance id, empty patch, verdict) of each submitted prediction.
    type Submissions<'a> = BTreeMap<(&'a str, u32), Vec<(&'a str, bool, Option<grading::Graded>)>>;
    let mut submitted: Submissions = BTreeMap::new();
    for p in plan.predictions {
        if plan.dataset.get(&p.instance_id).is_none() {
            continue;
        }
        let key = (
            p.model_name_or_path.clone(),
            p.sample,
            p.instance_id.clone(),
        );
        let v = verdicts.get(&key).map(to_grading);
        let subs = submitted
            .entry((&p.model_name_or_path, p.sample))
            .or_default();
        if v.is_some() || p.is_empty_patch() {
            subs.push((&p.instance_id, p.is_empty_patch(), v));
        }
    }
    let mut files = Vec::new();
    for ((model, sample), subs) in &submitted {
        let subs: Vec<Submitted> = subs
            .iter()
            .map(|(id, empty, v)| Submitted {
                instance_id: id,
                empty_patch: *empty,
                verdict: v.as_ref(),
            })
            .collect();
        let mut summary =
            RunSummary::build(plan.instance_ids.iter().map(String::as_str), &subs, mode);
        summary.unstopped_instances = Some(leftovers.len());
        summary.unstopped_containers = Some(leftovers.to_vec());
        summary.unremoved_images = Some(Vec::new());
        let path = layout.summary_path(model, *sample);
        report::write_run_summary(&path, &summary)?;
        files.push(path);
    }

    let mut jsonl = Vec::new();
    for v in verdicts.values() {
        // A Verdict is plain data: serializing it cannot fail.
        if let Ok(line) = serde_json::to_vec(&VerdictFile::new(v)) {
            jsonl.extend_from_slice(&line);
            jsonl.push(b'\n');
        }
    }
    write_atomic(&layout.jsonl_path(), &jsonl)?;
    files.push(layout.jsonl_path());

    // The verdict's fields, then the format's version.
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    let csv_err = |source| ReportError::Csv {
        path: layout.csv_path(),
        source,
    };
    w.write_record(CSV_HEADER.iter().chain([&swe_eval_core::wire::FIELD]))
        .map_err(csv_err)?;
    for v in verdicts.values() {
        w.write_record(csv_row(v)).map_err(csv_err)?;
    }
    let bytes = w.into_inner().map_err(|e| csv_err(e.into_error().into()))?;
    write_atomic(&layout.csv_path(), &bytes)?;
    files.push(layout.csv_path());
    files.push(write_report_html(layout, plan, verdicts, mode)?);
    Ok(files)
}

/// The run's browsable page, `<output>/<run_id>.report.html` (see `report::html`): every
/// verdict with its patch, failing tests, eval script and log tail from its log folder, and
/// the similarity of its patch to the gold patch.
pub fn write_report_html(
    layout: &Layout,
    plan: RunInputs<'_>,
    verdicts: &BTreeMap<Key, Verdict>,
    mode: Mode,
) -> Result<PathBuf, ReportError> {
    use swe_eval_core::report::{self, Heading, Record, Text};
    let patches: std::collections::HashMap<Key, &str> = plan
        .predictions
        .iter()
        .map(|p| {
            let key = (
                p.model_name_or_path.clone(),
                p.sample,
                p.instance_id.clone(),
            );
            (key, p.patch())
        })
        .collect();
    let records: Vec<Record> = verdicts
        .iter()
        .map(|(key, v)| {
            let inst = plan.dataset.get(&v.instance_id);
            let parser = inst.map(|i| {
                i.log_parser
                    .as_deref()
                    .unwrap_or_else(|| swe_eval_core::logparse::parser_for_repo(&i.repo))
            });
            let dir = layout.prediction_dir(&v.model, &v.instance_id, v.sample);
            let file = |name: &str| {
                let p = dir.join(name);
                p.is_file().then_some(Text::File(p))
            };
            let log = std::fs::read_to_string(dir.join(report::TEST_OUTPUT_FILE)).ok();
            let failing = report::read_instance_report(&dir.join(report::REPORT_FILE))
                .map(|(_, r)| report::failing_tests(&r, log.as_deref(), parser))
                .unwrap_or_default();
            let similarity = match (inst, patches.get(key)) {
                (Some(i), Some(pred)) if !pred.trim().is_empty() => {
                    Some(swe_eval_core::reward::unidiff_reward(&i.patch, pred).similarity)
                }
                _ => None,
            };
            let graded = v.official_report;
            Record {
                instance_id: v.instance_id.clone(),
                repo: inst.map(|i| i.repo.clone()).unwrap_or_default(),
                model: v.model.clone(),
                sample: v.sample,
                verdict: v.category.as_str().to_string(),
                reason: v
                    .error_reason
                    .map(|r| r.as_str().to_string())
                    .or_else(|| v.reason.clone()),
                strict_verdict: v.strict_category.as_str().to_string(),
                fail_to_pass: graded.then_some((v.fail_to_pass_success, v.fail_to_pass_failure)),
                pass_to_pass: graded.then_some((v.pass_to_pass_success, v.pass_to_pass_failure)),
                similarity,
                duration_secs: Some(v.total_secs),
                patch: file("patch.diff"),
                eval_script: file("eval.sh"),
                test_log: log.map(|l| {
                    Text::Inline(report::log_tail(
                        &l,
                        report::LOG_TAIL_LINES,
                        report::MAX_LOG_TAIL,
                    ))
                }),
                failing_tests: failing,
            }
        })
        .collect();
    let path = layout.output.join(format!("{}.report.html", layout.run_id));
    let heading = Heading {
        title: format!("swe-eval run {}", layout.run_id),
        notes: vec![
            format!("{} predictions", records.len()),
            format!(
                "summaries graded in {} mode",
                if mode == Mode::Strict {
                    "strict"
                } else {
                    "official"
                }
            ),
            format!("logs in {}", layout.run_dir().display()),
        ],
    };
    report::write_html(&path, &heading, &records)?;
    Ok(path)
}

/// The CSV's header: the fields of `Verdict` (a test holds them equal), then `format_version`.
const CSV_HEADER: &[&str] = &[
    "instance_id",
    "model",
    "sample",
    "patch_hash",
    "run_id",
    "category",
    "resolved",
    "strict_category",
    "strict_resolved",
    "official_report",
    "applied_with",
    "fail_to_pass_success",
    "fail_to_pass_failure",
    "pass_to_pass_success",
    "pass_to_pass_failure",
    "test_exit_code",
    "timed_out",
    "error_reason",
    "reason",
    "needs_network",
    "infra_retries",
    "setup_secs",
    "run_secs",
    "teardown_secs",
    "total_secs",
    "apply_secs",
    "before_tests_secs",
    "tests_secs",
    "after_tests_secs",
    "shared_from",
    "timeout_secs",
    "oom_killed",
    "memory_bytes",
];

/// A verdict's CSV row: each field of [`CSV_HEADER`] (every field of the verdict but its
/// `identity`, whose hashes are in `verdict.json` and the JSON Lines), then the format's
/// version. Absent fields are empty cells; numbers as JSON writes them.
fn csv_row(v: &Verdict) -> Vec<String> {
    let value = serde_json::to_value(v).unwrap_or_default();
    let cell = |x: Option<&serde_json::Value>| match x {
        None | Some(serde_json::Value::Null) => String::new(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    CSV_HEADER
        .iter()
        .map(|k| cell(value.get(*k)))
        .chain([swe_eval_core::wire::VERDICT_VERSION.to_string()])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_header_is_the_verdict_fields_in_order() {
        let v: Verdict = serde_json::from_value(serde_json::json!({
            "instance_id": "a", "model": "m", "sample": 0, "patch_hash": "h", "run_id": "r",
            "category": "error", "resolved": false, "strict_category": "error",
            "strict_resolved": false, "official_report": false, "applied_with": null,
            "fail_to_pass_success": 0, "fail_to_pass_failure": 0, "pass_to_pass_success": 0,
            "pass_to_pass_failure": 0, "test_exit_code": null, "timed_out": true,
            "error_reason": "timeout", "reason": "timed out", "needs_network": false,
            "infra_retries": 0,
            "setup_secs": 0.0, "run_secs": 0.0, "teardown_secs": 0.0, "total_secs": 0.0,
            "shared_from": null
        }))
        .unwrap();
        let value = serde_json::to_value(&v).unwrap();
        let keys: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .filter(|k| *k != "identity")
            .collect();
        assert_eq!(keys, CSV_HEADER);
        // A row has one cell per column, the version last.
        let mut w = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(Vec::new());
        w.write_record(csv_row(&v)).unwrap();
        let row = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert_eq!(
            row.trim_end().split(',').count(),
            CSV_HEADER.len() + 1,
            "{row}"
        );
        assert!(
            row.contains(",timeout,timed out,false,") && row.trim_end().ends_with(",1"),
            "{row}"
        );
    }
}
