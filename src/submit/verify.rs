//! Checking a finished package ([`verify`]): its `results/` computed again from its own logs,
//! every number that differs named.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use swe_eval_core::dataset::Dataset;
use swe_eval_core::report::{self};

use super::error::SubmitError;
use super::layout::{KEPT_BY_SCRIPT, METADATA_FILE, PREDS_FILE, README_FILE, TRAJS_DIR};
use super::results;
use super::results::Results;
use super::results::{LOGS_DIR, PATCH_FILE};
use super::warning::{warn, Warning};

/// What [`verify`] found.
#[derive(Debug)]
pub struct Verification {
    /// The package graded again from its own logs.
    pub results: Results,
    /// Every number, id or file that disagrees with that grading (the package fails).
    pub mismatches: Vec<String>,
    /// Checklist requirements not met (the package still verifies).
    pub warnings: Vec<Warning>,
    /// Files the layout requires that the package lacks (README.md, metadata.yaml, a trace in
    /// trajs/ per predicted instance): the package is not complete.
    pub missing: Vec<String>,
    /// Files the package holds that no check reads (a run's own records under logs/, such as
    /// `run_instance.log` or `eval.sh`), relative to the package: named, not vouched for.
    pub unchecked: Vec<String>,
}

/// Grades the package in `dir` again from its own `logs/` and checks `results/`, every
/// `report.json`, `all_preds.jsonl` and the README's summary line against that grading.
pub fn verify(ds: &Dataset, dir: &Path) -> Result<Verification, SubmitError> {
    if !dir.is_dir() {
        return Err(SubmitError::Usage(format!(
            "{} is not a submission folder",
            dir.display()
        )));
    }
    let results = results::regrade(ds, dir)?;
    let mut mismatches = results::compare_files(dir, &results);
    for u in &results.ungradable {
        mismatches.push(format!("cannot grade: {u}"));
    }
    let mut warnings = Vec::new();
    let resolved: BTreeSet<&str> = results.resolved.iter().map(String::as_str).collect();

    // Each report.json against its own logs.
    let logs = dir.join(LOGS_DIR);
    for inst in &ds.instances {
        let path = logs.join(&inst.instance_id).join(report::REPORT_FILE);
        if !path.is_file() {
            continue;
        }
        match report::read_instance_report(&path) {
            Ok((id, r)) => {
                let graded = resolved.contains(inst.instance_id.as_str());
                if id != inst.instance_id {
                    mismatches.push(format!(
                        "{LOGS_DIR}/{}/report.json is keyed by {id}",
                        inst.instance_id
                    ));
                } else if r.resolved != graded {
                    mismatches.push(format!(
                        "{LOGS_DIR}/{}/report.json says resolved: {}, its test_output.txt grades {}",
                        inst.instance_id,
                        r.resolved,
                        if graded { "resolved" } else { "unresolved" }
                    ));
                }
            }
            Err(e) => mismatches.push(e.to_string()),
        }
    }

    // all_preds.jsonl against the patches in logs/.
    let mut predicted: BTreeSet<String> = BTreeSet::new();
    let preds_path = dir.join(PREDS_FILE);
    match std::fs::read_to_string(&preds_path) {
        Err(e) => mismatches.push(format!("{PREDS_FILE}: cannot read: {e}")),
        Ok(text) => {
            let mut seen: HashMap<String, usize> = HashMap::new();
            for (i, line) in text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                let at = format!("{PREDS_FILE} line {}", i + 1);
                let Ok(row) = serde_json::from_str::<serde_json::Value>(line) else {
                    mismatches.push(format!("{at}: not a JSON object"));
                    continue;
                };
                let Some(id) = row.get("instance_id").and_then(|v| v.as_str()) else {
                    mismatches.push(format!("{at}: field instance_id missing"));
                    continue;
                };
                predicted.insert(id.to_string());
                if let Some(first) = seen.insert(id.to_string(), i + 1) {
                    warn(
                        &mut warnings,
                        "pass@1",
                        format!("{at}: {id} was already predicted on line {first}"),
                    );
                }
                let patch = row
                    .get("model_patch")
                    .and_then(|v| v.as_str())
                    .unwrap_or("");
                let diff = logs.join(id).join(PATCH_FILE);
                if diff.is_file() {
                    match results::read_text(&diff) {
                        Ok(d) if d == patch => {}
                        Ok(_) => mismatches.push(format!(
                            "{at}: model_patch of {id} differs from {LOGS_DIR}/{id}/{PATCH_FILE}"
                        )),
                        Err(e) => mismatches.push(e.to_string()),
                    }
                } else if !patch.trim().is_empty() {
                    mismatches.push(format!(
                        "{at}: {id} has a patch but {LOGS_DIR}/{id}/{PATCH_FILE} is missing"
                    ));
                }
            }
        }
    }

    // The summary line of the README.
    if let Ok(readme) = std::fs::read_to_string(dir.join(README_FILE)) {
        let want = format!(
            "Resolved {} instances ({}%)",
            results.resolved.len(),
            results.rate()
        );
        match readme
            .lines()
            .find(|l| l.starts_with("Resolved ") && l.contains(" instances ("))
        {
            Some(line) if line.trim() == want => {}
            Some(line) => mismatches.push(format!(
                "{README_FILE}: says \"{}\", the package's logs give \"{want}\"",
                line.trim()
            )),
            None => warn(
                &mut warnings,
                "README",
                "README.md should carry the analysis summary (\"Resolved N instances (R%)\")",
            ),
        }
    }
    let mut missing = Vec::new();
    let mut unchecked = Vec::new();
    inventory(
        dir,
        ds,
        &predicted,
        &mut mismatches,
        &mut missing,
        &mut unchecked,
    );
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if !KEPT_BY_SCRIPT.contains(&n.as_str()) {
                warn(
                    &mut warnings,
                    "layout",
                    format!("{n} is not part of a submission; the analysis script deletes it"),
                );
            }
        }
    }
    Ok(Verification {
        results,
        mismatches,
        warnings,
        missing,
        unchecked,
    })
}

