//! `run --flaky MAP`: the run's predictions on the instances a flaky map (`validate`'s,
//! `report::FlakyMap`) marks flaky, with the tests that flipped there, written beside the run's
//! other files as `<run_id>.flaky.json` (docs/formats.md, "Flaky marks") and summed up in its
//! closing lines. The verdicts themselves are not changed: a flaky instance's verdict is what
//! this run saw, and may differ on a rerun.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::findings::{read_verdicts, FindingsError};
use crate::runner::{Category, Layout};
use swe_eval_core::report::FlakyMap;
use swe_eval_core::wire::FLAKY_MARKS_VERSION;

/// A run's predictions on flaky instances.
#[derive(Debug, Clone, Serialize)]
pub struct FlakyMarks {
    /// [`swe_eval_core::wire::FLAKY_MARKS_VERSION`], first in the file.
    pub format_version: u32,
    /// The flaky map read.
    pub map: PathBuf,
    /// The run's instances.
    pub instances: usize,
    /// How many of them the map has a row for (were validated).
    pub validated: usize,
    /// The run's instances the map marks flaky, in the run's order.
    pub flaky_instances: Vec<String>,
    /// The run's predictions on them, in the per-prediction file's order.
    pub predictions: Vec<MarkedPrediction>,
}

/// One prediction on a flaky instance.
#[derive(Debug, Clone, Serialize)]
pub struct MarkedPrediction {
    /// The instance.
    pub instance_id: String,
    /// The model.
    pub model: String,
    /// The sample.
    pub sample: u32,
    /// This run's verdict.
    pub category: Category,
    /// The tests whose status flipped in the validation.
    pub flipping_tests: Vec<String>,
}

/// The marks of run `layout` over `instance_ids` by `map` (read from `map_path`).
pub fn flaky_marks(
    map: &FlakyMap,
    map_path: &Path,
    layout: &Layout,
    instance_ids: &[String],
) -> Result<FlakyMarks, FindingsError> {
    let flaky_instances: Vec<String> = instance_ids
        .iter()
        .filter(|id| map.is_flaky(id))
        .cloned()
        .collect();
    let flaky: BTreeSet<&str> = flaky_instances.iter().map(String::as_str).collect();
    let predictions = read_verdicts(layout)?
        .into_iter()
        .filter(|v| flaky.contains(v.instance_id.as_str()))
        .map(|v| MarkedPrediction {
            flipping_tests: map.rows[&v.instance_id]
                .tests
                .iter()
                .map(|t| t.test.clone())
                .collect(),
            instance_id: v.instance_id,
            model: v.model,
            sample: v.sample,
            category: v.category,
        })
        .collect();
    Ok(FlakyMarks {
        format_version: FLAKY_MARKS_VERSION,
        map: map_path.to_path_buf(),
        instances: instance_ids.len(),
        validated: instance_ids.iter().filter(|id| map.validated(id)).count(),
        flaky_instances,
        predictions,
    })
}

/// The marks' file name for run `run_id`: `<run_id>.flaky.json`.
pub fn flaky_marks_name(run_id: &str) -> String {
    format!("{run_id}.flaky.json")
}
