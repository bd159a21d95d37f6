//! This tool's images on a daemon measured against a selection's names
//! ([`super::selection`]): per instance, each layer present, stale (the daemon has an image of
//! that place built by an older recipe or layout: names carry content hashes, so a changed
//! recipe gives a new name and leaves the old image behind) or missing; the images no
//! selected instance uses; and the disk a set of images takes, each layer counted once.
//! [`list`] and [`disk`] ask the daemon; [`classify`] and [`layer_bytes`] are the rules.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::engine::{Engine, EngineError, LABEL_TOOL};

use super::{content_hash, InstanceNames, LABEL_INSTANCE, LABEL_LAYER, LABEL_REPO};
use crate::engine::{ImageDetails, Resource};

/// A layer of an instance's images, as listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ListedLayer {
    /// A ready image (the row's own, or an official one): used as is when present.
    Prebuilt,
    /// The base image.
    Base,
    /// The environment image.
    Env,
    /// The history image the instance image stands on (Debian flavour).
    History,
    /// The instance image.
    Instance,
}

impl ListedLayer {
    /// `prebuilt`, `base`, `env`, `history` or `instance`.
    pub fn as_str(self) -> &'static str {
        match self {
            ListedLayer::Prebuilt => "prebuilt",
            ListedLayer::Base => "base",
            ListedLayer::Env => "env",
            ListedLayer::History => "history",
            ListedLayer::Instance => "instance",
        }
    }
}

/// Whether a layer's image is there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum LayerState {
    /// The image of the current recipe is there.
    Present,
    /// It is not, but images of the same place built by another recipe or layout are.
    Stale {
        /// Those images' names.
        found: Vec<String>,
    },
    /// Neither.
    Missing,
    /// Its name cannot be known (the repository cannot be had to plan its history).
    Unknown {
        /// Why.
        reason: String,
    },
}

impl LayerState {
    /// `present`, `stale`, `missing` or `unknown`.
    pub fn as_str(&self) -> &'static str {
        match self {
            LayerState::Present => "present",
            LayerState::Stale { .. } => "stale",
            LayerState::Missing => "missing",
            LayerState::Unknown { .. } => "unknown",
        }
    }
}

/// One layer of an instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayerStatus {
    /// Which layer.
    pub layer: ListedLayer,
    /// The image the current recipe names (`None` when it cannot be named).
    pub image: Option<String>,
    /// Whether it is there.
    #[serde(flatten)]
    pub state: LayerState,
    /// When it is not: the image of this layer under the same recipe but for the CA bundle
    /// (`--ca-cert`), when the daemon has it ([`mark_other_ca`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_ca: Option<OtherCa>,
}

/// An image that is a layer's current recipe but for the CA bundle (`--ca-cert`): a run
/// with the other setting made it, and uses it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OtherCa {
    /// The image.
    pub image: String,
    /// True when it was built with a CA bundle (the listing was given none); false when
    /// without (the listing was given one).
    pub built_with_ca_cert: bool,
}

/// The selected instances an unused image is the recipe of, but for the CA bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OtherCaUse {
    /// True when it was built with a CA bundle (the listing was given none).
    pub built_with_ca_cert: bool,
    /// The instances.
    pub instances: Vec<String>,
}

/// The layers of one instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InstanceStatus {
    /// The instance.
    pub instance_id: String,
    /// `owner/name`.
    pub repo: String,
    /// True when the instance's jobs can start without building anything (its instance or
    /// prebuilt image is there).
    pub ready: bool,
    /// Its layers, from the base up.
    pub layers: Vec<LayerStatus>,
}

impl InstanceStatus {
    /// The state of `layer`, if the instance has that layer.
    pub fn state(&self, layer: ListedLayer) -> Option<&LayerState> {
        self.layers
            .iter()
            .find(|l| l.layer == layer)
            .map(|l| &l.state)
    }
}

/// An image of this tool that no selected instance uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnusedImage {
    /// Its name (its id when it has none).
    pub name: String,
    /// Its id.
    pub id: String,
    /// Its layer label (`base`, `env`, `instance`), when it has one.
    pub layer: Option<String>,
    /// The selected instances it is a stale image of (an older recipe's image of one of
    /// their layers); empty for images of instances that are not selected, or of nothing
    /// known.
    pub stale_for: Vec<String>,
    /// When it is a selected instance's image under the current recipe but for the CA
    /// bundle ([`mark_other_ca`]): which instances, and how it was built.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_ca: Option<OtherCaUse>,
}

