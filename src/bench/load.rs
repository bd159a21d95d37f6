//! A small HTTP/1.1 client (keep-alive, `Content-Length` bodies: what this server sends) and a
//! bounded load generator on it: a fixed number of connections, each sending the next request
//! of a fixed total until none is left, every latency kept.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Why a request could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The connection failed.
    #[error("{addr}: {source}")]
    Io {
        /// The server.
        addr: SocketAddr,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The answer is not HTTP/1.1 as this client reads it.
    #[error("{addr}: malformed answer: {message}")]
    Malformed {
        /// The server.
        addr: SocketAddr,
        /// What is wrong.
        message: String,
    },
}

/// One connection to a server.
pub struct Client {
    addr: SocketAddr,
    token: Option<String>,
    stream: BufReader<TcpStream>,
}

/// An answer: status, headers (lower-case names), body.
pub type Answer = (u16, Vec<(String, String)>, Vec<u8>);

impl Client {
    /// Connects to `addr`; `token` goes in every request's `Authorization` header.
    pub async fn connect(addr: SocketAddr, token: Option<String>) -> Result<Client, ClientError> {
        let io = |source| ClientError::Io { addr, source };
        let stream = TcpStream::connect(addr).await.map_err(io)?;
        stream.set_nodelay(true).map_err(io)?;
        Ok(Client {
            addr,
            token,
            stream: BufReader::new(stream),
        })
    }

    /// Sends one request and reads its answer.
    pub async fn request(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> Result<Answer, ClientError> {
        let addr = self.addr;
        let io = |source| ClientError::Io { addr, source };
        let bad = |message: String| ClientError::Malformed { addr, message };
        let mut head = format!("{method} {path} HTTP/1.1\r\nhost: {addr}\r\n");
        if let Some(t) = &self.token {
            head.push_str(&format!("authorization: Bearer {t}\r\n"));
        }
        if let Some(b) = body {
            head.push_str(&format!(
                "content-type: application/json\r\ncontent-length: {}\r\n",
                b.len()
            ));
        }
        head.push_str("\r\n");
        let s = self.stream.get_mut();
        s.write_all(head.as_bytes()).await.map_err(io)?;
        if let Some(b) = body {
            s.write_all(b).await.map_err(io)?;
        }
        let mut line = String::new();
        self.stream.read_line(&mut line).await.map_err(io)?;
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse::<u16>().ok())
            .ok_or_else(|| bad(format!("status line `{}`", line.trim_end())))?;
        let mut headers = Vec::new();
        let mut length = 0usize;
        loop {
            line.clear();
            self.stream.read_line(&mut line).await.map_err(io)?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            let (k, v) = l
                .split_once(':')
                .ok_or_else(|| bad(format!("header `{l}`")))?;
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_string());
            if k == "content-length" {
                length = v
                    .parse()
                    .map_err(|_| bad(format!("content-length `{v}`")))?;
            }
            headers.push((k, v));
        }
        let mut body = vec![0; length];
        self.stream.read_exact(&mut body).await.map_err(io)?;
        Ok((status, headers, body))
    }
}

/// Latencies, sorted.
#[derive(Debug, Clone, Default)]
pub struct Latencies(Vec<Duration>);

impl Latencies {
    /// From any order.
    pub fn new(mut v: Vec<Duration>) -> Self {
        v.sort();
        Latencies(v)
    }

