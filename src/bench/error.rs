//! Why a benchmark could not finish: the error of every library call it makes, and what it
//! checks itself (a server that answered otherwise than expected, a browser that did not render,
//! the official harness that failed).

use std::net::SocketAddr;
use std::path::PathBuf;

use swe_eval_core::failure::{Classify, ErrorKind};

use super::load::ClientError;

/// Why a benchmark could not finish.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A file or a process could not be read, written or started.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A JSON document could not be read or written.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A figures file could not be written.
    #[error(transparent)]
    Write(#[from] swe_eval_core::fsutil::WriteError),
    /// The engine could not be reached.
    #[error(transparent)]
    Connect(#[from] crate::engine::ConnectError),
    /// The engine failed.
    #[error(transparent)]
    Engine(#[from] crate::engine::EngineError),
    /// An image could not be made.
    #[error(transparent)]
    Image(#[from] crate::images::ImageError),
    /// The harness's run failed.
    #[error(transparent)]
    Run(#[from] crate::runner::RunError),
    /// The dataset or the predictions could not be read.
    #[error(transparent)]
    Load(#[from] swe_eval_core::dataset::LoadError),
    /// The saved logs could not be read, or a report not written.
    #[error(transparent)]
    Report(#[from] swe_eval_core::report::ReportError),
    /// The study's files could not be written.
    #[error(transparent)]
    Study(#[from] swe_eval_core::study::WriteReportError),
    /// The worker threads could not be started.
    #[error(transparent)]
    Threads(#[from] rayon::ThreadPoolBuildError),
    /// A server could not be reached, or its answer was not HTTP as the load generator reads
    /// it.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The load could not be made on the server at `addr`: nothing listens there, or it broke
    /// the connection.
    #[error("{source} (is `swe-eval serve` listening there? start it first)")]
    NoServer {
        /// Why.
        #[source]
        source: ClientError,
    },
    /// A request answered with an unexpected status.
    #[error("{request} on {addr} answered {status}: {body}")]
    Status {
        /// The server.
        addr: SocketAddr,
        /// The method and path.
        request: &'static str,
        /// The HTTP status.
        status: u16,
        /// The answer's body, as text.
        body: String,
    },
    /// A `swe-eval serve` the benchmark started did not say it was listening.
    #[error("the server did not start (see {}): `{line}`", log.display())]
    ServerStart {
        /// Its standard error.
        log: PathBuf,
        /// The first line it printed instead.
        line: String,
    },
    /// A `swe-eval serve` the benchmark started did not prepare its images in time.
    #[error("the server's images were not ready within {minutes} min")]
    NotReady {
        /// The time allowed.
        minutes: u64,
    },
    /// A task of the benchmark stopped before its end (it panicked).
    #[error("{what} stopped: {source}")]
    Task {
        /// Which task.
        what: &'static str,
        /// Why.
        #[source]
        source: tokio::task::JoinError,
    },
    /// The official harness exited with an error.
    #[error("official harness failed: {stderr}")]
    Official {
        /// Its standard error.
        stderr: String,
    },
    /// The browser could not be started.
    #[error("cannot start {}: {source}", path.display())]
    Browser {
        /// The browser given.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The page opened in the browser did not run its script to the end.
    #[error("the page did not finish rendering (no data-render-ms in the DOM)")]
    NotRendered,
    /// The page opened in the browser shows another number of rows than it was given.
    #[error("the page shows {shown} rows, not {records}")]
    Rows {
        /// What the page shows.
        shown: String,
        /// The records written into it.
        records: usize,
    },
    /// The saved run graded into no record to repeat.
    #[error("no records to repeat: {predictions} graded into none")]
    NoRecords {
        /// The predictions file.
        predictions: String,
    },
}

impl Classify for BenchError {
    fn kind(&self) -> ErrorKind {
        match self {
            BenchError::Io(e) => Classify::kind(e),
            BenchError::Json(e) => e.kind(),
            BenchError::Write(e) => e.kind(),
            BenchError::Connect(e) => e.kind(),
            BenchError::Engine(e) => e.kind(),
            BenchError::Image(e) => e.kind(),
            BenchError::Run(e) => e.kind(),
            BenchError::Load(e) => e.kind(),
            BenchError::Report(e) => e.kind(),
            BenchError::Study(e) => e.kind(),
            BenchError::Threads(e) => e.kind(),
            BenchError::Client(_)
            | BenchError::NoServer { .. }
            | BenchError::Status { .. }
            | BenchError::ServerStart { .. }
            | BenchError::NotReady { .. }
            | BenchError::Task { .. }
            | BenchError::Official { .. }
            | BenchError::Browser { .. }
            | BenchError::NotRendered
            | BenchError::Rows { .. }
            | BenchError::NoRecords { .. } => ErrorKind::Failed,
        }
    }
}
