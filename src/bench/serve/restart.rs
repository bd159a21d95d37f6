//! `bench serve --mode restart`: a server killed outright with requests done, running and
//! queued, then started again on the same state: every accepted request has one result, the
//! results stored before the kill are kept (their jobs not run again), and nothing of the dead
//! server is left on the daemon once the next one has started.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};

use super::bodies::{distinct_pairs, mini_predictions, record, variant};
use super::options::ServeLoad;
use super::server::{metric, metrics, wait_all, STARTED};
use crate::bench::{BenchError, Client};
use crate::engine::{Engine, EngineChoice, LABEL_HOLD, LABEL_OWNER};

/// How long a started server may take to prepare its images.
const READY_WITHIN: Duration = Duration::from_secs(600);

/// What `restart` measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RestartFigures {
    /// Requests accepted (the 22 predictions, then the same with distinct patches).
    pub accepted: usize,
    /// Jobs those make (distinct non-empty patches).
    pub jobs: usize,
    /// Results in when the server was killed.
    pub done_at_kill: usize,
    /// Its job containers running then.
    pub running_at_kill: usize,
    /// `verdict.json` files written by then.
    pub verdicts_at_kill: usize,
    /// Seconds from the second start to its health answering.
    pub restart_secs: f64,
    /// Seconds from the second start to the last result.
    pub finish_secs: f64,
    /// Requests with a result at the end (each asked for by id).
    pub results: usize,
    /// Results stored before the kill that read differently after it.
    pub changed: usize,
    /// `verdict.json` files of before the kill rewritten after it (a job run twice).
    pub rerun: usize,
    /// Containers the second server started.
    pub started_again: u64,
    /// The results by status.
    pub statuses: BTreeMap<String, usize>,
    /// The original predictions whose status is not the mini benchmark's expected one.
    pub unexpected: Vec<String>,
    /// Containers and holds of the dead server left once the second had started.
    pub dead_left: Vec<String>,
    /// Containers and holds of the second server left after it stopped.
    pub second_left: Vec<String>,
    /// The second server's exit code (0: stopped cleanly).
    pub second_exit: Option<i32>,
}

impl RestartFigures {
    /// Jobs the second server may have run: those without a verdict at the kill.
    pub fn jobs_left_at_kill(&self) -> usize {
        self.jobs.saturating_sub(self.verdicts_at_kill)
    }

    /// A result per request, each as the mini benchmark expects, none changed or run again,
    /// nothing left behind, and a clean stop.
    pub fn ok(&self) -> bool {
        self.results == self.accepted
            && self.unexpected.is_empty()
            && self.changed == 0
            && self.rerun == 0
            && self.started_again as usize <= self.jobs_left_at_kill()
            && self.dead_left.is_empty()
            && self.second_left.is_empty()
            && self.second_exit == Some(0)
    }
}

/// A server this mode started.
struct Server {
    child: Child,
}

impl Server {
    /// Starts `swe-eval serve` on `opts.connect` with output `opts.output`, its log appended to
    /// `log`; waits for its "listening" line.
    fn start(opts: &ServeLoad, log: &Path) -> Result<Server, BenchError> {
        let exe = std::env::current_exe()?;
        let err = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)?;
        let mut child = Command::new(exe)
            .arg("serve")
            .arg("-o")
            .arg(&opts.output)
            .arg("-j")
            .arg(opts.workers.to_string())
            .arg("--listen")
            .arg(opts.connect.to_string())
            .arg("--prepare-all")
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()?;
        let mut out = BufReader::new(child.stdout.take().expect("piped"));
        let mut line = String::new();
        out.read_line(&mut line)?;
        if !line.contains("listening on") {
            let _ = child.kill();
            let _ = child.wait();
            return Err(BenchError::ServerStart {
                log: log.to_path_buf(),
                line: line.trim().to_string(),
            });
        }
        // Keep reading its stdout so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in out.lines() {});
        Ok(Server { child })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM (as Ctrl-C), then its exit code.
    fn stop(mut self) -> Option<i32> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        self.child.wait().ok().and_then(|s| s.code())
    }

    /// SIGKILL.
    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = Command::new("kill")
                .args(["-TERM", &self.child.id().to_string()])
                .status();
            let _ = self.child.wait();
        }
    }
}

