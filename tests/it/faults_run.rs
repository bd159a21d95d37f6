//! Faults of a run on the real Docker engine, through `swe-eval run`: a run killed outright
//! (SIGKILL) and resumed, SIGTERM draining like the first Ctrl-C, the images of a killed run
//! removed by the next one, and endless jobs stopped at the timeout with the orchestrator's
//! memory bounded.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use swe_eval::runner::Category;
use swe_eval_core::mini;

use crate::common::poll_until;
use crate::tasks::{self, Task};

#[test]
fn sigkill_mid_run_then_resume() {
    if !tasks::docker_answers(None) {
        return;
    }
    let image = tasks::trivial_image();
    let dir = tasks::TestDir::new();
    let tasks = tasks::slow_tasks("kill", 8, 2);
    let (ds, preds) = tasks::write_inputs(dir.path(), &image, &tasks);
    let out = dir.path().join("out");
    let run_id = format!("it-sigkill-{}", std::process::id());
    let args = ["-j", "2", "-t", "120"];

    let mut child = tasks::run_command(&ds, &preds, &out, &run_id, &args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let some_done = poll_until(Duration::from_secs(120), || {
        tasks::verdicts(&out, &run_id).len() >= 2
    });
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(some_done, "no verdict within 120 s");
    let before: Vec<(PathBuf, tasks::Identity)> = tasks::verdicts(&out, &run_id)
        .into_iter()
        .map(|(d, _)| (d.clone(), tasks::identity(&d.join("verdict.json"))))
        .collect();
    assert!(
        before.len() < tasks.len(),
        "killed too late: every verdict was written"
    );
    let orphans = tasks::containers(None, &run_id).len();

    let o = tasks::run_command(&ds, &preds, &out, &run_id, &args)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", tasks::text(&o));
    let after = tasks::verdicts(&out, &run_id);
    let mut ids: Vec<&str> = after.iter().map(|(_, v)| v.instance_id.as_str()).collect();
    ids.dedup();
    assert_eq!(ids.len(), tasks.len(), "every verdict exactly once");
    assert_eq!(after.len(), tasks.len());
    for (_, v) in &after {
        assert_eq!(v.category, Category::Resolved, "{v:?}");
    }
    for (d, id) in &before {
        assert_eq!(
            &tasks::identity(&d.join("verdict.json")),
            id,
            "{} was recomputed",
            d.display()
        );
    }
    // The closing report (stdout) counts what was resumed and what ran.
    let report = String::from_utf8_lossy(&o.stdout);
    let expect = format!(
        "{} resumed, {} containers run",
        before.len(),
        tasks.len() - before.len()
    );
    assert!(
        report.contains(&expect),
        "expected `{expect}` in:\n{report}"
    );
    let rows = std::fs::read_to_string(out.join(format!("{run_id}.predictions.jsonl"))).unwrap();
    assert_eq!(rows.lines().count(), tasks.len(), "{rows}");
    assert_eq!(
        tasks::containers(None, &run_id),
        Vec::<String>::new(),
        "containers of the killed run left behind"
    );
    eprintln!(
        "faults: SIGKILL after {} of {} verdicts ({orphans} containers orphaned): resumed {}, ran {}, lost 0, recomputed 0, left 0 containers",
        before.len(),
        tasks.len(),
        before.len(),
        tasks.len() - before.len()
    );
}

/// Running containers (holds are created, never started) labelled with `run_id`.
fn running_containers(run_id: &str) -> usize {
    let filter = format!("label={}={run_id}", swe_eval::engine::LABEL_RUN_ID);
    let o = tasks::docker(None, &["ps", "-q", "--filter", &filter]).expect("docker ps");
    String::from_utf8_lossy(&o.stdout).lines().count()
}

#[test]
fn sigterm_drains_like_the_first_ctrl_c() {
    if !tasks::docker_answers(None) {
        return;
    }
    let image = tasks::trivial_image();
    let dir = tasks::TestDir::new();
    let tasks = tasks::slow_tasks("term", 6, 4);
    let (ds, preds) = tasks::write_inputs(dir.path(), &image, &tasks);
    let out = dir.path().join("out");
    let run_id = format!("it-sigterm-{}", std::process::id());
    // stderr is a file, not a terminal: the progress bar is hidden, its notices must not be.
    let (stdout, stderr) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut child = tasks::run_command(&ds, &preds, &out, &run_id, &["-j", "2", "-t", "120"])
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let started = poll_until(Duration::from_secs(120), || {
        running_containers(&run_id) >= 2
    });
    let term = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let status = tasks::wait_bounded(&mut child, Duration::from_secs(120));
    let (stdout, stderr) = (
        std::fs::read_to_string(&stdout).unwrap(),
        std::fs::read_to_string(&stderr).unwrap(),
    );
    let all = format!("exit {status}\nstdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(started, "no two jobs running within 120 s:\n{all}");
    assert_eq!(status.code(), Some(3), "predictions not run: exit 3\n{all}");
    assert!(
        stderr.contains("interrupted: finishing running jobs"),
        "the notice reaches a log:\n{all}"
    );
    // The jobs running at the signal finished (a kill would have made them infra errors).
    let done = tasks::verdicts(&out, &run_id);
    assert!(
        done.len() >= 2 && done.len() < tasks.len(),
        "{} verdicts:\n{all}",
        done.len()
    );
    for (_, v) in &done {
        assert_eq!(v.category, Category::Resolved, "{v:?}");
    }
    let not_run = format!(
        "interrupted: {} predictions not run",
        tasks.len() - done.len()
    );
    assert!(stdout.contains(&not_run), "expected `{not_run}`:\n{all}");
    assert_eq!(
        tasks::containers(None, &run_id),
        Vec::<String>::new(),
        "containers (jobs or holds) of the drained run left behind"
    );
    eprintln!(
        "faults: SIGTERM with 2 jobs running: {} verdicts written, all resolved, {} not run, exit 3, 0 containers left",
        done.len(),
        tasks.len() - done.len()
    );
}

/// The images named by holds that say their run removes them (`swe-eval.removes`), of `run_id`.
fn images_to_remove(run_id: &str) -> Vec<String> {
    let o = tasks::docker(
        None,
        &[
            "ps",
            "-a",
            "--filter",
            &format!("label={}={run_id}", swe_eval::engine::LABEL_RUN_ID),
            "--filter",
            &format!("label={}", swe_eval::images::LABEL_REMOVES),
            "--format",
            &format!("{{{{.Label \"{}\"}}}}", swe_eval::engine::LABEL_HOLD),
        ],
    )
    .expect("docker ps");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn image_exists(image: &str) -> bool {
    tasks::docker(None, &["image", "inspect", image]).is_some_and(|o| o.status.success())
}

/// A run at cache level `env` killed with SIGKILL right after it built an instance image
/// leaves the image (and its hold); the next run removes it, where before nothing ever did.
#[test]
fn images_of_a_run_killed_outright_are_removed_by_the_next_run() {
    if !tasks::docker_answers(None) {
        return;
    }
    let _turn = crate::common::mini_images_turn();
    // The run must build the instance image itself: one kept on the daemon by an earlier run at
    // cache level `instance` (another test, a user's run) would be reused and nothing made.
    // Under the mini images' turn no other test of this process uses it.
    let kept = tasks::docker(
        None,
        &[
            "images",
            "--filter",
            "reference=swe-eval.eval.*.swe-eval-mini__intervals-2",
            "--format",
            "{{.Repository}}:{{.Tag}}",
        ],
    )
    .expect("docker images");
    for image in String::from_utf8_lossy(&kept.stdout).lines() {
        let removed = tasks::docker(None, &["rmi", image]).is_some_and(|o| o.status.success());
        assert!(removed, "{image}: kept on the daemon and cannot be removed");
    }
    let dir = tasks::TestDir::new();
    let bench = mini::materialize(&dir.path().join("mini")).unwrap();
    let out = dir.path().join("out");
    let run_id = format!("it-reap-{}", std::process::id());
    let run = || {
        let mut c = Command::new(crate::common::bin());
        c.arg("run")
            .arg("-d")
            .arg(&bench.dataset)
            .arg("-p")
            .arg(&bench.predictions)
            .arg("--mirrors")
            .arg(&bench.mirrors)
            .args(["--flavour", "debian", "-i", "swe-eval-mini__intervals-2"])
            .arg("-o")
            .arg(&out)
            .args(["--run-id", &run_id, "--cache-level", "env"]);
        c
    };
    let mut child = run()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut made = Vec::new();
    let built = poll_until(Duration::from_secs(300), || {
        made = images_to_remove(&run_id);
        !made.is_empty()
    });
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(built, "no instance image built within 300 s");
    let image = made[0].clone();
    assert!(image_exists(&image), "{image}: the killed run left it");

    let o = run().output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", tasks::text(&o));
    assert!(
        !image_exists(&image),
        "{image} outlived the next run:\n{}",
        tasks::text(&o)
    );
    assert_eq!(
        tasks::containers(None, &run_id),
        Vec::<String>::new(),
        "holds or jobs of either run left"
    );
    let reaped_at_start =
        String::from_utf8_lossy(&o.stderr).contains("that runs which died had left to remove");
    eprintln!(
        "faults: SIGKILL after building {image}: the next run removed it ({}), 0 containers left",
        if reaped_at_start {
            "at its start"
        } else {
            "at its end: an orphaned job still stood on it at the start"
        }
    );
}

/// Peak resident memory (VmHWM, KiB) of a live process, if it can be read.
fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn endless_jobs_stop_at_the_timeout() {
    if !tasks::docker_answers(None) {
        return;
    }
    let image = tasks::trivial_image();
    let dir = tasks::TestDir::new();
    let fix = tasks::fix();
    let tasks = vec![
        Task::new("t-sleep", "", "sleep 600", &fix),
        // Prints without end. (A job printing as fast as `yes` is left out: the engine stops
        // reading its output while it asks the daemon to kill the container, and dockerd's kill
        // waits for that output to be read; reported as a defect of src/engine/docker.rs.)
        Task::new(
            "t-trickle",
            "",
            "while :; do echo 'PASSED test_m.py::test_f spam spam spam'; sleep 0.001; done",
            &fix,
        ),
        // 64 MiB of output at full speed, then no end: the orchestrator keeps at most its
        // output cap of it.
        Task::new(
            "t-flood",
            "",
            "yes 'PASSED test_m.py::test_f spam spam spam' | head -c 67108864; sleep 600",
            &fix,
        ),
        Task::new("t-forkbomb", "", "bash -c ':(){ :|:& };:'; sleep 600", &fix),
        Task::new("t-ok", "", tasks::PYTEST, &fix),
    ];
    let (ds, preds) = tasks::write_inputs(dir.path(), &image, &tasks);
    let out = dir.path().join("out");
    let run_id = format!("it-timeout-{}", std::process::id());
    let timeout_secs = 8;
    let mut child = tasks::run_command(
        &ds,
        &preds,
        &out,
        &run_id,
        &["-j", "4", "-t", &timeout_secs.to_string()],
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let pid = child.id();
    // The peak only grows; the last reading before the process ends is its peak.
    let mut peak = 0;
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if let Some(k) = vm_hwm_kib(pid) {
            peak = peak.max(k);
        }
        if start.elapsed() > Duration::from_secs(180) {
            let _ = child.kill();
            panic!("the run did not end within 180 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(
        matches!(status.code(), Some(0) | Some(3)),
        "{status:?}\n{err}"
    );

    let got = tasks::verdicts(&out, &run_id);
    assert_eq!(got.len(), tasks.len(), "{err}");
    for (d, v) in &got {
        if v.instance_id == "t-ok" {
            assert_eq!(v.category, Category::Resolved, "{v:?}");
            continue;
        }
        assert!(v.timed_out, "{}: not timed out: {v:?}", v.instance_id);
        assert_eq!(v.category, Category::Error, "{v:?}");
        assert_eq!(
            v.error_reason,
            Some(swe_eval_core::grading::ErrorReason::Timeout),
            "{v:?}"
        );
        assert!(
            v.total_secs < (timeout_secs + 60) as f64,
            "{}: took {} s",
            v.instance_id,
            v.total_secs
        );
        // What was kept of an endless output is bounded (8 MiB by default, plus the driver's lines).
        let log = std::fs::metadata(d.join("test_output.txt")).map_or(0, |m| m.len());
        assert!(
            log < 10 << 20,
            "{}: test_output.txt is {log} bytes",
            v.instance_id
        );
    }
    assert_eq!(
        tasks::containers(None, &run_id),
        Vec::<String>::new(),
        "containers left behind"
    );
    // The orchestrator held at most an output buffer per job, not the endless output.
    assert!(peak > 0, "could not read VmHWM of the run");
    assert!(peak < 200 * 1024, "orchestrator peak memory {peak} KiB");
    eprintln!("faults: 4 endless jobs stopped at {timeout_secs} s, containers removed; orchestrator peak RSS {} MiB", peak / 1024);
}
