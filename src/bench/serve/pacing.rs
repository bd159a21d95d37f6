//! What a paced load says beside its latencies: the generator's own lateness, and the server's
//! own timing of the same submits, with the share of the machine's CPU a hypervisor took.

use std::collections::BTreeMap;

use super::server::{metric, ALL_TICKS, STEAL, SUBMIT};
use crate::bench::{Latencies, LoadReport};

/// What a paced load says beside its latencies: the generator's own lateness (left out of the
/// latencies), the 99th percentile with it, and the server's own timing of the same submits.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Pacing {
    /// The 99th percentile counted from when each request was due, the generator's lateness
    /// included, milliseconds.
    pub from_due_p99_ms: f64,
    /// The generator's lateness (from when a request could go to when it went), median,
    /// milliseconds (0 for a closed loop).
    pub late_p50_ms: f64,
    /// 99th percentile.
    pub late_p99_ms: f64,
    /// Largest.
    pub late_max_ms: f64,
    /// The server's own time to answer a submit (its `/metrics`, from the request handed to
    /// the handler to the answer made), share within 5 ms, over the load.
    pub server_within_5ms: f64,
    /// Share within 10 ms.
    pub server_within_10ms: f64,
    /// The share of this machine's CPU time a hypervisor took (steal) over the load; `None`
    /// where `/proc/stat` says nothing of it. A latency measured while the virtual CPUs were
    /// taken away is the host's, not the server's.
    pub steal: Option<f64>,
}

impl Pacing {
    /// Of `report`, with the server's metrics (and this machine's CPU ticks) `before` and
    /// `after` the load.
    pub(super) fn of(
        report: &LoadReport,
        before: &BTreeMap<String, f64>,
        after: &BTreeMap<String, f64>,
    ) -> Pacing {
        let ms = |l: &Latencies, q: f64| l.quantile(q).as_secs_f64() * 1000.0;
        let count = |le: &str| {
            let name = format!("{SUBMIT}_bucket{{le=\"{le}\"}}");
            metric(after, &name) - metric(before, &name)
        };
        let total = count("+Inf").max(1.0);
        Pacing {
            from_due_p99_ms: ms(&report.from_due, 0.99),
            late_p50_ms: ms(&report.lateness, 0.5),
            late_p99_ms: ms(&report.lateness, 0.99),
            late_max_ms: ms(&report.lateness, 1.0),
            server_within_5ms: count("0.005") / total,
            server_within_10ms: count("0.01") / total,
            steal: match (
                before.get(STEAL),
                after.get(STEAL),
                before.get(ALL_TICKS),
                after.get(ALL_TICKS),
            ) {
                (Some(s0), Some(s1), Some(t0), Some(t1)) if t1 > t0 => Some((s1 - s0) / (t1 - t0)),
                _ => None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::server::cpu_ticks;
    use super::*;

    #[test]
    fn the_steal_is_the_share_of_the_cpu_lines_ticks_between_two_snapshots() {
        let stat = |user: u64, idle: u64, steal: u64| {
            format!("cpu  {user} 0 10 {idle} 0 0 0 {steal} 5 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n")
        };
        assert_eq!(cpu_ticks(&stat(100, 800, 100)), Some((100, 1010)));
        assert_eq!(cpu_ticks("cpu0 1 2\n"), None);
        let snap = |t: &str| {
            let (steal, all) = cpu_ticks(t).unwrap();
            BTreeMap::from([
                (STEAL.to_string(), steal as f64),
                (ALL_TICKS.to_string(), all as f64),
            ])
        };
        let report = LoadReport::default();
        // 300 more ticks, 75 of them stolen.
        let p = Pacing::of(
            &report,
            &snap(&stat(100, 800, 100)),
            &snap(&stat(200, 925, 175)),
        );
        assert_eq!(p.steal, Some(0.25));
        // No machine counters (another system): nothing said.
        let none = Pacing::of(&report, &BTreeMap::new(), &BTreeMap::new());
        assert_eq!(none.steal, None);
    }
}
