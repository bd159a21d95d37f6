//! The evaluator's state in SQLite (`<state>/serve.sqlite`): every accepted request and its
//! result, and the results by content key (the cache), so a server killed outright finishes
//! every accepted request once after a restart and answers the finished ones.
//!
//! The database is in WAL mode with `synchronous=NORMAL`: a committed transaction survives the
//! process being killed (only an operating-system crash can lose the last ones). One writer
//! thread commits everything waiting in one transaction (group commit) and acknowledges each
//! write once it is committed, so the server answers "accepted" only for what is stored; reads
//! use a connection of their own.
//!
//! The log is copied into the database (a checkpoint, which syncs both files to disk) by a
//! thread of its own, at most every [`CHECKPOINT_EVERY`] while writes come, so no commit waits
//! for a sync. SQLite starts the log again from its beginning only when a write finds all of
//! it copied and no reader on it; under writes that never pause, a checkpoint never finds it
//! so (commits add to it meanwhile) and the log would grow without end. So once a commit
//! leaves the log past [`CATCH_UP_PAGES`], the writer itself copies the rest of it (the frames
//! the checkpoint thread has not copied yet: no commit runs meanwhile, so it gets to the end)
//! and its next commit starts the log again; a log past [`WAL_LIMIT_PAGES`] all the same (a
//! reader held it at every try) is checkpointed by the writer waiting for the readers. The
//! checkpoint thread never takes SQLite's write lock; the writer waits for a copy of the
//! checkpoint thread's under way only past twice [`CATCH_UP_PAGES`] (else the log would grow
//! all the while), and holds the checkpoint thread off from its catch-up to the end of its next
//! commit, which starts the log again. The
//! verdicts under their content keys are also kept in memory (the last [`MEMO_VERDICTS`]), so
//! a cache hit is answered without a query.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{mpsc as std_mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, OptionalExtension};
use swe_eval_core::predictions::Prediction;
use tokio::sync::oneshot;

use super::evaluation::{Evaluation, Executed, State};
use super::memo::Memo;
use super::metrics::Histogram;

/// The schema version this build writes and reads.
const SCHEMA_VERSION: i64 = 1;

/// How often, at most, the checkpoint thread copies the log into the database while writes
/// come (each checkpoint syncs the log and the database to disk).
pub const CHECKPOINT_EVERY: Duration = Duration::from_millis(250);

/// Pages (4 KiB) of log past which the writer, after a commit, copies what the checkpoint
/// thread has not (4 MiB), so that its next commit starts the log from its beginning.
pub const CATCH_UP_PAGES: i64 = 1_024;

/// Pages (4 KiB) of log past which the writer's checkpoint also waits for the readers (128
/// MiB): reached only when a reader held the log at every catch-up since [`CATCH_UP_PAGES`].
pub const WAL_LIMIT_PAGES: i64 = 32_768;

/// Verdicts (by content key) kept in memory in front of the database.
pub const MEMO_VERDICTS: usize = 16_384;

/// The database file in a state folder.
pub fn db_path(state: &Path) -> PathBuf {
    state.join("serve.sqlite")
}

/// Why the state could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed.
    #[error("state database {path}: {source}")]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// The database was written by a newer swe-eval.
    #[error("state database {path} has schema version {found}, newer than this swe-eval's {SCHEMA_VERSION}: use a newer swe-eval or another --state folder")]
    Newer {
        /// The database file.
        path: PathBuf,
        /// Its version.
        found: i64,
    },
    /// A stored result could not be read.
    #[error("state database {path}: request {id}: {message}")]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// The request.
        id: String,
        /// What is wrong.
        message: String,
    },
    /// The writer thread could not commit a write (every write of its batch gets this error).
    #[error("state database {path}: cannot commit: {source}")]
    Commit {
        /// The database file.
        path: PathBuf,
        /// SQLite's error, shared by the batch's writes.
        #[source]
        source: Arc<rusqlite::Error>,
    },
    /// The writer thread is gone (the store is closed).
    #[error("state database {path}: closed")]
    Closed {
        /// The database file.
        path: PathBuf,
    },
}

