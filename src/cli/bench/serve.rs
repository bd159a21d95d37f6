//! `swe-eval bench serve`: a bounded load on `swe-eval serve` over loopback
//! ([`crate::bench::measure_similarity`] and the other modes); prints the figures, and writes
//! them as JSON and every request of the measured load as CSV when asked.
//!
//! For all modes but `restart`, start the server yourself (`swe-eval serve -o DIR`), so its
//! flags (-j, --max-queue, images) are yours to choose and the figures are the server's alone.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::bench::{
    measure_executed, measure_grpo, measure_queue, measure_restart, measure_similarity,
    GrpoFigures, Pacing, QueueFigures, RestartFigures, Sample, ServeFigures, ServeLoad,
};
use crate::cli::{CliResult, Ending};
use swe_eval_core::failure::{Failed, UsageError};

/// `swe-eval bench serve`: which load, on which server.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The server's address (`restart`: where the servers it starts listen).
    #[arg(long, default_value = "127.0.0.1:8321", value_name = "ADDR:PORT")]
    pub connect: SocketAddr,
    /// The load to make. All but `restart` need a server started by hand (`swe-eval serve`);
    /// `restart` starts its own.
    #[arg(long, value_enum, default_value_t = Mode::Similarity)]
    pub mode: Mode,
    /// Connections at once [allowed: 1 to 1024].
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub connections: u32,
    /// Requests in all: `similarity`, `queue`, and `grpo`'s cache hits [allowed: 1 to 1000000].
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub requests: u32,
    /// Requests per second offered, spread over the connections (each request due at its time,
    /// its latency counted from then); 0: each connection sends as soon as it is answered
    /// [allowed: 0 to 1000000].
    #[arg(long, default_value_t = 0.0, value_parser = crate::cli::values::rate())]
    pub rate: f64,
    /// How long the verdicts are waited for, in seconds [allowed: 1 to 86400].
    #[arg(long, default_value_t = 1800, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub wait: u64,
    /// `restart`: the servers' output folder (their state is OUTPUT/serve); must not hold a
    /// server's state yet.
    #[arg(long, short = 'o', default_value = "results/bench-serve-restart")]
    pub output: PathBuf,
    /// `restart`: the servers' `-j` [allowed: 1 to 64].
    #[arg(long, short = 'j', default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub workers: u32,
    /// Also write the figures as JSON here.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
    /// Also write every request of the measured load as CSV here, in the order they were due:
    /// its number, when it was due (seconds after the start), the generator's lateness in
    /// sending it and its latency (milliseconds), its status. Where a slow tail sits in time.
    /// `grpo`: its cache hits; not with `restart`.
    #[arg(long, value_name = "FILE")]
    pub latencies: Option<std::path::PathBuf>,
    /// The generator's CPU priority, as `serve --nice`: its nice value and, where the kernel
    /// groups CPU time by session (autogroup), its session's group. On a machine whose cores the
    /// server's jobs also take, a generator that waits for a core reads its answers late, and
    /// that delay is counted as the server's; at the server's priority it is not. Below 0
    /// needs root; start it in a session of its own (`setsid`). Unset: as started
    /// [allowed: -20 to 19].
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = clap::value_parser!(i32).range(-20..=19))]
    pub nice: Option<i32>,
}

/// The loads `bench serve` makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// The similarity alone, answered at once.
    Similarity,
    /// The 22 mini predictions executed once each.
    Executed,
    /// 8 instances x 16 samples with repeats: containers against distinct pairs, cache hits.
    Grpo,
    /// Many executed requests queued: memory, 429 past --max-queue.
    Queue,
    /// SIGKILL with requests queued and running, then a restart (starts its own servers).
    Restart,
}

