//! The dispatcher's rules as a table: a state (built by events), one event, and the effects it
//! must give, each effect shown as a short line. No engine, no task, no clock: each method is
//! handed the time.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::dispatcher::{Answer, Dispatcher, Effect, Item, Rules, SetupOffer};
use super::fixtures::no_image;
use super::job::{JobDone, JobLogs};
use super::job_config::JobConfig;
use super::store::{Category, Verdict};
use super::{empty_verdict, Durations, NoImage, RunEvent, Setup};
use swe_eval_core::predictions::Prediction;

const TIMEOUT: u64 = 100;

fn setup(id: &str, image: Result<&str, &str>) -> Arc<Setup> {
    Arc::new(Setup {
        instance: serde_json::from_value(serde_json::json!({
            "instance_id": id, "repo": "o/r", "base_commit": "c", "patch": "gold",
            "FAIL_TO_PASS": ["t::a"], "PASS_TO_PASS": [],
        }))
        .unwrap(),
        image: image.map(str::to_string).map_err(no_image),
        eval_script: "echo\n".into(),
        log_parser: "parse_log_pytest".into(),
        image_identity: "fixture".into(),
        cpus: None,
    })
}

fn rules(hints: &[(&str, f64)]) -> Rules {
    let mut d = Durations::default();
    for (id, secs) in hints {
        d.set(id, *secs);
    }
    Rules {
        config: Arc::new(JobConfig {
            run_id: "r".into(),
            labels: Default::default(),
            timeout: Duration::from_secs(TIMEOUT),
            limits: Default::default(),
            network: false,
            max_output_bytes: 1 << 20,
            strict: false,
            attempts: 1,
            backoff: Duration::from_millis(1),
        }),
        dedupe: true,
        run_empty: false,
        hints: d,
        hints_from: None,
    }
}

/// How a prediction's instance is offered: ready (`image`), to prepare, or without a spec.
#[derive(Clone, Copy)]
enum Offer {
    Ready,
    Prepare,
    NoImage,
}

struct T {
    d: Dispatcher,
    t0: Instant,
}

impl T {
    fn new() -> T {
        T::with(rules(&[]))
    }

    fn with(rules: Rules) -> T {
        let t0 = Instant::now();
        T {
            d: Dispatcher::new(rules, t0),
            t0,
        }
    }

    fn at(&self, secs: u64) -> Instant {
        self.t0 + Duration::from_secs(secs)
    }

    fn item(member: u64, id: &str, patch: &str, offer: Offer, deadline: Option<Instant>) -> Item {
        let setup = match offer {
            Offer::Ready => SetupOffer::Final(setup(id, Ok("img"))),
            Offer::Prepare => SetupOffer::Prepare(setup(id, Err("not prepared yet"))),
            Offer::NoImage => SetupOffer::Final(setup(id, Err("no test spec"))),
        };
        Item {
            member,
            prediction: Prediction {
                instance_id: id.into(),
                model_name_or_path: format!("m{member}"),
                model_patch: Some(patch.into()),
                sample: 0,
                line: None,
                extra: Default::default(),
            },
            setup,
            deadline,
        }
    }

    /// Submits one prediction at `secs`.
    fn submit(
        &mut self,
        secs: u64,
        member: u64,
        id: &str,
        patch: &str,
        offer: Offer,
    ) -> Vec<String> {
        let now = self.at(secs);
        show(
            &self
                .d
                .submit(now, vec![T::item(member, id, patch, offer, None)]),
        )
    }

    fn submit_until(
        &mut self,
        secs: u64,
        member: u64,
        id: &str,
        patch: &str,
        deadline: u64,
    ) -> Vec<String> {
        let (now, d) = (self.at(secs), Some(self.at(deadline)));
        show(
            &self
                .d
                .submit(now, vec![T::item(member, id, patch, Offer::Ready, d)]),
        )
    }

    fn start(&mut self, secs: u64) -> Vec<String> {
        let now = self.at(secs);
        show(&self.d.start_next(now))
    }

    fn finish(&mut self, seq: usize, category: Category, timed_out: bool) -> Vec<String> {
        show(&self.d.finished(seq, graded(category, timed_out)))
    }
}

