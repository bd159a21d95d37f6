//! A session's images: prepared when the dispatcher first asks for an instance's setup (every
//! instance a run submits at once, in the order its jobs will start; a server's as requests
//! come, those of a burst together and in that order too), held while the session lives, and released and removed as the cache level says when
//! it closes. Each instance's final setup goes to the dispatcher the moment its image is ready
//! or has failed for good, so its jobs start while other images build; builds are bounded apart
//! from the jobs (`--build-jobs`).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};

use super::events::{notice, Event, Level};
use super::prep_times::{self, PrepTimes};
use super::prepare::{self, PrepareOptions};
use crate::engine::Engine;
use crate::images::{self, reap_dead_holds, release_holds, BuildEvent, BuildHooks, CacheLevel};
use crate::images::{Holding, StopFlag};
use crate::runner::{Arrival, Durations};
use swe_eval_core::dataset::Instance;
use swe_eval_core::spec::TestSpec;

/// What a preparation in progress has told so far (kept outside it, so a preparation
/// abandoned midway still says what it made and how long it took), and where each instance's
/// image stands.
#[derive(Default)]
pub struct Preparing {
    state: Mutex<PreparingState>,
}

#[derive(Default)]
struct PreparingState {
    created: Vec<(String, images::Layer)>,
    times: PrepTimes,
    images: HashMap<String, ImageState>,
}

/// Where an instance's image stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageState {
    /// Being prepared.
    Preparing,
    /// Ready: the image.
    Ready(String),
    /// Failed (`retry`: for a reason that may pass).
    Failed {
        /// A later preparation may succeed.
        retry: bool,
    },
}

/// How many instances' images stand where.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImageCounts {
    /// Ready.
    pub ready: usize,
    /// Being prepared.
    pub preparing: usize,
    /// Failed.
    pub failed: usize,
}

impl Preparing {
    fn lock(&self) -> MutexGuard<'_, PreparingState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The images made so far, with their layer.
    pub fn created(&self) -> Vec<(String, images::Layer)> {
        self.lock().created.clone()
    }

    /// Where the preparation's time went so far.
    pub fn times(&self) -> PrepTimes {
        self.lock().times.clone()
    }

    /// How many instances' images stand where.
    pub fn counts(&self) -> ImageCounts {
        let state = self.lock();
        let mut c = ImageCounts::default();
        for s in state.images.values() {
            match s {
                ImageState::Ready(_) => c.ready += 1,
                ImageState::Preparing => c.preparing += 1,
                ImageState::Failed { .. } => c.failed += 1,
            }
        }
        c
    }

    /// Where `instance_id`'s image stands, if it was asked for.
    pub fn image(&self, instance_id: &str) -> Option<ImageState> {
        self.lock().images.get(instance_id).cloned()
    }
}

/// Finds the instance and test spec of an instance id.
pub(super) type SpecLookup = Arc<dyn Fn(&str) -> Option<(Instance, TestSpec)> + Send + Sync>;

/// Everything the preparing task needs.
pub(super) struct Preparer<E: Engine> {
    pub holding: Arc<Holding<E>>,
    pub opts: PrepareOptions,
    pub stop: StopFlag,
    pub arrive: UnboundedSender<Arrival>,
    pub preparing: Arc<Preparing>,
    pub events: UnboundedSender<Event>,
    /// The instance and test spec of an instance id (those the session made).
    pub specs: SpecLookup,
    /// Earlier runs' job durations: each batch's images are made longest expected job first.
    pub hints: Durations,
}

/// How long the preparer, idle, waits after an ask for the rest of a burst: a batch sent as
/// one request per prediction (a client per sample) arrives over a few milliseconds, and its
/// longest job's image should not wait behind whichever came first. Little against any build.
pub(super) const GATHER: Duration = Duration::from_millis(50);

