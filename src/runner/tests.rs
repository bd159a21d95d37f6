//! The dispatcher driven on the fake engine, through its channels: predictions submitted with
//! their setups, setups arriving later, interrupts and stops; answers checked as they come back.
//! The fake answers each job as the driver would, from keywords in the patch, so every path can
//! be driven without Docker. (What a run writes is `orchestrate`'s to test.)

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::*;
use crate::engine::FakeEngine;
use crate::engine::{EngineError, Resource, LABEL_RUN_ID, LABEL_TOOL};
use swe_eval_core::predictions::Prediction;

use super::fixtures::{answer, fake, file, pred, setup, IMAGE};

fn config(run_id: &str) -> RunConfig {
    let mut c = RunConfig::new(run_id);
    c.workers = 2;
    c.backoff = Duration::from_millis(1);
    c
}

/// A dispatcher driven through its channels.
struct Drv {
    sub: Option<mpsc::UnboundedSender<Submission>>,
    arrive: Option<mpsc::UnboundedSender<Arrival>>,
    control: mpsc::UnboundedSender<Control>,
    need: mpsc::UnboundedReceiver<String>,
    events: mpsc::UnboundedReceiver<RunEvent>,
    task: JoinHandle<Driven>,
    next: u64,
}

/// Starts a dispatcher on `e` with `cfg`'s settings.
fn drv(e: &FakeEngine, cfg: &RunConfig) -> Drv {
    let owner = crate::owner::owner_id();
    let hints = cfg
        .durations
        .as_ref()
        .map(|p| Durations::load(p).0)
        .unwrap_or_default();
    let rules = Rules {
        config: Arc::new(job_config(cfg, &owner)),
        dedupe: cfg.dedupe,
        run_empty: cfg.run_empty,
        hints,
        hints_from: cfg.durations.clone(),
    };
    let (sub, submissions) = mpsc::unbounded_channel();
    let (arrive, setups) = mpsc::unbounded_channel();
    let (control, control_rx) = mpsc::unbounded_channel();
    let (need_tx, need) = mpsc::unbounded_channel();
    let (etx, events) = mpsc::unbounded_channel();
    let opts = DriveOptions {
        workers: cfg.workers,
        deadline: cfg.deadline,
        owner,
        run_id: cfg.run_id.clone(),
        durations: cfg.durations.clone(),
    };
    let channels = Channels {
        submissions,
        setups,
        control: control_rx,
        need: need_tx,
        events: etx,
    };
    let d = Dispatcher::new(rules, tokio::time::Instant::now());
    let task = tokio::spawn(drive(Arc::new(e.clone()), d, opts, channels));
    Drv {
        sub: Some(sub),
        arrive: Some(arrive),
        control,
        need,
        events,
        task,
        next: 0,
    }
}

/// A prediction with how its instance is offered (`Ok(setup)`: final; `Err(stand-in)`: to
/// prepare) and its deadline in seconds from now.
type Sub = (Prediction, Result<Arc<Setup>, Arc<Setup>>, Option<u64>);

impl Drv {
    fn submit(&mut self, items: Vec<Sub>) -> Vec<oneshot::Receiver<Answer>> {
        let mut rxs = Vec::new();
        let mut sub = Submission::default();
        for (prediction, offer, deadline) in items {
            let (tx, rx) = oneshot::channel();
            let setup = match offer {
                Ok(s) => SetupOffer::Final(s),
                Err(stand_in) => SetupOffer::Prepare(stand_in),
            };
            let item = Item {
                member: self.next,
                prediction,
                setup,
                deadline: deadline.map(|s| tokio::time::Instant::now() + Duration::from_secs(s)),
            };
            self.next += 1;
            sub.items.push((item, tx));
            rxs.push(rx);
        }
        if let Some(s) = &self.sub {
            let _ = s.send(sub);
        }
        rxs
    }

    fn arrive(&self, setup: Arc<Setup>) -> bool {
        self.arrive.as_ref().is_some_and(|a| {
            a.send(Arrival {
                setup,
                again: false,
            })
            .is_ok()
        })
    }

    /// Closes the submissions and the setups' channel; the dispatcher's end and every event.
    async fn end(mut self) -> (Driven, Vec<RunEvent>) {
        self.sub = None;
        self.arrive = None;
        let driven = self.task.await.unwrap();
        let mut events = Vec::new();
        while let Ok(e) = self.events.try_recv() {
            events.push(e);
        }
        (driven, events)
    }
}

