//! Build contexts: a Dockerfile, extra files and a repository snapshot, as a tar stream.

use std::path::Path;

use crate::engine::{write_archive, TarEntry};

/// A build context: a `Dockerfile`, extra files, and optionally a repository snapshot as `repo/`.
pub fn context_tar(
    dockerfile: &str,
    files: &[TarEntry],
    repo_dir: Option<&Path>,
) -> std::io::Result<Vec<u8>> {
    let folders: Vec<(&str, &Path)> = repo_dir.map(|d| ("repo", d)).into_iter().collect();
    context_tar_to(Vec::new(), dockerfile, files, &folders)
}

/// [`context_tar`] written to `out` (a file, for contexts too big for memory), with each
/// `(prefix, folder)` from disk under `prefix`.
pub fn context_tar_to<W: std::io::Write>(
    out: W,
    dockerfile: &str,
    files: &[TarEntry],
    folders: &[(&str, &Path)],
) -> std::io::Result<W> {
    let mut entries = vec![TarEntry {
        path: "Dockerfile".into(),
        contents: dockerfile.as_bytes().to_vec(),
        mode: 0o644,
    }];
    entries.extend(files.iter().cloned());
    write_archive(out, &entries, folders)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_holds_dockerfile_files_and_repo() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("r/pkg")).unwrap();
        std::fs::write(tmp.path().join("r/pkg/x.py"), "x = 1\n").unwrap();
        let files = [TarEntry {
            path: "setup_repo.sh".into(),
            contents: b"true".to_vec(),
            mode: 0o755,
        }];
        let t = context_tar("FROM scratch\n", &files, Some(&tmp.path().join("r"))).unwrap();
        let mut names: Vec<String> = tar::Archive::new(t.as_slice())
            .entries()
            .unwrap()
            .map(|e| {
                e.unwrap()
                    .path()
                    .unwrap()
                    .to_string_lossy()
                    .trim_end_matches('/')
                    .to_string()
            })
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "Dockerfile",
                "repo",
                "repo/pkg",
                "repo/pkg/x.py",
                "setup_repo.sh"
            ]
        );
    }
}
