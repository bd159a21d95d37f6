//! Setups that become ready while the run executes: the caller names the instances whose image
//! is still being prepared, starts the run at once, and hands each final [`Setup`] over as soon
//! as its image is ready (or failed). Their jobs wait outside the queue until then, so the jobs
//! of ready instances run while other images build.
//!
//! The runner owns both ends' meaning: it closes the channel when it stops dispatching (an
//! interrupt, the deadline, a write failure) or ends, which tells the preparing side that no
//! more setups are wanted ([`Arrive::closed`]). When the preparing side drops its sender while
//! instances are still awaited, their jobs run with the setup the plan gave them (whose image
//! says why there is none): infrastructure errors, as for any missing image.

use std::collections::HashSet;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::Setup;

/// The preparing side: hands ready setups to the runner.
#[derive(Debug, Clone)]
pub struct Arrive {
    tx: mpsc::UnboundedSender<Arc<Setup>>,
}

impl Arrive {
    /// Hands `setup` (its instance's final image, or why there is none) to the runner. False
    /// when the runner takes no more (it stopped dispatching or ended).
    pub fn send(&self, setup: Arc<Setup>) -> bool {
        self.tx.send(setup).is_ok()
    }

    /// Resolves once the runner takes no more setups.
    pub async fn closed(&self) {
        self.tx.closed().await
    }

    /// True once the runner takes no more setups.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// The runner's side: which instances are awaited, and the setups as they arrive.
#[derive(Debug)]
pub struct Arrivals {
    pub(super) awaited: HashSet<String>,
    pub(super) rx: Option<mpsc::UnboundedReceiver<Arc<Setup>>>,
}

impl Arrivals {
    /// Nothing awaited: every setup is in the plan.
    pub fn none() -> Self {
        Arrivals {
            awaited: HashSet::new(),
            rx: None,
        }
    }

    /// Instances still awaited.
    pub fn awaited(&self) -> usize {
        self.awaited.len()
    }
}

/// A channel for the setups of `awaited` instances: the preparing side's [`Arrive`] and the
/// runner's [`Arrivals`] (given to [`super::run_arriving`]).
pub fn arrivals(awaited: impl IntoIterator<Item = String>) -> (Arrive, Arrivals) {
    let (tx, rx) = mpsc::unbounded_channel();
    (
        Arrive { tx },
        Arrivals {
            awaited: awaited.into_iter().collect(),
            rx: Some(rx),
        },
    )
}
