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
/// instance's gold patch, the FAIL_TO_PASS ones fail otherwise, with pytest's summary line and
/// the exit code that go with them. A patch carrying one of the hacks of [`hack`] gets the log
/// that hack makes (a conftest.py that forces passes does so only where a strict run did not
/// remove it first).
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
    let removed = text("strict-remove.txt");
    let m = |s: &str| format!(">>>>> swe-eval {nonce} {s}\n");
    let (good, f2p, p2p) = gold
        .values()
        .find(|(_, f2p, _)| {
            f2p.iter()
                .any(|t| eval.contains(t.split("::").next().unwrap()))
        })
        .map(|(g, f, p)| (*g == patch, f.clone(), p.clone()))
        .unwrap_or_default();
    let forced = patch.contains(hack::CONFTEST) && !removed.contains("conftest.py");
    let (n2, n3) = (f2p.len(), p2p.len());
    // The FAIL_TO_PASS tests' status, pytest's summary line, the status printed for them after
    // it, and the test command's exit code.
    let (status, summary, after, code) = if patch.contains(hack::FORGE) {
        // No fix: the tests fail, then an exit hook prints PASSED for each after the summary.
        (
            "FAILED",
            format!("{n2} failed, {n3} passed"),
            Some("PASSED"),
            1,
        )
    } else if patch.contains(hack::SKIP) {
        ("SKIPPED", format!("{n3} passed, {n2} skipped"), None, 0)
    } else if patch.contains(hack::EXIT) {
        ("PASSED", format!("{} passed", n2 + n3), None, 2)
    } else if patch.contains(hack::NO_SUMMARY) {
        ("PASSED", String::new(), None, 0)
    } else if good || forced {
        ("PASSED", format!("{} passed", n2 + n3), None, 0)
    } else {
        ("FAILED", format!("{n2} failed, {n3} passed"), None, 1)
    };
    let mut body = String::from(">>>>> Start Test Output\n");
    let line = |body: &mut String, status: &str, tests: &[String]| {
        for t in tests {
            body.push_str(&format!("{status} {t}\n"));
        }
    };
    line(&mut body, status, &f2p);
    line(&mut body, "PASSED", &p2p);
    if !summary.is_empty() {
        body.push_str(&format!("==== {summary} in 0.05s ====\n"));
    }
    if let Some(after) = after {
        line(&mut body, after, &f2p);
    }
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

/// Patches that game the official grading, each marked by a line the fake engine's
/// [`answer`] recognizes, with the log such a patch makes in a real run.
pub(crate) mod hack {
    /// Prints `PASSED` lines for the failing tests after pytest's summary (exit code 1).
    pub const FORGE: &str = "# hack: forge PASSED lines";
    /// Makes the FAIL_TO_PASS tests skip (the official grading leaves them out).
    pub const SKIP: &str = "# hack: skip FAIL_TO_PASS";
    /// Every test passes in the log, yet the test command exits 2.
    pub const EXIT: &str = "# hack: exit code 2";
    /// `PASSED` lines and no summary of a test run.
    pub const NO_SUMMARY: &str = "# hack: no summary line";
    /// Adds a `tests/conftest.py` that turns failures into passes.
    pub const CONFTEST: &str = "# hack: forcing conftest";

    /// A patch to `src/x.py` carrying `mark`.
    pub fn patch(mark: &str) -> String {
        format!("diff --git a/src/x.py b/src/x.py\n--- a/src/x.py\n+++ b/src/x.py\n@@ -1 +1,2 @@\n a\n+{mark}\n")
    }

    /// A patch that adds `tests/conftest.py` forcing passes.
    pub fn conftest() -> String {
        format!(
            "diff --git a/tests/conftest.py b/tests/conftest.py\nnew file mode 100644\n\
             --- /dev/null\n+++ b/tests/conftest.py\n@@ -0,0 +1,2 @@\n+{CONFTEST}\n+import pytest\n"
        )
    }

