//! Grading: test statuses and the FAIL_TO_PASS/PASS_TO_PASS lists in, a verdict out; no I/O.
//!
//! The default ([`Mode::Official`]) reproduces the official harness v4.1.0 (`grading.py`)
//! exactly, bugs included: a test passes when PASSED or XFAIL, fails when FAILED, ERROR or
//! missing, and a SKIPPED test lands in neither list, so an all-skipped FAIL_TO_PASS list
//! scores 1.0 and resolves. [`Mode::Strict`] adds the later hardening (SWE-bench 5 and
//! beyond): SKIPPED fail-to-pass tests fail, the test command's exit code must agree with the
//! parsed statuses, the log must show the suite ran, and a patch that adds files changing test
//! collection (`conftest.py`, ...) is not trusted when those files were present during the run.
//! [`grade`] always computes both, so a run can report how many verdicts strict mode flips.

use std::sync::LazyLock;

use regex::Regex;

use crate::logparse::{self, LogReading, StatusMap, TestStatus, UnknownParser};
use crate::unidiff::{self, LineType};

mod network;
pub use network::NetworkEvidence;

/// Which grading rules decide the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Exactly the official harness v4.1.0.
    #[default]
    Official,
    /// Official plus the hardening described in the module docs.
    Strict,
}

/// How a test's status counts (official `EvalType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvalType {
    /// PASSED/XFAIL succeed, FAILED/ERROR/missing fail, anything else is dropped.
    PassAndFail,
    /// Only an explicit FAILED fails (JavaScript repositories whose runners list only failures).
    FailOnly,
}

/// Repositories the official harness grades with [`EvalType::FailOnly`].
pub const FAIL_ONLY_REPOS: [&str; 3] = ["chartjs/Chart.js", "processing/p5.js", "markedjs/marked"];

impl EvalType {
    /// The evaluation type the official harness uses for `repo` (`owner/name`).
    pub fn for_repo(repo: &str) -> EvalType {
        if FAIL_ONLY_REPOS.contains(&repo) {
            EvalType::FailOnly
        } else {
            EvalType::PassAndFail
        }
    }
}

/// One test group's outcome, in the order the dataset lists the tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Group {
    /// Tests of the group that passed.
    pub success: Vec<String>,
    /// Tests of the group that did not pass (failed, errored, or missing from the log).
    pub failure: Vec<String>,
}

impl Group {
    /// Share of tests that succeeded; an empty group counts 1.0 as officially.
    pub fn rate(&self) -> f64 {
        let total = self.success.len() + self.failure.len();
        if total == 0 {
            1.0
        } else {
            self.success.len() as f64 / total as f64
        }
    }
}

/// The four official groups. FAIL_TO_FAIL and PASS_TO_FAIL stay empty, as officially (the
/// harness never passes `calculate_to_fail`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TestGroups {
    /// Tests the patch must make pass.
    pub fail_to_pass: Group,
    /// Tests that passed before and must still pass.
    pub pass_to_pass: Group,
    /// Always empty (see above).
    pub fail_to_fail: Group,
    /// Always empty (see above).
    pub pass_to_fail: Group,
}

/// Official `ResolvedStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Resolution {
    /// Every FAIL_TO_PASS and PASS_TO_PASS test passes.
    #[serde(rename = "RESOLVED_FULL")]
    Full,
    /// Some FAIL_TO_PASS tests pass and every PASS_TO_PASS test passes.
    #[serde(rename = "RESOLVED_PARTIAL")]
    Partial,
    /// Anything else.
    #[serde(rename = "RESOLVED_NO")]
    No,
}

impl TestGroups {
    /// FULL when both rates are 1, PARTIAL when 0 < F2P < 1 and P2P = 1, NO otherwise.
    pub fn resolution(&self) -> Resolution {
        let (f2p, p2p) = (self.fail_to_pass.rate(), self.pass_to_pass.rate());
        if f2p == 1.0 && p2p == 1.0 {
            Resolution::Full
        } else if f2p > 0.0 && f2p < 1.0 && p2p == 1.0 {
            Resolution::Partial
        } else {
            Resolution::No
        }
    }
}

/// Where one test lands: `Some(true)` success, `Some(false)` failure, `None` in neither list.
fn classify(
    status: Option<TestStatus>,
    eval_type: EvalType,
    skipped: Option<bool>,
) -> Option<bool> {
    match eval_type {
        EvalType::FailOnly => Some(status != Some(TestStatus::Failed)),
        EvalType::PassAndFail => match status {
            Some(TestStatus::Passed | TestStatus::Xfail) => Some(true),
            None | Some(TestStatus::Failed | TestStatus::Error) => Some(false),
            Some(TestStatus::Skipped) => skipped,
        },
    }
}

