//! Failures of image preparation that are not one instance's build failure.

use crate::engine::EngineError;

/// Failures of image preparation that are not one instance's build failure.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The engine failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The Debian base image could not be bootstrapped.
    #[error("base image bootstrap of Debian {release} failed: {message}")]
    Bootstrap {
        /// The release, e.g. `bookworm`.
        release: String,
        /// What went wrong.
        message: String,
        /// The bootstrap's log.
        log: String,
    },
    /// A repository could not be fetched or checked out.
    #[error("repository {repo}: {message}")]
    Repo {
        /// The repository, `owner/name`.
        repo: String,
        /// What went wrong.
        message: String,
    },
    /// An image's build context could not be made.
    #[error("build context of {image}: {message}")]
    Context {
        /// The image.
        image: String,
        /// What went wrong.
        message: String,
    },
    /// Preparation was stopped (an interrupt, the deadline) before this image's build started.
    #[error("{image} not built: image preparation was stopped")]
    Stopped {
        /// The image.
        image: String,
    },
    /// A cache level name that is not `none`, `base`, `env` or `instance`.
    #[error("unknown cache level `{0}` (expected none, base, env or instance)")]
    CacheLevel(String),
}

impl swe_eval_core::failure::Classify for ImageError {
    fn kind(&self) -> swe_eval_core::failure::ErrorKind {
        match self {
            ImageError::CacheLevel(_) => swe_eval_core::failure::ErrorKind::Usage,
            _ => swe_eval_core::failure::ErrorKind::Failed,
        }
    }
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
