//! The evaluator on the fake engine with the mini benchmark's real specs and repositories:
//! identical requests run once (in flight and from the cache), requests survive a restart and
//! run once, deadlines answer a masked timeout, a full queue refuses, an engine failure is a
//! masked infrastructure error and the evaluator goes on.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::engine::{exited, FakeEngine};
use crate::engine::{EngineError, JobSpec};
use crate::images::base_image_name;
use crate::runner::RunConfig;
use crate::session::PrepareOptions;
use swe_eval_core::repos::RepoSources;
use swe_eval_core::spec::{DebianRelease, Flavour};

const CALC: &str = "swe-eval-mini__calc-1";
const WRAP: &str = "swe-eval-mini__strutils-1";

/// The mini benchmark's dataset and evaluator options in `dir` (the serve tests use it too).
pub(crate) struct Mini {
    pub dataset: swe_eval_core::dataset::Dataset,
    pub opts: EvaluatorOptions,
}

pub(crate) fn mini(dir: &std::path::Path) -> Mini {
    let bench = swe_eval_core::mini::materialize(&dir.join("in")).unwrap();
    let (dataset, _) = swe_eval_core::dataset::load_dataset(&bench.dataset).unwrap();
    let prepare = PrepareOptions {
        flavour: Flavour::Debian,
        namespace: None,
        ca_cert: None,
        repos: RepoSources {
            mirrors: Some(bench.mirrors.clone()),
            ..Default::default()
        },
        repo_cache: dir.join("repos"),
        base_cache: None,
        build_logs: dir.join("state/logs/build_images"),
        parallel: 1,
    };
    let mut run = RunConfig::new("unused");
    run.workers = 2;
    run.backoff = Duration::from_millis(1);
    run.attempts = 2;
    let opts = EvaluatorOptions::new(dir.join("state"), run, prepare);
    Mini { dataset, opts }
}

/// What the driver would print for a job: every required test passes when the patch is the
/// instance's gold patch, the FAIL_TO_PASS ones fail otherwise; a patch with `SLOW` takes 5 s.
fn answer(
    gold: &HashMap<String, (String, Vec<String>, Vec<String>)>,
    job: &JobSpec,
) -> Result<crate::engine::JobOutput, EngineError> {
    let text = |path: &str| {
        job.files
            .iter()
            .find(|f| f.path.ends_with(path))
            .map(|f| String::from_utf8_lossy(&f.contents).into_owned())
            .unwrap_or_default()
    };
    let driver = text("job.sh");
    let nonce = driver
        .lines()
        .find_map(|l| l.strip_prefix("N="))
        .unwrap_or_default()
        .to_string();
    let patch = text("patch.diff");
    let eval = text("eval.sh");
    let m = |s: &str| format!(">>>>> swe-eval {nonce} {s}\n");
    let (good, f2p, p2p) = gold
        .values()
        .find(|(_, f2p, _)| {
            f2p.iter()
                .any(|t| eval.contains(t.split("::").next().unwrap()))
        })
        .map(|(g, f, p)| (*g == patch, f.clone(), p.clone()))
        .unwrap_or_default();
    let mut body = String::from(">>>>> Start Test Output\n");
    for t in &f2p {
        body.push_str(&format!("{} {t}\n", if good { "PASSED" } else { "FAILED" }));
    }
    for t in &p2p {
        body.push_str(&format!("PASSED {t}\n"));
    }
    let code = if good { 0 } else { 1 };
    body.push_str(&format!(
        ">>>>> End Test Output\n>>>>> Test Exit Code: {code}\n"
    ));
    Ok(exited(
        0,
        &format!(
            ">>>>> Applied Patch\n{}{}{body}{}",
            m("apply ok git apply --verbose"),
            m("eval start"),
            m(&format!("eval end {code}"))
        ),
    ))
}

/// A fake daemon with the base images whose jobs answer as [`answer`] says.
pub(crate) fn engine(ds: &swe_eval_core::dataset::Dataset) -> FakeEngine {
    let e = FakeEngine::new();
    for r in [
        DebianRelease::Bullseye,
        DebianRelease::Bookworm,
        DebianRelease::Trixie,
    ] {
        e.add_image(&base_image_name(r));
    }
    let gold: HashMap<String, (String, Vec<String>, Vec<String>)> = ds
        .instances
        .iter()
        .map(|i| {
            (
                i.instance_id.clone(),
                (
                    i.patch.clone(),
                    i.fail_to_pass().to_vec(),
                    i.pass_to_pass().to_vec(),
                ),
            )
        })
        .collect();
    let gold = Arc::new(gold);
    e.on_job(|_| true, move |job| answer(&gold, job));
    e
}

