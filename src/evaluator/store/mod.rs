//! The evaluator's state in SQLite (`<state>/serve.sqlite`): every accepted request and its
//! result, and the results by content key (the cache), so a server killed outright finishes
//! every accepted request once after a restart and answers the finished ones.
//!
//! The database is in WAL mode with `synchronous=NORMAL`: a committed transaction survives the
//! process being killed (only an operating-system crash can lose the last ones). Its files:
//! - `rows`: the schema, a stored request (`Row`) and how a row is read;
//! - `error`: why the state could not be read or written;
//! - `handle`: the `Store` (opening, reads on a connection of their own, the writes handed to
//!   the writer, the verdicts by content key kept in memory in front of the database);
//! - `writer`: the one writer thread (group commit, each write acknowledged once committed)
//!   and its catch-up of the log;
//! - `checkpoint`: the checkpoint thread, which copies the log into the database.

mod checkpoint;
mod error;
mod handle;
mod rows;
mod writer;

#[cfg(test)]
mod tests;

pub use error::StoreError;
pub use handle::{db_path, Store};
pub use rows::{now_ms, parse_id, Row};
