//! The SWE-RL similarity reward (facebookresearch/swe-rl, `src/swerl/core/reward.py`), exact
//! and fast: per changed file, difflib's `SequenceMatcher` ratio between the predicted and the
//! oracle change, averaged over the union of changed files.
//!
//! Two variants, as in the reference:
//! - [`unidiff_reward`]: both sides are unified diffs (SWE-bench predictions against the gold
//!   patch); files and hunks come from the crate's port of the `unidiff` package
//!   ([`crate::unidiff`], its exact reading), per-file changes from [`filelevel`].
//! - [`search_replace_reward`]: the raw model output with `<think>`/`<solution>` and
//!   SEARCH/REPLACE blocks, applied to the original files ([`search_replace`]); per-file changes
//!   are `difflib.unified_diff` renderings ([`udiff`]).
//!
//! Everything here is pure: text in, numbers out. Reading original files from git is in
//! [`git`], running over many predictions in [`batch`].

use serde::Serialize;

pub mod batch;
pub mod filelevel;
pub mod git;
pub mod search_replace;
pub mod sequence_matcher;
pub mod udiff;

pub use search_replace::FormatError;
pub use sequence_matcher::ratio;

/// One file of the union of predicted and oracle changes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileSimilarity {
    /// The file's path, relative to the repository root.
    pub path: String,
    /// 0 when either side has no change to this file, else the difflib ratio.
    pub similarity: f64,
    /// The prediction changes this file.
    pub in_pred: bool,
    /// The gold patch changes this file.
    pub in_oracle: bool,
}

/// Whether the prediction could be read as an edit at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Format {
    /// A readable edit.
    Ok,
    /// Nothing but whitespace.
    Empty,
    /// A diff the `unidiff` package refuses, or one with no (text) file in it.
    Unparsable,
    /// A search/replace output the reference rejects, with its message.
    Invalid(FormatError),
}

impl Format {
    /// The wire form: `ok`, `empty`, `unparsable`, or the reference's error message.
    pub fn as_string(&self) -> String {
        match self {
            Format::Ok => "ok".into(),
            Format::Empty => "empty".into(),
            Format::Unparsable => "unparsable".into(),
            Format::Invalid(e) => e.to_string(),
        }
    }

    /// True for a readable edit.
    pub fn is_ok(&self) -> bool {
        matches!(self, Format::Ok)
    }
}

/// The reward of one prediction.
#[derive(Debug, Clone, PartialEq)]
pub struct RewardResult {
    /// The reference's value: for the unified-diff variant its reward (0 for an empty or
    /// unparsable prediction), for the search/replace variant its reward (-1 on a format
    /// error).
    pub similarity: f64,
    /// -1 where `format` is not `Ok`, else `similarity`.
    pub reward: f64,
    /// Whether the prediction was a readable edit.
    pub format: Format,
    /// The union of changed files: oracle files in patch order, then predicted-only files.
    pub files: Vec<FileSimilarity>,
}

impl RewardResult {
    fn new(similarity: f64, format: Format, files: Vec<FileSimilarity>) -> Self {
        let reward = if format.is_ok() { similarity } else { -1.0 };
        RewardResult {
            similarity,
            reward,
            format,
            files,
        }
    }
}

/// SWE-RL's `compute_change_similarities` and the mean over it: per path of the union, 0 when
/// either change is missing or empty, else the ratio; 1.0 when there are no files at all.
/// Inputs are (path, change) lists with unique paths.
pub fn compare_changes(
    pred: &[(String, String)],
    oracle: &[(String, String)],
) -> (f64, Vec<FileSimilarity>) {
    let mut files = Vec::with_capacity(oracle.len() + pred.len());
    let lookup = |list: &[(String, String)], path: &str| list.iter().position(|(p, _)| p == path);
    for (path, oracle_change) in oracle {
        let pred_change = lookup(pred, path).map(|i| pred[i].1.as_str());
        let similarity = match pred_change {
            Some(p) if !p.is_empty() && !oracle_change.is_empty() => ratio(p, oracle_change),
            _ => 0.0,
        };
        files.push(FileSimilarity {
            path: path.clone(),
            similarity,
            in_pred: pred_change.is_some(),
            in_oracle: true,
        });
    }
    for (path, _) in pred {
        if lookup(oracle, path).is_none() {
            files.push(FileSimilarity {
                path: path.clone(),
                similarity: 0.0,
                in_pred: true,
                in_oracle: false,
            });
        }
    }
    if files.is_empty() {
        return (1.0, files);
    }
    let sum: f64 = files.iter().map(|f| f.similarity).sum();
    (sum / files.len() as f64, files)
}

/// Per-file changes of a list of diffs, as the reference merges them (`dict.update`: a later
/// diff replaces an earlier one's file). A diff the package refuses contributes nothing.
pub fn filelevel_changes(patches: &[&str]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for text in patches {
        let Ok(set) = crate::unidiff::parse(text) else {
            continue;
        };
        for (path, change) in filelevel::filelevel_diff(&set) {
            match out.iter_mut().find(|(p, _)| *p == path) {
                Some(slot) => slot.1 = change,
                None => out.push((path, change)),
            }
        }
    }
    out
}

/// SWE-RL's `calculate_reward_unidiff(oracle_patches, pred_patches)`: never -1.
pub fn calculate_reward_unidiff(
    oracle_patches: &[&str],
    pred_patches: &[&str],
) -> (f64, Vec<FileSimilarity>) {
    compare_changes(
        &filelevel_changes(pred_patches),
        &filelevel_changes(oracle_patches),
    )
}

/// The unified-diff reward of one prediction against the gold patch. `similarity` is the
/// reference's `calculate_reward_unidiff([oracle], [pred])`; `format` says whether the
/// prediction was empty or unreadable, and `reward` is -1 then.
pub fn unidiff_reward(oracle: &str, pred: &str) -> RewardResult {
    let (similarity, files) = calculate_reward_unidiff(&[oracle], &[pred]);
    let format = if pred.trim().is_empty() {
        Format::Empty
    } else {
        match crate::unidiff::parse(pred) {
            Ok(set) if set.files.iter().any(|f| !f.is_binary_file) => Format::Ok,
            _ => Format::Unparsable,
        }
    };
    RewardResult::new(similarity, format, files)
}

/// Path -> text of a set of files.
pub type Files = std::collections::BTreeMap<String, String>;

/// SWE-RL's `calculate_search_replace_reward(code_context, oracle_new_content, output)`:
/// -1 with the reference's message on a format error, else the mean similarity of the
/// `difflib.unified_diff` changes. Where neither side changes anything the reference would
/// fail an assertion; this returns 1.0 (as its documentation says).
pub fn search_replace_reward(
    code_context: &Files,
    oracle_new_content: &Files,
    output: &str,
) -> RewardResult {
    if output.trim().is_empty() {
        return RewardResult::new(-1.0, Format::Empty, Vec::new());
    }
    match search_replace::edit(code_context, output) {
        Err(e) => RewardResult::new(-1.0, Format::Invalid(e), Vec::new()),
        Ok(pred_new) => {
            let oracle = udiff::normalized_patches(code_context, oracle_new_content.iter());
            let pred =
                udiff::normalized_patches(code_context, pred_new.iter().map(|(p, t)| (p, t)));
            let (similarity, files) = compare_changes(&pred, &oracle);
            RewardResult::new(similarity, Format::Ok, files)
        }
    }
}
