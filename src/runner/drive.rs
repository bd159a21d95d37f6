//! The dispatcher's driver: one task that turns what arrives (predictions submitted, setups
//! ready, jobs over, the clock, interrupts) into the [`Dispatcher`]'s events and carries out
//! the effects it returns: starting jobs on bounded workers, answering submitters, asking for
//! setups, telling listeners. At its start it removes the containers dead processes left; at its
//! end, this process's own, and it keeps the jobs' durations for the next run's order.
//!
//! Workers: at most `workers` containers run at once. With an engine that prepares ahead
//! (Docker: a container created, its files copied in and its output attached before it may
//! start), twice as many jobs are dispatched and the engine's start gate lets `workers` of
//! them run, so a container starts the moment a running one's main process ends.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::engine::{Engine, StartGate};

use super::dispatcher::{Answer, Dispatcher, Effect, Item, MemberId, SetupOffer, Tally};
use super::job::{self, Job, JobDone};
use super::order::Durations;
use super::reap::{reap, Reap};
use super::{RunEvent, Setup};

/// Predictions for the dispatcher, each with where its answer goes.
#[derive(Debug, Default)]
pub struct Submission {
    /// The predictions and their answers' way back.
    pub items: Vec<(Item, oneshot::Sender<Answer>)>,
}

/// An instance's final setup, from the preparing side.
#[derive(Debug, Clone)]
pub struct Arrival {
    /// The setup: its image, or why there is none.
    pub setup: Arc<Setup>,
    /// Prepare it again for later predictions (it failed in a way that may pass).
    pub again: bool,
}

/// What the driver is told besides predictions and setups.
#[derive(Debug)]
pub enum Control {
    /// A Ctrl-C: the first stops dispatching, the second kills the running jobs.
    Interrupt,
    /// Stop dispatching and kill the running jobs at once.
    Kill,
    /// Stop dispatching (running jobs finish), telling the listeners `why` if given.
    Stop(Option<RunEvent>),
    /// Ask for an instance's setup before any prediction of it.
    Expect(SetupOffer),
}

/// The driver's ends of its channels.
#[derive(Debug)]
pub struct Channels {
    /// Predictions; the driver ends once this is closed and every job is over.
    pub submissions: mpsc::UnboundedReceiver<Submission>,
    /// Setups as they become ready; closed by the sender when none will come any more.
    pub setups: mpsc::UnboundedReceiver<Arrival>,
    /// Interrupts and stops.
    pub control: mpsc::UnboundedReceiver<Control>,
    /// Where the instances whose setup is wanted go (in the order their jobs will start).
    pub need: mpsc::UnboundedSender<String>,
    /// Listeners.
    pub events: mpsc::UnboundedSender<RunEvent>,
}

/// How the driver sets out.
#[derive(Debug, Clone)]
pub struct DriveOptions {
    /// Containers at once.
    pub workers: usize,
    /// Stop dispatching after this long (running jobs finish).
    pub deadline: Option<Duration>,
    /// Whose containers these are: the owner label (`host:pid:start`).
    pub owner: String,
    /// The run id whose unowned leftovers are removed at the start.
    pub run_id: String,
    /// Where the jobs' durations are kept for the next run's order (`None`: not kept).
    pub durations: Option<std::path::PathBuf>,
}

/// How the driver ended.
#[derive(Debug, Default)]
pub struct Driven {
    /// What the dispatcher did.
    pub tally: Tally,
    /// Problems survived (containers that could not be listed or removed, ...).
    pub problems: Vec<String>,
    /// Containers of this process found (and removed) at the end.
    pub leftovers: usize,
    /// Containers of this process that could not be removed.
    pub unstopped: Vec<String>,
}

