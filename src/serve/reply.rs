//! Reading a request's body within its bound, and writing answers: plain, JSON, and the JSON
//! error of a refusal with its status.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::evaluator::{Refusal, RefusalCode};

/// A request's body, read into one buffer, and its share of the bytes of bodies the server
/// holds at once (given back when dropped).
pub(super) struct Body {
    /// The bytes.
    pub bytes: Vec<u8>,
    /// The share of [`super::app::App::bodies`] it holds.
    pub held: Option<OwnedSemaphorePermit>,
}

/// The body of `req`, at most `max` bytes (a larger one is refused with 413), read into one
/// buffer. Its bytes are taken from `budget` first: with a `Content-Length`, all of them
/// before any is read; without one (chunked), each piece's as it comes. When the budget has
/// not that much left, the request is refused with 503 and `Retry-After`.
pub(super) async fn body(
    req: Request<Incoming>,
    max: usize,
    budget: &Arc<Semaphore>,
) -> Result<Body, Refusal> {
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
    let mut held: Option<OwnedSemaphorePermit> = None;
    let take = |n: usize, held: &mut Option<OwnedSemaphorePermit>| {
        let permit = u32::try_from(n)
            .ok()
            .and_then(|n| budget.clone().try_acquire_many_owned(n).ok())
            .ok_or_else(|| busy(n, budget))?;
        match held {
            Some(h) => h.merge(permit),
            None => *held = Some(permit),
        }
        Ok::<(), Refusal>(())
    };
    let mut bytes = Vec::new();
    if let Some(n) = declared {
        let n = n as usize;
        take(n, &mut held)?;
        bytes.reserve_exact(n);
    }
    let mut incoming = req.into_body();
    while let Some(frame) = incoming.frame().await {
        let frame = frame.map_err(|e| {
            Refusal::new(
                RefusalCode::BadRequest,
                format!("the request body could not be read: {e}"),
                None,
            )
        })?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let len = bytes.len() + data.len();
        if len > max {
            return Err(too_large());
        }
        // Bytes beyond those declared (none are, for a chunked body) are taken as they come.
        let covered = held.as_ref().map_or(0, |h| h.num_permits());
        if len > covered {
            take(len - covered, &mut held)?;
        }
        bytes.extend_from_slice(&data);
    }
    Ok(Body { bytes, held })
}

/// The refusal of a body of `n` bytes the budget cannot hold now.
fn busy(n: usize, budget: &Semaphore) -> Refusal {
    let mut r = Refusal::new(
        RefusalCode::Unavailable,
        format!(
            "the server holds at most its --max-body-memory of request bodies at once, and \
             {} bytes of it are free now, not the {n} this body needs: retry later",
            budget.available_permits()
        ),
        None,
    );
    r.retry_after = Some(1);
    r
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

/// The JSON error of a refusal, with its status (and `Retry-After` where the refusal says
/// when to retry: a full queue, bodies past the server's memory for them).
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
