//! The checkpoint thread.
//!
//! The log is copied into the database (a checkpoint, which syncs both files to disk) by a
//! thread of its own, at most every [`CHECKPOINT_EVERY`] while writes come, so no commit waits
//! for a sync. The checkpoint thread never takes SQLite's write lock (the writer's catch-up,
//! in `writer.rs`, is what lets the log start again under writes that never pause).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc as std_mpsc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::Connection;

/// How often, at most, the checkpoint thread copies the log into the database while writes
/// come (each checkpoint syncs the log and the database to disk).
pub(super) const CHECKPOINT_EVERY: Duration = Duration::from_millis(250);

/// The checkpoint thread: after commits, copies the log into the database (a passive
/// checkpoint: the writer goes on meanwhile), at most every [`CHECKPOINT_EVERY`]. Ends when
/// the writer does.
pub(super) fn checkpoint_loop(
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
