//! The host-side bare cache of each repository, for the history images of instance images
//! (see [`super::history`]). Everything git does happens on the host, so the image builds need
//! no network: a source (chosen by [`swe_eval_core::repos::RepoSources`]) is fetched once into a bare
//! cache, and the history images' packs are made from it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::ImageError;
#[cfg(test)]
pub(crate) use swe_eval_core::repos::git_ok;
pub use swe_eval_core::repos::RepoSources;
use swe_eval_core::repos::{fetch_trusting, git, GitCommandError};

/// A host-side cache of bare repositories, one per `owner/name`, fetched from their sources.
#[derive(Debug, Clone)]
pub struct RepoCache {
    /// The folder holding one bare repository per `owner/name` (`owner__name.git`).
    pub dir: PathBuf,
    /// Where each repository is fetched from (`--repo`, mirrors, GitHub).
    pub sources: RepoSources,
}

impl RepoCache {
    /// A cache in `dir` (created on the first fetch) that fetches from `sources`.
    pub fn new(dir: impl Into<PathBuf>, sources: RepoSources) -> Self {
        RepoCache {
            dir: dir.into(),
            sources,
        }
    }

    /// The bare cache of `repo`, fetched from its source unless it already holds `commit`.
    pub fn ensure(&self, repo: &str, commit: &str) -> Result<PathBuf, ImageError> {
        let bare = self
            .dir
            .join(format!("{}.git", repo.replacen('/', "__", 1)));
        // Instances of one repository are prepared in parallel; one fetch at a time per cache.
        let lock = repo_lock(&bare);
        let _held = lock.lock().unwrap_or_else(|p| p.into_inner());
        let fail = |message: String| ImageError::Repo {
            repo: repo.to_string(),
            message,
        };
        let git_fail = |e: GitCommandError| fail(e.to_string());
        if !bare.join("HEAD").exists() {
            std::fs::create_dir_all(&bare)
                .map_err(|e| fail(format!("cannot make {}: {e}", bare.display())))?;
            git(&["init", "-q", "--bare"], Some(&bare)).map_err(git_fail)?;
        }
        if has_commit(&bare, commit) {
            if !has_commit_graph(&bare) {
                write_commit_graph(&bare);
            }
            return Ok(bare);
        }
        let src = self.sources.source(repo);
        // A repository folder the user named may be another user's (an administrator's
        // mirrors): git is told it is safe for these fetches only.
        let trusting = fetch_trusting(&src);
        let fetch = |what: &[&str]| {
            let mut args = vec!["fetch", "-q"];
            args.extend(trusting.iter().map(String::as_str));
            args.extend_from_slice(what);
            git(&args, Some(&bare))
        };
        // Every branch and tag at once, so later commits are there already; unless that failed
        // before in this process (a source that cannot send its whole history: a partial clone
        // missing objects that some base commits do not need), then each commit on its own.
        // Why fetching every branch and tag failed, if it did.
        let whole_failed = match whole_fetch_failed(&bare, None) {
            Some(before) => Some(format!("skipped: it failed before ({before})")),
            None => fetch(&[
                "--force",
                &src,
                "+refs/heads/*:refs/heads/*",
                "+refs/tags/*:refs/tags/*",
            ])
            .err()
            .map(|e| e.to_string()),
        };
        if let Some(e) = &whole_failed {
            whole_fetch_failed(&bare, Some(e));
        }
        if !has_commit(&bare, commit) {
            // Not on any branch or tag, or those could not be fetched: ask for the commit
            // itself (GitHub and protocol v2 allow it), its history and the tags git follows.
            fetch(&[&src, commit]).map_err(|e| {
                let whole = whole_failed
                    .map(|w| format!(" (fetching every branch and tag: {w})"))
                    .unwrap_or_default();
                fail(format!("commit {commit} not found in {src}: {e}{whole}"))
            })?;
            git(
                &["update-ref", &format!("refs/swe-eval/{commit}"), commit],
                Some(&bare),
            )
            .map_err(git_fail)?;
        }
        write_commit_graph(&bare);
        Ok(bare)
    }
}

/// Writes `bare`'s commit-graph file, so that planning the history images walks no commit
/// objects: `rev-list --count`, `for-each-ref --merged` and `merge-base --is-ancestor` read
/// generation numbers instead (measured on sympy's cache, per base commit: 0.69 s to 0.09 s,
/// 0.78 s to 0.13 s; the file took 1.5 s to write). Best effort: without it (another process
/// writing it at the same moment) git walks the commits as before.
fn write_commit_graph(bare: &Path) {
    let _ = git(&["commit-graph", "write", "--reachable"], Some(bare));
}

