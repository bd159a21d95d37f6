//! Why one instance has no image: what a build hands back, and what preparation reports
//! (`build_events`), in a file of its own so both can name it.

use std::path::PathBuf;

use super::Layer;

/// Why one instance has no image.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageFailure {
    /// The image that could not be had.
    pub image: String,
    /// Its layer.
    pub layer: Layer,
    /// Why.
    pub message: String,
    /// The saved build log, if there was one.
    pub log_path: Option<PathBuf>,
    /// Worth retrying (a daemon hiccup), as opposed to a broken recipe.
    pub transient: bool,
    /// Not tried: preparation was stopped before this image's build started.
    pub stopped: bool,
}
