//! The counters in the Prometheus text exposition format (version 0.0.4).

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use super::app::{App, STATUSES};
use crate::engine::Engine;
use crate::evaluator::{Histogram, BUCKETS};
use crate::memory::Resident;

/// The metrics of `app`, as text.
pub(super) fn render<E: Engine>(app: &App<E>) -> String {
    let m = app.ev.metrics();
    let get = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
    let mut out = String::with_capacity(4096);
    let mut counter = |name: &str, help: &str, samples: &[(&str, u64)]| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for (labels, v) in samples {
            let _ = writeln!(out, "{name}{labels} {v}");
        }
    };
    counter(
        "swe_eval_requests_accepted_total",
        "Requests accepted, by kind.",
        &[
            ("{kind=\"executed\"}", get(&m.accepted_executed)),
            ("{kind=\"similarity\"}", get(&m.accepted_similarity)),
        ],
    );
    counter(
        "swe_eval_cache_hits_total",
        "Executed requests answered from the verdict cache.",
        &[("", get(&m.cache_hits))],
    );
    counter(
        "swe_eval_shared_total",
        "Executed requests that waited on an identical request's job.",
        &[("", get(&m.shared))],
    );
    counter(
        "swe_eval_jobs_total",
        "Jobs, by stage.",
        &[
            ("{stage=\"submitted\"}", get(&m.jobs_submitted)),
            ("{stage=\"started\"}", get(&m.jobs_started)),
            ("{stage=\"ended\"}", get(&m.jobs_ended)),
        ],
    );
    counter(
        "swe_eval_refused_queue_full_total",
        "Requests refused with 429 (queue full).",
        &[("", get(&m.refused_full))],
    );
    counter(
        "swe_eval_deadline_expired_total",
        "Requests whose deadline passed before their result.",
        &[("", get(&m.expired))],
    );
    counter(
        "swe_eval_images_total",
        "Instance images prepared, by result.",
        &[
            ("{result=\"ready\"}", get(&m.images_ready)),
            ("{result=\"failed\"}", get(&m.images_failed)),
        ],
    );
    let statuses: Vec<(String, u64)> = m
        .statuses()
        .into_iter()
        .map(|(s, n)| (format!("{{status=\"{}\"}}", s.as_str()), n))
        .collect();
    let statuses: Vec<(&str, u64)> = statuses.iter().map(|(l, n)| (l.as_str(), *n)).collect();
    counter("swe_eval_results_total", "Results, by status.", &statuses);
    let codes: Vec<(String, u64)> = STATUSES
        .iter()
        .zip(&app.http.by_status)
        .map(|(code, n)| (format!("{{code=\"{code}\"}}"), get(n)))
        .collect();
    let codes: Vec<(&str, u64)> = codes.iter().map(|(l, n)| (l.as_str(), *n)).collect();
    counter(
        "swe_eval_http_responses_total",
        "HTTP answers, by status.",
        &codes,
    );
    let _ = writeln!(
        out,
        "# HELP swe_eval_queue_depth Requests accepted and not done.\n# TYPE swe_eval_queue_depth gauge\nswe_eval_queue_depth {}",
        app.ev.queued()
    );
    let _ = writeln!(
        out,
        "# HELP swe_eval_running Jobs whose container runs.\n# TYPE swe_eval_running gauge\nswe_eval_running {}",
        app.ev.running()
    );
    // The process's memory (Linux): resident now and at its peak.
    let memory = Resident::read();
    for (kib, name, help) in [
        (
            memory.now_kib,
            "process_resident_memory_bytes",
            "Resident memory of the server process.",
        ),
        (
            memory.peak_kib,
            "swe_eval_process_peak_resident_memory_bytes",
            "Largest resident memory of the server process since its start.",
        ),
    ] {
        if let Some(bytes) = kib.map(|kib| kib * 1024) {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {bytes}"
            );
        }
    }
    histogram(
        &mut out,
        "swe_eval_result_latency_seconds",
        "From acceptance to the result, executed requests.",
        &m.result_latency,
    );
    histogram(
        &mut out,
        "swe_eval_http_submit_latency_seconds",
        "Time to answer POST /v1/evaluations.",
        &app.http.submit_latency,
    );
    histogram(
        &mut out,
        "swe_eval_state_commit_seconds",
        "Time of each commit of the state database (requests and results waiting, together).",
        app.ev.commit_latency(),
    );
    out
}

fn histogram(out: &mut String, name: &str, help: &str, h: &Histogram) {
    let (cumulative, sum) = h.read();
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
    for (le, n) in BUCKETS.iter().zip(&cumulative) {
        let _ = writeln!(out, "{name}_bucket{{le=\"{le}\"}} {n}");
    }
    let total = cumulative.last().copied().unwrap_or(0);
    let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {total}");
    let _ = writeln!(out, "{name}_sum {sum}");
    let _ = writeln!(out, "{name}_count {total}");
}
