//! Repositories the history tests build on (git on the host, in a temporary folder).

#![cfg(test)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::context::{dockerfile, write_context, REPO_DIR};
use super::node::HistoryNode;
use crate::images::RepoCache;
use swe_eval_core::repos::git_ok;

/// main: c1 (v0) - c2 (v1, annotated) - c3 - c4 (v2) - c5 (v9); release: c2 - r1 (vr).
pub(super) fn upstream(root: &Path) -> (std::path::PathBuf, BTreeMap<&'static str, String>) {
    let up = root.join("up");
    std::fs::create_dir_all(&up).unwrap();
    git_ok(&up, &["init", "-q", "-b", "main"]);
    let mut c = BTreeMap::new();
    let commit = |name: &'static str, c: &mut BTreeMap<&'static str, String>| {
        std::fs::write(up.join(format!("{name}.txt")), name).unwrap();
        git_ok(&up, &["add", "."]);
        let date = format!("2020-01-0{} 12:00:00 +0000", c.len() + 1);
        let args = ["-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", name];
        let out = std::process::Command::new("git")
            .current_dir(&up)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .env("GIT_COMMITTER_DATE", &date)
            .env("GIT_AUTHOR_DATE", &date)
            .output()
            .unwrap();
        assert!(out.status.success());
        c.insert(name, git_ok(&up, &["rev-parse", "HEAD"]));
    };
    commit("c1", &mut c);
    git_ok(&up, &["tag", "v0"]);
    commit("c2", &mut c);
    git_ok(&up, &["tag", "-a", "-m", "one", "v1"]);
    git_ok(&up, &["checkout", "-q", "-b", "release"]);
    commit("r1", &mut c);
    git_ok(&up, &["tag", "vr"]);
    git_ok(&up, &["checkout", "-q", "main"]);
    for n in ["c3", "c4"] {
        commit(n, &mut c);
    }
    git_ok(&up, &["tag", "v2"]);
    commit("c5", &mut c);
    git_ok(&up, &["tag", "v9"]);
    (up, c)
}

/// `bin/` holds only executables (its tree is what a setup commit writes again); `lib/` and
/// the top hold a plain file.
pub(super) fn with_scripts(root: &Path) -> (std::path::PathBuf, String) {
    use std::os::unix::fs::PermissionsExt;
    let up = root.join("scripts");
    std::fs::create_dir_all(up.join("bin")).unwrap();
    std::fs::create_dir_all(up.join("lib")).unwrap();
    git_ok(&up, &["init", "-q", "-b", "main"]);
    std::fs::write(up.join("bin/run"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(up.join("bin/run"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(up.join("lib/a.txt"), "a").unwrap();
    std::fs::write(up.join("README"), "r").unwrap();
    git_ok(&up, &["add", "."]);
    git_ok(
        &up,
        &[
            "-c",
            "core.hooksPath=/dev/null",
            "commit",
            "-q",
            "-m",
            "one",
        ],
    );
    let c = git_ok(&up, &["rev-parse", "HEAD"]);
    (up, c)
}

/// A commit in `dir` dated `day` (so the tag rule sees known dates).
pub(super) fn dated_commit(dir: &Path, msg: &str, day: u32) -> String {
    let date = format!("2020-01-{day:02} 12:00:00 +0000");
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c"])
        .args([
            "core.hooksPath=/dev/null",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            msg,
        ])
        .env("GIT_COMMITTER_DATE", &date)
        .env("GIT_AUTHOR_DATE", &date)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    git_ok(dir, &["rev-parse", "HEAD"])
}

/// `helpers`: h1 (hv1) - h2 (hv2) - h3 (hv3), each adding a file. `sup`: s1 (gitlink
/// `helpers` at h1, and `vendored` whose URL is no GitHub address), s2 (helpers at h2),
/// s3 (helpers back at h1), s4 (helpers at h2, its repository given by a source that
/// does not exist).
pub(super) fn with_submodule(root: &Path) -> (std::path::PathBuf, BTreeMap<&'static str, String>) {
    let (h, sup) = (root.join("helpers"), root.join("sup"));
    let mut c = BTreeMap::new();
    std::fs::create_dir_all(&h).unwrap();
    git_ok(&h, &["init", "-q", "-b", "main"]);
    for (i, name) in ["h1", "h2", "h3"].into_iter().enumerate() {
        std::fs::write(h.join(format!("{name}.py")), name).unwrap();
        git_ok(&h, &["add", "."]);
        c.insert(name, dated_commit(&h, name, i as u32 + 1));
        git_ok(&h, &["tag", &format!("hv{}", i + 1)]);
    }
    std::fs::create_dir_all(&sup).unwrap();
    git_ok(&sup, &["init", "-q", "-b", "main"]);
    let modules = |helpers_url: &str| {
        format!(
            "[submodule \"helpers\"]\n\tpath = helpers\n\turl = {helpers_url}\n\
             [submodule \"vendored\"]\n\tpath = third/vendored\n\turl = https://example.invalid/v.git\n"
        )
    };
    let link = |sup: &Path, path: &str, commit: &str| {
        let info = format!("160000,{commit},{path}");
        git_ok(sup, &["update-index", "--add", "--cacheinfo", &info]);
    };
    std::fs::write(sup.join("main.py"), "x").unwrap();
    std::fs::write(
        sup.join(".gitmodules"),
        modules("https://github.com/o/helpers.git"),
    )
    .unwrap();
    git_ok(&sup, &["add", "."]);
    link(&sup, "helpers", &c["h1"]);
    link(&sup, "third/vendored", &c["h1"]);
    c.insert("s1", dated_commit(&sup, "s1", 10));
    link(&sup, "helpers", &c["h2"]);
    c.insert("s2", dated_commit(&sup, "s2", 11));
    link(&sup, "helpers", &c["h1"]);
    c.insert("s3", dated_commit(&sup, "s3", 12));
    link(&sup, "helpers", &c["h2"]);
    std::fs::write(sup.join(".gitmodules"), modules("../missing.git")).unwrap();
    git_ok(&sup, &["add", ".gitmodules"]);
    c.insert("s4", dated_commit(&sup, "s4", 13));
    (root.to_path_buf(), c)
}

/// The object ids of the packs under `dir`.
pub(super) fn packed(dir: &Path) -> BTreeSet<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return BTreeSet::new();
    };
    entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "idx"))
        .flat_map(|p| {
            git_ok(Path::new("/"), &["verify-pack", "-v", &p.to_string_lossy()])
                .lines()
                .filter_map(|l| l.split(' ').next().map(str::to_string))
                .filter(|w| w.len() == 40)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Runs `node`'s Dockerfile `RUN` line in `work` (its `/testbed`) after copying the context
/// over `work/.git`, as the image build does.
pub(super) fn build_here(
    cache: &RepoCache,
    node: &HistoryNode,
    parent: Option<&HistoryNode>,
    work: &Path,
) {
    let ctx = tempfile::tempdir().unwrap();
    write_context(cache, node, parent, ctx.path()).unwrap();
    let copied = std::process::Command::new("cp")
        .arg("-a")
        .arg(ctx.path().join("git/."))
        .arg(work.join(".git"))
        .output()
        .unwrap();
    assert!(copied.status.success(), "{copied:?}");
    let recipe = dockerfile(node, parent);
    let run = recipe
        .lines()
        .find_map(|l| l.strip_prefix("RUN "))
        .unwrap()
        .replace(REPO_DIR, &work.to_string_lossy());
    let out = std::process::Command::new("sh")
        .args(["-c", &run])
        .output()
        .unwrap();
    assert!(out.status.success(), "{run}: {out:?}");
}