fn graded(category: Category, timed_out: bool) -> JobDone {
    let p = Prediction {
        instance_id: "x".into(),
        model_name_or_path: String::new(),
        model_patch: None,
        sample: 0,
        line: None,
        extra: Default::default(),
    };
    let mut v: Verdict = empty_verdict(&p, "h", "r");
    v.category = category;
    v.strict_category = category;
    v.timed_out = timed_out;
    v.run_secs = 1.0;
    JobDone::Graded {
        verdict: Box::new(v),
        logs: Arc::new(JobLogs::default()),
    }
}

/// One line per effect.
fn show(fx: &[Effect]) -> Vec<String> {
    fx.iter()
        .map(|e| match e {
            Effect::Answer(m, Answer::Decided(d)) => {
                let v = &d.verdict;
                let shared = v
                    .shared_from
                    .as_ref()
                    .map(|s| format!(" shared from {s}"))
                    .unwrap_or_default();
                format!("answer {m}: {} as {}{shared}", v.category.as_str(), v.model)
            }
            Effect::Answer(m, Answer::Expired { ran }) => format!("answer {m}: expired, ran {ran}"),
            Effect::Answer(m, Answer::NotRun) => format!("answer {m}: not run"),
            Effect::Start { job, config } => format!(
                "start {} on {} ({}) timeout {}",
                job.seq,
                job.setup.instance.instance_id,
                match &job.setup.image {
                    Ok(image) => image.clone(),
                    Err(NoImage::Failed { message, .. }) => message.clone(),
                    Err(other) => other.to_string(),
                },
                config.timeout.as_secs()
            ),
            Effect::NeedSetup(id) => format!("need {id}"),
            Effect::Event(RunEvent::Submitted {
                predictions,
                jobs,
                shared,
                empty,
            }) => format!("submitted {predictions}: jobs {jobs} shared {shared} empty {empty}"),
            Effect::Event(RunEvent::JobStarted { instance_id }) => format!("started {instance_id}"),
            Effect::Event(RunEvent::JobEnded { instance_id }) => format!("ended {instance_id}"),
            Effect::Event(RunEvent::Interrupted { count }) => format!("interrupted {count}"),
            Effect::Event(RunEvent::DeadlinePassed) => "deadline passed".into(),
            Effect::Event(other) => format!("event {other:?}"),
            Effect::CloseGate => "close gate".into(),
            Effect::AbortRunning => "abort running".into(),
        })
        .collect()
}