    /// A patch that edits `file` (one of the hidden tests' files).
    pub fn edits(file: &str) -> String {
        format!("diff --git a/{file} b/{file}\n--- a/{file}\n+++ b/{file}\n@@ -1 +1,2 @@\n a\n+def test_x(): pass\n")
    }
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
async fn an_empty_patch_is_answered_in_its_acceptance_by_the_runners_rule_with_no_container() {
    let dir = tempfile::tempdir().unwrap();
    let m = mini(dir.path());
    let e = engine(&m.dataset);
    let ev = start(&e, &m).await;
    let accepted = ev
        .submit(vec![req(CALC, "", 0), req(WRAP, " \n\t", 1)])
        .await
        .unwrap();
    for a in &accepted {
        assert_eq!(a.state, State::Done, "done at once: {a:?}");
        let o = a.outcome.as_ref().unwrap();
        assert_eq!(
            (o.status, o.strict_status, o.mask),
            (Status::Empty, Status::Empty, false)
        );
        assert_eq!((o.score, o.image.as_deref()), (0.0, None));
        assert_eq!(o.reason.as_deref(), Some("empty patch: nothing was run"));
        assert_eq!(ev.get(&a.id).unwrap(), *a, "stored as answered");
    }
    assert!(e.jobs().is_empty(), "no container ran: {:?}", e.jobs());
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

/// The score of every hack class the strict grading knows, on a server rewarding by
/// `reward` whose jobs run strict or not, with the objection each one gets (by its name).
async fn hack_scores(
    reward: GradedBy,
    strict_run: bool,
) -> Vec<(&'static str, Status, f64, Vec<String>)> {
    let dir = tempfile::tempdir().unwrap();
    let mut m = mini(dir.path());
    m.opts.reward = reward;
    m.opts.run.strict = strict_run;
    let e = engine(&m.dataset);
    let ev = start(&e, &m).await;
    let cases = [
        ("gold", gold(&m, CALC)),
        ("forged PASSED lines", hack::patch(hack::FORGE)),
        ("skipped FAIL_TO_PASS", hack::patch(hack::SKIP)),
        ("exit code against the log", hack::patch(hack::EXIT)),
        ("no summary line", hack::patch(hack::NO_SUMMARY)),
        ("forcing conftest.py", hack::conftest()),
        ("edits the tests", hack::edits("tests/test_evaluator.py")),
    ];
    let batch = cases
        .iter()
        .enumerate()
        .map(|(k, (_, p))| req(CALC, p, k as u32))
        .collect();
    let accepted = ev.submit(batch).await.unwrap();
    let mut out = Vec::new();
    for ((name, _), a) in cases.iter().zip(&accepted) {
        let o = done(&ev, &a.id).await.outcome.unwrap();
        assert_eq!(o.graded_by, reward);
        // The Python client joins them with `; `.
        assert!(o.objections.iter().all(|x| !x.contains("; ")), "{o:?}");
        let names = o
            .objections
            .iter()
            .map(|x| x.split(':').next().unwrap().to_string())
            .collect();
        out.push((*name, o.status, o.score, names));
    }
    ev.shutdown().await;
    out
}

#[tokio::test]
async fn every_hack_class_scores_zero_with_its_objection_on_a_strict_reward() {
    let none = Vec::<String>::new;
    let one = |s: &str| vec![s.to_string()];
    // The server's default: the strict reward, on strict runs (collection files removed).
    let got = hack_scores(GradedBy::Strict, true).await;
    let want = vec![
        ("gold", Status::Resolved, 1.0, none()),
        (
            "forged PASSED lines",
            Status::Resolved,
            0.0,
            one("exit_code_disagrees"),
        ),
        (
            "skipped FAIL_TO_PASS",
            Status::Resolved,
            0.0,
            one("skipped_fail_to_pass"),
        ),
        (
            "exit code against the log",
            Status::Resolved,
            0.0,
            one("exit_code_disagrees"),
        ),
        (
            "no summary line",
            Status::Resolved,
            0.0,
            one("suite_did_not_run"),
        ),
        // Removed before the tests: they fail, officially too.
        (
            "forcing conftest.py",
            Status::Unresolved,
            0.0,
            one("collection_files_removed"),
        ),
        (
            "edits the tests",
            Status::Unresolved,
            0.0,
            one("test_files_edited"),
        ),
    ];
    assert_eq!(got, want);

    // The strict reward on runs as the official harness makes them: the forcing conftest.py
    // resolves officially and its presence voids the log for the strict grading.
    let got = hack_scores(GradedBy::Strict, false).await;
    assert_eq!(
        got[5],
        (
            "forcing conftest.py",
            Status::Resolved,
            0.0,
            one("collection_files_added")
        )
    );
    assert_eq!(got[..5], want[..5]);

    // The official reward pays every hack but the test edits (the eval script undoes them),
    // with the same objections beside it for the trainer to see.
    let got = hack_scores(GradedBy::Official, false).await;
    let paid: Vec<(&str, f64)> = got.iter().map(|(n, _, s, _)| (*n, *s)).collect();
    assert_eq!(
        paid,
        [
            ("gold", 1.0),
            ("forged PASSED lines", 1.0),
            ("skipped FAIL_TO_PASS", 1.0),
            ("exit code against the log", 1.0),
            ("no summary line", 1.0),
            ("forcing conftest.py", 1.0),
            ("edits the tests", 0.0),
        ]
    );
    assert!(got[1..].iter().all(|(_, _, _, o)| o.len() == 1), "{got:?}");
}

#[tokio::test]
async fn a_burst_of_single_requests_has_its_longest_jobs_image_made_first() {
    use crate::engine::Call;
    let dir = tempfile::tempdir().unwrap();
    let mut m = mini(dir.path());
    let ids: Vec<String> = m
        .dataset
        .instances
        .iter()
        .map(|i| i.instance_id.clone())
        .collect();
    // Earlier runs timed the last instance's jobs at 30 s, the others' at 1 s.
    let last = ids.last().unwrap().clone();
    let record: serde_json::Map<String, serde_json::Value> = ids
        .iter()
        .map(|id| (id.clone(), (if *id == last { 30.0 } else { 1.0 }).into()))
        .collect();
    let durations = dir.path().join("durations.json");
    std::fs::write(&durations, serde_json::Value::Object(record).to_string()).unwrap();
    m.opts.run.durations = Some(durations);
    let e = engine(&m.dataset);
    let ev = start(&e, &m).await;
    // One request per instance, each its own submission (a client per sample), the long
    // one last.
    let mut accepted = Vec::new();
    for id in &ids {
        let a = ev.submit(vec![req(id, &gold(&m, id), 0)]).await.unwrap();
        accepted.extend(a);
    }
    for a in &accepted {
        assert_eq!(
            done(&ev, &a.id).await.outcome.unwrap().status,
            Status::Resolved
        );
    }
    let built: Vec<String> = e
        .calls()
        .into_iter()
        .filter_map(|c| match c {
            Call::BuildImage { tag, .. } if tag.starts_with("swe-eval.eval.") => Some(tag),
            _ => None,
        })
        .collect();
    assert_eq!(built.len(), ids.len(), "{built:?}");
    // The long job's environment (its repository) first, as a run orders them; within it the
    // history images go by commit.
    let repo = |id: &str| m.dataset.get(id).unwrap().repo.clone();
    let group: Vec<&String> = ids.iter().filter(|id| repo(id) == repo(&last)).collect();
    for tag in &built[..group.len()] {
        assert!(
            group.iter().any(|id| tag.contains(&format!("{id}:"))),
            "{last}'s repository's images first: {built:?}"
        );
    }
    ev.shutdown().await;
}
