//! How a prediction ended ([`Category`]) and, for an error, why ([`ErrorReason`]): the one
//! verdict vocabulary of grading, the runner's verdicts, the reports and every count.

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
