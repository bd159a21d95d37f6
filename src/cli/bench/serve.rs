//! `swe-eval bench serve`: a bounded load on `swe-eval serve` over loopback, with the mini
//! benchmark's 22 predictions as bodies.
//!
//! - `similarity`: `--requests` requests with `execute: false` over `--connections`
//!   connections: the similarity answered at once (p50, p99, max, requests per second).
//! - `executed`: the predictions sent once each (one request per prediction, over
//!   `--connections` connections), then waited for: the immediate answer of an executed request
//!   (p50, p99) and the time until every verdict is in (set beside `swe-eval run`).
//! - `grpo`: 8 instances x 16 samples drawn with repeats from each instance's predictions,
//!   sent as one group per instance and waited for; the containers the server started (from
//!   its `/metrics`) against the distinct (instance, patch) pairs; then `--requests` of the
//!   same requests again, every one a cache hit (p50, p99).
//! - `queue`: `--requests` executed requests with distinct patches (a server with `-j 1`
//!   cannot drain them meanwhile): the immediate answers, 429s with `Retry-After` past the
//!   server's `--max-queue`, and the server's resident memory (from its `/metrics`).
//! - `restart`: starts a server itself, sends the predictions twice (the second copy with
//!   distinct patches), SIGKILLs it with requests done, running and queued, starts it again
//!   and counts: results per request, jobs run again, what the dead server left on the daemon.
//!
//! For the first four, start the server yourself (`swe-eval serve -o DIR`), so its flags (-j,
//! --max-queue, images) are yours to choose and the figures are the server's alone.

mod modes;
mod restart;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::cli::{CliResult, Ending};
use crate::serve::{run_load, Client, Load, LoadReport};

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
    #[arg(long, default_value_t = 0.0, value_parser = rate)]
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

/// What `similarity` and `executed` measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Figures {
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
    /// `executed`: verdicts in within `--wait`.
    pub done: Option<usize>,
    /// The generator's lateness and the server's own view.
    #[serde(flatten)]
    pub pacing: Pacing,
}

/// What a paced load says beside its latencies: the generator's own lateness (left out of the
/// latencies), the 99th percentile with it, and the server's own timing of the same submits.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Pacing {
    /// The 99th percentile counted from when each request was due, the generator's lateness
    /// included, milliseconds.
    pub from_due_p99_ms: f64,
    /// The generator's lateness (from when a request could go to when it went), median,
    /// milliseconds (0 for a closed loop).
    pub late_p50_ms: f64,
    /// 99th percentile.
    pub late_p99_ms: f64,
    /// Largest.
    pub late_max_ms: f64,
    /// The server's own time to answer a submit (its `/metrics`, from the request handed to
    /// the handler to the answer made), share within 5 ms, over the load.
    pub server_within_5ms: f64,
    /// Share within 10 ms.
    pub server_within_10ms: f64,
    /// The share of this machine's CPU time a hypervisor took (steal) over the load; `None`
    /// where `/proc/stat` says nothing of it. A latency measured while the virtual CPUs were
    /// taken away is the host's, not the server's.
    pub steal: Option<f64>,
}

impl Pacing {
    /// Of `report`, with the server's submit histogram `before` and `after` the load.
    fn of(
        report: &LoadReport,
        before: &BTreeMap<String, f64>,
        after: &BTreeMap<String, f64>,
    ) -> Pacing {
        let ms = |l: &crate::serve::Latencies, q: f64| l.quantile(q).as_secs_f64() * 1000.0;
        let count = |le: &str| {
            let name = format!("{SUBMIT}_bucket{{le=\"{le}\"}}");
            metric(after, &name) - metric(before, &name)
        };
        let total = count("+Inf").max(1.0);
        Pacing {
            from_due_p99_ms: ms(&report.from_due, 0.99),
            late_p50_ms: ms(&report.lateness, 0.5),
            late_p99_ms: ms(&report.lateness, 0.99),
            late_max_ms: ms(&report.lateness, 1.0),
            server_within_5ms: count("0.005") / total,
            server_within_10ms: count("0.01") / total,
            steal: match (
                before.get(STEAL),
                after.get(STEAL),
                before.get(ALL_TICKS),
                after.get(ALL_TICKS),
            ) {
                (Some(s0), Some(s1), Some(t0), Some(t1)) if t1 > t0 => Some((s1 - s0) / (t1 - t0)),
                _ => None,
            },
        }
    }