/// The table: each row a state built by events, one event, and the effects it gives.
#[test]
fn each_event_in_each_state_gives_its_effects() {
    type Row = (
        &'static str,
        fn() -> (T, Vec<String>),
        &'static [&'static str],
    );
    let rows: &[Row] = &[
        (
            "empty state, a prediction of a ready instance: a job, queued",
            || {
                let mut t = T::new();
                let fx = t.submit(0, 1, "a", "p", Offer::Ready);
                (t, fx)
            },
            &["submitted 1: jobs 1 shared 0 empty 0"],
        ),
        (
            "empty state, a prediction of an instance to prepare: its setup is asked for",
            || {
                let mut t = T::new();
                let fx = t.submit(0, 1, "a", "p", Offer::Prepare);
                (t, fx)
            },
            &["need a", "submitted 1: jobs 1 shared 0 empty 0"],
        ),
        (
            "an empty patch: answered at once, no job",
            || {
                let mut t = T::new();
                let fx = t.submit(0, 1, "a", "  \n", Offer::Ready);
                (t, fx)
            },
            &[
                "answer 1: empty_patch as m1",
                "submitted 1: jobs 0 shared 0 empty 1",
            ],
        ),
        (
            "a job queued, an identical prediction: it joins the job",
            || {
                let mut t = T::new();
                t.submit(0, 1, "a", "p", Offer::Ready);
                let fx = t.submit(0, 2, "a", "p", Offer::Ready);
                (t, fx)
            },
            &["submitted 1: jobs 0 shared 1 empty 0"],
        ),
        (
            "a job running, an identical prediction: it joins the running job",
            || {
                let mut t = T::new();
                t.submit(0, 1, "a", "p", Offer::Ready);
                t.start(0);
                let fx = t.submit(1, 2, "a", "p", Offer::Ready);
                (t, fx)
            },
            &["submitted 1: jobs 0 shared 1 empty 0"],
        ),
        (
            "a job queued, a worker free: it starts with the run's timeout",
            || {
                let mut t = T::new();
                t.submit(0, 1, "a", "p", Offer::Ready);
                let fx = t.start(1);
                (t, fx)
            },
            &["started a", "start 0 on a (img) timeout 100"],
        ),
        (
            "a job waiting for its setup, a worker free: nothing starts",
            || {
                let mut t = T::new();
                t.submit(0, 1, "a", "p", Offer::Prepare);
                let fx = t.start(1);
                (t, fx)
            },
            &[],
        ),
        (
            "a job waiting, its setup arrives: it starts on the next free worker",
            || {
                let mut t = T::new();
                t.submit(0, 1, "a", "p", Offer::Prepare);
                t.d.setup_ready(t.at(5), setup("a", Ok("built")), false);
                let fx = t.start(6);
                (t, fx)
            },
            &["started a", "start 0 on a (built) timeout 100"],
        ),
        (
            "a job waiting, no setup will come: it runs with the stand-in (an infra verdict)",
            || {
                let mut t = T::new();
                t.submit(0, 1, "a", "p", Offer::Prepare);
                t.d.setups_ended(t.at(1));
                let fx = t.start(1);
                (t, fx)
            },
            &["started a", "start 0 on a (not prepared yet) timeout 100"],
        ),
        (
            "a job running with two predictions, it ends: each gets the verdict as its own",
            || {
                let mut t = T::new();
                t.submit(0, 1, "a", "p", Offer::Ready);
                t.submit(0, 2, "a", "p", Offer::Ready);
                t.start(0);
                let fx = t.finish(0, Category::Resolved, false);
                (t, fx)
            },
            &[
                "answer 1: resolved as m1",
                "answer 2: resolved as m2 shared from m1/0",
                "ended a",
            ],
        ),
        (
            "a job running, withdrawn (prepared ahead, then stopped): its predictions not run",
            || {
                let mut t = T::new();
                t.submit(0, 1, "a", "p", Offer::Ready);
                t.start(0);
                let fx = show(&t.d.finished(0, JobDone::Withdrawn));
                (t, fx)
            },
            &["answer 1: not run"],
        ),
        (
            "a job with a deadline 30 s away starts: its timeout is cut to the time left",
            || {
                let mut t = T::new();
                t.submit_until(0, 1, "a", "p", 40);
                let fx = t.start(10);
                (t, fx)
            },
            &["started a", "start 0 on a (img) timeout 30"],
        ),
        (
            "a job cut to its deadline times out: its prediction expired, no verdict",
            || {
                let mut t = T::new();
                t.submit_until(0, 1, "a", "p", 40);
                t.start(10);
                let fx = t.finish(0, Category::Error, true);
                (t, fx)
            },
            &["answer 1: expired, ran true"],
        ),
        (
            "a job queued whose deadline passed, a worker free: it is dropped, not started",
            || {
                let mut t = T::new();
                t.submit_until(0, 1, "a", "p", 5);
                let fx = t.start(6);
                (t, fx)
            },
            &["answer 1: expired, ran false"],
        ),
        (
            "one of two predictions of a queued job expires: the job stays for the other",
            || {
                let mut t = T::new();
                t.submit_until(0, 1, "a", "p", 5);
                t.submit(0, 2, "a", "p", Offer::Ready);
                let mut fx = show(&t.d.expire_due(t.at(6)));
                fx.extend(t.start(6));
                (t, fx)
            },
            &[
                "answer 1: expired, ran false",
                "started a",
                "start 0 on a (img) timeout 100",
            ],
        ),
        (
            "a running job's prediction expires: answered at once, the job goes on",
            || {
                let mut t = T::new();
                t.submit_until(0, 1, "a", "p", 200);
                t.start(0);
                let fx = show(&t.d.expire_due(t.at(201)));
                (t, fx)
            },
            &["answer 1: expired, ran true"],
        ),
        (
            "jobs queued and waiting, a stop: their predictions not run, the gate closes",
            || {
                let mut t = T::new();
                t.submit(0, 1, "a", "p", Offer::Ready);
                t.submit(0, 2, "b", "p", Offer::Prepare);
                let fx = show(&t.d.stop(Some(RunEvent::DeadlinePassed)));
                (t, fx)
            },
            &[
                "deadline passed",
                "close gate",
                "answer 1: not run",
                "answer 2: not run",
            ],
        ),
        (
            "stopped, a new prediction: not run",
            || {
                let mut t = T::new();
                t.d.stop(None);
                let fx = t.submit(1, 1, "a", "p", Offer::Ready);
                (t, fx)
            },
            &["answer 1: not run", "submitted 1: jobs 0 shared 0 empty 0"],
        ),
        (
            "a job running, a first interrupt: dispatching stops, the job goes on",
            || {
                let mut t = T::new();
                t.submit(0, 1, "a", "p", Offer::Ready);
                t.start(0);
                let fx = show(&t.d.interrupt());
                (t, fx)
            },
            &["interrupted 1", "close gate"],
        ),
        (
            "a job running, a second interrupt: the running jobs are killed",
            || {
                let mut t = T::new();
                t.submit(0, 1, "a", "p", Offer::Ready);
                t.start(0);
                t.d.interrupt();
                let fx = show(&t.d.interrupt());
                (t, fx)
            },
            &["interrupted 2", "abort running"],
        ),
        (
            "a killed job: its predictions not run",
            || {
                let mut t = T::new();
                t.submit(0, 1, "a", "p", Offer::Ready);
                t.start(0);
                t.d.kill();
                let fx = show(&t.d.abandoned(0));
                (t, fx)
            },
            &["answer 1: not run"],
        ),
        (
            "an instance without an image: its job starts and ends as an infra error (no container)",
            || {
                let mut t = T::new();
                t.submit(0, 1, "a", "p", Offer::NoImage);
                let fx = t.start(0);
                (t, fx)
            },
            &["started a", "start 0 on a (no test spec) timeout 100"],
        ),
    ];
    for (name, run, want) in rows {
        let (_, got) = run();
        assert_eq!(got, *want, "{name}");
    }
}

