//! `swe-eval bench serve`: a bounded load on a running `swe-eval serve` over loopback, with the
//! mini benchmark's 22 predictions as bodies.
//!
//! - `similarity`: `--requests` requests with `execute: false` over `--connections`
//!   connections: the similarity answered at once (p50, p99, max, requests per second).
//! - `executed`: the predictions sent once each (one request per prediction, over
//!   `--connections` connections), then waited for: the immediate answer of an executed request
//!   (p50, p99) and the time until every verdict is in.
//!
//! Start the server yourself (`swe-eval serve -o DIR`), so its flags (-j, images) are yours to
//! choose and the figures are the server's alone, not this process's start-up.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::cli::{CliResult, Outcome};
use crate::serve::{run_load, Client, Load, LoadReport};

/// `swe-eval bench serve`: which load, on which server.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The server's address.
    #[arg(long, default_value = "127.0.0.1:8321", value_name = "ADDR:PORT")]
    pub connect: SocketAddr,
    /// `similarity` (execute: false) or `executed` (each prediction run, then waited for).
    #[arg(long, value_enum, default_value_t = Mode::Similarity)]
    pub mode: Mode,
    /// Connections at once [allowed: 1 to 1024].
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub connections: u32,
    /// Requests in all, for `similarity` [allowed: 1 to 1000000].
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub requests: u32,
    /// How long `executed` waits for the verdicts, in seconds [allowed: 1 to 86400].
    #[arg(long, default_value_t = 1800, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub wait: u64,
    /// Also write the figures as JSON here.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
}

/// The loads `bench serve` makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// The similarity alone, answered at once.
    Similarity,
    /// The 22 mini predictions executed once each.
    Executed,
}

/// What one load measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Figures {
    /// `similarity` or `executed`.
    pub mode: &'static str,
    /// Connections at once.
    pub connections: u32,
    /// Requests sent.
    pub requests: usize,
    /// Answers by HTTP status.
    pub statuses: std::collections::BTreeMap<u16, usize>,
    /// Requests answered per second.
    pub per_sec: f64,
    /// Latency of the immediate answer, milliseconds: median, 99th percentile, largest.
    pub p50_ms: f64,
    /// 99th percentile, milliseconds.
    pub p99_ms: f64,
    /// Largest, milliseconds.
    pub max_ms: f64,
    /// `executed`: seconds from the first request to the last verdict.
    pub all_done_secs: Option<f64>,
    /// `executed`: verdicts in within `--wait`.
    pub done: Option<usize>,
}

/// Runs the load and prints its figures.
pub fn run(args: Args) -> CliResult {
    let token = std::env::var("SWE_EVAL_TOKEN").ok();
    let preds: Vec<Value> = crate::mini::PREDICTIONS
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let execute = args.mode == Mode::Executed;
    let bodies: Vec<Vec<u8>> = preds
        .iter()
        .map(|p| {
            json!({"instance_id": p["instance_id"], "model_patch": p["model_patch"],
                   "model_name_or_path": p["model_name_or_path"], "sample": p["sample"],
                   "execute": execute})
            .to_string()
            .into_bytes()
        })
        .collect();
    let requests = if execute {
        bodies.len()
    } else {
        args.requests as usize
    };
    let rt = tokio::runtime::Runtime::new()?;
    let figures = rt.block_on(async {
        let load = Load {
            addr: args.connect,
            token: token.clone(),
            connections: args.connections as usize,
            requests,
            method: "POST".into(),
            path: "/v1/evaluations".into(),
            bodies,
            keep_bodies: execute,
        };
        let t0 = Instant::now();
        let report = run_load(load).await.map_err(|e| {
            crate::failure::Failed(format!(
                "{e} (is `swe-eval serve` listening there? start it first)"
            ))
        })?;
        let (all_done_secs, done) = if execute {
            let ids = ids_of(&report);
            let done = wait_all(args.connect, token, &ids, Duration::from_secs(args.wait)).await?;
            (Some(t0.elapsed().as_secs_f64()), Some(done))
        } else {
            (None, None)
        };
        let ms = |q: f64| report.latencies.quantile(q).as_secs_f64() * 1000.0;
        Ok::<_, crate::cli::CliError>(Figures {
            mode: if execute { "executed" } else { "similarity" },
            connections: args.connections,
            requests,
            statuses: report.by_status.clone(),
            per_sec: report.rate(),
            p50_ms: ms(0.5),
            p99_ms: ms(0.99),
            max_ms: ms(1.0),
            all_done_secs,
            done,
        })
    })?;
    println!(
        "serve {}: {} requests over {} connections: {:.0} req/s; immediate answer p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; statuses {:?}{}",
        figures.mode,
        figures.requests,
        figures.connections,
        figures.per_sec,
        figures.p50_ms,
        figures.p99_ms,
        figures.max_ms,
        figures.statuses,
        match (figures.done, figures.all_done_secs) {
            (Some(d), Some(s)) => format!("; {d}/{} verdicts in {s:.1} s", figures.requests),
            _ => String::new(),
        }
    );
    if let Some(path) = &args.json {
        crate::fsutil::write_json_atomic(path, &figures)?;
    }
    let all_ok = figures.statuses.keys().all(|s| *s == 200)
        && figures.done.is_none_or(|d| d == figures.requests);
    Ok(if all_ok {
        Outcome::Clean
    } else {
        Outcome::WithProblems
    })
}

/// The evaluation ids in the kept answers (a list answer or one object each).
fn ids_of(report: &LoadReport) -> Vec<String> {
    report
        .bodies
        .iter()
        .filter_map(|(_, b)| serde_json::from_slice::<Value>(b).ok())
        .flat_map(|v| match v {
            Value::Array(a) => a,
            one => vec![one],
        })
        .filter_map(|v| v["id"].as_str().map(str::to_string))
        .collect()
}

/// Waits up to `limit` for `ids` (long polls of at most 60 s); how many are done.
async fn wait_all(
    addr: SocketAddr,
    token: Option<String>,
    ids: &[String],
    limit: Duration,
) -> Result<usize, crate::cli::CliError> {
    let until = Instant::now() + limit;
    let mut client = Client::connect(addr, token).await.map_err(io)?;
    let mut pending: Vec<String> = ids.to_vec();
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
            return Err(
                crate::failure::Failed(format!("the server answered {status}: {v}")).into(),
            );
        }
        pending = v["pending"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|i| i.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
    }
    Ok(ids.len() - pending.len())
}

fn io(e: crate::serve::ClientError) -> crate::cli::CliError {
    crate::failure::Failed(e.to_string()).into()
}