/// One accepted request, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Its number (the id is `e<seq>`).
    pub seq: u64,
    /// The instance.
    pub instance_id: String,
    /// The model.
    pub model: String,
    /// The sample.
    pub sample: u32,
    /// The patch.
    pub patch: String,
    /// The content key ("" when not executed).
    pub key: String,
    /// Execution asked for.
    pub execute: bool,
    /// The deadline, in milliseconds since the Unix epoch.
    pub deadline_ms: Option<i64>,
    /// When it was accepted, in milliseconds since the Unix epoch.
    pub accepted_ms: i64,
    /// The similarity.
    pub similarity: f64,
    /// The reward.
    pub reward: f64,
    /// The reward's format verdict.
    pub format: String,
    /// The executed outcome, once known.
    pub outcome: Option<Executed>,
    /// The outcome came from the cache (or a simultaneous identical request).
    pub cached: bool,
    /// The request is done (an outcome, or no execution asked).
    pub done: bool,
}

impl Row {
    /// The prediction it asks to evaluate.
    pub fn prediction(&self) -> Prediction {
        Prediction {
            instance_id: self.instance_id.clone(),
            model_name_or_path: self.model.clone(),
            model_patch: Some(self.patch.clone()),
            sample: self.sample,
            line: None,
            extra: Default::default(),
        }
    }

    /// The id a client uses.
    pub fn id(&self) -> String {
        format!("e{}", self.seq)
    }

    /// The request as a trainer reads it.
    pub fn evaluation(&self) -> Evaluation {
        Evaluation {
            id: self.id(),
            instance_id: self.instance_id.clone(),
            model_name_or_path: self.model.clone(),
            sample: self.sample,
            state: if self.done {
                State::Done
            } else {
                State::Queued
            },
            similarity: self.similarity,
            reward: self.reward,
            format: self.format.clone(),
            execute: self.execute,
            outcome: self.outcome.clone(),
            cached: self.cached,
        }
    }
}

/// The seq of an id (`e<seq>`), if it is one.
pub fn parse_id(id: &str) -> Option<u64> {
    let digits = id.strip_prefix('e')?;
    if digits.is_empty() || digits.len() > 19 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// A write for the writer thread.
enum Write {
    /// New requests (done ones with their outcome).
    Insert(Vec<Row>),
    /// Requests finished: (seq, outcome, cached); and the outcome under its key, when it may
    /// answer identical requests.
    Finish {
        done: Vec<(u64, Executed, bool)>,
        cache: Option<Box<(String, Executed)>>,
    },
}

struct Job {
    write: Write,
    ack: oneshot::Sender<Result<(), Arc<rusqlite::Error>>>,
}

/// The state database: a writer thread, a checkpoint thread and a read connection.
pub struct Store {
    path: PathBuf,
    tx: Mutex<Option<std_mpsc::Sender<Job>>>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    checkpointer: Mutex<Option<std::thread::JoinHandle<()>>>,
    read: Mutex<Connection>,
    /// The last verdicts cached or read, by content key.
    memo: Mutex<Memo<String, Executed>>,
    /// How long each commit of the writer took.
    commits: Arc<Histogram>,
    /// Pages in the log after the last commit.
    log: Arc<AtomicI64>,
}

fn sqlite(path: &Path) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |source| StoreError::Sqlite {
        path: path.to_path_buf(),
        source,
    }
}

fn sqlite_owned(path: PathBuf) -> impl Fn(rusqlite::Error) -> StoreError {
    move |source| StoreError::Sqlite {
        path: path.clone(),
        source,
    }
}

fn to_ms(t: std::time::SystemTime) -> i64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    to_ms(std::time::SystemTime::now())
}

