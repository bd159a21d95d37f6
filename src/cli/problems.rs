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
