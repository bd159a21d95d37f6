//! This process's resident memory, as Linux reports it in `/proc/self/status`: the peak
//! (`VmHWM`) and the present (`VmRSS`).

/// A field of `/proc/self/status` in KiB (`VmHWM:`, `VmRSS:`), `None` where it is not there
/// (not Linux).
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The peak resident memory of this process so far (VmHWM), KiB.
pub fn peak_rss_kib() -> Option<u64> {
    status_kib("VmHWM:")
}

/// Peak and present resident memory of this process, MiB (0 where Linux does not say). The
/// present is read first, so the peak is never below it.
pub fn memory_mib() -> (f64, f64) {
    let mib = |kib: Option<u64>| kib.map_or(0.0, |k| k as f64 / 1024.0);
    let now = mib(status_kib("VmRSS:"));
    (mib(peak_rss_kib()), now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_is_at_least_the_present_memory() {
        let (peak, now) = memory_mib();
        if cfg!(target_os = "linux") {
            assert!(now > 0.0 && peak >= now, "peak {peak} MiB, now {now} MiB");
        }
    }
}
