//! `bench serve --mode grpo`, on a server started by hand: 8 instances x 16 samples drawn with
//! repeats from each instance's predictions, sent as one group per instance and waited for;
//! the containers the server started against the distinct (instance, patch) pairs; then the
//! same requests again, every one a cache hit.

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::{json, Value};

use super::bodies::{distinct_pairs, mini_predictions, record};
use super::options::ServeLoad;
use super::pacing::Pacing;
use super::server::{answers_of, load, metric, metrics, quantiles, wait_all, STARTED};
use crate::bench::{BenchError, Sample};

/// Instances of a GRPO-shaped load, and samples per instance.
const GROUPS: usize = 8;
const SAMPLES: usize = 16;

/// What `grpo` measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct GrpoFigures {
    /// Instances in the first pass, one group each.
    #[serde(skip)]
    pub groups: usize,
    /// Samples per instance.
    #[serde(skip)]
    pub samples_per_group: usize,
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
    /// Every request of the second pass, in the order they were due.
    #[serde(skip)]
    pub samples: Vec<Sample>,
}

impl GrpoFigures {
    /// Nothing cached before, one container per distinct pair, a result per request, and
    /// every request of the second pass a cache hit.
    pub fn ok(&self) -> bool {
        self.first_pass_cached == 0
            && self.containers as usize == self.distinct_pairs
            && self.statuses.values().sum::<usize>() == self.requests
            && self.hits_cached == self.hits_requests
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

/// The groups sent at once and waited for, then `opts.requests` cache hits.
pub async fn measure_grpo(opts: &ServeLoad) -> Result<GrpoFigures, BenchError> {
    let preds = mini_predictions()?;
    let groups = groups(&preds);
    let all: Vec<Value> = groups.iter().flatten().cloned().collect();
    let token = opts.token.clone();
    let before = metrics(opts.connect, token.clone()).await?;
    let t0 = Instant::now();
    // One group per instance, each a list in one request, all at once.
    let mut first = opts.clone();
    first.connections = GROUPS as u32;
    first.rate = 0.0;
    let bodies: Vec<Vec<u8>> = groups
        .iter()
        .map(|g| Value::Array(g.clone()).to_string().into_bytes())
        .collect();
    let report = load(&first, groups.len(), bodies, true).await?;
    let answers = answers_of(&report);
    let first_pass_cached = answers.iter().filter(|a| a["cached"] == true).count();
    let ids: Vec<String> = answers
        .iter()
        .filter_map(|a| a["id"].as_str().map(str::to_string))
        .collect();
    let done = wait_all(opts.connect, token.clone(), &ids, opts.wait).await?;
    // Answers done at once (empty patches) are counted with the waited ones.
    let mut statuses = BTreeMap::new();
    for d in &done {
        *statuses
            .entry(d["status"].as_str().unwrap_or("?").to_string())
            .or_default() += 1;
    }
    let first_pass_secs = t0.elapsed().as_secs_f64();
    let after = metrics(opts.connect, token.clone()).await?;
    let delta = |name: &str| (metric(&after, name) - metric(&before, name)).max(0.0) as u64;

    // The same requests again, one per request: every one a cache hit.
    let hits_requests = opts.requests as usize;
    let bodies: Vec<Vec<u8>> = all.iter().map(|b| b.to_string().into_bytes()).collect();
    let hits = load(opts, hits_requests, bodies, true).await?;
    let hits_after = metrics(opts.connect, token).await?;
    let hits_cached = answers_of(&hits)
        .iter()
        .filter(|a| a["state"] == "done" && (a["cached"] == true || a["status"] == "empty"))
        .count();
    let (p50, p99, max) = quantiles(&hits);
    let hits_pacing = Pacing::of(&hits, &after, &hits_after);
    Ok(GrpoFigures {
        groups: groups.len(),
        samples_per_group: SAMPLES,
        requests: all.len(),
        distinct_pairs: distinct_pairs(&all),
        first_pass_cached,
        containers: delta(STARTED),
        shared: delta("swe_eval_shared_total"),
        statuses,
        first_pass_secs,
        hits_requests,
        hits_cached,
        connections: opts.connections,
        rate: opts.rate,
        hits_per_sec: hits.rate(),
        hits_p50_ms: p50,
        hits_p99_ms: p99,
        hits_max_ms: max,
        hits_pacing,
        samples: hits.samples,
    })
}
