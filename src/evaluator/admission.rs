//! Admission: a request checked against the dataset and the queue's bound, keyed by content
//! when executed, scored (the similarity against the gold patch, kept by (instance, patch) in
//! `similarity`, so the same content is not compared again), stored, and answered at once when it
//! needs no job (not executed, an empty patch, no test spec, its key cached); the others go to
//! the session with their deadline, and each answer is stored (and cached unless masked), then
//! published to its waiters.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use swe_eval_core::dataset::Instance;
use swe_eval_core::predictions::patch_hash;
use swe_eval_core::reward::Oracle;

use super::evaluation::{Evaluation, Executed, State, Status};
use super::metrics::inc;
use super::objections::objections;
use super::request::{Refusal, RefusalCode, Request};
use super::shared::{unavailable, Req, Shared};
use super::similarity::Score;
use super::store::{now_ms, Row};
use crate::engine::Engine;
use crate::runner::Answer;
use crate::session::{Pending, Submit};

fn score_of<E: Engine>(shared: &Shared<E>, inst: &Instance, patch: &str) -> Score {
    shared.similarities.score(&inst.instance_id, patch, || {
        let r = oracle_of(shared, inst).unidiff_reward(patch);
        Score {
            similarity: r.similarity,
            reward: r.reward,
            format: r.format.as_string(),
        }
    })
}

/// `inst`'s gold patch, read once for every similarity of the instance.
fn oracle_of<E: Engine>(shared: &Shared<E>, inst: &Instance) -> Arc<Oracle> {
    if let Some(o) = shared.lock().oracles.get(&inst.instance_id) {
        return o.clone();
    }
    let made = Arc::new(Oracle::new(&inst.patch));
    shared
        .lock()
        .oracles
        .entry(inst.instance_id.clone())
        .or_insert(made)
        .clone()
}

/// Places in the queue taken by a submission under way; given back when dropped (the requests
/// are in `pending` by then, or were refused).
struct Reservation<'a, E: Engine> {
    shared: &'a Shared<E>,
    places: usize,
}

impl<E: Engine> Drop for Reservation<'_, E> {
    fn drop(&mut self) {
        let mut book = self.shared.lock();
        book.reserved = book.reserved.saturating_sub(self.places);
    }
}

