//! `bench serve --mode similarity` and `--mode executed`, on a server started by hand: the
//! similarity answered at once under load, and the mini predictions executed once each.

use std::collections::BTreeMap;
use std::time::Instant;

use super::bodies::{mini_predictions, record};
use super::options::ServeLoad;
use super::pacing::Pacing;
use super::server::{ids_of, load, metrics, quantiles, wait_all};
use crate::bench::{BenchError, Sample};

/// What `similarity` and `executed` measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ServeFigures {
    /// `similarity` or `executed`.
    pub mode: &'static str,
    /// Connections at once.
    pub connections: u32,
    /// Requests per second offered (0: closed loop).
    pub rate: f64,
    /// Requests sent.
    pub requests: usize,
    /// Answers by HTTP status.
    pub statuses: BTreeMap<u16, usize>,
    /// Requests answered per second.
    pub per_sec: f64,
    /// The immediate answer's latency, milliseconds: median.
    pub p50_ms: f64,
    /// 99th percentile, milliseconds.
    pub p99_ms: f64,
    /// Largest, milliseconds.
    pub max_ms: f64,
    /// `executed`: seconds from the first request to the last verdict.
    pub all_done_secs: Option<f64>,
    /// `executed`: verdicts in within the wait.
    pub done: Option<usize>,
    /// The generator's lateness and the server's own view.
    #[serde(flatten)]
    pub pacing: Pacing,
    /// Every request of the load, in the order they were due.
    #[serde(skip)]
    pub samples: Vec<Sample>,
}

impl ServeFigures {
    /// Every answer a 200 and, when executed, every verdict in.
    pub fn ok(&self) -> bool {
        self.statuses.keys().all(|s| *s == 200) && self.done.is_none_or(|d| d == self.requests)
    }
}

/// `opts.requests` requests with `execute: false`, the mini predictions in turn, over
/// `opts.connections` connections.
pub async fn measure_similarity(opts: &ServeLoad) -> Result<ServeFigures, BenchError> {
    simple(opts, false).await
}

/// The mini predictions sent once each (one request per prediction), then waited for.
pub async fn measure_executed(opts: &ServeLoad) -> Result<ServeFigures, BenchError> {
    simple(opts, true).await
}

async fn simple(opts: &ServeLoad, execute: bool) -> Result<ServeFigures, BenchError> {
    let preds = mini_predictions()?;
    let bodies: Vec<Vec<u8>> = preds
        .iter()
        .map(|p| {
            let sample = p["sample"].as_u64().unwrap_or(0);
            record(
                p,
                &p["model_patch"],
                &p["model_name_or_path"],
                sample,
                execute,
            )
            .to_string()
            .into_bytes()
        })
        .collect();
    let requests = if execute {
        bodies.len()
    } else {
        opts.requests as usize
    };
    let token = opts.token.clone();
    let before = metrics(opts.connect, token.clone()).await?;
    let t0 = Instant::now();
    let report = load(opts, requests, bodies, execute).await?;
    let after = metrics(opts.connect, token.clone()).await?;
    let (all_done_secs, done) = if execute {
        let ids = ids_of(&report);
        let done = wait_all(opts.connect, token, &ids, opts.wait).await?;
        (Some(t0.elapsed().as_secs_f64()), Some(done.len()))
    } else {
        (None, None)
    };
    let (p50_ms, p99_ms, max_ms) = quantiles(&report);
    let pacing = Pacing::of(&report, &before, &after);
    Ok(ServeFigures {
        mode: if execute { "executed" } else { "similarity" },
        connections: opts.connections,
        rate: opts.rate,
        requests,
        statuses: report.by_status.clone(),
        per_sec: report.rate(),
        p50_ms,
        p99_ms,
        max_ms,
        all_done_secs,
        done,
        pacing,
        samples: report.samples,
    })
}
