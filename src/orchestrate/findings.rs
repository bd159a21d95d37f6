//! What a validation found about each instance, judged from its gold and empty verdicts
//! (read back from the run's per-prediction file): gold does not resolve, the untouched tree
//! already resolves, or a verdict changes between repetitions.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::runner::{Category, Layout, Verdict};

/// What validation found about one instance.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// The instance.
    pub instance_id: String,
    /// Categories of the gold runs, then of the empty runs, in sample order.
    pub gold: Vec<Category>,
    /// Categories of the empty runs, in sample order.
    pub empty: Vec<Category>,
    /// Some gold run did not resolve (or none ran).
    pub gold_not_resolved: bool,
    /// Some empty run resolved: the tests do not need the fix.
    pub empty_resolves: bool,
    /// The verdicts of the gold or of the empty runs differ between runs.
    pub flaky: bool,
    /// Some gold run was unresolved only for want of the network (its verdict's
    /// `needs_network`): rerun with `--network` before blaming the instance.
    pub gold_needs_network: bool,
}

impl Finding {
    /// True when anything above is wrong with the instance.
    pub fn flagged(&self) -> bool {
        self.gold_not_resolved || self.empty_resolves || self.flaky
    }
}

/// Judges one instance from its gold and empty verdicts.
pub fn judge(instance_id: &str, gold: Vec<Category>, empty: Vec<Category>) -> Finding {
    let varies = |v: &[Category]| v.windows(2).any(|w| w[0] != w[1]);
    Finding {
        instance_id: instance_id.to_string(),
        gold_not_resolved: gold.is_empty() || gold.iter().any(|c| *c != Category::Resolved),
        empty_resolves: empty.contains(&Category::Resolved),
        flaky: varies(&gold) || varies(&empty),
        gold,
        empty,
        gold_needs_network: false,
    }
}

/// The model names of the gold and the empty runs.
pub const GOLD: &str = "gold";
/// The model name of the empty runs.
pub const EMPTY: &str = "empty";

/// Why a validation's verdicts could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum FindingsError {
    /// The per-prediction file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A row of the per-prediction file is not a verdict.
    #[error("{}: {message}", path.display())]
    Json {
        /// The file.
        path: std::path::PathBuf,
        /// The line and what is wrong with it.
        message: String,
    },
}

impl crate::failure::Classify for FindingsError {
    fn kind(&self) -> crate::failure::ErrorKind {
        crate::failure::ErrorKind::Failed
    }
}

/// The findings of each of `instance_ids`, from the run's per-prediction file (resumed
/// verdicts included).
pub fn findings(layout: &Layout, instance_ids: &[String]) -> Result<Vec<Finding>, FindingsError> {
    let path = layout.jsonl_path();
    let text = std::fs::read_to_string(&path).map_err(|source| FindingsError::Read {
        path: path.clone(),
        source,
    })?;
    let mut by: BTreeMap<(String, String), BTreeMap<u32, Category>> = BTreeMap::new();
    let mut gold_network = std::collections::BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        let v: Verdict =
            crate::runner::parse_verdict(line.as_bytes()).map_err(|e| FindingsError::Json {
                path: path.clone(),
                message: format!("line {}: {e}", i + 1),
            })?;
        if v.needs_network && v.model == GOLD {
            gold_network.insert(v.instance_id.clone());
        }
        by.entry((v.instance_id, v.model))
            .or_default()
            .insert(v.sample, v.category);
    }
    let mut take = |id: &str, model: &str| -> Vec<Category> {
        by.remove(&(id.to_string(), model.to_string()))
            .map(|m| m.into_values().collect())
            .unwrap_or_default()
    };
    Ok(instance_ids
        .iter()
        .map(|id| {
            let gold = take(id, GOLD);
            let empty = take(id, EMPTY);
            let mut f = judge(id, gold, empty);
            f.gold_needs_network = gold_network.contains(id);
            f
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use Category::*;

    #[test]
    fn judging_flags_each_kind_of_untrustworthy_instance() {
        let cases = [
            (
                vec![Resolved, Resolved],
                vec![Unresolved, Unresolved],
                false,
                "healthy",
            ),
            (
                vec![Resolved, Unresolved],
                vec![Unresolved, Unresolved],
                true,
                "gold flips",
            ),
            (
                vec![Unresolved, Unresolved],
                vec![Unresolved, Unresolved],
                true,
                "gold never resolves",
            ),
            (
                vec![Resolved, Resolved],
                vec![Resolved, Resolved],
                true,
                "resolves without a patch",
            ),
            (
                vec![Resolved, Resolved],
                vec![Unresolved, Error],
                true,
                "empty run flips",
            ),
            (vec![], vec![], true, "nothing ran"),
        ];
        for (gold, empty, flagged, why) in cases {
            assert_eq!(judge("x", gold, empty).flagged(), flagged, "{why}");
        }
        let f = judge(
            "x",
            vec![Resolved, Unresolved],
            vec![Unresolved, Unresolved],
        );
        assert!(f.flaky && f.gold_not_resolved && !f.empty_resolves);
    }

    #[test]
    fn a_gold_run_unresolved_for_want_of_the_network_is_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path(), "v");
        let line = |id: &str, model: &str, category: &str, network: bool| {
            serde_json::json!({
                "instance_id": id, "model": model, "sample": 0, "patch_hash": "h",
                "run_id": "v", "category": category, "resolved": category == "resolved",
                "strict_category": category, "strict_resolved": category == "resolved",
                "official_report": true, "applied_with": null, "fail_to_pass_success": 0,
                "fail_to_pass_failure": 1, "pass_to_pass_success": 0, "pass_to_pass_failure": 0,
                "test_exit_code": 1, "timed_out": false, "reason": null, "infra_retries": 0,
                "setup_secs": 1.0, "run_secs": 2.0, "teardown_secs": 0.5, "total_secs": 3.5,
                "shared_from": null, "needs_network": network
            })
            .to_string()
        };
        let lines = [
            line("a", GOLD, "unresolved", true),
            line("a", EMPTY, "unresolved", false),
            line("b", GOLD, "unresolved", false),
            line("b", EMPTY, "unresolved", false),
        ];
        std::fs::write(layout.jsonl_path(), lines.join("\n") + "\n").unwrap();
        let f = findings(&layout, &["a".into(), "b".into()]).unwrap();
        assert!(f[0].gold_not_resolved && f[0].gold_needs_network);
        assert!(f[1].gold_not_resolved && !f[1].gold_needs_network);
    }
}
