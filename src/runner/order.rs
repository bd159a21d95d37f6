//! The order in which jobs start: longest expected first.
//!
//! With `-j N` workers the run's wall time is at least the longest chain of jobs one worker
//! runs; a long job started last leaves the other workers idle while it finishes (8 sympy
//! instances of 2-11 s on 2 workers: 27 s in dataset order, 23 s longest first). How long an
//! instance's tests take is known only from an earlier run, so the runner keeps, per instance,
//! the container time of its last run in a small file of the cache ([`Durations`]; by default
//! `~/.cache/swe-eval/durations.json`), reads it before dispatching and updates it at the end.
//! Jobs whose instance has no record are taken as long as the median of those that have (so
//! they are neither all first nor all last); with no record at all the order is the plan's.
//! The file is a hint: a missing, unreadable or malformed one orders nothing and fails nothing,
//! and two runs writing it at once may each lose the other's figures.

use std::collections::BTreeMap;
use std::path::Path;

/// Seconds an instance's job took in its last run, by instance id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Durations(BTreeMap<String, f64>);

impl Durations {
    /// Reads `path`. A file that is missing is no record; one that cannot be read or parsed is
    /// no record too, with the reason (for a note).
    pub fn load(path: &Path) -> (Durations, Option<String>) {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return (Durations::default(), None)
            }
            Err(e) => {
                return (
                    Durations::default(),
                    Some(format!("{}: {e}", path.display())),
                )
            }
        };
        match serde_json::from_str::<BTreeMap<String, serde_json::Value>>(&text) {
            Ok(map) => (
                Durations(
                    map.into_iter()
                        .filter_map(|(k, v)| {
                            v.as_f64()
                                .filter(|s| s.is_finite() && *s >= 0.0)
                                .map(|s| (k, s))
                        })
                        .collect(),
                ),
                None,
            ),
            Err(e) => (
                Durations::default(),
                Some(format!(
                    "{}: not a JSON object of seconds ({e})",
                    path.display()
                )),
            ),
        }
    }

    /// The record of `instance_id`, if any.
    pub fn get(&self, instance_id: &str) -> Option<f64> {
        self.0.get(instance_id).copied()
    }

    /// How long `instance_id`'s job is expected to take: its record, else the median of all
    /// records (0 with none).
    pub fn expected(&self, instance_id: &str) -> f64 {
        self.get(instance_id)
            .or_else(|| self.median())
            .unwrap_or(0.0)
    }

    /// Records `secs` for `instance_id` (the newest figure wins).
    pub fn set(&mut self, instance_id: &str, secs: f64) {
        if secs.is_finite() && secs >= 0.0 {
            self.0.insert(instance_id.to_string(), secs);
        }
    }

    /// How many instances have a record.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// No record at all.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The median record, if any.
    pub fn median(&self) -> Option<f64> {
        let mut v: Vec<f64> = self.0.values().copied().collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(v[v.len() / 2])
    }

    /// Merges `observed` into the file at `path` (read again just before, so records of other
    /// instances written meanwhile are kept) and writes it atomically.
    pub fn remember(
        path: &Path,
        observed: &[(String, f64)],
    ) -> Result<(), swe_eval_core::fsutil::WriteError> {
        if observed.is_empty() {
            return Ok(());
        }
        let (mut all, _) = Durations::load(path);
        for (id, secs) in observed {
            all.set(id, *secs);
        }
        let rounded: BTreeMap<&String, f64> = all
            .0
            .iter()
            .map(|(k, v)| (k, (v * 1000.0).round() / 1000.0))
            .collect();
        swe_eval_core::fsutil::write_json_atomic(path, &rounded)
    }
}

/// Whether an instance still awaited (its image not ready yet) is expected to run longer than
/// `head`, the instance of the job dispatch would start next, by more than [`SETTLE`]. Images
/// already present arrive one after another within milliseconds; the dispatcher waits
/// [`SETTLE`] after each arrival while this holds, so such a burst is ordered before the first
/// jobs start, not in the order it arrived. Starting the head first can cost the run at most
/// the difference between the two, so a difference below the wait is not worth waiting for
/// (trivial jobs of a fraction of a second never wait).
pub fn awaited_runs_longer<'a>(
    hints: &Durations,
    mut awaited: impl Iterator<Item = &'a str>,
    head: &str,
) -> bool {
    let Some(median) = hints.median() else {
        return false;
    };
    let expected = |id: &str| hints.get(id).unwrap_or(median);
    let head = expected(head);
    awaited.any(|id| expected(id) > head + SETTLE.as_secs_f64())
}