    /// "; generator late p99 .. ms (p99 with it .. ms); server: ..% of submits within 5 ms, ..% within 10 ms".
    fn text(&self) -> String {
        format!(
            "; generator late p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms (p99 counted with it {:.2} ms); server's own: {:.2}% of submits within 5 ms, {:.2}% within 10 ms{}",
            self.late_p50_ms,
            self.late_p99_ms,
            self.late_max_ms,
            self.from_due_p99_ms,
            self.server_within_5ms * 100.0,
            self.server_within_10ms * 100.0,
            self.steal.map_or(String::new(), |s| format!(
                "; this machine's CPU time taken by its hypervisor (steal) {:.1}%",
                s * 100.0
            )),
        )
    }
}

/// The server's histogram of its time to answer `POST /v1/evaluations`.
const SUBMIT: &str = "swe_eval_http_submit_latency_seconds";

/// Runs the load and prints its figures.
pub fn run(args: Args) -> CliResult {
    // Before the runtime's threads start: each takes the nice of the thread that made it.
    if let Some(n) = args.nice {
        let set = crate::priority::set_nice(n).map_err(swe_eval_core::failure::Failed)?;
        eprintln!("swe-eval bench serve: {set}");
    }
    // One thread: the generator shares the machine with the server it measures, so it takes
    // at most one core, and its connections' timers are all driven by that thread.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let token = std::env::var("SWE_EVAL_TOKEN")
        .ok()
        .filter(|t| !t.trim().is_empty());
    let preds = mini_predictions()?;
    if args.mode == Mode::Restart && args.latencies.is_some() {
        return Err(swe_eval_core::failure::Failed(
            "--latencies keeps a load's requests; `restart` makes no load to keep".into(),
        )
        .into());
    }
    let (printed, json, ok) = match args.mode {
        Mode::Similarity | Mode::Executed => {
            let f = rt.block_on(simple(&args, token, &preds))?;
            let ok = f.statuses.keys().all(|s| *s == 200) && f.done.is_none_or(|d| d == f.requests);
            (simple_line(&f), serde_json::to_value(&f)?, ok)
        }
        Mode::Grpo => {
            let f = rt.block_on(modes::grpo(&args, token, &preds))?;
            let ok = f.ok();
            (f.line(), serde_json::to_value(&f)?, ok)
        }
        Mode::Queue => {
            let f = rt.block_on(modes::queue(&args, token, &preds))?;
            let ok = f.ok();
            (f.line(), serde_json::to_value(&f)?, ok)
        }
        Mode::Restart => {
            let f = rt.block_on(restart::restart(&args, &preds))?;
            let ok = f.ok();
            (f.line(), serde_json::to_value(&f)?, ok)
        }
    };
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

/// The mini benchmark's predictions.
fn mini_predictions() -> Result<Vec<Value>, serde_json::Error> {
    swe_eval_core::mini::PREDICTIONS
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect()
}

/// A request's body for prediction `p`.
fn record(p: &Value, patch: &Value, model: &Value, sample: u64, execute: bool) -> Value {
    json!({"instance_id": p["instance_id"], "model_patch": patch,
           "model_name_or_path": model, "sample": sample, "execute": execute})
}

/// `patch` made distinct by `tag`: ` # tag` at the end of its first added line (the hunk's
/// line counts stay right, so it still applies where the original does); unchanged when it adds
/// no line.
fn variant(patch: &str, tag: &str) -> String {
    let mut out = String::with_capacity(patch.len() + tag.len() + 3);
    let mut done = false;
    for line in patch.split_inclusive('\n') {
        if !done && line.starts_with('+') && !line.starts_with("+++") {
            let (text, end) = match line.strip_suffix('\n') {
                Some(t) => (t, "\n"),
                None => (line, ""),
            };
            out.push_str(text);
            out.push_str(" # ");
            out.push_str(tag);
            out.push_str(end);
            done = true;
        } else {
            out.push_str(line);
        }
    }
    out
}

async fn simple(
    args: &Args,
    token: Option<String>,
    preds: &[Value],
) -> Result<Figures, crate::cli::CliError> {
    let execute = args.mode == Mode::Executed;
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
        args.requests as usize
    };
    let before = metrics(args.connect, token.clone()).await?;
    let t0 = Instant::now();
    let report = load(args, token.clone(), requests, bodies, execute).await?;
    let after = metrics(args.connect, token.clone()).await?;
    let (all_done_secs, done) = if execute {
        let ids = ids_of(&report);
        let done = wait_all(args.connect, token, &ids, Duration::from_secs(args.wait)).await?;
        (Some(t0.elapsed().as_secs_f64()), Some(done.len()))
    } else {
        (None, None)
    };
    let (p50_ms, p99_ms, max_ms) = quantiles(&report);
    Ok(Figures {
        mode: if execute { "executed" } else { "similarity" },
        connections: args.connections,
        rate: args.rate,
        requests,
        statuses: report.by_status.clone(),
        per_sec: report.rate(),
        p50_ms,
        p99_ms,
        max_ms,
        all_done_secs,
        done,
        pacing: Pacing::of(&report, &before, &after),
    })
}

