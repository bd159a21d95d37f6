//! What a trainer gets back for one prediction ([`Evaluation`]): the similarity at once, then
//! the executed verdict as a [`Status`], with `mask` saying whether the infrastructure rather
//! than the patch decided it (such a sample is dropped from training, not scored 0), and the
//! reward to train on: `score`, 1.0 when the grading the server rewards by ([`GradedBy`], the
//! strict one by default) resolved the prediction, with the strict grading's `objections`
//! beside it. The official `status` and `resolved` stay beside them for benchmarking.

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

/// Which grading a server's reward follows (`serve --reward`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GradedBy {
    /// The strict grading: the official one plus the later hardenings (SKIPPED FAIL_TO_PASS
    /// tests fail, the exit code must agree with the log, the suite must have run, files that
    /// change test collection do not count). A policy cannot earn it with a forged log.
    #[default]
    Strict,
    /// The official harness's grading (v4.1.0), holes included: forged `PASSED` lines and a
    /// `conftest.py` that turns failures into passes are paid.
    Official,
}

impl GradedBy {
    /// `strict` or `official`.
    pub fn as_str(self) -> &'static str {
        match self {
            GradedBy::Strict => "strict",
            GradedBy::Official => "official",
        }
    }

    /// The score of an outcome: 1.0 when the grading this names resolved it and the
    /// infrastructure did not decide it (`mask`), else 0.0.
    pub fn score(self, status: Status, strict_status: Status, mask: bool) -> f64 {
        let resolved = match self {
            GradedBy::Strict => strict_status,
            GradedBy::Official => status,
        } == Status::Resolved;
        if resolved && !mask {
            1.0
        } else {
            0.0
        }
    }
}

