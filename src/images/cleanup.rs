//! Removing, at the end of a run, the images the cache level does not keep, and handing over
//! those another live run still holds.

use std::collections::BTreeSet;

use super::{hold, CacheLevel, CleanupReport, Layer, Prepared};
use crate::engine::{Engine, EngineError};

/// Removes the images `prepared` created that `level` does not keep. An image another live
/// process holds ([`Holding`](super::Holding)) is handed over instead: a marker records that it is to go, and
/// this or any later cleanup removes it once nobody holds it. Those earlier runs handed
/// over are removed here too, unless this run's own level keeps them. Failures are collected,
/// not stopped at.
pub async fn cleanup<E: Engine>(
    engine: &E,
    prepared: &Prepared,
    level: CacheLevel,
) -> CleanupReport {
    let mut report = CleanupReport::default();
    let me = crate::owner::owner_id();
    let Some(held) = hold::held_by_others_or_report(engine, &me, &mut report).await else {
        return report;
    };
    // Instances first: an environment image cannot go while an instance image stands on it.
    let mut doomed: Vec<&(String, Layer)> = prepared
        .created
        .iter()
        .filter(|(_, l)| !level.keeps(*l))
        .collect();
    doomed.sort_by_key(|(_, l)| std::cmp::Reverse(*l));
    for (image, _) in doomed {
        let holder = match held.get(image) {
            Some(owner) => owner.clone(),
            None => match engine.remove_image(image).await {
                Ok(()) => {
                    report.removed.push(image.clone());
                    continue;
                }
                // A job container of another run, or a hold made since the listing.
                Err(EngineError::ImageInUse { .. }) => "a container".to_string(),
                Err(e) => {
                    report.errors.push((image.clone(), e));
                    continue;
                }
            },
        };
        match hold::mark_doomed(engine, image).await {
            Ok(()) => report.handed_over.push((image.clone(), holder)),
            Err(e) => report.errors.push((image.clone(), e)),
        }
    }
    let keep: BTreeSet<&str> = prepared
        .created
        .iter()
        .filter(|(_, l)| level.keeps(*l))
        .map(|(i, _)| i.as_str())
        .collect();
    hold::sweep_doomed(engine, &held, &keep, &mut report).await;
    report
}