/// Sorts the FAIL_TO_PASS and PASS_TO_PASS tests into success and failure.
///
/// Official: SKIPPED lands in neither list. Strict (SWE-bench 5, #598): a SKIPPED
/// fail-to-pass test fails, a SKIPPED pass-to-pass test passes.
pub fn group_tests(
    statuses: &StatusMap,
    fail_to_pass: &[String],
    pass_to_pass: &[String],
    eval_type: EvalType,
    mode: Mode,
) -> TestGroups {
    let sort = |tests: &[String], skipped: Option<bool>| {
        let mut g = Group::default();
        for t in tests {
            match classify(statuses.get(t).copied(), eval_type, skipped) {
                Some(true) => g.success.push(t.clone()),
                Some(false) => g.failure.push(t.clone()),
                None => {}
            }
        }
        g
    };
    let (f2p_skipped, p2p_skipped) = match mode {
        Mode::Official => (None, None),
        Mode::Strict => (Some(false), Some(true)),
    };
    TestGroups {
        fail_to_pass: sort(fail_to_pass, f2p_skipped),
        pass_to_pass: sort(pass_to_pass, p2p_skipped),
        ..TestGroups::default()
    }
}

/// Why a prediction has no valid report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorReason {
    /// None of the apply commands accepted the patch.
    PatchApplyFailed,
    /// The eval script ran past the timeout and was killed.
    Timeout,
    /// The log lacks the test-output markers or carries a failure marker.
    NoTestOutput,
    /// Docker, image or harness failure: nothing about the patch is known.
    Infra,
}

impl ErrorReason {
    /// The wire name: `patch_apply_failed`, `timeout`, `no_test_output` or `infra`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorReason::PatchApplyFailed => "patch_apply_failed",
            ErrorReason::Timeout => "timeout",
            ErrorReason::NoTestOutput => "no_test_output",
            ErrorReason::Infra => "infra",
        }
    }
}

/// How a prediction ended: the one verdict category of grading, the runner's verdicts, the
/// reports and every count. Why an error is one is [`ErrorReason`], kept beside it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// All FAIL_TO_PASS and PASS_TO_PASS tests pass.
    Resolved,
    /// The tests ran and some required test fails.
    Unresolved,
    /// The model's fault or the task's: the patch did not apply, the run timed out, or the
    /// test output is missing.
    Error,
    /// Empty or missing patch: not run, counted apart (official `empty_patch_ids`).
    EmptyPatch,
    /// The infrastructure failed (Docker errors after retries, an image that did not build, a
    /// missing log): nothing about the patch is known.
    InfraError,
}

impl Category {
    /// `resolved`, `unresolved`, `error`, `empty_patch` or `infra_error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Resolved => "resolved",
            Category::Unresolved => "unresolved",
            Category::Error => "error",
            Category::EmptyPatch => "empty_patch",
            Category::InfraError => "infra_error",
        }
    }

    /// The category of an error with this reason: an infrastructure failure, or an error.
    pub fn of_error(reason: ErrorReason) -> Category {
        match reason {
            ErrorReason::Infra => Category::InfraError,
            _ => Category::Error,
        }
    }

    /// True only for [`Category::Resolved`].
    pub fn is_resolved(self) -> bool {
        self == Category::Resolved
    }
}

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
}

/// The outcome of grading one prediction.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
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

impl Verdict {
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

    /// An error verdict without tests: its category follows from `reason`.
    fn error(reason: ErrorReason, official_report: bool, exit_code: Option<i32>) -> Verdict {
        Verdict {
            error_reason: Some(reason),
            ..Verdict::without_tests(Category::of_error(reason), official_report, exit_code)
        }
    }

