//! The requests of a `bench serve` load: the mini benchmark's predictions as bodies, and a
//! patch made distinct so that the server runs it again.

use std::collections::BTreeSet;

use serde_json::{json, Value};

/// The mini benchmark's predictions.
pub(super) fn mini_predictions() -> Result<Vec<Value>, serde_json::Error> {
    swe_eval_core::mini::PREDICTIONS
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect()
}

/// A request's body for prediction `p`.
pub(super) fn record(p: &Value, patch: &Value, model: &Value, sample: u64, execute: bool) -> Value {
    json!({"instance_id": p["instance_id"], "model_patch": patch,
           "model_name_or_path": model, "sample": sample, "execute": execute})
}

/// `patch` made distinct by `tag`: ` # tag` at the end of its first added line (the hunk's
/// line counts stay right, so it still applies where the original does); unchanged when it adds
/// no line.
pub(super) fn variant(patch: &str, tag: &str) -> String {
    let mut out = String::with_capacity(patch.len() + tag.len() + 3);
    let mut done = false;
    for line in patch.split_inclusive('\n') {
        if !done && line.starts_with('+') && !line.starts_with("+++") {
            let (text, end) = match line.strip_suffix('\n') {
                Some(t) => (t, "\n"),
                None => (line, ""),
            };
            out.push_str(text);
            out.push_str(" # ");
            out.push_str(tag);
            out.push_str(end);
            done = true;
        } else {
            out.push_str(line);
        }
    }
    out
}

/// The distinct (instance, patch) pairs of `bodies` that run a container (non-empty patch).
pub(super) fn distinct_pairs(bodies: &[Value]) -> usize {
    bodies
        .iter()
        .filter(|b| !b["model_patch"].as_str().unwrap_or("").trim().is_empty())
        .map(|b| (b["instance_id"].to_string(), b["model_patch"].to_string()))
        .collect::<BTreeSet<_>>()
        .len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variant_differs_only_on_the_first_added_line() {
        let patch = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n a\n+b\n+c\n";
        let v = variant(patch, "7");
        assert_eq!(
            v,
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n a\n+b # 7\n+c\n"
        );
        assert_ne!(variant(patch, "8"), v);
        assert_eq!(variant("", "7"), "");
        let preds = mini_predictions().unwrap();
        let bodies: Vec<Value> = preds
            .iter()
            .map(|p| record(p, &p["model_patch"], &json!("m"), 0, true))
            .collect();
        assert_eq!(distinct_pairs(&bodies), 21, "22 predictions, one empty");
    }
}
