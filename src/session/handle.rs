//! [`Session`]: predictions evaluated on an engine, each verdict handed back in memory the
//! moment it is decided. It makes each instance's test spec once, prepares (and holds) the
//! images its predictions need as they are first asked for, dispatches the jobs (the runner's
//! one dispatcher), removes what dead runs left at its start and its own containers at its end,
//! and releases its holds and removes the images its cache level does not keep when it closes.
//! It keeps no state on disk: `run` writes the verdicts into its folder, `serve` into its
//! database.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::events::{notice, Event, Level};
use super::images::{self, ImageCounts, Preparer, Preparing};
use super::options::SessionOptions;
use super::prep_times::PrepTimes;
use super::prepare;
use crate::engine::{Engine, EngineError};
use crate::images::{hold_labels, Holding, StopFlag};
use crate::runner::{
    self, Answer, Control, Dispatcher, DriveOptions, Driven, Item, NoImage, Rules, SetupOffer,
    Submission,
};
use swe_eval_core::dataset::{Dataset, Instance};
use swe_eval_core::identity::Recipe;
use swe_eval_core::predictions::Prediction;
use swe_eval_core::spec::{SpecError, TestSpec};

/// Why a session could not open.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The engine does not answer.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl swe_eval_core::failure::Classify for SessionError {
    fn kind(&self) -> swe_eval_core::failure::ErrorKind {
        match self {
            SessionError::Engine(e) => e.kind(),
        }
    }
}

impl From<SessionError> for runner::RunError {
    fn from(e: SessionError) -> Self {
        match e {
            SessionError::Engine(e) => runner::RunError::Engine(e),
        }
    }
}

/// Why an instance has no recipe (what its verdicts would record of their inputs): it cannot
/// run in this session.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecipeError {
    /// The session's dataset has no such instance.
    #[error("{instance_id} is not an instance of the dataset")]
    NotInDataset {
        /// The instance asked for.
        instance_id: String,
    },
    /// The instance has no test spec.
    #[error("no test spec: {0}")]
    NoSpec(SpecError),
}

/// A prediction for a session, with when its answer is no longer wanted.
#[derive(Debug, Clone)]
pub struct Submit {
    /// The prediction (of an instance of the session's dataset).
    pub prediction: Prediction,
    /// Its deadline: a job not started by then is not started, one started close to it gets
    /// the time left as its timeout, and the prediction is answered `expired` when it passes.
    pub deadline: Option<Instant>,
}

impl From<Prediction> for Submit {
    fn from(prediction: Prediction) -> Self {
        Submit {
            prediction,
            deadline: None,
        }
    }
}

/// A submitted prediction's answer, once decided ([`Answer`]; `not run` when the session
/// stopped first).
#[derive(Debug)]
pub struct Pending {
    rx: oneshot::Receiver<Answer>,
}

impl Future for Pending {
    type Output = Answer;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Answer> {
        Pin::new(&mut self.rx)
            .poll(cx)
            .map(|r| r.unwrap_or(Answer::NotRun))
    }
}

/// How a session ended.
#[derive(Debug, Default)]
pub struct Closed {
    /// What the dispatcher did and left.
    pub driven: Driven,
    /// Where image preparation's time went.
    pub prep: PrepTimes,
    /// Containers at once it ran with (`-j` within the engine's CPUs).
    pub workers: usize,
}

/// The session (see the module docs). Submissions may come from any task; it lives until
/// [`Session::close`].
pub struct Session<E: Engine> {
    inner: Arc<Inner<E>>,
    tasks: Mutex<Option<(JoinHandle<Driven>, JoinHandle<()>)>>,
}

