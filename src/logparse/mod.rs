//! Test-log parsers, one per test framework: log text in, a map from test name to status out.
//!
//! The parsers follow the official SWE-bench harness (v4.1.0 `log_parsers/python.py`, whose
//! names SWE-bench 5 rows carry in their `log_parser` field) line for line, including its
//! quirks, because a verdict only counts when it is the one the official harness would give.
//! [`parse`] picks a parser by its official name; [`parser_for_repo`] gives the name the
//! official harness uses for a repository; [`test_section`] and [`test_exit_code`] read the
//! markers the eval script prints around the test command.

use std::borrow::Cow;
use std::collections::HashMap;

mod python;

/// A test's status as the official harness's parsers report it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "UPPERCASE")]
pub enum TestStatus {
    /// The test passed.
    Passed,
    /// The test failed.
    Failed,
    /// The test was skipped.
    Skipped,
    /// The test errored (in setup, teardown or collection).
    Error,
    /// The test failed as expected (`xfail`).
    Xfail,
}

impl TestStatus {
    /// All statuses in the official enum's order (the order its parsers test prefixes in).
    pub const ALL: [TestStatus; 5] = [
        TestStatus::Failed,
        TestStatus::Passed,
        TestStatus::Skipped,
        TestStatus::Error,
        TestStatus::Xfail,
    ];

    /// The status word as logs and the official harness spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            TestStatus::Passed => "PASSED",
            TestStatus::Failed => "FAILED",
            TestStatus::Skipped => "SKIPPED",
            TestStatus::Error => "ERROR",
            TestStatus::Xfail => "XFAIL",
        }
    }

    /// The status for an exact status word.
    pub fn from_word(word: &str) -> Option<TestStatus> {
        TestStatus::ALL.into_iter().find(|s| s.as_str() == word)
    }

    /// The official parsers store whatever token sits where the status should be (`PASSEDx`,
    /// or a stray word in pytest_v2's `name STATUS` form). Official grading counts such a token
    /// neither as passing nor as failing, exactly as it treats SKIPPED, so it maps to Skipped.
    pub(crate) fn from_token(token: &str) -> TestStatus {
        TestStatus::from_word(token).unwrap_or(TestStatus::Skipped)
    }
}

/// Test name -> status.
pub type StatusMap = HashMap<String, TestStatus>;

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

/// A parser name that is neither a SWE-bench 5 name nor an official per-repository alias.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown log parser `{name}` (known: {})", PARSER_NAMES.join(", "))]
pub struct UnknownParser {
    /// The name that was asked for.
    pub name: String,
}

/// Every parser name [`parse`] accepts: the framework parsers first, then the official
/// per-repository aliases (`parse_log_astropy` is `parse_log_pytest_v2`, and so on).
pub const PARSER_NAMES: &[&str] = &[
    "parse_log_pytest",
    "parse_log_pytest_options",
    "parse_log_pytest_v2",
    "parse_log_django",
    "parse_log_seaborn",
    "parse_log_sympy",
    "parse_log_matplotlib",
    "parse_log_astroid",
    "parse_log_flask",
    "parse_log_marshmallow",
    "parse_log_pvlib",
    "parse_log_pyvista",
    "parse_log_sqlfluff",
    "parse_log_xarray",
    "parse_log_pydicom",
    "parse_log_requests",
    "parse_log_pylint",
    "parse_log_astropy",
    "parse_log_scikit",
    "parse_log_sphinx",
];

/// The framework parser behind a name (aliases resolved), or `None` for an unknown name.
/// Accepts the name with or without the `parse_log_` prefix.
pub fn canonical_parser(name: &str) -> Option<&'static str> {
    let short = name.strip_prefix("parse_log_").unwrap_or(name);
    let canonical = match short {
        "pytest" | "astroid" | "flask" | "marshmallow" | "pvlib" | "pyvista" | "sqlfluff"
        | "xarray" => "parse_log_pytest",
        "pytest_options" | "pydicom" | "requests" | "pylint" => "parse_log_pytest_options",
        "pytest_v2" | "astropy" | "scikit" | "sphinx" => "parse_log_pytest_v2",
        "django" => "parse_log_django",
        "seaborn" => "parse_log_seaborn",
        "sympy" => "parse_log_sympy",
        "matplotlib" => "parse_log_matplotlib",
        _ => return None,
    };
    Some(canonical)
}

/// Parses `log` with the parser named `parser_name` (see [`PARSER_NAMES`]).
///
/// This is the bare parser: it reads whatever text it is given. To read a whole test log as
/// the official harness does (section between the markers, whole log as fallback) use
/// [`parse_test_log`].
pub fn parse(parser_name: &str, log: &str) -> Result<StatusMap, UnknownParser> {
    let parser = canonical_parser(parser_name).ok_or_else(|| UnknownParser {
        name: parser_name.to_string(),
    })?;
    Ok(match parser {
        "parse_log_pytest" => python::pytest(log),
        "parse_log_pytest_options" => python::pytest_options(log),
        "parse_log_pytest_v2" => python::pytest_v2(log),
        "parse_log_django" => python::django(log),
        "parse_log_seaborn" => python::seaborn(log),
        "parse_log_sympy" => python::sympy(log),
        "parse_log_matplotlib" => python::matplotlib(log),
        _ => unreachable!("canonical_parser returns only the names matched here"),
    })
}

/// The official parser name for a repository (`owner/name`), or `None` when the official
/// harness has no Python parser for it.
pub fn known_parser_for_repo(repo: &str) -> Option<&'static str> {
    Some(match repo {
        "astropy/astropy" => "parse_log_astropy",
        "django/django" => "parse_log_django",
        "marshmallow-code/marshmallow" => "parse_log_marshmallow",
        "matplotlib/matplotlib" => "parse_log_matplotlib",
        "mwaskom/seaborn" => "parse_log_seaborn",
        "pallets/flask" => "parse_log_flask",
        "psf/requests" => "parse_log_requests",
        "pvlib/pvlib-python" => "parse_log_pvlib",
        "pydata/xarray" => "parse_log_xarray",
        "pydicom/pydicom" => "parse_log_pydicom",
        "pylint-dev/astroid" => "parse_log_astroid",
        "pylint-dev/pylint" => "parse_log_pylint",
        "pytest-dev/pytest" => "parse_log_pytest",
        "pyvista/pyvista" => "parse_log_pyvista",
        "scikit-learn/scikit-learn" => "parse_log_scikit",
        "sqlfluff/sqlfluff" => "parse_log_sqlfluff",
        "sphinx-doc/sphinx" => "parse_log_sphinx",
        "sympy/sympy" => "parse_log_sympy",
        _ => return None,
    })
}

/// The official parser name for a repository; repositories the official harness does not
/// know get the plain pytest parser (most Python projects print `pytest -rA` summaries).
pub fn parser_for_repo(repo: &str) -> &'static str {
    known_parser_for_repo(repo).unwrap_or("parse_log_pytest")
}

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
    fn names_and_aliases_resolve() {
        for name in PARSER_NAMES {
            assert!(parse(name, "").is_ok(), "{name} must be accepted");
        }
        assert_eq!(canonical_parser("astropy"), Some("parse_log_pytest_v2"));
        assert!(parse("parse_log_cargo", "").is_err());
        assert_eq!(parser_for_repo("django/django"), "parse_log_django");
        assert_eq!(parser_for_repo("someone/else"), "parse_log_pytest");
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
