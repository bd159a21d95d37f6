//! The mini benchmark's check: a run's verdicts held against the ones the benchmark
//! expects (`datasets/mini/expected.json`, embedded in `swe_eval_core::mini`).

use std::collections::HashSet;
use std::path::PathBuf;

use crate::runner::RunReport;

/// Why the verdicts could not be compared.
#[derive(Debug, thiserror::Error)]
pub enum MiniCheckError {
    /// The run's files hold no per-prediction JSON Lines.
    #[error("the run wrote no per-prediction JSONL")]
    NoJsonl,
    /// The per-prediction file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A row of the per-prediction file is not a verdict.
    #[error("{}: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// What the JSON parser said.
        #[source]
        source: serde_json::Error,
    },
    /// The embedded expected verdicts do not parse (a build defect).
    #[error("embedded expected.json: {0}")]
    Expected(#[source] serde_json::Error),
}

/// The mini benchmark's verdicts against `datasets/mini/expected.json`.
pub struct MiniCheck {
    /// One line: how many verdicts were as expected.
    pub summary: String,
    /// One line per verdict that differs.
    pub mismatches: Vec<String>,
}

/// Reads the run's per-prediction JSONL back and compares each verdict (official and strict,
/// with the error kind) with the one the benchmark expects. Predictions the run did not cover
/// (`--instance-ids`) and predictions not in `bundled` (a user's own patches on the mini tasks,
/// see [`swe_eval_core::mini::bundled_keys`]) are left out of the count. A `--strict` run is held to the
/// strict verdicts.
pub fn check_mini(
    report: &RunReport,
    strict: bool,
    bundled: &HashSet<(String, String, u32)>,
) -> Result<MiniCheck, MiniCheckError> {
    let jsonl = report
        .files
        .iter()
        .find(|f| f.extension().is_some_and(|e| e == "jsonl"))
        .ok_or(MiniCheckError::NoJsonl)?;
    let text = std::fs::read_to_string(jsonl).map_err(|source| MiniCheckError::Read {
        path: jsonl.clone(),
        source,
    })?;
    let mut got = std::collections::HashMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let row: serde_json::Value =
            serde_json::from_str(line).map_err(|source| MiniCheckError::Json {
                path: jsonl.clone(),
                source,
            })?;
        let key = (
            row["instance_id"].as_str().unwrap_or_default().to_string(),
            row["model"].as_str().unwrap_or_default().to_string(),
            row["sample"].as_u64().unwrap_or(u64::MAX),
        );
        got.insert(key, row);
    }
    let expected: Vec<serde_json::Value> =
        serde_json::from_str(swe_eval_core::mini::EXPECTED).map_err(MiniCheckError::Expected)?;
    let (mut checked, mut mismatches) = (0, Vec::new());
    for e in &expected {
        let key = (
            e["instance_id"].as_str().unwrap_or_default().to_string(),
            e["model_name_or_path"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            e["sample"].as_u64().unwrap_or(u64::MAX),
        );
        let sample = u32::try_from(key.2).unwrap_or(u32::MAX);
        let bundled_key = (key.0.clone(), key.1.clone(), sample);
        if !bundled.contains(&bundled_key) {
            continue;
        }
        let Some(row) = got.get(&key) else { continue };
        checked += 1;
        let kind = |v: &serde_json::Value, field: &str| v[field].as_str().unwrap_or("").to_string();
        // A strict run changes what runs (collection files removed), so only its strict
        // verdict is expected to match; its official one is of a different execution.
        let official = |v: &serde_json::Value| {
            if strict {
                String::new()
            } else {
                kind(v, "category")
            }
        };
        // The verdict must also say when it is the network's doing (`needs_network`).
        let network = |v: &serde_json::Value| {
            if v["needs_network"].as_bool().unwrap_or(false) {
                " (needs network)"
            } else {
                ""
            }
        };
        let want = (
            official(e),
            kind(e, "strict_category"),
            kind(e, "error_kind"),
            network(e),
        );
        let have = (
            official(row),
            kind(row, "strict_category"),
            if kind(row, "category") == "error" {
                kind(row, "error_reason")
            } else {
                String::new()
            },
            network(row),
        );
        if want != have {
            mismatches.push(format!(
                "{} {} sample {}: expected {} / strict {} {}{}, got {} / strict {} {}{} ({})",
                key.0,
                key.1,
                key.2,
                want.0,
                want.1,
                want.2,
                want.3,
                have.0,
                have.1,
                have.2,
                have.3,
                kind(e, "reason")
            ));
        }
    }
    let summary = if mismatches.is_empty() {
        format!("  mini benchmark: {checked}/{checked} verdicts as expected (datasets/mini/expected.json, {})", if strict { "strict" } else { "official and strict" })
    } else {
        format!(
            "  mini benchmark: {} of {checked} verdicts differ from datasets/mini/expected.json",
            mismatches.len()
        )
    };
    Ok(MiniCheck {
        summary,
        mismatches,
    })
}