/// Runs `items` (each with its instance's final setup, no deadline) to the end.
async fn go(
    e: &FakeEngine,
    cfg: &RunConfig,
    items: Vec<(Prediction, Arc<Setup>)>,
) -> (Vec<Answer>, Driven, Vec<RunEvent>) {
    let mut d = drv(e, cfg);
    let rxs = d.submit(items.into_iter().map(|(p, s)| (p, Ok(s), None)).collect());
    let mut answers = Vec::new();
    for rx in rxs {
        answers.push(rx.await.unwrap_or(Answer::NotRun));
    }
    let (driven, events) = d.end().await;
    (answers, driven, events)
}

fn decided(a: &Answer) -> &Decided {
    match a {
        Answer::Decided(d) => d,
        other => panic!("not decided: {other:?}"),
    }
}

fn category(a: &Answer) -> Category {
    decided(a).verdict.category
}

/// The instances of the jobs, in the order they started.
fn started_order(events: &[RunEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|ev| match ev {
            RunEvent::JobStarted { instance_id } => Some(instance_id.as_str()),
            _ => None,
        })
        .collect()
}

/// `n` predictions `GOOD` of instances `i0`, `i1`, ..., each ready, no deadline.
fn good(n: usize) -> Vec<Sub> {
    (0..n)
        .map(|i| {
            let id = format!("i{i}");
            (pred(&id, "m", 0, "GOOD"), Ok(s(&id)), None)
        })
        .collect()
}

fn s(id: &str) -> Arc<Setup> {
    setup(id, Ok(IMAGE)).1
}

#[tokio::test]
async fn every_category_is_reached_and_answered_with_its_logs() {
    let e = fake();
    let items = vec![
        (pred("a", "m", 0, "GOOD"), s("a")),
        (pred("b", "m", 0, "BAD"), s("b")),
        (pred("c", "m", 0, "NOAPPLY"), s("c")),
        (pred("d", "m", 0, "LOOP"), s("d")),
        (pred("e", "m", 0, ""), s("e")),
        (
            pred("f", "m", 0, "GOOD"),
            setup("f", Err("image build failed: boom")).1,
        ),
    ];
    let (answers, driven, _) = go(&e, &config("r1"), items).await;
    let cats: Vec<Category> = answers.iter().map(category).collect();
    assert_eq!(
        cats,
        [
            Category::Resolved,
            Category::Unresolved,
            Category::Error,
            Category::Error,
            Category::EmptyPatch,
            Category::InfraError
        ]
    );
    assert!(decided(&answers[3]).verdict.timed_out);
    assert!(decided(&answers[5])
        .verdict
        .reason
        .as_deref()
        .unwrap()
        .contains("boom"));
    assert_eq!(
        driven.tally.jobs_run, 4,
        "empty patches do not run; the failed image is not tried"
    );
    assert_eq!(e.jobs().len(), 4);
    let logs = decided(&answers[0]).logs.clone().expect("logs");
    assert_eq!(logs.patch.as_deref(), Some("GOOD"));
    let report: serde_json::Value =
        serde_json::from_str(logs.report_json.as_deref().unwrap()).unwrap();
    assert_eq!(report["a"]["resolved"], true);
    assert!(
        decided(&answers[2])
            .logs
            .as_ref()
            .unwrap()
            .report_json
            .is_none(),
        "no report for an unapplied patch"
    );
    assert!(decided(&answers[3])
        .logs
        .as_ref()
        .unwrap()
        .test_output
        .as_deref()
        .unwrap()
        .contains("Timeout error: 1800 seconds exceeded."));
    assert_eq!(
        decided(&answers[2]).logs.as_ref().unwrap().test_output,
        None,
        "no test output where the patch did not apply, as officially"
    );
    assert!(
        decided(&answers[4]).logs.is_none(),
        "an empty patch ran nothing"
    );
}

