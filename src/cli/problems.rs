//! Input problems printed on stderr, at most [`PROBLEMS_SHOWN`] of them.

/// Lines of problems printed at most; the rest are counted.
pub const PROBLEMS_SHOWN: usize = 20;

/// Prints problems on stderr, one per line with `prefix`, at most [`PROBLEMS_SHOWN`] of them,
/// then how many more there were. A garbage file of thousands of lines costs 21 lines.
pub fn print_problems<T: std::fmt::Display>(prefix: &str, problems: &[T]) {
    for p in problems.iter().take(PROBLEMS_SHOWN) {
        eprintln!("{prefix}{p}");
    }
    if problems.len() > PROBLEMS_SHOWN {
        eprintln!(
            "{prefix}... and {} more ({} problems in all)",
            problems.len() - PROBLEMS_SHOWN,
            problems.len()
        );
    }
}

/// Problem lines printed as they come (a run's warnings), at most [`PROBLEMS_SHOWN`]; the
/// rest are counted and [`Bounded::finish`] says how many.
#[derive(Debug, Default)]
pub struct Bounded {
    seen: usize,
}

impl Bounded {
    /// Prints `line` on stderr if fewer than [`PROBLEMS_SHOWN`] were printed, else counts it.
    pub fn line(&mut self, line: &str) {
        self.seen += 1;
        if self.seen <= PROBLEMS_SHOWN {
            eprintln!("{line}");
        }
    }

    /// Says how many lines were left out (`... and N more warnings (M in all)`), if any.
    pub fn finish(&self, what: &str) {
        if self.seen > PROBLEMS_SHOWN {
            eprintln!(
                "... and {} more {what} ({} in all)",
                self.seen - PROBLEMS_SHOWN,
                self.seen
            );
        }
    }
}
