//! Fault injection: a disk that fills up while results are written.
//!
//! A small filesystem (tmpfs, or a loop-mounted ext4 image where tmpfs cannot be mounted) is
//! filled to within a few pages, then results are written into it with the crate's atomic
//! writers and through the real commands (`swe-eval reward --output`, `swe-eval grade
//! --output`). What must hold: every result file present parses completely (nothing
//! half-written is taken for a verdict), no temporary file is left for a resume to read, the
//! error names the file and says the disk is full, and a rerun after space is freed completes
//! with everything. Needs root to mount; skips with a message otherwise (fails in CI).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use swe_eval::fsutil::{write_atomic, write_json_atomic};
use swe_eval::{mini, report};

/// A small mounted filesystem, unmounted when dropped (a test fixture; the harness itself
/// never relies on `Drop` for cleanup).
pub struct SmallFs {
    dir: tempfile::TempDir,
    /// The loop image, for the ext4 fallback.
    _image: Option<tempfile::NamedTempFile>,
}

impl SmallFs {
    /// Mounts a filesystem of `kib` KiB, or `None` (through the skip helper, which fails the
    /// test in CI) when this machine does not allow it.
    pub fn mount(kib: u64) -> Option<SmallFs> {
        crate::common::prerequisite(
            "a small filesystem mounted for the test (needs root)",
            Self::try_mount(kib),
        )
    }

    fn try_mount(kib: u64) -> Result<SmallFs, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let target = dir.path().display().to_string();
        let tmpfs = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={kib}k"),
                "tmpfs",
                &target,
            ])
            .output();
        if tmpfs.as_ref().is_ok_and(|o| o.status.success()) {
            return Ok(SmallFs { dir, _image: None });
        }
        let image = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
        image
            .as_file()
            .set_len(kib.max(1024) * 1024)
            .map_err(|e| e.to_string())?;
        let img = image.path().display().to_string();
        let made = Command::new("mkfs.ext4").args(["-q", "-F", &img]).output();
        let mounted = made.is_ok_and(|o| o.status.success())
            && Command::new("mount")
                .args(["-o", "loop", &img, &target])
                .output()
                .is_ok_and(|o| o.status.success());
        if mounted {
            return Ok(SmallFs {
                dir,
                _image: Some(image),
            });
        }
        Err(format!(
            "tmpfs: {}; loop ext4 failed too; run as root",
            tmpfs.map_or_else(
                |e| e.to_string(),
                |o| String::from_utf8_lossy(&o.stderr).trim().to_string()
            )
        ))
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills the filesystem so that about `free` bytes remain: a gap file of that size is
    /// written first, then a filler until the disk is full, then the gap is removed.
    pub fn fill_leaving(&self, free: usize) -> PathBuf {
        let gap = self.path().join(".gap");
        std::fs::write(&gap, vec![0u8; free]).expect("write the gap file");
        let filler = self.path().join(".filler");
        let mut f = std::fs::File::create(&filler).expect("create filler");
        let chunk = vec![0u8; 4096];
        loop {
            use std::io::Write;
            if f.write_all(&chunk).is_err() || f.sync_all().is_err() {
                break;
            }
        }
        // A partial last chunk may have made it; what is left is the gap.
        drop(f);
        std::fs::remove_file(&gap).expect("remove the gap file");
        filler
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .output();
    }
}

/// Every file below `dir` (relative paths, sorted), excluding the fixture's own filler.
fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else if e.file_name() != ".filler" {
                out.push(e.path().strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// No temporary file of the atomic writer is left anywhere below `dir`.
fn assert_no_temporaries(dir: &Path) {
    let temps: Vec<_> = files_below(dir)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(".swe-eval-tmp-"))
        })
        .collect();
    assert!(temps.is_empty(), "temporary files left behind: {temps:?}");
}

fn assert_says_disk_full(msg: &str, file: &str) {
    assert!(msg.contains(file), "the error does not name {file}: {msg}");
    let lower = msg.to_lowercase();
    assert!(
        lower.contains("no space left"),
        "the error does not say the disk is full: {msg}"
    );
}