struct Inner<E: Engine> {
    engine: Arc<E>,
    dataset: Arc<Dataset>,
    opts: SessionOptions,
    workers: usize,
    submissions: Mutex<Option<mpsc::UnboundedSender<Submission>>>,
    control: mpsc::UnboundedSender<Control>,
    /// Each instance's test spec, made once (or why there is none).
    specs: Mutex<HashMap<String, Result<Arc<TestSpec>, SpecError>>>,
    next_member: AtomicU64,
    preparing: Arc<Preparing>,
    stop_preparing: StopFlag,
    interrupts: AtomicU32,
    /// Dispatching was stopped (a stop, an interrupt, the close).
    stopped: std::sync::atomic::AtomicBool,
    /// Every job's settings.
    job_config: Arc<runner::JobConfig>,
    /// Each instance's identity recipe, made once (or why the instance cannot run).
    recipes: Mutex<HashMap<String, Result<Arc<Recipe>, RecipeError>>>,
    events: mpsc::UnboundedSender<Event>,
}

impl<E: Engine> Session<E> {
    /// Opens a session of `dataset`'s instances on `engine`: bounds the workers to the
    /// engine's CPUs (saying so), removes what dead runs left (containers, holds, the images
    /// their cache level would have removed), and starts the dispatcher and the preparation.
    /// Everything it has to tell goes to `events`.
    pub async fn open(
        engine: Arc<E>,
        dataset: Arc<Dataset>,
        opts: SessionOptions,
        events: mpsc::UnboundedSender<Event>,
    ) -> Result<Session<E>, SessionError> {
        let info = engine.info().await?;
        images::engine_limitations(&*engine, &events).await;
        images::reap_dead_images(&*engine, &events).await;
        // At most one job per CPU the engine runs jobs on (each is given one CPU): more at once
        // would only share them and make timeouts likelier.
        let bound = swe_eval_core::bounds::bound_workers(
            Some(opts.run.workers),
            info.cpus.unwrap_or(usize::MAX),
        );
        if let Some(message) = bound.note("jobs at once", "the engine's CPUs, one per job") {
            let _ = events.send(Event::Run(runner::RunEvent::Note { message }));
        }
        let workers = bound.used;
        let owner = crate::owner::owner_id();
        let holding = Arc::new(
            Holding::new(engine.clone(), hold_labels(&owner, &opts.run.run_id)).removing(opts.keep),
        );

        let (sub_tx, sub_rx) = mpsc::unbounded_channel();
        let (arrive_tx, arrive_rx) = mpsc::unbounded_channel();
        let (control_tx, control_rx) = mpsc::unbounded_channel();
        let (need_tx, need_rx) = mpsc::unbounded_channel();
        let (run_tx, mut run_rx) = mpsc::unbounded_channel();

        let (hints, hints_from) = match &opts.run.durations {
            Some(path) => {
                let (hints, bad) = runner::Durations::load(path);
                if let Some(why) = bad {
                    let message =
                        format!("earlier job durations not used (plan order kept): {why}");
                    let _ = events.send(Event::Run(runner::RunEvent::Note { message }));
                }
                (hints, Some(path.clone()))
            }
            None => (runner::Durations::default(), None),
        };
        let job_config = Arc::new(runner::job_config(&opts.run, &owner));
        let rules = Rules {
            config: job_config.clone(),
            dedupe: opts.run.dedupe,
            run_empty: opts.run.run_empty,
            hints: hints.clone(),
            hints_from,
        };
        let dispatcher = Dispatcher::new(rules, Instant::now());
        let drive_opts = DriveOptions {
            workers,
            deadline: opts.run.deadline,
            owner: owner.clone(),
            run_id: opts.run.run_id.clone(),
            durations: opts.run.durations.clone(),
        };
        let channels = runner::Channels {
            submissions: sub_rx,
            setups: arrive_rx,
            control: control_rx,
            need: need_tx,
            events: run_tx,
        };
        let _ = events.send(Event::Executing);
        let driver = tokio::spawn(runner::drive(
            engine.clone(),
            dispatcher,
            drive_opts,
            channels,
        ));
        let forward = events.clone();
        tokio::spawn(async move {
            while let Some(e) = run_rx.recv().await {
                let _ = forward.send(Event::Run(e));
            }
        });

        let preparing = Arc::new(Preparing::default());
        let stop_preparing = StopFlag::default();
        let inner = Arc::new(Inner {
            engine,
            dataset,
            opts,
            workers,
            submissions: Mutex::new(Some(sub_tx)),
            control: control_tx,
            specs: Mutex::new(HashMap::new()),
            next_member: AtomicU64::new(0),
            preparing: preparing.clone(),
            stop_preparing: stop_preparing.clone(),
            interrupts: AtomicU32::new(0),
            stopped: Default::default(),
            job_config,
            recipes: Default::default(),
            events: events.clone(),
        });
        let lookup = {
            let inner = Arc::downgrade(&inner);
            Arc::new(move |id: &str| {
                let inner = inner.upgrade()?;
                let spec = inner.specs().get(id)?.clone().ok()?;
                let inst = inner.dataset.get(id)?.clone();
                Some((inst, (*spec).clone()))
            })
        };
        let preparer = Preparer {
            holding,
            opts: inner.opts.prepare.clone(),
            stop: stop_preparing,
            arrive: arrive_tx,
            preparing,
            events,
            specs: lookup,
            hints,
        };
        let preparer = tokio::spawn(images::prepare_loop(preparer, need_rx));
        Ok(Session {
            inner,
            tasks: Mutex::new(Some((driver, preparer))),
        })
    }

