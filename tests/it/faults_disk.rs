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

use swe_eval_core::fsutil::{write_atomic, write_json_atomic};
use swe_eval_core::{mini, report};

use swe_eval::runner::Category;

use crate::tasks;

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

/// `swe-eval run` writing into a filesystem that fills up mid-run: every verdict present is
/// whole, a prediction whose files could not all be written has no verdict (so a resume runs
/// it again), the run says the disk is full, and a rerun after freeing space completes.
#[test]
fn run_output_on_a_full_disk_then_resume() {
    if !tasks::docker_answers(None) {
        return;
    }
    let Some(fs) = SmallFs::mount(2048) else {
        return;
    };
    let image = tasks::trivial_image();
    let dir = tasks::TestDir::new();
    let tasks = tasks::slow_tasks("full", 8, 0);
    let (ds, preds) = tasks::write_inputs(dir.path(), &image, &tasks);
    let out = fs.path().join("out");
    let run_id = format!("it-full-{}", std::process::id());
    let args = ["-j", "2", "-t", "120"];
    // Room for the run's folders and a few predictions' files (a page each), not for all.
    let filler = fs.fill_leaving(16 * 4096);
    let o = tasks::run_command(&ds, &preds, &out, &run_id, &args)
        .output()
        .unwrap();
    let first = tasks::text(&o);
    assert_eq!(
        o.status.code(),
        Some(1),
        "a full disk is a failed run\n{first}"
    );
    assert!(
        first.to_lowercase().contains("no space left"),
        "the run does not say the disk is full\n{first}"
    );
    let written = tasks::verdicts(&out, &run_id); // panics on a torn verdict
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
    let kept: Vec<(PathBuf, tasks::Identity)> = written
        .iter()
        .map(|(d, _)| (d.clone(), tasks::identity(&d.join("verdict.json"))))
        .collect();

    std::fs::remove_file(filler).unwrap();
    let o = tasks::run_command(&ds, &preds, &out, &run_id, &args)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", tasks::text(&o));
    let all = tasks::verdicts(&out, &run_id);
    assert_eq!(all.len(), tasks.len());
    assert!(all.iter().all(|(_, v)| v.category == Category::Resolved));
    for (d, id) in &kept {
        assert_eq!(
            &tasks::identity(&d.join("verdict.json")),
            id,
            "{} was recomputed",
            d.display()
        );
    }
    assert_no_temporaries(fs.path());
    assert_eq!(tasks::containers(None, &run_id), Vec::<String>::new());
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
