//! The workflow on the fake engine with the mini benchmark's real specs and repositories (host
//! git): image preparation overlaps the jobs, a failed image's predictions still get their
//! verdicts, and Ctrl-C while images build stops the builds, keeps what was made held until
//! the cleanup, and removes what the cache level does not keep.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::workflow::{execute, ImagePolicy, RunOutput, Work};
use super::{load_inputs, Inputs};
use crate::engine::Engine;
use crate::engine::{exited, Call, FakeEngine};
use crate::images::{base_image_name, BuildEvent, CacheLevel, Phase, Stage};
use crate::runner::{Category, RunConfig, RunEvent, RunReport};
use crate::session::{Event, PrepTimes, PrepareOptions};
use swe_eval_core::repos::RepoSources;
use swe_eval_core::spec::{DebianRelease, Flavour};

const BUILD: Duration = Duration::from_secs(10);

fn mini(dir: &std::path::Path) -> (Inputs, PrepareOptions) {
    let inputs = load_inputs(&crate::orchestrate::Source::default(), dir).unwrap();
    let opts = PrepareOptions {
        flavour: Flavour::Debian,
        namespace: None,
        ca_cert: None,
        repos: RepoSources {
            mirrors: inputs.mini_mirrors.clone(),
            ..Default::default()
        },
        repo_cache: dir.join("repos"),
        base_cache: None,
        build_logs: dir.join("logs").join("build_images"),
        parallel: 1,
    };
    (inputs, opts)
}

/// A fake daemon with the base images, whose instance builds take [`BUILD`] each and whose
/// jobs take a second (paused clock) and print nothing.
fn engine() -> FakeEngine {
    let e = FakeEngine::new();
    for r in [
        DebianRelease::Bullseye,
        DebianRelease::Bookworm,
        DebianRelease::Trixie,
    ] {
        e.add_image(&base_image_name(r));
    }
    e.delay_builds_containing("swe-eval.eval.", BUILD);
    e.set_job_delay(Duration::from_secs(1));
    e.on_job(|_| true, |_| Ok(exited(0, "")));
    e
}

/// Runs the mini benchmark through [`execute`], sending an interrupt at the first event that
/// meets the first of `interrupt_at`, then at the next that meets the second, and so on.
async fn run(
    e: &FakeEngine,
    dir: &std::path::Path,
    interrupt_at: &[fn(&Event) -> bool],
) -> (RunReport, PrepTimes, Vec<Event>) {
    let (inputs, opts) = mini(dir);
    let mut config = RunConfig::new("r");
    config.workers = 2;
    let work = Work {
        dataset: &inputs.dataset,
        predictions: inputs.predictions.clone(),
        instance_ids: inputs.instance_ids.clone(),
    };
    let images = ImagePolicy {
        prepare: &opts,
        keep: CacheLevel::Env,
        setups: Default::default(),
    };
    let output = RunOutput {
        folder: dir.join("results"),
        summaries: true,
    };
    let (etx, mut erx) = mpsc::unbounded_channel();
    let (itx, irx) = mpsc::unbounded_channel();
    let watch = async {
        let mut seen = Vec::new();
        let mut triggers = interrupt_at.iter().peekable();
        while let Some(ev) = erx.recv().await {
            if triggers.peek().is_some_and(|t| t(&ev)) {
                triggers.next();
                let _ = itx.send(());
            }
            seen.push(ev);
        }
        seen
    };
    let go = async {
        let r = execute(Arc::new(e.clone()), work, config, &output, images, irx, etx).await;
        r.unwrap()
    };
    let ((report, times), events) = tokio::join!(go, watch);
    (report, times, events)
}

fn position(events: &[Event], what: impl Fn(&Event) -> bool) -> Option<usize> {
    events.iter().position(what)
}

fn instance_builds(e: &FakeEngine) -> usize {
    e.calls()
        .iter()
        .filter(|c| matches!(c, Call::BuildImage { tag, .. } if tag.starts_with("swe-eval.eval.")))
        .count()
}

fn image_done(ev: &Event) -> bool {
    matches!(ev, Event::ImageDone { .. })
}

fn job_started(ev: &Event) -> bool {
    matches!(ev, Event::Run(RunEvent::JobStarted { .. }))
}

/// The holds (containers) and the instance and history images still there: none once a run
/// at cache level `env` has cleaned up.
async fn leftovers(e: &FakeEngine) -> Vec<String> {
    let containers = e.list_containers(Default::default()).await.unwrap();
    let images = e
        .images()
        .into_iter()
        .filter(|i| i.starts_with("swe-eval.eval.") || i.starts_with("swe-eval.history."));
    containers.into_iter().map(|c| c.id).chain(images).collect()
}