#[tokio::test]
async fn identical_patches_run_once_and_share_the_verdict() {
    let e = fake();
    let items = vec![
        (pred("a", "m1", 0, "GOOD"), s("a")),
        (pred("a", "m2", 0, "GOOD"), s("a")),
        (pred("a", "m1", 1, "GOOD"), s("a")),
        (pred("a", "m1", 2, "BAD"), s("a")),
    ];
    let (answers, driven, _) = go(&e, &config("r"), items).await;
    assert_eq!(driven.tally.jobs_run, 2);
    assert_eq!(e.jobs().len(), 2);
    let shared = &decided(&answers[1]).verdict;
    assert_eq!(
        (shared.category, shared.model.as_str()),
        (Category::Resolved, "m2")
    );
    assert_eq!(shared.shared_from.as_deref(), Some("m1/0"));
    assert_eq!(decided(&answers[2]).verdict.sample, 1);
    assert_eq!(category(&answers[3]), Category::Unresolved);
    assert!(
        decided(&answers[2]).logs.is_some(),
        "shared verdicts get the logs too"
    );

    // Without sharing (validate), every sample runs.
    let mut cfg = config("r");
    cfg.dedupe = false;
    let items = vec![
        (pred("a", "m1", 0, "GOOD"), s("a")),
        (pred("a", "m1", 1, "GOOD"), s("a")),
    ];
    let (_, driven, _) = go(&fake(), &cfg, items).await;
    assert_eq!(driven.tally.jobs_run, 2);
}

fn daemon_gone() -> EngineError {
    EngineError::Wait {
        name: "x".into(),
        message: "connection reset by peer".into(),
    }
}

#[tokio::test]
async fn transient_engine_errors_are_retried_and_counted_apart() {
    let e = fake();
    e.inject_job_fault(daemon_gone())
        .inject_job_fault(daemon_gone());
    let (answers, driven, _) =
        go(&e, &config("r"), vec![(pred("a", "m", 0, "GOOD"), s("a"))]).await;
    let v = &decided(&answers[0]).verdict;
    assert_eq!(
        v.category,
        Category::Resolved,
        "two failures, then success on the third try"
    );
    assert_eq!(v.infra_retries, 2);
    assert_eq!(driven.tally.infra_retries, 2);
    let names: std::collections::HashSet<_> = e.jobs().iter().map(|j| j.name.clone()).collect();
    assert_eq!(names.len(), 3, "each attempt has its own container name");

    let e = fake();
    for _ in 0..3 {
        e.inject_job_fault(daemon_gone());
    }
    let mut cfg = config("r");
    cfg.workers = 1;
    cfg.attempts = 3;
    let items = vec![
        (pred("a", "m", 0, "GOOD"), s("a")),
        (pred("b", "m", 0, "GOOD"), s("b")),
    ];
    let (answers, driven, _) = go(&e, &cfg, items).await;
    assert_eq!(
        category(&answers[0]),
        Category::InfraError,
        "retries ran out for one job only"
    );
    assert_eq!(category(&answers[1]), Category::Resolved);
    assert!(decided(&answers[0])
        .verdict
        .reason
        .as_deref()
        .unwrap()
        .contains("connection reset"));
    assert_eq!(driven.tally.infra_retries, 2);
}

#[tokio::test]
async fn missing_image_is_not_retried() {
    let e = fake();
    let (answers, _, _) = go(
        &e,
        &config("r"),
        vec![(pred("a", "m", 0, "GOOD"), setup("a", Ok("nope")).1)],
    )
    .await;
    assert_eq!(e.jobs().len(), 1);
    assert_eq!(category(&answers[0]), Category::InfraError);
}

#[tokio::test(start_paused = true)]
async fn second_interrupt_kills_the_running_jobs_and_this_processs_containers() {
    let e = fake();
    e.set_job_delay(Duration::from_secs(3600));
    let labels = BTreeMap::from([
        (LABEL_TOOL.to_string(), "1".to_string()),
        (LABEL_RUN_ID.to_string(), "r".to_string()),
        (LABEL_OWNER.to_string(), crate::owner::owner_id()),
    ]);
    // Stands for the running job's container, which the fake does not list by itself.
    e.add_container(Resource {
        id: "c1".into(),
        name: "swe-eval.r.0.0".into(),
        labels,
    });
    let mut cfg = config("r");
    cfg.workers = 1;
    let mut d = drv(&e, &cfg);
    let rxs = d.submit(good(3));
    tokio::time::sleep(Duration::from_secs(1)).await;
    d.control.send(Control::Interrupt).unwrap();
    d.control.send(Control::Interrupt).unwrap();
    let mut answers = Vec::new();
    for rx in rxs {
        answers.push(rx.await.unwrap_or(Answer::NotRun));
    }
    let (driven, events) = d.end().await;
    assert!(driven.tally.killed);
    assert!(
        answers.iter().all(|a| matches!(a, Answer::NotRun)),
        "{answers:?}"
    );
    assert!(e
        .calls()
        .contains(&crate::engine::Call::RemoveContainer("c1".into())));
    assert!(events
        .iter()
        .any(|e| matches!(e, RunEvent::Interrupted { count: 2 })));
}

