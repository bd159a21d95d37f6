//! What a trainer gets back for one prediction ([`Evaluation`]): the similarity at once, then
//! the executed verdict as a [`Status`], with `mask` saying whether the infrastructure rather
//! than the patch decided it (such a sample is dropped from training, not scored 0).

use serde::{Deserialize, Serialize};

use crate::runner::{Decided, Verdict};
use swe_eval_core::grading::{Category, ErrorReason};

/// How an executed prediction ended, for a trainer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Every FAIL_TO_PASS and PASS_TO_PASS test passes.
    Resolved,
    /// The tests ran and a required one fails (or the test output was missing, which the
    /// official grading counts as not resolved).
    Unresolved,
    /// The patch did not apply.
    PatchFailed,
    /// The patch was empty: nothing was run.
    Empty,
    /// The tests ran past the job's timeout (`mask` false: the patch's doing), or the
    /// request's deadline passed first (`mask` true).
    Timeout,
    /// The infrastructure failed (engine errors after retries, an image that could not be
    /// had): nothing about the patch is known (`mask` true).
    InfraError,
}

impl Status {
    /// The wire name (`resolved`, `unresolved`, `patch_failed`, `empty`, `timeout`,
    /// `infra_error`).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Resolved => "resolved",
            Status::Unresolved => "unresolved",
            Status::PatchFailed => "patch_failed",
            Status::Empty => "empty",
            Status::Timeout => "timeout",
            Status::InfraError => "infra_error",
        }
    }

    /// The status of a verdict's category (`reason`: why an error is one).
    pub fn of(category: Category, reason: Option<ErrorReason>) -> Status {
        match category {
            Category::Resolved => Status::Resolved,
            Category::Unresolved => Status::Unresolved,
            Category::EmptyPatch => Status::Empty,
            Category::InfraError => Status::InfraError,
            Category::Error => match reason {
                Some(ErrorReason::PatchApplyFailed) => Status::PatchFailed,
                Some(ErrorReason::Timeout) => Status::Timeout,
                Some(ErrorReason::Infra) => Status::InfraError,
                Some(ErrorReason::NoTestOutput) | None => Status::Unresolved,
            },
        }
    }

    /// True where the infrastructure decided (the sample says nothing of the patch).
    pub fn masked(self) -> bool {
        self == Status::InfraError
    }
}

/// Tests of one kind that passed, of how many.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Passed {
    /// Tests that passed.
    pub passed: usize,
    /// Tests required.
    pub total: usize,
}

/// Where a prediction's time went, in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    /// Waiting for a worker once its image was ready.
    pub queue: f64,
    /// Waiting for its instance's image to be prepared.
    pub image: f64,
    /// Creating and starting the container.
    pub start: f64,
    /// The driver and the patch's apply step (`null` where the engine did not time it).
    pub apply: Option<f64>,
    /// The tests themselves (between the official markers; `null` where not timed).
    pub tests: Option<f64>,
    /// The container's whole run.
    pub run: f64,
    /// From acceptance to the result.
    pub total: f64,
}

/// The executed part of an evaluation: what a content-identical request gets from the cache.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Executed {
    /// How it ended.
    pub status: Status,
    /// True where the infrastructure decided: drop the sample rather than score it.
    pub mask: bool,
    /// `status` is `resolved`.
    pub resolved: bool,
    /// The strict grading's status (the later hardenings: SKIPPED fail-to-pass tests fail, the
    /// exit code cross-checked, collection-altering files removed in strict mode).
    pub strict_status: Status,
    /// `strict_status` is `resolved`.
    pub strict_resolved: bool,
    /// FAIL_TO_PASS tests.
    pub fail_to_pass: Passed,
    /// PASS_TO_PASS tests.
    pub pass_to_pass: Passed,
    /// Why, for errors, infrastructure errors and strict objections.
    pub reason: Option<String>,
    /// The image the tests ran in.
    pub image: Option<String>,
    /// Engine failures retried.
    pub infra_retries: u32,
    /// Where the time went (of the run that produced it, for a cached outcome).
    pub timings: Timings,
}

impl Executed {
    /// The outcome of a verdict the dispatcher delivered, run in `image`.
    pub fn of(f: &Decided, image: Option<String>) -> Executed {
        let v: &Verdict = &f.verdict;
        let status = Status::of(v.category, v.error_reason);
        let strict_status = Status::of(v.strict_category, v.error_reason);
        Executed {
            status,
            mask: status.masked(),
            resolved: status == Status::Resolved,
            strict_status,
            strict_resolved: strict_status == Status::Resolved,
            fail_to_pass: Passed {
                passed: v.fail_to_pass_success,
                total: v.fail_to_pass_success + v.fail_to_pass_failure,
            },
            pass_to_pass: Passed {
                passed: v.pass_to_pass_success,
                total: v.pass_to_pass_success + v.pass_to_pass_failure,
            },
            reason: v.reason.clone(),
            image,
            infra_retries: v.infra_retries,
            timings: Timings {
                queue: f.queue_wait.map_or(0.0, |d| d.as_secs_f64()),
                image: f.image_wait.as_secs_f64(),
                start: v.setup_secs,
                apply: v.apply_secs,
                tests: v.tests_secs,
                run: v.run_secs,
                total: 0.0,
            },
        }
    }

    /// A masked outcome decided without a verdict: the request's deadline passed
    /// ([`Status::Timeout`]) or the infrastructure failed ([`Status::InfraError`]).
    pub fn masked(status: Status, reason: String) -> Executed {
        Executed {
            status,
            mask: true,
            resolved: false,
            strict_status: status,
            strict_resolved: false,
            fail_to_pass: Passed::default(),
            pass_to_pass: Passed::default(),
            reason: Some(reason),
            image: None,
            infra_retries: 0,
            timings: Timings::default(),
        }
    }

    /// The outcome of an empty patch: nothing to run (the official harness's `empty_patch`).
    pub fn empty() -> Executed {
        Executed {
            mask: false,
            reason: Some("empty patch: nothing was run".into()),
            ..Executed::masked(Status::Empty, String::new())
        }
    }

    /// Whether a content-identical request may be answered with it: only verdicts about the
    /// patch are, never masked ones.
    pub fn cacheable(&self) -> bool {
        !self.mask
    }
}

/// Where a request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Accepted, its result not known yet.
    Queued,
    /// Its result is known.
    Done,
}

/// One evaluated prediction, as a trainer reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    /// The request's id.
    pub id: String,
    /// The instance.
    pub instance_id: String,
    /// The model, as given (or the server's default).
    pub model_name_or_path: String,
    /// The sample, as given (0 by default).
    pub sample: u32,
    /// `queued` or `done`.
    pub state: State,
    /// The SWE-RL similarity against the gold patch (difflib ratio), known at once.
    pub similarity: f64,
    /// -1 where the patch is empty or unparsable, else `similarity`.
    pub reward: f64,
    /// `ok`, `empty` or `unparsable`.
    pub format: String,
    /// The request asked for execution.
    pub execute: bool,
    /// The executed outcome, once known (never for `execute: false`).
    #[serde(flatten)]
    pub outcome: Option<Executed>,
    /// The outcome came from an identical earlier (or simultaneous) request: no container of
    /// its own ran.
    pub cached: bool,
}
