//! A history image's build context and Dockerfile: its packs, kept tags and submodules, and
//! the checkout that writes only what changed since its parent.

use std::path::Path;

use super::node::{repo_error, HistoryNode};
use super::pack::{revs, split_objects};
use crate::images::submodules;
use crate::images::{ImageError, RepoCache};
use swe_eval_core::repos::git_input;

/// Where the repository lives in every image (the official `/testbed`).
pub(super) const REPO_DIR: &str = "/testbed";

/// Files a history step makes writable by all, as the repo script's `chmod -R 777` would, but
/// touching (and so copying up) only those not already so, and none in the work trees of the
/// submodules it holds (`{prune}`: [`submodules::prune_args`]; the official chmod came before
/// the submodule was cloned). (The index's stat data of the files a step writes goes stale
/// when Docker commits the layer, which gives them new inodes and ctimes: the repo script
/// refreshes it before its forced checkout, which would otherwise rewrite them all.)
fn chmod_new(prune: &str) -> String {
    format!("find {REPO_DIR} {prune}! -type l ! -perm 777 -exec chmod 777 {{}} +")
}

/// Writes into `dir/git/` what `node`'s build copies over `/testbed/.git/`: the objects it adds
/// to its parent's, in one pack, and in a second one the trees a setup commit could rewrite
/// (see [`split_objects`]); `packed-refs`; for a root, the rest of a repository (`HEAD`
/// detached at the commit, `config`, empty `refs/`).
pub fn write_context(
    cache: &RepoCache,
    node: &HistoryNode,
    parent: Option<&HistoryNode>,
    dir: &Path,
) -> Result<(), ImageError> {
    let fail = |e: &dyn std::fmt::Display| repo_error(&node.repo, e);
    let io = |p: &Path, e: std::io::Error| {
        repo_error(&node.repo, format!("cannot write {}: {e}", p.display()))
    };
    let bare = cache.ensure(&node.repo, &node.commit)?;
    let gitdir = dir.join("git");
    let pack_dir = gitdir.join("objects/pack");
    std::fs::create_dir_all(&pack_dir).map_err(|e| io(&pack_dir, e))?;
    let objects = split_objects(&bare, &revs(node, parent)).map_err(|e| fail(&e))?;
    let base = pack_dir.join("pack");
    for part in [&objects.rest, &objects.fixed] {
        if part.is_empty() {
            continue;
        }
        git_input(
            &[
                // No `.rev` file: an image's older git (Debian 11's 2.30) calls it garbage.
                "-c",
                "pack.writeReverseIndex=false",
                "pack-objects",
                "-q",
                "--delta-base-offset",
                &base.to_string_lossy(),
            ],
            Some(&bare),
            part.as_bytes(),
        )
        .map_err(|e| fail(&e))?;
    }
    let refs: String = node
        .tags
        .iter()
        .map(|(r, o)| format!("{o} {r}\n"))
        .collect();
    let write = |name: &str, text: &str| {
        let p = gitdir.join(name);
        std::fs::write(&p, text).map_err(|e| io(&p, e))
    };
    write("packed-refs", &refs)?;
    let before = parent.map_or(&[][..], |p| &p.submodules[..]);
    submodules::write_context(cache, &node.submodules, before, &gitdir).map_err(|e| fail(&e))?;
    if parent.is_none() {
        write("HEAD", &format!("{}\n", node.commit))?;
        write(
            "config",
            "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n",
        )?;
        for d in ["refs/heads", "refs/tags", "objects/info", "info"] {
            let p = gitdir.join(d);
            std::fs::create_dir_all(&p).map_err(|e| io(&p, e))?;
        }
    }
    // Writable by all as copied in: a chmod in the RUN step would copy each pack up whole.
    make_all_writable(&gitdir).map_err(|e| io(&gitdir, e))
}

fn make_all_writable(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777))?;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            make_all_writable(&entry.path())?;
        } else {
            std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o777))?;
        }
    }
    Ok(())
}

