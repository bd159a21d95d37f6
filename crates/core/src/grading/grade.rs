//! One prediction graded: the test run's outcome and the instance's test lists in, a
//! [`Graded`] out, by the official rules and by the strict ones at once.

use std::sync::LazyLock;

use regex::Regex;

use super::category::{Category, ErrorReason};
use super::collection::{affects_framework, collection_files};
use super::groups::{group_tests, EvalType, Mode, Resolution, TestGroups};
use super::network::{self, NetworkEvidence};
use crate::logparse::{self, LogReading, TestStatus, UnknownParser};

/// What happened when the prediction was executed (or what a saved log shows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOutcome<'a> {
    /// The patch did not apply; no tests ran.
    PatchApplyFailed,
    /// The eval script timed out (its partial log is not graded, as officially).
    TimedOut,
    /// Docker or the harness failed before a test log was produced.
    Infra,
    /// The eval script finished; `log` is its whole output. `exit_code` is the test command's
    /// exit status when known (from the runner, or a `>>>>> Test Exit Code:` line).
    Completed {
        /// The eval script's whole output.
        log: &'a str,
        /// The test command's exit status, when known.
        exit_code: Option<i32>,
    },
}

/// Everything [`grade`] needs about one prediction.
#[derive(Debug, Clone, Copy)]
pub struct GradeInput<'a> {
    /// Repository `owner/name` (decides the evaluation type).
    pub repo: &'a str,
    /// Log parser name (see [`logparse::PARSER_NAMES`]).
    pub parser: &'a str,
    /// The instance's FAIL_TO_PASS tests.
    pub fail_to_pass: &'a [String],
    /// The instance's PASS_TO_PASS tests.
    pub pass_to_pass: &'a [String],
    /// The model patch; `None` or empty means nothing was run.
    pub patch: Option<&'a str>,
    /// How the execution went.
    pub outcome: RunOutcome<'a>,
    /// True when files the patch adds or edits that change test collection (see
    /// [`collection_files`]) were still in place during the test run; the runner sets it false
    /// after removing them, grading from saved logs sets it true.
    pub collection_files_present: bool,
}

impl<'a> GradeInput<'a> {
    /// The input for one dataset instance: its parser is the row's `log_parser` (SWE-bench 5
    /// rows name one) or the official parser for its repository. Collection files count as
    /// present, as in a saved official log; the runner clears the flag after removing them.
    pub fn for_instance(
        instance: &'a crate::dataset::Instance,
        patch: Option<&'a str>,
        outcome: RunOutcome<'a>,
    ) -> GradeInput<'a> {
        GradeInput {
            repo: &instance.repo,
            parser: instance
                .log_parser
                .as_deref()
                .unwrap_or_else(|| logparse::parser_for_repo(&instance.repo)),
            fail_to_pass: instance.fail_to_pass(),
            pass_to_pass: instance.pass_to_pass(),
            patch,
            outcome,
            collection_files_present: true,
        }
    }
}

/// A strict-mode objection to the official verdict.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StrictFinding {
    /// FAIL_TO_PASS tests reported SKIPPED (the official grader drops them).
    SkippedFailToPass {
        /// The skipped FAIL_TO_PASS tests.
        tests: Vec<String>,
    },
    /// The test command exited non-zero although no parsed test failed: the log's PASSED
    /// lines are not evidence (possibly forged).
    ExitCodeDisagrees {
        /// The test command's exit status.
        exit_code: i32,
    },
    /// The log shows no sign that the framework's test run started and finished.
    SuiteDidNotRun,
    /// The patch added files that change test collection and they were present in the run.
    CollectionFilesAdded {
        /// The added files, relative to the repository root.
        paths: Vec<String>,
    },
}

impl StrictFinding {
    /// A short stable name for reports.
    pub fn as_str(&self) -> &'static str {
        match self {
            StrictFinding::SkippedFailToPass { .. } => "skipped_fail_to_pass",
            StrictFinding::ExitCodeDisagrees { .. } => "exit_code_disagrees",
            StrictFinding::SuiteDidNotRun => "suite_did_not_run",
            StrictFinding::CollectionFilesAdded { .. } => "collection_files_added",
        }
    }

    /// The finding for a person (and a trainer's log): its name, then what it saw and why it
    /// voids the log or fails the tests it names.
    pub fn describe(&self) -> String {
        let detail = match self {
            StrictFinding::SkippedFailToPass { tests } => format!(
                "{} FAIL_TO_PASS test(s) reported SKIPPED, which count as failed: {}",
                tests.len(),
                listed(tests)
            ),
            StrictFinding::ExitCodeDisagrees { exit_code } => format!(
                "the test command exited {exit_code} although no test in its log failed: \
                 the log's PASSED lines are not evidence"
            ),
            StrictFinding::SuiteDidNotRun => {
                "the log has no summary line of the test run: nothing shows the tests ran".into()
            }
            StrictFinding::CollectionFilesAdded { paths } => format!(
                "the patch adds or edits files that change how tests are collected, and they \
                 were in place when the tests ran: {}",
                listed(paths)
            ),
        };
        format!("{}: {detail}", self.as_str())
    }
}