fn simple_line(f: &Figures) -> String {
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
        f.pacing.text()
    )
}

/// ", N req/s offered" for a paced load.
fn offered(rate: f64) -> String {
    if rate > 0.0 {
        format!(", {rate:.0} req/s offered")
    } else {
        String::new()
    }
}

/// `requests` POSTs of `bodies` (in turn) to `/v1/evaluations` over `--connections`.
async fn load(
    args: &Args,
    token: Option<String>,
    requests: usize,
    bodies: Vec<Vec<u8>>,
    keep_bodies: bool,
) -> Result<LoadReport, crate::cli::CliError> {
    let load = Load {
        addr: args.connect,
        token,
        connections: (args.connections as usize).min(requests.max(1)),
        requests,
        method: "POST".into(),
        path: "/v1/evaluations".into(),
        bodies,
        keep_bodies,
        rate: (args.rate > 0.0).then_some(args.rate),
    };
    let report = run_load(load).await.map_err(|e| {
        swe_eval_core::failure::Failed(format!(
            "{e} (is `swe-eval serve` listening there? start it first)"
        ))
    })?;
    if let Some(path) = &args.latencies {
        swe_eval_core::fsutil::write_atomic(path, samples_csv(&report.samples).as_bytes())?;
    }
    Ok(report)
}

/// The `--latencies` file: a header and a row per request.
fn samples_csv(samples: &[crate::serve::Sample]) -> String {
    let mut out = String::from("k,due_s,late_ms,latency_ms,status\n");
    for s in samples {
        out.push_str(&format!(
            "{},{:.6},{:.3},{:.3},{}\n",
            s.k, s.due_s, s.late_ms, s.latency_ms, s.status
        ));
    }
    out
}

/// Median, 99th percentile and largest latency of `report`, in milliseconds.
fn quantiles(report: &LoadReport) -> (f64, f64, f64) {
    let ms = |q: f64| report.latencies.quantile(q).as_secs_f64() * 1000.0;
    (ms(0.5), ms(0.99), ms(1.0))
}

