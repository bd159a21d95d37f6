//! The labels this tool puts on containers, images, services and configs: which tool, run and
//! owning process they belong to, and which images are held or doomed.

/// Label keys put on everything the tool creates, so that a reap by label finds it.
pub const LABEL_TOOL: &str = "swe-eval";

/// The id of the run that created the object.
pub const LABEL_RUN_ID: &str = "swe-eval.run-id";

/// The process that made a container (`host:pid:start`); a dead owner's containers are reaped.
pub const LABEL_OWNER: &str = "swe-eval.owner";

/// Marks a hold: a container that only keeps an image from being removed (`images::hold`).
pub const LABEL_HOLD: &str = "swe-eval.hold";

/// Marks a hand-over: an image a run would have removed but another run still used; the value
/// is the image name (`images::hold::mark_doomed`).
pub const LABEL_DOOMED: &str = "swe-eval.doomed";

/// A label key defined with the others from the start; nothing in the crate sets or reads it.
pub const LABEL_KEEP: &str = "swe-eval.keep";
