//! How the server listens: address, token and bounds.

use std::net::SocketAddr;

/// How the server listens.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The address.
    pub listen: SocketAddr,
    /// The bearer token every request must carry (required off loopback).
    pub token: Option<String>,
    /// The largest request body, in bytes.
    pub max_body: usize,
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
            max_body: 64 << 20,
            max_wait_s: 600.0,
            max_connections: 1024,
        }
    }
}
