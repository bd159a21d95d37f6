//! How a command ended, and the one rule that decides it for every command.
//!
//! The rule: a command that finished is [`Ending::Clean`] only when nothing is left for a
//! person to look at: no input row or prediction skipped, no problem the run survived, no
//! prediction left without a verdict, no infrastructure error (its verdict says nothing about
//! the patch and is re-run by the next resume), and no check that failed (the mini
//! benchmark's expected verdicts, `validate`'s flagged instances). Anything else is
//! [`Ending::WithProblems`] (exit code 3), except results the output folder did not take (a
//! full or unwritable disk), which make it [`Ending::OutputFailed`] (exit code 1) whatever
//! else happened. A command that could not finish is an error (exit code 1), decided by the
//! binary.

use crate::runner::{Category, RunReport};

/// How a command ended when it did not fail outright.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Everything asked for was done.
    Clean,
    /// The command finished, but some inputs or jobs had problems (already reported on stderr).
    WithProblems,
    /// The command went on to the end, but some of its results could not be written (a full
    /// or unwritable output folder): a failure, as if it had stopped there.
    OutputFailed,
}

impl Ending {
    /// The process exit code: 0 clean, 3 finished with problems, 1 results not written.
    pub fn exit_code(self) -> i32 {
        match self {
            Ending::Clean => 0,
            Ending::WithProblems => 3,
            Ending::OutputFailed => 1,
        }
    }
}

/// What a finished command leaves for a person to look at, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Troubles {
    /// Input rows, predictions or arguments skipped.
    pub input_problems: usize,
    /// Problems the work survived (a file not written, a container not removed).
    pub run_problems: usize,
    /// Predictions left without a verdict (interrupted, deadline).
    pub not_run: usize,
    /// Predictions whose verdict is an infrastructure error.
    pub infra_errors: usize,
    /// Checks of the results that failed (expected verdicts that differ, flagged instances).
    pub failed_checks: usize,
    /// Results the output folder did not take (counted among `run_problems` too).
    pub output_failures: usize,
}

impl Troubles {
    /// The troubles of a command that reads inputs and writes results (`reward`, `grade`,
    /// `spec`, `correlate`): `n` problems, each an input skipped or a result not written.
    pub fn of_inputs(n: usize) -> Troubles {
        Troubles {
            input_problems: n,
            ..Troubles::default()
        }
    }

    /// The troubles of a run: its inputs' problems, and what its report counts.
    pub fn of_run(input_problems: usize, report: &RunReport) -> Troubles {
        Troubles {
            input_problems,
            run_problems: report.problems.len(),
            not_run: report.not_run,
            infra_errors: report.count(Category::InfraError),
            failed_checks: 0,
            output_failures: report.output_failures,
        }
    }

    /// The same, with `n` more failed checks.
    pub fn with_failed_checks(self, n: usize) -> Troubles {
        Troubles {
            failed_checks: self.failed_checks + n,
            ..self
        }
    }
}

/// The outcome of a finished command: clean only when there is no trouble of any kind.
pub fn ending(t: &Troubles) -> Ending {
    let Troubles {
        input_problems,
        run_problems,
        not_run,
        infra_errors,
        failed_checks,
        output_failures,
    } = *t;
    if output_failures > 0 {
        Ending::OutputFailed
    } else if input_problems + run_problems + not_run + infra_errors + failed_checks == 0 {
        Ending::Clean
    } else {
        Ending::WithProblems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_trouble_alone_makes_the_outcome_troubled() {
        let none = Troubles::default();
        let cases = [
            ("nothing", none, Ending::Clean, 0),
            (
                "a skipped input row",
                Troubles {
                    input_problems: 1,
                    ..none
                },
                Ending::WithProblems,
                3,
            ),
            (
                "a problem the run survived",
                Troubles {
                    run_problems: 2,
                    ..none
                },
                Ending::WithProblems,
                3,
            ),
            (
                "a prediction not run",
                Troubles { not_run: 1, ..none },
                Ending::WithProblems,
                3,
            ),
            (
                "an infrastructure error",
                Troubles {
                    infra_errors: 1,
                    ..none
                },
                Ending::WithProblems,
                3,
            ),
            (
                "a failed check",
                none.with_failed_checks(1),
                Ending::WithProblems,
                3,
            ),
            (
                "all at once",
                Troubles {
                    input_problems: 1,
                    run_problems: 1,
                    not_run: 1,
                    infra_errors: 1,
                    failed_checks: 1,
                    output_failures: 0,
                },
                Ending::WithProblems,
                3,
            ),
            (
                "a result the output folder did not take, with problems besides",
                Troubles {
                    run_problems: 2,
                    infra_errors: 1,
                    output_failures: 1,
                    ..none
                },
                Ending::OutputFailed,
                1,
            ),
        ];
        for (what, troubles, want, code) in cases {
            let got = ending(&troubles);
            assert_eq!(got, want, "{what}");
            assert_eq!(got.exit_code(), code, "{what}");
        }
    }

    #[test]
    fn a_runs_troubles_come_from_its_report() {
        let mut report = RunReport::default();
        assert_eq!(Troubles::of_run(0, &report), Troubles::default());
        report.counts.insert(Category::Resolved, 3);
        report.counts.insert(Category::Error, 1);
        assert_eq!(ending(&Troubles::of_run(0, &report)), Ending::Clean);
        report.counts.insert(Category::InfraError, 2);
        report.not_run = 1;
        report.problems.push("x".into());
        let t = Troubles::of_run(4, &report);
        assert_eq!(
            t,
            Troubles {
                input_problems: 4,
                run_problems: 1,
                not_run: 1,
                infra_errors: 2,
                failed_checks: 0,
                output_failures: 0,
            }
        );
        assert_eq!(t.with_failed_checks(2).failed_checks, 2);
        report.output_failures = 1;
        assert_eq!(ending(&Troubles::of_run(0, &report)), Ending::OutputFailed);
        assert_eq!(ending(&Troubles::of_inputs(0)), Ending::Clean);
        assert_eq!(ending(&Troubles::of_inputs(1)), Ending::WithProblems);
    }
}
