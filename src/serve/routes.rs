//! The endpoints:
//!
//! | method and path | what |
//! |---|---|
//! | `POST /v1/evaluations` | one prediction record, or a list: each one's evaluation at once (`queued`, or done) |
//! | `GET /v1/evaluations/{id}?wait=S` | one evaluation, waiting up to S seconds for it to be done |
//! | `POST /v1/evaluations/wait` | `{"ids": [...], "timeout_s": S}`: those done within S seconds, and the ids still pending |
//! | `GET /v1/health` | how the evaluator stands (503 when it cannot evaluate) |
//! | `GET /metrics` | the counters, Prometheus text format |
//! | `GET /v1/export/rewards.jsonl?since=N`, `GET /v1/export/outcomes.jsonl?since=N` | the rollouts as `correlate` and `compare` read them |
//!
//! Every error is `{"code", "message", "field"}` with its status (400, 401, 404, 405, 413,
//! 429 with `Retry-After`, 503).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::Value;

use super::app::{App, STATUSES};
use super::reply::{answer, body, json, refused, Body};
use crate::engine::Engine;
use crate::evaluator::{
    authorized, export, requests_from_json, Evaluation, Refusal, RefusalCode, State,
};

/// Answers one request (never fails: every error is a JSON answer).
pub(super) async fn handle<E: Engine>(
    app: &App<E>,
    req: Request<Incoming>,
) -> Response<Full<Bytes>> {
    let started = Instant::now();
    let submit = req.method() == Method::POST && req.uri().path() == "/v1/evaluations";
    let resp = match respond(app, req).await {
        Ok(r) => r,
        Err(r) => refused(&r),
    };
    let code = resp.status().as_u16();
    let i = STATUSES
        .iter()
        .position(|s| *s == code)
        .unwrap_or(STATUSES.len() - 1);
    app.http.by_status[i].fetch_add(1, Ordering::Relaxed);
    if submit {
        app.http.submit_latency.observe(started.elapsed());
    }
    resp
}