/// The answers kept by `report` (a list answer or one object each), in request order.
fn answers_of(report: &LoadReport) -> Vec<Value> {
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
fn ids_of(report: &LoadReport) -> Vec<String> {
    answers_of(report)
        .iter()
        .filter_map(|v| v["id"].as_str().map(str::to_string))
        .collect()
}

/// Waits up to `limit` for `ids` (long polls of at most 60 s); the evaluations done.
async fn wait_all(
    addr: SocketAddr,
    token: Option<String>,
    ids: &[String],
    limit: Duration,
) -> Result<Vec<Value>, crate::cli::CliError> {
    let until = Instant::now() + limit;
    let mut client = Client::connect(addr, token).await.map_err(io)?;
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
            .await
            .map_err(io)?;
        let v: Value = serde_json::from_slice(&got)?;
        if status != 200 {
            return Err(swe_eval_core::failure::Failed(format!(
                "the server answered {status}: {v}"
            ))
            .into());
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

/// The server's `/metrics`, as (name with labels -> value).
async fn metrics(
    addr: SocketAddr,
    token: Option<String>,
) -> Result<BTreeMap<String, f64>, crate::cli::CliError> {
    let mut client = Client::connect(addr, token).await.map_err(io)?;
    let (status, _, body) = client.request("GET", "/metrics", None).await.map_err(io)?;
    if status != 200 {
        return Err(
            swe_eval_core::failure::Failed(format!("GET /metrics answered {status}")).into(),
        );
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

/// Pseudo-metrics of a snapshot: this machine's CPU ticks stolen by a hypervisor, and in all.
const STEAL: &str = "machine:cpu_steal_ticks";
const ALL_TICKS: &str = "machine:cpu_ticks";

/// The `cpu` line of `/proc/stat`: (steal, all) ticks, guest time left out (counted in user).
fn cpu_ticks(stat: &str) -> Option<(u64, u64)> {
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
fn metric(m: &BTreeMap<String, f64>, name: &str) -> f64 {
    m.get(name).copied().unwrap_or(0.0)
}

/// Containers started by the server (its `/metrics`).
const STARTED: &str = "swe_eval_jobs_total{stage=\"started\"}";

/// The distinct (instance, patch) pairs of `bodies` that run a container (non-empty patch).
fn distinct_pairs(bodies: &[Value]) -> usize {
    bodies
        .iter()
        .filter(|b| !b["model_patch"].as_str().unwrap_or("").trim().is_empty())
        .map(|b| (b["instance_id"].to_string(), b["model_patch"].to_string()))
        .collect::<BTreeSet<_>>()
        .len()
}

/// `--rate`: a number of requests per second, 0 to 1,000,000.
fn rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if (0.0..=1e6).contains(&r) => Ok(r),
        _ => Err(format!(
            "`{s}` is not a rate from 0 to 1000000 (requests per second)"
        )),
    }
}

fn io(e: crate::serve::ClientError) -> crate::cli::CliError {
    swe_eval_core::failure::Failed(e.to_string()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variant_differs_only_on_the_first_added_line() {
        let patch = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n a\n+b\n+c\n";
        let v = variant(patch, "7");
        assert_eq!(
            v,
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n a\n+b # 7\n+c\n"
        );
        assert_ne!(variant(patch, "8"), v);
        assert_eq!(variant("", "7"), "");
        let preds = mini_predictions().unwrap();
        let bodies: Vec<Value> = preds
            .iter()
            .map(|p| record(p, &p["model_patch"], &json!("m"), 0, true))
            .collect();
        assert_eq!(distinct_pairs(&bodies), 21, "22 predictions, one empty");
    }

    #[test]
    fn the_latencies_file_has_a_header_and_a_row_per_request() {
        let s = |k, due_s, late_ms, latency_ms, status| crate::serve::Sample {
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
    fn the_steal_is_the_share_of_the_cpu_lines_ticks_between_two_snapshots() {
        let stat = |user: u64, idle: u64, steal: u64| {
            format!("cpu  {user} 0 10 {idle} 0 0 0 {steal} 5 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n")
        };
        assert_eq!(cpu_ticks(&stat(100, 800, 100)), Some((100, 1010)));
        assert_eq!(cpu_ticks("cpu0 1 2\n"), None);
        let snap = |t: &str| {
            let (steal, all) = cpu_ticks(t).unwrap();
            BTreeMap::from([
                (STEAL.to_string(), steal as f64),
                (ALL_TICKS.to_string(), all as f64),
            ])
        };
        let report = LoadReport::default();
        // 300 more ticks, 75 of them stolen.
        let p = Pacing::of(
            &report,
            &snap(&stat(100, 800, 100)),
            &snap(&stat(200, 925, 175)),
        );
        assert_eq!(p.steal, Some(0.25));
        assert!(p.text().ends_with("(steal) 25.0%"), "{}", p.text());
        // No machine counters (another system): nothing said.
        let none = Pacing::of(&report, &BTreeMap::new(), &BTreeMap::new());
        assert_eq!(none.steal, None);
        assert!(!none.text().contains("steal"));
    }
}
