//! Images as a job of their own (`swe-eval images build`): the images of a selection of
//! instances, their names under the current recipes, and their preparation without running
//! anything (as a run prepares them: held while it works, each phase timed). What is done with
//! a set of images on a daemon (listed, pruned, archived, pushed) is `crate::images`'.

use std::collections::BTreeSet;
use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use std::path::Path;

use super::error::WorkflowError;
use super::inputs::Source;
use super::inputs::{load_inputs, Reach};
use crate::engine::{Engine, EngineError};
use crate::images::{
    self, hold_labels, CacheLevel, Holding, ImagePlan, InstanceNames, Listing, NoSpec, PlanOptions,
    RepoCache, StopFlag,
};
use crate::session::{
    self as prepare, notice, prepare_streaming, reap_dead_images, release_and_clean, Event, Level,
    PrepTimes, PrepareOptions, Preparing, Specs,
};
use crate::session::{prepare_options, ImageChoices};
use swe_eval_core::dataset::{Dataset, Instance};
use swe_eval_core::spec::Flavour;

/// The run id the holds of `swe-eval images build` carry.
const BUILD_HOLD_RUN: &str = "images-build";

/// The images of a selection of instances: their test specs and image plan.
pub struct ImageSet {
    /// The specs of the selected instances (and why some have none).
    pub specs: Specs,
    /// Their images.
    pub plan: ImagePlan,
}

impl ImageSet {
    /// The selected instances that have no test spec, with why (no image can be named): the
    /// spec's own error, without the `no test spec: <instance>: ` its setup says it with.
    pub fn without_spec(&self) -> Vec<NoSpec> {
        let mut out: Vec<NoSpec> = self
            .specs
            .failed
            .iter()
            .map(|(id, s)| {
                let said = s
                    .image
                    .clone()
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default();
                let reason = said.strip_prefix("no test spec: ").unwrap_or(&said);
                let reason = reason.strip_prefix(&format!("{id}: ")).unwrap_or(reason);
                NoSpec {
                    instance_id: id.clone(),
                    reason: reason.to_string(),
                }
            })
            .collect();
        out.sort_by(|a, b| a.instance_id.cmp(&b.instance_id));
        out
    }
}

/// A selection of instances, how their images are made, and what of the input was skipped.
pub struct Selected {
    /// The instances' images.
    pub set: ImageSet,
    /// How their images are made (and where build logs go).
    pub prepare: PrepareOptions,
    /// Input rows and arguments skipped, with file and line.
    pub problems: Vec<String>,
    /// How many instances were selected.
    pub instances: usize,
    /// What `--reachable` kept and left out, when it was asked for.
    pub reach: Option<Reach>,
}

/// The images of `source`'s instances (its predictions are ignored; with no dataset, the mini
/// benchmark's instances), from the sources `images` names; build logs (and the repository
/// cache when no cache folder is known) under `output`.
pub fn select_images(
    source: &Source,
    images: &ImageChoices,
    output: &Path,
) -> Result<Selected, WorkflowError> {
    let output = crate::session::absolute(output)?;
    let source = Source {
        predictions: source.dataset.as_ref().map(|_| "gold".to_string()),
        ..source.clone()
    };
    let mut inputs = load_inputs(&source, &output)?;
    let prepare = prepare_options(&output, images, inputs.mini_mirrors.clone())?;
    let reach = if source.reachable {
        Some(inputs.keep_reachable(&prepare.repos)?)
    } else {
        None
    };
    let set = image_set(&inputs.dataset, &inputs.instance_ids, &prepare);
    Ok(Selected {
        set,
        prepare,
        problems: inputs.problems,
        instances: inputs.instance_ids.len(),
        reach,
    })
}

/// The images of `instance_ids` (in the dataset's order) under `opts`.
pub fn image_set(dataset: &Dataset, instance_ids: &[String], opts: &PrepareOptions) -> ImageSet {
    let wanted: BTreeSet<&str> = instance_ids.iter().map(String::as_str).collect();
    let instances: Vec<_> = dataset
        .instances
        .iter()
        .filter(|i| wanted.contains(i.instance_id.as_str()))
        .collect();
    set_of(&instances, opts)
}

/// The specs and image plan of `instances` under `opts`.
fn set_of(instances: &[&Instance], opts: &PrepareOptions) -> ImageSet {
    let specs = prepare::specs(instances, opts);
    let only: Vec<_> = specs.ready.iter().map(|(_, s)| s.clone()).collect();
    let plan = images::plan(
        &only,
        &PlanOptions {
            namespace: opts.namespace.clone(),
            ..Default::default()
        },
    );
    ImageSet { specs, plan }
}