/// `items` joined by `, `, the first five and then how many more.
fn listed(items: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut out = items
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > SHOWN {
        out.push_str(&format!(" and {} more", items.len() - SHOWN));
    }
    out
}

/// The outcome of grading one prediction.
#[derive(Debug, Clone, PartialEq)]
pub struct Graded {
    /// Official category (the default mode's verdict).
    pub category: Category,
    /// Why the prediction is an error or an infrastructure error (the same in both modes).
    pub error_reason: Option<ErrorReason>,
    /// The official test groups, when the log was graded.
    pub tests: Option<TestGroups>,
    /// True when the official harness writes a `report.json` for this prediction: every graded
    /// log, and also logs it rejects (missing or failure markers), which it writes with
    /// `patch_successfully_applied: false` and counts as completed and unresolved.
    pub official_report: bool,
    /// `patch_successfully_applied` of the official report.
    pub patch_applied: bool,
    /// Strict-mode category; equals `category` unless a finding flips it.
    pub strict_category: Category,
    /// Strict-mode test groups (SKIPPED fail-to-pass tests fail).
    pub strict_tests: Option<TestGroups>,
    /// Why strict mode disagrees, if it does (empty when nothing looked wrong).
    pub strict_findings: Vec<StrictFinding>,
    /// The test command's exit status, when known.
    pub exit_code: Option<i32>,
    /// Set when the verdict is unresolved and every failing required test failed with a
    /// network error (see `grading/network.rs`): the verdict then says nothing about the patch.
    pub needs_network: Option<NetworkEvidence>,
}

impl Graded {
    /// The category under `mode`.
    pub fn category(&self, mode: Mode) -> Category {
        match mode {
            Mode::Official => self.category,
            Mode::Strict => self.strict_category,
        }
    }

    /// The test groups under `mode`.
    pub fn tests(&self, mode: Mode) -> Option<&TestGroups> {
        match mode {
            Mode::Official => self.tests.as_ref(),
            Mode::Strict => self.strict_tests.as_ref(),
        }
    }

    /// True when strict mode gives another category than official grading.
    pub fn strict_flips(&self) -> bool {
        self.category != self.strict_category
    }

    /// The verdict of a prediction that could not be graded (its dataset row lacks the test
    /// lists, its log parser is unknown): an infrastructure error, as the official summary
    /// counts a prediction without a report. Nothing about the patch is known.
    pub fn ungraded() -> Graded {
        Graded::error(ErrorReason::Infra, false, None)
    }

    /// An error verdict without tests: its category follows from `reason`.
    fn error(reason: ErrorReason, official_report: bool, exit_code: Option<i32>) -> Graded {
        Graded {
            error_reason: Some(reason),
            ..Graded::without_tests(Category::of_error(reason), official_report, exit_code)
        }
    }

    fn without_tests(category: Category, official_report: bool, exit_code: Option<i32>) -> Graded {
        Graded {
            category,
            error_reason: None,
            tests: None,
            official_report,
            patch_applied: false,
            strict_category: category,
            strict_tests: None,
            strict_findings: Vec::new(),
            exit_code,
            needs_network: None,
        }
    }
}

