//! Predictions handed to a dispatcher that is already running: a channel of [`Submission`]s
//! beside the setups that arrive while images build (`arrivals.rs`). Each prediction comes
//! with the folder its files go to, an optional deadline and a [`Reply`] through which the
//! dispatcher hands its outcome back in memory ([`Delivery`]), once its verdict is written.
//!
//! `run` hands the dispatcher its whole plan up front and no submissions
//! ([`Submissions::none`]); a long-lived caller (the evaluator behind `swe-eval serve`) keeps the
//! channel open and submits as requests come. The dispatcher ends once the channel is closed
//! and every job is done. When it stops dispatching (an interrupt) it drops its end: the
//! sender learns it ([`Submit::is_closed`]), and the replies of predictions never run are
//! dropped unanswered, which their receivers read as "not run".

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use swe_eval_core::predictions::Prediction;

use super::store::Verdict;
use super::Setup;

/// Predictions for the dispatcher, with the setups of instances it does not know yet.
#[derive(Debug, Default)]
pub struct Submission {
    /// Setups of instances the dispatcher has not seen, or must take again (an instance whose
    /// image is prepared anew). `awaited`: the setup is a stand-in and the final one comes
    /// later through the run's [`super::Arrive`]; the instance's jobs wait until it does.
    pub setups: Vec<NewSetup>,
    /// The predictions.
    pub items: Vec<Submitted>,
}

/// A setup handed over with a [`Submission`].
#[derive(Debug, Clone)]
pub struct NewSetup {
    /// The instance's setup (a stand-in whose image says why there is none yet, when
    /// `awaited`).
    pub setup: Arc<Setup>,
    /// The final setup arrives later, through the run's arrivals channel.
    pub awaited: bool,
}

/// One prediction submitted to a running dispatcher.
#[derive(Debug)]
pub struct Submitted {
    /// The prediction.
    pub prediction: Prediction,
    /// Its folder: the job's log files and `verdict.json` go there, and a verdict already
    /// there for the same patch is taken instead of running (resume).
    pub dir: PathBuf,
    /// When its answer is no longer wanted: a job not started by then is not run
    /// ([`Delivery::Expired`]), and a job started before has its container's timeout cut to
    /// the time left.
    pub deadline: Option<tokio::time::Instant>,
    /// Where its outcome goes.
    pub reply: Reply,
}

/// Where a submitted prediction's outcome goes.
pub type Reply = oneshot::Sender<Delivery>;

/// What the dispatcher hands back for a submitted prediction.
#[derive(Debug, Clone)]
pub enum Delivery {
    /// Its verdict, written to its folder.
    Done(Box<Finished>),
    /// Its deadline passed first: not started (`ran` false), or started with its container's
    /// timeout cut to the time left and killed at it (`ran` true). No verdict is written, so
    /// the prediction runs again when submitted again.
    Expired {
        /// A container ran (and was killed at the deadline).
        ran: bool,
    },
}

/// A prediction's verdict and where its time went before its container started.
#[derive(Debug, Clone)]
pub struct Finished {
    /// The verdict, as written.
    pub verdict: Verdict,
    /// Found in its folder from an earlier run: nothing ran now.
    pub resumed: bool,
    /// From its submission until its instance's setup was ready (the image prepared).
    pub image_wait: Duration,
    /// From its setup being ready until its job was dispatched; `None` when no job was
    /// dispatched for it (resumed, empty patch).
    pub queue_wait: Option<Duration>,
}

/// The sending end: hands submissions to the dispatcher.
#[derive(Debug, Clone)]
pub struct Submit {
    tx: mpsc::UnboundedSender<Submission>,
}

impl Submit {
    /// Hands `submission` over; gives it back when the dispatcher takes no more (it stopped
    /// dispatching or ended).
    pub fn send(&self, submission: Submission) -> Result<(), Submission> {
        self.tx.send(submission).map_err(|e| e.0)
    }

    /// True once the dispatcher takes no more submissions.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// Resolves once the dispatcher takes no more submissions.
    pub async fn closed(&self) {
        self.tx.closed().await
    }
}

/// The dispatcher's end.
#[derive(Debug)]
pub struct Submissions {
    pub(super) rx: Option<mpsc::UnboundedReceiver<Submission>>,
}

impl Submissions {
    /// No submissions: the plan is all there is (`run`).
    pub fn none() -> Self {
        Submissions { rx: None }
    }
}

/// A channel of submissions: the caller's [`Submit`] and the dispatcher's [`Submissions`]
/// (given to [`super::dispatch`]). The dispatcher runs until every [`Submit`] is dropped.
pub fn submissions() -> (Submit, Submissions) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Submit { tx }, Submissions { rx: Some(rx) })
}

/// The dispatcher's record of a submitted job's members: their replies (in member order), when
/// it was received and became ready, its deadline, and whether its timeout was cut to it.
#[derive(Debug)]
pub(super) struct Pending {
    pub replies: Vec<Option<Reply>>,
    pub received: tokio::time::Instant,
    pub ready: Option<tokio::time::Instant>,
    pub dispatched: Option<tokio::time::Instant>,
    /// The latest deadline of its members (`None`: one has none).
    pub deadline: Option<tokio::time::Instant>,
    /// The job's container timeout was cut to the time left before `deadline`.
    pub cut: bool,
}

impl Pending {
    /// The members' deadline has passed.
    pub fn expired(&self, now: tokio::time::Instant) -> bool {
        self.deadline.is_some_and(|d| d <= now)
    }

    /// Tells every member its deadline passed.
    pub fn expire(self, ran: bool) {
        for r in self.replies.into_iter().flatten() {
            let _ = r.send(Delivery::Expired { ran });
        }
    }

    /// Hands member `i` its verdict.
    pub fn deliver(&mut self, i: usize, verdict: &Verdict) {
        let Some(reply) = self.replies.get_mut(i).and_then(Option::take) else {
            return;
        };
        let ready = self.ready.unwrap_or(self.received);
        let _ = reply.send(Delivery::Done(Box::new(Finished {
            verdict: verdict.clone(),
            resumed: false,
            image_wait: ready.saturating_duration_since(self.received),
            queue_wait: self.dispatched.map(|d| d.saturating_duration_since(ready)),
        })));
    }
}

/// Answers `reply` at once with `verdict` (resumed, or an empty patch: nothing to run).
pub(super) fn answer(reply: Reply, verdict: &Verdict, resumed: bool) {
    let _ = reply.send(Delivery::Done(Box::new(Finished {
        verdict: verdict.clone(),
        resumed,
        image_wait: Duration::ZERO,
        queue_wait: None,
    })));
}