pub(crate) fn gold(m: &Mini, id: &str) -> String {
    m.dataset.get(id).unwrap().patch.clone()
}

async fn start(e: &FakeEngine, m: &Mini) -> Evaluator<FakeEngine> {
    let (ev, _notices) = Evaluator::start(Arc::new(e.clone()), m.dataset.clone(), m.opts.clone())
        .await
        .unwrap();
    ev
}

fn req(id: &str, patch: &str, sample: u32) -> Request {
    Request {
        sample,
        ..Request::new(id, patch)
    }
}

async fn done(ev: &Evaluator<FakeEngine>, id: &str) -> Evaluation {
    let e = ev.wait(id, Duration::from_secs(60)).await.unwrap();
    assert_eq!(e.state, State::Done, "{e:?}");
    e
}

#[tokio::test]
async fn identical_requests_run_once_and_later_ones_come_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let m = mini(dir.path());
    let e = engine(&m.dataset);
    let ev = start(&e, &m).await;
    let wrong = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n";
    // A group of samples: the gold patch three times, a wrong one, and one not executed.
    let mut batch = vec![
        req(CALC, &gold(&m, CALC), 0),
        req(CALC, &gold(&m, CALC), 1),
        req(CALC, wrong, 2),
        req(CALC, &gold(&m, CALC), 3),
    ];
    batch.push(Request {
        execute: false,
        ..req(WRAP, &gold(&m, WRAP), 0)
    });
    let accepted = ev.submit(batch).await.unwrap();
    assert_eq!(accepted.len(), 5);
    assert!(accepted[0].similarity > 0.99 && accepted[2].reward < 0.5);
    assert_eq!(accepted[4].state, State::Done, "not executed: done at once");
    assert!(accepted[4].outcome.is_none());
    let mut results = Vec::new();
    for a in &accepted[..4] {
        results.push(done(&ev, &a.id).await);
    }
    let statuses: Vec<Status> = results
        .iter()
        .map(|r| r.outcome.as_ref().unwrap().status)
        .collect();
    assert_eq!(
        statuses,
        [
            Status::Resolved,
            Status::Resolved,
            Status::Unresolved,
            Status::Resolved
        ]
    );
    assert!(!results[0].cached && results[1].cached && results[3].cached);
    let o = results[0].outcome.as_ref().unwrap();
    assert_eq!((o.fail_to_pass.passed, o.fail_to_pass.total), (3, 3));
    assert!(o.image.as_deref().is_some_and(|i| i.contains("calc")));
    assert!(!o.mask);
    assert_eq!(
        e.jobs().len(),
        2,
        "one container per distinct (instance, patch)"
    );

    // Later: answered from the cache at once.
    let again = ev
        .submit(vec![req(CALC, &gold(&m, CALC), 9)])
        .await
        .unwrap();
    assert_eq!(again[0].state, State::Done);
    assert!(again[0].cached);
    assert_eq!(e.jobs().len(), 2);
    let stored = ev.get(&again[0].id).unwrap();
    assert_eq!(stored, again[0]);
    assert_eq!(ev.get("e999").unwrap_err().code, RefusalCode::NotFound);
    ev.shutdown().await;
}

#[tokio::test]
async fn accepted_requests_survive_a_restart_and_run_once() {
    let dir = tempfile::tempdir().unwrap();
    let m = mini(dir.path());
    let e = engine(&m.dataset);
    e.set_job_delay(Duration::from_millis(300));
    let ev = start(&e, &m).await;
    let ids: Vec<String> = ev
        .submit(vec![
            req(CALC, &gold(&m, CALC), 0),
            req(WRAP, &gold(&m, WRAP), 0),
        ])
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.id)
        .collect();
    let first = done(&ev, &ids[0]).await;
    // Stopped before the second is done (one worker busy with the first... or it finished):
    // whatever is left runs at the next start.
    let stopped = ev.shutdown().await;
    drop(ev);
    let jobs_before = e.jobs().len();
    let ev = start(&e, &m).await;
    let second = done(&ev, &ids[1]).await;
    assert_eq!(second.outcome.unwrap().status, Status::Resolved);
    assert_eq!(ev.get(&ids[0]).unwrap(), first, "kept as it was");
    let ran = e.jobs().len();
    assert_eq!(
        ran, 2,
        "each request ran once ({jobs_before} before the restart, {} left then)",
        stopped.left
    );
    // New ids continue after the stored ones.
    let next = ev.submit(vec![req(WRAP, "", 0)]).await.unwrap();
    assert_eq!(next[0].id, "e3");
    assert_eq!(next[0].outcome.as_ref().unwrap().status, Status::Empty);
    ev.shutdown().await;
}

