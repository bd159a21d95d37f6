//! A run from loaded inputs to its report: find what is still to run, prepare (and hold) the
//! images it needs, execute the plan, release the holds and remove the images the cache level
//! does not keep. Nothing here prints: every step reports through [`Event`]s, which the
//! caller renders (the CLI draws a progress bar and prints notices).

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};

use super::inputs::needed;
use super::prepare::{self, Prepare, PrepareOptions};
use crate::dataset::Dataset;
use crate::engine::Engine;
use crate::images::hold::{self, hold_labels, Holding};
use crate::images::{self, CacheLevel};
use crate::predictions::Prediction;
use crate::runner::{self, Plan, RunConfig, RunError, RunEvent, RunReport, Setup};
use crate::spec::Flavour;

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
    /// The runner is done; no [`Event::Run`] follows.
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

fn notice(events: &UnboundedSender<Event>, level: Level, message: String) {
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

/// Runs `work` on `engine`: prepares the images its pending predictions need (held for
/// this run), executes the plan (`interrupts` delivers one message per Ctrl-C), then releases
/// the holds and removes what `images.keep` does not keep, even when the run failed to start.
pub async fn execute<E: Engine>(
    engine: Arc<E>,
    work: Work<'_>,
    config: RunConfig,
    images: ImagePolicy<'_>,
    interrupts: UnboundedReceiver<()>,
    events: UnboundedSender<Event>,
) -> Result<RunReport, RunError> {
    let pending = runner::pending(&work.predictions, &config);
    let prepared = prepare_held(
        engine.clone(),
        &config.run_id,
        work.dataset,
        &pending,
        &images,
        &events,
    )
    .await;
    let plan = Plan {
        setups: with_stand_ins(prepared.setups, work.dataset, &work.predictions),
        predictions: work.predictions,
        instance_ids: work.instance_ids,
    };
    let report = run_plan(engine.clone(), plan, config, interrupts, &events).await;
    release_and_clean(&*engine, &prepared.images, images.keep, &events).await;
    report
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
    let (tx, mut rx) = mpsc::unbounded_channel();
    let out = events.clone();
    let forward = tokio::spawn(async move {
        while let Some(e) = rx.recv().await {
            let _ = out.send(Event::Run(e));
        }
    });
    let report = runner::run(engine, plan, config, interrupts, tx).await;
    // The runner dropped its sender: the forwarder ends once every event is passed on.
    let _ = forward.await;
    let _ = events.send(Event::Executed);
    report
}

/// Prepares the images `preds` need, each found or made held for run `run_id` (see
/// `images::hold`) until [`release_and_clean`]; the holds of images made that `images.keep`
/// does not keep say so, for the case the run dies before its cleanup. First, the images
/// runs that died left for removal go ([`hold::reap_dead`]).
pub async fn prepare_held<E: Engine>(
    engine: Arc<E>,
    run_id: &str,
    ds: &Dataset,
    preds: &[&Prediction],
    images: &ImagePolicy<'_>,
    events: &UnboundedSender<Event>,
) -> Prepare {
    let reaped = hold::reap_dead(&*engine, &crate::owner::owner_id()).await;
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
    let opts = images.prepare;
    let needed = needed(ds, preds);
    if needed.is_empty() {
        return Prepare::default();
    }
    let _ = events.send(Event::Preparing {
        instances: needed.len(),
        flavour: opts.flavour,
    });
    let holding =
        Holding::new(engine, hold_labels(&crate::owner::owner_id(), run_id)).removing(images.keep);
    let prepared = prepare::prepare(&holding, &needed, opts).await;
    for w in &prepared.warnings {
        notice(events, Level::Note, w.clone());
    }
    for (id, f) in &prepared.images.failed {
        notice(
            events,
            Level::Warning,
            format!("{id}: image {} failed: {}", f.image, f.message),
        );
    }
    prepared
}

/// Releases this process's image holds, then removes the images `prepared` created that
/// `level` does not keep. An image another run still holds is kept, and said so.
pub async fn release_and_clean<E: Engine>(
    engine: &E,
    prepared: &images::Prepared,
    level: CacheLevel,
    events: &UnboundedSender<Event>,
) {
    for (hold, e) in hold::release(engine, &crate::owner::owner_id()).await {
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
                    log_parser: crate::logparse::parser_for_repo(&inst.repo).to_string(),
                    cpus: None,
                }),
            );
        }
    }
    setups
}
