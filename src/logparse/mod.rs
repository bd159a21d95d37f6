//! Test-log parsers, one per test framework: log text in, a map from test name to status out.

use std::collections::HashMap;

/// A test's status as the official harness's parsers report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum TestStatus {
    Passed,
    Failed,
    Skipped,
    Error,
    Xfail,
}

/// Test name -> status.
pub type StatusMap = HashMap<String, TestStatus>;
