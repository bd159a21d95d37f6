//! What a session tells whoever listens, in order: image preparation, the jobs' events, notices.

use tokio::sync::mpsc::UnboundedSender;

use crate::images::BuildEvent;
use crate::runner::RunEvent;
use swe_eval_core::spec::Flavour;

/// What a session (and the workflows over it) tells its caller, in order.
#[derive(Debug, Clone)]
pub enum Event {
    /// Image preparation starts for `instances` instances.
    Preparing {
        /// How many instances.
        instances: usize,
        /// Official or Debian images.
        flavour: Flavour,
    },
    /// Something the run survives and the user should know.
    Notice(Notice),
    /// The session takes predictions; [`Event::Run`] events follow.
    Executing,
    /// One of the dispatcher's events.
    Run(RunEvent),
    /// A build of an image started, or a phase of its preparation ended (image preparation
    /// runs beside the jobs, between [`Event::Executing`] and [`Event::Executed`]).
    Build(BuildEvent),
    /// An instance's image is ready (`ok`) or failed for good: its jobs may start.
    ImageDone {
        /// The instance.
        instance_id: String,
        /// The image is there.
        ok: bool,
        /// The image, when it is there.
        image: Option<String>,
        /// It failed for a reason that may pass (the engine away, preparation stopped): a
        /// later preparation may succeed.
        retry: bool,
    },
    /// The jobs and the preparation are done; no [`Event::Run`] follows.
    Executed,
    /// Images removed because the cache level does not keep them.
    ImagesRemoved {
        /// How many images.
        count: usize,
    },
}

/// A message for the user, with how much it matters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// How much it matters.
    pub level: Level,
    /// What to tell the user.
    pub message: String,
}

/// How much a [`Notice`] matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// For information: the run is as asked.
    Note,
    /// Something was not done as asked (an image that failed, a hold not removed).
    Warning,
}

/// Sends a notice of `level` with `message`.
pub fn notice(events: &UnboundedSender<Event>, level: Level, message: String) {
    let _ = events.send(Event::Notice(Notice { level, message }));
}