/// `node`'s Dockerfile: the objects and refs copied in, then the checkout (whole for a root,
/// only what changed since the parent otherwise) made writable by all.
pub fn dockerfile(node: &HistoryNode, parent: Option<&HistoryNode>) -> String {
    let c = &node.commit;
    let (from, checkout) = match parent {
        None => (node.env.as_str(), format!("reset -q --hard {c}")),
        Some(p) => (
            p.tag.as_str(),
            // The work tree is all 777 (`core.fileMode=false`: not a local change to keep
            // or undo), so only the files that differ between the commits are written.
            format!("-c core.fileMode=false -c advice.detachedHead=false checkout -q --detach {c}"),
        ),
    };
    let before = parent.map_or(&[][..], |p| &p.submodules[..]);
    format!(
        "# swe-eval history image: {repo} at {c} ({kind})\n\
         FROM {from}\n\
         COPY git/ {REPO_DIR}/.git/\n\
         RUN cd {REPO_DIR} && git -c core.logAllRefUpdates=false {checkout} && {chmod}{subs}\n",
        chmod = chmod_new(&submodules::prune_args(REPO_DIR, &node.submodules)),
        subs = submodules::run_steps(&node.submodules, before),
        repo = node.repo,
        kind = if parent.is_some() {
            "objects since its parent"
        } else {
            "whole history"
        },
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::super::fixtures::{build_here, packed, with_submodule};
    use super::super::node::MAX_CHAIN;
    use super::super::plan::plan_chains;
    use super::*;
    use swe_eval_core::repos::{git, git_ok, RepoSources};

    #[test]
    fn submodules_the_sources_give_are_checked_out_at_their_gitlink_with_nothing_newer() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, c) = with_submodule(tmp.path());
        let mut s = RepoSources::default();
        s.add_override(&format!("o/sup={}", root.join("sup").display()))
            .unwrap();
        s.add_override(&format!("o/helpers={}", root.join("helpers").display()))
            .unwrap();
        s.add_override(&format!("o/missing={}", root.join("nowhere").display()))
            .unwrap();
        let cache = RepoCache::new(tmp.path().join("cache"), s);
        let commits: BTreeSet<String> = ["s1", "s2", "s3", "s4"]
            .iter()
            .map(|n| c[n].clone())
            .collect();
        let (nodes, failed) = plan_chains(&cache, "env:1", "o/sup", &commits, MAX_CHAIN);
        assert!(
            failed.is_empty(),
            "a submodule left out fails nothing: {failed:?}"
        );
        let by = |n: &str| nodes.iter().position(|x| x.commit == c[n]).unwrap();
        let (s1, s2, s3, s4) = (by("s1"), by("s2"), by("s3"), by("s4"));
        let helpers = |i: usize| {
            nodes[i]
                .submodules
                .iter()
                .find(|s| s.path == "helpers")
                .unwrap()
        };
        let held = helpers(s1);
        assert_eq!(
            (held.name.as_str(), held.url.as_str(), held.repo.as_deref()),
            (
                "helpers",
                "https://github.com/o/helpers.git",
                Some("o/helpers")
            )
        );
        assert_eq!(
            (held.commit.as_str(), held.left_out.as_deref()),
            (c["h1"].as_str(), None)
        );
        let tag_names =
            |i: usize| -> Vec<&str> { helpers(i).tags.iter().map(|t| t.0.as_str()).collect() };
        assert_eq!(tag_names(s1), ["refs/tags/hv1"]);
        assert_eq!(
            tag_names(s2),
            ["refs/tags/hv1", "refs/tags/hv2"],
            "hv3 is newer"
        );
        let vendored = nodes[s1]
            .submodules
            .iter()
            .find(|s| s.path == "third/vendored")
            .unwrap();
        assert!(
            vendored
                .left_out
                .as_deref()
                .unwrap()
                .contains("example.invalid"),
            "{vendored:?}"
        );
        let missing = helpers(s4);
        assert_eq!(missing.repo.as_deref(), Some("o/missing"), "relative URL");
        assert_eq!(missing.url, "https://github.com/o/missing.git");
        assert!(
            missing
                .left_out
                .as_deref()
                .unwrap()
                .contains("cannot be had"),
            "{missing:?}"
        );

        assert_eq!(nodes[s2].parent, Some(s1), "the gitlink moved forward");
        assert_eq!(
            nodes[s3].parent,
            Some(s1),
            "s2's helpers (h2) is newer than s3's (h1): on s1, which has h1"
        );
        assert_eq!(
            nodes[s4].parent, None,
            "every ancestor's image holds the helpers s4 leaves out: a new root"
        );

        // The recipe names what it leaves out and keeps submodule work trees out of the chmod.
        let recipe = dockerfile(&nodes[s1], None);
        assert!(
            recipe.contains("-path /testbed/helpers -prune -o ! -type l"),
            "{recipe}"
        );
        assert!(
            recipe.contains("swe-eval: submodule third/vendored"),
            "{recipe}"
        );
        let recipe = dockerfile(&nodes[s4], None);
        assert!(recipe.contains("swe-eval: submodule helpers (https://github.com/o/missing.git)"));

        // Contexts: the root's submodule pack is h1's history; the step adds h2 alone.
        let ctx = tempfile::tempdir().unwrap();
        write_context(&cache, &nodes[s1], None, ctx.path()).unwrap();
        let module = ctx.path().join("git/modules/helpers");
        let history = |r: &str| -> BTreeSet<String> {
            git_ok(&root.join("helpers"), &["rev-list", "--objects", r])
                .lines()
                .map(|l| l[..40].to_string())
                .collect()
        };
        let hv1 = git_ok(&root.join("helpers"), &["rev-parse", "hv1"]);
        assert_eq!(packed(&module.join("objects/pack")), history(&c["h1"]));
        assert_eq!(
            std::fs::read_to_string(module.join("HEAD")).unwrap(),
            format!("{}\n", c["h1"])
        );
        assert_eq!(
            std::fs::read_to_string(module.join("packed-refs")).unwrap(),
            format!("{hv1} refs/tags/hv1\n")
        );
        let config = std::fs::read_to_string(module.join("config")).unwrap();
        assert!(
            config.contains("\tworktree = ../../../helpers\n"),
            "{config}"
        );
        assert!(
            config.contains("\turl = \"https://github.com/o/helpers.git\"\n"),
            "{config}"
        );
        assert!(!ctx.path().join("git/modules/vendored").exists());
        let step = tempfile::tempdir().unwrap();
        write_context(&cache, &nodes[s2], Some(&nodes[s1]), step.path()).unwrap();
        let module = step.path().join("git/modules/helpers");
        let added: BTreeSet<String> = history(&c["h2"])
            .difference(&history(&c["h1"]))
            .cloned()
            .collect();
        assert_eq!(packed(&module.join("objects/pack")), added);
        assert!(!module.join("HEAD").exists() && !module.join("config").exists());

        // Built in place with the host's git: `git submodule status` and `git status` as after
        // `git submodule update --init`, then the step moves the submodule forward.
        let work = tmp.path().join("home/testbed");
        std::fs::create_dir_all(work.join(".git")).unwrap();
        build_here(&cache, &nodes[s1], None, &work);
        // Untrimmed: the blank prefix is the point.
        let status = git(&["submodule", "status"], Some(&work)).unwrap();
        assert_eq!(
            status.lines().collect::<Vec<_>>(),
            [
                format!(" {} helpers (hv1)", c["h1"]),
                format!("-{} third/vendored", c["h1"])
            ],
            "{status}"
        );
        assert_eq!(
            git_ok(
                &work,
                &["-c", "core.fileMode=false", "status", "--porcelain"]
            ),
            ""
        );
        assert_eq!(
            git_ok(&work, &["config", "submodule.helpers.url"]),
            "https://github.com/o/helpers.git"
        );
        let sub = work.join("helpers");
        assert!(sub.join("h1.py").exists() && !sub.join("h2.py").exists());
        build_here(&cache, &nodes[s2], Some(&nodes[s1]), &work);
        let status = git(&["submodule", "status", "helpers"], Some(&work)).unwrap();
        assert_eq!(status, format!(" {} helpers (hv2)\n", c["h2"]));
        assert_eq!(
            git_ok(
                &work,
                &["-c", "core.fileMode=false", "status", "--porcelain"]
            ),
            ""
        );
        assert!(sub.join("h2.py").exists());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(sub.join("h1.py"))
            .unwrap()
            .permissions()
            .mode();
        assert_ne!(
            mode & 0o777,
            0o777,
            "the step's chmod left the submodule's files alone"
        );
        assert_eq!(
            std::fs::metadata(work.join("main.py"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o777
        );
        let reachable = git_ok(&sub, &["rev-list", "--all"]);
        assert_eq!(reachable.lines().count(), 2, "h1 and h2: {reachable}");
        let objects: BTreeSet<String> = git_ok(
            &sub,
            &[
                "cat-file",
                "--batch-all-objects",
                "--batch-check=%(objectname)",
            ],
        )
        .lines()
        .map(str::to_string)
        .collect();
        let hv2 = git_ok(&root.join("helpers"), &["rev-parse", "hv2"]);
        let mut allowed = history(&c["h2"]);
        allowed.extend([hv1, hv2]);
        assert!(objects.is_subset(&allowed), "nothing of h3 in the image");
    }
}
