//! Where an instance's repository comes from, and its snapshot for an instance image's build
//! context. Everything git does happens on the host, so the image build needs no network:
//! a source (GitHub by default, `--repo owner/name=PATH_OR_URL`, or a folder of mirrors) is
//! fetched once into a bare cache, then each instance gets a fresh repository holding
//! `base_commit` and its ancestors only.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use super::ImageError;

/// How repository sources are chosen.
#[derive(Debug, Clone, Default)]
pub struct RepoSources {
    /// `owner/name` -> a path or URL git can fetch from (a repository or a `.bundle`).
    pub overrides: BTreeMap<String, String>,
    /// A folder of mirrors: `<owner>__<name>`, `<owner>/<name>` or `<name>`, each a git
    /// repository (bare or not, with or without `.git`) or a `.bundle` file.
    pub mirrors: Option<PathBuf>,
}

impl RepoSources {
    /// Parses `owner/name=PATH_OR_URL` (the `--repo` flag).
    pub fn add_override(&mut self, flag: &str) -> Result<(), ImageError> {
        let (repo, src) = flag
            .split_once('=')
            .ok_or_else(|| ImageError::RepoFlag(flag.to_string()))?;
        if repo.split('/').count() != 2 || src.is_empty() {
            return Err(ImageError::RepoFlag(flag.to_string()));
        }
        self.overrides.insert(repo.to_string(), src.to_string());
        Ok(())
    }

    /// The git source of `repo` (`owner/name`): the override, then a mirror, then GitHub.
    pub fn source(&self, repo: &str) -> String {
        if let Some(s) = self.overrides.get(repo) {
            return s.clone();
        }
        if let Some(dir) = &self.mirrors {
            if let Some(p) = mirror_candidates(dir, repo)
                .into_iter()
                .find(|p| p.exists())
            {
                return p.to_string_lossy().into_owned();
            }
        }
        format!("https://github.com/{repo}.git")
    }

    /// A local repository to read `repo`'s files from in place (the search/replace reward):
    /// the override as a path, else the first mirror that is a folder (a bundle or a URL
    /// cannot be read in place).
    pub fn local_dir(&self, repo: &str) -> Option<PathBuf> {
        if let Some(s) = self.overrides.get(repo) {
            return Some(PathBuf::from(s));
        }
        let dir = self.mirrors.as_ref()?;
        mirror_candidates(dir, repo)
            .into_iter()
            .find(|p| p.is_dir())
    }
}

fn mirror_candidates(dir: &Path, repo: &str) -> Vec<PathBuf> {
    let flat = repo.replacen('/', "__", 1);
    let name = repo.rsplit('/').next().unwrap_or(repo);
    let mut out = Vec::new();
    for stem in [dir.join(&flat), dir.join(repo), dir.join(name)] {
        for suffix in ["", ".git", ".bundle"] {
            let mut s = stem.clone().into_os_string();
            s.push(suffix);
            out.push(PathBuf::from(s));
        }
    }
    out
}

/// Runs git (in `cwd` when given), never prompting; its standard output, or the failure.
pub(crate) fn git(args: &[&str], cwd: Option<&Path>) -> Result<String, String> {
    let mut cmd = Command::new("git");
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    // Never prompt for credentials: a missing repository must fail, not hang.
    cmd.env("GIT_TERMINAL_PROMPT", "0").args(args);
    let out = cmd.output().map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// [`git`] in `dir` with a throwaway identity, failing the test on error (tests that make
/// repositories).
#[cfg(test)]
pub(crate) fn git_ok(dir: &Path, args: &[&str]) -> String {
    let args = [&["-c", "user.name=t", "-c", "user.email=t@t"], args].concat();
    git(&args, Some(dir)).unwrap().trim().to_string()
}

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
    /// `commit`, checked out, holding no history newer than it and no remotes or tags.
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

fn has_commit(repo: &Path, commit: &str) -> bool {
    git(
        &["cat-file", "-e", &format!("{commit}^{{commit}}")],
        Some(repo),
    )
    .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_prefer_override_then_mirror_then_github() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("psf__requests")).unwrap();
        std::fs::create_dir_all(tmp.path().join("pallets/flask.git")).unwrap();
        std::fs::write(tmp.path().join("sympy__sympy.bundle"), b"").unwrap();
        let mut s = RepoSources {
            mirrors: Some(tmp.path().to_path_buf()),
            ..Default::default()
        };
        s.add_override("psf/requests=/srv/requests").unwrap();
        assert_eq!(s.source("psf/requests"), "/srv/requests");
        assert!(s.source("pallets/flask").ends_with("pallets/flask.git"));
        assert!(s.source("sympy/sympy").ends_with("sympy__sympy.bundle"));
        assert_eq!(s.source("a/b"), "https://github.com/a/b.git");
        assert!(s.add_override("nonsense").is_err());
        assert!(s.add_override("a=b").is_err());
    }
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
}
