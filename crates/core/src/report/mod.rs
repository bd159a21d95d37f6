//! Wire formats: the official per-instance `report.json`, the official run summary
//! `<model>.<run_id>.json` (schema_version 2, plus swe-eval's own fields), and one row per
//! prediction (JSON Lines and CSV) for analyses, and `validate`'s flaky map (`flaky`). These
//! are separate from the grading types so the files keep the official shape whatever the domain
//! types become; every writer is atomic.
//!
//! JSON is written as the official harness writes it (`json.dumps(..., indent=4)`: four-space
//! indent, non-ASCII escaped as `\uXXXX`), so a report is byte-identical to the official one.

mod error;
mod flaky;
mod html;
mod instance;
mod logs;
mod pyjson;
mod ran;
mod regrade;
mod rows;
mod summary;

pub use error::ReportError;
pub use flaky::{
    flaky_map_text, parse_flaky_map, read_flaky_map, FlakyMap, FlakyRow, TestFlip, MISSING,
};
pub use html::{
    failing_tests, records_for_grading, tail as log_tail, write as write_html, write_graded,
    FailingTest, Heading, Record, Text, LOG_TAIL_LINES, MAX_LOG_TAIL,
};
pub use instance::{
    instance_report_json, read_instance_report, write_instance_report, GroupReport, InstanceReport,
    TestsStatusReport, REPORT_FILE, TEST_OUTPUT_FILE,
};
pub use logs::{
    read_instance_dir, SavedLog, SavedLogError, SavedLogs, RUN_INSTANCE_LOG, VERDICT_FILE,
};
pub use pyjson::{to_python_json, to_python_json_indent};
pub use ran::{check_folder, check_log, check_output, diff_base, Basis, Check, PATCH_FILE};
pub use regrade::{
    grade_all, load_inputs, log_key, prediction_at, read_logs, regrade, Group, RegradeError,
    RegradeOptions, Regraded,
};
pub use rows::{write_rows_csv, write_rows_jsonl, PredictionRow, Timings};
pub use summary::{write_run_summary, RunSummary, Submitted};
