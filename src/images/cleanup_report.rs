//! What a cleanup did ([`CleanupReport`]): filled by [`super::cleanup()`] and by the holds
//! (reaping the images of dead runs, sweeping those handed over).

use crate::engine::EngineError;

/// What [`super::cleanup()`] did.
#[derive(Debug, Default)]
pub struct CleanupReport {
    /// Images removed: this run's own, then those earlier runs handed over.
    pub removed: Vec<String>,
    /// Images another live process still uses, with who holds them (an owner id, or
    /// "a container"): marked, and removed by the first cleanup that finds them unheld.
    pub handed_over: Vec<(String, String)>,
    /// Removals that failed, by image.
    pub errors: Vec<(String, EngineError)>,
}