#[test]
fn atomic_writes_on_a_full_disk_leave_old_or_whole_files() {
    let Some(fs) = SmallFs::mount(512) else {
        return;
    };
    let target = fs.path().join("out/report.json");
    write_atomic(&target, b"{\"old\": true}\n").unwrap();
    let filler = fs.fill_leaving(8 * 1024);

    // Bigger than what is left: refused, the old file intact, no temporary left.
    let big = vec![b'x'; 64 * 1024];
    let err = write_atomic(&target, &big).unwrap_err();
    assert_says_disk_full(&err.to_string(), "report.json");
    assert_eq!(std::fs::read(&target).unwrap(), b"{\"old\": true}\n");
    assert_no_temporaries(fs.path());

    // A page each on tmpfs: all of them and the big file fit in 512 KiB once space is freed.
    const RESULTS: usize = 60;
    // Many small JSON results until the disk is full: each is whole or absent.
    let mut written = 0;
    let mut refused = 0;
    for i in 0..RESULTS {
        let value = serde_json::json!({ "instance_id": format!("x__y-{i}"), "resolved": i % 2 == 0, "pad": "p".repeat(900) });
        match write_json_atomic(&fs.path().join(format!("verdicts/{i}.json")), &value) {
            Ok(()) => written += 1,
            Err(e) => {
                assert_says_disk_full(&e.to_string(), &format!("{i}.json"));
                refused += 1;
            }
        }
    }
    assert!(
        written > 0 && refused > 0,
        "the disk should fill part way: {written} written, {refused} refused"
    );
    for f in files_below(&fs.path().join("verdicts")) {
        let text = std::fs::read(fs.path().join("verdicts").join(&f)).unwrap();
        serde_json::from_slice::<serde_json::Value>(&text)
            .unwrap_or_else(|e| panic!("{f:?} is torn: {e}"));
    }
    assert_no_temporaries(fs.path());

    // Space freed: a rerun writes everything.
    std::fs::remove_file(filler).unwrap();
    write_atomic(&target, &big).unwrap();
    assert_eq!(std::fs::read(&target).unwrap().len(), big.len());
    for i in 0..RESULTS {
        let value = serde_json::json!({ "instance_id": format!("x__y-{i}"), "resolved": i % 2 == 0, "pad": "p".repeat(900) });
        write_json_atomic(&fs.path().join(format!("verdicts/{i}.json")), &value).unwrap();
    }
    assert_eq!(files_below(&fs.path().join("verdicts")).len(), RESULTS);
    assert_no_temporaries(fs.path());
    eprintln!("faults: disk full: {written} results written whole, {refused} refused cleanly, 0 torn; {RESULTS}/{RESULTS} after freeing space");
}

fn swe_eval(args: &[&str]) -> Output {
    Command::new(crate::common::bin())
        .args(args)
        .output()
        .expect("run swe-eval")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn reward_output_on_a_full_disk() {
    let Some(fs) = SmallFs::mount(512) else {
        return;
    };
    let inputs = tempfile::tempdir().unwrap();
    let bench = mini::materialize(inputs.path()).unwrap();
    let (ds, preds) = (
        bench.dataset.to_str().unwrap(),
        bench.predictions.to_str().unwrap(),
    );

    let reward = |out: &Path| {
        swe_eval(&[
            "reward",
            "--dataset",
            ds,
            "--predictions",
            preds,
            "--output",
            out.to_str().unwrap(),
        ])
    };
    let finished = |o: &Output| {
        assert!(
            o.status.code() == Some(0) || o.status.code() == Some(3),
            "{}",
            stderr(o)
        )
    };

    // How many bytes the full output takes, written on a roomy disk.
    let roomy = inputs.path().join("rewards.jsonl");
    finished(&reward(&roomy));
    let whole = std::fs::read_to_string(&roomy).unwrap();
    assert!(whole.lines().count() > 0);

    let out = fs.path().join("rewards.jsonl");
    let filler = fs.fill_leaving(whole.len() / 2);
    let o = reward(&out);
    assert_eq!(
        o.status.code(),
        Some(1),
        "a full disk is a failed command: {}",
        stderr(&o)
    );
    assert_says_disk_full(&stderr(&o), "rewards.jsonl");
    assert!(
        !out.exists(),
        "a half-written rewards file was left for a reader"
    );
    assert_no_temporaries(fs.path());

    std::fs::remove_file(filler).unwrap();
    finished(&reward(&out));
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        whole,
        "the rerun writes every reward"
    );
    assert_no_temporaries(fs.path());
}