/// A selection's images on a daemon.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Listing {
    /// Per selected instance, in the selection's order.
    pub instances: Vec<InstanceStatus>,
    /// The names of the images the selection uses that are there (each once, sorted).
    pub used: Vec<String>,
    /// This tool's images the selection does not use (by name, sorted).
    pub unused: Vec<UnusedImage>,
}

impl Listing {
    /// How many instances have `layer` in `state` (`present`, `stale`, ...).
    pub fn count(&self, layer: ListedLayer, state: &str) -> usize {
        self.instances
            .iter()
            .filter(|i| i.state(layer).is_some_and(|s| s.as_str() == state))
            .count()
    }

    /// Instances whose jobs can start without a build.
    pub fn ready(&self) -> usize {
        self.instances.iter().filter(|i| i.ready).count()
    }

    /// Instances that are not ready but whose instance image is there under the same recipe
    /// with the CA bundle the other way ([`mark_other_ca`]): ready for a run given the other
    /// `--ca-cert` setting.
    pub fn ready_with_other_ca(&self) -> usize {
        self.instances
            .iter()
            .filter(|i| {
                !i.ready
                    && i.layers
                        .iter()
                        .any(|l| l.layer == ListedLayer::Instance && l.other_ca.is_some())
            })
            .count()
    }
}

/// Marks in `listing` the images that are the selection's recipe but for the CA bundle
/// (`--ca-cert`): `other` names selected instances' images under the current recipes with the
/// CA bundle the other way, `built_with_ca_cert` whether those names have one. Each of those
/// images on the daemon (among the listing's unused images: its environment, history chain
/// and instance image) gets [`UnusedImage::other_ca`]; a layer that is not present gets
/// [`LayerStatus::other_ca`] when its image is one of them. Names the bundle does not change
/// (the base, the official flavour) are the listing's own and mark nothing.
pub fn mark_other_ca(listing: &mut Listing, other: &[InstanceNames], built_with_ca_cert: bool) {
    let by_id: BTreeMap<&str, &InstanceNames> =
        other.iter().map(|n| (n.instance_id.as_str(), n)).collect();
    let Listing {
        instances, unused, ..
    } = listing;
    let at: BTreeMap<String, usize> = (unused.iter().enumerate())
        .map(|(i, u)| (u.name.clone(), i))
        .collect();
    for inst in instances.iter_mut() {
        let Some(n) = by_id.get(inst.instance_id.as_str()) else {
            continue;
        };
        for name in n.all() {
            let Some(&i) = at.get(name) else {
                continue;
            };
            let usage = unused[i].other_ca.get_or_insert_with(|| OtherCaUse {
                built_with_ca_cert,
                instances: Vec::new(),
            });
            if usage.instances.last() != Some(&inst.instance_id) {
                usage.instances.push(inst.instance_id.clone());
            }
        }
        for layer in &mut inst.layers {
            if matches!(
                layer.state,
                LayerState::Present | LayerState::Unknown { .. }
            ) {
                continue;
            }
            let own = match layer.layer {
                ListedLayer::Env => n.env.as_ref(),
                ListedLayer::History => match &n.history {
                    Some(Ok(chain)) => chain.last(),
                    _ => None,
                },
                ListedLayer::Instance => n.instance.as_ref().and_then(|r| r.as_ref().ok()),
                ListedLayer::Prebuilt | ListedLayer::Base => None,
            };
            if let Some(own) = own.filter(|o| at.contains_key(*o)) {
                layer.other_ca = Some(OtherCa {
                    image: own.clone(),
                    built_with_ca_cert,
                });
            }
        }
    }
}

/// The disk a listing's images take, each layer counted once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Disk {
    /// Bytes of the layers of the images the selection uses.
    pub used_bytes: u64,
    /// Bytes of the layers of the unused images that no used image shares: what removing
    /// them all would free.
    pub unused_alone_bytes: u64,
}

/// How many instances have a layer in each state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LayerCounts {
    /// The image of the current recipe is there.
    pub present: usize,
    /// Only images of older recipes are.
    pub stale: usize,
    /// Nothing is.
    pub missing: usize,
    /// Its name cannot be known.
    pub unknown: usize,
}

