//! A server's evaluated rollouts as the study reads them: the rewards (the `swe-eval reward`
//! rows) and the executed outcomes (`{instance_id, sample, resolved}` rows), so `correlate`
//! and `compare` follow how far resemblance tracks correctness during training.
//!
//! Samples are numbered per (model, instance) in the order the requests were accepted (0, 1,
//! ...), the same in both files, so the study joins each reward to its own outcome however the
//! trainer numbered its samples; each row keeps the request's id and its own sample.
//! Requests not executed have a reward row only; masked outcomes (infrastructure errors,
//! deadlines) are outcome rows without a verdict (`resolved` null), which the study counts
//! apart. Every row keeps `model_name_or_path` and `sample`; the rows of executed requests with
//! an outcome carry the trainer's reward as it was answered (`score`, `graded_by`,
//! `objections`) in both files, beside the official `status` and `resolved`.

use std::collections::HashMap;

use serde::Serialize;

use super::evaluation::{Executed, GradedBy};
use super::store::Row;

/// One outcome row.
#[derive(Debug, Serialize)]
struct ExportRow<'a> {
    instance_id: &'a str,
    model_name_or_path: &'a str,
    sample: u32,
    resolved: Option<bool>,
    strict_resolved: Option<bool>,
    category: &'a str,
    mask: bool,
    #[serde(flatten)]
    scored: Scored<'a>,
    request_id: String,
    requested_sample: u32,
}

/// What the trainer was paid for an executed request, as answered.
#[derive(Debug, Serialize)]
struct Scored<'a> {
    score: f64,
    graded_by: GradedBy,
    objections: &'a [String],
}

impl<'a> Scored<'a> {
    fn of(o: &'a Executed) -> Self {
        Scored {
            score: o.score,
            graded_by: o.graded_by,
            objections: &o.objections,
        }
    }
}

/// One reward row (the rewards format of `swe-eval reward`, with the request's id, and for an
/// executed request with an outcome, its official status and its score).
#[derive(Debug, Serialize)]
struct RewardRow<'a> {
    instance_id: &'a str,
    model_name_or_path: &'a str,
    sample: u32,
    similarity: f64,
    reward: f64,
    format: &'a str,
    format_version: u32,
    request_id: String,
    requested_sample: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resolved: Option<bool>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    scored: Option<Scored<'a>>,
}

/// The export of `rows` (oldest first): the rewards and the outcomes, each JSON Lines.
pub fn export(rows: &[Row]) -> (Vec<u8>, Vec<u8>) {
    let mut next: HashMap<(&str, &str), u32> = HashMap::new();
    let mut rewards = Vec::new();
    let mut outcomes = Vec::new();
    for r in rows {
        let n = next
            .entry((r.model.as_str(), r.instance_id.as_str()))
            .or_default();
        let sample = *n;
        *n += 1;
        let executed = r.outcome.as_ref().filter(|_| r.execute);
        let reward = RewardRow {
            instance_id: &r.instance_id,
            model_name_or_path: &r.model,
            sample,
            similarity: r.similarity,
            reward: r.reward,
            format: &r.format,
            format_version: swe_eval_core::wire::REWARDS_VERSION,
            request_id: r.id(),
            requested_sample: r.sample,
            status: executed.map(|o| o.status.as_str()),
            resolved: executed.map(|o| o.resolved),
            scored: executed.map(Scored::of),
        };
        line(&mut rewards, &reward);
        let Some(o) = executed else {
            continue;
        };
        let outcome = ExportRow {
            instance_id: &r.instance_id,
            model_name_or_path: &r.model,
            sample,
            resolved: (!o.mask).then_some(o.resolved),
            strict_resolved: (!o.mask).then_some(o.strict_resolved),
            category: o.status.as_str(),
            mask: o.mask,
            scored: Scored::of(o),
            request_id: r.id(),
            requested_sample: r.sample,
        };
        line(&mut outcomes, &outcome);
    }
    (rewards, outcomes)
}

fn line(out: &mut Vec<u8>, row: &impl Serialize) {
    serde_json::to_writer(&mut *out, row).expect("an export row serializes");
    out.push(b'\n');
}