/// A saved test log for every mini instance in which all its tests pass (pytest `-rA` lines
/// between the eval script's markers), as `{instance_id, test_output}` JSON Lines.
fn passing_logs(dir: &Path) -> PathBuf {
    let mut out = String::new();
    for line in mini::DATASET.lines() {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        let mut log = String::from("+ : '>>>>> Start Test Output'\n");
        for key in ["FAIL_TO_PASS", "PASS_TO_PASS"] {
            for t in row[key].as_array().unwrap() {
                log.push_str(&format!("PASSED {}\n", t.as_str().unwrap()));
            }
        }
        log.push_str("+ : '>>>>> End Test Output'\n");
        out.push_str(
            &serde_json::json!({ "instance_id": row["instance_id"], "test_output": log })
                .to_string(),
        );
        out.push('\n');
    }
    let p = dir.join("logs.jsonl");
    std::fs::write(&p, out).unwrap();
    p
}

/// Every result `swe-eval grade` left parses completely; returns how many reports there are.
fn check_grade_outputs(out: &Path) -> usize {
    let mut reports = 0;
    for f in files_below(out) {
        let path = out.join(&f);
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        if name == "report.json" {
            let (id, _) =
                report::read_instance_report(&path).unwrap_or_else(|e| panic!("torn report: {e}"));
            assert_eq!(Some(id.as_str()), f.parent().and_then(|p| p.to_str()));
            reports += 1;
        } else if name == "results.jsonl" {
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                serde_json::from_str::<report::PredictionRow>(line)
                    .unwrap_or_else(|e| panic!("torn row in {f:?}: {e}"));
            }
        } else if name.ends_with(".json") {
            serde_json::from_slice::<serde_json::Value>(&std::fs::read(&path).unwrap())
                .unwrap_or_else(|e| panic!("torn {f:?}: {e}"));
        } else if name == "results.csv" {
            let mut r = csv::Reader::from_path(&path).unwrap();
            for rec in r.deserialize::<report::PredictionRow>() {
                rec.unwrap_or_else(|e| panic!("torn row in {f:?}: {e}"));
            }
        }
    }
    reports
}

#[test]
fn grade_output_on_a_full_disk() {
    let Some(fs) = SmallFs::mount(256) else {
        return;
    };
    let inputs = tempfile::tempdir().unwrap();
    let bench = mini::materialize(inputs.path()).unwrap();
    let logs = passing_logs(inputs.path());
    let out = fs.path().join("graded");
    let args = |out: &Path| -> Vec<String> {
        [
            "grade",
            "--dataset",
            bench.dataset.to_str().unwrap(),
            "--predictions",
            "gold",
            "--logs",
            logs.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ]
        .map(String::from)
        .to_vec()
    };
    let run = |a: Vec<String>| Command::new(crate::common::bin()).args(a).output().unwrap();

    // Room for a few report.json files (a page each on tmpfs), not for all of them.
    let filler = fs.fill_leaving(3 * 4096);
    let o = run(args(&out));
    assert_eq!(
        o.status.code(),
        Some(1),
        "a full disk is a failed command: {}",
        stderr(&o)
    );
    let msg = stderr(&o);
    assert!(
        msg.to_lowercase().contains("no space left"),
        "the error does not say the disk is full: {msg}"
    );
    assert!(
        msg.contains(out.to_str().unwrap()),
        "the error does not name the file: {msg}"
    );
    let partial = check_grade_outputs(&out);
    assert!(partial < 8, "the disk was to fill before all 8 reports");
    assert_no_temporaries(fs.path());

    std::fs::remove_file(filler).unwrap();
    let o = run(args(&out));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(check_grade_outputs(&out), 8, "every report after the rerun");
    for name in ["results.jsonl", "results.csv", "gold.regrade.json"] {
        assert!(out.join(name).is_file(), "{name} missing after the rerun");
    }
    let rows = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    assert_eq!(rows.lines().count(), 8);
    assert!(
        rows.lines().all(|l| l.contains("\"resolved\"")),
        "all gold predictions resolve from passing logs:\n{rows}"
    );
    assert_no_temporaries(fs.path());
    eprintln!("faults: grade on a full disk: {partial} of 8 reports written whole before the disk filled, 0 torn; 8/8 after the rerun");
}

