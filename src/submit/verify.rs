//! Checking a finished package ([`verify`]): its `results/` computed again from its own logs,
//! every number that differs named.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use crate::dataset::Dataset;
use crate::report::{self};

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
    } else {
        warn(&mut warnings, "README", "README.md is missing");
    }
    if !dir.join(METADATA_FILE).is_file() {
        warn(&mut warnings, "metadata", "metadata.yaml is missing");
    }
    if !dir.join(TRAJS_DIR).is_dir() {
        warn(
            &mut warnings,
            "reasoning traces",
            "trajs/ is missing: one reasoning trace per task instance is required",
        );
    }
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
    })
}