/// How long dispatch waits after the run's start or an arrival for more setups to arrive,
/// while [`awaited_runs_longer`] holds: enough for a burst of images found present (about 10 ms
/// apart), little against any job or build.
pub const SETTLE: std::time::Duration = std::time::Duration::from_millis(150);

/// Orders `items` longest expected first by their instance (`instance_of`); stable: equal
/// expectations keep the order given.
pub fn arrange<T>(items: &mut [T], instance_of: impl Fn(&T) -> &str, hints: &Durations) {
    let Some(median) = hints.median() else {
        return;
    };
    let expected = |t: &T| hints.get(instance_of(t)).unwrap_or(median);
    items.sort_by(|a, b| expected(b).total_cmp(&expected(a)));
}

/// What the run says about the order of `instances` (the first jobs submitted): how many an
/// earlier run timed, when any is and there is more than one.
pub fn order_note(hints: &Durations, instances: &[&str], path: &Path) -> Option<String> {
    let known = instances
        .iter()
        .filter(|id| hints.get(id).is_some())
        .count();
    (known > 0 && instances.len() > 1).then(|| {
        format!(
            "longest jobs first: {known} of {} instances timed by earlier runs ({})",
            instances.len(),
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arranged(ids: &[&'static str], d: &Durations) -> Vec<&'static str> {
        let mut v = ids.to_vec();
        arrange(&mut v, |id| *id, d);
        v
    }

    #[test]
    fn longest_expected_first_and_unknown_ones_as_the_median() {
        let mut d = Durations::default();
        d.set("a", 2.0);
        d.set("b", 11.0);
        d.set("c", 4.0);
        d.set("d", 9.0);
        // Median of 2, 4, 9, 11 taken as the upper middle: 9; "new" ties with d and keeps
        // its place before it.
        assert_eq!(
            arranged(&["a", "b", "c", "new", "d"], &d),
            ["b", "new", "d", "c", "a"]
        );
    }

    #[test]
    fn only_a_difference_longer_than_the_wait_is_waited_for() {
        let awaited = ["long"];
        let mut d = Durations::default();
        d.set("head", 2.0);
        d.set("long", 9.0);
        assert!(awaited_runs_longer(&d, awaited.into_iter(), "head"));
        // Trivial jobs: 0.1 s against 0.2 s is not worth 0.15 s of waiting.
        d.set("head", 0.1);
        d.set("long", 0.2);
        assert!(!awaited_runs_longer(&d, awaited.into_iter(), "head"));
        assert!(!awaited_runs_longer(
            &Durations::default(),
            awaited.into_iter(),
            "head"
        ));
    }

    #[test]
    fn no_record_keeps_the_given_order_and_the_note_counts_the_timed_ones() {
        assert_eq!(
            arranged(&["z", "a", "m"], &Durations::default()),
            ["z", "a", "m"]
        );
        let mut d = Durations::default();
        d.set("a", 1.0);
        let path = Path::new("d.json");
        assert_eq!(
            order_note(&d, &["a", "b"], path).as_deref(),
            Some("longest jobs first: 1 of 2 instances timed by earlier runs (d.json)")
        );
        assert_eq!(order_note(&d, &["a"], path), None);
        assert_eq!(order_note(&d, &["b", "c"], path), None);
    }

    #[test]
    fn the_file_is_merged_and_a_bad_one_is_no_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache").join("durations.json");
        assert_eq!(Durations::load(&path), (Durations::default(), None));
        Durations::remember(&path, &[("a".into(), 3.25), ("b".into(), 1.0)]).unwrap();
        Durations::remember(&path, &[("b".into(), 7.5)]).unwrap();
        let (d, note) = Durations::load(&path);
        assert_eq!(note, None);
        assert_eq!(
            (d.get("a"), d.get("b"), d.len()),
            (Some(3.25), Some(7.5), 2)
        );

        std::fs::write(&path, "not json").unwrap();
        let (d, note) = Durations::load(&path);
        assert!(d.is_empty());
        assert!(note.unwrap().contains("durations.json"));
        // Negative, infinite and non-number entries are dropped, the rest kept.
        std::fs::write(&path, r#"{"a": -1, "b": "x", "c": 2.5}"#).unwrap();
        let (d, _) = Durations::load(&path);
        assert_eq!(
            (d.get("a"), d.get("b"), d.get("c")),
            (None, None, Some(2.5))
        );
        // A bad file is replaced by the new records, not an error.
        std::fs::write(&path, "[1, 2]").unwrap();
        Durations::remember(&path, &[("x".into(), 1.5)]).unwrap();
        assert_eq!(Durations::load(&path).0.get("x"), Some(1.5));
    }
}
