//! From a job's raw output to its verdict: the driver's reading of the output is handed to
//! the grading module (official and strict verdicts at once), and the official `report.json`
//! is shaped from the result.

use crate::engine::JobOutput;
use swe_eval_core::grading::{self, ErrorReason, GradeInput, Mode, RunOutcome};
use swe_eval_core::report::{self, InstanceReport};

use super::driver::{Apply, Parsed, PatchMode};
use super::job_config::JobConfig;
use super::store::Category;
use super::Setup;

/// A graded job.
#[derive(Debug, Clone)]
pub struct JobGrade {
    pub category: Category,
    pub strict_category: Category,
    /// FAIL_TO_PASS success/failure, PASS_TO_PASS success/failure (official grading).
    pub counts: [usize; 4],
    pub test_exit_code: Option<i32>,
    pub error_reason: Option<ErrorReason>,
    pub reason: Option<String>,
    /// Unresolved only because required tests failed with network errors (the reason says
    /// which and how).
    pub needs_network: bool,
    /// The official `report.json` text, when the official harness would write one.
    pub report_json: Option<String>,
}

impl JobGrade {
    /// An infrastructure failure: nothing ran, or the engine gave up.
    pub fn infra(reason: String) -> JobGrade {
        JobGrade {
            category: Category::InfraError,
            strict_category: Category::InfraError,
            counts: [0; 4],
            test_exit_code: None,
            error_reason: Some(ErrorReason::Infra),
            reason: Some(reason),
            needs_network: false,
            report_json: None,
        }
    }
}

