//! The dispatcher as a state machine: it owns the state of every job not yet over (waiting for
//! its instance's setup, queued, running) and of every prediction waiting on one, and turns
//! each event into the effects it calls for, which its driver (`drive.rs`) carries out. It does
//! no I/O, spawns nothing and reads no clock: each method is given the time, so a table of
//! state x event -> effects tests it directly (`dispatcher_tests.rs`).
//!
//! Its events, one method each: predictions submitted ([`Dispatcher::submit`]), an instance's
//! setup ready ([`Dispatcher::setup_ready`]) or none to come ([`Dispatcher::setups_ended`]), a
//! worker free to start a job ([`Dispatcher::start_next`]), a job over
//! ([`Dispatcher::finished`], [`Dispatcher::panicked`]), deadlines passing
//! ([`Dispatcher::expire_due`]), and the stops: an interrupt ([`Dispatcher::interrupt`]), the
//! run's deadline or a failed write ([`Dispatcher::stop`]).
//!
//! The rules every face shares are decided here, once: an empty patch gets its verdict at once
//! (unless empty runs are asked for; [`decided_by_patch`], which `serve`'s admission also
//! calls); identical (instance, patch) pairs share one job while it
//! is not over; a prediction whose deadline passes is answered `expired` at that moment, a job
//! none of whose predictions is still waiting is not started, and a job started close to its
//! predictions' deadline gets the time left as its timeout; jobs start longest expected first.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use swe_eval_core::predictions::Prediction;

use super::job::{Job, JobDone, JobLogs};
use super::job_config::{recipe, JobConfig};
use super::order::{self, Durations};
use super::store::{Category, Verdict};
use super::{PatchMode, RunEvent, Setup, TimeSpent};

/// Names one prediction handed to the dispatcher (unique in its dispatcher, chosen by the
/// submitter).
pub type MemberId = u64;

/// A prediction handed to the dispatcher.
#[derive(Debug, Clone)]
pub struct Item {
    /// Its name in the answers.
    pub member: MemberId,
    /// The prediction.
    pub prediction: Prediction,
    /// Its instance's setup as the submitter knows it.
    pub setup: SetupOffer,
    /// When its answer is no longer wanted.
    pub deadline: Option<Instant>,
}

/// An instance's setup as the submitter offers it with a prediction (taken only when the
/// dispatcher knows nothing better of the instance).
#[derive(Debug, Clone)]
pub enum SetupOffer {
    /// The final setup: its image is there, or it says why there is none (no test spec).
    Final(Arc<Setup>),
    /// A stand-in whose image says why there is none yet: the image must be prepared
    /// ([`Effect::NeedSetup`]); jobs wait for the final setup.
    Prepare(Arc<Setup>),
}

impl SetupOffer {
    fn instance_id(&self) -> &str {
        match self {
            SetupOffer::Final(s) | SetupOffer::Prepare(s) => &s.instance.instance_id,
        }
    }
}

/// What a submitted prediction gets.
#[derive(Debug, Clone)]
pub enum Answer {
    /// Its verdict.
    Decided(Box<Decided>),
    /// Its deadline passed first: its job had not started (`ran` false), or had (`ran` true;
    /// the job's timeout was cut to the deadline). Nothing is known of the patch.
    Expired {
        /// A container ran for it.
        ran: bool,
    },
    /// Not run: dispatching stopped (an interrupt, the run's deadline, a failed write) before
    /// its job started, or its job was prepared and withdrawn.
    NotRun,
}

/// A prediction's verdict, its log files and where its time went before its container started.
#[derive(Debug, Clone)]
pub struct Decided {
    /// The verdict (the prediction's own: its model and sample).
    pub verdict: Verdict,
    /// The job's official log files (`None` where nothing ran: an empty patch).
    pub logs: Option<Arc<JobLogs>>,
    /// From its submission until its instance's setup was ready (the image prepared).
    pub image_wait: Duration,
    /// From its setup being ready until its job was dispatched; `None` when no job was
    /// dispatched for it (an empty patch).
    pub queue_wait: Option<Duration>,
}

