//! Holds: while a run uses an image, a container created from it (never started) stands on
//! it, so that another run's cleanup cannot take the image away mid-run.
//!
//! Two runs on one daemon share images: run A builds an instance image, run B finds it and
//! starts its jobs from it, and A, finishing first with `--cache-level env`, removes the
//! instance images it built. Each hold is labelled with the image name it holds, and
//! [`crate::images::cleanup`] skips a name a live process other than itself holds
//! ([`EngineError::ImageInUse`]): A reports the image as kept, and B's jobs go on. Removal is
//! also never forced, so Docker itself refuses to drop the last name of an image a container
//! uses, which covers a hold made between that check and the removal. (A name that is not
//! the image's last one is untagged by Docker whatever uses it; only the check covers it.)
//!
//! A kept image is handed over rather than left behind: A leaves a marker (a never-started
//! container labelled [`LABEL_DOOMED`] with the image name, owned by nobody, so no start-up
//! reap takes it), and the first cleanup that finds the image unheld (B's, or any later
//! run's) removes the marker and the image.
//!
//! [`Holding`] wraps the engine used to prepare images: every image found present (the hold
//! is created instead of inspecting, so "it exists" and "it is held" are one atomic step)
//! and every image built, imported, pulled or tagged gets a hold. Holds carry the tool's
//! labels and the owner (`host:pid:start`), so a run that dies leaves holds that the next
//! run's start-up reaps like any container of a dead owner; a run that ends releases its
//! own with [`release`] before it removes images.
//!
//! A run killed outright (SIGKILL, a lost machine) never gets to remove the images its cache
//! level does not keep. So the hold on an image the run made, of a layer its level does not
//! keep ([`Holding::removing`]), also carries [`LABEL_REMOVES`]: the next run's start,
//! [`reap_dead`], turns each such hold of a dead owner into a hand-over marker, removes the
//! dead owner's holds, and sweeps: images no live run holds go at once, the others when their
//! holders end.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use super::{CacheLevel, CleanupReport, Layer};
use crate::engine::{
    BuildSettings, CommitBuild, Engine, EngineError, TarSource, LABEL_DOOMED, LABEL_HOLD,
    LABEL_OWNER, LABEL_RUN_ID, LABEL_TOOL,
};

/// On a hold: the holder made this image and removes it when it ends (its cache level does not
/// keep the image's layer); if the holder dies instead, the next run removes it.
pub const LABEL_REMOVES: &str = "swe-eval.removes";

/// The labels of the holds `owner` makes for run `run_id` (each hold adds [`LABEL_HOLD`] with
/// the image name it holds).
pub fn hold_labels(owner: &str, run_id: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (LABEL_TOOL.to_string(), "1".to_string()),
        (LABEL_RUN_ID.to_string(), run_id.to_string()),
        (LABEL_OWNER.to_string(), owner.to_string()),
    ])
}

/// The image names held by live processes other than `me` (holds of dead owners are
/// leftovers the next run start reaps; they protect nothing).
pub async fn held_by_others<E: Engine>(
    engine: &E,
    me: &str,
) -> Result<BTreeMap<String, String>, EngineError> {
    let holds = engine
        .list_containers(BTreeMap::from([(LABEL_HOLD.to_string(), String::new())]))
        .await?;
    Ok(holds
        .into_iter()
        .filter_map(|c| {
            let owner = c.labels.get(LABEL_OWNER)?;
            let image = c.labels.get(LABEL_HOLD)?;
            (owner != me && !crate::owner::owner_is_dead(owner))
                .then(|| (image.clone(), owner.clone()))
        })
        .collect())
}

/// [`held_by_others`], or `None` with the failure noted in `report`: not knowing what others
/// hold, removing anything could break their runs, so the caller removes nothing.
pub async fn held_by_others_or_report<E: Engine>(
    engine: &E,
    me: &str,
    report: &mut CleanupReport,
) -> Option<BTreeMap<String, String>> {
    match held_by_others(engine, me).await {
        Ok(held) => Some(held),
        Err(e) => {
            report
                .errors
                .push(("(the holds of other runs)".to_string(), e));
            None
        }
    }
}