    /// Submits predictions; each one's answer comes through its [`Pending`], in the order
    /// given. A prediction of an instance the dataset does not have is answered `not run`.
    pub fn submit(&self, items: Vec<Submit>) -> Vec<Pending> {
        let inner = &self.inner;
        let ids: BTreeSet<&str> = items
            .iter()
            .map(|s| s.prediction.instance_id.as_str())
            .collect();
        let offers = inner.offers(ids.into_iter());
        let mut pending = Vec::with_capacity(items.len());
        let mut sub = Submission::default();
        for s in items {
            let (tx, rx) = oneshot::channel();
            pending.push(Pending { rx });
            let Some(setup) = offers.get(&s.prediction.instance_id).cloned() else {
                let _ = tx.send(Answer::NotRun);
                continue;
            };
            let item = Item {
                member: inner.next_member.fetch_add(1, Ordering::Relaxed),
                prediction: s.prediction,
                setup,
                deadline: s.deadline,
            };
            sub.items.push((item, tx));
        }
        if !sub.items.is_empty() {
            if let Some(tx) = inner.submissions().as_ref() {
                // A closed session drops the submission: its answers read "not run".
                let _ = tx.send(sub);
            }
        }
        pending
    }

    /// The answer `p` gets by its patch alone, with no job (an empty patch's verdict, decided
    /// by `runner::decided_by_patch` as the dispatcher decides it), or `None` when it needs a job
    /// or the dataset lacks its instance. `serve` answers such a request in its acceptance.
    pub fn decided_by_patch(&self, p: &Prediction) -> Option<runner::Decided> {
        let inner = &self.inner;
        let offers = inner.offers(std::iter::once(p.instance_id.as_str()));
        let setup = match offers.get(&p.instance_id)? {
            SetupOffer::Final(s) | SetupOffer::Prepare(s) => s,
        };
        runner::decided_by_patch(p, setup, &inner.job_config, inner.opts.run.run_empty)
    }

    /// The setups `instance_ids` are offered with (their test specs made now if not yet): a
    /// final one, or the stand-in of an image still to prepare; none for an instance the
    /// dataset lacks. What a verdict of theirs would record (`runner::recipe`) is known from
    /// it before anything runs.
    pub fn setups(&self, instance_ids: &[&str]) -> HashMap<String, Arc<runner::Setup>> {
        self.inner
            .offers(instance_ids.iter().copied())
            .into_iter()
            .map(|(id, offer)| {
                let setup = match offer {
                    SetupOffer::Final(s) | SetupOffer::Prepare(s) => s,
                };
                (id, setup)
            })
            .collect()
    }