// ---------------------------------------------------------------------------------------
// Faults on the real Docker engine, through `swe-eval run` (helpers in `hostile.rs`).

use crate::hostile::{self, Task};
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};
use swe_eval::runner::Category;

/// Polls `cond` every 100 ms until it holds or `limit` passes; says which.
fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    cond()
}

/// Waits for a child with a bound, killing it if it overruns.
fn wait_bounded(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("swe-eval run still going after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Tasks whose tests take `secs` seconds, all fixed correctly.
fn slow_tasks(prefix: &str, n: usize, secs: u32) -> Vec<Task> {
    (0..n)
        .map(|i| {
            Task::new(
                &format!("{prefix}-{i}"),
                &format!("sleep {secs}"),
                hostile::PYTEST,
                &hostile::fix(),
            )
        })
        .collect()
}

/// Inode, modification time (s, ns) and bytes of a file.
type Identity = (u64, i64, i64, Vec<u8>);

/// Identity of a file on disk: a rewrite (atomic rename) changes the inode.
fn identity(p: &Path) -> Identity {
    let m = std::fs::metadata(p).unwrap();
    (
        m.ino(),
        m.mtime(),
        m.mtime_nsec(),
        std::fs::read(p).unwrap(),
    )
}

#[test]
fn sigkill_mid_run_then_resume() {
    if !hostile::docker_answers(None) {
        return;
    }
    let image = hostile::trivial_image();
    let dir = hostile::TestDir::new();
    let tasks = slow_tasks("kill", 8, 2);
    let (ds, preds) = hostile::write_inputs(dir.path(), &image, &tasks);
    let out = dir.path().join("out");
    let run_id = format!("it-sigkill-{}", std::process::id());
    let args = ["-j", "2", "-t", "120"];

    let mut child = hostile::run_command(&ds, &preds, &out, &run_id, &args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let some_done = wait_for(Duration::from_secs(120), || {
        hostile::verdicts(&out, &run_id).len() >= 2
    });
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(some_done, "no verdict within 120 s");
    let before: Vec<(PathBuf, Identity)> = hostile::verdicts(&out, &run_id)
        .into_iter()
        .map(|(d, _)| (d.clone(), identity(&d.join("verdict.json"))))
        .collect();
    assert!(
        before.len() < tasks.len(),
        "killed too late: every verdict was written"
    );
    let orphans = hostile::containers(None, &run_id).len();

    let o = hostile::run_command(&ds, &preds, &out, &run_id, &args)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", hostile::text(&o));
    let after = hostile::verdicts(&out, &run_id);
    let mut ids: Vec<&str> = after.iter().map(|(_, v)| v.instance_id.as_str()).collect();
    ids.dedup();
    assert_eq!(ids.len(), tasks.len(), "every verdict exactly once");
    assert_eq!(after.len(), tasks.len());
    for (_, v) in &after {
        assert_eq!(v.category, Category::Resolved, "{v:?}");
    }
    for (d, id) in &before {
        assert_eq!(
            &identity(&d.join("verdict.json")),
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
        hostile::containers(None, &run_id),
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
    let o = hostile::docker(None, &["ps", "-q", "--filter", &filter]).expect("docker ps");
    String::from_utf8_lossy(&o.stdout).lines().count()
}

#[test]
fn sigterm_drains_like_the_first_ctrl_c() {
    if !hostile::docker_answers(None) {
        return;
    }
    let image = hostile::trivial_image();
    let dir = hostile::TestDir::new();
    let tasks = slow_tasks("term", 6, 4);
    let (ds, preds) = hostile::write_inputs(dir.path(), &image, &tasks);
    let out = dir.path().join("out");
    let run_id = format!("it-sigterm-{}", std::process::id());
    // stderr is a file, not a terminal: the progress bar is hidden, its notices must not be.
    let (stdout, stderr) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut child = hostile::run_command(&ds, &preds, &out, &run_id, &["-j", "2", "-t", "120"])
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let started = wait_for(Duration::from_secs(120), || {
        running_containers(&run_id) >= 2
    });
    let term = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let status = wait_bounded(&mut child, Duration::from_secs(120));
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
    let done = hostile::verdicts(&out, &run_id);
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
        hostile::containers(None, &run_id),
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
    let o = hostile::docker(
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
    hostile::docker(None, &["image", "inspect", image]).is_some_and(|o| o.status.success())
}

/// A run at cache level `env` killed with SIGKILL right after it built an instance image
/// leaves the image (and its hold); the next run removes it, where before nothing ever did.
#[test]
fn images_of_a_run_killed_outright_are_removed_by_the_next_run() {
    if !hostile::docker_answers(None) {
        return;
    }
    let _turn = crate::common::mini_images_turn();
    let dir = hostile::TestDir::new();
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
    let built = wait_for(Duration::from_secs(300), || {
        made = images_to_remove(&run_id);
        !made.is_empty()
    });
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(built, "no instance image built within 300 s");
    let image = made[0].clone();
    assert!(image_exists(&image), "{image}: the killed run left it");

    let o = run().output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", hostile::text(&o));
    assert!(
        !image_exists(&image),
        "{image} outlived the next run:\n{}",
        hostile::text(&o)
    );
    assert_eq!(
        hostile::containers(None, &run_id),
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
    if !hostile::docker_answers(None) {
        return;
    }
    let image = hostile::trivial_image();
    let dir = hostile::TestDir::new();
    let fix = hostile::fix();
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
        Task::new("t-ok", "", hostile::PYTEST, &fix),
    ];
    let (ds, preds) = hostile::write_inputs(dir.path(), &image, &tasks);
    let out = dir.path().join("out");
    let run_id = format!("it-timeout-{}", std::process::id());
    let timeout_secs = 8;
    let mut child = hostile::run_command(
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

    let got = hostile::verdicts(&out, &run_id);
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
            Some(swe_eval::grading::ErrorReason::Timeout),
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
        hostile::containers(None, &run_id),
        Vec::<String>::new(),
        "containers left behind"
    );
    // The orchestrator held at most an output buffer per job, not the endless output.
    assert!(peak > 0, "could not read VmHWM of the run");
    assert!(peak < 200 * 1024, "orchestrator peak memory {peak} KiB");
    eprintln!("faults: 4 endless jobs stopped at {timeout_secs} s, containers removed; orchestrator peak RSS {} MiB", peak / 1024);
}

/// A Docker daemon of the test's own (own socket, data root and exec root), so restarting it
/// disturbs no other test or user of the machine's daemon. Stopped and removed when dropped,
/// whatever the test's outcome.
struct PrivateDaemon {
    root: PathBuf,
    host: String,
    child: Option<std::process::Child>,
}

impl PrivateDaemon {
    /// Starts one, or `None` (through the skip helper, which fails the test in CI) when this
    /// machine cannot.
    fn start() -> Option<PrivateDaemon> {
        crate::common::prerequisite("a private dockerd (needs root)", Self::try_start())
    }

    fn try_start() -> Result<PrivateDaemon, String> {
        let have = Command::new("dockerd")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !have {
            return Err("dockerd is not installed".into());
        }
        // A short path: the socket's path must fit in sun_path.
        let root = PathBuf::from(format!("/tmp/swe-eval-dockerd-{}", std::process::id()));
        std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
        let host = format!("unix://{}/docker.sock", root.display());
        let mut d = PrivateDaemon {
            root,
            host,
            child: None,
        };
        if !d.launch() {
            return Err(format!(
                "it did not start; its log:\n{}",
                std::fs::read_to_string(d.root.join("dockerd.log")).unwrap_or_default()
            ));
        }
        Ok(d)
    }

    /// The private daemon's bridge (at most 15 characters, as Linux wants).
    fn bridge(&self) -> String {
        format!("swebr{}", std::process::id() % 1_000_000_000)
    }

    /// Creates the private bridge when it is not there yet.
    fn ensure_bridge(&self) -> bool {
        let name = self.bridge();
        let ip = |args: &[&str]| {
            Command::new("ip")
                .args(args)
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if ip(&["link", "show", &name]) {
            return true;
        }
        ip(&["link", "add", &name, "type", "bridge"])
            && ip(&["addr", "add", "172.31.250.1/24", "dev", &name])
            && ip(&["link", "set", &name, "up"])
    }

    /// Starts dockerd (as scripts/ensure-docker.sh does, on private paths) and waits for it.
    fn launch(&mut self) -> bool {
        if !self.ensure_bridge() {
            eprintln!("private dockerd: cannot create bridge {}", self.bridge());
            return false;
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.root.join("dockerd.log"))
            .unwrap();
        let r = &self.root;
        let child = Command::new("dockerd")
            .arg(format!("--host={}", self.host))
            .arg(format!("--data-root={}", r.join("data").display()))
            .arg(format!("--exec-root={}", r.join("exec").display()))
            .arg(format!("--pidfile={}", r.join("docker.pid").display()))
            // A bridge of its own: with `--bridge=none` dockerd deletes the host's `docker0`
            // at start, which breaks every network-using build of the machine's daemon.
            .arg(format!("--bridge={}", self.bridge()))
            .args(["--iptables=false", "--ip6tables=false"])
            // Containers of a stopping daemon are killed after 1 s, not 15.
            .arg("--shutdown-timeout=1")
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn();
        let Ok(child) = child else { return false };
        self.child = Some(child);
        wait_for(Duration::from_secs(60), || {
            hostile::docker(
                Some(&self.host),
                &["info", "--format", "{{.ServerVersion}}"],
            )
            .is_some_and(|o| o.status.success())
        })
    }

    /// SIGTERM, as a service manager stops the daemon; waits for it to exit.
    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
            let stopped = wait_for(Duration::from_secs(30), || {
                c.try_wait().ok().flatten().is_some()
            });
            if !stopped {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }

    /// Copies an image from the machine's daemon.
    fn load_image(&self, image: &str) {
        let mut save = Command::new("docker")
            .args(["save", image])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let load = Command::new("docker")
            .env("DOCKER_HOST", &self.host)
            .args(["load", "-q"])
            .stdin(save.stdout.take().unwrap())
            .output()
            .unwrap();
        assert!(save.wait().unwrap().success(), "docker save {image} failed");
        assert!(load.status.success(), "{}", hostile::text(&load));
    }
}

impl Drop for PrivateDaemon {
    fn drop(&mut self) {
        let _ = Command::new("docker")
            .env("DOCKER_HOST", &self.host)
            .args(["rm", "-f", "-v"])
            .args(
                hostile::docker(Some(&self.host), &["ps", "-aq"])
                    .map(|o| {
                        String::from_utf8_lossy(&o.stdout)
                            .lines()
                            .map(str::to_string)
                            .collect::<Vec<_>>()
                    })
                    .unwrap_or_default(),
            )
            .output();
        self.stop();
        // Mounts a stopped daemon may leave under its roots, then the folder.
        let _ = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "grep -o ' {0}/[^ ]*' /proc/mounts | sort -r | xargs -r -n1 umount -l",
                self.root.display()
            ))
            .status();
        let _ = std::fs::remove_dir_all(&self.root);
        let _ = Command::new("ip")
            .args(["link", "del", &self.bridge()])
            .output();
    }
}

#[test]
fn docker_daemon_restart_mid_run() {
    if !hostile::docker_answers(None) {
        return;
    }
    let image = hostile::trivial_image();
    let Some(mut daemon) = PrivateDaemon::start() else {
        return;
    };
    daemon.load_image(&image);
    let dir = hostile::TestDir::new();
    let tasks = slow_tasks("restart", 6, 4);
    let (ds, preds) = hostile::write_inputs(dir.path(), &image, &tasks);
    let out = dir.path().join("out");
    let run_id = format!("it-restart-{}", std::process::id());
    let mut child = hostile::run_command(&ds, &preds, &out, &run_id, &["-j", "2", "-t", "120"])
        .env("DOCKER_HOST", &daemon.host)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Restart while jobs are running in containers.
    let running = wait_for(Duration::from_secs(120), || {
        let filter = format!("label={}={run_id}", swe_eval::engine::LABEL_RUN_ID);
        hostile::docker(Some(&daemon.host), &["ps", "-q", "--filter", &filter])
            .is_some_and(|o| !o.stdout.is_empty())
    });
    assert!(running, "no job started within 120 s");
    let cut_off = hostile::verdicts(&out, &run_id).len();
    daemon.stop();
    assert!(daemon.launch(), "dockerd did not come back");
    let status = wait_bounded(&mut child, Duration::from_secs(300));
    let o = child.wait_with_output().unwrap();
    let report = hostile::text(&o);
    assert!(matches!(status.code(), Some(0) | Some(3)), "{report}");

    let got = hostile::verdicts(&out, &run_id);
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
        hostile::containers(Some(&daemon.host), &run_id),
        Vec::<String>::new()
    );
    eprintln!(
        "faults: dockerd restarted with {cut_off} of {} verdicts written: all {} resolved, {retries} infrastructure retries, 0 model failures",
        tasks.len(),
        tasks.len()
    );
}

/// `swe-eval run` writing into a filesystem that fills up mid-run: every verdict present is
/// whole, a prediction whose files could not all be written has no verdict (so a resume runs
/// it again), the run says the disk is full, and a rerun after freeing space completes.
#[test]
fn run_output_on_a_full_disk_then_resume() {
    if !hostile::docker_answers(None) {
        return;
    }
    let Some(fs) = SmallFs::mount(2048) else {
        return;
    };
    let image = hostile::trivial_image();
    let dir = hostile::TestDir::new();
    let tasks = slow_tasks("full", 8, 0);
    let (ds, preds) = hostile::write_inputs(dir.path(), &image, &tasks);
    let out = fs.path().join("out");
    let run_id = format!("it-full-{}", std::process::id());
    let args = ["-j", "2", "-t", "120"];
    // Room for the run's folders and a few predictions' files (a page each), not for all.
    let filler = fs.fill_leaving(16 * 4096);
    let o = hostile::run_command(&ds, &preds, &out, &run_id, &args)
        .output()
        .unwrap();
    let first = hostile::text(&o);
    assert_ne!(
        o.status.code(),
        Some(0),
        "a full disk is not a clean run\n{first}"
    );
    assert!(
        first.to_lowercase().contains("no space left"),
        "the run does not say the disk is full\n{first}"
    );
    let written = hostile::verdicts(&out, &run_id); // panics on a torn verdict
    assert!(
        written.len() < tasks.len(),
        "the disk was to fill before every verdict\n{first}"
    );
    for (d, v) in &written {
        assert_eq!(v.category, Category::Resolved, "{}: {v:?}", d.display());
        for f in ["report.json", "test_output.txt"] {
            assert!(
                d.join(f).is_file(),
                "{}: a verdict without its {f}",
                d.display()
            );
        }
    }
    assert_no_temporaries(fs.path());
    let kept: Vec<(PathBuf, Identity)> = written
        .iter()
        .map(|(d, _)| (d.clone(), identity(&d.join("verdict.json"))))
        .collect();

    std::fs::remove_file(filler).unwrap();
    let o = hostile::run_command(&ds, &preds, &out, &run_id, &args)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", hostile::text(&o));
    let all = hostile::verdicts(&out, &run_id);
    assert_eq!(all.len(), tasks.len());
    assert!(all.iter().all(|(_, v)| v.category == Category::Resolved));
    for (d, id) in &kept {
        assert_eq!(
            &identity(&d.join("verdict.json")),
            id,
            "{} was recomputed",
            d.display()
        );
    }
    assert_no_temporaries(fs.path());
    assert_eq!(hostile::containers(None, &run_id), Vec::<String>::new());
    let said: Vec<&str> = first
        .lines()
        .filter(|l| l.to_lowercase().contains("no space left"))
        .take(3)
        .collect();
    eprintln!("faults: the full run said:\n{}", said.join("\n"));
    eprintln!(
        "faults: run on a full disk: {} of {} verdicts written whole, 0 torn; rerun completed the other {}",
        kept.len(),
        tasks.len(),
        tasks.len() - kept.len()
    );
}
