//! The embedded mini benchmark against real git: its bundles clone, every base commit is
//! there, gold and test patches apply, and the demo predictions apply or fail to apply as
//! `expected.json` says. Grading itself is checked end to end by the Docker tests and, without
//! Docker, by `scripts/mini/verify.py`.

use std::path::Path;
use std::process::{Command, Output};

use swe_eval_core::grading::{Category, ErrorReason};
use swe_eval_core::{dataset, mini, predictions};

fn git(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git runs")
}

fn have_git() -> bool {
    crate::common::require_program("git")
}

/// Clones the mirror of `repo` (`owner/name`) into `dest` at `commit`.
fn checkout(mirrors: &Path, repo: &str, commit: &str, dest: &Path) {
    let bundle = mirrors.join(format!("{}.bundle", repo.replace('/', "__")));
    let out = git(
        Path::new("."),
        &[
            "clone",
            "-q",
            bundle.to_str().unwrap(),
            dest.to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "clone {repo}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = git(dest, &["checkout", "-q", commit]);
    assert!(out.status.success(), "{repo} has no commit {commit}");
}

/// `git apply --check` (with `--reject` semantics out of scope: a whole-patch check).
fn applies(dir: &Path, patch: &str) -> bool {
    let file = dir.join("..").join("check.diff");
    std::fs::write(&file, patch).unwrap();
    let git_ok = git(dir, &["apply", "--check", file.to_str().unwrap()])
        .status
        .success();
    // The official fallback: GNU patch with fuzz, dry run.
    let patch_ok = || {
        Command::new("patch")
            .args(["--batch", "--fuzz=5", "-p1", "--dry-run", "-i"])
            .arg(&file)
            .current_dir(dir)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    git_ok || patch_ok()
}

#[test]
fn bundles_hold_every_base_commit_and_patches_apply_as_expected() {
    if !have_git() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let bench = mini::materialize(&tmp.path().join("mini")).unwrap();
    let ds = dataset::Dataset::new(dataset::load(&bench.dataset).unwrap().items);
    let preds = predictions::load(bench.predictions.to_str().unwrap(), Some(&ds))
        .unwrap()
        .items;
    let expected = mini::expected();

    for inst in &ds.instances {
        let dir = tmp.path().join(&inst.instance_id).join("testbed");
        checkout(&bench.mirrors, &inst.repo, &inst.base_commit, &dir);
        assert!(
            applies(&dir, &inst.patch),
            "{}: gold patch",
            inst.instance_id
        );
        assert!(
            applies(&dir, inst.test_patch.as_deref().unwrap()),
            "{}: test patch",
            inst.instance_id
        );
        for p in preds.iter().filter(|p| p.instance_id == inst.instance_id) {
            let e = expected
                .iter()
                .find(|e| {
                    e.instance_id == p.instance_id
                        && e.model_name_or_path == p.model_name_or_path
                        && e.sample == p.sample
                })
                .expect("every prediction has a verdict");
            if e.category == Category::EmptyPatch {
                assert!(p.is_empty_patch());
                continue;
            }
            let should_apply = e.error_reason != Some(ErrorReason::PatchApplyFailed);
            assert_eq!(
                applies(&dir, p.patch()),
                should_apply,
                "{} {}#{} ({})",
                p.instance_id,
                p.model_name_or_path,
                p.sample,
                e.case
            );
        }
    }
}

#[test]
fn bundles_are_reproducible_from_their_sources() {
    if !have_git() {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .arg(root.join("scripts/mini/build.sh"))
        .arg("--check")
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "scripts/mini/build.sh --check: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
