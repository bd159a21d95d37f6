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

/// A git command that could not be run, or that failed: the command (and the folder it ran
/// in) and why.
#[derive(Debug, thiserror::Error)]
pub enum GitCommandError {
    /// git could not be started (it is not installed) or waited for.
    #[error("cannot run git {}{}: {source}", args.join(" "), in_dir(dir.as_deref()))]
    Spawn {
        /// Its arguments.
        args: Vec<String>,
        /// The folder it was to run in.
        dir: Option<PathBuf>,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// git ran and failed.
    #[error("git {}{} failed: {stderr}", args.join(" "), in_dir(dir.as_deref()))]
    Failed {
        /// Its arguments.
        args: Vec<String>,
        /// The folder it ran in.
        dir: Option<PathBuf>,
        /// What it wrote on its standard error, trimmed.
        stderr: String,
    },
    /// Its standard input could not be written.
    #[error("git {}{}: writing its input: {source}", args.join(" "), in_dir(dir.as_deref()))]
    Input {
        /// Its arguments.
        args: Vec<String>,
        /// The folder it ran in.
        dir: Option<PathBuf>,
        /// The operating system's error.
        source: std::io::Error,
    },
}

/// ` (in DIR)`, or nothing.
fn in_dir(dir: Option<&Path>) -> String {
    dir.map(|d| format!(" (in {})", d.display()))
        .unwrap_or_default()
}

/// A git command (in `cwd` when given) that never prompts: a missing repository must fail,
/// not hang waiting for credentials.
fn command(args: &[&str], cwd: Option<&Path>) -> Command {
    let mut cmd = Command::new("git");
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    cmd.env("GIT_TERMINAL_PROMPT", "0").args(args);
    cmd
}

/// Runs git (in `cwd` when given), never prompting; its standard output, or the failure.
pub fn git(args: &[&str], cwd: Option<&Path>) -> Result<String, GitCommandError> {
    let out = command(args, cwd)
        .output()
        .map_err(|source| GitCommandError::Spawn {
            args: owned(args),
            dir: cwd.map(Path::to_path_buf),
            source,
        })?;
    git_outcome(args, cwd, &out).map(|stdout| String::from_utf8_lossy(&stdout).into_owned())
}

fn owned(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

/// A finished git's standard output, or its failure with its standard error.
fn git_outcome(
    args: &[&str],
    cwd: Option<&Path>,
    out: &std::process::Output,
) -> Result<Vec<u8>, GitCommandError> {
    if out.status.success() {
        Ok(out.stdout.clone())
    } else {
        Err(GitCommandError::Failed {
            args: owned(args),
            dir: cwd.map(Path::to_path_buf),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// [`git`] with `input` on its standard input (`pack-objects --revs`, `fetch --stdin`).
pub fn git_input(
    args: &[&str],
    cwd: Option<&Path>,
    input: &[u8],
) -> Result<String, GitCommandError> {
    git_input_bytes(args, cwd, input).map(|out| String::from_utf8_lossy(&out).into_owned())
}

/// [`git_input`] whose standard output is bytes (`cat-file --batch`: objects are binary).
pub fn git_input_bytes(
    args: &[&str],
    cwd: Option<&Path>,
    input: &[u8],
) -> Result<Vec<u8>, GitCommandError> {
    use std::io::Write;
    use std::process::Stdio;
    let spawn_err = |source| GitCommandError::Spawn {
        args: owned(args),
        dir: cwd.map(Path::to_path_buf),
        source,
    };
    let mut child = command(args, cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(spawn_err)?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    // Written from a thread: git may fill its output pipe before it has read all its input.
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().map_err(spawn_err)?;
    let written = writer.join().unwrap_or(Ok(()));
    let stdout = git_outcome(args, cwd, &out)?;
    written.map_err(|source| GitCommandError::Input {
        args: owned(args),
        dir: cwd.map(Path::to_path_buf),
        source,
    })?;
    Ok(stdout)
}

/// The arguments that let this process's git work in `dir`, a repository the user named
/// (`--repo`, `--mirrors`), whoever owns it: `-c safe.directory=<dir>`. Git refuses a
/// repository another user owns ("dubious ownership", as an administrator's mirrors on a
/// shared machine are) unless it is declared safe; this declares that one repository, for
/// this command only, and leaves the user's git configuration as it is.
pub fn trusting(dir: &Path) -> [String; 2] {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    [
        "-c".to_string(),
        format!("safe.directory={}", dir.display()),
    ]
}

/// The options of `git fetch` from `src` that let it read `src` when it is a repository
/// folder the user named, whoever owns it (see [`trusting`]): `--upload-pack` with
/// `safe.directory` set to its git directory (`src/.git`, or `src` when it is bare). A fetch
/// runs `git upload-pack` in the source without the fetch's own `-c` settings, so they are
/// given to it there. None for a URL or a bundle, which no `upload-pack` reads here.
pub fn fetch_trusting(src: &str) -> Vec<String> {
    let path = Path::new(src);
    if !path.is_dir() {
        return Vec::new();
    }
    let git_dir = match path.join(".git") {
        dot_git if dot_git.is_dir() => dot_git,
        _ => path.to_path_buf(),
    };
    let git_dir = std::fs::canonicalize(&git_dir).unwrap_or(git_dir);
    let setting = format!("safe.directory={}", git_dir.display());
    // `upload-pack` is run through the shell: the setting is one quoted word.
    let quoted = format!("'{}'", setting.replace('\'', "'\\''"));
    vec![format!("--upload-pack=git -c {quoted} upload-pack")]
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

    /// A repository folder gets `upload-pack` told it is safe (its git directory, quoted for
    /// the shell git runs it through: a path with a space and a quote still fetches); a URL
    /// or a bundle gets nothing.
    #[test]
    fn fetches_from_a_repository_folder_trust_its_git_directory_only() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(fetch_trusting("https://github.com/a/b.git").is_empty());
        let bundle = tmp.path().join("a.bundle");
        std::fs::write(&bundle, b"").unwrap();
        assert!(fetch_trusting(&bundle.to_string_lossy()).is_empty());

        let up = tmp.path().join("it's a repo");
        std::fs::create_dir(&up).unwrap();
        git_ok(&up, &["init", "-q"]);
        git_ok(&up, &["commit", "-q", "--allow-empty", "-m", "1"]);
        let head = git_ok(&up, &["rev-parse", "HEAD"]);
        let git_dir = std::fs::canonicalize(up.join(".git")).unwrap();
        assert_eq!(
            fetch_trusting(&up.to_string_lossy()),
            [format!(
                "--upload-pack=git -c 'safe.directory={}' upload-pack",
                git_dir.display().to_string().replace('\'', "'\\''")
            )]
        );
        let bare = tmp.path().join("bare.git");
        git(&["init", "-q", "--bare", &bare.to_string_lossy()], None).unwrap();
        let bare_dir = std::fs::canonicalize(&bare).unwrap();
        assert!(fetch_trusting(&bare.to_string_lossy())[0]
            .contains(&format!("safe.directory={}'", bare_dir.display())));
        let mut args = vec!["fetch".to_string(), "-q".to_string()];
        args.extend(fetch_trusting(&up.to_string_lossy()));
        args.extend([up.to_string_lossy().into_owned(), "HEAD".to_string()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        git(&args, Some(&bare)).unwrap();
        assert_eq!(git_ok(&bare, &["rev-parse", "FETCH_HEAD"]), head);
        assert_eq!(
            trusting(&up),
            [
                "-c".to_string(),
                format!(
                    "safe.directory={}",
                    std::fs::canonicalize(&up).unwrap().display()
                )
            ]
        );
    }

    /// A failed command says which command, in which folder, and git's own words.
    #[test]
    fn a_failed_git_names_the_command_and_its_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let e = git(&["rev-parse", "nothing-here"], Some(tmp.path())).unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with(&format!(
                "git rev-parse nothing-here (in {}) failed: ",
                tmp.path().display()
            )) && text.contains("not a git repository"),
            "{text}"
        );
        assert!(matches!(e, GitCommandError::Failed { .. }));
    }
}
