//! This process's resident memory as Linux reports it in `/proc/self/status`: the present
//! (`VmRSS`) and the peak so far (`VmHWM`). The one reader of those fields: `serve`'s
//! Prometheus page and the benchmarks' figures both take them from here.
//!
//! It imports nothing else of the crate, so the face and the benchmarks (which may not import
//! each other) can both use it.

/// Resident memory of this process, KiB; `None` where the system does not say (not Linux).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resident {
    /// Resident now (`VmRSS`).
    pub now_kib: Option<u64>,
    /// The most resident since the process started (`VmHWM`).
    pub peak_kib: Option<u64>,
}

impl Resident {
    /// Both figures, from one read of `/proc/self/status` (so the peak is never below the
    /// present).
    pub fn read() -> Resident {
        match std::fs::read_to_string("/proc/self/status") {
            Ok(status) => Resident::parse(&status),
            Err(_) => Resident {
                now_kib: None,
                peak_kib: None,
            },
        }
    }

    /// Both figures from the text of a `/proc/<pid>/status` file.
    fn parse(status: &str) -> Resident {
        let kib = |field: &str| -> Option<u64> {
            status
                .lines()
                .find_map(|l| l.strip_prefix(field))?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        };
        Resident {
            now_kib: kib("VmRSS:"),
            peak_kib: kib("VmHWM:"),
        }
    }

    /// The present, MiB (0 where the system does not say).
    pub fn now_mib(&self) -> f64 {
        mib(self.now_kib)
    }

    /// The peak, MiB (0 where the system does not say).
    pub fn peak_mib(&self) -> f64 {
        mib(self.peak_kib)
    }
}

fn mib(kib: Option<u64>) -> f64 {
    kib.map_or(0.0, |k| k as f64 / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fields_are_read_in_kib_and_a_missing_one_is_none() {
        let status =
            "Name:\tswe-eval\nVmPeak:\t  99999 kB\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\n";
        let r = Resident::parse(status);
        assert_eq!(r.now_kib, Some(10_240));
        assert_eq!(r.peak_kib, Some(20_480));
        assert_eq!((r.now_mib(), r.peak_mib()), (10.0, 20.0));
        let none = Resident::parse("Name:\tx\nVmRSS:\tlots kB\n");
        assert_eq!((none.now_kib, none.peak_kib), (None, None));
        assert_eq!(none.peak_mib(), 0.0);
    }

    #[test]
    fn this_process_has_a_peak_at_least_its_present_memory() {
        let r = Resident::read();
        if cfg!(target_os = "linux") {
            let (now, peak) = (r.now_kib.unwrap(), r.peak_kib.unwrap());
            assert!(now > 0 && peak >= now, "peak {peak} KiB, now {now} KiB");
        }
    }
}
