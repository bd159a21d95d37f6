//! The `Store`: opening the database, the reads (on a connection of their own), the writes
//! handed to the writer thread, and the verdicts under their content keys kept in memory (the
//! last [`MEMO_VERDICTS`]), so a cache hit is answered without a query.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{mpsc as std_mpsc, Arc, Mutex};

use rusqlite::{params, Connection, OptionalExtension};
use tokio::sync::oneshot;

use super::checkpoint::checkpoint_loop;
use super::error::StoreError;
use super::rows::{raw_row, RawRow, Row, SCHEMA_VERSION, SELECT};
use super::writer::{write_loop, Job, Write};
use crate::evaluator::evaluation::Executed;
use crate::evaluator::memo::Memo;
use crate::evaluator::metrics::Histogram;

/// Verdicts (by content key) kept in memory in front of the database.
const MEMO_VERDICTS: usize = 16_384;

/// The database file in a state folder.
pub fn db_path(state: &Path) -> PathBuf {
    state.join("serve.sqlite")
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