/// What the dispatcher asks its driver to do.
#[derive(Debug)]
pub enum Effect {
    /// Hand `answer` to the submitter of `member`.
    Answer(MemberId, Answer),
    /// Start `job` (the driver holds a worker for it) with `config` (the run's, or with its
    /// timeout cut to its predictions' deadline).
    Start {
        /// The job.
        job: Arc<Job>,
        /// Its settings.
        config: Arc<JobConfig>,
    },
    /// The final setup of this instance is wanted: prepare its image, then hand the setup
    /// back ([`Dispatcher::setup_ready`]). Asked in the order jobs will need them.
    NeedSetup(String),
    /// Tell the listeners.
    Event(RunEvent),
    /// No job starts any more: the driver closes its start gate (jobs prepared ahead are
    /// withdrawn).
    CloseGate,
    /// Kill the running jobs (a second interrupt).
    AbortRunning,
}

/// The settings the dispatcher decides with.
#[derive(Debug, Clone)]
pub struct Rules {
    /// Every job's settings.
    pub config: Arc<JobConfig>,
    /// Identical (instance, patch) pairs share a job.
    pub dedupe: bool,
    /// Empty patches run (the eval script without a patch: `validate`) instead of getting an
    /// `empty_patch` verdict at once.
    pub run_empty: bool,
    /// Earlier runs' durations, for the order (empty: the submission order).
    pub hints: Durations,
    /// Where the durations came from, for the note that names it.
    pub hints_from: Option<std::path::PathBuf>,
}

/// Counts and times of what the dispatcher did, for the closing report.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Containers started (jobs withdrawn before starting are not counted; jobs of an instance
    /// without an image start none).
    pub jobs_run: usize,
    /// Engine failures retried, over all jobs.
    pub infra_retries: u32,
    /// Interrupts received.
    pub interrupts: u32,
    /// A second interrupt killed the running jobs.
    pub killed: bool,
    /// Where the jobs' time went.
    pub time: TimeSpent,
    /// (instance, seconds its container ran) of jobs that ran to a verdict, for the next
    /// run's order.
    pub observed: Vec<(String, f64)>,
}

/// What the dispatcher knows of an instance's setup.
#[derive(Debug, Clone)]
enum SetupState {
    /// Being prepared: its jobs wait. The stand-in is used if none comes.
    Awaited(Arc<Setup>),
    /// Final.
    Ready(Arc<Setup>),
    /// Final for the jobs that have it, but to be prepared again for new ones (its
    /// preparation failed in a way that may pass, or a job found no image).
    Stale(Arc<Setup>),
}

/// Where a job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Its instance's setup has not arrived.
    Waiting,
    /// Ready to start.
    Queued,
    /// Dispatched (its container starting, running, or being graded).
    Running,
}

/// A prediction waiting on a job.
#[derive(Debug, Clone)]
struct Member {
    id: MemberId,
    model: String,
    sample: u32,
    deadline: Option<Instant>,
}

/// A job not over yet, with the predictions waiting on it.
#[derive(Debug)]
struct Entry {
    instance_id: String,
    patch: String,
    patch_hash: String,
    mode: PatchMode,
    members: Vec<Member>,
    phase: Phase,
    /// When it was made, became ready, and was dispatched.
    received: Instant,
    ready: Option<Instant>,
    dispatched: Option<Instant>,
    /// Its setup, once ready.
    setup: Option<Arc<Setup>>,
    /// Its timeout was cut to its predictions' deadline.
    cut: bool,
}

impl Entry {
    fn key(&self) -> (String, String) {
        (self.instance_id.clone(), self.patch_hash.clone())
    }
}

/// The dispatcher (see the module docs).
#[derive(Debug)]
pub struct Dispatcher {
    rules: Rules,
    setups: HashMap<String, SetupState>,
    entries: HashMap<usize, Entry>,
    queue: VecDeque<usize>,
    waiting: HashMap<String, Vec<usize>>,
    /// Jobs not over, by (instance, patch hash): a new identical prediction joins one.
    by_key: HashMap<(String, String), usize>,
    /// Deadlines of waiting predictions, earliest first, with their job.
    deadlines: BTreeSet<(Instant, MemberId, usize)>,
    next_seq: usize,
    dispatching: bool,
    /// When setups last arrived (the start counts as one): a burst of arrivals is ordered
    /// before dispatch takes from it (`order::SETTLE` (150 ms)).
    last_arrival: Instant,
    /// The order note was given (it is given once, for the first jobs).
    noted: bool,
    tally: Tally,
}

