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

mod category;
mod collection;
mod grade;
mod groups;
mod network;

pub use category::{Category, ErrorReason};
pub use collection::{collection_files, collection_files_added, test_files_edited, CollectionFile};
pub use grade::{grade, suite_ran, GradeInput, Graded, RunOutcome, StrictFinding};
pub use groups::{group_tests, EvalType, Group, Mode, Resolution, TestGroups, FAIL_ONLY_REPOS};
pub use network::NetworkEvidence;