/// An engine that holds every image it finds or makes (see the module docs).
pub struct Holding<E> {
    inner: Arc<E>,
    labels: BTreeMap<String, String>,
    held: Mutex<BTreeSet<String>>,
    /// The cache level of the run, when images it makes and does not keep are to be marked
    /// [`LABEL_REMOVES`].
    level: Option<CacheLevel>,
}

impl<E: Engine> Holding<E> {
    /// `inner`, holding every image it finds or makes with holder containers labelled `labels`.
    pub fn new(inner: Arc<E>, labels: BTreeMap<String, String>) -> Self {
        Self {
            inner,
            labels,
            held: Mutex::new(BTreeSet::new()),
            level: None,
        }
    }

    /// Marks the holds of images made here whose layer `level` does not keep with
    /// [`LABEL_REMOVES`], so that they are removed even if this run dies before its cleanup.
    /// Layers are those [`super::ensure`] records: builds and imports by their layer label,
    /// pulls as instance images; a tag only names an image that was there.
    pub fn removing(mut self, level: CacheLevel) -> Self {
        self.level = Some(level);
        self
    }

    /// The images held so far.
    pub fn held(&self) -> BTreeSet<String> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Holds `image` once; `Ok(false)` when it is not there. `made` is the layer of an image
    /// this run just made.
    async fn hold(&self, image: &str, made: Option<Layer>) -> Result<bool, EngineError> {
        if self.lock().contains(image) {
            return Ok(true);
        }
        let mut labels = self.labels.clone();
        labels.insert(LABEL_HOLD.to_string(), image.to_string());
        if let (Some(level), Some(layer)) = (self.level, made) {
            if !level.keeps(layer) {
                labels.insert(LABEL_REMOVES.to_string(), "1".to_string());
            }
        }
        match self.inner.create_hold(image, labels).await {
            Ok(_) => {
                self.lock().insert(image.to_string());
                Ok(true)
            }
            Err(EngineError::ImageMissing { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// After `image` was made: hold it, or say it vanished at once.
    async fn hold_made(&self, image: &str, layer: Option<Layer>) -> Result<(), EngineError> {
        if self.hold(image, layer).await? {
            Ok(())
        } else {
            Err(EngineError::ImageMissing {
                image: image.into(),
            })
        }
    }
}

/// Every operation is the wrapped engine's; finding an image holds it, and making one (built,
/// imported, pulled, tagged, committed) holds what was made.
impl<E: Engine> crate::engine::Forward for Holding<E> {
    type To = E;

    fn to(&self) -> &E {
        &self.inner
    }

    async fn image_exists(&self, image: &str) -> Result<bool, EngineError> {
        self.hold(image, None).await
    }

    async fn build_image_with(
        &self,
        tag: &str,
        context_tar: impl Into<TarSource> + Send,
        labels: BTreeMap<String, String>,
        settings: BuildSettings,
    ) -> Result<String, EngineError> {
        let layer = layer_of(&labels);
        let log = self
            .inner
            .build_image_with(tag, context_tar, labels, settings)
            .await?;
        self.hold_made(tag, layer).await?;
        Ok(log)
    }

    async fn import_image(
        &self,
        tag: &str,
        rootfs_tar: impl Into<TarSource> + Send,
        labels: BTreeMap<String, String>,
    ) -> Result<(), EngineError> {
        let layer = layer_of(&labels);
        self.inner.import_image(tag, rootfs_tar, labels).await?;
        self.hold_made(tag, layer).await
    }

    async fn tag_image(&self, image: &str, new_name: &str) -> Result<(), EngineError> {
        self.inner.tag_image(image, new_name).await?;
        self.hold_made(new_name, None).await
    }

    async fn pull_image(&self, image: &str) -> Result<(), EngineError> {
        self.inner.pull_image(image).await?;
        self.hold_made(image, Some(Layer::Instance)).await
    }

    async fn commit_build(&self, build: CommitBuild) -> Result<String, EngineError> {
        let (tag, layer) = (build.tag.clone(), layer_of(&build.labels));
        let log = self.inner.commit_build(build).await?;
        self.hold_made(&tag, layer).await?;
        Ok(log)
    }
}

/// The layer an image is built with, from its labels ([`super::labels_for`]).
fn layer_of(labels: &BTreeMap<String, String>) -> Option<Layer> {
    let name = labels.get(super::LABEL_LAYER)?;
    [Layer::Base, Layer::Env, Layer::Instance]
        .into_iter()
        .find(|l| l.as_str() == name)
}

/// At a run's start: the images that runs which died (their owner is a gone process on this
/// host) would have removed at their end are removed now, or handed over when a live run
/// holds them; the dead runs' holds go. Other hand-overs are left to the cleanups at runs'
/// ends (fewer sweeps racing each other). `me` is this process's owner id, so that its own
/// holds (none yet, at the start) never count as another's.
pub async fn reap_dead<E: Engine>(engine: &E, me: &str) -> CleanupReport {
    let mut report = CleanupReport::default();
    let holds = match engine
        .list_containers(BTreeMap::from([(LABEL_HOLD.to_string(), String::new())]))
        .await
    {
        Ok(h) => h,
        Err(e) => {
            report
                .errors
                .push(("(holds of earlier runs)".to_string(), e));
            return report;
        }
    };
    let mut doomed = BTreeSet::new();
    for hold in holds {
        let dead = hold
            .labels
            .get(LABEL_OWNER)
            .is_some_and(|o| o != me && crate::owner::owner_is_dead(o));
        if !dead {
            continue;
        }
        let image = hold.labels.get(LABEL_HOLD).cloned().unwrap_or_default();
        // The marker first: a crash between the two steps leaves the image marked, not lost.
        if hold.labels.contains_key(LABEL_REMOVES) {
            if let Err(e) = mark_doomed(engine, &image).await {
                report.errors.push((image, e));
                continue;
            }
            doomed.insert(image.clone());
        }
        if let Err(e) = engine.remove_container(&hold.id).await {
            report.errors.push((image, e));
        }
    }
    if doomed.is_empty() {
        return report;
    }
    let Some(held) = held_by_others_or_report(engine, me, &mut report).await else {
        return report;
    };
    sweep_marked(engine, &held, &BTreeSet::new(), Some(&doomed), &mut report).await;
    report
}

/// Records that `image` is to be removed once nobody holds it (see the module docs). An image
/// already gone needs no marker.
pub async fn mark_doomed<E: Engine>(engine: &E, image: &str) -> Result<(), EngineError> {
    let labels = BTreeMap::from([
        (LABEL_TOOL.to_string(), "1".to_string()),
        (LABEL_DOOMED.to_string(), image.to_string()),
    ]);
    match engine.create_hold(image, labels).await {
        Ok(_) | Err(EngineError::ImageMissing { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Removes the images marked doomed that `held` (live holds of others) does not name, and
/// their markers; an image in `keep` (this run's level keeps it) only loses its marker.
pub async fn sweep_doomed<E: Engine>(
    engine: &E,
    held: &BTreeMap<String, String>,
    keep: &BTreeSet<&str>,
    report: &mut CleanupReport,
) {
    sweep_marked(engine, held, keep, None, report).await
}

/// [`sweep_doomed`], of the images in `only` when it is given.
async fn sweep_marked<E: Engine>(
    engine: &E,
    held: &BTreeMap<String, String>,
    keep: &BTreeSet<&str>,
    only: Option<&BTreeSet<String>>,
    report: &mut CleanupReport,
) {
    let markers = match engine
        .list_containers(BTreeMap::from([(LABEL_DOOMED.to_string(), String::new())]))
        .await
    {
        Ok(m) => m,
        Err(e) => {
            report.errors.push(("(hand-over markers)".to_string(), e));
            return;
        }
    };
    let mut by_image: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for m in markers {
        if let Some(image) = m.labels.get(LABEL_DOOMED) {
            by_image.entry(image.clone()).or_default().push(m.id);
        }
    }
    for (image, ids) in by_image {
        if held.contains_key(&image) || only.is_some_and(|o| !o.contains(&image)) {
            continue;
        }
        let mut unmarked = true;
        for id in ids {
            if let Err(e) = engine.remove_container(&id).await {
                report.errors.push((image.clone(), e));
                unmarked = false;
            }
        }
        if !unmarked || keep.contains(image.as_str()) {
            continue;
        }
        match engine.remove_image(&image).await {
            Ok(()) => report.removed.push(image),
            // Held again since the listing: hand it on.
            Err(EngineError::ImageInUse { .. }) => match mark_doomed(engine, &image).await {
                Ok(()) => report.handed_over.push((image, "a container".to_string())),
                Err(e) => report.errors.push((image, e)),
            },
            Err(e) => report.errors.push((image, e)),
        }
    }
}

/// Removes the holds `owner` made; returns the failures (container, error).
pub async fn release<E: Engine>(engine: &E, owner: &str) -> Vec<(String, EngineError)> {
    let wanted = BTreeMap::from([
        (LABEL_HOLD.to_string(), String::new()),
        (LABEL_OWNER.to_string(), owner.to_string()),
    ]);
    let holds = match engine.list_containers(wanted).await {
        Ok(list) => list,
        Err(e) => return vec![("(listing holds)".to_string(), e)],
    };
    let mut errors = Vec::new();
    for c in holds {
        if let Err(e) = engine.remove_container(&c.id).await {
            errors.push((c.name, e));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::FakeEngine;
    use crate::images::CacheLevel;
    use crate::images::{cleanup, Layer, Prepared};

    fn prepared(images: &[&str]) -> Prepared {
        Prepared {
            created: images
                .iter()
                .map(|i| (i.to_string(), Layer::Instance))
                .collect(),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn a_held_image_is_handed_over_and_removed_by_the_holders_cleanup() {
        let fake = Arc::new(FakeEngine::new());
        fake.add_image("inst:a")
            .add_image("inst:b")
            .add_image("inst:k");
        // Run B (another host, so it cannot be proven dead) finds inst:a and holds it;
        // inst:c is not there and is not held.
        let b_owner = "elsewhere:2:2";
        let b = Holding::new(fake.clone(), hold_labels(b_owner, "b"));
        assert!(b.image_exists("inst:a").await.unwrap());
        assert!(!b.image_exists("inst:c").await.unwrap());
        assert!(b.image_exists("inst:a").await.unwrap(), "held once");
        assert_eq!(b.held(), BTreeSet::from(["inst:a".to_string()]));
        let holds = fake
            .list_containers(BTreeMap::from([(LABEL_HOLD.to_string(), String::new())]))
            .await
            .unwrap();
        assert_eq!(holds.len(), 1);
        assert_eq!(holds[0].labels[LABEL_OWNER], b_owner);
        assert_eq!(holds[0].labels[LABEL_HOLD], "inst:a");

        // Run A built inst:a and inst:b and keeps neither: inst:b goes, inst:a is handed over.
        let a = cleanup(&*fake, &prepared(&["inst:a", "inst:b"]), CacheLevel::Env).await;
        assert!(a.errors.is_empty(), "{:?}", a.errors);
        assert_eq!(a.removed, ["inst:b"]);
        assert_eq!(a.handed_over, [("inst:a".to_string(), b_owner.to_string())]);
        assert!(fake.image_exists("inst:a").await.unwrap());
        assert!(!fake.image_exists("inst:b").await.unwrap());
        let markers = BTreeMap::from([(LABEL_DOOMED.to_string(), String::new())]);
        assert_eq!(
            fake.list_containers(markers.clone()).await.unwrap().len(),
            1
        );

        // Another owner's release leaves B's hold, and a cleanup meanwhile leaves the marker.
        assert!(release(&*fake, "elsewhere:1:1").await.is_empty());
        let meanwhile = cleanup(&*fake, &Prepared::default(), CacheLevel::Env).await;
        assert!(meanwhile.removed.is_empty() && meanwhile.errors.is_empty());
        assert_eq!(
            fake.list_containers(markers.clone()).await.unwrap().len(),
            1
        );

        // B ends: it releases its hold, and its cleanup (which built nothing) removes inst:a.
        assert!(release(&*fake, b_owner).await.is_empty());
        let b_end = cleanup(&*fake, &Prepared::default(), CacheLevel::Env).await;
        assert!(b_end.errors.is_empty(), "{:?}", b_end.errors);
        assert_eq!(b_end.removed, ["inst:a"]);
        assert!(!fake.image_exists("inst:a").await.unwrap());
        assert!(fake
            .list_containers(markers.clone())
            .await
            .unwrap()
            .is_empty());

        // A marker on an image the sweeping run's own level keeps goes; the image stays.
        mark_doomed(&*fake, "inst:k").await.unwrap();
        let keeping = Prepared {
            created: vec![("inst:k".to_string(), Layer::Instance)],
            ..Default::default()
        };
        let kept = cleanup(&*fake, &keeping, CacheLevel::Instance).await;
        assert!(kept.removed.is_empty() && kept.errors.is_empty());
        assert!(fake.image_exists("inst:k").await.unwrap());
        assert!(fake.list_containers(markers).await.unwrap().is_empty());
    }

    /// The owner id of a process on this host that is gone (this pid, another start time).
    fn dead_owner() -> String {
        let me = crate::owner::owner_id();
        let host = me.rsplitn(3, ':').nth(2).unwrap().to_string();
        let dead = format!("{host}:{}:1", std::process::id());
        assert!(crate::owner::owner_is_dead(&dead), "{dead}");
        dead
    }

    /// The holds with `label`: (image, owner), sorted.
    async fn holds_with(fake: &FakeEngine, label: &str) -> Vec<(String, String)> {
        let list = fake
            .list_containers(BTreeMap::from([(label.to_string(), String::new())]))
            .await
            .unwrap();
        let mut v: Vec<(String, String)> = list
            .into_iter()
            .map(|c| (c.labels[LABEL_HOLD].clone(), c.labels[LABEL_OWNER].clone()))
            .collect();
        v.sort();
        v
    }

    #[tokio::test]
    async fn the_next_start_removes_what_a_dead_run_would_have_removed() {
        let fake = Arc::new(FakeEngine::new());
        fake.add_image("found:1").add_pullable("official:1");
        let dead = dead_owner();
        let live_other = "elsewhere:9:9";
        // A run at cache level env makes an instance, an environment and a pulled image, finds
        // one, and is killed before its cleanup.
        let run =
            Holding::new(fake.clone(), hold_labels(&dead, "killed")).removing(CacheLevel::Env);
        assert!(run.image_exists("found:1").await.unwrap());
        for (tag, layer) in [
            ("inst:1", Layer::Instance),
            ("inst:2", Layer::Instance),
            ("env:1", Layer::Env),
        ] {
            run.build_image(
                tag,
                Vec::<u8>::new(),
                crate::images::labels_for(layer, None),
            )
            .await
            .unwrap();
        }
        run.pull_image("official:1").await.unwrap();
        let removes: Vec<String> = holds_with(&fake, LABEL_REMOVES)
            .await
            .into_iter()
            .map(|(image, _)| image)
            .collect();
        assert_eq!(removes, ["inst:1", "inst:2", "official:1"]);
        // A live run on another host uses inst:2.
        let other = Holding::new(fake.clone(), hold_labels(live_other, "other"));
        assert!(other.image_exists("inst:2").await.unwrap());
        // An earlier hand-over is left to the cleanups at runs' ends.
        fake.add_image("handed:1");
        mark_doomed(&*fake, "handed:1").await.unwrap();

        let me = crate::owner::owner_id();
        let report = reap_dead(&*fake, &me).await;
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        let mut removed = report.removed.clone();
        removed.sort();
        assert_eq!(removed, ["inst:1", "official:1"]);
        for gone in ["inst:1", "official:1"] {
            assert!(!fake.image_exists(gone).await.unwrap(), "{gone}");
        }
        for kept in ["found:1", "env:1", "inst:2", "handed:1"] {
            assert!(fake.image_exists(kept).await.unwrap(), "{kept}");
        }
        // The dead run's holds are gone; the live run's stays.
        assert_eq!(
            holds_with(&fake, LABEL_HOLD).await,
            [("inst:2".to_string(), live_other.to_string())]
        );

        // When the live run ends, its cleanup (which made nothing) removes inst:2.
        assert!(release(&*fake, live_other).await.is_empty());
        let end = crate::images::cleanup(&*fake, &Prepared::default(), CacheLevel::Env).await;
        assert_eq!(end.removed, ["handed:1", "inst:2"]);
        assert!(!fake.image_exists("inst:2").await.unwrap());

        // Nothing of a live owner is touched: a second start-up reap finds nothing to do.
        let again = reap_dead(&*fake, &me).await;
        assert!(again.removed.is_empty() && again.errors.is_empty());
    }

    #[tokio::test]
    async fn a_live_runs_images_are_not_reaped() {
        let fake = Arc::new(FakeEngine::new());
        let me = crate::owner::owner_id();
        // Another live process on this host (this test's own id stands in for it, seen from
        // a reaper with another id) and one on another host.
        for (owner, tag) in [(me.as_str(), "inst:mine"), ("elsewhere:1:1", "inst:far")] {
            let h = Holding::new(fake.clone(), hold_labels(owner, "r")).removing(CacheLevel::None);
            h.build_image(
                tag,
                Vec::<u8>::new(),
                crate::images::labels_for(Layer::Instance, None),
            )
            .await
            .unwrap();
        }
        let report = reap_dead(&*fake, "reaper:0:0").await;
        assert!(
            report.removed.is_empty() && report.errors.is_empty(),
            "{report:?}"
        );
        assert_eq!(holds_with(&fake, LABEL_HOLD).await.len(), 2);
        assert!(fake.image_exists("inst:mine").await.unwrap());
        assert!(fake.image_exists("inst:far").await.unwrap());
    }

    #[tokio::test]
    async fn images_made_through_the_wrapper_are_held() {
        let fake = Arc::new(FakeEngine::new());
        fake.add_image("base:1").add_pullable("official:1");
        let h = Holding::new(fake.clone(), hold_labels("host:3:3", "r"));
        h.tag_image("base:1", "alias:1").await.unwrap();
        h.pull_image("official:1").await.unwrap();
        h.build_image("env:1", Vec::<u8>::new(), BTreeMap::new())
            .await
            .unwrap();
        assert_eq!(
            h.held(),
            ["alias:1", "env:1", "official:1"]
                .map(String::from)
                .into_iter()
                .collect()
        );
        for image in ["alias:1", "env:1", "official:1"] {
            assert!(
                matches!(
                    fake.remove_image(image).await,
                    Err(EngineError::ImageInUse { .. })
                ),
                "{image}"
            );
        }
        assert!(fake.remove_image("base:1").await.is_ok(), "not held");
    }
}