/// Runs `d` until its submissions are closed and every job is over (or dispatching stopped
/// and the running jobs are over).
pub async fn drive<E: Engine>(
    engine: Arc<E>,
    mut d: Dispatcher,
    opts: DriveOptions,
    ch: Channels,
) -> Driven {
    let Channels {
        submissions,
        setups,
        mut control,
        need,
        events,
    } = ch;
    let mut submissions = Some(submissions);
    let mut setups = Some(setups);
    let mut problems = Vec::new();
    let emit = |e: RunEvent| {
        let _ = events.send(e);
    };
    let (reaped, _) = reap(
        &*engine,
        Reap::Stale {
            run_id: &opts.run_id,
        },
        &mut problems,
    )
    .await;
    emit(RunEvent::Reaped {
        count: reaped.len(),
        at_start: true,
    });

    let workers = opts.workers.max(1);
    let ahead = engine.prepares_ahead();
    let gate = StartGate::new(workers);
    let sem = Arc::new(Semaphore::new(if ahead { 2 * workers } else { workers }));
    let mut running: JoinSet<JobDone> = JoinSet::new();
    let mut in_flight: HashMap<tokio::task::Id, usize> = HashMap::new();
    let mut replies: HashMap<MemberId, oneshot::Sender<Answer>> = HashMap::new();
    let mut control_open = true;
    let run_deadline = tokio::time::sleep(opts.deadline.unwrap_or(Duration::MAX / 4));
    tokio::pin!(run_deadline);
    let far = Instant::now() + Duration::from_secs(86_400 * 365);

    loop {
        if !d.dispatching() {
            // Nothing more is taken: submitters learn it, and what they sent is not run;
            // the preparing side may stop.
            submissions = None;
            setups = None;
        } else if submissions.is_none() && d.awaited() == 0 && d.idle() {
            setups = None;
        }
        if d.idle() && (submissions.is_none() || !d.dispatching()) {
            break;
        }
        let now = Instant::now();
        let settle = d.settle_until(now);
        let next_deadline = d.next_deadline();
        let mut fx = Vec::new();
        tokio::select! {
            biased;
            c = control.recv(), if control_open => match c {
                Some(Control::Interrupt) => fx = d.interrupt(),
                Some(Control::Kill) => fx = d.kill(),
                Some(Control::Stop(why)) => fx = d.stop(why),
                Some(Control::Expect(offer)) => fx = d.expect(offer),
                None => control_open = false,
            },
            _ = &mut run_deadline, if opts.deadline.is_some() && d.dispatching() => {
                fx = d.stop(Some(RunEvent::DeadlinePassed));
            }
            _ = tokio::time::sleep_until(next_deadline.unwrap_or(far)), if next_deadline.is_some() => {
                fx = d.expire_due(Instant::now());
            }
            // Before the setups: a submission that makes an instance awaited was sent before
            // that instance's setup, so it is always taken first.
            sub = recv(&mut submissions), if submissions.is_some() => match sub {
                Some(sub) => {
                    let mut items = Vec::with_capacity(sub.items.len());
                    for (item, reply) in sub.items {
                        replies.insert(item.member, reply);
                        items.push(item);
                    }
                    fx = d.submit(Instant::now(), items);
                }
                None => submissions = None,
            },
            arrived = recv(&mut setups), if setups.is_some() => match arrived {
                Some(a) => fx = d.setup_ready(Instant::now(), a.setup, a.again),
                None => {
                    setups = None;
                    fx = d.setups_ended(Instant::now());
                }
            },
            Some(res) = running.join_next_with_id(), if !running.is_empty() => match res {
                Ok((id, done)) => {
                    if let Some(seq) = in_flight.remove(&id) {
                        fx = d.finished(seq, done);
                    }
                }
                Err(e) => {
                    if let Some(seq) = in_flight.remove(&e.id()) {
                        fx = if e.is_cancelled() {
                            d.abandoned(seq)
                        } else {
                            d.panicked(seq, &e.to_string())
                        };
                    }
                }
            },
            // More setups may be about to arrive, one expected to run longer than the head.
            _ = tokio::time::sleep_until(settle.unwrap_or(far)), if settle.is_some() => {}
            permit = sem.clone().acquire_owned(), if d.can_start(now) => {
                let Ok(permit) = permit else { break };
                let mut permit = Some(permit);
                for effect in d.start_next(Instant::now()) {
                    match (effect, permit.take()) {
                        (Effect::Start { job, config }, Some(permit)) => {
                            let seq = job.seq;
                            let engine = engine.clone();
                            let ticket = ahead.then(|| gate.ticket());
                            let handle = running.spawn(start(engine, job, config, ticket, permit));
                            in_flight.insert(handle.id(), seq);
                        }
                        (other, held) => {
                            permit = held;
                            fx.push(other);
                        }
                    }
                }
            }
        }
        for effect in fx {
            match effect {
                Effect::Answer(member, answer) => {
                    if let Some(reply) = replies.remove(&member) {
                        let _ = reply.send(answer);
                    }
                }
                Effect::NeedSetup(id) => {
                    let _ = need.send(id);
                }
                Effect::Event(e) => emit(e),
                Effect::CloseGate => gate.close(),
                Effect::AbortRunning => {
                    running.abort_all();
                    while let Some(res) = running.join_next_with_id().await {
                        let fx = match res {
                            Ok((id, done)) => in_flight.remove(&id).map(|s| d.finished(s, done)),
                            Err(e) => in_flight.remove(&e.id()).map(|s| d.abandoned(s)),
                        };
                        for f in fx.into_iter().flatten() {
                            if let Effect::Answer(member, answer) = f {
                                if let Some(reply) = replies.remove(&member) {
                                    let _ = reply.send(answer);
                                }
                            }
                        }
                    }
                    let me = Reap::Mine { owner: &opts.owner };
                    let (n, _) = reap(&*engine, me, &mut problems).await;
                    emit(RunEvent::Reaped {
                        count: n.len(),
                        at_start: false,
                    });
                }
                Effect::Start { .. } => {}
            }
        }
    }
    // Whatever was still waiting for an answer (a submission sent as dispatching stopped) is
    // dropped: its receiver reads "not run".
    drop(replies);
    drop(setups);

    // Jobs remove their own containers; whatever is still there (a daemon that restarted
    // mid-job, a killed job) goes now. What cannot be removed is reported as unstopped.
    let (removed, unstopped) =
        reap(&*engine, Reap::Mine { owner: &opts.owner }, &mut problems).await;
    if !removed.is_empty() {
        emit(RunEvent::Reaped {
            count: removed.len(),
            at_start: false,
        });
    }
    let mut tally = d.tally().clone();
    if let Some(path) = &opts.durations {
        if let Err(e) = Durations::remember(path, &tally.observed) {
            emit(RunEvent::Note {
                message: format!("job durations not kept for the next run's order: {e}"),
            });
        }
    }
    // Images the engine exported for the jobs (Swarm: pushed to the registry), with their time.
    for (_, took) in engine.exported() {
        tally.time.exported += 1;
        tally.time.export += took.as_secs_f64();
    }
    // What the engine added for the jobs (Swarm: registry names of pushed images) goes before
    // the caller cleans up the images.
    // The problems are the caller's to report (once, with the rest of its closing report).
    problems.extend(engine.finish_run().await);
    Driven {
        tally,
        problems,
        leftovers: removed.len(),
        unstopped,
    }
}

/// Runs one job on a worker: `permit` is held until it is over, `ticket` is its turn at the
/// start gate.
async fn start<E: Engine>(
    engine: Arc<E>,
    job: Arc<Job>,
    config: Arc<super::job_config::JobConfig>,
    ticket: Option<crate::engine::Ticket>,
    permit: tokio::sync::OwnedSemaphorePermit,
) -> JobDone {
    let _permit = permit;
    job::execute(engine, job, config, ticket).await
}

async fn recv<T>(rx: &mut Option<mpsc::UnboundedReceiver<T>>) -> Option<T> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}
