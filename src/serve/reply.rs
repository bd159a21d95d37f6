//! Reading a request's body within its bound, and writing answers: plain, JSON, and the JSON
//! error of a refusal with its status.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};

use crate::evaluator::{Refusal, RefusalCode};

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