/// The executed part of an evaluation: what a content-identical request gets from the cache.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "Stored")]
pub struct Executed {
    /// The reward: 1.0 when the grading the server rewards by (`graded_by`) resolved the
    /// prediction, else 0.0 (0.0 also where `mask` is true: drop those samples instead).
    pub score: f64,
    /// The grading `score` follows.
    pub graded_by: GradedBy,
    /// What the strict grading objected to, each `name: what it saw` (empty when nothing):
    /// findings that void the log or fail tests (`exit_code_disagrees`, `suite_did_not_run`,
    /// `skipped_fail_to_pass`, `collection_files_added`), and what was undone before the tests
    /// ran (`collection_files_removed` in strict runs, `test_files_edited`).
    pub objections: Vec<String>,
    /// How it ended (the official grading).
    pub status: Status,
    /// True where the infrastructure decided: drop the sample rather than score it.
    pub mask: bool,
    /// `status` is `resolved`.
    pub resolved: bool,
    /// The strict grading's status (the later hardenings: SKIPPED fail-to-pass tests fail, the
    /// exit code cross-checked, the suite must have run, collection-altering files removed in
    /// strict runs and voiding the log where they were in place).
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
    /// The outcome of a verdict the dispatcher delivered, run in `image`, scored by `by`, with
    /// what the strict grading objected to.
    pub fn of(
        f: &Decided,
        image: Option<String>,
        by: GradedBy,
        objections: Vec<String>,
    ) -> Executed {
        let v: &Verdict = &f.verdict;
        let status = Status::of(v.category, v.error_reason);
        let strict_status = Status::of(v.strict_category, v.error_reason);
        Executed {
            score: by.score(status, strict_status, status.masked()),
            graded_by: by,
            objections,
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
            // An empty patch's verdict (`runner::decided_by_patch`) carries no reason: the
            // answer says why nothing ran.
            reason: v.reason.clone().or_else(|| {
                (status == Status::Empty).then(|| "empty patch: nothing was run".to_string())
            }),
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
    /// ([`Status::Timeout`]) or the infrastructure failed ([`Status::InfraError`]). Its score
    /// is 0.0 (drop the sample); `by` is the server's grading all the same.
    pub fn masked(status: Status, reason: String, by: GradedBy) -> Executed {
        Executed {
            score: 0.0,
            graded_by: by,
            objections: Vec::new(),
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

    /// The outcome scored by `by`: a cached outcome answers a server that may reward by
    /// another grading than the one that stored it (the statuses and objections are the
    /// verdict's, the score the server's).
    pub fn scored_by(mut self, by: GradedBy) -> Executed {
        self.score = by.score(self.status, self.strict_status, self.mask);
        self.graded_by = by;
        self
    }

    /// Whether a content-identical request may be answered with it: only verdicts about the
    /// patch are, never masked ones.
    pub fn cacheable(&self) -> bool {
        !self.mask
    }
}

/// An outcome as stored in the state database, which may predate `score`, `graded_by` and
/// `objections`: such an outcome was given by a server that rewarded by the official verdict,
/// and its objections were not kept.
#[derive(Deserialize)]
struct Stored {
    score: Option<f64>,
    graded_by: Option<GradedBy>,
    #[serde(default)]
    objections: Vec<String>,
    status: Status,
    mask: bool,
    resolved: bool,
    strict_status: Status,
    strict_resolved: bool,
    fail_to_pass: Passed,
    pass_to_pass: Passed,
    reason: Option<String>,
    image: Option<String>,
    infra_retries: u32,
    timings: Timings,
}

impl From<Stored> for Executed {
    fn from(s: Stored) -> Executed {
        let graded_by = s.graded_by.unwrap_or(GradedBy::Official);
        Executed {
            score: s
                .score
                .unwrap_or_else(|| graded_by.score(s.status, s.strict_status, s.mask)),
            graded_by,
            objections: s.objections,
            status: s.status,
            mask: s.mask,
            resolved: s.resolved,
            strict_status: s.strict_status,
            strict_resolved: s.strict_resolved,
            fail_to_pass: s.fail_to_pass,
            pass_to_pass: s.pass_to_pass,
            reason: s.reason,
            image: s.image,
            infra_retries: s.infra_retries,
            timings: s.timings,
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use swe_eval_core::predictions::Prediction;

    /// An empty patch's outcome, made as admission makes it: from the runner's verdict.
    fn empty(by: GradedBy) -> Executed {
        let p = Prediction {
            instance_id: "a__b-1".into(),
            model_name_or_path: "m".into(),
            model_patch: Some(" \n".into()),
            sample: 0,
            line: None,
            extra: Default::default(),
        };
        let decided = Decided {
            verdict: crate::runner::empty_verdict(&p, &p.patch_hash(), "r"),
            logs: None,
            image_wait: Duration::ZERO,
            queue_wait: None,
        };
        Executed::of(&decided, None, by, Vec::new())
    }

    #[test]
    fn an_empty_patchs_outcome_is_empty_unmasked_scored_zero_and_says_nothing_ran() {
        for by in [GradedBy::Strict, GradedBy::Official] {
            let e = empty(by);
            let want = Executed {
                score: 0.0,
                graded_by: by,
                objections: Vec::new(),
                status: Status::Empty,
                mask: false,
                resolved: false,
                strict_status: Status::Empty,
                strict_resolved: false,
                fail_to_pass: Passed::default(),
                pass_to_pass: Passed::default(),
                reason: Some("empty patch: nothing was run".into()),
                image: None,
                infra_retries: 0,
                timings: Timings::default(),
            };
            assert_eq!(e, want);
        }
    }

    #[test]
    fn the_score_follows_the_grading_named_and_is_zero_when_masked() {
        use Status::{Resolved, Unresolved};
        let cases = [
            (GradedBy::Strict, Resolved, Resolved, false, 1.0),
            (GradedBy::Strict, Resolved, Unresolved, false, 0.0),
            (GradedBy::Official, Resolved, Unresolved, false, 1.0),
            (GradedBy::Official, Unresolved, Resolved, false, 0.0),
            (GradedBy::Strict, Resolved, Resolved, true, 0.0),
        ];
        for (by, official, strict, mask, want) in cases {
            assert_eq!(
                by.score(official, strict, mask),
                want,
                "{by:?} {official:?} {strict:?}"
            );
        }
        let e = empty(GradedBy::Strict);
        assert_eq!(
            (e.score, e.mask, e.graded_by),
            (0.0, false, GradedBy::Strict)
        );
        // A cached outcome answers a server rewarding by another grading with that grading's
        // score; its statuses stay the verdict's.
        let officially = Executed {
            status: Resolved,
            resolved: true,
            strict_status: Unresolved,
            ..empty(GradedBy::Strict)
        };
        let rescored = officially.clone().scored_by(GradedBy::Official);
        assert_eq!(
            (rescored.score, rescored.graded_by),
            (1.0, GradedBy::Official)
        );
        assert_eq!(rescored.scored_by(GradedBy::Strict).score, 0.0);
    }

    #[test]
    fn an_outcome_stored_before_the_score_existed_reads_with_the_official_one() {
        let mut stored = serde_json::to_value(Executed::masked(
            Status::Resolved,
            String::new(),
            GradedBy::Strict,
        ))
        .unwrap();
        let obj = stored.as_object_mut().unwrap();
        obj.insert("mask".into(), false.into());
        obj.insert("strict_status".into(), "unresolved".into());
        for k in ["score", "graded_by", "objections"] {
            obj.remove(k);
        }
        let read: Executed = serde_json::from_value(stored).unwrap();
        assert_eq!(
            (read.score, read.graded_by, read.objections.len()),
            (1.0, GradedBy::Official, 0)
        );
        // One written now reads back as it was.
        let now = Executed {
            objections: vec!["exit_code_disagrees: ...".into()],
            ..empty(GradedBy::Strict)
        };
        let back: Executed = serde_json::from_str(&serde_json::to_string(&now).unwrap()).unwrap();
        assert_eq!(back, now);
    }
}
