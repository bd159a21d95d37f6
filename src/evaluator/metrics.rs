//! What the evaluator counts while it serves: requests, cache hits, containers, statuses,
//! refusals, and latency histograms; read as a [`Snapshot`] (the HTTP face renders it in the
//! Prometheus text format).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use super::evaluation::Status;

/// Upper bounds of the latency histograms' buckets, in seconds.
pub const BUCKETS: [f64; 16] = [
    0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];

/// A latency histogram with fixed buckets ([`BUCKETS`]).
#[derive(Debug, Default)]
pub struct Histogram {
    counts: [AtomicU64; BUCKETS.len() + 1],
    sum_micros: AtomicU64,
}

impl Histogram {
    /// Counts one observation.
    pub fn observe(&self, d: Duration) {
        let s = d.as_secs_f64();
        let i = BUCKETS
            .iter()
            .position(|b| s <= *b)
            .unwrap_or(BUCKETS.len());
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.sum_micros
            .fetch_add(d.as_micros() as u64, Ordering::Relaxed);
    }

    /// Cumulative counts per bucket (the last is every observation), and the sum in seconds.
    pub fn read(&self) -> (Vec<u64>, f64) {
        let mut total = 0;
        let cumulative = self
            .counts
            .iter()
            .map(|c| {
                total += c.load(Ordering::Relaxed);
                total
            })
            .collect();
        (
            cumulative,
            self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6,
        )
    }
}

/// The evaluator's counters.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Requests accepted, executed ones.
    pub accepted_executed: AtomicU64,
    /// Requests accepted for the similarity alone.
    pub accepted_similarity: AtomicU64,
    /// Executed requests answered from the cache.
    pub cache_hits: AtomicU64,
    /// Executed requests that waited on an identical request's job.
    pub shared: AtomicU64,
    /// Jobs handed to the dispatcher.
    pub jobs_submitted: AtomicU64,
    /// Jobs whose container started.
    pub jobs_started: AtomicU64,
    /// Jobs over (a verdict or an expiry after starting).
    pub jobs_ended: AtomicU64,
    /// Requests refused because the queue was full.
    pub refused_full: AtomicU64,
    /// Requests whose deadline passed before their result.
    pub expired: AtomicU64,
    /// Instance images prepared (ready) and failed.
    pub images_ready: AtomicU64,
    /// Instance images that failed.
    pub images_failed: AtomicU64,
    /// Results by status.
    statuses: Mutex<Vec<(Status, u64)>>,
    /// From acceptance to the result, executed requests.
    pub result_latency: Histogram,
}

impl Metrics {
    /// Counts a result of `status`.
    pub fn status(&self, status: Status) {
        let mut s = self.statuses.lock().unwrap_or_else(|p| p.into_inner());
        match s.iter_mut().find(|(st, _)| *st == status) {
            Some((_, n)) => *n += 1,
            None => s.push((status, 1)),
        }
    }

    /// Results by status so far.
    pub fn statuses(&self) -> Vec<(Status, u64)> {
        let mut s = self
            .statuses
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        s.sort_by_key(|(st, _)| st.as_str());
        s
    }
}

/// Adds one to a counter.
pub fn inc(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// A counter's value.
pub fn get(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}
