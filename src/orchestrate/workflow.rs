//! A run from loaded inputs to its report: find what is still to run, prepare (and hold) the
//! images it needs while executing the plan (each instance's jobs join the runner's queue as
//! soon as its image is ready, through `runner::arrivals`; builds are bounded apart from the
//! workers), release the holds and remove the images the cache level does not keep. Nothing
//! here prints: every step reports through [`Event`]s, which the caller renders (the CLI
//! draws two progress bars, images and jobs, and prints notices).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};

use super::inputs::needed;
use super::prep_times::{self, PrepTimes};
use super::prepare::{self, PrepareOptions};
use crate::engine::Engine;
use crate::images::{self, BuildEvent, BuildHooks, CacheLevel, StopFlag};
use crate::images::{hold_labels, reap_dead_holds, release_holds, Holding};
use crate::runner::{self, Arrivals, Plan, RunConfig, RunError, RunEvent, RunReport, Setup};
use swe_eval_core::dataset::Dataset;
use swe_eval_core::predictions::Prediction;
use swe_eval_core::spec::Flavour;

/// What the workflow tells its caller, in order.
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
    /// The runner starts executing the plan; [`Event::Run`] events follow.
    Executing,
    /// One of the runner's events.
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
    /// The runner and the preparation are done; no [`Event::Run`] follows.
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

pub(super) fn notice(events: &UnboundedSender<Event>, level: Level, message: String) {
    let _ = events.send(Event::Notice(Notice { level, message }));
}

/// What to run: the dataset, the predictions, and the instances the run covers.
pub struct Work<'a> {
    /// The dataset.
    pub dataset: &'a Dataset,
    /// The predictions to run.
    pub predictions: Vec<Prediction>,
    /// The instances the run covers (for the summaries' totals).
    pub instance_ids: Vec<String>,
}

/// The run's images: how to prepare them and which to keep afterwards.
pub struct ImagePolicy<'a> {
    /// How images are chosen and built.
    pub prepare: &'a PrepareOptions,
    /// Which images to keep after the run.
    pub keep: CacheLevel,
}

/// Runs `work` on `engine`: prepares the images its pending predictions need (held for this
/// run) while it executes the plan, each instance's jobs joining the runner's queue as soon as
/// its image is ready (or failed: then they get their infrastructure-error verdicts at once);
/// then releases the holds and removes what `images.keep` does not keep, even when the run
/// failed to start. `interrupts` delivers one message per Ctrl-C: the first stops dispatching
/// and starting builds (running jobs and builds finish), the second kills the jobs and
/// abandons the builds. Returns the run's report and where preparation's time went.
pub async fn execute<E: Engine>(
    engine: Arc<E>,
    work: Work<'_>,
    config: RunConfig,
    images: ImagePolicy<'_>,
    mut interrupts: UnboundedReceiver<()>,
    events: UnboundedSender<Event>,
) -> Result<(RunReport, PrepTimes), RunError> {
    let pending = runner::pending(&work.predictions, &config);
    engine_limitations(&*engine, &events).await;
    reap_dead_images(&*engine, &events).await;
    let opts = images.prepare;
    let needed = needed(work.dataset, &pending);
    let specs = prepare::specs(&needed, opts);
    for w in &specs.warnings {
        notice(&events, Level::Note, w.clone());
    }
    // (An instance without a spec has no image to prepare: its setup is final already.)
    if !specs.ready.is_empty() {
        let _ = events.send(Event::Preparing {
            instances: specs.ready.len(),
            flavour: opts.flavour,
        });
    }
    // Until its image is ready, an instance's setup says why it has none.
    let mut setups = specs.failed.clone();
    for (inst, spec) in &specs.ready {
        let not_yet = Err("image not prepared: preparation ended before it was ready".into());
        let s = prepare::setup(inst, spec, not_yet);
        setups.insert(inst.instance_id.clone(), Arc::new(s));
    }
    let (arrive, arrivals) =
        runner::arrivals(specs.ready.iter().map(|(i, _)| i.instance_id.clone()));
    let plan = Plan {
        setups: with_stand_ins(setups, work.dataset, &work.predictions),
        predictions: work.predictions,
        instance_ids: work.instance_ids,
    };
    let holding = Holding::new(
        engine.clone(),
        hold_labels(&crate::owner::owner_id(), &config.run_id),
    )
    .removing(images.keep);

    let _ = events.send(Event::Executing);
    let (run_interrupts, run_irx) = mpsc::unbounded_channel();
    let (count_tx, mut count_rx) = tokio::sync::watch::channel(0u32);
    let stop = StopFlag::default();
    let preparing = Preparing::default();
    // Interrupts reach the runner and the preparation both: the first stops starting builds,
    // the second abandons the ones running.
    let forward = forward_interrupts(&mut interrupts, &stop, Some(&run_interrupts), &count_tx);
    let preparation = prepare_streaming(&holding, &specs, opts, &stop, arrive, &preparing, &events);
    let prepared = unless_killed(&mut count_rx, preparation);
    let run = forward_run(engine.clone(), plan, arrivals, config, run_irx, &events);
    let (report, prepared) = tokio::select! {
        both = async { tokio::join!(run, prepared) } => both,
        _ = forward => unreachable!("the forwarder never ends"),
    };
    let _ = events.send(Event::Executed);
    // Abandoned by a second interrupt: what it made is known from its events.
    let prepared = prepared.unwrap_or_else(|| images::Prepared {
        created: preparing.created(),
        ..Default::default()
    });
    release_and_clean(&*engine, &prepared, images.keep, &events).await;
    report.map(|r| (r, preparing.times()))
}

