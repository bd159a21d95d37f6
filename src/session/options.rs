//! How a session runs: the runner's settings (shared by `run` and `serve`), how images are
//! prepared and which are kept, and the setups given ready-made.

use std::collections::HashMap;
use std::sync::Arc;

use super::prepare::PrepareOptions;
use crate::images::CacheLevel;
use crate::runner::{RunConfig, Setup};

/// Everything a [`super::Session`] needs besides its engine and dataset.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// The jobs' settings (run id, workers, timeout, strict, network, limits, retries, the
    /// order's durations, sharing of identical patches, empty runs).
    pub run: RunConfig,
    /// How images are chosen and built.
    pub prepare: PrepareOptions,
    /// Which images to keep when the session closes.
    pub keep: CacheLevel,
    /// Setups given ready-made, by instance id (their images are not prepared): the trivial
    /// task of `bench harness`.
    pub setups: HashMap<String, Arc<Setup>>,
}

impl SessionOptions {
    /// The options with `run`'s settings and `prepare`'s images, keeping the environment
    /// images (the default cache level), no setups given.
    pub fn new(run: RunConfig, prepare: PrepareOptions) -> Self {
        SessionOptions {
            run,
            prepare,
            keep: CacheLevel::default(),
            setups: HashMap::new(),
        }
    }
}
