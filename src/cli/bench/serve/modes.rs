//! `bench serve --mode grpo` and `--mode queue`, on a server started by hand.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{
    answers_of, distinct_pairs, load, metric, metrics, quantiles, record, variant, wait_all, Args,
    Pacing, STARTED,
};
use crate::cli::CliError;

/// Instances of a GRPO-shaped load, and samples per instance.
const GROUPS: usize = 8;
const SAMPLES: usize = 16;

/// What `grpo` measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Grpo {
    /// Requests of the first pass (instances x samples).
    pub requests: usize,
    /// Distinct (instance, patch) pairs among them that run a container (non-empty patch).
    pub distinct_pairs: usize,
    /// Answered from the cache at once in the first pass (a server that had seen them).
    pub first_pass_cached: usize,
    /// Containers the server started during the first pass (its `/metrics`).
    pub containers: u64,
    /// Requests that waited on an identical request's job (its `/metrics`).
    pub shared: u64,
    /// Results of the first pass by status.
    pub statuses: BTreeMap<String, usize>,
    /// Seconds from the first group sent to the last verdict.
    pub first_pass_secs: f64,
    /// Requests of the second pass (the same bodies again).
    pub hits_requests: usize,
    /// Of those, answered done from the cache.
    pub hits_cached: usize,
    /// Connections of the second pass.
    pub connections: u32,
    /// Requests per second offered in the second pass (0: closed loop).
    pub rate: f64,
    /// The second pass's answers per second.
    pub hits_per_sec: f64,
    /// The cache hits' latency, milliseconds: median.
    pub hits_p50_ms: f64,
    /// 99th percentile.
    pub hits_p99_ms: f64,
    /// Largest.
    pub hits_max_ms: f64,
    /// The cache hits' pacing: the generator's lateness, the server's own view.
    #[serde(flatten)]
    pub hits_pacing: Pacing,
}

impl Grpo {
    pub fn ok(&self) -> bool {
        self.first_pass_cached == 0
            && self.containers as usize == self.distinct_pairs
            && self.statuses.values().sum::<usize>() == self.requests
            && self.hits_cached == self.hits_requests
    }

    pub fn line(&self) -> String {
        format!(
            "serve grpo: {} requests ({GROUPS} instances x {SAMPLES} samples) with {} distinct (instance, patch) pairs that run: {} containers started, {} requests shared a job in flight, {} answered from the cache at once; all verdicts in {:.1} s ({:?}). Cache hits: {}/{} over {} connections{}, {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms{}",
            self.requests,
            self.distinct_pairs,
            self.containers,
            self.shared,
            self.first_pass_cached,
            self.first_pass_secs,
            self.statuses,
            self.hits_cached,
            self.hits_requests,
            self.connections,
            super::offered(self.rate),
            self.hits_per_sec,
            self.hits_p50_ms,
            self.hits_p99_ms,
            self.hits_max_ms,
            self.hits_pacing.text(),
        )
    }
}

/// A small deterministic generator (the samples are the same from run to run).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

/// The first pass's groups: per mini instance, 16 samples drawn with repeats from its
/// predictions.
fn groups(preds: &[Value]) -> Vec<Vec<Value>> {
    let mut by_instance: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for p in preds {
        by_instance
            .entry(p["instance_id"].as_str().unwrap_or_default().to_string())
            .or_default()
            .push(p);
    }
    let mut rng = Lcg(20);
    by_instance
        .values()
        .take(GROUPS)
        .map(|cands| {
            (0..SAMPLES)
                .map(|s| {
                    let p = cands[rng.below(cands.len())];
                    record(p, &p["model_patch"], &json!("bench-grpo"), s as u64, true)
                })
                .collect()
        })
        .collect()
}