    /// What every verdict of `instance_id` records of its inputs under this session's limits
    /// (`swe_eval_core::identity`: with a prediction's patch hash, its identity and content
    /// key), made once per instance; or why the instance cannot run (it has no test spec, or
    /// the dataset does not have it).
    pub fn recipe(&self, instance_id: &str) -> Result<Arc<Recipe>, RecipeError> {
        let inner = &self.inner;
        let mut recipes = inner.recipes.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = recipes.get(instance_id) {
            return r.clone();
        }
        let offers = inner.offers(std::iter::once(instance_id));
        let made = match (offers.get(instance_id), inner.specs().get(instance_id)) {
            (None, _) => Err(RecipeError::NotInDataset {
                instance_id: instance_id.to_string(),
            }),
            (Some(_), Some(Err(why))) => Err(RecipeError::NoSpec(why.clone())),
            (Some(SetupOffer::Final(s) | SetupOffer::Prepare(s)), _) => {
                Ok(Arc::new(runner::recipe(s, &inner.job_config)))
            }
        };
        recipes.insert(instance_id.to_string(), made.clone());
        made
    }

    /// Every job's settings (the run's limits, strict mode, network).
    pub fn job_config(&self) -> Arc<runner::JobConfig> {
        self.inner.job_config.clone()
    }

    /// Prepares the images of `instance_ids` now, before any prediction of them (a server
    /// that prepares every image at its start).
    pub fn prepare(&self, instance_ids: &[String]) {
        let offers = self.inner.offers(instance_ids.iter().map(String::as_str));
        for id in instance_ids {
            if let Some(offer) = offers.get(id) {
                let _ = self.inner.control.send(Control::Expect(offer.clone()));
            }
        }
    }

    /// Stops dispatching: no job starts any more, the predictions waiting are answered `not
    /// run`, running jobs finish, and no image build starts.
    pub fn stop(&self, why: Option<runner::RunEvent>) {
        self.inner.stopped.store(true, Ordering::Relaxed);
        self.inner.stop_preparing.stop();
        let _ = self.inner.control.send(Control::Stop(why));
    }

    /// An interrupt (Ctrl-C): the first stops dispatching and starting builds (running jobs
    /// and builds finish), the second kills this session's jobs and abandons its builds.
    pub fn interrupt(&self) {
        let n = self.inner.interrupts.fetch_add(1, Ordering::Relaxed) + 1;
        self.inner.stopped.store(true, Ordering::Relaxed);
        self.inner.stop_preparing.stop();
        let _ = self.inner.control.send(Control::Interrupt);
        if n >= 2 {
            if let Some((_, preparer)) = self.lock_tasks().as_ref() {
                preparer.abort();
            }
        }
    }

    /// Kills the running jobs and abandons the builds (as a second interrupt does, whatever
    /// came before).
    pub fn kill(&self) {
        self.inner.interrupts.store(2, Ordering::Relaxed);
        self.inner.stop_preparing.stop();
        let _ = self.inner.control.send(Control::Kill);
        if let Some((_, preparer)) = self.lock_tasks().as_ref() {
            preparer.abort();
        }
    }

    /// Whether it still starts jobs (not stopped, interrupted or closed).
    pub fn dispatching(&self) -> bool {
        !self.inner.stopped.load(Ordering::Relaxed)
    }

    /// Containers at once (`-j` within the engine's CPUs).
    pub fn workers(&self) -> usize {
        self.inner.workers
    }

    /// Where the instances' images stand.
    pub fn images(&self) -> ImageCounts {
        self.inner.preparing.counts()
    }