/// Grades one job's output: the job ran `patch` (as `mode` says) in `setup`.
pub fn grade(
    setup: &Setup,
    patch: &str,
    mode: PatchMode,
    out: &JobOutput,
    parsed: &Parsed<'_>,
    cfg: &JobConfig,
) -> JobGrade {
    let JobConfig {
        timeout,
        strict,
        network,
        ..
    } = *cfg;
    let inst = &setup.instance;
    let outcome = if out.timed_out {
        RunOutcome::TimedOut
    } else {
        match (&parsed.apply, parsed.eval_output) {
            (Apply::Failed, _) => RunOutcome::PatchApplyFailed,
            (Apply::Applied(_) | Apply::NoPatch, Some(log)) => RunOutcome::Completed {
                log,
                exit_code: parsed.test_exit_code,
            },
            // The driver never reached the eval script: the log has no test output.
            _ => RunOutcome::Completed {
                log: "",
                exit_code: None,
            },
        }
    };
    let patch = match mode {
        PatchMode::Apply => Some(patch),
        // Grading treats an empty patch as "not run"; a validate run without a patch did run.
        PatchMode::None => Some(" "),
    };
    let input = GradeInput {
        repo: &inst.repo,
        parser: &setup.log_parser,
        fail_to_pass: inst.fail_to_pass(),
        pass_to_pass: inst.pass_to_pass(),
        patch,
        outcome,
        // Strict runs remove or restore those files before the tests.
        collection_files_present: !strict,
    };
    let v = match grading::grade(&input) {
        Ok(v) => v,
        Err(e) => {
            return JobGrade {
                category: Category::Error,
                strict_category: Category::Error,
                error_reason: Some(ErrorReason::NoTestOutput),
                ..JobGrade::infra(e.to_string())
            }
        }
    };
    let counts = v.tests.as_ref().map_or([0; 4], |t| {
        [
            t.fail_to_pass.success.len(),
            t.fail_to_pass.failure.len(),
            t.pass_to_pass.success.len(),
            t.pass_to_pass.failure.len(),
        ]
    });
    let reason = match v.category {
        Category::Error | Category::InfraError => v.error_reason.map(|r| match r {
            ErrorReason::Timeout => format!("timeout after {} s", timeout.as_secs()),
            ErrorReason::NoTestOutput if matches!(parsed.apply, Apply::Unknown) => {
                "the job ended before the patch step finished".to_string()
            }
            other => other.as_str().to_string(),
        }),
        _ if v.needs_network.is_some() => v
            .needs_network
            .as_ref()
            .map(|e| needs_network_reason(e, network)),
        _ if !v.strict_findings.is_empty() => Some(
            v.strict_findings
                .iter()
                .map(|f| f.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        ),
        _ => None,
    };
    let mode = if strict { Mode::Strict } else { Mode::Official };
    let report_json = InstanceReport::from_verdict(&v, mode)
        .map(|r| report::instance_report_json(&inst.instance_id, &r));
    JobGrade {
        category: v.category,
        strict_category: v.strict_category,
        counts,
        test_exit_code: v.exit_code,
        error_reason: v.error_reason,
        reason,
        needs_network: v
            .needs_network
            .as_ref()
            .is_some_and(grading::NetworkEvidence::explains_all),
        report_json,
    }
}

/// Grades `old`'s saved test output (`test_output`, as `test_output.txt` holds it) again under
/// `setup` (its test lists and parser now) and `cfg`: the verdict the same run would have had
/// under today's grading inputs, with `old`'s timings, and the official `report.json` text
/// when the official harness would write one. For a resume whose only change is what grades a
/// verdict (the test lists, the rules), so no container runs.
pub fn regrade(
    setup: &Setup,
    patch: &str,
    mode: PatchMode,
    old: &super::store::Verdict,
    test_output: &str,
    cfg: &JobConfig,
) -> (super::store::Verdict, Option<String>) {
    let apply = match (&old.applied_with, old.error_reason) {
        (Some(how), _) => Apply::Applied(how.clone()),
        (None, Some(ErrorReason::PatchApplyFailed)) => Apply::Failed,
        (None, _) if mode == PatchMode::None => Apply::NoPatch,
        (None, _) => Apply::Unknown,
    };
    let out = JobOutput {
        timed_out: old.timed_out,
        oom_killed: old.oom_killed,
        ..Default::default()
    };
    // What the driver read from the output: the eval script's part is what was saved (a
    // timeout's note, appended to the file, is not in what the grader read).
    let secs = old.timeout_secs.unwrap_or(cfg.timeout.as_secs());
    let timeout_note = format!("Timeout error: {secs} seconds exceeded.\n");
    let eval_output = if old.timed_out {
        test_output
            .strip_suffix(timeout_note.as_str())
            .unwrap_or(test_output)
    } else {
        test_output
    };
    let parsed = Parsed {
        apply,
        setup_log: "",
        eval_output: (!matches!(
            (&old.applied_with, old.error_reason),
            (None, Some(ErrorReason::PatchApplyFailed))
        ))
        .then_some(eval_output),
        test_output: None,
        test_exit_code: old.test_exit_code,
        eval_exit: None,
    };
    let g = grade(setup, patch, mode, &out, &parsed, cfg);
    let mut v = old.clone();
    v.category = g.category;
    v.resolved = g.category == Category::Resolved;
    v.strict_category = g.strict_category;
    v.strict_resolved = g.strict_category == Category::Resolved;
    v.official_report = g.report_json.is_some();
    [
        v.fail_to_pass_success,
        v.fail_to_pass_failure,
        v.pass_to_pass_success,
        v.pass_to_pass_failure,
    ] = g.counts;
    v.error_reason = g.error_reason;
    v.reason = g.reason;
    v.needs_network = g.needs_network;
    (v, g.report_json)
}

/// The reason of a verdict whose failing tests all failed with network errors: the evidence,
/// and what to do about it (the run had no network: rerun with `--network`; it had: the
/// network it gave did not reach what the tests need).
pub fn needs_network_reason(e: &grading::NetworkEvidence, network: bool) -> String {
    if !e.explains_all() {
        // Some required tests failed otherwise: no advice the evidence does not back.
        return format!("unresolved; {}", e.summary());
    }
    let hint = if network {
        "the network this run gave did not reach what they need"
    } else {
        "this run had no network: run it again with --network"
    };
    format!("needs network: {}; {hint}", e.summary())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_network_advice_is_given_only_when_the_network_explains_every_failing_test() {
        let evidence = |unattributed: &[&str]| grading::NetworkEvidence {
            tests: vec!["t.py::test_a".into()],
            unattributed: unattributed.iter().map(|t| t.to_string()).collect(),
            error: "E   urllib.error.URLError: <urlopen error>".into(),
        };
        let all = needs_network_reason(&evidence(&[]), false);
        assert!(
            all.starts_with("needs network: 1 required test failed") && all.contains("--network"),
            "{all}"
        );
        let some = needs_network_reason(&evidence(&["t.py::test_b", "t.py::test_c"]), false);
        assert!(
            some.starts_with("unresolved; 1 required test failed with a network error"),
            "{some}"
        );
        assert!(
            some.contains("; 2 others failed otherwise") && !some.contains("--network"),
            "{some}"
        );
    }
}
