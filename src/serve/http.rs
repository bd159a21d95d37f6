//! The listener: accepts connections (at most [`ServeConfig::max_connections`] at once), serves
//! HTTP/1.1 on each with keep-alive, and stops accepting when told, letting the requests in
//! progress end.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

use super::routes::{self, App};
use crate::engine::Engine;
use crate::evaluator::{check_listen, AccessError, Evaluator, Refusal, RefusalCode};

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

/// The body of `req`, at most `max` bytes (a larger one is refused with 413).
pub(super) async fn body(req: Request<Incoming>, max: usize) -> Result<Bytes, Refusal> {
    let too_large = || {
        Refusal::new(
            RefusalCode::TooLarge,
            format!("the request body is larger than {max} bytes"),
            None,
        )
    };
    let declared = req
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    match Limited::new(req.into_body(), max).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err(too_large())
        }
        Err(e) => Err(Refusal::new(
            RefusalCode::BadRequest,
            format!("the request body could not be read: {e}"),
            None,
        )),
    }
}

/// A response with `status`, content type `kind` and `body`.
pub(super) fn answer(
    status: StatusCode,
    kind: &str,
    body: impl Into<Bytes>,
) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    if let Ok(v) = hyper::header::HeaderValue::from_str(kind) {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r
}

/// A JSON response.
pub(super) fn json(status: StatusCode, value: &impl serde::Serialize) -> Response<Full<Bytes>> {
    let body = serde_json::to_vec(value).unwrap_or_else(|e| {
        format!("{{\"code\":\"internal\",\"message\":\"cannot encode the answer: {e}\"}}")
            .into_bytes()
    });
    answer(status, "application/json", body)
}

/// The JSON error of a refusal, with its status (and `Retry-After` for a full queue).
pub(super) fn refused(r: &Refusal) -> Response<Full<Bytes>> {
    let status = StatusCode::from_u16(r.code.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
    let mut resp = json(status, r);
    if let Some(s) = r.retry_after {
        resp.headers_mut().insert(
            hyper::header::RETRY_AFTER,
            hyper::header::HeaderValue::from(s),
        );
    }
    if r.code == RefusalCode::Unauthorized {
        resp.headers_mut().insert(
            hyper::header::WWW_AUTHENTICATE,
            hyper::header::HeaderValue::from_static("Bearer"),
        );
    }
    resp
}