#[tokio::test]
async fn a_deadline_is_a_masked_timeout_and_a_full_queue_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = mini(dir.path());
    m.opts.max_queue = 2;
    m.opts.run.workers = 1;
    let e = engine(&m.dataset);
    e.set_job_delay(Duration::from_secs(3));
    let ev = start(&e, &m).await;
    let a = ev
        .submit(vec![Request {
            deadline: Some(Duration::from_millis(500)),
            ..req(CALC, &gold(&m, CALC), 0)
        }])
        .await
        .unwrap();
    let b = ev
        .submit(vec![req(WRAP, &gold(&m, WRAP), 0)])
        .await
        .unwrap();
    let full = ev.submit(vec![req(WRAP, "other", 1)]).await.unwrap_err();
    assert_eq!(full.code, RefusalCode::QueueFull);
    assert!(full.retry_after.is_some_and(|s| s >= 1));
    // A batch an empty queue could take waits its turn (429); one larger than the queue could
    // never be taken: 413, naming the bound, and no retry.
    let two = ev
        .submit(vec![req(WRAP, "other", 1), req(WRAP, "another", 2)])
        .await
        .unwrap_err();
    assert_eq!(two.code, RefusalCode::QueueFull);
    let three: Vec<Request> = (0..3).map(|k| req(WRAP, &format!("p{k}"), k)).collect();
    let over = ev.submit(three).await.unwrap_err();
    assert_eq!((over.code, over.retry_after), (RefusalCode::TooLarge, None));
    assert!(
        over.message.contains("3 predictions to execute") && over.message.contains("--max-queue 2"),
        "{over}"
    );
    // Not executed: accepted even with the queue full.
    assert!(ev
        .submit(vec![Request {
            execute: false,
            ..req(WRAP, "other", 1)
        }])
        .await
        .is_ok());
    let t = done(&ev, &a[0].id).await;
    let o = t.outcome.unwrap();
    assert_eq!((o.status, o.mask), (Status::Timeout, true), "{o:?}");
    assert!(o.timings.total < 2.0, "answered at its deadline: {o:?}");
    let b = done(&ev, &b[0].id).await;
    assert_eq!(b.outcome.unwrap().status, Status::Resolved);
    ev.shutdown().await;
}

#[tokio::test]
async fn an_engine_that_fails_gives_masked_infra_errors_and_the_evaluator_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let m = mini(dir.path());
    let e = engine(&m.dataset);
    let ev = start(&e, &m).await;
    let gone = || EngineError::Connect {
        endpoint: "unix:///var/run/docker.sock".into(),
        message: "connection refused".into(),
    };
    // Every attempt of the first job fails (2 attempts).
    e.inject_job_fault(gone()).inject_job_fault(gone());
    let a = ev
        .submit(vec![req(CALC, &gold(&m, CALC), 0)])
        .await
        .unwrap();
    let o = done(&ev, &a[0].id).await.outcome.unwrap();
    assert_eq!((o.status, o.mask), (Status::InfraError, true), "{o:?}");
    // Not cached: the same request runs again, and the engine is back.
    let b = ev
        .submit(vec![req(CALC, &gold(&m, CALC), 1)])
        .await
        .unwrap();
    assert_eq!(b[0].state, State::Queued);
    let o = done(&ev, &b[0].id).await.outcome.unwrap();
    assert_eq!(o.status, Status::Resolved);
    ev.shutdown().await;
}

