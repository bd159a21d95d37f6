//! A set of images through a registry: pushed as `HOST:PORT/<name>`, pulled back under its
//! own names.

use std::time::{Duration, Instant};

use crate::engine::{Engine, EngineError};

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
