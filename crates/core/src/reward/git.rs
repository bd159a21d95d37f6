//! Original files for the search/replace reward, read from a local git repository at the
//! instance's `base_commit` (`git cat-file --batch`, one process per instance). Repositories
//! are given one by one (`owner/name=PATH`) or found in a folder of mirrors.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::Files;
use crate::repos::RepoSources;

/// Why files could not be read from a repository with git.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// No local repository was given or found for the instance's repository.
    #[error("no local repository for {repo}: give --repo {repo}=PATH or --mirrors DIR")]
    NoRepository {
        /// The repository, `owner/name`.
        repo: String,
    },
    /// git could not be started.
    #[error("cannot run git in {dir}: {source}")]
    Spawn {
        /// Where git was to run.
        dir: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The commit is not in the repository.
    #[error("git in {dir}: commit {commit} not found")]
    NoCommit {
        /// The repository folder.
        dir: PathBuf,
        /// The commit asked for.
        commit: String,
    },
    /// `git cat-file --batch` answered something unexpected.
    #[error("git in {dir}: unexpected output from cat-file: {line:?}")]
    Protocol {
        /// The repository folder.
        dir: PathBuf,
        /// The line that could not be read.
        line: String,
    },
}

/// The local repository of `repo` (`owner/name`): a `--repo` override, else a mirror folder.
/// The same [`RepoSources`] the image builds use, so one set of flags serves both.
pub fn locate(sources: &RepoSources, repo: &str) -> Result<PathBuf, GitError> {
    sources
        .local_dir(repo)
        .ok_or_else(|| GitError::NoRepository {
            repo: repo.to_string(),
        })
}

/// The files among `paths` that exist at `commit` (missing ones are left out), decoded as
/// UTF-8 with invalid bytes replaced.
pub fn read_files(dir: &Path, commit: &str, paths: &[String]) -> Result<Files, GitError> {
    let spawn_err = |source| GitError::Spawn {
        dir: dir.to_path_buf(),
        source,
    };
    // The repository the user named may be another user's: git is told it is safe.
    let mut child = Command::new("git")
        .args(crate::repos::trusting(dir))
        .arg("-C")
        .arg(dir)
        .args(["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(spawn_err)?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| spawn_err(std::io::Error::other("no stdin")))?;
    // The commit itself first, to tell a missing commit from a missing file.
    let mut requests = format!("{commit}^{{commit}}\n");
    for p in paths {
        requests.push_str(&format!("{commit}:{p}\n"));
    }
    // Written from another thread: git answers while it reads, and both pipes are bounded.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(requests.as_bytes());
    });
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| spawn_err(std::io::Error::other("no stdout")))?;
    let mut reader = BufReader::new(stdout);
    let mut files = Files::new();
    let mut header = String::new();
    for i in 0..=paths.len() {
        header.clear();
        let n = reader.read_line(&mut header).map_err(spawn_err)?;
        if n == 0 {
            return Err(GitError::Protocol {
                dir: dir.to_path_buf(),
                line: "(end of output)".into(),
            });
        }
        let h = header.trim_end();
        if h.ends_with(" missing") || h.ends_with(" ambiguous") {
            if i == 0 {
                let _ = child.kill();
                let _ = child.wait();
                return Err(GitError::NoCommit {
                    dir: dir.to_path_buf(),
                    commit: commit.to_string(),
                });
            }
            continue;
        }
        let size: usize = h
            .rsplit(' ')
            .next()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| GitError::Protocol {
                dir: dir.to_path_buf(),
                line: h.to_string(),
            })?;
        let mut body = vec![0u8; size + 1];
        reader.read_exact(&mut body).map_err(spawn_err)?;
        body.pop();
        if i > 0 && h.split(' ').nth(1) == Some("blob") {
            files.insert(
                paths[i - 1].clone(),
                String::from_utf8_lossy(&body).into_owned(),
            );
        }
    }
    let _ = writer.join();
    let _ = child.wait();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repositories_are_found_by_argument_then_in_mirrors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("django__django")).unwrap();
        std::fs::create_dir_all(dir.path().join("astropy.git")).unwrap();
        let mut src = RepoSources {
            mirrors: Some(dir.path().to_path_buf()),
            ..Default::default()
        };
        src.add_override("psf/requests=/src/requests").unwrap();
        assert_eq!(
            locate(&src, "psf/requests").unwrap(),
            PathBuf::from("/src/requests")
        );
        assert_eq!(
            locate(&src, "django/django").unwrap(),
            dir.path().join("django__django")
        );
        assert_eq!(
            locate(&src, "astropy/astropy").unwrap(),
            dir.path().join("astropy.git")
        );
        std::fs::write(dir.path().join("sympy__sympy.bundle"), b"").unwrap();
        let err = locate(&src, "sympy/sympy").unwrap_err().to_string();
        assert!(
            err.contains("sympy/sympy") && err.contains("--mirrors"),
            "a bundle is not readable in place: {err}"
        );
    }
}
