//! Checking a finished package ([`verify`]): its `results/` computed again from its own logs,
//! every number that differs named; every `patch.diff` held against what its
//! `test_output.txt` shows ran (and at the dataset's base commit), every `eval.sh` against the
//! eval script rendered for the dataset row.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use swe_eval_core::dataset::{Dataset, Instance};
use swe_eval_core::report::{self, Basis, Check};
use swe_eval_core::spec::{Flavour, TestSpec};

use super::error::SubmitError;
use super::layout::{
    EVAL_SCRIPT_FILE, KEPT_BY_SCRIPT, METADATA_FILE, PREDS_FILE, README_FILE, TRAJS_DIR,
};
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
    /// `run_instance.log`), relative to the package: named, not vouched for.
    pub unchecked: Vec<String>,
    /// How each `patch.diff` was held against its `test_output.txt`.
    pub ran: Ran,
}

/// How the package's patches and eval scripts were held against its logs and the dataset.
#[derive(Debug, Default)]
pub struct Ran {
    /// Patches whose test output shows them line by line.
    pub by_lines: usize,
    /// Patches whose test output shows their files (its diffs could not be read whole).
    pub by_files: usize,
    /// Patches whose test output does not show which patch ran, and why.
    pub unknown: Vec<String>,
    /// Test outputs whose `git diff <commit>` names the dataset row's base commit.
    pub base_commits: usize,
    /// `eval.sh` files equal to the eval script rendered for the dataset row.
    pub eval_scripts: usize,
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

    let ran = check_ran(ds, &logs, &mut mismatches);

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
        ran,
    })
}

/// Holds every instance's `patch.diff` against what its `test_output.txt` shows ran
/// (`report::check_output`) and at which commit (the dataset row's base commit), and every
/// `eval.sh` against the eval script rendered for the dataset row; each difference is a
/// mismatch.
fn check_ran(ds: &Dataset, logs: &Path, mismatches: &mut Vec<String>) -> Ran {
    let mut ran = Ran::default();
    for inst in &ds.instances {
        let id = &inst.instance_id;
        let dir = logs.join(id);
        let (patch, output) = (dir.join(PATCH_FILE), dir.join(report::TEST_OUTPUT_FILE));
        if patch.is_file() && output.is_file() {
            let read = results::read_text(&patch)
                .and_then(|p| Ok((p, results::read_test_output(&output)?)));
            let (patch, output) = match read {
                Ok(both) => both,
                Err(e) => {
                    mismatches.push(e.to_string());
                    continue;
                }
            };
            match report::check_output(&output, &patch) {
                Check::Same(Basis::Files) => ran.by_files += 1,
                Check::Same(_) => ran.by_lines += 1,
                Check::Differs(why) => mismatches.push(format!(
                    "{LOGS_DIR}/{id}/{PATCH_FILE} is not the patch its {} ran: {why}",
                    report::TEST_OUTPUT_FILE
                )),
                Check::Unknown(why) => ran.unknown.push(format!("{LOGS_DIR}/{id}: {why}")),
            }
            match report::diff_base(&output) {
                Some(b) if inst.base_commit.starts_with(b) => ran.base_commits += 1,
                Some(b) => mismatches.push(format!(
                    "{LOGS_DIR}/{id}/{}: its tests ran on commit {b}, the dataset's base commit \
                     of {id} is {}",
                    report::TEST_OUTPUT_FILE,
                    inst.base_commit
                )),
                None => {}
            }
        }
        let script = dir.join(EVAL_SCRIPT_FILE);
        if script.is_file() {
            match results::read_text(&script).map(|held| eval_script_of(inst, &held)) {
                Ok(Ok(())) => ran.eval_scripts += 1,
                Ok(Err(why)) => {
                    mismatches.push(format!("{LOGS_DIR}/{id}/{EVAL_SCRIPT_FILE}: {why}"))
                }
                Err(e) => mismatches.push(e.to_string()),
            }
        }
    }
    ran
}

/// How a held `eval.sh` differs from every eval script swe-eval renders for its instance.
#[derive(Debug, thiserror::Error)]
enum ScriptMismatch {
    /// The dataset row yields no eval script at all.
    #[error("no eval script can be rendered for {instance_id} from the dataset row")]
    NoneRendered {
        /// The instance.
        instance_id: String,
    },
    /// It differs from the nearest script from a line on.
    #[error(
        "not an eval script rendered for {instance_id} from its dataset row (the official \
         flavour's, the Debian flavour's, or the row's own): line {line} is {held}, the {label} \
         script's is {rendered}"
    )]
    Differs {
        /// The instance.
        instance_id: String,
        /// The first line that differs, 1-based.
        line: usize,
        /// That line of the held script (quoted, cut to 80 characters), or `(end)`.
        held: String,
        /// Which rendering is the nearest.
        label: &'static str,
        /// Its line there.
        rendered: String,
    },
}

/// Whether `held` is an eval script swe-eval renders for `inst` (the official flavour's, which
/// is the official harness's byte for byte, the Debian flavour's, or the row's own), else
/// where it first differs from the nearest.
fn eval_script_of(inst: &Instance, held: &str) -> Result<(), ScriptMismatch> {
    let mut rendered: Vec<(&str, String)> = Vec::new();
    for (label, flavour) in [("official", Flavour::Official), ("debian", Flavour::Debian)] {
        if let Ok(spec) = TestSpec::new(inst, flavour) {
            rendered.push((label, spec.eval_script));
        }
    }
    if let Some(own) = &inst.eval_script {
        rendered.push(("the row's own", own.clone()));
    }
    if rendered.iter().any(|(_, s)| s == held) {
        return Ok(());
    }
    let common = |s: &str| {
        s.lines()
            .zip(held.lines())
            .take_while(|(a, b)| a == b)
            .count()
    };
    let Some((label, nearest)) = rendered.iter().max_by_key(|(_, s)| common(s)) else {
        return Err(ScriptMismatch::NoneRendered {
            instance_id: inst.instance_id.clone(),
        });
    };
    let at = common(nearest);
    let line = |s: &str| {
        s.lines().nth(at).map_or_else(
            || "(end)".to_string(),
            |l| format!("{:?}", l.chars().take(80).collect::<String>()),
        )
    };
    Err(ScriptMismatch::Differs {
        instance_id: inst.instance_id.clone(),
        line: at + 1,
        held: line(held),
        label,
        rendered: line(nearest),
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
            if ![
                PATCH_FILE,
                report::REPORT_FILE,
                report::TEST_OUTPUT_FILE,
                EVAL_SCRIPT_FILE,
            ]
            .contains(&name.as_str())
            {
                unchecked.push(format!("{LOGS_DIR}/{id}/{name}"));
            }
        }
    }
    // trajs/: one trace per predicted instance, each naming one.
    let ids: Vec<String> = predicted.iter().cloned().collect();
    let mut traced = BTreeSet::new();
    for (name, _) in entries(&dir.join(TRAJS_DIR)) {
        match super::layout::id_in_name(&name, &ids) {
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