    /// The `q` quantile (0..=1), nearest rank; zero when empty.
    pub fn quantile(&self, q: f64) -> Duration {
        if self.0.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((q * self.0.len() as f64).ceil() as usize).clamp(1, self.0.len());
        self.0[rank - 1]
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// None at all.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A load: `requests` requests in all over `connections` connections, the k-th with body
/// `bodies[k % len]` (POSTed to `path`; GET without bodies). Closed (each connection sends its
/// next request when the last is answered) or, with `rate`, paced: the k-th request is due
/// k / rate seconds after the start, and its latency counts from then (a request sent late
/// because its connection was still waiting for the server counts that wait too), less the
/// generator's own lateness: the time between the moment the request could go (due, its
/// connection free) and the moment it went (the timer's granularity, the generator's own
/// scheduling), which is reported apart.
#[derive(Debug, Clone)]
pub struct Load {
    /// The server.
    pub addr: SocketAddr,
    /// Its token, if any.
    pub token: Option<String>,
    /// Connections at once.
    pub connections: usize,
    /// Requests in all.
    pub requests: usize,
    /// `POST` or `GET`.
    pub method: String,
    /// The path.
    pub path: String,
    /// The bodies, taken in turn.
    pub bodies: Vec<Vec<u8>>,
    /// Keep each answer's body (by request number).
    pub keep_bodies: bool,
    /// Requests per second offered in all (`None`: as fast as answered).
    pub rate: Option<f64>,
}

/// What a load measured.
#[derive(Debug, Clone, Default)]
pub struct LoadReport {
    /// Answers by status.
    pub by_status: BTreeMap<u16, usize>,
    /// From the first request sent to the last answer read.
    pub wall: Duration,
    /// Each request's latency (paced: counted from when it was due, less the generator's own
    /// lateness).
    pub latencies: Latencies,
    /// Paced: each request's latency counted from when it was due, the generator's lateness
    /// included (closed: the same as `latencies`).
    pub from_due: Latencies,
    /// Paced: the generator's own lateness per request (closed: none).
    pub lateness: Latencies,
    /// The answers' bodies by request number, when kept.
    pub bodies: Vec<(usize, Vec<u8>)>,
    /// The `Retry-After` values of 429 answers.
    pub retry_after: Vec<String>,
    /// Every request, in the order it was due.
    pub samples: Vec<Sample>,
}

/// One request of a load: when it was due, how late the generator sent it, and its latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// The request's number.
    pub k: usize,
    /// When it was due (closed loop: when it went), seconds after the load's start.
    pub due_s: f64,
    /// The generator's own lateness in sending it, milliseconds (closed loop: 0).
    pub late_ms: f64,
    /// Its latency as counted in [`LoadReport::latencies`], milliseconds.
    pub latency_ms: f64,
    /// The answer's HTTP status.
    pub status: u16,
}

impl LoadReport {
    /// Answers per second.
    pub fn rate(&self) -> f64 {
        self.latencies.len() as f64 / self.wall.as_secs_f64().max(1e-9)
    }
}

/// Runs `load`.
pub async fn run(load: Load) -> Result<LoadReport, ClientError> {
    let next = Arc::new(AtomicUsize::new(0));
    let load = Arc::new(load);
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..load.connections.max(1) {
        let (next, load) = (next.clone(), load.clone());
        tasks.spawn(async move {
            let mut client = Client::connect(load.addr, load.token.clone()).await?;
            let mut out = Vec::new();
            // When the connection's last answer was read: it could send no earlier.
            let mut free = Instant::now();
            loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= load.requests {
                    break;
                }
                let body =
                    (!load.bodies.is_empty()).then(|| &load.bodies[k % load.bodies.len()][..]);
                let (due, late) = match load.rate {
                    Some(rate) if rate > 0.0 => {
                        let due = started + Duration::from_secs_f64(k as f64 / rate);
                        tokio::time::sleep_until(due.into()).await;
                        (
                            due,
                            Some(Instant::now().saturating_duration_since(due.max(free))),
                        )
                    }
                    _ => (Instant::now(), None),
                };
                let (status, headers, answer) =
                    client.request(&load.method, &load.path, body).await?;
                free = Instant::now();
                let retry = headers
                    .into_iter()
                    .find(|(k, _)| k == "retry-after")
                    .map(|(_, v)| v);
                let took = free.saturating_duration_since(due);
                let due_s = due.saturating_duration_since(started).as_secs_f64();
                out.push((k, due_s, status, took, late, answer, retry));
            }
            Ok::<_, ClientError>(out)
        });
    }
    let mut report = LoadReport::default();
    let mut lat = Vec::with_capacity(load.requests);
    let mut from_due = Vec::with_capacity(load.requests);
    let mut lateness = Vec::new();
    while let Some(done) = tasks.join_next().await {
        let rows = done.map_err(|e| ClientError::Malformed {
            addr: load.addr,
            message: e.to_string(),
        })??;
        for (k, due_s, status, took, late, answer, retry) in rows {
            *report.by_status.entry(status).or_default() += 1;
            from_due.push(took);
            let latency = took.saturating_sub(late.unwrap_or_default());
            lat.push(latency);
            report.samples.push(Sample {
                k,
                due_s,
                late_ms: late.unwrap_or_default().as_secs_f64() * 1000.0,
                latency_ms: latency.as_secs_f64() * 1000.0,
                status,
            });
            lateness.extend(late);
            if load.keep_bodies {
                report.bodies.push((k, answer));
            }
            if let Some(r) = retry {
                report.retry_after.push(r);
            }
        }
    }
    report.wall = started.elapsed();
    report.latencies = Latencies::new(lat);
    report.from_due = Latencies::new(from_due);
    report.lateness = Latencies::new(lateness);
    report.bodies.sort_by_key(|(k, _)| *k);
    report.samples.sort_by_key(|s| s.k);
    Ok(report)
}