/// `swe-eval images list --json`: a [`Listing`] as written, version
/// [`swe_eval_core::wire::IMAGE_LISTING_VERSION`] (docs/formats.md, "Image listing").
#[derive(Debug, Clone, Serialize)]
pub struct ListingFile<'a> {
    /// [`swe_eval_core::wire::IMAGE_LISTING_VERSION`].
    pub format_version: u32,
    /// Instances selected (those without a test spec included).
    pub instances_selected: usize,
    /// Instances whose jobs can start without a build.
    pub ready: usize,
    /// Per layer, how many instances have it in each state.
    pub layers: BTreeMap<ListedLayer, LayerCounts>,
    /// The disk the images take, when measured.
    pub disk: Option<Disk>,
    /// Per instance.
    pub instances: &'a [InstanceStatus],
    /// Selected instances without a test spec, with why (no image can be named).
    pub without_spec: Vec<NoSpec>,
    /// This tool's images the selection does not use.
    pub unused: &'a [UnusedImage],
}

/// A selected instance without a test spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NoSpec {
    /// The instance.
    pub instance_id: String,
    /// Why it has no spec.
    pub reason: String,
}

impl Listing {
    /// Per layer, how many instances have it in each state.
    pub fn layer_counts(&self) -> BTreeMap<ListedLayer, LayerCounts> {
        let mut out: BTreeMap<ListedLayer, LayerCounts> = BTreeMap::new();
        for l in self.instances.iter().flat_map(|i| &i.layers) {
            let c = out.entry(l.layer).or_default();
            match l.state {
                LayerState::Present => c.present += 1,
                LayerState::Stale { .. } => c.stale += 1,
                LayerState::Missing => c.missing += 1,
                LayerState::Unknown { .. } => c.unknown += 1,
            }
        }
        out
    }

    /// The listing as written (`without_spec`: selected instances that have no test spec).
    pub fn file(&self, without_spec: Vec<NoSpec>, disk: Option<Disk>) -> ListingFile<'_> {
        ListingFile {
            format_version: swe_eval_core::wire::IMAGE_LISTING_VERSION,
            instances_selected: self.instances.len() + without_spec.len(),
            ready: self.ready(),
            layers: self.layer_counts(),
            disk,
            instances: &self.instances,
            without_spec,
            unused: &self.unused,
        }
    }
}

/// The repository part of an image name (before the tag; a colon before the last `/` is a
/// registry's port).
fn repository(name: &str) -> &str {
    match name.rfind(':') {
        Some(i) if !name[i..].contains('/') => &name[..i],
        _ => name,
    }
}

/// The place an environment image's name stands for: its repository part without the
/// content hash that ends it (`swe-eval.env.py.bookworm.x86_64.`).
fn env_place(name: &str) -> &str {
    let repo = repository(name);
    match repo.rfind('.') {
        Some(i) => &repo[..=i],
        None => repo,
    }
}