#[tokio::test]
async fn jobs_at_once_are_bounded_by_the_engines_cpus_as_in_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = mini(dir.path());
    m.opts.run.workers = 4;
    let e = engine(&m.dataset);
    e.set_cpus(1).set_job_delay(Duration::from_millis(200));
    let (ev, mut notices) =
        Evaluator::start(Arc::new(e.clone()), m.dataset.clone(), m.opts.clone())
            .await
            .unwrap();
    let wrong =
        |k: usize| format!("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b{k}\n");
    let batch: Vec<Request> = (0..4).map(|k| req(CALC, &wrong(k), k as u32)).collect();
    let accepted = ev.submit(batch).await.unwrap();
    for a in &accepted {
        done(&ev, &a.id).await;
    }
    assert_eq!(e.jobs().len(), 4, "four distinct patches, four jobs");
    assert_eq!(
        e.max_running(),
        1,
        "-j 4 on an engine of 1 CPU runs one job at a time"
    );
    let mut said = Vec::new();
    while let Ok(n) = notices.try_recv() {
        said.push(n);
    }
    assert!(
        said.iter().any(|n| n.contains("jobs at once")),
        "the server says it uses fewer: {said:?}"
    );
    ev.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_submissions_never_take_more_than_the_queues_bound() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = mini(dir.path());
    m.opts.max_queue = 5;
    m.opts.run.workers = 1;
    let e = engine(&m.dataset);
    e.set_job_delay(Duration::from_secs(1));
    let ev = Arc::new(start(&e, &m).await);
    let wrong =
        |k: usize| format!("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+c{k}\n");
    let mut all = tokio::task::JoinSet::new();
    for k in 0..40 {
        let (ev, patch) = (ev.clone(), wrong(k));
        all.spawn(async move { ev.submit(vec![req(CALC, &patch, k as u32)]).await });
    }
    let (mut accepted, mut refused) = (Vec::new(), 0);
    while let Some(r) = all.join_next().await {
        match r.unwrap() {
            Ok(a) => accepted.push(a[0].id.clone()),
            Err(e) => {
                assert_eq!(e.code, RefusalCode::QueueFull, "{e:?}");
                refused += 1;
            }
        }
    }
    assert!(
        accepted.len() <= 5 && accepted.len() + refused == 40,
        "{} accepted, {refused} refused, with --max-queue 5",
        accepted.len()
    );
    for id in &accepted {
        done(&ev, id).await;
    }
    ev.shutdown().await;
}

#[test]
fn the_cache_key_is_the_verdicts_identity_key_and_changes_with_anything_that_decides_it() {
    use crate::runner::{job_config, recipe};
    let dir = tempfile::tempdir().unwrap();
    let m = mini(dir.path());
    let insts: Vec<_> = [CALC, WRAP]
        .iter()
        .map(|id| m.dataset.get(id).unwrap())
        .collect();
    let made = crate::session::specs(&insts, &m.opts.prepare);
    let setup = |spec: &swe_eval_core::spec::TestSpec| {
        let inst = m.dataset.get(&spec.instance_id).unwrap();
        crate::session::setup(inst, spec, &m.opts.prepare, Ok("img".into()))
    };
    let (calc, wrap) = (&made.ready[0].1, &made.ready[1].1);
    let cfg = job_config(&m.opts.run, "owner");
    let patch = swe_eval_core::predictions::patch_hash(&gold(&m, CALC));
    let key = |s: &crate::runner::Setup, c: &crate::runner::JobConfig, p: &str| {
        recipe(s, c).identity(p).key
    };
    // The same inputs key the same, every time (whatever the image's name).
    assert_eq!(
        key(&setup(calc), &cfg, &patch),
        key(&setup(calc), &cfg, &patch)
    );
    let mut renamed = setup(calc);
    renamed.image = Ok("another-tag".into());
    assert_eq!(key(&renamed, &cfg, &patch), key(&setup(calc), &cfg, &patch));
    // Another patch, eval script, instance, image recipe, strict mode or timeout: another key.
    let mut keys = vec![
        key(&setup(calc), &cfg, &patch),
        key(&setup(calc), &cfg, "another patch"),
        key(&setup(wrap), &cfg, &patch),
    ];
    let mut script = calc.clone();
    script.eval_script.push_str("\n# changed\n");
    keys.push(key(&setup(&script), &cfg, &patch));
    let mut image = calc.clone();
    image.instance_dockerfile.push(' ');
    keys.push(key(&setup(&image), &cfg, &patch));
    let mut strict = cfg.clone();
    strict.strict = true;
    keys.push(key(&setup(calc), &strict, &patch));
    let mut longer = cfg.clone();
    longer.timeout += Duration::from_secs(1);
    keys.push(key(&setup(calc), &longer, &patch));
    let distinct: std::collections::HashSet<&String> = keys.iter().collect();
    assert_eq!(distinct.len(), keys.len(), "{keys:?}");
    assert!(keys.iter().all(|k| k.len() == 64));
}
