//! The state's tests: requests and results through a reopen, a failed commit, the memory in
//! front of the cache, the checkpoints, the log started again under writes that never pause and
//! after a reader held it, and the ids.

use super::checkpoint::CHECKPOINT_EVERY;
use super::rows::outcome_json;
use super::writer::CATCH_UP_PAGES;
use super::*;
use std::time::{Duration, Instant};

use rusqlite::{params, Connection};

use crate::evaluator::evaluation::{Executed, GradedBy, Status};

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