impl Dispatcher {
    /// A dispatcher deciding by `rules`, started at `now`.
    pub fn new(rules: Rules, now: Instant) -> Self {
        Dispatcher {
            rules,
            setups: HashMap::new(),
            entries: HashMap::new(),
            queue: VecDeque::new(),
            waiting: HashMap::new(),
            by_key: HashMap::new(),
            deadlines: BTreeSet::new(),
            next_seq: 0,
            dispatching: true,
            last_arrival: now,
            noted: false,
            tally: Tally::default(),
        }
    }

    /// What it did so far.
    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    /// It still starts jobs.
    pub fn dispatching(&self) -> bool {
        self.dispatching
    }

    /// No job is waiting, queued or running.
    pub fn idle(&self) -> bool {
        self.entries.is_empty()
    }

    /// Jobs dispatched and not over.
    pub fn running(&self) -> usize {
        self.entries
            .values()
            .filter(|e| e.phase == Phase::Running)
            .count()
    }

    /// Predictions waiting for an answer.
    pub fn waiting_members(&self) -> usize {
        self.entries.values().map(|e| e.members.len()).sum()
    }

    /// Instances whose setup is being prepared.
    pub fn awaited(&self) -> usize {
        self.setups
            .values()
            .filter(|s| matches!(s, SetupState::Awaited(_)))
            .count()
    }

    /// Predictions submitted: each is answered at once (an empty patch, or dispatching has
    /// stopped), joins the job of an identical one not over, or makes a job (queued, or waiting
    /// for its instance's setup, which is then asked for).
    pub fn submit(&mut self, now: Instant, items: Vec<Item>) -> Vec<Effect> {
        let mut fx = Vec::new();
        let (mut jobs, mut shared, mut empty) = (0, 0, 0);
        let predictions = items.len();
        let mut asked: Vec<String> = Vec::new();
        let mut new_ready: Vec<usize> = Vec::new();
        for item in items {
            if !self.dispatching {
                fx.push(Effect::Answer(item.member, Answer::NotRun));
                continue;
            }
            let p = &item.prediction;
            let setup = match &item.setup {
                SetupOffer::Final(s) | SetupOffer::Prepare(s) => s,
            };
            if let Some(decided) =
                decided_by_patch(p, setup, &self.rules.config, self.rules.run_empty)
            {
                empty += 1;
                fx.push(Effect::Answer(
                    item.member,
                    Answer::Decided(Box::new(decided)),
                ));
                continue;
            }
            let id = item.setup.instance_id().to_string();
            self.take_offer(&id, item.setup.clone(), &mut asked);
            let member = Member {
                id: item.member,
                model: p.model_name_or_path.clone(),
                sample: p.sample,
                deadline: item.deadline,
            };
            let hash = p.patch_hash();
            let key = (id.clone(), hash.clone());
            if let Some(&seq) = self.by_key.get(&key).filter(|_| self.rules.dedupe) {
                shared += 1;
                self.add_member(seq, member);
                continue;
            }
            jobs += 1;
            let seq = self.next_seq;
            self.next_seq += 1;
            let setup = self.final_setup(&id);
            let mode = if p.is_empty_patch() {
                PatchMode::None
            } else {
                PatchMode::Apply
            };
            let entry = Entry {
                instance_id: id.clone(),
                patch: p.patch().to_string(),
                patch_hash: hash,
                mode,
                members: Vec::new(),
                phase: if setup.is_some() {
                    Phase::Queued
                } else {
                    Phase::Waiting
                },
                received: now,
                ready: setup.is_some().then_some(now),
                dispatched: None,
                setup,
                cut: false,
            };
            if self.rules.dedupe {
                self.by_key.insert(key, seq);
            }
            match entry.phase {
                Phase::Queued => new_ready.push(seq),
                _ => self.waiting.entry(id).or_default().push(seq),
            }
            self.entries.insert(seq, entry);
            self.add_member(seq, member);
        }
        self.enqueue(new_ready);
        if !self.noted && jobs > 0 {
            self.noted = true;
            if let Some(path) = &self.rules.hints_from {
                let ids: Vec<&str> = self
                    .entries
                    .values()
                    .map(|e| e.instance_id.as_str())
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                if let Some(message) = order::order_note(&self.rules.hints, &ids, path) {
                    fx.push(Effect::Event(RunEvent::Note { message }));
                }
            }
        }
        // Images are asked for in the order their jobs will start: longest expected first.
        order::arrange(&mut asked, |id| id.as_str(), &self.rules.hints);
        fx.extend(asked.into_iter().map(Effect::NeedSetup));
        fx.push(Effect::Event(RunEvent::Submitted {
            predictions,
            jobs,
            shared,
            empty,
        }));
        fx
    }

