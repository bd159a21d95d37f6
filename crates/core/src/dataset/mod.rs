//! SWE-bench dataset rows and their loaders.
//!
//! Rows come as a JSON list, JSON Lines, or Parquet (as Hugging Face ships SWE-bench Verified).
//! `FAIL_TO_PASS`/`PASS_TO_PASS` may be JSON-encoded strings (Hugging Face) or plain lists.
//! Fields this crate does not know are kept in `extra`, so nothing a newer dataset carries is
//! lost when rows are written back out. A malformed row is reported with its file, line and
//! field and the other rows still load.

mod instance;
mod json_rows;
mod load;
mod loaded;
mod parquet_rows;

pub use instance::Instance;
pub use json_rows::instance_from_value;
pub use json_rows::{json_values, kind_of};
pub use load::{load, load_dataset, load_dataset_files, load_with_gold, no_rows, Dataset};
pub use loaded::{InputProblem, LoadError, Loaded, Location, RowError};