    /// The image of `instance_id`'s jobs, once ready.
    pub fn image_of(&self, instance_id: &str) -> Option<String> {
        match self.inner.preparing.image(instance_id)? {
            images::ImageState::Ready(image) => Some(image),
            _ => None,
        }
    }

    /// Takes no more predictions, waits for every job (or, after a stop, for the running
    /// ones), then releases the holds and removes the images the cache level does not keep.
    /// `None` when it was closed before.
    pub async fn close(&self) -> Option<Closed> {
        self.inner.submissions().take();
        self.inner.stopped.store(true, Ordering::Relaxed);
        let tasks = self.lock_tasks().take()?;
        let mut driven = Driven::default();
        {
            let (driver, preparer) = tasks;
            if let Ok(d) = driver.await {
                driven = d;
            }
            // The dispatcher is gone, so no setup is wanted any more: no build starts.
            self.inner.stop_preparing.stop();
            let _ = preparer.await;
        }
        let _ = self.inner.events.send(Event::Executed);
        let prepared = crate::images::Prepared {
            created: self.inner.preparing.created(),
            ..Default::default()
        };
        images::release_and_clean(
            &*self.inner.engine,
            &prepared,
            self.inner.opts.keep,
            &self.inner.events,
        )
        .await;
        Some(Closed {
            driven,
            prep: self.inner.preparing.times(),
            workers: self.inner.workers,
        })
    }

    fn lock_tasks(&self) -> MutexGuard<'_, Option<(JoinHandle<Driven>, JoinHandle<()>)>> {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<E: Engine> Inner<E> {
    fn specs(&self) -> MutexGuard<'_, HashMap<String, Result<Arc<TestSpec>, SpecError>>> {
        self.specs.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn submissions(&self) -> MutexGuard<'_, Option<mpsc::UnboundedSender<Submission>>> {
        self.submissions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The setup each of `ids` is offered with: a known one (given with the options), the
    /// final one of an instance without a test spec, or a stand-in whose image is to be
    /// prepared. The specs not made yet are made now, together (their warnings said once).
    /// Ids the dataset does not have get none.
    fn offers<'a>(&self, ids: impl Iterator<Item = &'a str>) -> HashMap<String, SetupOffer> {
        let mut out = HashMap::new();
        let mut wanted: Vec<&Instance> = Vec::new();
        for id in ids {
            if let Some(s) = self.opts.setups.get(id) {
                out.insert(id.to_string(), SetupOffer::Final(s.clone()));
            } else if let Some(inst) = self.dataset.get(id) {
                wanted.push(inst);
            }
        }
        let to_make: Vec<&Instance> = {
            let specs = self.specs();
            wanted
                .iter()
                .copied()
                .filter(|i| !specs.contains_key(&i.instance_id))
                .collect()
        };
        if !to_make.is_empty() {
            let made = prepare::specs(&to_make, &self.opts.prepare);
            for w in made.warnings {
                notice(&self.events, Level::Note, w);
            }
            let mut specs = self.specs();
            for (inst, spec) in made.ready {
                specs.insert(inst.instance_id.clone(), Ok(Arc::new(spec)));
            }
            for (id, setup) in made.failed {
                // A failed spec's setup says why it has none; nothing else makes one.
                if let Err(NoImage::NoSpec(why)) = &setup.image {
                    specs.insert(id, Err(why.clone()));
                }
            }
        }
        let specs = self.specs();
        for inst in wanted {
            let offer = match specs.get(&inst.instance_id) {
                Some(Ok(spec)) => SetupOffer::Prepare(Arc::new(prepare::setup(
                    inst,
                    spec,
                    &self.opts.prepare,
                    Err(NoImage::NotPrepared),
                ))),
                Some(Err(why)) => {
                    SetupOffer::Final(Arc::new(prepare::no_spec_setup(inst, why.clone())))
                }
                None => continue,
            };
            out.insert(inst.instance_id.clone(), offer);
        }
        out
    }
}