fn has_commit_graph(bare: &Path) -> bool {
    let info = bare.join("objects/info");
    info.join("commit-graph").exists() || info.join("commit-graphs").exists()
}

/// The in-process lock of one bare cache.
fn repo_lock(bare: &Path) -> Arc<Mutex<()>> {
    static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
    let mut map = LOCKS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    map.entry(bare.to_path_buf()).or_default().clone()
}

/// How fetching every branch and tag into `bare` failed in this process, if it did;
/// `Some(error)` records that it did.
fn whole_fetch_failed(bare: &Path, failed: Option<&String>) -> Option<String> {
    static FAILED: OnceLock<Mutex<HashMap<PathBuf, String>>> = OnceLock::new();
    let mut map = FAILED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(e) = failed {
        map.entry(bare.to_path_buf()).or_insert_with(|| e.clone());
    }
    map.get(bare).cloned()
}

fn has_commit(repo: &Path, commit: &str) -> bool {
    git(
        &["cat-file", "-e", &format!("{commit}^{{commit}}")],
        Some(repo),
    )
    .is_ok()
}

#[cfg(test)]
mod race_tests {
    use super::*;

    #[test]
    fn parallel_fetches_share_one_cache() {
        let tmp = tempfile::tempdir().unwrap();
        let up = tmp.path().join("up");
        std::fs::create_dir_all(&up).unwrap();
        git_ok(&up, &["init", "-q"]);
        std::fs::write(up.join("a"), "1").unwrap();
        git_ok(&up, &["add", "."]);
        git_ok(&up, &["commit", "-q", "-m", "1"]);
        let c = git_ok(&up, &["rev-parse", "HEAD"]);
        let mut s = RepoSources::default();
        s.add_override(&format!("o/n={}", up.display())).unwrap();
        let cache = RepoCache::new(tmp.path().join("cache"), s);
        std::thread::scope(|sc| {
            for i in 0..4 {
                let (cache, c) = (&cache, &c);
                sc.spawn(move || assert!(has_commit(&cache.ensure("o/n", c).unwrap(), c), "{i}"));
            }
        });
        let bare = cache.ensure("o/n", &c).unwrap();
        assert!(
            has_commit_graph(&bare),
            "the planning's walks read the commit-graph"
        );
    }

    /// A source that cannot send every branch (an object of one branch is gone, as in a partial
    /// clone) still gives each commit whose history is whole; a commit that needs the missing
    /// object fails with both errors.
    #[test]
    fn a_source_missing_objects_still_gives_the_commits_it_can() {
        let tmp = tempfile::tempdir().unwrap();
        let up = tmp.path().join("up");
        std::fs::create_dir_all(&up).unwrap();
        git_ok(&up, &["init", "-q", "-b", "main"]);
        std::fs::write(up.join("a"), "1").unwrap();
        git_ok(&up, &["add", "."]);
        git_ok(&up, &["commit", "-q", "-m", "1"]);
        let good = git_ok(&up, &["rev-parse", "HEAD"]);
        git_ok(&up, &["checkout", "-q", "-b", "side"]);
        std::fs::write(up.join("b"), "only on the side branch").unwrap();
        git_ok(&up, &["add", "."]);
        git_ok(&up, &["commit", "-q", "-m", "2"]);
        let bad = git_ok(&up, &["rev-parse", "HEAD"]);
        let blob = git_ok(&up, &["rev-parse", "HEAD:b"]);
        std::fs::remove_file(up.join(".git/objects").join(&blob[..2]).join(&blob[2..])).unwrap();
        git_ok(&up, &["checkout", "-q", "main"]);

        let mut s = RepoSources::default();
        s.add_override(&format!("o/n={}", up.display())).unwrap();
        let cache = RepoCache::new(tmp.path().join("cache"), s);
        let bare = cache.ensure("o/n", &good).unwrap();
        assert!(has_commit(&bare, &good));
        assert!(
            whole_fetch_failed(&bare, None).is_some(),
            "the whole fetch failed and is remembered"
        );
        let e = cache.ensure("o/n", &bad).unwrap_err().to_string();
        assert!(
            e.contains(&bad) && e.contains("every branch and tag"),
            "{e}"
        );
    }
}
