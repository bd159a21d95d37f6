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
    Oracle::new(oracle).unidiff_reward(pred)
}

/// A gold patch read once (its per-file changes), for the rewards of many predictions of its
/// instance: [`Oracle::unidiff_reward`] is [`unidiff_reward`] without reading the gold patch
/// again, and reads the prediction once.
#[derive(Debug, Clone, PartialEq)]
pub struct Oracle {
    changes: Vec<(String, String)>,
}

impl Oracle {
    /// The gold patch `oracle`, read.
    pub fn new(oracle: &str) -> Oracle {
        Oracle {
            changes: filelevel_changes(&[oracle]),
        }
    }

    /// The unified-diff reward of `pred` against this gold patch (as [`unidiff_reward`]).
    pub fn unidiff_reward(&self, pred: &str) -> RewardResult {
        let parsed = crate::unidiff::parse(pred);
        // One diff: `filelevel_changes(&[pred])`, whose merge keeps the file-level changes as
        // they are (their paths are unique already).
        let pred_changes = match &parsed {
            Ok(set) => filelevel::filelevel_diff(set),
            Err(_) => Vec::new(),
        };
        let (similarity, files) = compare_changes(&pred_changes, &self.changes);
        let format = if pred.trim().is_empty() {
            Format::Empty
        } else {
            match parsed {
                Ok(set) if set.files.iter().any(|f| !f.is_binary_file) => Format::Ok,
                _ => Format::Unparsable,
            }
        };
        RewardResult::new(similarity, format, files)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gold_patch_read_once_rewards_every_prediction_as_the_reference_reading_does() {
        let mut preds: Vec<(String, String)> = crate::mini::PREDICTIONS
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let id = v["instance_id"].as_str().unwrap().to_string();
                (id, v["model_patch"].as_str().unwrap_or("").to_string())
            })
            .collect();
        let golds: std::collections::HashMap<String, String> = crate::mini::DATASET
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let id = v["instance_id"].as_str().unwrap().to_string();
                (id, v["patch"].as_str().unwrap().to_string())
            })
            .collect();
        // Edge cases against one gold patch: blank, not a diff, a binary file, the same file
        // twice in one diff (the later wins), a rename.
        let calc = "swe-eval-mini__calc-1";
        let gold = &golds[calc];
        let twice = format!("{gold}{gold}");
        for odd in [
            "",
            "  \n",
            "not a diff at all",
            "diff --git a/x.bin b/x.bin\nBinary files a/x.bin and b/x.bin differ\n",
            twice.as_str(),
            "diff --git a/a.py b/b.py\nsimilarity index 90%\nrename from a.py\nrename to b.py\n",
        ] {
            preds.push((calc.to_string(), odd.to_string()));
        }
        for (id, pred) in &preds {
            let gold = &golds[id];
            let once = Oracle::new(gold);
            let (similarity, files) = calculate_reward_unidiff(&[gold], &[pred]);
            let r = once.unidiff_reward(pred);
            // The format as read apart (a second reading of the prediction).
            let format = if pred.trim().is_empty() {
                Format::Empty
            } else {
                match crate::unidiff::parse(pred) {
                    Ok(set) if set.files.iter().any(|f| !f.is_binary_file) => Format::Ok,
                    _ => Format::Unparsable,
                }
            };
            assert_eq!(
                r,
                RewardResult::new(similarity, format, files),
                "{id}: {pred:?}"
            );
            // The same oracle again: the same answer.
            assert_eq!(once.unidiff_reward(pred), r);
        }
        let empty = Oracle::new(gold).unidiff_reward("");
        assert_eq!((empty.format, empty.reward), (Format::Empty, -1.0));
        let junk = Oracle::new(gold).unidiff_reward("not a diff at all");
        assert_eq!(junk.format, Format::Unparsable);
    }
}
