//! The documented range of every count and threshold a command takes, and what this machine
//! can use. A value outside its range is bad usage (the command line refuses it, exit code 2,
//! naming the range); a worker count inside it is still bounded by what the machine can use
//! ([`bound_workers`]), and the command says so when it uses fewer than asked.
//!
//! Ranges are wide enough for any real use and narrow enough that no value in them can take
//! the machine down: the largest bootstrap keeps its resamples' statistics in a few tens of
//! MB, the largest worker count asks for no more threads than the operating system gives a
//! process, and every worker count is cut to the cores (threads) or to the engine's CPUs
//! (containers, each given one CPU).

/// An inclusive range of allowed values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range<T> {
    /// The smallest allowed value.
    pub min: T,
    /// The largest allowed value.
    pub max: T,
}

impl<T: Copy + PartialOrd + std::fmt::Display> Range<T> {
    /// Whether `v` is allowed.
    pub fn contains(&self, v: T) -> bool {
        self.min <= v && v <= self.max
    }

    /// `[allowed: MIN to MAX]`, as every `--help` states a range.
    pub fn describe(&self) -> String {
        format!("[allowed: {} to {}]", self.min, self.max)
    }
}

/// Worker threads or containers at once (`-j`): at most this many may be asked for; at most
/// what the machine can use are used ([`bound_workers`]).
pub const WORKERS: Range<usize> = Range { min: 1, max: 1024 };

/// Image builds at once (`--build-jobs`).
pub const BUILD_JOBS: Range<usize> = Range { min: 1, max: 64 };

/// A job's timeout in seconds (`--timeout`): a zero timeout would time out every job before
/// it starts; the longest is a week.
pub const TIMEOUT_SECS: Range<u64> = Range {
    min: 1,
    max: 604_800,
};

/// Bootstrap resamples (`--bootstrap`; 0: no interval). The statistics of every resample are
/// kept to take percentiles: at the maximum, 100,000 per group and score (0.8 MB each).
pub const BOOTSTRAP: Range<usize> = Range {
    min: 0,
    max: 100_000,
};

/// Repetitions of each of the gold and empty runs (`validate -k`).
pub const REPEAT: Range<u32> = Range { min: 1, max: 100 };

/// Blind spots shown of each kind (`correlate --blind-spots`).
pub const BLIND_SPOTS: Range<usize> = Range { min: 0, max: 1000 };

/// A score threshold (`correlate --thresholds`): similarity is 0 to 1 and reward -1 to 1.
pub const THRESHOLD: Range<f64> = Range {
    min: -1.0,
    max: 1.0,
};

/// Timed passes or repetitions of a benchmark (`bench ... --repeat`, `--iterations`).
pub const BENCH_PASSES: Range<usize> = Range { min: 1, max: 1000 };

/// Synthetic predictions of `bench correlate --n`.
pub const BENCH_PREDICTIONS: Range<usize> = Range {
    min: 2,
    max: 1_000_000,
};

/// Rows of `bench html --count`.
pub const BENCH_ROWS: Range<usize> = Range {
    min: 1,
    max: 100_000,
};

/// Predictions of `bench harness --predictions`, `--queued` and `--queued-run`.
pub const BENCH_JOBS: Range<usize> = Range {
    min: 0,
    max: 100_000,
};

/// Size of `bench reward`'s pathological patch in KB (0 skips it).
pub const BENCH_PATCH_KB: Range<usize> = Range {
    min: 0,
    max: 10_240,
};

/// The cores this process may run on (its CPU affinity and cgroup quota counted), at least 1.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A worker count as asked and as used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workers {
    /// What was asked for.
    pub asked: usize,
    /// What is used: the request, cut to what the machine can use, at least 1.
    pub used: usize,
    /// What the machine can use.
    pub usable: usize,
}

impl Workers {
    /// The sentence saying the request was cut, when it was: `-j 64: this machine can use 2
    /// worker threads (its cores); using 2`.
    pub fn note(&self, what: &str, why: &str) -> Option<String> {
        (self.used < self.asked).then(|| {
            format!(
                "-j {}: this machine can use {} {what} ({why}); using {}",
                self.asked, self.usable, self.used
            )
        })
    }
}

/// `asked` (default: `usable`) cut to `usable`, at least 1.
pub fn bound_workers(asked: Option<usize>, usable: usize) -> Workers {
    let usable = usable.max(1);
    let asked = asked.unwrap_or(usable).max(1);
    Workers {
        asked,
        used: asked.min(usable),
        usable,
    }
}

/// `serve --max-queue`: requests accepted and not done.
pub const SERVE_QUEUE: Range<usize> = Range {
    min: 1,
    max: 1_000_000,
};

/// `serve --max-patch-bytes`: the largest patch a request may carry (at most 256 MiB).
pub const SERVE_PATCH_BYTES: Range<usize> = Range {
    min: 1,
    max: 1 << 28,
};

/// `serve --max-body-memory`: the bytes of request bodies a server holds at once, all
/// connections together. At least the largest body (64 MiB), so every body the server takes
/// can be read; at most 64 GiB.
pub const SERVE_BODY_MEMORY: Range<usize> = Range {
    min: 64 << 20,
    max: 64 << 30,
};

/// `serve export --since`: a request number.
pub const REQUEST_NUMBER: Range<u64> = Range {
    min: 0,
    max: 1_000_000_000_000,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_are_cut_to_what_the_machine_can_use() {
        assert_eq!(
            bound_workers(Some(100_000), 2),
            Workers {
                asked: 100_000,
                used: 2,
                usable: 2
            }
        );
        let w = bound_workers(Some(64), 2);
        assert_eq!(
            w.note("worker threads", "its cores").as_deref(),
            Some("-j 64: this machine can use 2 worker threads (its cores); using 2")
        );
        assert_eq!(bound_workers(None, 3).used, 3);
        assert_eq!(bound_workers(Some(1), 8).note("x", "y"), None);
        assert_eq!(bound_workers(Some(0), 0).used, 1);
        assert!(cores() >= 1);
    }

    #[test]
    fn ranges_say_what_they_allow() {
        assert_eq!(WORKERS.describe(), "[allowed: 1 to 1024]");
        assert!(TIMEOUT_SECS.contains(1) && !TIMEOUT_SECS.contains(0));
        assert!(THRESHOLD.contains(0.5) && !THRESHOLD.contains(f64::NAN));
        assert!(BOOTSTRAP.contains(0) && !BOOTSTRAP.contains(100_001));
    }
}