/// Passes each message of `interrupts` on: sets `stop` (no build starts), tells `runner` (when
/// there is one) and counts them in `count`. Never ends.
pub(super) async fn forward_interrupts(
    interrupts: &mut UnboundedReceiver<()>,
    stop: &StopFlag,
    runner: Option<&UnboundedSender<()>>,
    count: &tokio::sync::watch::Sender<u32>,
) {
    let mut n = 0;
    while let Some(()) = interrupts.recv().await {
        n += 1;
        stop.stop();
        if let Some(r) = runner {
            let _ = r.send(());
        }
        let _ = count.send(n);
    }
    std::future::pending::<()>().await;
}

/// `work`'s result, or `None` once `count` reaches a second interrupt (the work is abandoned).
pub(super) async fn unless_killed<T>(
    count: &mut tokio::sync::watch::Receiver<u32>,
    work: impl std::future::Future<Output = T>,
) -> Option<T> {
    let killed = count.wait_for(|n| *n >= 2);
    tokio::select! {
        biased;
        _ = killed => None,
        t = work => Some(t),
    }
}

/// Executes a prepared plan, the runner's events passed on as [`Event::Run`] between
/// [`Event::Executing`] and [`Event::Executed`].
pub async fn run_plan<E: Engine>(
    engine: Arc<E>,
    plan: Plan,
    config: RunConfig,
    interrupts: UnboundedReceiver<()>,
    events: &UnboundedSender<Event>,
) -> Result<RunReport, RunError> {
    let _ = events.send(Event::Executing);
    let report = forward_run(engine, plan, Arrivals::none(), config, interrupts, events).await;
    let _ = events.send(Event::Executed);
    report
}

/// The runner on `plan`, its events passed on as [`Event::Run`].
async fn forward_run<E: Engine>(
    engine: Arc<E>,
    plan: Plan,
    arrivals: Arrivals,
    config: RunConfig,
    interrupts: UnboundedReceiver<()>,
    events: &UnboundedSender<Event>,
) -> Result<RunReport, RunError> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let out = events.clone();
    let forward = tokio::spawn(async move {
        while let Some(e) = rx.recv().await {
            let _ = out.send(Event::Run(e));
        }
    });
    let report = runner::run_arriving(engine, plan, arrivals, config, interrupts, tx).await;
    // The runner dropped its sender: the forwarder ends once every event is passed on.
    let _ = forward.await;
    report
}

/// What a preparation in progress has told so far (kept outside it, so a preparation
/// abandoned midway still says what it made and how long it took).
#[derive(Default)]
pub struct Preparing {
    state: std::sync::Mutex<(Vec<(String, images::Layer)>, PrepTimes)>,
}

