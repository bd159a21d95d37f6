//! The server a `bench serve` load goes to, and the load's shape.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The server a load goes to, and its shape.
#[derive(Debug, Clone)]
pub struct ServeLoad {
    /// The server's address (`restart`: where the servers it starts listen).
    pub connect: SocketAddr,
    /// The server's token, if it asks for one (`restart`'s servers take none).
    pub token: Option<String>,
    /// Connections at once.
    pub connections: u32,
    /// Requests in all: `similarity`, `queue`, and `grpo`'s cache hits.
    pub requests: u32,
    /// Requests per second offered, spread over the connections; 0: each connection sends as
    /// soon as it is answered.
    pub rate: f64,
    /// How long the verdicts are waited for.
    pub wait: Duration,
    /// `restart`: the servers' output folder (their state is `output/serve`); it must hold no
    /// server's state yet (`swe-eval bench serve` refuses one that does).
    pub output: PathBuf,
    /// `restart`: the servers' `-j`.
    pub workers: u32,
}
