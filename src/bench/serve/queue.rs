//! `bench serve --mode queue`, on a server started by hand: executed requests with distinct
//! patches, more than a server with `-j 1` drains meanwhile: the immediate answers, 429s with
//! `Retry-After` past its `--max-queue`, and its resident memory (from its `/metrics`).

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::bodies::{mini_predictions, record, variant};
use super::options::ServeLoad;
use super::pacing::Pacing;
use super::server::{load, metric, metrics, quantiles};
use crate::bench::{BenchError, Sample};

/// What `queue` measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct QueueFigures {
    /// Requests sent (executed, distinct patches).
    pub requests: usize,
    /// Connections at once.
    pub connections: u32,
    /// Requests per second offered (0: closed loop).
    pub rate: f64,
    /// Answers by HTTP status.
    pub statuses: BTreeMap<u16, usize>,
    /// The `Retry-After` values of the 429s (distinct, as sent).
    pub retry_after: Vec<String>,
    /// Accepted answers per second.
    pub per_sec: f64,
    /// The immediate answer's latency, milliseconds: median.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Largest.
    pub max_ms: f64,
    /// Requests queued after the load (the server's `/metrics`).
    pub queued: u64,
    /// The server's resident memory before the load, bytes.
    pub rss_before: u64,
    /// After.
    pub rss_after: u64,
    /// Its peak since its start.
    pub rss_peak: u64,
    /// The generator's lateness, the server's own view.
    #[serde(flatten)]
    pub pacing: Pacing,
    /// Every request of the load, in the order they were due.
    #[serde(skip)]
    pub samples: Vec<Sample>,
}

impl QueueFigures {
    /// Every answer accepted or refused as full, and the server's memory read.
    pub fn ok(&self) -> bool {
        self.statuses.keys().all(|s| *s == 200 || *s == 429) && self.rss_after > 0
    }
}

/// `opts.requests` executed requests, each with a patch of its own.
pub async fn measure_queue(opts: &ServeLoad) -> Result<QueueFigures, BenchError> {
    let preds = mini_predictions()?;
    let runnable: Vec<&Value> = preds
        .iter()
        .filter(|p| !p["model_patch"].as_str().unwrap_or("").trim().is_empty())
        .collect();
    let requests = opts.requests as usize;
    let bodies: Vec<Vec<u8>> = (0..requests)
        .map(|k| {
            let p = runnable[k % runnable.len()];
            let patch = variant(p["model_patch"].as_str().unwrap_or(""), &format!("q{k}"));
            record(p, &json!(patch), &json!("bench-queue"), k as u64, true)
                .to_string()
                .into_bytes()
        })
        .collect();
    let token = opts.token.clone();
    let before = metrics(opts.connect, token.clone()).await?;
    let report = load(opts, requests, bodies, false).await?;
    let after = metrics(opts.connect, token).await?;
    let mut retry_after = report.retry_after.clone();
    retry_after.sort();
    retry_after.dedup();
    let (p50_ms, p99_ms, max_ms) = quantiles(&report);
    let accepted = report.by_status.get(&200).copied().unwrap_or(0);
    let pacing = Pacing::of(&report, &before, &after);
    Ok(QueueFigures {
        requests,
        connections: opts.connections,
        rate: opts.rate,
        statuses: report.by_status.clone(),
        retry_after,
        per_sec: accepted as f64 / report.wall.as_secs_f64().max(1e-9),
        p50_ms,
        p99_ms,
        max_ms,
        queued: metric(&after, "swe_eval_queue_depth") as u64,
        rss_before: metric(&before, "process_resident_memory_bytes") as u64,
        rss_after: metric(&after, "process_resident_memory_bytes") as u64,
        rss_peak: metric(&after, "swe_eval_process_peak_resident_memory_bytes") as u64,
        pacing,
        samples: report.samples,
    })
}