/// Prepares the images of `set` as a run would (built, found or pulled; held while it works;
/// each instance reported as soon as its image is ready), runs nothing and removes nothing it
/// made. Events as in [`super::execute`]: [`Event::Preparing`], then [`Event::Executing`],
/// the builds, [`Event::Executed`]. The first message on `interrupts` stops starting builds
/// (the running ones finish), the second abandons them.
pub async fn build_images<E: Engine>(
    engine: Arc<E>,
    set: &ImageSet,
    opts: &PrepareOptions,
    mut interrupts: UnboundedReceiver<()>,
    events: UnboundedSender<Event>,
) -> PrepTimes {
    reap_dead_images(&*engine, &events).await;
    for w in &set.specs.warnings {
        notice(&events, Level::Note, w.clone());
    }
    for n in set.without_spec() {
        let message = format!("{}: no test spec: {}", n.instance_id, n.reason);
        notice(&events, Level::Warning, message);
    }
    if set.specs.ready.is_empty() {
        return PrepTimes::default();
    }
    let _ = events.send(Event::Preparing {
        instances: set.specs.ready.len(),
        flavour: opts.flavour,
    });
    let holding = Holding::new(
        engine.clone(),
        hold_labels(&crate::owner::owner_id(), BUILD_HOLD_RUN),
    );
    // Nobody runs jobs: the setups go nowhere, and the receiver stays open until the end so
    // that preparation is never told to stop early.
    let (arrive, arrivals) = tokio::sync::mpsc::unbounded_channel();
    let _ = events.send(Event::Executing);
    let stop = StopFlag::default();
    let preparing = Preparing::default();
    let (count_tx, mut count_rx) = tokio::sync::watch::channel(0u32);
    let forward = forward_interrupts(&mut interrupts, &stop, &count_tx);
    let preparation = prepare_streaming(
        &holding, &set.specs, opts, &stop, &arrive, &preparing, &events,
    );
    let prepared = unless_killed(&mut count_rx, preparation);
    let prepared = tokio::select! {
        p = prepared => p,
        _ = forward => unreachable!("the forwarder never ends"),
    };
    drop(arrivals);
    let _ = events.send(Event::Executed);
    let prepared = prepared.unwrap_or_else(|| images::Prepared {
        created: preparing.created(),
        ..Default::default()
    });
    // Keeps everything: only this process's holds go.
    release_and_clean(&*engine, &prepared, CacheLevel::Instance, &events).await;
    preparing.times()
}

/// The names `set`'s images have under the current recipes (Debian histories planned on the
/// host's git from the repository sources, fetched into the cache as a run fetches them).
pub async fn image_names(set: &ImageSet, opts: &PrepareOptions) -> Vec<InstanceNames> {
    names_of(set.plan.clone(), opts).await
}

async fn names_of(plan: ImagePlan, opts: &PrepareOptions) -> Vec<InstanceNames> {
    let cache = RepoCache::new(opts.repo_cache.clone(), opts.repos.clone());
    tokio::task::spawn_blocking(move || images::names(&plan, &cache, images::MAX_CHAIN))
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
}

/// `set`'s images on `engine`: their names under the current recipes, and the listing (per
/// instance each layer present, stale or missing; the images the selection does not use),
/// the images that are the same recipes but for the CA bundle marked
/// ([`images::mark_other_ca`]: Debian flavour, when the daemon has images the selection does
/// not use).
pub async fn list_images<E: Engine>(
    engine: &E,
    set: &ImageSet,
    opts: &PrepareOptions,
) -> Result<(Vec<InstanceNames>, Listing), EngineError> {
    let names = image_names(set, opts).await;
    let mut listing = images::list(engine, &names).await?;
    if opts.flavour == Flavour::Debian && !listing.unused.is_empty() {
        let other = names_with_other_ca(set, opts).await;
        images::mark_other_ca(&mut listing, &other, opts.ca_cert.is_none());
    }
    Ok((names, listing))
}

/// The names the images of `set`'s instances have under the current recipes with the CA
/// bundle the other way: built with `--ca-cert` when `opts` has none, without when it has one
/// (the bundle's content is not part of any name, only whether there is one).
async fn names_with_other_ca(set: &ImageSet, opts: &PrepareOptions) -> Vec<InstanceNames> {
    let instances: Vec<_> = set.specs.ready.iter().map(|(i, _)| i).collect();
    let other = PrepareOptions {
        ca_cert: match opts.ca_cert {
            Some(_) => None,
            None => Some(Vec::new()),
        },
        ..opts.clone()
    };
    names_of(set_of(&instances, &other).plan, opts).await
}

/// Passes each message of `interrupts` on: sets `stop` (no build starts) and counts them in
/// `count`. Never ends.
async fn forward_interrupts(
    interrupts: &mut UnboundedReceiver<()>,
    stop: &StopFlag,
    count: &tokio::sync::watch::Sender<u32>,
) {
    let mut n = 0;
    while let Some(()) = interrupts.recv().await {
        n += 1;
        stop.stop();
        let _ = count.send(n);
    }
    std::future::pending::<()>().await;
}

/// `work`'s result, or `None` once `count` reaches a second interrupt (the work is abandoned).
async fn unless_killed<T>(
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