/// Runs the load and prints its figures.
pub fn run(args: Args) -> CliResult {
    if args.mode == Mode::Restart && args.latencies.is_some() {
        return Err(UsageError(
            "--latencies keeps a load's requests; `restart` makes no load to keep".into(),
        )
        .into());
    }
    // Before the runtime's threads start: each takes the nice of the thread that made it.
    if let Some(n) = args.nice {
        let set = crate::priority::set_nice(n)?;
        eprintln!("swe-eval bench serve: {set}");
    }
    // One thread: the generator shares the machine with the server it measures, so it takes
    // at most one core, and its connections' timers are all driven by that thread.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let state = args.output.join("serve");
    if args.mode == Mode::Restart && crate::evaluator::db_path(&state).exists() {
        return Err(Failed(format!(
            "{} holds a server's state already: give a new --output",
            state.display()
        ))
        .into());
    }
    let opts = ServeLoad {
        connect: args.connect,
        // An empty token is no token, as the server takes it.
        token: std::env::var("SWE_EVAL_TOKEN")
            .ok()
            .filter(|t| !t.trim().is_empty()),
        connections: args.connections,
        requests: args.requests,
        rate: args.rate,
        wait: Duration::from_secs(args.wait),
        output: args.output.clone(),
        workers: args.workers,
    };
    let (printed, json, ok, samples) = match args.mode {
        Mode::Similarity | Mode::Executed => {
            let f = rt.block_on(async {
                if args.mode == Mode::Executed {
                    measure_executed(&opts).await
                } else {
                    measure_similarity(&opts).await
                }
            })?;
            (
                simple_line(&f),
                serde_json::to_value(&f)?,
                f.ok(),
                f.samples,
            )
        }
        Mode::Grpo => {
            let f = rt.block_on(measure_grpo(&opts))?;
            (grpo_line(&f), serde_json::to_value(&f)?, f.ok(), f.samples)
        }
        Mode::Queue => {
            let f = rt.block_on(measure_queue(&opts))?;
            (queue_line(&f), serde_json::to_value(&f)?, f.ok(), f.samples)
        }
        Mode::Restart => {
            let f = rt.block_on(measure_restart(&opts))?;
            (
                restart_line(&f),
                serde_json::to_value(&f)?,
                f.ok(),
                Vec::new(),
            )
        }
    };
    if let Some(path) = &args.latencies {
        swe_eval_core::fsutil::write_atomic(path, samples_csv(&samples).as_bytes())?;
    }
    println!("{printed}");
    if let Some(path) = &args.json {
        swe_eval_core::fsutil::write_json_atomic(path, &json)?;
    }
    Ok(if ok {
        Ending::Clean
    } else {
        Ending::WithProblems
    })
}

/// The `--latencies` file: a header and a row per request.
fn samples_csv(samples: &[Sample]) -> String {
    let mut out = String::from("k,due_s,late_ms,latency_ms,status\n");
    for s in samples {
        out.push_str(&format!(
            "{},{:.6},{:.3},{:.3},{}\n",
            s.k, s.due_s, s.late_ms, s.latency_ms, s.status
        ));
    }
    out
}

/// ", N req/s offered" for a paced load.
fn offered(rate: f64) -> String {
    if rate > 0.0 {
        format!(", {rate:.0} req/s offered")
    } else {
        String::new()
    }
}

/// "; generator late p50 .. ms, ...; server's own: ..% of submits within 5 ms, ..% within 10 ms".
fn pacing_text(p: &Pacing) -> String {
    format!(
        "; generator late p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms (p99 counted with it {:.2} ms); server's own: {:.2}% of submits within 5 ms, {:.2}% within 10 ms{}",
        p.late_p50_ms,
        p.late_p99_ms,
        p.late_max_ms,
        p.from_due_p99_ms,
        p.server_within_5ms * 100.0,
        p.server_within_10ms * 100.0,
        p.steal.map_or(String::new(), |s| format!(
            "; this machine's CPU time taken by its hypervisor (steal) {:.1}%",
            s * 100.0
        )),
    )
}

