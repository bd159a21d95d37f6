//! The two variants computed: [`unidiff_reward`] on unified diffs and [`search_replace_reward`]
//! on raw model output, both through per-file changes compared by difflib's ratio.

use super::filelevel;
use super::files::Files;
use super::result::{FileSimilarity, Format, RewardResult};
use super::search_replace;
use super::sequence_matcher::ratio;
use super::udiff;

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
    match search_replace::edited_files(code_context, output) {
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
