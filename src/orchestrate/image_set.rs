//! Images as a job of their own (`swe-eval images`): the images of a selection of instances
//! prepared without running anything, listed against the daemon (present, stale, missing),
//! pruned (what the selection does not use, sparing what a live run holds), carried to another
//! daemon as one archive (`docker save`/`load`: layers shared by several images once), or
//! pushed to and pulled from a registry. A team prepares once and runs many times, elsewhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};

use super::prep_times::PrepTimes;
use super::prepare::{self, PrepareOptions, Specs};
use super::workflow::{
    forward_interrupts, notice, prepare_streaming, reap_dead_images, release_and_clean,
    unless_killed, Event, Level, Preparing,
};
use crate::dataset::Dataset;
use crate::engine::{Engine, EngineError, ImageDetails, Resource, LABEL_TOOL};
use crate::images::hold::{self, hold_labels, Holding};
use crate::images::{
    self, CacheLevel, CleanupReport, Disk, ImagePlan, InstanceNames, Listing, NoSpec, PlanOptions,
    RepoCache, StopFlag,
};

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
    /// The selected instances that have no test spec, with why (no image can be named).
    pub fn without_spec(&self) -> Vec<NoSpec> {
        let mut out: Vec<NoSpec> = self
            .specs
            .failed
            .iter()
            .map(|(id, s)| NoSpec {
                instance_id: id.clone(),
                reason: s.image.clone().err().unwrap_or_default(),
            })
            .collect();
        out.sort_by(|a, b| a.instance_id.cmp(&b.instance_id));
        out
    }
}

