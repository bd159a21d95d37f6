//! Versions of swe-eval's own output formats, and the check every reader of them applies.
//! docs/formats.md describes each format field by field.
//!
//! Each format has its own `format_version`, written in every record (each JSON Lines row,
//! each CSV row, each `verdict.json`, each `summary.json`) and raised when a field changes
//! meaning or goes away (adding a field does not raise it). A reader accepts every version up
//! to the one it writes, and a record without the field as version 1: the files swe-eval wrote
//! before the field existed have exactly the version-1 layout. A newer version is refused with
//! a message that says so, instead of being misread.
//!
//! The wire types themselves sit beside their writers, apart from the domain types:
//! [`crate::reward::RewardRecord`], [`crate::report::PredictionRow`],
//! `swe_eval::runner::VerdictFile` (in the harness crate), [`crate::study::SummaryFile`] and
//! [`crate::study::PredictionCsvRow`]; readers go through them or through [`check`].
//! This module imports nothing else of the crate, so every layer may use it. (`swe-eval
//! compare` versions its own summary.json: `crate::compare::FORMAT_VERSION`.)

use serde_json::Value;

/// `swe-eval reward` output: rewards JSON Lines and CSV.
pub const REWARDS_VERSION: u32 = 1;
/// `swe-eval grade` output: `results.jsonl` and `results.csv`, one row per prediction.
///
/// Version 2: a prediction without a log is `infra_error` in `category`, `official_category`
/// and `strict_category` (version 1 said `error`, with `error_reason` `infra`), as a run's
/// verdicts always said. Readers take a version-1 row of `error` with reason `infra` as
/// `infra_error`.
pub const GRADE_ROWS_VERSION: u32 = 2;
/// A verdict: a prediction's `verdict.json` in a run's log folder, and each row of the run's
/// `<run_id>.predictions.jsonl` and `.csv`.
pub const VERDICT_VERSION: u32 = 1;
/// The study's (`swe-eval correlate`) `summary.json`.
pub const STUDY_SUMMARY_VERSION: u32 = 1;
/// The study's `per_prediction.csv`: one row per joined prediction.
pub const STUDY_ROWS_VERSION: u32 = 1;

/// `swe-eval images list --json`: the images of a selection on a daemon.
pub const IMAGE_LISTING_VERSION: u32 = 1;
/// The flaky map `swe-eval validate` writes (`flaky.<run_id>.jsonl`), one row per instance.
pub const FLAKY_MAP_VERSION: u32 = 1;
/// A run's marks of its predictions on flaky instances (`<run_id>.flaky.json`, `run --flaky`).
pub const FLAKY_MARKS_VERSION: u32 = 1;

/// The name of the version field in every format.
pub const FIELD: &str = "format_version";

/// The version a record without [`FIELD`] has (written before the field existed).
pub fn unversioned() -> u32 {
    1
}

/// Why a record's `format_version` is not one this build reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    /// Written by a newer swe-eval.
    #[error(
        "{what} of format_version {found}, written by a newer swe-eval; this one reads up to \
         version {supported}"
    )]
    Newer {
        /// What the record is, e.g. "a rewards row".
        what: String,
        /// The version found.
        found: u64,
        /// The newest version this build reads.
        supported: u32,
    },
    /// Not a version number of 1 or more.
    #[error("expected a format_version number of 1 or more, found {found}")]
    NotAVersion {
        /// The value found, as JSON.
        found: String,
    },
}

/// The version of a record whose `format_version` value is `found` (`None`: absent), when this
/// build reads it; otherwise why not (`what` names the format, e.g. "a rewards row").
pub fn check(found: Option<&Value>, supported: u32, what: &str) -> Result<u32, VersionError> {
    let version = match found {
        None | Some(Value::Null) => return Ok(unversioned()),
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) => s.trim().parse().ok(),
        Some(_) => None,
    };
    match version {
        Some(v) if v >= 1 && v <= u64::from(supported) => Ok(v as u32),
        Some(v) if v > u64::from(supported) => Err(VersionError::Newer {
            what: what.to_string(),
            found: v,
            supported,
        }),
        _ => Err(VersionError::NotAVersion {
            found: found.map_or_else(String::new, Value::to_string),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn absent_is_version_one_newer_is_refused_garbage_is_an_error() {
        let cases: &[(Option<Value>, Result<u32, &str>)] = &[
            (None, Ok(1)),
            (Some(Value::Null), Ok(1)),
            (Some(json!(1)), Ok(1)),
            (Some(json!("1")), Ok(1)),
            (Some(json!(2)), Err("newer swe-eval")),
            (Some(json!(0)), Err("expected a format_version")),
            (Some(json!(-1)), Err("expected a format_version")),
            (Some(json!("x")), Err("expected a format_version")),
            (Some(json!([1])), Err("expected a format_version")),
        ];
        for (found, want) in cases {
            let got = check(found.as_ref(), 1, "a row");
            match (want, &got) {
                (Ok(w), Ok(g)) => assert_eq!(w, g, "{found:?}"),
                (Err(w), Err(g)) => assert!(g.to_string().contains(w), "{found:?}: {g}"),
                _ => panic!("{found:?}: got {got:?}, want {want:?}"),
            }
        }
    }
}
