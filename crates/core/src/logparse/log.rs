//! Reading an eval script's log: the markers it prints around the test command
//! ([`test_section`], [`test_exit_code`]), the markers of a failed setup, and
//! [`parse_test_log`], which parses the test section (or the whole log when it has none).

use std::borrow::Cow;

use super::parsers::{canonical_parser, parse, UnknownParser};
use super::status::StatusMap;

/// Marker the eval script prints just before the test command.
pub const START_TEST_OUTPUT: &str = ">>>>> Start Test Output";

/// Marker the eval script prints just after the test command.
pub const END_TEST_OUTPUT: &str = ">>>>> End Test Output";

/// Marker SWE-bench 5 eval scripts print after the end marker with the test command's status.
pub const TEST_EXIT_CODE: &str = ">>>>> Test Exit Code: ";

/// Markers whose presence anywhere in a log makes the official harness discard the run.
pub const APPLY_PATCH_FAIL: &str = ">>>>> Patch Apply Failed";

/// The reset of the repository before the tests failed.
pub const RESET_FAILED: &str = ">>>>> Reset Failed";

/// The test command errored.
pub const TESTS_ERROR: &str = ">>>>> Tests Errored";

/// The tests ran past their timeout.
pub const TESTS_TIMEOUT: &str = ">>>>> Tests Timed Out";

/// Failure markers in the order the official harness checks them.
pub const BAD_MARKERS: [&str; 4] = [APPLY_PATCH_FAIL, RESET_FAILED, TESTS_ERROR, TESTS_TIMEOUT];

/// The text the official harness parses: after the first start marker, up to the first end
/// marker (or a second start marker) after it. `None` when either marker is missing.
pub fn test_section(log: &str) -> Option<&str> {
    if !(log.contains(START_TEST_OUTPUT) && log.contains(END_TEST_OUTPUT)) {
        return None;
    }
    let start = log.find(START_TEST_OUTPUT)? + START_TEST_OUTPUT.len();
    let rest = &log[start..];
    // Official: content.split(START)[1].split(END)[0].
    let rest = rest.find(START_TEST_OUTPUT).map_or(rest, |i| &rest[..i]);
    Some(rest.find(END_TEST_OUTPUT).map_or(rest, |i| &rest[..i]))
}

/// The test command's exit status from a `>>>>> Test Exit Code: N` line after the end marker
/// (the last such line, so a test cannot forge it by printing one itself), if present.
pub fn test_exit_code(log: &str) -> Option<i32> {
    let tail = &log[log.rfind(END_TEST_OUTPUT)? + END_TEST_OUTPUT.len()..];
    tail.lines().rev().find_map(|line| {
        let at = line.find(TEST_EXIT_CODE)?;
        let digits: String = line[at + TEST_EXIT_CODE.len()..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '-')
            .collect();
        digits.parse().ok()
    })
}

/// The first failure marker the log contains, if any (the official harness then discards it).
pub fn bad_marker(log: &str) -> Option<&'static str> {
    BAD_MARKERS.into_iter().find(|m| log.contains(m))
}

/// What the official harness reads from a whole test log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogReading {
    /// A failure marker was found; the official harness grades nothing.
    BadMarker(&'static str),
    /// The start or end marker is missing; the official harness grades nothing.
    MissingMarkers,
    /// Statuses parsed from the section between the markers, or from the whole log when the
    /// section gave none (as the official harness falls back).
    Parsed {
        /// Test name to status.
        statuses: StatusMap,
        /// True when the statuses came from the whole-log fallback.
        from_whole_log: bool,
    },
}

/// The log as Python's text-mode `open()` returns it (universal newlines): `\r\n` and lone
/// `\r` become `\n`. The official harness reads `test_output.txt` that way before parsing, so
/// a carriage return (progress bars) splits lines for its parsers.
pub fn universal_newlines(log: &str) -> Cow<'_, str> {
    if log.contains('\r') {
        Cow::Owned(log.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Cow::Borrowed(log)
    }
}

/// Reads a whole test log as the official `get_logs_eval` does (after
/// [`universal_newlines`], as it reads the log file in text mode).
pub fn parse_test_log(parser_name: &str, log: &str) -> Result<LogReading, UnknownParser> {
    canonical_parser(parser_name).ok_or_else(|| UnknownParser {
        name: parser_name.to_string(),
    })?;
    let log = universal_newlines(log);
    let log = log.as_ref();
    if let Some(m) = bad_marker(log) {
        return Ok(LogReading::BadMarker(m));
    }
    let Some(section) = test_section(log) else {
        return Ok(LogReading::MissingMarkers);
    };
    let statuses = parse(parser_name, section)?;
    if !statuses.is_empty() {
        return Ok(LogReading::Parsed {
            statuses,
            from_whole_log: false,
        });
    }
    Ok(LogReading::Parsed {
        statuses: parse(parser_name, log)?,
        from_whole_log: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logparse::TestStatus;

    #[test]
    fn section_follows_official_split_semantics() {
        let log = "pre\n>>>>> Start Test Output'\nPASSED a\n>>>>> End Test Output'\npost";
        assert_eq!(test_section(log), Some("'\nPASSED a\n"));
        assert_eq!(
            test_section("no markers"),
            None,
            "both markers are required"
        );
        assert_eq!(
            test_section(">>>>> Start Test Output only"),
            None,
            "end marker missing"
        );
        let twice = ">>>>> Start Test Output A >>>>> Start Test Output B >>>>> End Test Output";
        assert_eq!(
            test_section(twice),
            Some(" A "),
            "a second start marker ends the section"
        );
    }

    #[test]
    fn exit_code_is_read_after_the_end_marker_only() {
        let log = ">>>>> Start Test Output\n>>>>> Test Exit Code: 0\n>>>>> End Test Output\n+ echo '>>>>> Test Exit Code: 1'\n>>>>> Test Exit Code: 1\n";
        assert_eq!(test_exit_code(log), Some(1));
        assert_eq!(
            test_exit_code(">>>>> Start Test Output\n>>>>> End Test Output\n"),
            None
        );
    }

    #[test]
    fn reading_falls_back_to_whole_log() {
        let log = "PASSED outside\n>>>>> Start Test Output\nnothing\n>>>>> End Test Output\n";
        let r = parse_test_log("parse_log_pytest", log).unwrap();
        let LogReading::Parsed {
            statuses,
            from_whole_log,
        } = r
        else {
            panic!("{r:?}")
        };
        assert!(from_whole_log);
        assert_eq!(statuses.get("outside"), Some(&TestStatus::Passed));
        let bad = format!("{APPLY_PATCH_FAIL}\n{log}");
        assert_eq!(
            parse_test_log("parse_log_pytest", &bad).unwrap(),
            LogReading::BadMarker(APPLY_PATCH_FAIL)
        );
    }
}
