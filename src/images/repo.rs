//! An instance's repository snapshot, for an instance image's build context. Everything git
//! does happens on the host, so the image build needs no network: a source (chosen by
//! [`crate::repos::RepoSources`]) is fetched once into a bare cache, then each instance gets
//! a fresh repository holding `base_commit` and its ancestors only.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::ImageError;
use crate::repos::git;
#[cfg(test)]
pub(crate) use crate::repos::git_ok;
pub use crate::repos::RepoSources;

/// A host-side cache of bare repositories, one per `owner/name`, fetched from their sources.
#[derive(Debug, Clone)]
pub struct RepoCache {
    pub dir: PathBuf,
    pub sources: RepoSources,
}

impl RepoCache {
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
        if !bare.join("HEAD").exists() {
            std::fs::create_dir_all(&bare).map_err(|e| fail(format!("{}: {e}", bare.display())))?;
            git(&["init", "-q", "--bare"], Some(&bare)).map_err(fail)?;
        }
        if has_commit(&bare, commit) {
            return Ok(bare);
        }
        let src = self.sources.source(repo);
        git(
            &[
                "fetch",
                "-q",
                "--force",
                &src,
                "+refs/heads/*:refs/heads/*",
                "+refs/tags/*:refs/tags/*",
            ],
            Some(&bare),
        )
        .map_err(|e| fail(format!("from {src}: {e}")))?;
        if !has_commit(&bare, commit) {
            // Not on any branch or tag: ask for the commit itself (GitHub and protocol v2 allow it).
            git(&["fetch", "-q", &src, commit], Some(&bare))
                .map_err(|e| fail(format!("commit {commit} not found in {src}: {e}")))?;
            git(
                &["update-ref", &format!("refs/swe-eval/{commit}"), commit],
                Some(&bare),
            )
            .map_err(fail)?;
        }
        Ok(bare)
    }

    /// Writes into `dest` (which must not exist) a self-contained repository whose HEAD is
    /// `commit`, checked out, holding no history newer than it and no remotes; its tags are
    /// those of the cache that point at `commit` or an ancestor (`setuptools_scm` versions
    /// need them; the instance's repo script drops those dated after the commit).
    pub fn snapshot(&self, repo: &str, commit: &str, dest: &Path) -> Result<(), ImageError> {
        let bare = self.ensure(repo, commit)?;
        let fail = |message: String| ImageError::Repo {
            repo: repo.to_string(),
            message,
        };
        std::fs::create_dir_all(dest).map_err(|e| fail(format!("{}: {e}", dest.display())))?;
        git(&["init", "-q"], Some(dest)).map_err(fail)?;
        // Fetching the commit alone brings exactly it and its ancestors.
        let bare_s = bare.to_string_lossy().into_owned();
        let fetched = git(
            &[
                "-c",
                "protocol.version=2",
                "fetch",
                "-q",
                "--no-tags",
                &bare_s,
                commit,
            ],
            Some(dest),
        );
        if fetched.is_err() {
            let r = format!("refs/swe-eval/{commit}");
            git(&["update-ref", &r, commit], Some(&bare)).map_err(fail)?;
            git(&["fetch", "-q", "--no-tags", &bare_s, &r], Some(dest)).map_err(fail)?;
        }
        // Tags come by name, never by pattern: a pattern would bring newer tags' history.
        let tags = merged_tags(&bare, commit).map_err(fail)?;
        if !tags.is_empty() {
            let mut args = vec!["fetch", "-q", "--no-tags", bare_s.as_str()];
            let specs: Vec<String> = tags.iter().map(|t| format!("+{t}:{t}")).collect();
            args.extend(specs.iter().map(String::as_str));
            git(&args, Some(dest)).map_err(fail)?;
        }
        git(
            &[
                "-c",
                "advice.detachedHead=false",
                "checkout",
                "-q",
                "--detach",
                commit,
            ],
            Some(dest),
        )
        .map_err(fail)?;
        Ok(())
    }
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

/// The tags of `repo` (full ref names) that point at `commit` or one of its ancestors.
pub(crate) fn merged_tags(repo: &Path, commit: &str) -> Result<Vec<String>, String> {
    let out = git(
        &[
            "for-each-ref",
            &format!("--merged={commit}"),
            "--format=%(refname)",
            "refs/tags",
        ],
        Some(repo),
    )?;
    Ok(out.lines().map(str::to_string).collect())
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
    fn parallel_snapshots_share_one_cache() {
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
                let (cache, c, dest) = (&cache, &c, tmp.path().join(format!("d{i}")));
                sc.spawn(move || cache.snapshot("o/n", c, &dest).unwrap());
            }
        });
    }

    #[test]
    fn a_snapshot_keeps_the_tags_of_ancestors_only() {
        let tmp = tempfile::tempdir().unwrap();
        let up = tmp.path().join("up");
        std::fs::create_dir_all(&up).unwrap();
        git_ok(&up, &["init", "-q"]);
        let mut commits = Vec::new();
        for i in 0..3 {
            std::fs::write(up.join("a"), i.to_string()).unwrap();
            git_ok(&up, &["add", "."]);
            git_ok(&up, &["commit", "-q", "-m", &i.to_string()]);
            commits.push(git_ok(&up, &["rev-parse", "HEAD"]));
        }
        git_ok(&up, &["tag", "v0", &commits[0]]);
        git_ok(&up, &["tag", "-a", "-m", "one", "v1", &commits[1]]);
        git_ok(&up, &["tag", "v2", &commits[2]]);
        let mut s = RepoSources::default();
        s.add_override(&format!("o/n={}", up.display())).unwrap();
        let cache = RepoCache::new(tmp.path().join("cache"), s);
        let dest = tmp.path().join("d");
        cache.snapshot("o/n", &commits[1], &dest).unwrap();
        assert_eq!(git_ok(&dest, &["tag", "-l"]), "v0\nv1");
        assert_eq!(git_ok(&dest, &["describe", "--tags"]), "v1");
        assert!(git_ok(&dest, &["rev-list", "--all"])
            .lines()
            .all(|c| c != commits[2]));
    }
}