/// Evaluates `requests` (see [`super::Evaluator::submit`]).
pub(super) async fn submit<E: Engine>(
    shared: &Arc<Shared<E>>,
    requests: Vec<Request>,
) -> Result<Vec<Evaluation>, Refusal> {
    if !shared.lock().accepting {
        return Err(Refusal::new(
            RefusalCode::Unavailable,
            "the server is shutting down",
            None,
        ));
    }
    let batch = requests.len() > 1;
    let field = |i: usize, name: &str| {
        if batch {
            format!("[{i}].{name}")
        } else {
            name.to_string()
        }
    };
    let mut insts = Vec::with_capacity(requests.len());
    for (i, r) in requests.iter().enumerate() {
        match shared.dataset.get(&r.instance_id) {
            Some(inst) => insts.push(inst),
            None => {
                let shown: String = r.instance_id.chars().take(80).collect();
                return Err(Refusal::new(
                    RefusalCode::BadRequest,
                    format!("`{shown}` is not an instance of the server's dataset"),
                    Some(&field(i, "instance_id")),
                ));
            }
        }
    }
    let executed = requests.iter().filter(|r| r.execute).count();
    if executed > shared.opts.max_queue {
        // Not even an empty queue takes it: waiting would never help.
        return Err(Refusal::batch_over_queue(executed, shared.opts.max_queue));
    }
    let queued = {
        let mut book = shared.lock();
        let queued = book.pending.len() + book.reserved;
        if executed == 0 || queued + executed <= shared.opts.max_queue {
            book.reserved += executed;
        }
        queued
    };
    if executed > 0 && queued + executed > shared.opts.max_queue {
        inc(&shared.metrics.refused_full);
        let mut r = Refusal::new(
            RefusalCode::QueueFull,
            format!(
                "{queued} requests queued, at most {} (--max-queue); retry later",
                shared.opts.max_queue
            ),
            None,
        );
        r.retry_after = Some(retry_after(shared, queued));
        return Err(r);
    }
    let _reserved = Reservation {
        shared,
        places: executed,
    };
    let now = Instant::now();
    let at_ms = now_ms();
    let mut rows = Vec::with_capacity(requests.len());
    for (r, inst) in requests.into_iter().zip(insts) {
        // An executed patch's content key: the verdict's identity key
        // (`swe_eval_core::identity`), as a run's resume decides by it: the same inputs under
        // the same limits.
        let recipe = (r.execute && !r.model_patch.trim().is_empty())
            .then(|| shared.session.recipe(&inst.instance_id));
        let key = match &recipe {
            Some(Ok(recipe)) => recipe.identity(&patch_hash(&r.model_patch)).key,
            _ => String::new(),
        };
        let score = score_of(shared, inst, &r.model_patch);
        let seq = shared.next_seq.fetch_add(1, Ordering::Relaxed);
        let deadline = r.deadline.unwrap_or(shared.opts.default_deadline);
        let mut row = Row {
            seq,
            instance_id: r.instance_id,
            model: r
                .model_name_or_path
                .unwrap_or_else(|| shared.opts.default_model.clone()),
            sample: r.sample,
            patch: r.model_patch,
            key,
            execute: r.execute,
            deadline_ms: Some(at_ms.saturating_add(deadline.as_millis() as i64)),
            accepted_ms: at_ms,
            similarity: score.similarity,
            reward: score.reward,
            format: score.format,
            outcome: None,
            cached: false,
            done: !r.execute,
        };
        // Decided by the patch alone (an empty one), as the dispatcher would decide it: known at
        // once.
        let at_once = r
            .execute
            .then(|| shared.session.decided_by_patch(&row.prediction()))
            .flatten();
        if let Some(decided) = at_once {
            inc(&shared.metrics.accepted_executed);
            row.outcome = Some(Executed::of(&decided, None, shared.opts.reward, Vec::new()));
            row.done = true;
        } else if r.execute {
            inc(&shared.metrics.accepted_executed);
            match recipe {
                Some(Err(why)) => {
                    let by = shared.opts.reward;
                    row.outcome = Some(Executed::masked(Status::InfraError, why.to_string(), by));
                    row.done = true;
                }
                _ => {
                    if let Some(hit) = shared.store.cached(&row.key).map_err(unavailable)? {
                        inc(&shared.metrics.cache_hits);
                        row.outcome = Some(hit.scored_by(shared.opts.reward));
                        row.cached = true;
                        row.done = true;
                    }
                }
            }
        } else {
            inc(&shared.metrics.accepted_similarity);
        }
        rows.push(row);
    }
    // The rows go to the store as they are; only those still to run are copied (for the
    // session), so a request answered at once costs no second copy of its patch.
    let answers: Vec<Evaluation> = rows.iter().map(Row::evaluation).collect();
    let known: Vec<Status> = rows
        .iter()
        .filter(|r| r.done)
        .filter_map(|r| r.outcome.as_ref().map(|o| o.status))
        .collect();
    let waiting: Vec<Row> = rows.iter().filter(|r| !r.done).cloned().collect();
    shared.store.insert(rows).await.map_err(unavailable)?;
    for status in known {
        shared.metrics.status(status);
        shared.metrics.result_latency.observe(now.elapsed());
    }
    admit(shared, waiting);
    Ok(answers)
}

/// Seconds a refused client should wait: the time the queue ahead of it takes at the rate
/// jobs have been ending, within 1 s to 5 min.
fn retry_after<E: Engine>(shared: &Shared<E>, queued: usize) -> u64 {
    let ended = super::metrics::get(&shared.metrics.jobs_ended).max(1) as f64;
    let per_job = shared.started.elapsed().as_secs_f64() / ended;
    let workers = shared.session.workers().max(1) as f64;
    ((queued as f64 * per_job / workers).ceil() as u64).clamp(1, 300)
}

/// Takes up stored requests not done: each is answered from the cache, or submitted to the
/// session (which shares a job between identical ones) with its deadline, and its answer taken
/// when it comes.
pub(super) fn admit<E: Engine>(shared: &Arc<Shared<E>>, rows: Vec<Row>) {
    let now = Instant::now();
    let at_ms = now_ms();
    let mut hits = Vec::new();
    let mut submits = Vec::new();
    let mut seqs = Vec::new();
    {
        let mut book = shared.lock();
        for row in rows {
            let deadline = row
                .deadline_ms
                .map(|d| now + Duration::from_millis(d.saturating_sub(at_ms).max(0) as u64));
            let (tx, _) = watch::channel(None);
            let seq = row.seq;
            book.pending.insert(
                seq,
                Req {
                    base: row.evaluation(),
                    accepted: now,
                    tx,
                    closing: false,
                },
            );
            match shared.store.cached(&row.key) {
                Ok(Some(hit)) => {
                    inc(&shared.metrics.cache_hits);
                    hits.push((seq, hit.scored_by(shared.opts.reward), true));
                    continue;
                }
                Ok(None) => {}
                Err(e) => shared.notice(format!("cache not read for e{seq}: {e}")),
            }
            seqs.push((seq, row.key.clone()));
            submits.push(Submit {
                prediction: row.prediction(),
                deadline,
            });
        }
    }
    let pending = shared.session.submit(submits);
    for ((seq, key), answer) in seqs.into_iter().zip(pending) {
        await_answer(shared.clone(), seq, key, answer);
    }
    if !hits.is_empty() {
        let task = shared.clone();
        shared
            .rt
            .spawn(async move { finish(&task, hits, None).await });
    }
}