    /// Asks for `instance_id`'s setup now (before any prediction of it), as `offer` says: a
    /// server that prepares every image at its start.
    pub fn expect(&mut self, offer: SetupOffer) -> Vec<Effect> {
        let mut asked = Vec::new();
        let id = offer.instance_id().to_string();
        self.take_offer(&id, offer, &mut asked);
        asked.into_iter().map(Effect::NeedSetup).collect()
    }

    /// Takes the offered setup of `id` unless a better one is known; a setup to prepare is
    /// asked for (in `asked`).
    fn take_offer(&mut self, id: &str, offer: SetupOffer, asked: &mut Vec<String>) {
        match (self.setups.get(id), offer) {
            (Some(SetupState::Awaited(_) | SetupState::Ready(_)), _) => {}
            (None | Some(SetupState::Stale(_)), SetupOffer::Final(s)) => {
                self.setups.insert(id.to_string(), SetupState::Ready(s));
            }
            (None | Some(SetupState::Stale(_)), SetupOffer::Prepare(stand_in)) => {
                self.setups
                    .insert(id.to_string(), SetupState::Awaited(stand_in));
                asked.push(id.to_string());
            }
        }
    }

    /// The setup a new job of `id` runs with: the final one, or `None` while it is awaited.
    fn final_setup(&self, id: &str) -> Option<Arc<Setup>> {
        match self.setups.get(id)? {
            SetupState::Awaited(_) => None,
            SetupState::Ready(s) | SetupState::Stale(s) => Some(s.clone()),
        }
    }

    fn add_member(&mut self, seq: usize, m: Member) {
        if let Some(d) = m.deadline {
            self.deadlines.insert((d, m.id, seq));
        }
        if let Some(e) = self.entries.get_mut(&seq) {
            e.members.push(m);
        }
    }

    /// Puts jobs on the queue and orders it: longest expected first, else (and among
    /// equals) in the order they were made.
    fn enqueue(&mut self, mut seqs: Vec<usize>) {
        if seqs.is_empty() {
            return;
        }
        seqs.sort_unstable();
        self.queue.extend(seqs);
        let (entries, hints) = (&self.entries, &self.rules.hints);
        let expected = |seq: &usize| {
            let id = entries.get(seq).map_or("", |e| e.instance_id.as_str());
            hints.expected(id)
        };
        if hints.median().is_some() {
            // Stable: equal expectations keep the order the jobs were made in.
            self.queue
                .make_contiguous()
                .sort_by(|a, b| expected(b).total_cmp(&expected(a)));
        }
    }

    /// The final setup of its instance arrived: its waiting jobs join the queue. With
    /// `again`, a later prediction of the instance asks for it anew (it failed in a way that
    /// may pass).
    pub fn setup_ready(&mut self, now: Instant, setup: Arc<Setup>, again: bool) -> Vec<Effect> {
        let id = setup.instance.instance_id.clone();
        self.last_arrival = now;
        let state = if again {
            SetupState::Stale(setup.clone())
        } else {
            SetupState::Ready(setup.clone())
        };
        self.setups.insert(id.clone(), state);
        let seqs = self.waiting.remove(&id).unwrap_or_default();
        for seq in &seqs {
            if let Some(e) = self.entries.get_mut(seq) {
                e.phase = Phase::Queued;
                e.ready = Some(now);
                e.setup = Some(setup.clone());
            }
        }
        self.enqueue(seqs);
        Vec::new()
    }

    /// No setup will arrive any more (the preparing side is gone): the jobs still waiting run
    /// with their instance's stand-in, whose image says why there is none (infrastructure
    /// errors, as for any missing image).
    pub fn setups_ended(&mut self, now: Instant) -> Vec<Effect> {
        let awaited: Vec<Arc<Setup>> = self
            .setups
            .values()
            .filter_map(|s| match s {
                SetupState::Awaited(stand_in) => Some(stand_in.clone()),
                _ => None,
            })
            .collect();
        let mut fx = Vec::new();
        for stand_in in awaited {
            fx.extend(self.setup_ready(now, stand_in, true));
        }
        fx
    }

