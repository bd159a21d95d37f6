//! What the reward hands back: a [`RewardResult`] (the score, its [`Format`] verdict and each
//! [`FileSimilarity`]).

use serde::Serialize;

use super::search_replace::FormatError;

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
    pub(super) fn new(similarity: f64, format: Format, files: Vec<FileSimilarity>) -> Self {
        let reward = if format.is_ok() { similarity } else { -1.0 };
        RewardResult {
            similarity,
            reward,
            format,
            files,
        }
    }
}