/// Waits (on a task of its own) for request `seq`'s answer from the session and takes it: a
/// verdict is stored and cached under `key` unless masked; a passed deadline is answered
/// `timeout` (masked); a request the session did not run (a shutdown) stays stored for the next
/// start.
fn await_answer<E: Engine>(shared: Arc<Shared<E>>, seq: u64, key: String, answer: Pending) {
    /// Ends the answer's count however the task ends.
    struct Taken<E: Engine>(Arc<Shared<E>>);
    impl<E: Engine> Drop for Taken<E> {
        fn drop(&mut self) {
            self.0.answering.end();
        }
    }
    shared.answering.begin();
    let taken = Taken(shared.clone());
    shared.rt.clone().spawn(async move {
        let _taken = taken;
        let done = match answer.await {
            Answer::Decided(d) => {
                if let Some(logs) = d.logs.clone().filter(|_| d.verdict.shared_from.is_none()) {
                    // The job's log files, for whoever looks into a verdict (the verdict itself
                    // is in the database); a folder that refuses them is a notice.
                    let dir = shared.opts.state.join("jobs").join(&key);
                    let written = tokio::task::spawn_blocking(move || logs.write(&dir)).await;
                    if let Ok(Err(e)) = written {
                        shared.notice(format!("log files of e{seq} not written: {e}"));
                    }
                }
                let image = shared.session.image_of(&d.verdict.instance_id);
                let objections = objections_of(&shared, &d);
                let outcome = Executed::of(&d, image, shared.opts.reward, objections);
                let cache = outcome.cacheable().then(|| (key, outcome.clone()));
                let shared_job = d.verdict.shared_from.is_some();
                (vec![(seq, outcome, shared_job)], cache)
            }
            Answer::Expired { .. } => {
                inc(&shared.metrics.expired);
                let secs = shared
                    .lock()
                    .pending
                    .get(&seq)
                    .map_or(0.0, |r| r.accepted.elapsed().as_secs_f64());
                let why = format!(
                    "the request's deadline passed ({secs:.0} s after acceptance) before its result"
                );
                (
                    vec![(
                        seq,
                        Executed::masked(Status::Timeout, why, shared.opts.reward),
                        false,
                    )],
                    None,
                )
            }
            Answer::NotRun => return,
        };
        finish(&shared, done.0, done.1).await;
    });
}

/// What the strict grading objected to in the job of `d` (none where nothing ran).
fn objections_of<E: Engine>(shared: &Shared<E>, d: &crate::runner::Decided) -> Vec<String> {
    let Some(logs) = d.logs.as_deref() else {
        return Vec::new();
    };
    let id = d.verdict.instance_id.as_str();
    let strict_run = shared.session.job_config().strict;
    shared
        .session
        .setups(&[id])
        .get(id)
        .map_or_else(Vec::new, |setup| {
            objections(logs, setup, &d.verdict, strict_run)
        })
}

/// Stores the outcomes of requests (and `cache` under its key), then publishes them to their
/// waiters. A request already being finished is left alone.
pub(super) async fn finish<E: Engine>(
    shared: &Arc<Shared<E>>,
    done: Vec<(u64, Executed, bool)>,
    cache: Option<(String, Executed)>,
) {
    let mut rows = Vec::with_capacity(done.len());
    {
        let mut book = shared.lock();
        for (seq, mut outcome, cached) in done {
            let Some(req) = book.pending.get_mut(&seq) else {
                continue;
            };
            if req.closing {
                continue;
            }
            req.closing = true;
            outcome.timings.total = req.accepted.elapsed().as_secs_f64();
            rows.push((seq, outcome, cached));
        }
    }
    if rows.is_empty() && cache.is_none() {
        return;
    }
    if let Err(e) = shared.store.finish(rows.clone(), cache).await {
        shared.notice(format!(
            "results of {} request(s) not stored (they run again at the next start): {e}",
            rows.len()
        ));
    }
    let mut book = shared.lock();
    for (seq, outcome, cached) in rows {
        let Some(req) = book.pending.remove(&seq) else {
            continue;
        };
        shared.metrics.status(outcome.status);
        shared
            .metrics
            .result_latency
            .observe(req.accepted.elapsed());
        let mut e = req.base;
        e.state = State::Done;
        e.outcome = Some(outcome);
        e.cached = cached;
        let _ = req.tx.send(Some(Arc::new(e)));
    }
}
