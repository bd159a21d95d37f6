//! The machine's daemon is never restarted under the suite: a [`PrivateDaemon`] of the test's
//! own is, mid-run, and the run must retry what was lost and complete.

use std::time::Duration;

use swe_eval::runner::Category;

use crate::common::poll_until;
use crate::daemons::PrivateDaemon;
use crate::tasks;

#[test]
fn docker_daemon_restart_mid_run() {
    if !tasks::docker_answers(None) {
        return;
    }
    let image = tasks::trivial_image();
    let Some(mut daemon) = PrivateDaemon::start() else {
        return;
    };
    daemon.load_image(&image);
    let dir = tasks::TestDir::new();
    let tasks = tasks::slow_tasks("restart", 6, 4);
    let (ds, preds) = tasks::write_inputs(dir.path(), &image, &tasks);
    let out = dir.path().join("out");
    let run_id = format!("it-restart-{}", std::process::id());
    let mut child = tasks::run_command(&ds, &preds, &out, &run_id, &["-j", "2", "-t", "120"])
        .env("DOCKER_HOST", &daemon.host)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Restart while jobs are running in containers.
    let running = poll_until(Duration::from_secs(120), || {
        let filter = format!("label={}={run_id}", swe_eval::engine::LABEL_RUN_ID);
        tasks::docker(Some(&daemon.host), &["ps", "-q", "--filter", &filter])
            .is_some_and(|o| !o.stdout.is_empty())
    });
    assert!(running, "no job started within 120 s");
    let cut_off = tasks::verdicts(&out, &run_id).len();
    daemon.stop();
    assert!(daemon.launch(), "dockerd did not come back");
    let status = tasks::wait_bounded(&mut child, Duration::from_secs(300));
    let o = child.wait_with_output().unwrap();
    let report = tasks::text(&o);
    assert!(matches!(status.code(), Some(0) | Some(3)), "{report}");

    let got = tasks::verdicts(&out, &run_id);
    assert_eq!(
        got.len(),
        tasks.len(),
        "every prediction has a verdict\n{report}"
    );
    let retries: u32 = got.iter().map(|(_, v)| v.infra_retries).sum();
    for (_, v) in &got {
        // A job cut off by the restart is retried: it is never the model's failure.
        assert_eq!(
            v.category,
            Category::Resolved,
            "{}: {v:?}\n{report}",
            v.instance_id
        );
    }
    assert!(
        retries >= 1,
        "the cut-off jobs were not counted as infrastructure retries\n{report}"
    );
    assert_eq!(
        tasks::containers(Some(&daemon.host), &run_id),
        Vec::<String>::new()
    );
    eprintln!(
        "faults: dockerd restarted with {cut_off} of {} verdicts written: all {} resolved, {retries} infrastructure retries, 0 model failures",
        tasks.len(),
        tasks.len()
    );
}

/// `swe-eval serve` on a private daemon stopped mid-request (tests/it/serve.rs). Started from
/// this module: it holds the serve tests' turn for most of a minute, and under `serve::`
/// (libtest starts tests in name order) it ran last, alone, at the suite's end.
#[test]
fn an_engine_gone_mid_request_is_a_masked_infra_error_and_the_server_recovers() {
    crate::serve::an_engine_gone_mid_request_is_a_masked_infra_error_and_the_server_recovers();
}
