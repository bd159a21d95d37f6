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

/// The eval script a run's log folder holds (`logs/<id>/eval.sh`), copied into the package
/// and checked by `--verify` against the one rendered for the dataset row.
pub const EVAL_SCRIPT_FILE: &str = "eval.sh";

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

/// The instance id a trajectory's file name carries: the longest id found in the name and not
/// followed by another digit (so `django__django-1234` does not claim `...-12345.traj`).
pub(super) fn id_in_name<'a>(name: &str, ids: &'a [String]) -> Option<&'a String> {
    ids.iter()
        .filter(|id| {
            name.match_indices(id.as_str()).any(|(at, _)| {
                !name[at + id.len()..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_digit())
            })
        })
        .max_by_key(|id| id.len())
}