#[tokio::test]
async fn reap_at_start_removes_containers_of_dead_processes_only() {
    let e = fake();
    let c = |id: &str, run: &str, owner: Option<String>| {
        let mut labels = BTreeMap::from([
            (LABEL_TOOL.to_string(), "1".to_string()),
            (LABEL_RUN_ID.to_string(), run.to_string()),
        ]);
        if let Some(o) = owner {
            labels.insert(LABEL_OWNER.to_string(), o);
        }
        Resource {
            id: id.into(),
            name: id.into(),
            labels,
        }
    };
    let host = crate::owner::hostname();
    let dead = format!("{host}:{}:1", std::process::id());
    let live_other = format!("{host}:1:{}", crate::owner::start_time(1).unwrap());
    e.add_container(c("same-run-dead", "r", Some(dead.clone())));
    e.add_container(c("same-run-live", "r", Some(live_other.clone())));
    e.add_container(c("other-host", "r", Some("elsewhere:1:1".into())));
    e.add_container(c("unowned-same-run", "r", None));
    e.add_container(c("unowned-other-run", "other", None));
    e.add_container(c("dead-other-run", "other", Some(dead)));
    let (_, driven, events) = go(&e, &config("r"), vec![]).await;
    assert!(driven.problems.is_empty());
    let removed: Vec<_> = e
        .calls()
        .into_iter()
        .filter_map(|c| match c {
            crate::engine::Call::RemoveContainer(id) => Some(id),
            _ => None,
        })
        .collect();
    assert_eq!(
        removed,
        ["same-run-dead", "unowned-same-run", "dead-other-run"],
        "a live process's containers are never touched"
    );
    assert!(events.iter().any(|e| matches!(
        e,
        RunEvent::Reaped {
            count: 3,
            at_start: true
        }
    )));
}

#[tokio::test]
async fn strict_mode_ships_the_collection_files_to_remove() {
    let e = fake();
    let patch = "diff --git a/tests/conftest.py b/tests/conftest.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/conftest.py\n@@ -0,0 +1 @@\n+GOOD = 1\n";
    let mut cfg = config("r");
    cfg.strict = true;
    go(&e, &cfg, vec![(pred("a", "m", 0, patch), s("a"))]).await;
    let job = &e.jobs()[0];
    assert_eq!(
        file(job, driver::STRICT_REMOVE_PATH),
        "A\ttests/conftest.py\n"
    );
    assert!(file(job, driver::DRIVER_PATH).contains(driver::STRICT_REMOVE_PATH));
    assert_eq!(job.labels.get(LABEL_RUN_ID).map(String::as_str), Some("r"));
    assert!(!job.network, "network is off by default");
}

#[test]
fn a_job_gets_at_least_the_cpus_its_spec_asks_for() {
    let base = crate::engine::Limits::default();
    let (_, plain) = setup("a", Ok("img"));
    assert_eq!(plain.limits(&base), base, "no spec CPUs: the run's limits");
    let mut two = (*plain).clone();
    two.cpus = Some(2.0);
    assert_eq!(two.limits(&base).cpus, Some(2.0), "pylint's nano_cpus: 2");
    assert_eq!(two.limits(&base).memory_bytes, base.memory_bytes);
    let mut wide = base.clone();
    wide.cpus = Some(4.0);
    assert_eq!(
        two.limits(&wide).cpus,
        Some(4.0),
        "never fewer than the run's"
    );
    wide.cpus = None;
    assert_eq!(two.limits(&wide).cpus, None, "no limit stays no limit");
}

