//! `swe-eval submit`: a finished run as a SWE-bench leaderboard submission, in the layout the
//! SWE-bench experiments repository asks for (`evaluation/<split>/<date>_<name>/`):
//!
//! ```text
//! all_preds.jsonl                    one prediction per instance
//! logs/<instance_id>/patch.diff      the prediction's patch
//! logs/<instance_id>/report.json     the official per-instance report
//! logs/<instance_id>/test_output.txt the eval script's output
//! trajs/                             one reasoning trace per instance (from --trajs)
//! results/results.json, resolved_by_repo.json, resolved_by_time.json
//! metadata.yaml, README.md
//! ```
//!
//! The `results/` numbers are computed from the package's own `logs/` exactly as the
//! repository's analysis script does (see `results`), and [`verify`] does it again on a
//! finished package and names every number that differs. Every requirement of the
//! submission checklist that the inputs do not meet (one attempt per instance, reasoning
//! traces, a technical report, authors, ...) is a [`Warning`] naming the rule.
//!
//! Nothing is written outside the output folder, and the output folder may not be, contain or
//! lie inside any input.

mod error;
mod layout;
mod package;
mod results;
mod source;
mod text;
mod verify;
mod warning;

pub use error::SubmitError;
pub use layout::{METADATA_FILE, PREDS_FILE, README_FILE, TRAJS_DIR};
pub use package::{build, check_output, Options, Package};
pub use results::Results;
pub use source::{predictions_from_tree, summaries_in, Logs, Source};
pub use text::{Metadata, DECLARATIONS};
pub use verify::{verify, Ran, Verification};
pub use warning::Warning;
