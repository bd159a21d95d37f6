//! What image preparation tells its caller while it works, and how the caller stops it: each
//! build's start and each phase's time (repository fetch, snapshot, docker build) as
//! [`BuildEvent`]s, every instance's image as soon as it is ready or failed, every image made
//! (so a preparation abandoned midway still knows what to clean up); and a stop flag checked
//! before each build starts (builds already running finish).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use super::{ImageFailure, Layer};

/// Which kind of image a build makes, for progress and timings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// A base image (bootstrapped or built).
    Base,
    /// An environment image.
    Environment,
    /// A history image (the repository's history up to a commit, see `history`).
    History,
    /// An instance image.
    Instance,
}

impl Stage {
    /// Its name in logs and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Base => "base",
            Stage::Environment => "environment",
            Stage::History => "history",
            Stage::Instance => "instance",
        }
    }

    /// The stage of a build of `layer` (history images are instance-layer images built for
    /// no instance).
    pub fn of(layer: Layer, instance_id: Option<&str>) -> Stage {
        match (layer, instance_id) {
            (Layer::Base, _) => Stage::Base,
            (Layer::Env, _) => Stage::Environment,
            (Layer::Instance, None) => Stage::History,
            (Layer::Instance, Some(_)) => Stage::Instance,
        }
    }
}

/// A timed part of preparing an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// Fetching the repository into the host's cache and planning its history images (once
    /// per repository and environment).
    Fetch,
    /// Writing a history image's pack of the repository (host git).
    Snapshot,
    /// The image build on the daemon (or the base's bootstrap and import, or a pull).
    Build,
}

impl Phase {
    /// Its name in logs and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Fetch => "fetch",
            Phase::Snapshot => "snapshot",
            Phase::Build => "build",
        }
    }
}

/// What preparation reports, as it happens.
#[derive(Debug, Clone, PartialEq)]
pub enum BuildEvent {
    /// A build of `image` starts on the daemon.
    Started {
        /// Its kind.
        stage: Stage,
        /// The image (or, for [`Phase::Fetch`], the repository).
        image: String,
    },
    /// A phase of preparing `image` ended.
    Timed {
        /// Its kind.
        stage: Stage,
        /// The image (or, for [`Phase::Fetch`], the repository).
        image: String,
        /// Which phase.
        phase: Phase,
        /// How long it took.
        took: Duration,
        /// It succeeded.
        ok: bool,
    },
    /// This preparation made `image` (built, imported or pulled).
    Created {
        /// The image.
        image: String,
        /// Its layer.
        layer: Layer,
    },
    /// An instance's image is there, or why not. A transient failure may be retried by the
    /// caller, so it is not necessarily the last word.
    Instance {
        /// The instance.
        instance_id: String,
        /// The image, or why there is none.
        result: Result<String, ImageFailure>,
    },
}

/// Stops a preparation: once set, no build starts (each that would fails with
/// [`super::ImageError::Stopped`]); builds already running finish. Clones share the flag.
#[derive(Debug, Clone, Default)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    /// From now on, no build starts.
    pub fn stop(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// True once [`StopFlag::stop`] was called.
    pub fn stopped(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Where a preparation reports, and its stop flag. The default reports nowhere and never
/// stops. The event channel closes when the last clone of the hooks is dropped.
#[derive(Debug, Clone, Default)]
pub struct BuildHooks {
    events: Option<UnboundedSender<BuildEvent>>,
    stop: StopFlag,
}

impl BuildHooks {
    /// Hooks that send every event to `events` and stop when `stop` is set.
    pub fn new(events: UnboundedSender<BuildEvent>, stop: StopFlag) -> Self {
        BuildHooks {
            events: Some(events),
            stop,
        }
    }

    /// Reports `event` (to nobody when no channel was given or its receiver is gone).
    pub fn send(&self, event: BuildEvent) {
        if let Some(tx) = &self.events {
            let _ = tx.send(event);
        }
    }

    /// True once the stop flag is set: no build may start.
    pub fn stopped(&self) -> bool {
        self.stop.stopped()
    }

    /// Reports that `phase` of `image` took `took`.
    pub fn timed(&self, stage: Stage, image: &str, phase: Phase, took: Duration, ok: bool) {
        self.send(BuildEvent::Timed {
            stage,
            image: image.to_string(),
            phase,
            took,
            ok,
        });
    }
}
