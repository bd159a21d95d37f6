//! The writer thread: one transaction for every write waiting (group commit), each write
//! acknowledged once committed, so the server answers "accepted" only for what is stored.
//!
//! SQLite starts the log again from its beginning only when a write finds all of it copied and
//! no reader on it; under writes that never pause, a checkpoint never finds it so (commits add
//! to it meanwhile) and the log would grow without end. So once a commit leaves the log past
//! [`CATCH_UP_PAGES`], the writer itself copies the rest of it (the frames the checkpoint
//! thread has not copied yet: no commit runs meanwhile, so it gets to the end) and its next
//! commit starts the log again; a log past [`WAL_LIMIT_PAGES`] all the same (a reader held it
//! at every try) is checkpointed by the writer waiting for the readers. The writer waits for a
//! copy of the checkpoint thread's under way only past twice [`CATCH_UP_PAGES`] (else the log
//! would grow all the while), and holds the checkpoint thread off from its catch-up to the end
//! of its next commit, which starts the log again.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{mpsc as std_mpsc, Arc, Mutex};
use std::time::Instant;

use rusqlite::{params, Connection};
use tokio::sync::oneshot;

use super::rows::{now_ms, outcome_json, Row};
use crate::evaluator::evaluation::Executed;
use crate::evaluator::metrics::Histogram;

/// Pages (4 KiB) of log past which the writer, after a commit, copies what the checkpoint
/// thread has not (4 MiB), so that its next commit starts the log from its beginning.
pub(super) const CATCH_UP_PAGES: i64 = 1_024;

/// Pages (4 KiB) of log past which the writer's checkpoint also waits for the readers (128
/// MiB): reached only when a reader held the log at every catch-up since [`CATCH_UP_PAGES`].
pub(super) const WAL_LIMIT_PAGES: i64 = 32_768;

/// A write for the writer thread.
pub(super) enum Write {
    /// New requests (done ones with their outcome).
    Insert(Vec<Row>),
    /// Requests finished: (seq, outcome, cached); and the outcome under its key, when it may
    /// answer identical requests.
    Finish {
        done: Vec<(u64, Executed, bool)>,
        cache: Option<Box<(String, Executed)>>,
    },
}

pub(super) struct Job {
    pub(super) write: Write,
    pub(super) ack: oneshot::Sender<Result<(), Arc<rusqlite::Error>>>,
}

/// The writer thread: takes every write waiting, commits them in one transaction, then
/// acknowledges each, tells the checkpoint thread and, past [`CATCH_UP_PAGES`] of log, copies
/// the rest of the log itself. Ends when the store is closed.
pub(super) fn write_loop(
    conn: Connection,
    rx: std_mpsc::Receiver<Job>,
    wrote: std_mpsc::SyncSender<()>,
    due: &AtomicBool,
    commits: &Histogram,
    log: &AtomicI64,
    copying: &Mutex<()>,
) {
    // Prepared once, for every commit.
    let mut statements = Statements::new(&conn).map_err(Arc::new);
    // Held from a catch-up to the end of the next commit, which starts the log again.
    let mut caught_up = None;
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < 512 {
            match rx.try_recv() {
                Ok(j) => batch.push(j),
                Err(_) => break,
            }
        }
        let started = Instant::now();
        let result = match &mut statements {
            Ok(st) => commit(&conn, st, &batch).map_err(Arc::new),
            Err(e) => Err(e.clone()),
        };
        commits.observe(started.elapsed());
        drop(caught_up.take());
        for j in batch {
            let _ = j.ack.send(result.clone());
        }
        let pages = log.load(Ordering::Relaxed);
        if pages > CATCH_UP_PAGES {
            // Past twice the mark the writer waits for a copy under way (the log would grow
            // all the while); below it, it leaves the copy to the next commit.
            let held = if pages > 2 * CATCH_UP_PAGES {
                Some(copying.lock().unwrap_or_else(|p| p.into_inner()))
            } else {
                copying.try_lock().ok()
            };
            if let Some(held) = held {
                catch_up(&conn);
                caught_up = Some(held);
            }
        }
        // Once per checkpoint: the checkpoint thread is not woken again until it has run.
        if !due.swap(true, Ordering::AcqRel) {
            let _ = wrote.try_send(());
        }
    }
}

/// Copies into the database what is left of the log, on the writer's connection between two
/// commits, so that it gets to the end and the next commit starts the log again (unless a
/// reader is on it then: the next commit catches up again). Busy (the checkpoint thread is
/// copying) leaves it to the next commit; a log past [`WAL_LIMIT_PAGES`] not copied to its end
/// (a reader holds an older snapshot) is copied waiting for the readers (SQLite's RESTART).
fn catch_up(conn: &Connection) {
    // (busy, pages in the log, pages of it copied)
    let checkpoint = |mode: &str| {
        conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })
    };
    // Errors are left to the next commit's catch-up (or the last connection's, at close).
    if let Ok((0, pages, copied)) = checkpoint("PASSIVE") {
        if copied < pages && pages > WAL_LIMIT_PAGES {
            let _ = checkpoint("RESTART");
        }
    }
}

/// The writer's statements.
struct Statements<'c> {
    insert: rusqlite::Statement<'c>,
    finish: rusqlite::Statement<'c>,
    cache: rusqlite::Statement<'c>,
}

impl<'c> Statements<'c> {
    fn new(conn: &'c Connection) -> rusqlite::Result<Self> {
        Ok(Statements {
            insert: conn.prepare(
                "INSERT INTO requests (seq, instance_id, model, sample, patch, key, execute, \
                 deadline_ms, accepted_ms, similarity, reward, format, done, cached, outcome, \
                 finished_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, \
                 ?14, ?15, ?16)",
            )?,
            finish: conn.prepare(
                "UPDATE requests SET done = 1, outcome = ?2, cached = ?3, finished_ms = ?4 \
                 WHERE seq = ?1 AND done = 0",
            )?,
            cache: conn.prepare(
                "INSERT OR REPLACE INTO results (key, outcome, created_ms) VALUES (?1, ?2, ?3)",
            )?,
        })
    }
}

/// Commits `batch` in one transaction (none of it when any write fails).
fn commit(conn: &Connection, st: &mut Statements<'_>, batch: &[Job]) -> rusqlite::Result<()> {
    conn.execute_batch("BEGIN")?;
    let written = write_all(st, batch).and_then(|()| conn.execute_batch("COMMIT"));
    if written.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    written
}

fn write_all(st: &mut Statements<'_>, batch: &[Job]) -> rusqlite::Result<()> {
    let now = now_ms();
    for job in batch {
        match &job.write {
            Write::Insert(rows) => {
                for r in rows {
                    let outcome = r.outcome.as_ref().map(outcome_json);
                    st.insert.execute(params![
                        r.seq as i64,
                        r.instance_id,
                        r.model,
                        r.sample,
                        r.patch,
                        r.key,
                        r.execute,
                        r.deadline_ms,
                        r.accepted_ms,
                        r.similarity,
                        r.reward,
                        r.format,
                        r.done,
                        r.cached,
                        outcome,
                        r.done.then_some(now),
                    ])?;
                }
            }
            Write::Finish { done, cache } => {
                for (seq, outcome, cached) in done {
                    st.finish
                        .execute(params![*seq as i64, outcome_json(outcome), cached, now])?;
                }
                if let Some(c) = cache {
                    let (key, outcome) = &**c;
                    st.cache.execute(params![key, outcome_json(outcome), now])?;
                }
            }
        }
    }
    Ok(())
}