/// Grades one prediction under both modes. Fails only for an unknown parser name.
pub fn grade(input: &GradeInput<'_>) -> Result<Graded, UnknownParser> {
    if logparse::canonical_parser(input.parser).is_none() {
        return Err(UnknownParser {
            name: input.parser.to_string(),
        });
    }
    if input.patch.is_none_or(str::is_empty) {
        return Ok(Graded::without_tests(Category::EmptyPatch, false, None));
    }
    let (log, runner_exit) = match input.outcome {
        RunOutcome::PatchApplyFailed => {
            return Ok(Graded::error(ErrorReason::PatchApplyFailed, false, None))
        }
        RunOutcome::TimedOut => return Ok(Graded::error(ErrorReason::Timeout, false, None)),
        RunOutcome::Infra => return Ok(Graded::error(ErrorReason::Infra, false, None)),
        RunOutcome::Completed { log, exit_code } => (log, exit_code),
    };
    let exit_code = runner_exit.or_else(|| logparse::test_exit_code(log));
    let statuses = match logparse::parse_test_log(input.parser, log)? {
        LogReading::Parsed { statuses, .. } => statuses,
        LogReading::BadMarker(_) | LogReading::MissingMarkers => {
            return Ok(Graded::error(ErrorReason::NoTestOutput, true, exit_code))
        }
    };
    let eval_type = EvalType::for_repo(input.repo);
    let tests = group_tests(
        &statuses,
        input.fail_to_pass,
        input.pass_to_pass,
        eval_type,
        Mode::Official,
    );
    let strict_tests = group_tests(
        &statuses,
        input.fail_to_pass,
        input.pass_to_pass,
        eval_type,
        Mode::Strict,
    );
    let category = resolved_category(&tests);
    let section = logparse::test_section(log).unwrap_or(log);
    let needs_network = if category == Category::Unresolved {
        let failing: Vec<String> = tests
            .fail_to_pass
            .failure
            .iter()
            .chain(&tests.pass_to_pass.failure)
            .cloned()
            .collect();
        let before_tests = log
            .find(logparse::START_TEST_OUTPUT)
            .map_or("", |i| &log[..i]);
        network::needs_network(section, &failing)
            .or_else(|| network::install_needs_network(before_tests, &failing))
    } else {
        None
    };

    let mut findings = Vec::new();
    let skipped: Vec<String> = input
        .fail_to_pass
        .iter()
        .filter(|t| statuses.get(*t) == Some(&TestStatus::Skipped))
        .cloned()
        .collect();
    if !skipped.is_empty() {
        findings.push(StrictFinding::SkippedFailToPass { tests: skipped });
    }
    if let Some(code) = exit_code {
        let any_failed = statuses
            .values()
            .any(|s| matches!(s, TestStatus::Failed | TestStatus::Error));
        if code != 0 && !any_failed {
            findings.push(StrictFinding::ExitCodeDisagrees { exit_code: code });
        }
    }
    if !suite_ran(input.parser, section) {
        findings.push(StrictFinding::SuiteDidNotRun);
    }
    if input.collection_files_present {
        let paths: Vec<String> = collection_files(input.patch.unwrap_or_default())
            .into_iter()
            .filter(|f| affects_framework(f, input.parser))
            .map(|f| f.path)
            .collect();
        if !paths.is_empty() {
            findings.push(StrictFinding::CollectionFilesAdded { paths });
        }
    }
    // A skipped F2P test already fails inside `strict_tests`; the other findings void the log.
    let voiding = findings
        .iter()
        .any(|f| !matches!(f, StrictFinding::SkippedFailToPass { .. }));
    let strict_category = if voiding {
        Category::Unresolved
    } else {
        resolved_category(&strict_tests)
    };
    Ok(Graded {
        category,
        error_reason: None,
        tests: Some(tests),
        official_report: true,
        patch_applied: true,
        strict_category,
        strict_tests: Some(strict_tests),
        strict_findings: findings,
        exit_code,
        needs_network,
    })
}

fn resolved_category(tests: &TestGroups) -> Category {
    if tests.resolution() == Resolution::Full {
        Category::Resolved
    } else {
        Category::Unresolved
    }
}

/// Per-framework evidence that the test run started and reached its summary. Without it, a
/// run that never collected anything looks like "no failures".
static PYTEST_RAN: LazyLock<Regex> = LazyLock::new(|| {
    // pytest's final line: `==== 3 passed, 1 skipped in 0.12s ====` (older: `in 0.12 seconds`),
    // or `no tests ran in 0.01s`.
    Regex::new(
        r"(?m)^=+ (.*\b\d+ (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)\b.*|no tests ran) in [\d.]+ ?s(econds)?\b",
    )
    .expect("static regex")
});

static UNITTEST_RAN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^Ran \d+ tests? in [\d.]+s").expect("static regex"));

static SYMPY_RAN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)tests finished: \d+ passed").expect("static regex"));

static ANSI_ESCAPE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\x1b\[[0-9;]*[A-Za-z]").expect("static regex"));

/// True when `section` (the test output) shows the framework's run reached its summary line:
/// pytest's `=== N passed ... in Xs ===`, Django's `Ran N tests in Xs`, sympy's
/// `tests finished: N passed`.
pub fn suite_ran(parser: &str, section: &str) -> bool {
    let plain = ANSI_ESCAPE.replace_all(section, "");
    match logparse::canonical_parser(parser) {
        Some("parse_log_django") => UNITTEST_RAN.is_match(&plain),
        Some("parse_log_sympy") => SYMPY_RAN.is_match(&plain),
        Some(_) => PYTEST_RAN.is_match(&plain),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_is_described_by_its_name_then_what_it_saw() {
        let skipped = StrictFinding::SkippedFailToPass {
            tests: (0..7).map(|i| format!("t{i}")).collect(),
        };
        assert_eq!(
            skipped.describe(),
            "skipped_fail_to_pass: 7 FAIL_TO_PASS test(s) reported SKIPPED, which count as \
             failed: t0, t1, t2, t3, t4 and 2 more"
        );
        let exit = StrictFinding::ExitCodeDisagrees { exit_code: 1 }.describe();
        assert!(
            exit.starts_with("exit_code_disagrees: the test command exited 1 "),
            "{exit}"
        );
        let files = StrictFinding::CollectionFilesAdded {
            paths: vec!["tests/conftest.py".into()],
        };
        assert!(files.describe().ends_with(": tests/conftest.py"));
        assert!(StrictFinding::SuiteDidNotRun
            .describe()
            .starts_with("suite_did_not_run: "));
    }
}