/// Measures `found` (this tool's images on the daemon, one entry per name, as
/// [`crate::engine::Engine::list_images`] returns them) against `names`.
pub fn classify(names: &[InstanceNames], found: &[Resource]) -> Listing {
    let present: BTreeSet<&str> = found.iter().map(|r| r.name.as_str()).collect();
    let expected: BTreeSet<&str> = names
        .iter()
        .flat_map(|n| n.all())
        .map(String::as_str)
        .collect();
    fn label<'a>(r: &'a Resource, key: &str) -> Option<&'a str> {
        r.labels.get(key).map(String::as_str)
    }
    let mut stale_for: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut instances = Vec::with_capacity(names.len());
    for n in names {
        let mut layers = Vec::new();
        // An image found under `image`, else the images of its place (`same_place`) that no
        // selected instance uses.
        let mut state_of = |image: &str, same_place: &dyn Fn(&Resource) -> bool| {
            if present.contains(image) {
                return LayerState::Present;
            }
            let others: Vec<String> = found
                .iter()
                .filter(|r| !expected.contains(r.name.as_str()) && same_place(r))
                .map(|r| r.name.clone())
                .collect();
            if others.is_empty() {
                LayerState::Missing
            } else {
                for o in &others {
                    stale_for
                        .entry(o.clone())
                        .or_default()
                        .insert(n.instance_id.clone());
                }
                LayerState::Stale { found: others }
            }
        };
        if let Some(p) = &n.prebuilt {
            let state = state_of(p, &|_| false);
            layers.push(LayerStatus {
                layer: ListedLayer::Prebuilt,
                image: Some(p.clone()),
                state,
                other_ca: None,
            });
        }
        if let Some(first) = n.base.first() {
            // The bootstrapped image's own name; its alias (the name environment Dockerfiles
            // start FROM) is given again by every preparation.
            let place = repository(first).to_string();
            let state = state_of(first, &|r| repository(&r.name) == place);
            layers.push(LayerStatus {
                layer: ListedLayer::Base,
                image: Some(first.clone()),
                state,
                other_ca: None,
            });
        }
        if let Some(env) = &n.env {
            let place = env_place(env).to_string();
            let state = state_of(env, &|r| {
                label(r, LABEL_LAYER) == Some("env")
                    && label(r, LABEL_REPO) == Some(n.repo.as_str())
                    && env_place(&r.name) == place
            });
            layers.push(LayerStatus {
                layer: ListedLayer::Env,
                image: Some(env.clone()),
                state,
                other_ca: None,
            });
        }
        match &n.history {
            None => {}
            Some(Ok(chain)) => {
                let own = chain.last().expect("a chain has its own image");
                let state = state_of(own, &|_| false);
                layers.push(LayerStatus {
                    layer: ListedLayer::History,
                    image: Some(own.clone()),
                    state,
                    other_ca: None,
                });
            }
            Some(Err(unnamed)) => layers.push(LayerStatus {
                layer: ListedLayer::History,
                image: None,
                state: LayerState::Unknown {
                    reason: unnamed.to_string(),
                },
                other_ca: None,
            }),
        }
        match &n.instance {
            None => {}
            Some(Ok(image)) => {
                let state = state_of(image, &|r| {
                    label(r, LABEL_INSTANCE) == Some(n.instance_id.as_str())
                });
                layers.push(LayerStatus {
                    layer: ListedLayer::Instance,
                    image: Some(image.clone()),
                    state,
                    other_ca: None,
                });
            }
            Some(Err(unnamed)) => {
                // Its name is unknown; images built for it are stale or current, which only
                // its history could tell.
                layers.push(LayerStatus {
                    layer: ListedLayer::Instance,
                    image: None,
                    state: LayerState::Unknown {
                        reason: unnamed.to_string(),
                    },
                    other_ca: None,
                })
            }
        }
        let ready = layers.iter().any(|l| {
            matches!(l.layer, ListedLayer::Prebuilt | ListedLayer::Instance)
                && l.state == LayerState::Present
        });
        instances.push(InstanceStatus {
            instance_id: n.instance_id.clone(),
            repo: n.repo.clone(),
            ready,
            layers,
        });
    }
    let used: BTreeSet<String> = found
        .iter()
        .filter(|r| expected.contains(r.name.as_str()))
        .map(|r| r.name.clone())
        .collect();
    let mut unused: Vec<UnusedImage> = found
        .iter()
        .filter(|r| !expected.contains(r.name.as_str()))
        .map(|r| UnusedImage {
            name: r.name.clone(),
            id: r.id.clone(),
            layer: r.labels.get(LABEL_LAYER).cloned(),
            stale_for: stale_for
                .get(&r.name)
                .map(|s| s.iter().cloned().collect())
                .unwrap_or_default(),
            other_ca: None,
        })
        .collect();
    unused.sort_by(|a, b| a.name.cmp(&b.name));
    unused.dedup_by(|a, b| a.name == b.name);
    Listing {
        instances,
        used: used.into_iter().collect(),
        unused,
    }
}

