//! Where image preparation's time went: each build phase's time (repository fetch, snapshot,
//! docker build) summed per kind of image (base, environment, history, instance), from the
//! [`BuildEvent`]s preparation reports; and the line each phase gets in the build logs
//! (`<output>/logs/build_images/timings.jsonl`).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::images::{BuildEvent, Phase, Stage};

/// Image preparation of a run, summed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PrepTimes {
    /// From the first image looked for to the last one ready (zero when nothing was prepared).
    pub wall: Duration,
    /// Instances whose image was ready.
    pub ready: usize,
    /// Instances whose image failed (or was not built because preparation stopped).
    pub failed: usize,
    /// Per kind of image: builds and the time of each phase, summed over builds that ran side
    /// by side (so the sum may exceed the wall time).
    pub stages: BTreeMap<Stage, StageTimes>,
}

/// The builds of one kind of image.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StageTimes {
    /// Images built (or bootstrapped, or pulled).
    pub built: usize,
    /// Builds that failed.
    pub failed: usize,
    /// Time per phase, summed.
    pub phases: BTreeMap<Phase, Duration>,
}

impl PrepTimes {
    /// Counts a timed phase; other events change nothing.
    pub fn add(&mut self, event: &BuildEvent) {
        let BuildEvent::Timed {
            stage,
            phase,
            took,
            ok,
            ..
        } = event
        else {
            return;
        };
        let s = self.stages.entry(*stage).or_default();
        *s.phases.entry(*phase).or_default() += *took;
        if *phase == Phase::Build {
            if *ok {
                s.built += 1;
            } else {
                s.failed += 1;
            }
        }
    }

    /// Time summed over every stage and phase.
    pub fn total(&self) -> Duration {
        self.stages.values().flat_map(|s| s.phases.values()).sum()
    }
}

/// The JSON line of a timed phase for the build logs' `timings.jsonl`; `None` for other
/// events.
pub fn log_line(event: &BuildEvent) -> Option<String> {
    let BuildEvent::Timed {
        stage,
        image,
        phase,
        took,
        ok,
    } = event
    else {
        return None;
    };
    let row = serde_json::json!({
        "stage": stage.as_str(),
        "image": image,
        "phase": phase.as_str(),
        "secs": (took.as_secs_f64() * 1000.0).round() / 1000.0,
        "ok": ok,
    });
    Some(row.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(stage: Stage, phase: Phase, ms: u64, ok: bool) -> BuildEvent {
        BuildEvent::Timed {
            stage,
            image: "img:1".into(),
            phase,
            took: Duration::from_millis(ms),
            ok,
        }
    }

    #[test]
    fn phases_are_summed_per_stage_and_builds_counted() {
        let mut t = PrepTimes::default();
        for e in [
            timed(Stage::History, Phase::Fetch, 500, true),
            timed(Stage::History, Phase::Snapshot, 200, true),
            timed(Stage::History, Phase::Build, 1000, true),
            timed(Stage::History, Phase::Snapshot, 300, true),
            timed(Stage::History, Phase::Build, 2000, false),
            timed(Stage::Instance, Phase::Build, 4000, true),
            BuildEvent::Started {
                stage: Stage::Instance,
                image: "x".into(),
            },
        ] {
            t.add(&e);
        }
        let h = &t.stages[&Stage::History];
        assert_eq!((h.built, h.failed), (1, 1));
        assert_eq!(h.phases[&Phase::Snapshot], Duration::from_millis(500));
        assert_eq!(h.phases[&Phase::Build], Duration::from_millis(3000));
        assert_eq!(t.stages[&Stage::Instance].built, 1);
        assert_eq!(t.total(), Duration::from_millis(8000));
        assert!(!t.stages.contains_key(&Stage::Environment));
    }

    #[test]
    fn a_log_line_names_stage_image_phase_and_seconds() {
        let line = log_line(&timed(Stage::Environment, Phase::Build, 1234, false)).unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"stage": "environment", "image": "img:1", "phase": "build",
                "secs": 1.234, "ok": false})
        );
        assert_eq!(
            log_line(&BuildEvent::Started {
                stage: Stage::Base,
                image: "b".into()
            }),
            None
        );
    }
}
