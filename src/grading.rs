//! Grading: test statuses and the FAIL_TO_PASS/PASS_TO_PASS lists in, a verdict out; no I/O. Not written yet.
