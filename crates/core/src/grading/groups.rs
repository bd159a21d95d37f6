//! The tests of an instance in groups: FAIL_TO_PASS and PASS_TO_PASS, each test's status as
//! the official grading counts it (passed, failed, or neither for a skipped test), and the
//! resolution of the whole (full, partial, none).

use crate::logparse::{StatusMap, TestStatus};

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
