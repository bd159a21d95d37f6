//! The listener: accepts connections (at most [`ServeConfig::max_connections`] at once), serves
//! HTTP/1.1 on each with keep-alive, and stops accepting when told, letting the requests in
//! progress end.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

use super::app::App;
use super::config::ServeConfig;
use super::routes;
use crate::engine::Engine;
use crate::evaluator::{check_listen, AccessError, Evaluator};

/// Why the server could not listen.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The access rules refuse the address.
    #[error(transparent)]
    Access(#[from] AccessError),
    /// The address cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

/// A bound listener, not serving yet.
pub struct Listener {
    listener: TcpListener,
    config: ServeConfig,
}

/// Binds `config.listen` after checking the access rules (a non-loopback address needs a
/// token).
pub async fn listen(config: ServeConfig) -> Result<Listener, ServeError> {
    check_listen(config.listen.ip(), config.token.as_deref())?;
    let listener = TcpListener::bind(config.listen)
        .await
        .map_err(|source| ServeError::Bind {
            addr: config.listen,
            source,
        })?;
    Ok(Listener { listener, config })
}

impl Listener {
    /// The address bound (with the port the system chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().unwrap_or(self.config.listen)
    }

    /// Serves `evaluator` until `stop` turns true: then no connection is accepted, and the
    /// connections open are closed once their request in progress is answered.
    pub async fn serve<E: Engine>(
        self,
        evaluator: Arc<Evaluator<E>>,
        mut stop: watch::Receiver<bool>,
    ) {
        let app = Arc::new(App::new(evaluator, self.config.clone()));
        let permits = Arc::new(Semaphore::new(self.config.max_connections.max(1)));
        loop {
            let permit = tokio::select! {
                p = permits.clone().acquire_owned() => p,
                _ = stopped(&mut stop) => break,
            };
            let Ok(permit) = permit else { break };
            let accepted = tokio::select! {
                a = self.listener.accept() => a,
                _ = stopped(&mut stop) => break,
            };
            let Ok((stream, _)) = accepted else { continue };
            let _ = stream.set_nodelay(true);
            let app = app.clone();
            let mut stop = stop.clone();
            tokio::spawn(async move {
                let _permit = permit;
                let service = hyper::service::service_fn(move |req| {
                    let app = app.clone();
                    async move { Ok::<_, Infallible>(routes::handle(&app, req).await) }
                });
                let conn = hyper::server::conn::http1::Builder::new()
                    .keep_alive(true)
                    .serve_connection(TokioIo::new(stream), service);
                tokio::pin!(conn);
                let stop_now = tokio::select! {
                    _ = conn.as_mut() => false,
                    _ = stopped(&mut stop) => true,
                };
                if stop_now {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            });
        }
    }
}

/// Resolves once `stop` is true.
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

impl swe_eval_core::failure::Classify for ServeError {
    fn kind(&self) -> swe_eval_core::failure::ErrorKind {
        match self {
            ServeError::Access(e) => e.kind(),
            ServeError::Bind { .. } => swe_eval_core::failure::ErrorKind::Failed,
        }
    }
}