impl Store {
    /// Opens (or creates) the database in `state`.
    pub fn open(state: &Path) -> Result<Store, StoreError> {
        let path = db_path(state);
        let err = sqlite_owned(path.clone());
        let mut conn = Connection::open(&path).map_err(&err)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(&err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(&err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(&err)?;
        // Checkpoints are the checkpoint thread's; a log emptied by one is cut back to 64 MiB.
        conn.pragma_update(None, "wal_autocheckpoint", 0)
            .map_err(&err)?;
        conn.pragma_update(None, "journal_size_limit", 64 * 1024 * 1024)
            .map_err(&err)?;
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(&err)?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::Newer {
                path,
                found: version,
            });
        }
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS requests (
                seq INTEGER PRIMARY KEY,
                instance_id TEXT NOT NULL,
                model TEXT NOT NULL,
                sample INTEGER NOT NULL,
                patch TEXT NOT NULL,
                key TEXT NOT NULL,
                execute INTEGER NOT NULL,
                deadline_ms INTEGER,
                accepted_ms INTEGER NOT NULL,
                similarity REAL NOT NULL,
                reward REAL NOT NULL,
                format TEXT NOT NULL,
                done INTEGER NOT NULL,
                cached INTEGER NOT NULL,
                outcome TEXT,
                finished_ms INTEGER
            );
            CREATE INDEX IF NOT EXISTS requests_pending ON requests(done) WHERE done = 0;
            CREATE TABLE IF NOT EXISTS results (
                key TEXT PRIMARY KEY,
                outcome TEXT NOT NULL,
                created_ms INTEGER NOT NULL
            );",
        )
        .map_err(&err)?;
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(&err)?;
        // After each commit SQLite tells the pages in the log (set after wal_autocheckpoint,
        // which would replace it).
        let log = Arc::new(AtomicI64::new(0));
        let counted = log.clone();
        conn.wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, pages| {
            counted.store(i64::from(pages), Ordering::Relaxed);
            Ok(())
        }))
        .map_err(&err)?;
        let read = Connection::open(&path).map_err(&err)?;
        read.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(&err)?;
        let check = Connection::open(&path).map_err(&err)?;
        check
            .busy_timeout(std::time::Duration::from_secs(10))
            .map_err(&err)?;
        let thread_failed = |what: &str, e: std::io::Error| StoreError::Corrupt {
            path: path.clone(),
            id: "-".into(),
            message: format!("cannot start the {what} thread: {e}"),
        };
        // The writer signals the first commit after each checkpoint; the checkpoint thread
        // runs once for all the commits since.
        let (wrote, written) = std_mpsc::sync_channel::<()>(1);
        let due = Arc::new(AtomicBool::new(false));
        let checked = due.clone();
        // Held by the checkpoint thread while it copies, and by the writer while it catches up
        // until its next commit has started the log again.
        let copying = Arc::new(Mutex::new(()));
        let copier = copying.clone();
        let checkpointer = std::thread::Builder::new()
            .name("swe-eval-checkpoint".into())
            .spawn(move || checkpoint_loop(check, written, &checked, &copier))
            .map_err(|e| thread_failed("checkpoint", e))?;
        let commits = Arc::new(Histogram::default());
        let (tx, rx) = std_mpsc::channel::<Job>();
        let timed = commits.clone();
        let logged = log.clone();
        let writer = std::thread::Builder::new()
            .name("swe-eval-state".into())
            .spawn(move || write_loop(conn, rx, wrote, &due, &timed, &logged, &copying))
            .map_err(|e| thread_failed("writer", e))?;
        Ok(Store {
            path,
            tx: Mutex::new(Some(tx)),
            writer: Mutex::new(Some(writer)),
            checkpointer: Mutex::new(Some(checkpointer)),
            read: Mutex::new(read),
            memo: Mutex::new(Memo::new(MEMO_VERDICTS)),
            commits,
            log,
        })
    }

    /// How long the writer's commits took (each commits every write waiting), with the
    /// log's catch-up when one followed a commit.
    pub fn commit_latency(&self) -> &Histogram {
        &self.commits
    }

    /// Pages (4 KiB) in the state's log after the last commit.
    pub fn log_pages(&self) -> i64 {
        self.log.load(Ordering::Relaxed)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    async fn write(&self, write: Write) -> Result<(), StoreError> {
        let (ack, done) = oneshot::channel();
        let sent = {
            let tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
            tx.as_ref()
                .is_some_and(|tx| tx.send(Job { write, ack }).is_ok())
        };
        let closed = || StoreError::Closed {
            path: self.path.clone(),
        };
        if !sent {
            return Err(closed());
        }
        match done.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(source)) => Err(StoreError::Commit {
                path: self.path.clone(),
                source,
            }),
            Err(_) => Err(closed()),
        }
    }

    /// Stores new requests (committed when this returns).
    pub async fn insert(&self, rows: Vec<Row>) -> Result<(), StoreError> {
        self.write(Write::Insert(rows)).await
    }

    /// Stores requests' outcomes, and `cache` under its key (committed when this returns).
    pub async fn finish(
        &self,
        done: Vec<(u64, Executed, bool)>,
        cache: Option<(String, Executed)>,
    ) -> Result<(), StoreError> {
        let memo = cache.clone();
        self.write(Write::Finish {
            done,
            cache: cache.map(Box::new),
        })
        .await?;
        if let Some((key, outcome)) = memo {
            self.memo().insert(key, outcome);
        }
        Ok(())
    }

    fn memo(&self) -> std::sync::MutexGuard<'_, Memo<String, Executed>> {
        self.memo.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn reader(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.read.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cached outcome of content key `key`, if any.
    pub fn cached(&self, key: &str) -> Result<Option<Executed>, StoreError> {
        if let Some(hit) = self.memo().get(key) {
            return Ok(Some(hit));
        }
        let text: Option<String> = {
            let conn = self.reader();
            conn.prepare("SELECT outcome FROM results WHERE key = ?1")
                .and_then(|mut s| s.query_row(params![key], |r| r.get(0)).optional())
                .map_err(sqlite(&self.path))?
        };
        let Some(text) = text else { return Ok(None) };
        let outcome: Executed = serde_json::from_str(&text).map_err(|e| StoreError::Corrupt {
            path: self.path.clone(),
            id: format!("cache {key}"),
            message: e.to_string(),
        })?;
        self.memo().insert(key.to_string(), outcome.clone());
        Ok(Some(outcome))
    }

    /// The request `seq`, if stored.
    pub fn get(&self, seq: u64) -> Result<Option<Row>, StoreError> {
        let conn = self.reader();
        let mut stmt = conn
            .prepare(&format!("{SELECT} WHERE seq = ?1"))
            .map_err(sqlite(&self.path))?;
        let row = stmt
            .query_row(params![seq as i64], raw_row)
            .optional()
            .map_err(sqlite(&self.path))?;
        row.map(|r| self.row(r)).transpose()
    }

    /// The highest request number stored (0 when none).
    pub fn max_seq(&self) -> Result<u64, StoreError> {
        let conn = self.reader();
        let max: Option<i64> = conn
            .query_row("SELECT MAX(seq) FROM requests", [], |r| r.get(0))
            .map_err(sqlite(&self.path))?;
        Ok(max.unwrap_or(0).max(0) as u64)
    }

    /// Every request not done, oldest first.
    pub fn pending(&self) -> Result<Vec<Row>, StoreError> {
        self.rows("WHERE done = 0 ORDER BY seq", 0)
    }

    /// Every request from `since` (a seq) on, oldest first.
    pub fn since(&self, since: u64) -> Result<Vec<Row>, StoreError> {
        self.rows("WHERE seq >= ?1 ORDER BY seq", since)
    }

    fn rows(&self, tail: &str, arg: u64) -> Result<Vec<Row>, StoreError> {
        let conn = self.reader();
        let mut stmt = conn
            .prepare(&format!("{SELECT} {tail}"))
            .map_err(sqlite(&self.path))?;
        let raws: Vec<RawRow> = if tail.contains("?1") {
            stmt.query_map(params![arg as i64], raw_row)
                .and_then(|rows| rows.collect())
        } else {
            stmt.query_map([], raw_row).and_then(|rows| rows.collect())
        }
        .map_err(sqlite(&self.path))?;
        drop(stmt);
        drop(conn);
        raws.into_iter().map(|r| self.row(r)).collect()
    }

    fn row(&self, r: RawRow) -> Result<Row, StoreError> {
        let outcome = match &r.outcome {
            Some(t) => Some(serde_json::from_str(t).map_err(|e| StoreError::Corrupt {
                path: self.path.clone(),
                id: format!("e{}", r.seq),
                message: e.to_string(),
            })?),
            None => None,
        };
        Ok(Row {
            seq: r.seq.max(0) as u64,
            instance_id: r.instance_id,
            model: r.model,
            sample: u32::try_from(r.sample).unwrap_or(0),
            patch: r.patch,
            key: r.key,
            execute: r.execute,
            deadline_ms: r.deadline_ms,
            accepted_ms: r.accepted_ms,
            similarity: r.similarity,
            reward: r.reward,
            format: r.format,
            outcome,
            cached: r.cached,
            done: r.done,
        })
    }

    /// Stops the writer once every write sent is committed.
    pub fn close(&self) {
        self.tx.lock().unwrap_or_else(|p| p.into_inner()).take();
        // The writer ends, and with it the checkpoint thread's signal.
        for thread in [&self.writer, &self.checkpointer] {
            if let Some(h) = thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
                let _ = h.join();
            }
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.close();
    }
}

