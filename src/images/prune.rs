//! Removing the images a selection does not use ([`super::Listing`]'s unused ones: stale
//! images and those of instances not selected), never one a live run holds or a container
//! uses; first, as a run's start does, the leftovers of runs that died.

use std::collections::BTreeSet;

use super::hold;
use super::{CleanupReport, Listing};
use crate::engine::{Engine, EngineError};

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
