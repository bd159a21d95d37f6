//! What the strict grading objected to in one job, for a trainer to log beside the score: the
//! job's patch and test output (its log files, which the dispatcher hands back in memory)
//! graded again as the runner graded them, so every finding comes with what it saw (the exit
//! code, the skipped tests, the files), which the verdict's one-line reason does not keep. Also
//! what was undone before the tests ran: collection-altering files a strict run removed or
//! restored, and edits to the hidden tests' files, which the eval script checks out again (the
//! patch earned nothing by them).

use crate::runner::{JobLogs, Setup, Verdict};
use swe_eval_core::grading::{
    self, collection_files, test_files_edited, Category, GradeInput, RunOutcome,
};

/// The objections to the verdict `v` of a job whose files are `logs`, run with `setup`
/// (`strict_run`: collection-altering files were removed before its tests). Empty where
/// nothing was objected to, and where no test was graded (the patch did not apply, the job
/// timed out, the infrastructure failed). No objection's text has `; ` of its own: the
/// Python client's `compute_score` joins them with it.
pub(super) fn objections(
    logs: &JobLogs,
    setup: &Setup,
    v: &Verdict,
    strict_run: bool,
) -> Vec<String> {
    let (Some(patch), Some(log)) = (logs.patch.as_deref(), logs.test_output.as_deref()) else {
        return Vec::new();
    };
    if !matches!(v.category, Category::Resolved | Category::Unresolved) {
        return Vec::new();
    }
    let inst = &setup.instance;
    let input = GradeInput {
        repo: &inst.repo,
        parser: &setup.log_parser,
        fail_to_pass: inst.fail_to_pass(),
        pass_to_pass: inst.pass_to_pass(),
        patch: Some(patch),
        outcome: RunOutcome::Completed {
            log,
            exit_code: v.test_exit_code,
        },
        collection_files_present: !strict_run,
    };
    let mut out: Vec<String> = match grading::grade(&input) {
        Ok(g) => g.strict_findings.iter().map(|f| f.describe()).collect(),
        // The runner graded the same log with the same parser; say so rather than nothing.
        Err(e) => vec![format!("ungraded: the log could not be graded again: {e}")],
    };
    if strict_run {
        let files = collection_files(patch);
        if !files.is_empty() {
            let listed: Vec<String> = files
                .iter()
                .map(|f| {
                    let how = if f.added { "removed" } else { "restored" };
                    format!("{} ({how})", f.path)
                })
                .collect();
            out.push(format!(
                "collection_files_removed: the patch adds or edits files that change how tests \
                 are collected, and they were removed or restored to the base commit before \
                 the tests ran: {}",
                listed.join(", ")
            ));
        }
    }
    let test_files = swe_eval_core::spec::modified_files(inst.test_patch.as_deref().unwrap_or(""));
    let edited = test_files_edited(patch, &test_files);
    if !edited.is_empty() {
        out.push(format!(
            "test_files_edited: the patch edits the hidden tests' files, which the eval script \
             checks out at the base commit before the tests run, so the edits counted for \
             nothing: {}",
            edited.join(", ")
        ));
    }
    out
}
