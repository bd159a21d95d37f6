//! The files and folders of a package, by name.

use super::results::{LOGS_DIR, RESULTS_DIR};

/// The predictions file of a package: one prediction per instance.
pub const PREDS_FILE: &str = "all_preds.jsonl";

/// The folder of reasoning traces.
pub const TRAJS_DIR: &str = "trajs";

/// What the leaderboard shows of the system.
pub const METADATA_FILE: &str = "metadata.yaml";

/// The analysis summary and checklist.
pub const README_FILE: &str = "README.md";

/// What the analysis script keeps at the top of a submission (it deletes anything else).
pub(super) const KEPT_BY_SCRIPT: [&str; 8] = [
    "preds.json",
    PREDS_FILE,
    LOGS_DIR,
    METADATA_FILE,
    "metadata.yml",
    TRAJS_DIR,
    README_FILE,
    RESULTS_DIR,
];