#[test]
fn jobs_start_longest_first_and_setups_are_asked_for_in_that_order() {
    let mut t = T::with(rules(&[("short", 1.0), ("long", 50.0), ("mid", 10.0)]));
    let items = ["short", "long", "mid"]
        .iter()
        .enumerate()
        .map(|(i, id)| T::item(i as u64, id, "p", Offer::Prepare, None))
        .collect();
    let fx = show(&t.d.submit(t.at(0), items));
    assert_eq!(
        fx,
        [
            "need long",
            "need mid",
            "need short",
            "submitted 3: jobs 3 shared 0 empty 0"
        ]
    );
    for id in ["short", "mid", "long"] {
        t.d.setup_ready(t.at(1), setup(id, Ok("img")), false);
    }
    let started: Vec<String> = (0..3)
        .flat_map(|_| t.start(2))
        .filter(|l| l.starts_with("started"))
        .collect();
    assert_eq!(started, ["started long", "started mid", "started short"]);
}

#[test]
fn a_burst_of_setups_is_waited_out_while_a_longer_instance_is_still_awaited() {
    let mut t = T::with(rules(&[("short", 1.0), ("long", 50.0)]));
    let items = vec![
        T::item(0, "short", "p", Offer::Prepare, None),
        T::item(1, "long", "p", Offer::Prepare, None),
    ];
    t.d.submit(t.at(0), items);
    let now = t.at(10);
    t.d.setup_ready(now, setup("short", Ok("img")), false);
    // The short one is ready, the long one still awaited: dispatch waits up to SETTLE.
    assert!(!t.d.can_start(now));
    assert_eq!(t.d.settle_until(now), Some(now + super::order::SETTLE));
    // Once the wait is over it starts what it has.
    assert!(t.d.can_start(now + super::order::SETTLE));
    // Or at once, when the long one arrives.
    t.d.setup_ready(now, setup("long", Ok("img")), false);
    assert!(t.d.can_start(now + super::order::SETTLE));
}

