//! Where a repository comes from: a `--repo owner/name=PATH_OR_URL` override, a folder of
//! mirrors, or GitHub; and the one way the crate runs git on the host.
//!
//! Neutral ground: the image builder fetches from these sources and the search/replace reward
//! reads files from them in place, so one set of flags serves both, and neither imports the
//! other. It imports nothing else of the crate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A `--repo` flag that is not `owner/name=PATH_OR_URL`.
#[derive(Debug, thiserror::Error)]
#[error("`--repo {0}`: expected owner/name=PATH_OR_URL")]
pub struct RepoFlagError(pub String);

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
    pub fn add_override(&mut self, flag: &str) -> Result<(), RepoFlagError> {
        let (repo, src) = flag
            .split_once('=')
            .ok_or_else(|| RepoFlagError(flag.to_string()))?;
        if repo.split('/').count() != 2 || src.is_empty() {
            return Err(RepoFlagError(flag.to_string()));
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

    /// True when `repo` comes from a source the user gave: a `--repo` override, or a mirror in
    /// the mirrors folder (not GitHub, which [`RepoSources::source`] falls back to).
    pub fn holds(&self, repo: &str) -> bool {
        self.overrides.contains_key(repo)
            || self
                .mirrors
                .as_ref()
                .is_some_and(|dir| mirror_candidates(dir, repo).iter().any(|p| p.exists()))
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
pub fn git(args: &[&str], cwd: Option<&Path>) -> Result<String, String> {
    let mut cmd = Command::new("git");
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    // Never prompt for credentials: a missing repository must fail, not hang.
    cmd.env("GIT_TERMINAL_PROMPT", "0").args(args);
    let out = cmd.output().map_err(|e| format!("cannot run git: {e}"))?;
    git_outcome(args, &out)
}

/// A finished git's standard output, or its failure with its standard error.
fn git_outcome(args: &[&str], out: &std::process::Output) -> Result<String, String> {
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

/// [`git`] with `input` on its standard input (`pack-objects --revs`, `fetch --stdin`).
pub fn git_input(args: &[&str], cwd: Option<&Path>, input: &[u8]) -> Result<String, String> {
    git_input_bytes(args, cwd, input).map(|out| String::from_utf8_lossy(&out).into_owned())
}

/// [`git_input`] whose standard output is bytes (`cat-file --batch`: objects are binary).
pub fn git_input_bytes(args: &[&str], cwd: Option<&Path>, input: &[u8]) -> Result<Vec<u8>, String> {
    use std::io::Write;
    use std::process::Stdio;
    let mut cmd = Command::new("git");
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    cmd.env("GIT_TERMINAL_PROMPT", "0")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("cannot run git: {e}"))?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    // Written from a thread: git may fill its output pipe before it has read all its input.
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child
        .wait_with_output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    let written = writer.join().unwrap_or(Ok(()));
    if !out.status.success() {
        git_outcome(args, &out)?;
    }
    written.map_err(|e| format!("git {}: writing its input: {e}", args.join(" ")))?;
    Ok(out.stdout)
}

/// [`git`] in `dir` with a throwaway identity, panicking on error: for tests that make
/// repositories (this crate's and the harness's).
#[doc(hidden)]
pub fn git_ok(dir: &Path, args: &[&str]) -> String {
    let args = [&["-c", "user.name=t", "-c", "user.email=t@t"], args].concat();
    git(&args, Some(dir)).unwrap().trim().to_string()
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
        for held in ["psf/requests", "pallets/flask", "sympy/sympy"] {
            assert!(s.holds(held), "{held}");
        }
        assert!(!s.holds("a/b") && !s.holds("django/django"));
        assert!(!RepoSources::default().holds("psf/requests"));
        assert!(s.add_override("nonsense").is_err());
        assert!(s.add_override("a=b").is_err());
    }
}
