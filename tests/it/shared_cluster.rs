//! What a user meets on a shared machine: repositories another user owns (an administrator's
//! `--mirrors`, a `--repo` folder), which git refuses to read ("dubious ownership") unless told
//! they are safe. swe-eval tells its own git calls so for the one repository they read, and
//! leaves git's global configuration as it is.

use std::path::Path;
use std::process::Command;

use swe_eval::images::{RepoCache, RepoSources};

use crate::common::{git, is_rerun_child, prerequisite, rerun_alone};

/// An owner no user of the test machine is.
const OTHER_UID: &str = "4242";

/// A repository at `dir` with one commit holding `a.txt`; returns the commit.
fn repository(dir: &Path) -> String {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]);
    std::fs::write(dir.join("a.txt"), "from the mirror\n").unwrap();
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "1"]);
    git(dir, &["rev-parse", "HEAD"])
}

/// Gives `dir` and everything in it to [`OTHER_UID`]: `Err` when this process may not (only
/// root may).
fn give_away(dir: &Path) -> Result<(), String> {
    let out = Command::new("chown")
        .args(["-R", &format!("{OTHER_UID}:{OTHER_UID}")])
        .arg(dir)
        .output()
        .map_err(|e| e.to_string())?;
    match out.status.success() {
        true => Ok(()),
        false => Err(String::from_utf8_lossy(&out.stderr).trim().to_string()),
    }
}

/// Mirrors owned by another user, one a work tree (`o__work`), one bare (`o__bare.git`), and a
/// `--repo` folder: the image builder's repository cache fetches each, and the reward reads
/// files from the work tree in place. The git configuration the run sees is an empty global
/// file (no `safe.directory` of the machine's helps) and is still empty afterwards. Without
/// the setting swe-eval passes, git refuses the same repositories (checked first, so this test
/// fails where the fix is missing).
#[test]
fn repositories_another_user_owns_are_fetched_and_read_without_changing_gits_configuration() {
    if is_rerun_child() {
        return fetch_and_read_as_the_user();
    }
    let probe = tempfile::tempdir().unwrap();
    if prerequisite(
        "root (to give a repository to another owner)",
        give_away(probe.path()),
    )
    .is_none()
    {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let global = home.path().join("gitconfig");
    std::fs::write(&global, "").unwrap();
    let global_s = global.to_string_lossy().into_owned();
    let out = rerun_alone(
        "shared_cluster::repositories_another_user_owns_are_fetched_and_read_without_changing_gits_configuration",
        &[
            ("GIT_CONFIG_GLOBAL", Some(&global_s)),
            ("GIT_CONFIG_NOSYSTEM", Some("1")),
        ],
    );
    assert!(out.contains("fetched and read"), "{out}");
    assert_eq!(
        std::fs::read_to_string(&global).unwrap(),
        "",
        "git's global configuration is left as it was"
    );
}

/// The child's part: the environment says which git configuration applies.
fn fetch_and_read_as_the_user() {
    let tmp = tempfile::tempdir().unwrap();
    let mirrors = tmp.path().join("mirrors");
    let work = mirrors.join("o__work");
    let work_commit = repository(&work);
    let bare = mirrors.join("o__bare.git");
    let seed = tmp.path().join("seed");
    let bare_commit = repository(&seed);
    let made = Command::new("git")
        .args(["clone", "-q", "--bare"])
        .arg(&seed)
        .arg(&bare)
        .status()
        .unwrap();
    assert!(made.success());
    let named = tmp.path().join("named");
    let named_commit = repository(&named);
    give_away(&mirrors).unwrap();
    give_away(&named).unwrap();

    // As the user would find it: git itself refuses these repositories.
    for dir in [&work, &bare, &named] {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["rev-parse", "HEAD"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains("dubious ownership"),
            "git reads {} as is: {err}",
            dir.display()
        );
    }

    let mut sources = RepoSources {
        mirrors: Some(mirrors.clone()),
        ..Default::default()
    };
    sources
        .add_override(&format!("o/named={}", named.display()))
        .unwrap();
    let cache = RepoCache::new(tmp.path().join("cache"), sources);
    for (repo, commit) in [
        ("o/work", &work_commit),
        ("o/bare", &bare_commit),
        ("o/named", &named_commit),
    ] {
        let got = cache.ensure(repo, commit);
        assert!(got.is_ok(), "{repo}: {}", got.unwrap_err());
    }
    let files = swe_eval_core::reward::read_files(&work, &work_commit, &["a.txt".to_string()])
        .expect("the reward reads the mirror in place");
    assert_eq!(
        files.get("a.txt").map(String::as_str),
        Some("from the mirror\n")
    );
    println!("fetched and read");
}