/// The layers of `images` on disk, each counted once: images built on one another share the
/// beginning of their histories, so a layer is known by its step and every step before it.
/// Returns the bytes of the layers and their keys (to subtract one set from another).
pub fn layer_bytes<'a>(
    images: impl IntoIterator<Item = &'a ImageDetails>,
) -> BTreeMap<String, u64> {
    let mut layers = BTreeMap::new();
    for image in images {
        let mut key = String::new();
        for step in &image.history {
            key = content_hash(&[
                key.as_bytes(),
                &step.created.to_le_bytes(),
                step.created_by.as_bytes(),
                &step.size.to_le_bytes(),
            ]);
            if step.size > 0 {
                layers.insert(key.clone(), step.size);
            }
        }
    }
    layers
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
pub async fn list<E: Engine>(engine: &E, names: &[InstanceNames]) -> Result<Listing, EngineError> {
    let found = found_images(engine, names).await?;
    Ok(classify(names, &found))
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
    let used_layers = layer_bytes(&used);
    let unused_alone = layer_bytes(&unused)
        .into_iter()
        .filter(|(k, _)| !used_layers.contains_key(k))
        .map(|(_, b)| b)
        .sum();
    Ok(Disk {
        used_bytes: used_layers.values().sum(),
        unused_alone_bytes: unused_alone,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::HistoryStep;
    use crate::images::Unnamed;

    fn image(name: &str, labels: &[(&str, &str)]) -> Resource {
        Resource {
            id: format!("sha256:{}", &content_hash(&[name.as_bytes()])[..12]),
            name: name.to_string(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .chain([(crate::engine::LABEL_TOOL.to_string(), "1".to_string())])
                .collect(),
        }
    }

    fn unnamed(reason: &str) -> Unnamed {
        Unnamed::History {
            repo: "o/r".into(),
            commit: "c".into(),
            reason: reason.into(),
        }
    }

    fn debian(id: &str, history: Result<&[&str], &str>, instance: &str) -> InstanceNames {
        InstanceNames {
            instance_id: id.into(),
            repo: "o/r".into(),
            prebuilt: None,
            base: vec![
                "swe-eval/base.debian-bookworm:new".into(),
                "swe-eval/base.debian-bookworm:latest".into(),
            ],
            env: Some("swe-eval.env.py.bookworm.x86_64.envnew:latest".into()),
            history: Some(
                history
                    .map(|c| c.iter().map(|s| s.to_string()).collect())
                    .map_err(unnamed),
            ),
            instance: Some(match history {
                Ok(_) => Ok(instance.to_string()),
                Err(e) => Err(unnamed(e)),
            }),
            compiler_cache: None,
        }
    }

    #[test]
    fn layers_are_present_stale_missing_or_unknown_and_the_rest_is_unused() {
        let names = [
            debian("o__r-1", Ok(&["h:root", "h:one"]), "e.o__r-1:new"),
            debian("o__r-2", Ok(&["h:root", "h:two"]), "e.o__r-2:new"),
            debian("o__r-3", Err("repository o/r cannot be had"), ""),
        ];
        let found = [
            image(
                "swe-eval/base.debian-bookworm:new",
                &[(LABEL_LAYER, "base")],
            ),
            image(
                "swe-eval/base.debian-bookworm:latest",
                &[(LABEL_LAYER, "base")],
            ),
            image(
                "swe-eval/base.debian-bookworm:old",
                &[(LABEL_LAYER, "base")],
            ),
            // The environment of an older recipe, of this repository and of another.
            image(
                "swe-eval.env.py.bookworm.x86_64.envold:latest",
                &[(LABEL_LAYER, "env"), (LABEL_REPO, "o/r")],
            ),
            image(
                "swe-eval.env.py.bookworm.x86_64.other:latest",
                &[(LABEL_LAYER, "env"), (LABEL_REPO, "x/y")],
            ),
            image("h:root", &[(LABEL_LAYER, "instance")]),
            image("h:one", &[(LABEL_LAYER, "instance")]),
            image("h:layout2", &[(LABEL_LAYER, "instance")]),
            image(
                "e.o__r-1:new",
                &[(LABEL_LAYER, "instance"), (LABEL_INSTANCE, "o__r-1")],
            ),
            // Instance 2's image of an older layout; instance 3's of an unknown one.
            image(
                "e.o__r-2:old",
                &[(LABEL_LAYER, "instance"), (LABEL_INSTANCE, "o__r-2")],
            ),
            image(
                "e.o__r-3:any",
                &[(LABEL_LAYER, "instance"), (LABEL_INSTANCE, "o__r-3")],
            ),
            image(
                "e.gone-9:x",
                &[(LABEL_LAYER, "instance"), (LABEL_INSTANCE, "gone-9")],
            ),
        ];
        let l = classify(&names, &found);
        let states = |i: usize| -> Vec<(&str, &str)> {
            l.instances[i]
                .layers
                .iter()
                .map(|s| (s.layer.as_str(), s.state.as_str()))
                .collect()
        };
        assert_eq!(
            states(0),
            [
                ("base", "present"),
                ("env", "stale"),
                ("history", "present"),
                ("instance", "present")
            ]
        );
        assert_eq!(
            states(1),
            [
                ("base", "present"),
                ("env", "stale"),
                ("history", "missing"),
                ("instance", "stale")
            ]
        );
        assert_eq!(
            states(2),
            [
                ("base", "present"),
                ("env", "stale"),
                ("history", "unknown"),
                ("instance", "unknown")
            ]
        );
        assert_eq!(
            l.instances[1].state(ListedLayer::Instance),
            Some(&LayerState::Stale {
                found: vec!["e.o__r-2:old".into()]
            })
        );
        assert_eq!(
            l.instances.iter().map(|i| i.ready).collect::<Vec<_>>(),
            [true, false, false]
        );
        assert_eq!(l.count(ListedLayer::Env, "stale"), 3);
        assert_eq!(
            l.used,
            [
                "e.o__r-1:new",
                "h:one",
                "h:root",
                "swe-eval/base.debian-bookworm:latest",
                "swe-eval/base.debian-bookworm:new"
            ]
        );
        let unused: Vec<(&str, Vec<&str>)> = l
            .unused
            .iter()
            .map(|u| {
                (
                    u.name.as_str(),
                    u.stale_for.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            unused,
            [
                ("e.gone-9:x", vec![]),
                ("e.o__r-2:old", vec!["o__r-2"]),
                ("e.o__r-3:any", vec![]),
                ("h:layout2", vec![]),
                (
                    "swe-eval.env.py.bookworm.x86_64.envold:latest",
                    vec!["o__r-1", "o__r-2", "o__r-3"]
                ),
                ("swe-eval.env.py.bookworm.x86_64.other:latest", vec![]),
                ("swe-eval/base.debian-bookworm:old", vec![]),
            ]
        );
    }

    #[test]
    fn a_base_is_present_by_its_own_name_and_stale_when_only_an_older_recipes_is_there() {
        let mut n = debian("o__r-1", Ok(&["h:root"]), "e:1");
        n.history = None;
        n.instance = None;
        let new = image(
            "swe-eval/base.debian-bookworm:new",
            &[(LABEL_LAYER, "base")],
        );
        let old = image(
            "swe-eval/base.debian-bookworm:old",
            &[(LABEL_LAYER, "base")],
        );
        let state = |found: &[Resource]| {
            classify(std::slice::from_ref(&n), found).instances[0]
                .state(ListedLayer::Base)
                .cloned()
        };
        assert_eq!(
            state(&[new.clone(), old.clone()]),
            Some(LayerState::Present)
        );
        assert_eq!(state(std::slice::from_ref(&new)), Some(LayerState::Present));
        assert_eq!(
            state(std::slice::from_ref(&old)),
            Some(LayerState::Stale {
                found: vec!["swe-eval/base.debian-bookworm:old".into()]
            })
        );
        assert_eq!(state(&[]), Some(LayerState::Missing));
    }

    #[test]
    fn shared_layers_count_once() {
        let step = |by: &str, size: u64| HistoryStep {
            created: 1,
            created_by: by.into(),
            size,
        };
        let details = |history: Vec<HistoryStep>| ImageDetails {
            id: String::new(),
            size: history.iter().map(|s| s.size).sum(),
            history,
            labels: BTreeMap::new(),
        };
        let base = details(vec![step("import", 100), step("CMD", 0)]);
        let env = details(vec![step("import", 100), step("CMD", 0), step("pip", 50)]);
        let a = details(vec![
            step("import", 100),
            step("CMD", 0),
            step("pip", 50),
            step("repo", 7),
        ]);
        // The same instruction on another parent is another layer.
        let b = details(vec![step("import", 100), step("CMD", 0), step("repo", 7)]);
        let total: u64 = layer_bytes([&base, &env, &a, &b]).values().sum();
        assert_eq!(total, 100 + 50 + 7 + 7);
        let only_env: u64 = layer_bytes([&env]).values().sum();
        assert_eq!(only_env, 150);
    }

    #[test]
    fn images_of_the_recipe_with_the_ca_bundle_the_other_way_are_told_from_older_ones() {
        let names = [
            debian("o__r-1", Ok(&["h:root", "h:one"]), "e.o__r-1:new"),
            debian("o__r-2", Ok(&["h:root", "h:two"]), "e.o__r-2:new"),
        ];
        // The same recipe with a CA bundle: another environment, so other history and
        // instance names.
        let with_ca = |n: &InstanceNames, own: &str, inst: &str| InstanceNames {
            env: Some("swe-eval.env.py.bookworm.x86_64.envca:latest".into()),
            history: Some(Ok(vec!["h:rootca".into(), own.into()])),
            instance: Some(Ok(inst.into())),
            ..n.clone()
        };
        let other = [
            with_ca(&names[0], "h:oneca", "e.o__r-1:ca"),
            with_ca(&names[1], "h:twoca", "e.o__r-2:ca"),
        ];
        let env = |name: &str| image(name, &[(LABEL_LAYER, "env"), (LABEL_REPO, "o/r")]);
        let inst =
            |name: &str, id: &str| image(name, &[(LABEL_LAYER, "instance"), (LABEL_INSTANCE, id)]);
        let found = [
            image(
                "swe-eval/base.debian-bookworm:new",
                &[(LABEL_LAYER, "base")],
            ),
            env("swe-eval.env.py.bookworm.x86_64.envca:latest"),
            env("swe-eval.env.py.bookworm.x86_64.envold:latest"),
            image("h:rootca", &[(LABEL_LAYER, "instance")]),
            image("h:oneca", &[(LABEL_LAYER, "instance")]),
            // Instance 1 was built with the bundle; instance 2 only by an older recipe.
            inst("e.o__r-1:ca", "o__r-1"),
            inst("e.o__r-2:old", "o__r-2"),
        ];
        let mut l = classify(&names, &found);
        assert_eq!((l.ready(), l.ready_with_other_ca()), (0, 0));
        mark_other_ca(&mut l, &other, true);
        let marks = |i: usize| -> Vec<(&str, Option<&str>)> {
            l.instances[i]
                .layers
                .iter()
                .map(|s| {
                    let o = s.other_ca.as_ref();
                    assert!(o.is_none_or(|o| o.built_with_ca_cert));
                    (s.layer.as_str(), o.map(|o| o.image.as_str()))
                })
                .collect()
        };
        let envca = Some("swe-eval.env.py.bookworm.x86_64.envca:latest");
        assert_eq!(
            marks(0),
            [
                ("base", None),
                ("env", envca),
                ("history", Some("h:oneca")),
                ("instance", Some("e.o__r-1:ca"))
            ]
        );
        assert_eq!(
            marks(1),
            [
                ("base", None),
                ("env", envca),
                ("history", None),
                ("instance", None)
            ]
        );
        // The states stay what they are under the listing's recipe.
        assert_eq!(l.instances[0].layers[3].state.as_str(), "stale");
        assert_eq!((l.ready(), l.ready_with_other_ca()), (0, 1));
        let uses: Vec<(&str, Vec<&str>)> = l
            .unused
            .iter()
            .map(|u| {
                let ids = u.other_ca.as_ref().map(|o| &o.instances[..]).unwrap_or(&[]);
                (u.name.as_str(), ids.iter().map(String::as_str).collect())
            })
            .collect();
        assert_eq!(
            uses,
            [
                ("e.o__r-1:ca", vec!["o__r-1"]),
                ("e.o__r-2:old", vec![]),
                ("h:oneca", vec!["o__r-1"]),
                ("h:rootca", vec!["o__r-1", "o__r-2"]),
                (
                    "swe-eval.env.py.bookworm.x86_64.envca:latest",
                    vec!["o__r-1", "o__r-2"]
                ),
                ("swe-eval.env.py.bookworm.x86_64.envold:latest", vec![]),
            ]
        );
        let json = serde_json::to_value(&l.instances[0].layers[1]).unwrap();
        assert_eq!(json["state"], "stale");
        assert_eq!(json["other_ca"]["built_with_ca_cert"], true);
        assert!(serde_json::to_value(&l.instances[0].layers[0])
            .unwrap()
            .get("other_ca")
            .is_none());
    }
}
