//! How the server listens: address, token and bounds.

use std::net::SocketAddr;

/// The largest request body, by default: 64 MiB.
pub const DEFAULT_MAX_BODY: usize = 64 << 20;

/// The bytes of request bodies held at once, by default: 128 MiB, two of the largest bodies.
pub const DEFAULT_MAX_BODY_MEMORY: usize = 128 << 20;

/// How the server listens.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The address.
    pub listen: SocketAddr,
    /// The bearer token every request must carry (required off loopback).
    pub token: Option<String>,
    /// The largest request body, in bytes.
    pub max_body: usize,
    /// The most bytes of request bodies held at once, every connection together (taken at
    /// least as large as `max_body`, so any body the server takes can be read). A request
    /// whose body would go past it is answered 503 with `Retry-After` before its body is read.
    pub max_body_memory: usize,
    /// The longest wait a client may ask for, in seconds.
    pub max_wait_s: f64,
    /// Most connections at once (more wait to be accepted).
    pub max_connections: usize,
}

impl ServeConfig {
    /// The defaults on `listen`.
    pub fn new(listen: SocketAddr) -> Self {
        ServeConfig {
            listen,
            token: None,
            max_body: DEFAULT_MAX_BODY,
            max_body_memory: DEFAULT_MAX_BODY_MEMORY,
            max_wait_s: 600.0,
            max_connections: 1024,
        }
    }
}
