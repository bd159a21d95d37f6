//! The SWE-RL similarity reward (facebookresearch/swe-rl, `src/swerl/core/reward.py`), exact
//! and fast: per changed file, difflib's `SequenceMatcher` ratio between the predicted and the
//! oracle change, averaged over the union of changed files.
//!
//! Two variants, as in the reference:
//! - [`unidiff_reward`]: both sides are unified diffs (SWE-bench predictions against the gold
//!   patch); files and hunks come from the crate's port of the `unidiff` package
//!   ([`crate::unidiff`], its exact reading), per-file changes from `filelevel`.
//! - [`search_replace_reward`]: the raw model output with `<think>`/`<solution>` and
//!   SEARCH/REPLACE blocks, applied to the original files (`search_replace`); per-file changes
//!   are `difflib.unified_diff` renderings (`udiff`).
//!
//! Everything here is pure: text in, numbers out. Reading original files from git is in
//! `git`, running over many predictions in `batch`.

mod batch;
mod filelevel;
mod files;
mod git;
mod result;
mod score;
mod search_replace;
mod sequence_matcher;
mod udiff;

pub use batch::{
    search_replace_rewards, to_csv as rewards_csv, to_json_list as rewards_json_list,
    to_jsonl as rewards_jsonl, unidiff_rewards, with_workers, RewardError, RewardRecord,
};
pub use filelevel::{apply_file, filelevel_diff, ApplyError};
pub use files::Files;
pub use git::{read_files, GitError};
pub use result::{FileSimilarity, Format, RewardResult};
pub use score::{
    calculate_reward_unidiff, compare_changes, filelevel_changes, search_replace_reward,
    unidiff_reward, Oracle,
};
pub use search_replace::{edited_files, edited_paths, to_git_patch, FormatError};
pub use sequence_matcher::{char_matching_blocks, ratio, Match};
pub use udiff::{git_file_diff, normalized_patch, normalized_patches, unified_diff};