impl Preparing {
    fn lock(&self) -> std::sync::MutexGuard<'_, (Vec<(String, images::Layer)>, PrepTimes)> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
    /// The images made so far, with their layer.
    pub fn created(&self) -> Vec<(String, images::Layer)> {
        self.lock().0.clone()
    }
    /// Where the preparation's time went so far.
    pub fn times(&self) -> PrepTimes {
        self.lock().1.clone()
    }
}

/// Prepares the images of `specs`, handing each instance's final setup to the runner
/// (`arrive`) as soon as its image is ready or has failed for good, and passing builds and
/// their times on as events (and into `timings.jsonl` beside the build logs). Stops starting
/// builds once `stop` is set or the runner takes no more setups.
pub async fn prepare_streaming<E: Engine>(
    engine: &E,
    specs: &prepare::Specs,
    opts: &PrepareOptions,
    stop: &StopFlag,
    arrive: runner::Arrive,
    preparing: &Preparing,
    events: &UnboundedSender<Event>,
) -> images::Prepared {
    if specs.ready.is_empty() {
        return images::Prepared::default();
    }
    let started = tokio::time::Instant::now();
    let by_id: HashMap<
        &str,
        &(
            swe_eval_core::dataset::Instance,
            swe_eval_core::spec::TestSpec,
        ),
    > = specs
        .ready
        .iter()
        .map(|s| (s.0.instance_id.as_str(), s))
        .collect();
    let mut delivered: HashSet<String> = HashSet::new();
    let mut stopped = 0;
    // Hands an instance's final setup to the runner, once; a failure is said at once (those
    // that preparation's stop left unbuilt are counted, and said in one line at the end).
    let mut deliver = |id: &str,
                       image: Result<String, &images::ImageFailure>,
                       delivered: &mut HashSet<String>| {
        let Some((inst, spec)) = by_id.get(id) else {
            return;
        };
        if !delivered.insert(id.to_string()) {
            return;
        }
        let ok = image.is_ok();
        let ready = image.as_ref().ok().cloned();
        let retry = image.as_ref().is_err_and(|f| f.transient || f.stopped);
        let image = image.map_err(|f| {
            if f.stopped {
                stopped += 1;
            } else {
                let message = format!("{id}: image {} failed: {}", f.image, f.message);
                notice(events, Level::Warning, message);
            }
            prepare::unavailable(Some(f))
        });
        arrive.send(Arc::new(prepare::setup(inst, spec, image)));
        let _ = events.send(Event::ImageDone {
            instance_id: id.to_string(),
            ok,
            image: ready,
            retry,
        });
        let mut state = preparing.lock();
        if ok {
            state.1.ready += 1;
        } else {
            state.1.failed += 1;
        }
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    let building = prepare::build(
        engine,
        &specs.ready,
        opts,
        BuildHooks::new(tx, stop.clone()),
    );
    let timings = opts.build_logs.join("timings.jsonl");
    let consuming = async {
        let mut log = None;
        let mut runner_gone = false;
        loop {
            let ev = tokio::select! {
                ev = rx.recv() => ev,
                _ = arrive.closed(), if !runner_gone => {
                    // The runner stopped dispatching: no build is worth starting.
                    runner_gone = true;
                    stop.stop();
                    continue;
                }
            };
            let Some(ev) = ev else { break };
            preparing.lock().1.add(&ev);
            if let Some(line) = prep_times::log_line(&ev) {
                append_line(&mut log, &timings, &line);
            }
            match ev {
                BuildEvent::Instance {
                    instance_id,
                    result,
                } => match result {
                    Ok(image) => deliver(&instance_id, Ok(image), &mut delivered),
                    // Retried once this round of builds is over.
                    Err(f) if f.transient => {}
                    Err(f) => deliver(&instance_id, Err(&f), &mut delivered),
                },
                BuildEvent::Created { image, layer } => preparing.lock().0.push((image, layer)),
                ev @ (BuildEvent::Started { .. } | BuildEvent::Timed { .. }) => {
                    let _ = events.send(Event::Build(ev));
                }
            }
        }
    };
    let (prepared, ()) = tokio::join!(building, consuming);
    // What is left: failures that stayed transient, instances no build reported.
    let never = images::ImageFailure {
        image: "(none)".into(),
        layer: images::Layer::Instance,
        message: "no image was prepared".into(),
        log_path: None,
        transient: false,
        stopped: false,
    };
    for (inst, _) in &specs.ready {
        let id = inst.instance_id.as_str();
        let image = match prepared.images.get(id) {
            Some(image) => Ok(image.clone()),
            None => Err(prepared.failed.get(id).unwrap_or(&never)),
        };
        deliver(id, image, &mut delivered);
    }
    if stopped > 0 {
        let message =
            format!("{stopped} instance image(s) not built: image preparation was stopped");
        notice(events, Level::Note, message);
    }
    preparing.lock().1.wall = started.elapsed();
    prepared
}

/// Appends `line` to the file at `path`, opened on first use; a log that cannot be written
/// is skipped (the timings are in the closing report too).
fn append_line(file: &mut Option<std::fs::File>, path: &std::path::Path, line: &str) {
    use std::io::Write;
    if file.is_none() {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        *file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .ok();
    }
    if let Some(f) = file {
        let _ = writeln!(f, "{line}");
    }
}

/// What the engine does not do as asked (a rootless Podman that applies no resource limits),
/// said before anything runs. An engine that does not answer is the runner's to report.
async fn engine_limitations<E: Engine>(engine: &E, events: &UnboundedSender<Event>) {
    if let Ok(info) = engine.info().await {
        for l in info.limitations {
            notice(events, Level::Warning, l);
        }
    }
}

/// Removes the images runs that died left for removal ([`reap_dead_holds`]), saying so.
pub(super) async fn reap_dead_images<E: Engine>(engine: &E, events: &UnboundedSender<Event>) {
    let reaped = reap_dead_holds(engine, &crate::owner::owner_id()).await;
    if !reaped.removed.is_empty() {
        notice(
            events,
            Level::Note,
            format!(
                "removed {} image(s) that runs which died had left to remove: {}",
                reaped.removed.len(),
                reaped.removed.join(", ")
            ),
        );
    }
    for (image, e) in &reaped.errors {
        notice(
            events,
            Level::Warning,
            format!("leftover image {image} of a run that died not removed: {e}"),
        );
    }
}

/// Releases this process's image holds, then removes the images `prepared` created that
/// `level` does not keep. An image another run still holds is kept, and said so.
pub async fn release_and_clean<E: Engine>(
    engine: &E,
    prepared: &images::Prepared,
    level: CacheLevel,
    events: &UnboundedSender<Event>,
) {
    for (hold, e) in release_holds(engine, &crate::owner::owner_id()).await {
        notice(
            events,
            Level::Warning,
            format!("image hold {hold} not removed: {e}"),
        );
    }
    let report = images::cleanup(engine, prepared, level).await;
    for (image, holder) in &report.handed_over {
        notice(
            events,
            Level::Note,
            format!(
                "image {image} kept for now: still used by {holder}; the first run to find it unused removes it"
            ),
        );
    }
    for (image, e) in &report.errors {
        notice(
            events,
            Level::Warning,
            format!("image {image} not removed: {e}"),
        );
    }
    if !report.removed.is_empty() {
        let _ = events.send(Event::ImagesRemoved {
            count: report.removed.len(),
        });
    }
}

/// Setups for every instance with predictions: the prepared ones, and for instances whose
/// predictions are all done already (resume), a stand-in that is never run.
pub fn with_stand_ins(
    mut setups: HashMap<String, Arc<Setup>>,
    ds: &Dataset,
    preds: &[Prediction],
) -> HashMap<String, Arc<Setup>> {
    for p in preds {
        if setups.contains_key(&p.instance_id) {
            continue;
        }
        if let Some(inst) = ds.get(&p.instance_id) {
            setups.insert(
                p.instance_id.clone(),
                Arc::new(Setup {
                    instance: inst.clone(),
                    image: Err("image not prepared: the instance had nothing left to run".into()),
                    eval_script: String::new(),
                    log_parser: swe_eval_core::logparse::parser_for_repo(&inst.repo).to_string(),
                    cpus: None,
                }),
            );
        }
    }
    setups
}
