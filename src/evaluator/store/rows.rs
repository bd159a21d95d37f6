//! The schema's version, one stored request (`Row`), and how a row of the `requests` table is
//! read.

use swe_eval_core::predictions::Prediction;

use crate::evaluator::evaluation::{Evaluation, Executed, State};

/// The schema version this build writes and reads.
pub(super) const SCHEMA_VERSION: i64 = 1;

/// One accepted request, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Its number (the id is `e<seq>`).
    pub seq: u64,
    /// The instance.
    pub instance_id: String,
    /// The model.
    pub model: String,
    /// The sample.
    pub sample: u32,
    /// The patch.
    pub patch: String,
    /// The content key ("" when not executed).
    pub key: String,
    /// Execution asked for.
    pub execute: bool,
    /// The deadline, in milliseconds since the Unix epoch.
    pub deadline_ms: Option<i64>,
    /// When it was accepted, in milliseconds since the Unix epoch.
    pub accepted_ms: i64,
    /// The similarity.
    pub similarity: f64,
    /// The reward.
    pub reward: f64,
    /// The reward's format verdict.
    pub format: String,
    /// The executed outcome, once known.
    pub outcome: Option<Executed>,
    /// The outcome came from the cache (or a simultaneous identical request).
    pub cached: bool,
    /// The request is done (an outcome, or no execution asked).
    pub done: bool,
}

impl Row {
    /// The prediction it asks to evaluate.
    pub fn prediction(&self) -> Prediction {
        Prediction {
            instance_id: self.instance_id.clone(),
            model_name_or_path: self.model.clone(),
            model_patch: Some(self.patch.clone()),
            sample: self.sample,
            line: None,
            extra: Default::default(),
        }
    }

    /// The id a client uses.
    pub fn id(&self) -> String {
        format!("e{}", self.seq)
    }

    /// The request as a trainer reads it.
    pub fn evaluation(&self) -> Evaluation {
        Evaluation {
            id: self.id(),
            instance_id: self.instance_id.clone(),
            model_name_or_path: self.model.clone(),
            sample: self.sample,
            state: if self.done {
                State::Done
            } else {
                State::Queued
            },
            similarity: self.similarity,
            reward: self.reward,
            format: self.format.clone(),
            execute: self.execute,
            outcome: self.outcome.clone(),
            cached: self.cached,
        }
    }
}

/// The seq of an id (`e<seq>`), if it is one.
pub fn parse_id(id: &str) -> Option<u64> {
    let digits = id.strip_prefix('e')?;
    if digits.is_empty() || digits.len() > 19 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn to_ms(t: std::time::SystemTime) -> i64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    to_ms(std::time::SystemTime::now())
}

/// The columns of a request, in the order [`raw_row`] reads them.
pub(super) const SELECT: &str =
    "SELECT seq, instance_id, model, sample, patch, key, execute, deadline_ms, \
     accepted_ms, similarity, reward, format, done, cached, outcome FROM requests";

/// A request's columns as SQLite gives them, before its outcome is parsed.
pub(super) struct RawRow {
    pub(super) seq: i64,
    pub(super) instance_id: String,
    pub(super) model: String,
    pub(super) sample: i64,
    pub(super) patch: String,
    pub(super) key: String,
    pub(super) execute: bool,
    pub(super) deadline_ms: Option<i64>,
    pub(super) accepted_ms: i64,
    pub(super) similarity: f64,
    pub(super) reward: f64,
    pub(super) format: String,
    pub(super) done: bool,
    pub(super) cached: bool,
    pub(super) outcome: Option<String>,
}

/// Reads a row of [`SELECT`].
pub(super) fn raw_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawRow> {
    Ok(RawRow {
        seq: r.get(0)?,
        instance_id: r.get(1)?,
        model: r.get(2)?,
        sample: r.get(3)?,
        patch: r.get(4)?,
        key: r.get(5)?,
        execute: r.get(6)?,
        deadline_ms: r.get(7)?,
        accepted_ms: r.get(8)?,
        similarity: r.get(9)?,
        reward: r.get(10)?,
        format: r.get(11)?,
        done: r.get(12)?,
        cached: r.get(13)?,
        outcome: r.get(14)?,
    })
}

/// An outcome as stored (JSON).
pub(super) fn outcome_json(o: &Executed) -> String {
    serde_json::to_string(o).expect("an outcome serializes")
}
