//! Failures of image preparation that are not one instance's build failure.

use crate::engine::EngineError;

/// Failures of image preparation that are not one instance's build failure.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("base image bootstrap of Debian {release} failed: {message}")]
    Bootstrap {
        release: String,
        message: String,
        log: String,
    },
    #[error("repository {repo}: {message}")]
    Repo { repo: String, message: String },
    #[error("build context of {image}: {message}")]
    Context { image: String, message: String },
    #[error("unknown cache level `{0}` (expected none, base, env or instance)")]
    CacheLevel(String),
}

impl ImageError {
    /// The log worth saving beside the failure, if any.
    pub fn log(&self) -> Option<&str> {
        match self {
            ImageError::Engine(EngineError::Build { log, .. })
            | ImageError::Bootstrap { log, .. } => Some(log),
            _ => None,
        }
    }
}