/// Prepares the images asked for, a batch at a time (each environment image is built once,
/// never twice at once): the asks that came while it was busy, or within [`GATHER`] of the
/// first one when idle, in the order their jobs will start (longest expected first, as the
/// dispatcher asks; equals in the order asked). Each instance's setup goes to the dispatcher
/// the moment its image is ready or has failed for good. Ends when no more is asked for, or
/// preparation is stopped.
pub(super) async fn prepare_loop<E: Engine>(p: Preparer<E>, mut need: UnboundedReceiver<String>) {
    loop {
        let first = tokio::select! {
            id = need.recv() => id,
            _ = p.arrive.closed() => None,
        };
        let Some(first) = first else { return };
        let mut ids = vec![first];
        tokio::time::sleep(GATHER).await;
        while let Ok(id) = need.try_recv() {
            ids.push(id);
        }
        // Stable: equal expectations keep the order asked.
        if p.hints.median().is_some() {
            ids.sort_by(|a, b| p.hints.expected(b).total_cmp(&p.hints.expected(a)));
        }
        let mut seen = HashSet::new();
        let batch: Vec<(Instance, TestSpec)> = ids
            .into_iter()
            .filter(|id| seen.insert(id.clone()))
            .filter_map(|id| (p.specs)(&id))
            .collect();
        {
            let mut state = p.preparing.lock();
            for (inst, _) in &batch {
                state
                    .images
                    .insert(inst.instance_id.clone(), ImageState::Preparing);
            }
        }
        if !batch.is_empty() {
            let _ = p.events.send(Event::Preparing {
                instances: batch.len(),
                flavour: p.opts.flavour,
            });
        }
        let specs = prepare::Specs {
            ready: batch,
            ..Default::default()
        };
        prepare_streaming(
            &*p.holding,
            &specs,
            &p.opts,
            &p.stop,
            &p.arrive,
            &p.preparing,
            &p.events,
        )
        .await;
        if p.stop.stopped() {
            return;
        }
    }
}

/// Prepares the images of `specs`, handing each instance's final setup to the dispatcher
/// (`arrive`) as soon as its image is ready or has failed for good, and passing builds and
/// their times on as events (and into `timings.jsonl` beside the build logs). Stops starting
/// builds once `stop` is set or the dispatcher takes no more setups.
pub async fn prepare_streaming<E: Engine>(
    engine: &E,
    specs: &prepare::Specs,
    opts: &PrepareOptions,
    stop: &StopFlag,
    arrive: &UnboundedSender<Arrival>,
    preparing: &Preparing,
    events: &UnboundedSender<Event>,
) -> images::Prepared {
    if specs.ready.is_empty() {
        return images::Prepared::default();
    }
    let started = tokio::time::Instant::now();
    let by_id: HashMap<&str, &(Instance, TestSpec)> = specs
        .ready
        .iter()
        .map(|s| (s.0.instance_id.as_str(), s))
        .collect();
    let mut delivered: HashSet<String> = HashSet::new();
    let mut stopped = 0;
    // Hands an instance's final setup to the dispatcher, once; a failure is said at once (those
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
            prepare::unavailable(f)
        });
        let setup = Arc::new(prepare::setup(inst, spec, opts, image));
        let _ = arrive.send(Arrival {
            setup,
            again: retry,
        });
        let _ = events.send(Event::ImageDone {
            instance_id: id.to_string(),
            ok,
            image: ready.clone(),
            retry,
        });
        let mut state = preparing.lock();
        let now = match ready {
            Some(image) => {
                state.times.ready += 1;
                ImageState::Ready(image)
            }
            None => {
                state.times.failed += 1;
                ImageState::Failed { retry }
            }
        };
        state.images.insert(id.to_string(), now);
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
        let mut dispatcher_gone = false;
        loop {
            let ev = tokio::select! {
                ev = rx.recv() => ev,
                _ = arrive.closed(), if !dispatcher_gone => {
                    // The dispatcher stopped: no build is worth starting.
                    dispatcher_gone = true;
                    stop.stop();
                    continue;
                }
            };
            let Some(ev) = ev else { break };
            preparing.lock().times.add(&ev);
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
                BuildEvent::Created { image, layer } => {
                    preparing.lock().created.push((image, layer))
                }
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
    preparing.lock().times.wall += started.elapsed();
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
/// said before anything runs. An engine that does not answer is the caller's to report.
pub(super) async fn engine_limitations<E: Engine>(engine: &E, events: &UnboundedSender<Event>) {
    if let Ok(info) = engine.info().await {
        for l in info.limitations {
            notice(events, Level::Warning, l);
        }
    }
}

/// Removes the images runs that died left for removal ([`reap_dead_holds`]), saying so.
pub async fn reap_dead_images<E: Engine>(engine: &E, events: &UnboundedSender<Event>) {
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
