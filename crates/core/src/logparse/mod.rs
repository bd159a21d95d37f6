//! Test-log parsers, one per test framework: log text in, a map from test name to status out.
//!
//! The parsers follow the official SWE-bench harness (v4.1.0 `log_parsers/python.py`, whose
//! names SWE-bench 5 rows carry in their `log_parser` field) line for line, including its
//! quirks, because a verdict only counts when it is the one the official harness would give.
//! [`parse`] picks a parser by its official name; [`parser_for_repo`] gives the name the
//! official harness uses for a repository; [`test_section`] and [`test_exit_code`] read the
//! markers the eval script prints around the test command.

mod log;
mod parsers;
mod python;
mod status;

pub use log::{
    bad_marker, parse_test_log, test_exit_code, test_section, universal_newlines, LogReading,
    APPLY_PATCH_FAIL, BAD_MARKERS, END_TEST_OUTPUT, RESET_FAILED, START_TEST_OUTPUT, TESTS_ERROR,
    TESTS_TIMEOUT, TEST_EXIT_CODE,
};
pub use parsers::{
    canonical_parser, known_parser_for_repo, parse, parser_for_repo, UnknownParser, PARSER_NAMES,
};
pub use status::{StatusMap, TestStatus};