fn simple_line(f: &ServeFigures) -> String {
    format!(
        "serve {}: {} requests over {} connections{}: {:.0} req/s; immediate answer p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; statuses {:?}{}{}",
        f.mode,
        f.requests,
        f.connections,
        offered(f.rate),
        f.per_sec,
        f.p50_ms,
        f.p99_ms,
        f.max_ms,
        f.statuses,
        match (f.done, f.all_done_secs) {
            (Some(d), Some(s)) => format!("; {d}/{} verdicts in {s:.1} s", f.requests),
            _ => String::new(),
        },
        pacing_text(&f.pacing)
    )
}

fn grpo_line(f: &GrpoFigures) -> String {
    format!(
        "serve grpo: {} requests ({} instances x {} samples) with {} distinct (instance, patch) pairs that run: {} containers started, {} requests shared a job in flight, {} answered from the cache at once; all verdicts in {:.1} s ({:?}). Cache hits: {}/{} over {} connections{}, {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms{}",
        f.requests,
        f.groups,
        f.samples_per_group,
        f.distinct_pairs,
        f.containers,
        f.shared,
        f.first_pass_cached,
        f.first_pass_secs,
        f.statuses,
        f.hits_cached,
        f.hits_requests,
        f.connections,
        offered(f.rate),
        f.hits_per_sec,
        f.hits_p50_ms,
        f.hits_p99_ms,
        f.hits_max_ms,
        pacing_text(&f.hits_pacing),
    )
}

fn queue_line(f: &QueueFigures) -> String {
    let mb = |b: u64| b as f64 / (1 << 20) as f64;
    format!(
        "serve queue: {} executed requests (distinct patches) over {} connections{}: statuses {:?}, Retry-After {:?}; accepted at {:.0} req/s, immediate answer p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms{}; {} queued; server RSS {:.1} MB before, {:.1} MB after, peak {:.1} MB",
        f.requests,
        f.connections,
        offered(f.rate),
        f.statuses,
        f.retry_after,
        f.per_sec,
        f.p50_ms,
        f.p99_ms,
        f.max_ms,
        pacing_text(&f.pacing),
        f.queued,
        mb(f.rss_before),
        mb(f.rss_after),
        mb(f.rss_peak),
    )
}

fn restart_line(f: &RestartFigures) -> String {
    format!(
        "serve restart: {} requests accepted ({} jobs); SIGKILL with {} results in, {} containers running, {} verdicts written; restarted in {:.1} s, every result in {:.1} s after the restart; {}/{} requests with a result ({:?}; not the expected status: {:?}), {} stored results changed, {} jobs run again after their verdict was stored, {} containers started by the second server (at most {} without a verdict); the dead server's containers and holds left after the restart: {:?}; the second server's after its stop: {:?} (exit {:?})",
        f.accepted,
        f.jobs,
        f.done_at_kill,
        f.running_at_kill,
        f.verdicts_at_kill,
        f.restart_secs,
        f.finish_secs,
        f.results,
        f.accepted,
        f.statuses,
        f.unexpected,
        f.changed,
        f.rerun,
        f.started_again,
        f.jobs_left_at_kill(),
        f.dead_left,
        f.second_left,
        f.second_exit,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latencies_file_has_a_header_and_a_row_per_request() {
        let s = |k, due_s, late_ms, latency_ms, status| Sample {
            k,
            due_s,
            late_ms,
            latency_ms,
            status,
        };
        let csv = samples_csv(&[s(0, 0.0, 0.25, 1.5, 200), s(1, 0.0005, 0.0, 12.3456, 429)]);
        assert_eq!(
            csv,
            "k,due_s,late_ms,latency_ms,status\n0,0.000000,0.250,1.500,200\n1,0.000500,0.000,12.346,429\n"
        );
    }

    #[test]
    fn the_steal_is_said_only_where_the_machine_counted_it() {
        let stolen = Pacing {
            steal: Some(0.25),
            ..Pacing::default()
        };
        assert!(
            pacing_text(&stolen).ends_with("(steal) 25.0%"),
            "{}",
            pacing_text(&stolen)
        );
        assert!(!pacing_text(&Pacing::default()).contains("steal"));
    }
}