    /// Whether a free worker would start a job now: dispatching, a job queued, and no burst
    /// of arrivals being waited out (see [`Dispatcher::settle_until`]).
    pub fn can_start(&self, now: Instant) -> bool {
        self.dispatching && !self.queue.is_empty() && self.settle_until(now).is_none()
    }

    /// Until when dispatch waits for more setups: after the start or an arrival, for at most
    /// `order::SETTLE` (150 ms), while an instance still awaited is expected to run longer than the
    /// queue's head (`None`: no wait).
    pub fn settle_until(&self, now: Instant) -> Option<Instant> {
        let until = self.last_arrival + order::SETTLE;
        if now >= until {
            return None;
        }
        let head = self.queue.front().and_then(|s| self.entries.get(s))?;
        let awaited = self.setups.iter().filter_map(|(id, s)| match s {
            SetupState::Awaited(_) => Some(id.as_str()),
            _ => None,
        });
        order::awaited_runs_longer(&self.rules.hints, awaited, &head.instance_id).then_some(until)
    }

    /// A worker is free: the next queued job whose predictions still want it starts. A job
    /// none of whose predictions is waiting any more is dropped; a job whose predictions all
    /// have deadlines gets at most the time left before the latest as its timeout.
    pub fn start_next(&mut self, now: Instant) -> Vec<Effect> {
        let mut fx = Vec::new();
        if !self.dispatching {
            return fx;
        }
        fx.extend(self.expire_due(now));
        while let Some(seq) = self.queue.pop_front() {
            let Some(e) = self.entries.get_mut(&seq) else {
                continue;
            };
            if e.members.is_empty() {
                let key = e.key();
                self.entries.remove(&seq);
                self.forget_key(key, seq);
                continue;
            }
            let Some(setup) = e.setup.clone() else {
                continue;
            };
            let mut config = self.rules.config.clone();
            let latest = e
                .members
                .iter()
                .map(|m| m.deadline)
                .try_fold(None::<Instant>, |acc, d| {
                    d.map(|d| Some(acc.map_or(d, |a: Instant| a.max(d))))
                })
                .flatten();
            if let Some(latest) = latest {
                let left = latest.saturating_duration_since(now);
                if left < config.timeout {
                    e.cut = true;
                    config = Arc::new(JobConfig {
                        timeout: left.max(Duration::from_secs(1)),
                        ..(*config).clone()
                    });
                }
            }
            e.phase = Phase::Running;
            e.dispatched = Some(now);
            if setup.image.is_ok() {
                self.tally.jobs_run += 1;
            }
            fx.push(Effect::Event(RunEvent::JobStarted {
                instance_id: e.instance_id.clone(),
            }));
            fx.push(Effect::Start {
                job: Arc::new(Job {
                    seq,
                    setup,
                    patch: e.patch.clone(),
                    patch_hash: e.patch_hash.clone(),
                    mode: e.mode,
                }),
                config,
            });
            break;
        }
        fx
    }

    /// Removes job `seq` with what points at it (its key, its predictions' deadlines).
    fn take_entry(&mut self, seq: usize) -> Option<Entry> {
        let e = self.entries.remove(&seq)?;
        self.forget_key(e.key(), seq);
        for m in &e.members {
            if let Some(d) = m.deadline {
                self.deadlines.remove(&(d, m.id, seq));
            }
        }
        Some(e)
    }

    fn forget_key(&mut self, key: (String, String), seq: usize) {
        if self.by_key.get(&key) == Some(&seq) {
            self.by_key.remove(&key);
        }
    }