/// Waits up to [`READY_WITHIN`] for the server's health to answer with every image prepared.
async fn ready(opts: &ServeLoad) -> Result<(), BenchError> {
    let until = Instant::now() + READY_WITHIN;
    loop {
        if let Ok(mut c) = Client::connect(opts.connect, None).await {
            if let Ok((200, _, b)) = c.request("GET", "/v1/health", None).await {
                let h: Value = serde_json::from_slice(&b)?;
                if h["images_preparing"] == 0 && h["images_ready"].as_u64() > Some(0) {
                    return Ok(());
                }
            }
        }
        if Instant::now() > until {
            return Err(BenchError::NotReady {
                minutes: READY_WITHIN.as_secs() / 60,
            });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The containers (jobs and image holds) of the daemon owned by process `pid`, by name.
async fn owned_by<E: Engine>(engine: &E, pid: u32) -> Result<Vec<String>, BenchError> {
    owned(engine, pid, true).await
}

/// The job containers (not the image holds) of process `pid`.
async fn jobs_of<E: Engine>(engine: &E, pid: u32) -> Result<usize, BenchError> {
    Ok(owned(engine, pid, false).await?.len())
}

async fn owned<E: Engine>(engine: &E, pid: u32, holds: bool) -> Result<Vec<String>, BenchError> {
    let all = engine.list_containers(BTreeMap::new()).await?;
    Ok(all
        .into_iter()
        .filter(|c| {
            c.labels
                .get(LABEL_OWNER)
                .and_then(|o| o.split(':').nth(1))
                .is_some_and(|p| p == pid.to_string())
                && (holds || !c.labels.contains_key(LABEL_HOLD))
        })
        .map(|c| c.name)
        .collect())
}

/// Every `verdict.json` under `jobs`: its bytes and time of change.
fn verdicts(jobs: &Path) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime)> {
    let Ok(dir) = std::fs::read_dir(jobs) else {
        return BTreeMap::new();
    };
    dir.filter_map(|d| {
        let p = d.ok()?.path().join("verdict.json");
        let m = std::fs::metadata(&p).ok()?;
        Some((p.clone(), (std::fs::read(&p).ok()?, m.modified().ok()?)))
    })
    .collect()
}

/// Starts a server on `opts.output` (which must hold no server's state yet), sends the mini
/// predictions twice, kills it a quarter of the way, starts it again and counts.
pub async fn measure_restart(opts: &ServeLoad) -> Result<RestartFigures, BenchError> {
    let preds = mini_predictions()?;
    let state = opts.output.join("serve");
    std::fs::create_dir_all(&opts.output)?;
    let log = opts.output.join("bench-serve-restart.log");
    let engine = crate::engine::connect(&EngineChoice::default()).await?;

    let mut batch: Vec<Value> = preds
        .iter()
        .map(|p| record(p, &p["model_patch"], &json!("bench-restart"), 0, true))
        .collect();
    batch.extend(preds.iter().map(|p| {
        let patch = variant(p["model_patch"].as_str().unwrap_or(""), "again");
        record(p, &json!(patch), &json!("bench-restart"), 1, true)
    }));
    let jobs = distinct_pairs(&batch);

    let first = Server::start(opts, &log)?;
    ready(opts).await?;
    let mut c = Client::connect(opts.connect, None).await?;
    let body = Value::Array(batch).to_string();
    let (status, _, b) = c
        .request("POST", "/v1/evaluations", Some(body.as_bytes()))
        .await?;
    let answers: Value = serde_json::from_slice(&b)?;
    if status != 200 {
        return Err(BenchError::Status {
            addr: opts.connect,
            request: "POST /v1/evaluations",
            status,
            body: answers.to_string(),
        });
    }
    let ids: Vec<String> = answers
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["id"].as_str().map(str::to_string))
        .collect();

    // Killed once a quarter of the results are in, with containers running.
    let until = Instant::now() + opts.wait;
    let before = loop {
        let done = wait_all(opts.connect, None, &ids, Duration::from_millis(100)).await?;
        let running = jobs_of(&engine, first.pid()).await?;
        if (done.len() * 4 >= ids.len() && running > 0) || Instant::now() > until {
            break done;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let dead = first.pid();
    let running_at_kill = jobs_of(&engine, dead).await?;
    first.kill();
    let verdicts_before = verdicts(&state.join("jobs"));

    let t0 = Instant::now();
    let second = Server::start(opts, &log)?;
    ready(opts).await?;
    let restart_secs = t0.elapsed().as_secs_f64();
    let dead_left = owned_by(&engine, dead).await?;
    let after = wait_all(opts.connect, None, &ids, opts.wait).await?;
    let finish_secs = t0.elapsed().as_secs_f64();

    // Each request asked for by id: one result each.
    let mut results = 0;
    let mut c = Client::connect(opts.connect, None).await?;
    for id in &ids {
        let (status, _, b) = c
            .request("GET", &format!("/v1/evaluations/{id}"), None)
            .await?;
        let v: Value = serde_json::from_slice(&b)?;
        if status == 200 && v["state"] == "done" {
            results += 1;
        }
    }
    let by_id: BTreeMap<&str, &Value> = after
        .iter()
        .filter_map(|a| Some((a["id"].as_str()?, a)))
        .collect();
    let changed = before
        .iter()
        .filter(|b| b["id"].as_str().and_then(|id| by_id.get(id)) != Some(b))
        .count();
    let now = verdicts(&state.join("jobs"));
    let rerun = verdicts_before
        .iter()
        .filter(|(p, v)| now.get(*p) != Some(v))
        .count();
    let mut statuses = BTreeMap::new();
    for a in &after {
        *statuses
            .entry(a["status"].as_str().unwrap_or("?").to_string())
            .or_default() += 1;
    }
    let unexpected = unexpected(&ids, &by_id, &preds)?;
    let m = metrics(opts.connect, None).await?;
    let started_again = metric(&m, STARTED) as u64;
    let pid = second.pid();
    let second_exit = second.stop();
    let second_left = owned_by(&engine, pid).await?;
    Ok(RestartFigures {
        accepted: ids.len(),
        jobs,
        done_at_kill: before.len(),
        running_at_kill,
        verdicts_at_kill: verdicts_before.len(),
        restart_secs,
        finish_secs,
        results,
        changed,
        rerun,
        started_again,
        statuses,
        unexpected,
        dead_left,
        second_left,
        second_exit,
    })
}

/// The results of the original predictions (the first `preds.len()` of `ids`, in the order
/// sent) whose status is not the one the mini benchmark expects, as
/// `instance/model/sample: got, want`.
fn unexpected(
    ids: &[String],
    by_id: &BTreeMap<&str, &Value>,
    preds: &[Value],
) -> Result<Vec<String>, serde_json::Error> {
    let expected: Vec<Value> = serde_json::from_str(swe_eval_core::mini::EXPECTED)?;
    let want = |p: &Value| {
        let e = expected.iter().find(|e| {
            e["instance_id"] == p["instance_id"]
                && e["model_name_or_path"] == p["model_name_or_path"]
                && e["sample"] == p["sample"]
        })?;
        Some(
            match (e["category"].as_str()?, e["error_kind"].as_str()) {
                ("resolved", _) => "resolved",
                ("unresolved", _) => "unresolved",
                ("empty_patch", _) => "empty",
                ("error", Some("patch_apply_failed")) => "patch_failed",
                ("error", Some("timeout")) => "timeout",
                _ => return None,
            }
            .to_string(),
        )
    };
    let mut out = Vec::new();
    for (p, id) in preds.iter().zip(ids) {
        let got = by_id
            .get(id.as_str())
            .and_then(|a| a["status"].as_str())
            .unwrap_or("none");
        let want = want(p).unwrap_or_else(|| "?".into());
        if got != want {
            out.push(format!(
                "{}/{}/{}: {got}, want {want}",
                p["instance_id"].as_str().unwrap_or("?"),
                p["model_name_or_path"].as_str().unwrap_or("?"),
                p["sample"]
            ));
        }
    }
    Ok(out)
}