/// The images of `instance_ids` (in the dataset's order) under `opts`.
pub fn image_set(dataset: &Dataset, instance_ids: &[String], opts: &PrepareOptions) -> ImageSet {
    let wanted: BTreeSet<&str> = instance_ids.iter().map(String::as_str).collect();
    let instances: Vec<_> = dataset
        .instances
        .iter()
        .filter(|i| wanted.contains(i.instance_id.as_str()))
        .collect();
    let specs = prepare::specs(&instances, opts);
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
        let message = format!("{}: {}", n.instance_id, n.reason);
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
    let (arrive, arrivals) =
        crate::runner::arrivals(set.specs.ready.iter().map(|(i, _)| i.instance_id.clone()));
    let _ = events.send(Event::Executing);
    let stop = StopFlag::default();
    let preparing = Preparing::default();
    let (count_tx, mut count_rx) = tokio::sync::watch::channel(0u32);
    let forward = forward_interrupts(&mut interrupts, &stop, None, &count_tx);
    let preparation = prepare_streaming(
        &holding, &set.specs, opts, &stop, arrive, &preparing, &events,
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
    let plan = set.plan.clone();
    let cache = RepoCache::new(opts.repo_cache.clone(), opts.repos.clone());
    tokio::task::spawn_blocking(move || images::names(&plan, &cache, images::history::MAX_CHAIN))
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
}

/// This tool's images on the daemon (by label), and the prebuilt images `names` name that
/// are there (pulled official images carry no label of ours).
async fn found_images<E: Engine>(
    engine: &E,
    names: &[InstanceNames],
) -> Result<Vec<Resource>, EngineError> {
    let mut found = engine
        .list_images(BTreeMap::from([(LABEL_TOOL.to_string(), String::new())]))
        .await?;
    let prebuilt: BTreeSet<&String> = names.iter().filter_map(|n| n.prebuilt.as_ref()).collect();
    for p in prebuilt {
        if found.iter().any(|r| &r.name == p) {
            continue;
        }
        if let Some(d) = engine.image_details(p).await? {
            found.push(Resource {
                id: d.id,
                name: p.clone(),
                labels: d.labels,
            });
        }
    }
    Ok(found)
}

/// `set`'s images on the daemon: per instance, each layer present, stale or missing, and this
/// tool's images the selection does not use.
pub async fn list_images<E: Engine>(
    engine: &E,
    names: &[InstanceNames],
) -> Result<Listing, EngineError> {
    let found = found_images(engine, names).await?;
    Ok(images::classify(names, &found))
}

/// Measures the disk of `listing`'s images (one inspection per image).
pub async fn disk<E: Engine>(engine: &E, listing: &Listing) -> Result<Disk, EngineError> {
    let details = |names: Vec<String>| async move {
        let mut out: Vec<ImageDetails> = Vec::new();
        let mut ids = BTreeSet::new();
        for n in names {
            if let Some(d) = engine.image_details(&n).await? {
                if ids.insert(d.id.clone()) {
                    out.push(d);
                }
            }
        }
        Ok::<_, EngineError>(out)
    };
    let used = details(listing.used.clone()).await?;
    let unused = details(listing.unused.iter().map(|u| u.name.clone()).collect()).await?;
    let used_layers = images::layer_bytes(&used);
    let unused_alone = images::layer_bytes(&unused)
        .into_iter()
        .filter(|(k, _)| !used_layers.contains_key(k))
        .map(|(_, b)| b)
        .sum();
    Ok(Disk {
        used_bytes: used_layers.values().sum(),
        unused_alone_bytes: unused_alone,
    })
}

/// What [`prune`] did (or, dry, would do).
#[derive(Debug, Default)]
pub struct PruneReport {
    /// Images removed (dry: that would be).
    pub removed: Vec<String>,
    /// Images kept because a live run holds them, with the holder.
    pub held: Vec<(String, String)>,
    /// Images kept because a container uses them (a job of a run, a hand-over marker of
    /// one that is still held).
    pub in_use: Vec<String>,
    /// Removals that failed.
    pub errors: Vec<(String, EngineError)>,
    /// What the start-of-run sweep did: leftovers of runs that died, and images handed over
    /// that nobody holds any more.
    pub swept: CleanupReport,
}

/// Removes the images `listing` finds unused (stale ones and those of instances not
/// selected), never one a live run holds or a container uses; first, as a run's start does,
/// the leftovers of runs that died. `dry_run` removes nothing and says what would go.
pub async fn prune<E: Engine>(engine: &E, listing: &Listing, dry_run: bool) -> PruneReport {
    let mut report = PruneReport::default();
    let me = crate::owner::owner_id();
    if !dry_run {
        report.swept = hold::reap_dead(engine, &me).await;
    }
    let Some(held) = hold::held_by_others_or_report(engine, &me, &mut report.swept).await else {
        // Not knowing what others hold, nothing is removed.
        return report;
    };
    if !dry_run {
        // Images handed over by runs that ended: their markers go with them, unless the
        // selection uses the image.
        let keep: BTreeSet<&str> = listing.used.iter().map(String::as_str).collect();
        hold::sweep_doomed(engine, &held, &keep, &mut report.swept).await;
    }
    // Instance images first, then environments, then bases: children before parents.
    let rank = |layer: Option<&str>| match layer {
        Some("instance") => 0,
        Some("env") => 1,
        Some("base") => 2,
        _ => 3,
    };
    let mut unused: Vec<_> = listing.unused.iter().collect();
    unused.sort_by_key(|u| rank(u.layer.as_deref()));
    let swept: BTreeSet<&str> = report.swept.removed.iter().map(String::as_str).collect();
    let mut removed = Vec::new();
    for u in unused {
        if swept.contains(u.name.as_str()) {
            continue;
        }
        if let Some(owner) = held.get(&u.name) {
            report.held.push((u.name.clone(), owner.clone()));
            continue;
        }
        if dry_run {
            removed.push(u.name.clone());
            continue;
        }
        match engine.remove_image(&u.name).await {
            Ok(()) => removed.push(u.name.clone()),
            Err(EngineError::ImageInUse { .. }) => report.in_use.push(u.name.clone()),
            Err(e) => report.errors.push((u.name.clone(), e)),
        }
    }
    report.removed = removed;
    report
}

/// Why an archive could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// The daemon failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The archive file could not be written.
    #[error(transparent)]
    Write(#[from] crate::fsutil::WriteError),
    /// The archive file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Nothing to put in it.
    #[error("no image of the selection is on the daemon: nothing to export (build them with `swe-eval images build`)")]
    Empty,
}

/// An archive written or read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveReport {
    /// The images in it (exported: the names given; imported: the names loaded).
    pub images: Vec<String>,
    /// The archive file's size in bytes.
    pub bytes: u64,
    /// Time taken.
    pub took: Duration,
}

/// True when `path` names a zstd-compressed archive (`.zst`, `.tzst`).
fn zstd_path(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e == "zst" || e == "zstd" || e == "tzst")
}

/// Writes `names` (images on the daemon) to one archive at `path` in `docker save` format,
/// each layer once however many images share it; zstd-compressed when `path` ends in `.zst`.
/// Written atomically: a failure leaves no partial archive.
pub async fn export_images<E: Engine>(
    engine: &E,
    names: &[String],
    path: &Path,
) -> Result<ArchiveReport, ArchiveError> {
    if names.is_empty() {
        return Err(ArchiveError::Empty);
    }
    let started = Instant::now();
    let mut stream = engine.save_images(names);
    // The file is written on a blocking thread, fed piece by piece (bounded: the archive
    // never sits in memory).
    let (tx, rx) = std::sync::mpsc::sync_channel::<bytes::Bytes>(8);
    let (target, compress) = (path.to_path_buf(), zstd_path(path));
    let writer = tokio::task::spawn_blocking(move || {
        crate::fsutil::write_atomic_with(&target, |file| {
            use std::io::Write;
            let mut sink: Box<dyn Write> = if compress {
                Box::new(zstd::Encoder::new(&mut *file, 3)?.auto_finish())
            } else {
                Box::new(std::io::BufWriter::with_capacity(1 << 20, &mut *file))
            };
            let mut got = 0u64;
            for chunk in rx {
                got += chunk.len() as u64;
                sink.write_all(&chunk)?;
            }
            sink.flush()?;
            drop(sink);
            if got == 0 {
                return Err(std::io::Error::other("the daemon sent nothing"));
            }
            Ok(())
        })
    });
    let mut failed = None;
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(c) => {
                if tx.send(c).is_err() {
                    break;
                }
            }
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    if let Some(e) = failed {
        // The writer must not keep what came before the failure.
        drop(tx);
        let _ = writer.await;
        let _ = std::fs::remove_file(path);
        return Err(e.into());
    }
    drop(tx);
    let bytes = writer
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))?;
    Ok(ArchiveReport {
        images: names.to_vec(),
        bytes,
        took: started.elapsed(),
    })
}

