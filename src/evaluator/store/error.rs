//! Why the state could not be read or written.

use std::path::PathBuf;
use std::sync::Arc;

use super::rows::SCHEMA_VERSION;

/// Why the state could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed.
    #[error("state database {path}: {source}")]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// The database was written by a newer swe-eval.
    #[error("state database {path} has schema version {found}, newer than this swe-eval's {SCHEMA_VERSION}: use a newer swe-eval or another --state folder")]
    Newer {
        /// The database file.
        path: PathBuf,
        /// Its version.
        found: i64,
    },
    /// A stored result could not be read.
    #[error("state database {path}: request {id}: {message}")]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// The request.
        id: String,
        /// What is wrong.
        message: String,
    },
    /// The writer thread could not commit a write (every write of its batch gets this error).
    #[error("state database {path}: cannot commit: {source}")]
    Commit {
        /// The database file.
        path: PathBuf,
        /// SQLite's error, shared by the batch's writes.
        #[source]
        source: Arc<rusqlite::Error>,
    },
    /// The writer thread is gone (the store is closed).
    #[error("state database {path}: closed")]
    Closed {
        /// The database file.
        path: PathBuf,
    },
}

impl swe_eval_core::failure::Classify for StoreError {
    fn kind(&self) -> swe_eval_core::failure::ErrorKind {
        match self {
            // A newer swe-eval's state: the message says to use it, or another folder.
            StoreError::Newer { .. } => swe_eval_core::failure::ErrorKind::Usage,
            _ => swe_eval_core::failure::ErrorKind::Failed,
        }
    }
}
