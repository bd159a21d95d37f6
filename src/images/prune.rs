//! Removing what a selection does not use: [`super::Listing`]'s unused images (stale images
//! and those of instances not selected; not those that are the selection's recipe but for the
//! CA bundle, which a run with the other `--ca-cert` setting uses) and this tool's compiler cache volumes no selected
//! instance's build mounts, never an image a live run holds or a container uses, nor a volume
//! a container uses or whose environment a live run holds; first, as a run's start does, the
//! leftovers of runs that died. The rules are here; `swe-eval images prune` only renders.

use std::collections::{BTreeMap, BTreeSet};

use super::hold;
use super::{
    compiler_cache_volume, CleanupReport, InstanceNames, LayerState, Listing, LABEL_LAYER,
    LABEL_REPO,
};
use crate::engine::{Engine, EngineError, LABEL_TOOL};

/// The name every compiler cache volume starts with ([`compiler_cache_volume`]); a volume of
/// this tool's that does not is left alone.
const VOLUME_PREFIX: &str = "swe-eval-ccache.";

/// How [`prune`] goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PruneOptions {
    /// Say what would be removed, remove nothing.
    pub dry_run: bool,
    /// Leave the compiler cache volumes alone (images only).
    pub keep_volumes: bool,
}

/// Why [`prune`] removed nothing.
#[derive(Debug, thiserror::Error)]
pub enum PruneError {
    /// Some selected instances' images cannot be named (their repository cannot be had to
    /// plan their histories): their current images would look unused and go.
    #[error(
        "the images of {instances} selected instance(s) cannot be named (see `swe-eval images list`): \
         pruning now could remove them; give their repositories (--mirrors, --repo) first"
    )]
    Unnamed {
        /// How many.
        instances: usize,
    },
}

impl swe_eval_core::failure::Classify for PruneError {
    fn kind(&self) -> swe_eval_core::failure::ErrorKind {
        swe_eval_core::failure::ErrorKind::Usage
    }
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
    /// Images kept because they are selected instances' images under the current recipe
    /// but for the CA bundle (a run given the other `--ca-cert` setting uses them), with
    /// whether they were built with one ([`super::mark_other_ca`]).
    pub other_ca: Vec<(String, bool)>,
    /// Removals that failed.
    pub errors: Vec<(String, EngineError)>,
    /// What the start-of-run sweep did: leftovers of runs that died, and images handed over
    /// that nobody holds any more.
    pub swept: CleanupReport,
    /// The compiler cache volumes (untouched with [`PruneOptions::keep_volumes`]).
    pub volumes: VolumeReport,
}

/// What [`prune`] did with the compiler cache volumes.
#[derive(Debug, Default)]
pub struct VolumeReport {
    /// Volumes removed (dry: that would be).
    pub removed: Vec<String>,
    /// The selection's volumes (its builds mount them), kept.
    pub used: Vec<String>,
    /// Volumes kept because a live run holds the environment image they cache builds on,
    /// with the holder.
    pub held: Vec<(String, String)>,
    /// Volumes kept because a container uses them (a build compiling now). A dry run cannot
    /// tell: it lists them as removed.
    pub in_use: Vec<String>,
    /// Removals (or listings) that failed.
    pub errors: Vec<(String, EngineError)>,
}