    fn without_tests(category: Category, official_report: bool, exit_code: Option<i32>) -> Verdict {
        Verdict {
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
pub fn grade(input: &GradeInput<'_>) -> Result<Verdict, UnknownParser> {
    if logparse::canonical_parser(input.parser).is_none() {
        return Err(UnknownParser {
            name: input.parser.to_string(),
        });
    }
    if input.patch.is_none_or(str::is_empty) {
        return Ok(Verdict::without_tests(Category::EmptyPatch, false, None));
    }
    let (log, runner_exit) = match input.outcome {
        RunOutcome::PatchApplyFailed => {
            return Ok(Verdict::error(ErrorReason::PatchApplyFailed, false, None))
        }
        RunOutcome::TimedOut => return Ok(Verdict::error(ErrorReason::Timeout, false, None)),
        RunOutcome::Infra => return Ok(Verdict::error(ErrorReason::Infra, false, None)),
        RunOutcome::Completed { log, exit_code } => (log, exit_code),
    };
    let exit_code = runner_exit.or_else(|| logparse::test_exit_code(log));
    let statuses = match logparse::parse_test_log(input.parser, log)? {
        LogReading::Parsed { statuses, .. } => statuses,
        LogReading::BadMarker(_) | LogReading::MissingMarkers => {
            return Ok(Verdict::error(ErrorReason::NoTestOutput, true, exit_code))
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
    Ok(Verdict {
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

/// True when a collection file matters to the framework behind `parser`: Django's and
/// sympy's own runners ignore pytest configuration, but every Python process loads
/// `sitecustomize.py`, `usercustomize.py` and `.pth` files.
fn affects_framework(file: &CollectionFile, parser: &str) -> bool {
    let name = file.path.rsplit('/').next().unwrap_or(&file.path);
    let interpreter_wide =
        matches!(name, "sitecustomize.py" | "usercustomize.py") || name.ends_with(".pth");
    interpreter_wide
        || !matches!(
            logparse::canonical_parser(parser),
            Some("parse_log_django" | "parse_log_sympy")
        )
}

/// A file a patch creates or edits that changes how tests are collected or configured.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CollectionFile {
    /// Path relative to the repository root.
    pub path: String,
    /// True when the patch creates the file (delete it before the run); false when it edits
    /// an existing one (restore it from the base commit before the run).
    pub added: bool,
}

/// Files a patch creates or edits that change test collection: `conftest.py`,
/// `sitecustomize.py`, `usercustomize.py`, `pytest.ini`, `.pth` files at any depth, and
/// `tox.ini`, `setup.cfg` or `pyproject.toml` when created or when the edit touches pytest
/// configuration. The runner removes (or restores) them before the tests in strict mode.
pub fn collection_files(patch: &str) -> Vec<CollectionFile> {
    const PYTEST_KEYS: [&str; 8] = [
        "pytest",
        "addopts",
        "testpaths",
        "python_files",
        "python_classes",
        "python_functions",
        "norecursedirs",
        "confcutdir",
    ];
    let mut out: Vec<CollectionFile> = Vec::new();
    for file in patch_files(patch) {
        let name = file.path.rsplit('/').next().unwrap_or(&file.path);
        let always = matches!(
            name,
            "conftest.py" | "sitecustomize.py" | "usercustomize.py" | "pytest.ini" | ".pytest.ini"
        ) || name.ends_with(".pth");
        let config = matches!(name, "tox.ini" | "setup.cfg" | "pyproject.toml");
        let hit = always
            || (config
                && (file.added
                    || file
                        .changed
                        .iter()
                        .any(|l| PYTEST_KEYS.iter().any(|k| l.contains(k)))));
        if hit {
            out.push(CollectionFile {
                path: file.path,
                added: file.added,
            });
        }
    }
    out
}

/// The paths of [`collection_files`] that the patch creates.
pub fn collection_files_added(patch: &str) -> Vec<String> {
    collection_files(patch)
        .into_iter()
        .filter(|f| f.added)
        .map(|f| f.path)
        .collect()
}

struct PatchFile {
    path: String,
    added: bool,
    /// Added and removed lines of the file's hunks (without the +/- sign).
    changed: Vec<String>,
}

/// The files a (model) patch leaves in the tree: path (the `+++` side, without `b/`), whether
/// the patch creates it, and its changed lines. Read leniently ([`unidiff::parse_lenient`]): a
/// patch the `unidiff` package refuses may still apply with `git apply` or GNU `patch`, and
/// must not hide the files it creates. Deleted files are left out; binary files are kept (with
/// no changed lines), since `git apply` creates them too. A path the reader sees twice (a
/// `diff --git` line whose `---` names another source starts a second file) is one file,
/// created if either says so.
fn patch_files(patch: &str) -> Vec<PatchFile> {
    let (set, _refused) = unidiff::parse_lenient(patch);
    let mut out: Vec<PatchFile> = Vec::new();
    for f in &set.files {
        // GNU patch strips the CR of a CRLF patch, names included.
        let Some(target) = f.target_file.map(str::trim_end) else {
            continue;
        };
        if target == "/dev/null" {
            continue;
        }
        let path = target.strip_prefix("b/").unwrap_or(target);
        let added = f.source_file.map(str::trim_end) == Some("/dev/null");
        let changed = f
            .hunks
            .iter()
            .flat_map(|h| &h.lines)
            .filter(|l| matches!(l.line_type, LineType::Added | LineType::Removed))
            .map(|l| l.value.trim_end_matches(['\n', '\r']).to_string());
        match out.iter_mut().find(|seen| seen.path == path) {
            Some(seen) => {
                seen.added |= added;
                seen.changed.extend(changed);
            }
            None => out.push(PatchFile {
                path: path.to_string(),
                added,
                changed: changed.collect(),
            }),
        }
    }
    out
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