const SELECT: &str = "SELECT seq, instance_id, model, sample, patch, key, execute, deadline_ms, \
     accepted_ms, similarity, reward, format, done, cached, outcome FROM requests";

struct RawRow {
    seq: i64,
    instance_id: String,
    model: String,
    sample: i64,
    patch: String,
    key: String,
    execute: bool,
    deadline_ms: Option<i64>,
    accepted_ms: i64,
    similarity: f64,
    reward: f64,
    format: String,
    done: bool,
    cached: bool,
    outcome: Option<String>,
}

fn raw_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawRow> {
    Ok(RawRow {
        seq: r.get(0)?,
        instance_id: r.get(1)?,
        model: r.get(2)?,
        sample: r.get(3)?,
        patch: r.get(4)?,
        key: r.get(5)?,
        execute: r.get(6)?,
        deadline_ms: r.get(7)?,
        accepted_ms: r.get(8)?,
        similarity: r.get(9)?,
        reward: r.get(10)?,
        format: r.get(11)?,
        done: r.get(12)?,
        cached: r.get(13)?,
        outcome: r.get(14)?,
    })
}

/// The writer thread: takes every write waiting, commits them in one transaction, then
/// acknowledges each, tells the checkpoint thread and, past [`CATCH_UP_PAGES`] of log, copies
/// the rest of the log itself. Ends when the store is closed.
fn write_loop(
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

/// The checkpoint thread: after commits, copies the log into the database (a passive
/// checkpoint: the writer goes on meanwhile), at most every [`CHECKPOINT_EVERY`]. Ends when
/// the writer does.
fn checkpoint_loop(
    conn: Connection,
    written: std_mpsc::Receiver<()>,
    due: &AtomicBool,
    copying: &Mutex<()>,
) {
    let mut last: Option<Instant> = None;
    while written.recv().is_ok() {
        // No signal comes while `due` is set: this wait ends at its time, or when the writer
        // ends.
        if let Some(left) =
            last.map(|at| (at + CHECKPOINT_EVERY).saturating_duration_since(Instant::now()))
        {
            if !left.is_zero()
                && written.recv_timeout(left) == Err(std_mpsc::RecvTimeoutError::Disconnected)
            {
                return;
            }
        }
        // Commits from now on call for the next checkpoint.
        due.store(false, Ordering::Release);
        // Errors are left to the next checkpoint (or the last connection's, at close).
        {
            let _copying = copying.lock().unwrap_or_else(|p| p.into_inner());
            let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
        }
        last = Some(Instant::now());
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

fn outcome_json(o: &Executed) -> String {
    serde_json::to_string(o).expect("an outcome serializes")
}

impl swe_eval_core::failure::Classify for StoreError {
    fn kind(&self) -> swe_eval_core::failure::ErrorKind {
        match self {
            // A newer swe-eval's state: the message says to use it, or another folder.
            StoreError::Newer { .. } => swe_eval_core::failure::ErrorKind::Usage,
            _ => swe_eval_core::failure::ErrorKind::Failed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluator::evaluation::{GradedBy, Status};

    fn row(seq: u64, done: bool) -> Row {
        Row {
            seq,
            instance_id: "a__b-1".into(),
            model: "m".into(),
            sample: 0,
            patch: "diff".into(),
            key: "k1".into(),
            execute: true,
            deadline_ms: Some(5),
            accepted_ms: 1,
            similarity: 0.5,
            reward: 0.5,
            format: "ok".into(),
            outcome: None,
            cached: false,
            done,
        }
    }

    #[tokio::test]
    async fn requests_and_results_survive_a_reopen_and_pending_ones_are_listed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store
            .insert(vec![row(1, false), row(2, false)])
            .await
            .unwrap();
        let outcome = Executed::masked(Status::InfraError, "daemon gone".into(), GradedBy::Strict);
        store
            .finish(
                vec![(1, outcome.clone(), false)],
                Some(("k1".into(), outcome.clone())),
            )
            .await
            .unwrap();
        // A second finish of a done request changes nothing.
        let other = Executed::masked(Status::Timeout, "late".into(), GradedBy::Strict);
        store.finish(vec![(1, other, true)], None).await.unwrap();
        drop(store);

        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.max_seq().unwrap(), 2);
        let one = store.get(1).unwrap().unwrap();
        assert!(one.done && !one.cached);
        assert_eq!(one.outcome, Some(outcome.clone()));
        assert_eq!(store.cached("k1").unwrap(), Some(outcome));
        assert_eq!(store.cached("k2").unwrap(), None);
        let pending: Vec<u64> = store.pending().unwrap().iter().map(|r| r.seq).collect();
        assert_eq!(pending, [2]);
        assert_eq!(store.get(3).unwrap(), None);
        assert_eq!(store.since(2).unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_failed_commit_is_a_typed_error_with_sqlites_cause_and_the_writer_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store.insert(vec![row(1, false)]).await.unwrap();
        // The same seq again breaks the primary key: the commit fails and is rolled back.
        let err = store.insert(vec![row(1, false)]).await.unwrap_err();
        let StoreError::Commit { path, source } = &err else {
            panic!("not a commit error: {err:?}");
        };
        assert_eq!(path, &db_path(dir.path()));
        assert!(
            matches!(**source, rusqlite::Error::SqliteFailure(ref e, _)
                if e.code == rusqlite::ErrorCode::ConstraintViolation),
            "{source:?}"
        );
        let text = err.to_string();
        assert!(
            text.contains("cannot commit") && text.contains(&source.to_string()),
            "{text}"
        );
        assert!(std::error::Error::source(&err).is_some());
        // The writer still commits what comes next.
        store.insert(vec![row(2, false)]).await.unwrap();
        assert_eq!(store.max_seq().unwrap(), 2);
    }

    #[tokio::test]
    async fn a_cached_verdict_is_answered_from_memory_in_front_of_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let outcome = Executed::masked(Status::Timeout, "slow".into(), GradedBy::Strict);
        store
            .finish(Vec::new(), Some(("k1".into(), outcome.clone())))
            .await
            .unwrap();
        assert_eq!(store.cached("k1").unwrap(), Some(outcome.clone()));
        // Another connection removes it from the database: the memory still answers.
        let other = Connection::open(db_path(dir.path())).unwrap();
        other.busy_timeout(Duration::from_secs(10)).unwrap();
        other.execute("DELETE FROM results", []).unwrap();
        assert_eq!(store.cached("k1").unwrap(), Some(outcome.clone()));
        assert_eq!(store.cached("k2").unwrap(), None);
        // One read from the database is kept too.
        let read = Executed::masked(Status::InfraError, "gone".into(), GradedBy::Strict);
        other
            .execute(
                "INSERT INTO results (key, outcome, created_ms) VALUES ('k3', ?1, 0)",
                params![outcome_json(&read)],
            )
            .unwrap();
        assert_eq!(store.cached("k3").unwrap(), Some(read.clone()));
        other.execute("DELETE FROM results", []).unwrap();
        assert_eq!(store.cached("k3").unwrap(), Some(read));
        drop(store);
        // A new store starts with nothing in memory.
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.cached("k1").unwrap(), None);
        // Commits were timed.
        store.insert(vec![row(1, false)]).await.unwrap();
        assert_eq!(store.commit_latency().read().0.last(), Some(&1));
    }

    #[tokio::test]
    async fn the_checkpoint_thread_copies_commits_into_the_database_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let db = db_path(dir.path());
        let size = || std::fs::metadata(&db).unwrap().len();
        let before = size();
        let rows: Vec<Row> = (1..=200)
            .map(|seq| Row {
                patch: "x".repeat(2000),
                ..row(seq, false)
            })
            .collect();
        store.insert(rows).await.unwrap();
        // The writer checkpoints nothing itself: the rows reach the file through the thread.
        let until = Instant::now() + Duration::from_secs(30);
        while size() < before + 200 * 2000 && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(size() >= before + 200 * 2000, "{before} -> {}", size());
        assert_eq!(store.pending().unwrap().len(), 200);
    }

    #[tokio::test]
    async fn under_writes_that_never_pause_the_log_starts_again_from_its_beginning() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let wal = dir.path().join("serve.sqlite-wal");
        // One commit after another, each waiting for the last, for several checkpoint
        // periods: a checkpoint never finds the log at rest, and every commit adds pages.
        let started = Instant::now();
        let mut seq = 0;
        let mut largest = 0;
        while seq < 4_000 || started.elapsed() < CHECKPOINT_EVERY * 8 {
            seq += 1;
            let r = Row {
                patch: "x".repeat(1_000),
                ..row(seq, false)
            };
            store.insert(vec![r]).await.unwrap();
            largest = largest.max(std::fs::metadata(&wal).map_or(0, |m| m.len()));
        }
        let pages = store.log_pages();
        // Never started again, the log would hold every commit's pages (at least one each).
        assert!(
            seq > 2 * CATCH_UP_PAGES as u64,
            "{seq} commits: too few to tell"
        );
        assert!(
            largest <= 4 * CATCH_UP_PAGES as u64 * 4096,
            "{seq} commits: the log file reached {largest} bytes ({pages} pages now)"
        );
        // Nothing accepted is lost.
        assert_eq!(store.pending().unwrap().len() as u64, seq);
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.max_seq().unwrap(), seq);
    }

    #[tokio::test]
    async fn a_reader_on_an_old_snapshot_holds_the_log_and_once_it_ends_the_log_starts_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut seq = 0;
        let mut commit = || {
            seq += 1;
            let r = Row {
                patch: "x".repeat(4_000),
                ..row(seq, false)
            };
            store.insert(vec![r])
        };
        commit().await.unwrap();
        // A reader in the middle of a long read: no checkpoint may copy past its snapshot.
        let reader = Connection::open(db_path(dir.path())).unwrap();
        reader.execute_batch("BEGIN").unwrap();
        let seen: i64 = reader
            .query_row("SELECT COUNT(*) FROM requests", [], |r| r.get(0))
            .unwrap();
        assert_eq!(seen, 1);
        while store.log_pages() <= 2 * CATCH_UP_PAGES {
            commit().await.unwrap();
        }
        // Its snapshot is still the one it began with; the writes went on.
        let still: i64 = reader
            .query_row("SELECT COUNT(*) FROM requests", [], |r| r.get(0))
            .unwrap();
        assert_eq!(still, 1);
        reader.execute_batch("COMMIT").unwrap();
        drop(reader);
        // Once it is gone, the next commits copy the log and start it from its beginning.
        let mut after = 0;
        while store.log_pages() > CATCH_UP_PAGES && after < 100 {
            commit().await.unwrap();
            after += 1;
        }
        assert!(
            store.log_pages() <= CATCH_UP_PAGES,
            "{after} commits after the reader ended: {} pages in the log",
            store.log_pages()
        );
        // Every commit is stored, none twice (the rows are numbered 1, 2, ...).
        assert_eq!(
            store.pending().unwrap().len() as u64,
            store.max_seq().unwrap()
        );
    }

    #[test]
    fn ids_are_e_and_a_number() {
        assert_eq!(parse_id("e12"), Some(12));
        for bad in ["", "e", "12", "e-1", "e1x", "E1", "e99999999999999999999"] {
            assert_eq!(parse_id(bad), None, "{bad}");
        }
    }
}