/// The files the layout requires and the files the package holds, beyond what [`verify`]
/// reads itself: each required file present (else `missing`), each held file one a check
/// reads or one the layout allows (else a mismatch), and the run's own records named in
/// `unchecked`.
fn inventory(
    dir: &Path,
    ds: &Dataset,
    predicted: &BTreeSet<String>,
    mismatches: &mut Vec<String>,
    missing: &mut Vec<String>,
    unchecked: &mut Vec<String>,
) {
    let entries = |d: &Path| -> Vec<(String, std::path::PathBuf)> {
        let mut v: Vec<_> = std::fs::read_dir(d)
            .map(|rd| {
                rd.flatten()
                    .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    // README.md and metadata.yaml: required; metadata names the system.
    if !dir.join(README_FILE).is_file() {
        missing.push(README_FILE.to_string());
    }
    match std::fs::read_to_string(dir.join(METADATA_FILE)) {
        Err(_) => missing.push(METADATA_FILE.to_string()),
        Ok(y) => {
            let named = y.lines().any(|l| l.trim_end() == "info:")
                && y.lines()
                    .any(|l| l.starts_with("  name:") && l.len() > "  name:".len());
            if !named {
                mismatches.push(format!("{METADATA_FILE}: no `info:` with a `name:`"));
            }
        }
    }
    // results/: the analysis' three files and nothing else (each compared above).
    let kept = [
        results::RESULTS_FILE,
        results::BY_REPO_FILE,
        results::BY_TIME_FILE,
    ];
    for (name, _) in entries(&dir.join(results::RESULTS_DIR)) {
        if !kept.contains(&name.as_str()) {
            mismatches.push(format!(
                "{}/{name}: not a file the analysis writes",
                results::RESULTS_DIR
            ));
        }
    }
    // logs/<id>/: instances of the dataset with a prediction; patch.diff, report.json and
    // test_output.txt are read above, anything else is the run's own record.
    let known: BTreeSet<&str> = ds
        .instances
        .iter()
        .map(|i| i.instance_id.as_str())
        .collect();
    for (id, path) in entries(&dir.join(LOGS_DIR)) {
        if !known.contains(id.as_str()) {
            mismatches.push(format!("{LOGS_DIR}/{id}: not an instance of the dataset"));
            continue;
        }
        if !predicted.contains(&id) {
            mismatches.push(format!("{LOGS_DIR}/{id}: no prediction in {PREDS_FILE}"));
        }
        for (name, _) in entries(&path) {
            if ![PATCH_FILE, report::REPORT_FILE, report::TEST_OUTPUT_FILE].contains(&name.as_str())
            {
                unchecked.push(format!("{LOGS_DIR}/{id}/{name}"));
            }
        }
    }
    // trajs/: one trace per predicted instance, each naming one.
    let ids: Vec<String> = predicted.iter().cloned().collect();
    let mut traced = BTreeSet::new();
    for (name, _) in entries(&dir.join(TRAJS_DIR)) {
        match super::package::id_in_name(&name, &ids) {
            Some(id) => {
                traced.insert(id.clone());
            }
            None => mismatches.push(format!("{TRAJS_DIR}/{name}: names no predicted instance")),
        }
    }
    for id in ids.iter().filter(|id| !traced.contains(*id)) {
        missing.push(format!("{TRAJS_DIR}/ trace of {id}"));
    }
}
