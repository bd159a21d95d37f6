//! `swe-eval serve`'s HTTP face over the [`crate::evaluator`]: a second face beside `cli`. It
//! parses requests, calls the evaluator and renders its answers (JSON, the Prometheus text
//! format); the evaluator holds every rule (admission, deadlines, validation, access). HTTP/1.1
//! on hyper (already in the tree through the Docker client). Only the CLI imports it.
//!
//! - `app`: the state every connection shares (evaluator, configuration, the face's counters).
//! - `config`: how the server listens (address, token, bounds).
//! - `http`: the listener (bounded connections, graceful stop).
//! - `reply`: the body within its bound, JSON answers and errors.
//! - `routes`: the endpoints.
//! - `prometheus`: the counters as Prometheus text.

mod app;
mod config;
mod http;
mod prometheus;
mod reply;
mod routes;
#[cfg(test)]
mod tests;

pub use config::{ServeConfig, DEFAULT_MAX_BODY, DEFAULT_MAX_BODY_MEMORY};
pub use http::{listen, Listener, ServeError};