#[test]
fn a_setup_to_prepare_again_is_asked_for_by_the_next_prediction() {
    let mut t = T::new();
    t.submit(0, 1, "a", "p", Offer::Prepare);
    // Failed in a way that may pass: the waiting job takes it (an infra verdict) ...
    t.d.setup_ready(t.at(1), setup("a", Err("daemon away")), true);
    assert_eq!(
        t.start(1),
        ["started a", "start 0 on a (daemon away) timeout 100"]
    );
    // ... and a new prediction asks for the image again.
    assert_eq!(
        t.submit(2, 2, "a", "q", Offer::Prepare),
        ["need a", "submitted 1: jobs 1 shared 0 empty 0"]
    );
    // A job that finds no image (infra error) makes a ready instance prepared anew too.
    let mut t = T::new();
    t.submit(0, 1, "b", "p", Offer::Ready);
    t.start(0);
    t.finish(0, Category::InfraError, false);
    assert_eq!(
        t.submit(1, 2, "b", "p", Offer::Prepare),
        ["need b", "submitted 1: jobs 1 shared 0 empty 0"]
    );
}

#[test]
fn without_sharing_each_prediction_is_a_job_and_empty_runs_run() {
    let mut r = rules(&[]);
    r.dedupe = false;
    r.run_empty = true;
    let mut t = T::with(r);
    assert_eq!(
        t.submit(0, 1, "a", "", Offer::Ready),
        ["submitted 1: jobs 1 shared 0 empty 0"]
    );
    assert_eq!(
        t.submit(0, 2, "a", "", Offer::Ready),
        ["submitted 1: jobs 1 shared 0 empty 0"]
    );
    assert_eq!(t.d.tally().jobs_run, 0);
    t.start(0);
    t.start(0);
    assert_eq!(t.d.running(), 2);
    assert_eq!(t.d.tally().jobs_run, 2);
}

#[test]
fn an_idle_dispatcher_is_idle_and_counts_what_ran() {
    let mut t = T::new();
    assert!(t.d.idle());
    t.submit(0, 1, "a", "p", Offer::Ready);
    assert!(!t.d.idle());
    t.start(0);
    t.finish(0, Category::Resolved, false);
    assert!(t.d.idle());
    let tally = t.d.tally();
    assert_eq!((tally.jobs_run, tally.observed.len()), (1, 1));
    assert_eq!(tally.time.jobs, 1);
}

#[test]
fn only_an_empty_patch_is_decided_by_its_patch_and_only_when_empty_patches_are_not_run() {
    let config = rules(&[]).config;
    let s = setup("a", Ok("img"));
    let p = |patch: Option<&str>| Prediction {
        instance_id: "a".into(),
        model_name_or_path: "m".into(),
        model_patch: patch.map(str::to_string),
        sample: 3,
        line: None,
        extra: Default::default(),
    };
    for empty in [None, Some(""), Some(" \n\t")] {
        let d = super::decided_by_patch(&p(empty), &s, &config, false)
            .unwrap_or_else(|| panic!("{empty:?} is decided at once"));
        let v = &d.verdict;
        assert_eq!(
            (v.category, v.strict_category),
            (Category::EmptyPatch, Category::EmptyPatch)
        );
        assert_eq!(
            (v.model.as_str(), v.sample, v.run_id.as_str()),
            ("m", 3, "r")
        );
        assert_eq!(v.patch_hash, p(empty).patch_hash());
        assert!(
            v.identity.is_some(),
            "what it would have run under is recorded"
        );
        assert!(d.logs.is_none() && d.queue_wait.is_none());
        // Empty patches run when asked (validate): then a job decides.
        assert!(super::decided_by_patch(&p(empty), &s, &config, true).is_none());
    }
    assert!(super::decided_by_patch(&p(Some("diff")), &s, &config, false).is_none());
}