async fn respond<E: Engine>(
    app: &App<E>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Refusal> {
    let header = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .map(|v| v.as_bytes());
    if !authorized(app.config.token.as_deref(), header) {
        return Err(Refusal::new(
            RefusalCode::Unauthorized,
            "this server needs `Authorization: Bearer <token>`",
            Some("Authorization"),
        ));
    }
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let method = req.method().clone();
    match (method.as_str(), path.as_str()) {
        ("POST", "/v1/evaluations") => submit(app, req).await,
        ("POST", "/v1/evaluations/wait") => wait_many(app, req).await,
        ("GET", "/v1/health") => {
            let h = app.ev.health().await;
            let ok = h.accepting && h.dispatching && h.engine_error.is_none();
            let status = if ok {
                StatusCode::OK
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            };
            Ok(json(status, &h))
        }
        ("GET", "/metrics") => Ok(answer(
            StatusCode::OK,
            "text/plain; version=0.0.4",
            super::prometheus::render(app),
        )),
        ("GET", "/v1/export/rewards.jsonl" | "/v1/export/outcomes.jsonl") => {
            let since = number(&query, "since")?.map_or(0, |n| n as u64);
            let rows = app.ev.rows_since(since).map_err(|e| {
                Refusal::new(
                    RefusalCode::Unavailable,
                    format!("cannot read the state: {e}"),
                    None,
                )
            })?;
            let (rewards, outcomes) = export(&rows);
            let body = if path.ends_with("rewards.jsonl") {
                rewards
            } else {
                outcomes
            };
            Ok(answer(StatusCode::OK, "application/x-ndjson", body))
        }
        ("GET", p) if p.starts_with("/v1/evaluations/") => {
            let id = &p["/v1/evaluations/".len()..];
            let wait = number(&query, "wait")?;
            let e = match wait {
                Some(s) if s > 0.0 => {
                    let s = s.min(app.config.max_wait_s);
                    app.ev.wait(id, Duration::from_secs_f64(s)).await?
                }
                _ => app.ev.get(id)?,
            };
            Ok(json(StatusCode::OK, &e))
        }
        (_, "/v1/evaluations" | "/v1/evaluations/wait" | "/v1/health" | "/metrics")
        | (_, "/v1/export/rewards.jsonl" | "/v1/export/outcomes.jsonl") => Err(Refusal::new(
            RefusalCode::MethodNotAllowed,
            format!("{method} is not allowed on {path}"),
            None,
        )),
        (_, p) if p.starts_with("/v1/evaluations/") => Err(Refusal::new(
            RefusalCode::MethodNotAllowed,
            format!("{method} is not allowed on {path}"),
            None,
        )),
        _ => {
            let shown: String = path.chars().take(100).collect();
            Err(Refusal::new(
                RefusalCode::NotFound,
                format!("no endpoint {shown} (see GET /v1/health, POST /v1/evaluations)"),
                None,
            ))
        }
    }
}

async fn submit<E: Engine>(
    app: &App<E>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Refusal> {
    // The body's share of the bodies' memory is held until the answer is made: the requests
    // parsed from it are as large.
    let Body { bytes, held: _held } = body(req, app.config.max_body, &app.bodies).await?;
    let value = parse(&bytes)?;
    drop(bytes);
    let batch = value.is_array();
    let requests = requests_from_json(value, &app.ev.bounds())?;
    let evaluations = app.ev.submit(requests).await?;
    if batch {
        Ok(json(StatusCode::OK, &evaluations))
    } else {
        Ok(json(StatusCode::OK, &evaluations[0]))
    }
}

/// `{"done": [...], "pending": [ids]}`.
#[derive(serde::Serialize)]
struct Waited {
    done: Vec<Evaluation>,
    pending: Vec<String>,
}

async fn wait_many<E: Engine>(
    app: &App<E>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Refusal> {
    let Body { bytes, held: _held } = body(req, app.config.max_body, &app.bodies).await?;
    let value = parse(&bytes)?;
    drop(bytes);
    let bad = |m: &str, f: &str| Refusal::new(RefusalCode::BadRequest, m, Some(f));
    let Some(obj) = value.as_object() else {
        return Err(Refusal::new(
            RefusalCode::BadRequest,
            "a JSON object {\"ids\": [...], \"timeout_s\": S}",
            None,
        ));
    };
    if let Some(other) = obj
        .keys()
        .find(|k| !matches!(k.as_str(), "ids" | "timeout_s"))
    {
        let shown: String = other.chars().take(60).collect();
        let hint = if matches!(other.as_str(), "timeout" | "wait" | "deadline_s" | "wait_s") {
            "; did you mean `timeout_s`?"
        } else {
            " (it reads ids and timeout_s)"
        };
        return Err(bad(&format!("unknown field `{shown}`{hint}"), &shown));
    }
    let ids: Vec<String> = match obj.get("ids") {
        Some(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<_>>()
            .ok_or_else(|| bad("a list of evaluation ids (strings)", "ids"))?,
        _ => return Err(bad("a non-empty list of evaluation ids", "ids")),
    };
    if ids.len() > app.ev.bounds().max_batch {
        return Err(Refusal::new(
            RefusalCode::TooLarge,
            format!("{} ids; at most {}", ids.len(), app.ev.bounds().max_batch),
            Some("ids"),
        ));
    }
    let timeout = match obj.get("timeout_s") {
        None | Some(Value::Null) => 0.0,
        Some(v) => match v.as_f64() {
            Some(s) if s >= 0.0 && s.is_finite() => s.min(app.config.max_wait_s),
            _ => return Err(bad("seconds, 0 or more", "timeout_s")),
        },
    };
    let all = app
        .ev
        .wait_all(&ids, Duration::from_secs_f64(timeout))
        .await?;
    let (done, pending): (Vec<_>, Vec<_>) = all.into_iter().partition(|e| e.state == State::Done);
    Ok(json(
        StatusCode::OK,
        &Waited {
            done,
            pending: pending.into_iter().map(|e| e.id).collect(),
        },
    ))
}

fn parse(bytes: &[u8]) -> Result<Value, Refusal> {
    serde_json::from_slice(bytes).map_err(|e| {
        Refusal::new(
            RefusalCode::BadRequest,
            format!("the body is not JSON: {e}"),
            None,
        )
    })
}

/// The number `name` of a query string (`a=1&b=2`), if given.
fn number(query: &str, name: &str) -> Result<Option<f64>, Refusal> {
    for pair in query.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if k == name {
            return match v.parse::<f64>() {
                Ok(n) if n.is_finite() && n >= 0.0 => Ok(Some(n)),
                _ => Err(Refusal::new(
                    RefusalCode::BadRequest,
                    format!(
                        "a number of 0 or more, not `{}`",
                        v.chars().take(40).collect::<String>()
                    ),
                    Some(name),
                )),
            };
        }
    }
    Ok(None)
}