#[tokio::test(start_paused = true)]
async fn jobs_of_an_awaited_instance_wait_for_its_setup_and_the_others_run_meanwhile() {
    let e = fake();
    e.set_job_delay(Duration::from_secs(1));
    let mut d = drv(&e, &config("r"));
    let rxs = d.submit(vec![
        (pred("a", "m", 0, "GOOD"), Ok(s("a")), None),
        (
            pred("b", "m", 0, "GOOD"),
            Err(setup("b", Err("not prepared yet")).1),
            None,
        ),
        (
            pred("c", "m", 0, "GOOD"),
            Err(setup("c", Err("not prepared yet")).1),
            None,
        ),
    ]);
    // b and c are asked for, in order.
    assert_eq!(d.need.recv().await.as_deref(), Some("b"));
    assert_eq!(d.need.recv().await.as_deref(), Some("c"));
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(e.jobs().len(), 1, "a ran while b and c were awaited");
    assert!(d.arrive(s("b")));
    // c's image failed: its prediction gets its infrastructure error at once.
    assert!(d.arrive(setup("c", Err("image build failed: boom")).1));
    let mut answers = Vec::new();
    for rx in rxs {
        answers.push(rx.await.unwrap());
    }
    let (driven, events) = d.end().await;
    assert_eq!(started_order(&events), ["a", "b", "c"]);
    assert_eq!(
        category(&answers[1]),
        Category::Resolved,
        "run with the setup that arrived"
    );
    assert!(decided(&answers[1]).image_wait >= Duration::from_secs(30));
    assert_eq!(decided(&answers[0]).image_wait, Duration::ZERO);
    assert_eq!(category(&answers[2]), Category::InfraError);
    assert!(decided(&answers[2])
        .verdict
        .reason
        .as_deref()
        .unwrap()
        .contains("boom"));
    assert_eq!(driven.tally.jobs_run, 2);
    assert_eq!(e.jobs().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn awaited_setups_never_sent_give_infra_verdicts_and_an_interrupt_closes_the_channel() {
    // The preparing side goes away without sending b: b runs with its stand-in.
    let e = fake();
    let mut d = drv(&e, &config("r"));
    let rxs = d.submit(vec![
        (pred("a", "m", 0, "GOOD"), Ok(s("a")), None),
        (
            pred("b", "m", 0, "GOOD"),
            Err(setup("b", Err("image not prepared")).1),
            None,
        ),
    ]);
    d.arrive = None;
    let mut answers = Vec::new();
    for rx in rxs {
        answers.push(rx.await.unwrap());
    }
    d.end().await;
    assert_eq!(category(&answers[1]), Category::InfraError);

    // Interrupted while b is awaited: the preparing side learns it (the channel closes),
    // and b is not run.
    let e = fake();
    e.set_job_delay(Duration::from_secs(5));
    let mut d = drv(&e, &config("r"));
    let rxs = d.submit(vec![
        (pred("a", "m", 0, "GOOD"), Ok(s("a")), None),
        (
            pred("b", "m", 0, "GOOD"),
            Err(setup("b", Err("image not prepared")).1),
            None,
        ),
    ]);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let arrive = d.arrive.clone().unwrap();
    assert!(!arrive.is_closed());
    d.control.send(Control::Interrupt).unwrap();
    arrive.closed().await;
    let mut answers = Vec::new();
    for rx in rxs {
        answers.push(rx.await.unwrap_or(Answer::NotRun));
    }
    let (driven, _) = d.end().await;
    assert_eq!(driven.tally.interrupts, 1);
    assert_eq!(category(&answers[0]), Category::Resolved);
    assert!(matches!(answers[1], Answer::NotRun));
    assert_eq!(driven.tally.jobs_run, 1);
}

#[tokio::test]
async fn jobs_start_longest_first_by_earlier_durations_which_the_dispatcher_updates() {
    let dir = tempfile::tempdir().unwrap();
    let durations = dir.path().join("cache").join("durations.json");
    std::fs::create_dir_all(durations.parent().unwrap()).unwrap();
    std::fs::write(
        &durations,
        r#"{"a": 1.0, "b": 9.0, "c": 5.0, "other": 3.0}"#,
    )
    .unwrap();
    let e = FakeEngine::new();
    e.add_image(IMAGE);
    e.on_image(IMAGE, |job| {
        let mut out = answer(job)?;
        out.run = Duration::from_millis(2500);
        Ok(out)
    });
    let mut cfg = config("r");
    cfg.workers = 1;
    cfg.durations = Some(durations.clone());
    let items = ["a", "b", "c"]
        .iter()
        .map(|id| (pred(id, "m", 0, "GOOD"), s(id)))
        .collect();
    let (answers, _, events) = go(&e, &cfg, items).await;
    assert!(answers.iter().all(|a| category(a) == Category::Resolved));
    assert_eq!(
        started_order(&events),
        ["b", "c", "a"],
        "longest expected first"
    );
    assert!(events.iter().any(|ev| matches!(ev,
        RunEvent::Note { message } if message.starts_with("longest jobs first: 3 of 3"))));
    let (kept, bad) = Durations::load(&durations);
    assert_eq!(bad, None);
    assert_eq!(
        (kept.get("a"), kept.get("b"), kept.get("other")),
        (Some(2.5), Some(2.5), Some(3.0)),
        "this run's figures replace the old ones; others are kept"
    );
}

#[tokio::test(start_paused = true)]
async fn jobs_whose_images_arrive_later_join_the_queue_in_longest_first_order() {
    let dir = tempfile::tempdir().unwrap();
    let durations = dir.path().join("durations.json");
    std::fs::write(&durations, r#"{"a": 1.0, "b": 9.0, "c": 5.0, "d": 7.0}"#).unwrap();
    let e = fake();
    e.set_job_delay(Duration::from_secs(10));
    let mut cfg = config("r");
    cfg.workers = 1;
    cfg.durations = Some(durations);
    let mut d = drv(&e, &cfg);
    let rxs = d.submit(vec![
        (pred("a", "m", 0, "GOOD"), Ok(s("a")), None),
        (pred("b", "m", 0, "GOOD"), Ok(s("b")), None),
        (
            pred("c", "m", 0, "GOOD"),
            Err(setup("c", Err("not prepared yet")).1),
            None,
        ),
        (pred("d", "m", 0, "GOOD"), Ok(s("d")), None),
    ]);
    // c arrives while b (the longest ready one) runs: it goes before a, after d.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(d.arrive(s("c")));
    for rx in rxs {
        assert_eq!(category(&rx.await.unwrap()), Category::Resolved);
    }
    let (_, events) = d.end().await;
    assert_eq!(started_order(&events), ["b", "d", "c", "a"]);
}

#[tokio::test(start_paused = true)]
async fn a_burst_of_arriving_images_starts_longest_first_not_in_arrival_order() {
    let dir = tempfile::tempdir().unwrap();
    let durations = dir.path().join("durations.json");
    std::fs::write(&durations, r#"{"a": 1.0, "b": 9.0, "c": 5.0, "d": 7.0}"#).unwrap();
    let e = fake();
    e.set_job_delay(Duration::from_secs(10));
    let mut cfg = config("r");
    cfg.workers = 2;
    cfg.durations = Some(durations);
    let mut d = drv(&e, &cfg);
    let ids = ["a", "b", "c", "d"];
    let rxs = d.submit(
        ids.iter()
            .map(|id| {
                (
                    pred(id, "m", 0, "GOOD"),
                    Err(setup(id, Err("not prepared yet")).1),
                    None,
                )
            })
            .collect(),
    );
    // Images found present: one arrival every 10 ms, the shortest first.
    for id in ids {
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(d.arrive(s(id)));
    }
    for rx in rxs {
        assert_eq!(category(&rx.await.unwrap()), Category::Resolved);
    }
    let (_, events) = d.end().await;
    assert_eq!(started_order(&events), ["b", "d", "c", "a"]);
}

#[tokio::test(start_paused = true)]
async fn a_longer_image_still_building_holds_dispatch_only_briefly() {
    let dir = tempfile::tempdir().unwrap();
    let durations = dir.path().join("durations.json");
    std::fs::write(&durations, r#"{"a": 1.0, "b": 9.0}"#).unwrap();
    let e = fake();
    e.set_job_delay(Duration::from_secs(1));
    let mut cfg = config("r");
    cfg.workers = 2;
    cfg.durations = Some(durations);
    let mut d = drv(&e, &cfg);
    let rxs = d.submit(vec![
        (pred("a", "m", 0, "GOOD"), Ok(s("a")), None),
        (
            pred("b", "m", 0, "GOOD"),
            Err(setup("b", Err("not prepared yet")).1),
            None,
        ),
    ]);
    // b's image takes a minute to build: a must not wait for it; held at most SETTLE, it has
    // run (1 s) long before.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(e.jobs().len(), 1, "a ran while b's image was building");
    tokio::time::sleep(Duration::from_secs(55)).await;
    assert!(d.arrive(s("b")));
    for rx in rxs {
        assert_eq!(category(&rx.await.unwrap()), Category::Resolved);
    }
    let (_, events) = d.end().await;
    assert_eq!(started_order(&events), ["a", "b"]);
}

#[tokio::test(start_paused = true)]
async fn jobs_prepared_ahead_start_as_workers_free_up_and_never_more_at_once() {
    let e = fake();
    e.set_prepares_ahead().set_job_delay(Duration::from_secs(1));
    let mut cfg = config("r");
    cfg.workers = 2;
    let mut d = drv(&e, &cfg);
    let rxs = d.submit(good(6));
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Two running, two more prepared and waiting at the gate.
    assert_eq!(e.jobs().len(), 4);
    for rx in rxs {
        assert_eq!(category(&rx.await.unwrap()), Category::Resolved);
    }
    let (driven, _) = d.end().await;
    assert_eq!(driven.tally.jobs_run, 6);
    assert_eq!(
        e.max_running(),
        2,
        "the gate holds the running to the workers"
    );
}

#[tokio::test(start_paused = true)]
async fn an_interrupt_withdraws_prepared_jobs_whose_predictions_are_not_run() {
    let e = fake();
    e.set_prepares_ahead()
        .set_job_delay(Duration::from_secs(10));
    let mut cfg = config("r");
    cfg.workers = 1;
    let mut d = drv(&e, &cfg);
    let rxs = d.submit(good(4));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(e.jobs().len(), 2, "one running, one prepared");
    d.control.send(Control::Interrupt).unwrap();
    let mut answers = Vec::new();
    for rx in rxs {
        answers.push(rx.await.unwrap_or(Answer::NotRun));
    }
    let (driven, _) = d.end().await;
    assert!(!driven.tally.killed);
    assert_eq!(driven.tally.jobs_run, 1, "the prepared job never started");
    assert_eq!(
        category(&answers[0]),
        Category::Resolved,
        "the running one finished"
    );
    assert!(answers[1..].iter().all(|a| matches!(a, Answer::NotRun)));
}

#[tokio::test(start_paused = true)]
async fn predictions_submitted_while_it_runs_are_answered_and_it_ends_when_the_channel_closes() {
    let e = fake();
    e.set_job_delay(Duration::from_secs(2));
    let mut d = drv(&e, &config("serve"));
    let first = d.submit(vec![
        (
            pred("b", "m", 0, "GOOD"),
            Err(setup("b", Err("not prepared yet")).1),
            None,
        ),
        (pred("a", "m", 0, "GOOD"), Ok(s("a")), None),
        (pred("a", "m", 1, "BAD"), Ok(s("a")), None),
        (pred("a", "m", 2, ""), Ok(s("a")), None),
    ]);
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(d.arrive(s("b")));
    let mut got = Vec::new();
    for rx in first {
        got.push(rx.await.unwrap());
    }
    // Later, while it still runs: a new one runs.
    let again = d.submit(vec![(pred("b", "m", 5, "BAD"), Ok(s("b")), None)]);
    for rx in again {
        got.push(rx.await.unwrap());
    }
    let (driven, events) = d.end().await;
    let cats: Vec<_> = got.iter().map(category).collect();
    assert_eq!(
        cats,
        [
            Category::Resolved,
            Category::Resolved,
            Category::Unresolved,
            Category::EmptyPatch,
            Category::Unresolved
        ]
    );
    assert!(decided(&got[0]).image_wait >= Duration::from_secs(10));
    assert!(decided(&got[1]).queue_wait.is_some() && decided(&got[3]).queue_wait.is_none());
    assert_eq!(e.jobs().len(), 4);
    assert_eq!(driven.tally.jobs_run, 4);
    assert_eq!(
        events
            .iter()
            .filter(|ev| matches!(ev, RunEvent::JobStarted { .. }))
            .count(),
        4
    );
    assert_eq!(
        events
            .iter()
            .filter(|ev| matches!(ev, RunEvent::JobEnded { .. }))
            .count(),
        4
    );
}

#[tokio::test(start_paused = true)]
async fn a_deadline_skips_a_job_not_started_and_cuts_a_running_ones_timeout() {
    let e = fake();
    e.set_job_delay(Duration::from_secs(10));
    let mut cfg = config("serve");
    cfg.workers = 1;
    let mut d = drv(&e, &cfg);
    // One worker: the first job takes 10 s; the second's deadline passes meanwhile; the third
    // (an endless one) starts with 25 s left, its timeout cut to them.
    let rxs = d.submit(vec![
        (pred("a", "m", 0, "GOOD"), Ok(s("a")), Some(100)),
        (pred("a", "m", 1, "BAD"), Ok(s("a")), Some(5)),
        (pred("a", "m", 2, "LOOP"), Ok(s("a")), Some(35)),
        (pred("a", "m", 3, "LOOP again"), Ok(s("a")), None),
    ]);
    let mut got = Vec::new();
    for rx in rxs {
        got.push(rx.await.unwrap());
    }
    d.end().await;
    assert!(decided(&got[0]).verdict.resolved);
    assert!(matches!(got[1], Answer::Expired { ran: false }));
    assert!(
        matches!(got[2], Answer::Expired { ran: true }),
        "{:?}",
        got[2]
    );
    // Without a deadline an endless job is the patch's own timeout: a verdict.
    assert!(decided(&got[3]).verdict.timed_out);
    let jobs = e.jobs();
    assert_eq!(jobs.len(), 3, "the expired job never started");
    assert!(
        jobs[1].timeout <= Duration::from_secs(25),
        "{:?}",
        jobs[1].timeout
    );
    assert_eq!(jobs[2].timeout, Duration::from_secs(1800));
}

#[tokio::test(start_paused = true)]
async fn an_interrupt_closes_the_submissions_and_answers_queued_ones_not_run() {
    let e = fake();
    e.set_job_delay(Duration::from_secs(5));
    let mut cfg = config("serve");
    cfg.workers = 1;
    let mut d = drv(&e, &cfg);
    let rxs = d.submit(vec![
        (pred("a", "m", 0, "GOOD"), Ok(s("a")), None),
        (pred("a", "m", 1, "GOOD too"), Ok(s("a")), None),
    ]);
    tokio::time::sleep(Duration::from_secs(1)).await;
    d.control.send(Control::Interrupt).unwrap();
    let sub = d.sub.clone().unwrap();
    sub.closed().await;
    let mut got = Vec::new();
    for rx in rxs {
        got.push(rx.await.unwrap_or(Answer::NotRun));
    }
    let (driven, _) = d.end().await;
    assert!(
        decided(&got[0]).verdict.resolved,
        "the running one finishes"
    );
    assert!(matches!(got[1], Answer::NotRun), "{:?}", got[1]);
    assert_eq!(driven.tally.jobs_run, 1);
}

#[tokio::test]
async fn identical_predictions_of_one_submission_share_a_job_and_both_are_answered() {
    let e = fake();
    let mut d = drv(&e, &config("serve"));
    let rxs = d.submit(vec![
        (pred("a", "m", 0, "GOOD"), Ok(s("a")), Some(60)),
        (pred("a", "m", 1, "GOOD"), Ok(s("a")), None),
    ]);
    let mut got = Vec::new();
    for rx in rxs {
        got.push(rx.await.unwrap());
    }
    let (driven, _) = d.end().await;
    assert_eq!(driven.tally.jobs_run, 1);
    assert_eq!(e.jobs().len(), 1);
    assert!(got.iter().all(|a| decided(a).verdict.resolved));
    assert_eq!(decided(&got[1]).verdict.shared_from.as_deref(), Some("m/0"));
    // One member without a deadline: the shared job's timeout is not cut.
    assert_eq!(e.jobs()[0].timeout, Duration::from_secs(1800));
}

#[tokio::test(start_paused = true)]
async fn the_runs_deadline_stops_dispatching_and_says_so() {
    let e = fake();
    e.set_job_delay(Duration::from_secs(10));
    let mut cfg = config("r");
    cfg.workers = 1;
    cfg.deadline = Some(Duration::from_secs(5));
    let mut d = drv(&e, &cfg);
    let rxs = d.submit(good(3));
    let mut got = Vec::new();
    for rx in rxs {
        got.push(rx.await.unwrap_or(Answer::NotRun));
    }
    let (driven, events) = d.end().await;
    assert_eq!(
        category(&got[0]),
        Category::Resolved,
        "the running job finishes"
    );
    assert!(got[1..].iter().all(|a| matches!(a, Answer::NotRun)));
    assert_eq!(driven.tally.jobs_run, 1);
    assert!(events.iter().any(|e| matches!(e, RunEvent::DeadlinePassed)));
}
