//! A `bench serve` load's dealings with the server: the load itself, waiting for the
//! verdicts, and the server's `/metrics` read with this machine's CPU ticks.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::options::ServeLoad;
use crate::bench::{run_load, BenchError, Client, Load, LoadReport};

/// Containers started by the server (its `/metrics`).
pub(super) const STARTED: &str = "swe_eval_jobs_total{stage=\"started\"}";

/// The server's histogram of its time to answer `POST /v1/evaluations`.
pub(super) const SUBMIT: &str = "swe_eval_http_submit_latency_seconds";

/// Pseudo-metrics of a snapshot: this machine's CPU ticks stolen by a hypervisor, and in all.
pub(super) const STEAL: &str = "machine:cpu_steal_ticks";
pub(super) const ALL_TICKS: &str = "machine:cpu_ticks";

/// `requests` POSTs of `bodies` (in turn) to `/v1/evaluations` over `opts.connections`.
pub(super) async fn load(
    opts: &ServeLoad,
    requests: usize,
    bodies: Vec<Vec<u8>>,
    keep_bodies: bool,
) -> Result<LoadReport, BenchError> {
    let load = Load {
        addr: opts.connect,
        token: opts.token.clone(),
        connections: (opts.connections as usize).min(requests.max(1)),
        requests,
        method: "POST".into(),
        path: "/v1/evaluations".into(),
        bodies,
        keep_bodies,
        rate: (opts.rate > 0.0).then_some(opts.rate),
    };
    run_load(load)
        .await
        .map_err(|source| BenchError::NoServer { source })
}

/// Median, 99th percentile and largest latency of `report`, in milliseconds.
pub(super) fn quantiles(report: &LoadReport) -> (f64, f64, f64) {
    let ms = |q: f64| report.latencies.quantile(q).as_secs_f64() * 1000.0;
    (ms(0.5), ms(0.99), ms(1.0))
}

/// The answers kept by `report` (a list answer or one object each), in request order.
pub(super) fn answers_of(report: &LoadReport) -> Vec<Value> {
    report
        .bodies
        .iter()
        .filter_map(|(_, b)| serde_json::from_slice::<Value>(b).ok())
        .flat_map(|v| match v {
            Value::Array(a) => a,
            one => vec![one],
        })
        .collect()
}

/// The evaluation ids in the kept answers.
pub(super) fn ids_of(report: &LoadReport) -> Vec<String> {
    answers_of(report)
        .iter()
        .filter_map(|v| v["id"].as_str().map(str::to_string))
        .collect()
}

/// Waits up to `limit` for `ids` (long polls of at most 60 s); the evaluations done.
pub(super) async fn wait_all(
    addr: SocketAddr,
    token: Option<String>,
    ids: &[String],
    limit: Duration,
) -> Result<Vec<Value>, BenchError> {
    let until = Instant::now() + limit;
    let mut client = Client::connect(addr, token).await?;
    let mut pending: Vec<String> = ids.to_vec();
    let mut done = Vec::new();
    while !pending.is_empty() {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let body = json!({"ids": pending, "timeout_s": left.as_secs_f64().min(60.0)});
        let (status, _, got) = client
            .request(
                "POST",
                "/v1/evaluations/wait",
                Some(body.to_string().as_bytes()),
            )
            .await?;
        let v: Value = serde_json::from_slice(&got)?;
        if status != 200 {
            return Err(BenchError::Status {
                addr,
                request: "POST /v1/evaluations/wait",
                status,
                body: v.to_string(),
            });
        }
        done.extend(v["done"].as_array().cloned().unwrap_or_default());
        pending = v["pending"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|i| i.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
    }
    Ok(done)
}

/// The server's `/metrics`, as (name with labels -> value), with this machine's CPU ticks at
/// the same moment ([`STEAL`], [`ALL_TICKS`]).
pub(super) async fn metrics(
    addr: SocketAddr,
    token: Option<String>,
) -> Result<BTreeMap<String, f64>, BenchError> {
    let mut client = Client::connect(addr, token).await?;
    let (status, _, body) = client.request("GET", "/metrics", None).await?;
    if status != 200 {
        return Err(BenchError::Status {
            addr,
            request: "GET /metrics",
            status,
            body: String::from_utf8_lossy(&body).into_owned(),
        });
    }
    let mut m: BTreeMap<String, f64> = String::from_utf8_lossy(&body)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (name, v) = l.rsplit_once(' ')?;
            Some((name.to_string(), v.parse().ok()?))
        })
        .collect();
    // This machine's CPU time at the same moment (the generator's; the server's too when it
    // runs here), to tell how much of the load's time a hypervisor took.
    if let Some((steal, all)) = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| cpu_ticks(&s))
    {
        m.insert(STEAL.into(), steal as f64);
        m.insert(ALL_TICKS.into(), all as f64);
    }
    Ok(m)
}

/// The `cpu` line of `/proc/stat`: (steal, all) ticks, guest time left out (counted in user).
pub(super) fn cpu_ticks(stat: &str) -> Option<(u64, u64)> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    (v.len() == 8).then(|| (v[7], v.iter().sum()))
}

/// A counter or gauge of `m` (0 when absent).
pub(super) fn metric(m: &BTreeMap<String, f64>, name: &str) -> f64 {
    m.get(name).copied().unwrap_or(0.0)
}