    /// Job `seq` is over: each prediction waiting on it gets the verdict as its own (its model
    /// and sample; `shared_from` naming the first one where several shared it). A job whose
    /// timeout was cut to its deadline and that timed out decided nothing: its predictions'
    /// deadline passed. A withdrawn job's predictions were not run.
    pub fn finished(&mut self, seq: usize, done: JobDone) -> Vec<Effect> {
        let Some(e) = self.take_entry(seq) else {
            return Vec::new();
        };
        let (verdict, logs) = match done {
            JobDone::Withdrawn => {
                self.tally.jobs_run = self.tally.jobs_run.saturating_sub(1);
                return answer_all(&e.members, Answer::NotRun);
            }
            JobDone::Graded { verdict, logs } => (verdict, logs),
        };
        if e.cut && verdict.timed_out {
            return answer_all(&e.members, Answer::Expired { ran: true });
        }
        self.tally.infra_retries += verdict.infra_retries;
        if verdict.run_secs > 0.0 || verdict.setup_secs > 0.0 {
            self.tally.time.add(&verdict);
        }
        if verdict.category != Category::InfraError && verdict.run_secs > 0.0 {
            self.tally
                .observed
                .push((e.instance_id.clone(), verdict.run_secs));
        }
        if verdict.category == Category::InfraError {
            // The image may be gone, or the engine was away: prepared anew for new predictions.
            if let Some(SetupState::Ready(s)) = self.setups.get(&e.instance_id).cloned() {
                if s.image.is_ok() {
                    self.setups
                        .insert(e.instance_id.clone(), SetupState::Stale(s));
                }
            }
        }
        let ready = e.ready.unwrap_or(e.received);
        let first = e
            .members
            .first()
            .map(|m| format!("{}/{}", m.model, m.sample));
        let identity = e
            .setup
            .as_ref()
            .map(|s| recipe(s, &self.rules.config).identity(&e.patch_hash));
        e.members
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let mut v = (*verdict).clone();
                v.model = m.model.clone();
                v.sample = m.sample;
                v.shared_from = if i > 0 { first.clone() } else { None };
                v.identity = identity.clone();
                Effect::Answer(
                    m.id,
                    Answer::Decided(Box::new(Decided {
                        verdict: v,
                        logs: Some(logs.clone()),
                        image_wait: ready.saturating_duration_since(e.received),
                        queue_wait: e.dispatched.map(|d| d.saturating_duration_since(ready)),
                    })),
                )
            })
            .chain(std::iter::once(Effect::Event(RunEvent::JobEnded {
                instance_id: e.instance_id.clone(),
            })))
            .collect()
    }

    /// Job `seq`'s task panicked: its predictions get an infrastructure-error verdict (a
    /// resume runs them again); the run goes on.
    pub fn panicked(&mut self, seq: usize, message: &str) -> Vec<Effect> {
        let Some(e) = self.entries.get(&seq) else {
            return Vec::new();
        };
        let p = Prediction {
            instance_id: e.instance_id.clone(),
            model_name_or_path: String::new(),
            model_patch: None,
            sample: 0,
            line: None,
            extra: Default::default(),
        };
        let mut v = empty_verdict(&p, &e.patch_hash, &self.rules.config.run_id);
        v.category = Category::InfraError;
        v.error_reason = Some(swe_eval_core::grading::ErrorReason::Infra);
        v.strict_category = Category::InfraError;
        v.reason = Some(format!("job failed: {message}"));
        let logs = JobLogs {
            run_log: format!("job failed: {message}\n"),
            ..Default::default()
        };
        self.finished(
            seq,
            JobDone::Graded {
                verdict: Box::new(v),
                logs: Arc::new(logs),
            },
        )
    }

    /// Job `seq` was killed (a second interrupt) before it was over: its predictions were not
    /// run to a verdict.
    pub fn abandoned(&mut self, seq: usize) -> Vec<Effect> {
        let Some(e) = self.take_entry(seq) else {
            return Vec::new();
        };
        answer_all(&e.members, Answer::NotRun)
    }

    /// When the next deadline of a waiting prediction passes, if any.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.first().map(|(d, _, _)| *d)
    }

    /// Answers `expired` every prediction whose deadline has passed, and drops the jobs not
    /// started that no prediction waits on any more. A running job goes on (its timeout was
    /// cut to the latest deadline of its predictions; it ends about then).
    pub fn expire_due(&mut self, now: Instant) -> Vec<Effect> {
        let mut fx = Vec::new();
        while let Some(&(d, member, seq)) = self.deadlines.first() {
            if d > now {
                break;
            }
            self.deadlines.pop_first();
            let Some(e) = self.entries.get_mut(&seq) else {
                continue;
            };
            e.members.retain(|m| m.id != member);
            let ran = e.phase == Phase::Running;
            fx.push(Effect::Answer(member, Answer::Expired { ran }));
            if e.members.is_empty() && e.phase != Phase::Running {
                let (key, id) = (e.key(), e.instance_id.clone());
                self.entries.remove(&seq);
                self.forget_key(key, seq);
                self.queue.retain(|s| *s != seq);
                if let Some(w) = self.waiting.get_mut(&id) {
                    w.retain(|s| *s != seq);
                }
            }
        }
        fx
    }

    /// Stops dispatching (the run's deadline, a failed write, an end asked for): no job starts
    /// any more, the predictions of jobs not started are answered `not run`, running jobs
    /// finish. `why` is told the listeners, if any.
    pub fn stop(&mut self, why: Option<RunEvent>) -> Vec<Effect> {
        let mut fx = Vec::new();
        if !self.dispatching {
            return fx;
        }
        self.dispatching = false;
        fx.extend(why.map(Effect::Event));
        fx.push(Effect::CloseGate);
        let not_started: Vec<usize> = self
            .entries
            .iter()
            .filter(|(_, e)| e.phase != Phase::Running)
            .map(|(s, _)| *s)
            .collect();
        let mut not_started = not_started;
        not_started.sort_unstable();
        for seq in not_started {
            if let Some(e) = self.take_entry(seq) {
                fx.extend(answer_all(&e.members, Answer::NotRun));
            }
        }
        self.queue.clear();
        self.waiting.clear();
        fx
    }

    /// An interrupt (Ctrl-C): the first stops dispatching, the second kills the running jobs.
    pub fn interrupt(&mut self) -> Vec<Effect> {
        self.tally.interrupts += 1;
        let count = self.tally.interrupts;
        let mut fx = self.stop(None);
        fx.insert(0, Effect::Event(RunEvent::Interrupted { count }));
        if count >= 2 && !self.tally.killed {
            self.tally.killed = true;
            fx.push(Effect::AbortRunning);
        }
        fx
    }
}