/// Removes what the selection `names` (listed on the engine as `listing`) does not use: the
/// unused images (stale ones and those of instances not selected; not those `listing` marks
/// as the selection's recipe but for the CA bundle) and, unless
/// `opts.keep_volumes`, this tool's compiler cache volumes that no selected instance's build
/// mounts. Never an image a live run holds or a container uses, never a volume a container
/// uses or whose environment image a live run holds; first, as a run's start does, the
/// leftovers of runs that died. `opts.dry_run` removes nothing and says what would go.
/// Refuses, removing nothing, while an instance's images cannot be named.
pub async fn prune<E: Engine>(
    engine: &E,
    names: &[InstanceNames],
    listing: &Listing,
    opts: PruneOptions,
) -> Result<PruneReport, PruneError> {
    // An instance whose images cannot be named would lose every image built for it.
    let unnamed = listing
        .instances
        .iter()
        .filter(|i| {
            i.layers
                .iter()
                .any(|l| matches!(l.state, LayerState::Unknown { .. }))
        })
        .count();
    if unnamed > 0 {
        return Err(PruneError::Unnamed { instances: unnamed });
    }
    let dry_run = opts.dry_run;
    let mut report = PruneReport::default();
    let me = crate::owner::owner_id();
    if !dry_run {
        report.swept = hold::reap_dead(engine, &me).await;
    }
    let Some(held) = hold::held_by_others_or_report(engine, &me, &mut report.swept).await else {
        // Not knowing what others hold, nothing is removed.
        return Ok(report);
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
        if let Some(o) = &u.other_ca {
            report.other_ca.push((u.name.clone(), o.built_with_ca_cert));
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
    if !opts.keep_volumes {
        report.volumes = prune_volumes(engine, names, &held, dry_run).await;
    }
    Ok(report)
}

/// The compiler cache volumes of environments that live runs hold (`held`: image name ->
/// holder): the volume of each held environment image for the repository it is labelled
/// with.
async fn held_volumes<E: Engine>(
    engine: &E,
    held: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, EngineError> {
    let envs = engine
        .list_images(BTreeMap::from([(
            LABEL_LAYER.to_string(),
            "env".to_string(),
        )]))
        .await?;
    Ok(envs
        .into_iter()
        .filter_map(|env| {
            let owner = held.get(&env.name)?;
            let repo = env.labels.get(LABEL_REPO)?;
            Some((compiler_cache_volume(repo, &env.name), owner.clone()))
        })
        .collect())
}

/// This tool's compiler cache volumes that no build of `names` mounts, removed (dry: listed),
/// except those a container uses or whose environment a live run holds.
async fn prune_volumes<E: Engine>(
    engine: &E,
    names: &[InstanceNames],
    held: &BTreeMap<String, String>,
    dry_run: bool,
) -> VolumeReport {
    let mut out = VolumeReport::default();
    let used: BTreeSet<&str> = names
        .iter()
        .filter_map(|n| n.compiler_cache.as_deref())
        .collect();
    let listed = engine
        .list_volumes(BTreeMap::from([(LABEL_TOOL.to_string(), String::new())]))
        .await;
    let volumes = match listed {
        Ok(v) => v,
        // An engine without named volumes has no compiler cache either.
        Err(EngineError::Unsupported { .. }) => return out,
        Err(e) => {
            out.errors.push(("(the compiler cache volumes)".into(), e));
            return out;
        }
    };
    // Not knowing which environments live runs use, no volume is removed.
    let held = match held_volumes(engine, held).await {
        Ok(h) => h,
        Err(e) => {
            out.errors
                .push(("(the environment images live runs hold)".into(), e));
            return out;
        }
    };
    let mut names: Vec<String> = volumes
        .into_iter()
        .map(|v| v.name)
        .filter(|n| n.starts_with(VOLUME_PREFIX))
        .collect();
    names.sort();
    names.dedup();
    for v in names {
        if used.contains(v.as_str()) {
            out.used.push(v);
        } else if let Some(owner) = held.get(&v) {
            out.held.push((v, owner.clone()));
        } else if dry_run {
            out.removed.push(v);
        } else {
            match engine.remove_volume(&v).await {
                Ok(()) => out.removed.push(v),
                Err(EngineError::VolumeInUse { .. }) => out.in_use.push(v),
                Err(e) => out.errors.push((v, e)),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::FakeEngine;
    use crate::images::{hold_labels, labels_for, list, Holding, Layer};

    const ENV_A: &str = "swe-eval.env.py.bookworm.x86_64.aaaa:latest";
    const ENV_B: &str = "swe-eval.env.py.bookworm.x86_64.bbbb:latest";
    const ENV_C: &str = "swe-eval.env.py.bookworm.x86_64.cccc:latest";

    /// An instance of `repo` on `env` whose build compiles (official flavour: no history).
    fn compiling(id: &str, repo: &str, env: &str) -> InstanceNames {
        InstanceNames {
            instance_id: id.into(),
            repo: repo.into(),
            prebuilt: None,
            base: vec!["base:1".into()],
            env: Some(env.into()),
            history: None,
            instance: Some(Ok(format!("inst.{id}:1"))),
            compiler_cache: Some(compiler_cache_volume(repo, env)),
        }
    }

    fn tool_labels() -> BTreeMap<String, String> {
        labels_for(Layer::Instance, None)
    }

    fn env_labels(repo: &str) -> BTreeMap<String, String> {
        let mut l = labels_for(Layer::Env, None);
        l.insert(LABEL_REPO.into(), repo.into());
        l
    }

    #[tokio::test]
    async fn volumes_no_selected_build_mounts_go_unless_a_container_or_a_live_run_uses_them() {
        let fake = Arc::new(FakeEngine::new());
        let names = [compiling("a__x-1", "A/x", ENV_A)];
        let selected = compiler_cache_volume("A/x", ENV_A);
        // Another environment's cache of the same repository (a stale recipe) and of another
        // repository; one a build compiling now mounts; one whose environment a live run
        // holds.
        let stale_env = compiler_cache_volume("A/x", ENV_C);
        let other_repo = compiler_cache_volume("b/y", ENV_C);
        let compiling_now = compiler_cache_volume("c/z", ENV_C);
        let live = compiler_cache_volume("b/y", ENV_B);
        for v in [&selected, &other_repo, &stale_env, &compiling_now, &live] {
            fake.add_volume(v, tool_labels());
        }
        fake.use_volume(&compiling_now);
        // Not the compiler cache's: another volume of the tool's, and one of someone else's.
        fake.add_volume("swe-eval.other", tool_labels());
        fake.add_volume("swe-eval-ccache.theirs.000000000000", BTreeMap::new());
        fake.add_image("base:1").add_image("inst.a__x-1:1");
        for (env, repo) in [(ENV_A, "A/x"), (ENV_B, "b/y")] {
            fake.build_image(env, Vec::<u8>::new(), env_labels(repo))
                .await
                .unwrap();
        }
        // A run of b/y, live on another host, holds its environment.
        let other = Holding::new(fake.clone(), hold_labels("elsewhere:1:1", "r"));
        assert!(other.image_exists(ENV_B).await.unwrap());

        let listing = list(&*fake, &names).await.unwrap();
        let dry = PruneOptions {
            dry_run: true,
            keep_volumes: false,
        };
        let report = prune(&*fake, &names, &listing, dry).await.unwrap();
        assert_eq!(report.volumes.used, std::slice::from_ref(&selected));
        assert_eq!(
            report.volumes.held,
            [(live.clone(), "elsewhere:1:1".to_string())]
        );
        let mut would = vec![other_repo.clone(), stale_env.clone(), compiling_now.clone()];
        would.sort();
        assert_eq!(report.volumes.removed, would);
        assert_eq!(fake.volumes().len(), 7, "a dry run removes nothing");

        let report = prune(&*fake, &names, &listing, PruneOptions::default())
            .await
            .unwrap();
        let mut gone = vec![other_repo.clone(), stale_env.clone()];
        gone.sort();
        assert_eq!(report.volumes.removed, gone);
        assert_eq!(report.volumes.in_use, std::slice::from_ref(&compiling_now));
        assert!(report.volumes.errors.is_empty(), "{:?}", report.volumes);
        let mut left = vec![
            selected.clone(),
            compiling_now.clone(),
            live.clone(),
            "swe-eval.other".to_string(),
            "swe-eval-ccache.theirs.000000000000".to_string(),
        ];
        left.sort();
        assert_eq!(fake.volumes(), left);

        // The build ends and the run with it: the next prune takes both.
        fake.release_volume(&compiling_now);
        assert!(crate::images::release_holds(&*fake, "elsewhere:1:1")
            .await
            .is_empty());
        let report = prune(&*fake, &names, &listing, PruneOptions::default())
            .await
            .unwrap();
        let mut gone = vec![compiling_now.clone(), live.clone()];
        gone.sort();
        assert_eq!(report.volumes.removed, gone);

        // Images only: no volume is looked at.
        fake.add_volume(&other_repo, tool_labels());
        let keep = PruneOptions {
            dry_run: false,
            keep_volumes: true,
        };
        let report = prune(&*fake, &names, &listing, keep).await.unwrap();
        assert!(report.volumes.removed.is_empty() && report.volumes.used.is_empty());
        assert!(fake.volumes().contains(&other_repo));
    }

    #[tokio::test]
    async fn an_instance_whose_images_cannot_be_named_stops_the_prune_before_anything_goes() {
        let fake = FakeEngine::new();
        let mut unnamed = compiling("a__x-2", "A/x", ENV_A);
        unnamed.instance = Some(Err(crate::images::Unnamed::History {
            repo: "A/x".into(),
            commit: "c".into(),
            reason: "repository A/x cannot be had".into(),
        }));
        let names = [compiling("a__x-1", "A/x", ENV_A), unnamed];
        fake.add_image("base:1").add_image("old:1");
        fake.build_image("inst.a__x-2:old", Vec::<u8>::new(), tool_labels())
            .await
            .unwrap();
        fake.add_volume(&compiler_cache_volume("b/y", ENV_B), tool_labels());
        let listing = list(&fake, &names).await.unwrap();
        assert_eq!(listing.unused.len(), 1, "{listing:?}");
        let err = prune(&fake, &names, &listing, PruneOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(err, PruneError::Unnamed { instances: 1 }));
        assert!(err.to_string().contains("--mirrors, --repo"), "{err}");
        assert!(fake.images().contains(&"inst.a__x-2:old".to_string()));
        assert_eq!(fake.volumes().len(), 1);
        assert!(!fake
            .calls()
            .iter()
            .any(|c| matches!(c, crate::engine::Call::RemoveImage(_))));
    }
}