/// Loads the archive at `path` (as [`export_images`] writes it, zstd-compressed or not; or
/// any `docker save` archive, also gzip-compressed) into the daemon.
pub async fn import_images<E: Engine>(
    engine: &E,
    path: &Path,
) -> Result<ArchiveReport, ArchiveError> {
    let started = Instant::now();
    let read_err = |source| ArchiveError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(read_err)?;
    let bytes = file.metadata().map_err(read_err)?.len();
    let mut magic = [0u8; 4];
    let is_zstd = {
        use std::io::{Read, Seek};
        let n = file.read(&mut magic).map_err(read_err)?;
        file.rewind().map_err(read_err)?;
        n == 4 && magic == [0x28, 0xb5, 0x2f, 0xfd]
    };
    // Read (and decompressed) on a blocking thread, handed to the daemon piece by piece.
    let (tx, rx) = mpsc::channel::<Result<bytes::Bytes, std::io::Error>>(8);
    let reader = tokio::task::spawn_blocking(move || {
        use std::io::Read;
        let mut source: Box<dyn Read> = if is_zstd {
            match zstd::Decoder::new(file) {
                Ok(d) => Box::new(d),
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                    return;
                }
            }
        } else {
            Box::new(file)
        };
        loop {
            let mut buf = vec![0u8; 1 << 20];
            match source.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    buf.truncate(n);
                    if tx.blocking_send(Ok(buf.into())).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                    return;
                }
            }
        }
    });
    let archive = tokio_stream_of(rx);
    let loaded = engine.load_images(archive).await;
    reader.abort();
    let loaded = loaded?;
    Ok(ArchiveReport {
        images: loaded,
        bytes,
        took: started.elapsed(),
    })
}

/// A receiver as a stream of an archive's pieces.
fn tokio_stream_of(
    rx: mpsc::Receiver<Result<bytes::Bytes, std::io::Error>>,
) -> crate::engine::ByteStream<std::io::Error> {
    Box::pin(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    }))
}

/// `image` under `registry` (`HOST:PORT/` prepended).
pub fn in_registry(registry: &str, image: &str) -> String {
    format!("{}/{image}", registry.trim_end_matches('/'))
}

/// What [`push_images`] or [`pull_images`] did.
#[derive(Debug, Default)]
pub struct TransferReport {
    /// Images moved, with the time each took.
    pub done: Vec<(String, Duration)>,
    /// Images that could not be moved.
    pub errors: Vec<(String, EngineError)>,
}

/// Pushes each of `names` to `registry` (as `registry/<name>`, the registry name removed from
/// the daemon afterwards).
pub async fn push_images<E: Engine>(
    engine: &E,
    names: &[String],
    registry: &str,
) -> TransferReport {
    each(names, |name| async move {
        let target = in_registry(registry, name);
        engine.tag_image(name, &target).await?;
        let r = engine.push_image(&target).await;
        let untagged = engine.remove_image(&target).await;
        r.and(untagged).map(|()| true)
    })
    .await
}

/// Pulls each of `names` that the daemon lacks from `registry` (where [`push_images`] put
/// it) and gives it its own name back.
pub async fn pull_images<E: Engine>(
    engine: &E,
    names: &[String],
    registry: &str,
) -> TransferReport {
    each(names, |name| async move {
        if engine.image_exists(name).await? {
            return Ok(false);
        }
        let source = in_registry(registry, name);
        engine.pull_image(&source).await?;
        engine.tag_image(&source, name).await?;
        engine.remove_image(&source).await?;
        Ok(true)
    })
    .await
}

/// `move_one` on each of `names` in turn, timed: `Ok(true)` moved it, `Ok(false)` had
/// nothing to do.
async fn each<'a, F, Fut>(names: &'a [String], move_one: F) -> TransferReport
where
    F: Fn(&'a String) -> Fut,
    Fut: std::future::Future<Output = Result<bool, EngineError>>,
{
    let mut report = TransferReport::default();
    for name in names {
        let started = Instant::now();
        match move_one(name).await {
            Ok(true) => report.done.push((name.clone(), started.elapsed())),
            Ok(false) => {}
            Err(e) => report.errors.push((name.clone(), e)),
        }
    }
    report
}