#[tokio::test(start_paused = true)]
async fn jobs_run_while_later_images_build_and_times_are_summed() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine();
    let (report, times, events) = run(&e, dir.path(), &[]).await;

    // Instance images are built one at a time, 10 s each: the first jobs run long before the
    // last image is ready.
    let first_job = position(&events, job_started).expect("jobs ran");
    let last_image = events.iter().rposition(image_done).expect("images done");
    let first_image = position(&events, image_done).unwrap();
    assert!(
        first_image < first_job && first_job < last_image,
        "first image {first_image}, first job {first_job}, last image {last_image}"
    );
    let done = events.iter().filter(|e| image_done(e)).count();
    assert_eq!(done, 8, "one per mini instance");
    assert_eq!(
        report.verdicts_written(),
        22,
        "every prediction has its verdict"
    );
    assert_eq!(report.count(Category::InfraError), 0);
    assert_eq!(report.not_run, 0);

    // Where the time went: eight instance builds of 10 s each, the histories fetched and
    // snapshot on the host, all in the run's report and in the build logs.
    let inst = &times.stages[&Stage::Instance];
    assert_eq!((inst.built, inst.failed), (8, 0));
    assert_eq!(inst.phases[&Phase::Build], BUILD * 8);
    let hist = &times.stages[&Stage::History];
    assert!(hist.built >= 4, "a history image per base commit: {hist:?}");
    assert!(hist.phases.contains_key(&Phase::Fetch));
    assert!(hist.phases.contains_key(&Phase::Snapshot));
    assert_eq!((times.ready, times.failed), (8, 0));
    assert!(times.wall >= BUILD * 8, "{:?}", times.wall);
    let log = std::fs::read_to_string(dir.path().join("logs/build_images/timings.jsonl")).unwrap();
    let rows: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let instance_rows = rows
        .iter()
        .filter(|r| r["stage"] == "instance" && r["phase"] == "build")
        .count();
    assert_eq!(instance_rows, 8, "{log}");

    // Every build reported its start and its end to the bars.
    let started = events
        .iter()
        .filter(|e| matches!(e, Event::Build(BuildEvent::Started { .. })))
        .count();
    let ended = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::Build(BuildEvent::Timed {
                    phase: Phase::Build,
                    ..
                })
            )
        })
        .count();
    assert_eq!(started, ended);
    assert!(e.calls().iter().any(|c| matches!(c, Call::CreateHold(_))));
    assert_eq!(
        leftovers(&e).await,
        Vec::<String>::new(),
        "holds released, images removed"
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_image_gives_its_predictions_infra_verdicts_and_the_others_run() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine();
    let (inputs, _) = mini(dir.path());
    let victim = inputs.instance_ids[0].clone();
    e.fail_builds_containing(&victim.to_lowercase(), "E: scripted");
    let (report, times, events) = run(&e, dir.path(), &[]).await;
    let layout = crate::runner::Layout::new(&dir.path().join("results"), "r");
    let victims: Vec<_> = inputs
        .predictions
        .iter()
        .filter(|p| p.instance_id == victim && !p.is_empty_patch())
        .collect();
    assert!(!victims.is_empty());
    for p in &victims {
        let v = crate::runner::read_verdict(
            &layout
                .prediction_dir(&p.model_name_or_path, &p.instance_id, p.sample)
                .join(swe_eval_core::report::VERDICT_FILE),
        )
        .unwrap();
        assert_eq!(v.category, Category::InfraError);
        assert!(
            v.reason.as_deref().unwrap_or("").contains("not available"),
            "{:?}",
            v.reason
        );
    }
    assert_eq!(report.count(Category::InfraError), victims.len());
    assert_eq!(report.verdicts_written(), 22);
    assert_eq!((times.ready, times.failed), (7, 1));
    assert!(events.iter().any(|ev| matches!(
        ev,
        Event::ImageDone { instance_id, ok: false, .. } if *instance_id == victim
    )));
    let said = position(&events, |ev| {
        matches!(ev, Event::Notice(n) if n.message.contains(&victim) && n.message.contains("failed"))
    })
    .expect("the failure is said");
    let executed = position(&events, |ev| matches!(ev, Event::Executed)).unwrap();
    assert!(said < executed, "said as it happens, not after the run");
}

#[tokio::test(start_paused = true)]
async fn first_interrupt_while_images_build_stops_builds_and_finishes_running_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine();
    let (report, times, events) = run(&e, dir.path(), &[job_started]).await;
    assert!(report.interrupted && !report.killed);
    assert!(
        report.not_run > 0,
        "the later images' predictions were not run"
    );
    // The build running at the interrupt finished; no other started.
    let built = instance_builds(&e);
    assert!(built < 8, "{built} instance builds");
    let interrupted = position(&events, |ev| {
        matches!(ev, Event::Run(RunEvent::Interrupted { count: 1 }))
    })
    .unwrap();
    assert!(
        !events[interrupted..]
            .iter()
            .any(|ev| matches!(ev, Event::Build(BuildEvent::Started { .. }))),
        "no build starts after the interrupt"
    );
    assert_eq!(
        times.stages[&Stage::Instance].built,
        built,
        "the builds running at the interrupt finished"
    );
    assert!(
        report.jobs_run > 0,
        "the jobs running at the interrupt finished"
    );
    assert_eq!(
        times.ready + times.failed,
        8,
        "every instance accounted for"
    );
    assert!(times.failed > 0, "the images never built count as failed");
    // Nothing is left: jobs finished (their verdicts written), images removed, holds gone.
    assert_eq!(report.verdicts_written() + report.not_run, 22, "{report:?}");
    let stopped: Vec<&Event> = events
        .iter()
        .filter(
            |ev| matches!(ev, Event::Notice(n) if n.message.contains("preparation was stopped")),
        )
        .collect();
    assert_eq!(
        stopped.len(),
        1,
        "the builds not started, said in one line: {stopped:?}"
    );
    assert_eq!(leftovers(&e).await, Vec::<String>::new());
}

#[tokio::test(start_paused = true)]
async fn second_interrupt_abandons_the_builds_and_still_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine();
    let (report, _times, _events) = run(&e, dir.path(), &[job_started, job_started]).await;
    assert!(report.interrupted && report.killed);
    assert!(instance_builds(&e) < 8);
    assert_eq!(
        leftovers(&e).await,
        Vec::<String>::new(),
        "what was made before the kill is removed, its holds released"
    );
}