pub async fn grpo(args: &Args, token: Option<String>, preds: &[Value]) -> Result<Grpo, CliError> {
    let groups = groups(preds);
    let all: Vec<Value> = groups.iter().flatten().cloned().collect();
    let before = metrics(args.connect, token.clone()).await?;
    let t0 = Instant::now();
    // One group per instance, each a list in one request, all at once.
    let mut bodies_args = args.clone();
    bodies_args.connections = GROUPS as u32;
    bodies_args.rate = 0.0;
    bodies_args.latencies = None;
    let bodies: Vec<Vec<u8>> = groups
        .iter()
        .map(|g| Value::Array(g.clone()).to_string().into_bytes())
        .collect();
    let report = load(&bodies_args, token.clone(), groups.len(), bodies, true).await?;
    let answers = answers_of(&report);
    let first_pass_cached = answers.iter().filter(|a| a["cached"] == true).count();
    let ids: Vec<String> = answers
        .iter()
        .filter_map(|a| a["id"].as_str().map(str::to_string))
        .collect();
    let done = wait_all(
        args.connect,
        token.clone(),
        &ids,
        Duration::from_secs(args.wait),
    )
    .await?;
    // Answers done at once (empty patches) are counted with the waited ones.
    let mut statuses = BTreeMap::new();
    for d in &done {
        *statuses
            .entry(d["status"].as_str().unwrap_or("?").to_string())
            .or_default() += 1;
    }
    let first_pass_secs = t0.elapsed().as_secs_f64();
    let after = metrics(args.connect, token.clone()).await?;
    let delta = |name: &str| (metric(&after, name) - metric(&before, name)).max(0.0) as u64;

    // The same requests again, one per request: every one a cache hit.
    let hits_requests = args.requests as usize;
    let bodies: Vec<Vec<u8>> = all.iter().map(|b| b.to_string().into_bytes()).collect();
    let hits = load(args, token.clone(), hits_requests, bodies, true).await?;
    let hits_after = metrics(args.connect, token).await?;
    let hits_cached = answers_of(&hits)
        .iter()
        .filter(|a| a["state"] == "done" && (a["cached"] == true || a["status"] == "empty"))
        .count();
    let (p50, p99, max) = quantiles(&hits);
    Ok(Grpo {
        requests: all.len(),
        distinct_pairs: distinct_pairs(&all),
        first_pass_cached,
        containers: delta(STARTED),
        shared: delta("swe_eval_shared_total"),
        statuses,
        first_pass_secs,
        hits_requests,
        hits_cached,
        connections: args.connections,
        rate: args.rate,
        hits_per_sec: hits.rate(),
        hits_p50_ms: p50,
        hits_p99_ms: p99,
        hits_max_ms: max,
        hits_pacing: Pacing::of(&hits, &after, &hits_after),
    })
}

/// What `queue` measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Queue {
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
}

impl Queue {
    pub fn ok(&self) -> bool {
        self.statuses.keys().all(|s| *s == 200 || *s == 429) && self.rss_after > 0
    }

    pub fn line(&self) -> String {
        let mb = |b: u64| b as f64 / (1 << 20) as f64;
        format!(
            "serve queue: {} executed requests (distinct patches) over {} connections{}: statuses {:?}, Retry-After {:?}; accepted at {:.0} req/s, immediate answer p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms{}; {} queued; server RSS {:.1} MB before, {:.1} MB after, peak {:.1} MB",
            self.requests,
            self.connections,
            super::offered(self.rate),
            self.statuses,
            self.retry_after,
            self.per_sec,
            self.p50_ms,
            self.p99_ms,
            self.max_ms,
            self.pacing.text(),
            self.queued,
            mb(self.rss_before),
            mb(self.rss_after),
            mb(self.rss_peak),
        )
    }
}

pub async fn queue(args: &Args, token: Option<String>, preds: &[Value]) -> Result<Queue, CliError> {
    let runnable: Vec<&Value> = preds
        .iter()
        .filter(|p| !p["model_patch"].as_str().unwrap_or("").trim().is_empty())
        .collect();
    let requests = args.requests as usize;
    let bodies: Vec<Vec<u8>> = (0..requests)
        .map(|k| {
            let p = runnable[k % runnable.len()];
            let patch = variant(p["model_patch"].as_str().unwrap_or(""), &format!("q{k}"));
            record(p, &json!(patch), &json!("bench-queue"), k as u64, true)
                .to_string()
                .into_bytes()
        })
        .collect();
    let before = metrics(args.connect, token.clone()).await?;
    let report = load(args, token.clone(), requests, bodies, false).await?;
    let after = metrics(args.connect, token).await?;
    let mut retry_after = report.retry_after.clone();
    retry_after.sort();
    retry_after.dedup();
    let (p50_ms, p99_ms, max_ms) = quantiles(&report);
    let accepted = report.by_status.get(&200).copied().unwrap_or(0);
    Ok(Queue {
        requests,
        connections: args.connections,
        rate: args.rate,
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
        pacing: Pacing::of(&report, &before, &after),
    })
}