impl Dispatcher {
    /// Stops dispatching and kills the running jobs at once (a server's second Ctrl-C during
    /// its shutdown, whatever came before).
    pub fn kill(&mut self) -> Vec<Effect> {
        let mut fx = self.stop(None);
        if !self.tally.killed {
            self.tally.killed = true;
            fx.push(Effect::AbortRunning);
        }
        fx
    }
}

fn answer_all(members: &[Member], answer: Answer) -> Vec<Effect> {
    members
        .iter()
        .map(|m| Effect::Answer(m.id, answer.clone()))
        .collect()
}

/// The answer `p` gets by its patch alone, with no job and no container: an empty patch
/// (nothing to apply) gets the official `empty_patch` verdict at once, unless empty patches are
/// run (`run_empty`: `validate` runs the eval script without one). `None`: it needs a job.
///
/// This is the one place that decides it: the dispatcher answers every face's predictions by
/// it, and `serve`'s admission (through `Session::decided_by_patch`) answers such a request in
/// its acceptance by it, before any dispatcher sees it.
pub fn decided_by_patch(
    p: &Prediction,
    setup: &Setup,
    config: &JobConfig,
    run_empty: bool,
) -> Option<Decided> {
    if !p.is_empty_patch() || run_empty {
        return None;
    }
    let hash = p.patch_hash();
    let mut verdict = empty_verdict(p, &hash, &config.run_id);
    verdict.identity = Some(recipe(setup, config).identity(&hash));
    Some(Decided {
        verdict,
        logs: None,
        image_wait: Duration::ZERO,
        queue_wait: None,
    })
}

/// The verdict of an empty patch (nothing run), or the frame of a verdict decided without a
/// job.
pub fn empty_verdict(p: &Prediction, hash: &str, run_id: &str) -> Verdict {
    Verdict {
        instance_id: p.instance_id.clone(),
        model: p.model_name_or_path.clone(),
        sample: p.sample,
        patch_hash: hash.to_string(),
        run_id: run_id.to_string(),
        category: Category::EmptyPatch,
        resolved: false,
        strict_category: Category::EmptyPatch,
        strict_resolved: false,
        official_report: false,
        applied_with: None,
        fail_to_pass_success: 0,
        fail_to_pass_failure: 0,
        pass_to_pass_success: 0,
        pass_to_pass_failure: 0,
        test_exit_code: None,
        timed_out: false,
        timeout_secs: None,
        oom_killed: false,
        memory_bytes: None,
        error_reason: None,
        reason: None,
        needs_network: false,
        infra_retries: 0,
        setup_secs: 0.0,
        run_secs: 0.0,
        teardown_secs: 0.0,
        total_secs: 0.0,
        apply_secs: None,
        before_tests_secs: None,
        tests_secs: None,
        after_tests_secs: None,
        shared_from: None,
        identity: None,
    }
}
