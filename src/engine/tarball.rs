//! Tar archives built in memory: the files copied into a job's container and the build
//! contexts of images. Deterministic (fixed mtime, owner and order) so that the same inputs
//! give the same bytes, which keeps content hashes and Docker's build cache stable.

use std::collections::BTreeSet;
use std::io;
use std::path::Path;

use super::FileIn;

/// One entry of an in-memory archive: a path relative to the archive root.
#[derive(Debug, Clone, PartialEq)]
pub struct TarEntry {
    /// Path in the archive, e.g. `swe-eval/job.sh`.
    pub path: String,
    /// The file's bytes.
    pub contents: Vec<u8>,
    /// Unix permission bits, e.g. `0o644`.
    pub mode: u32,
}

/// A tar of `entries`, with a directory entry for every parent so extraction never depends
/// on the target creating missing folders. Paths are taken relative (a leading `/` dropped).
pub fn archive(entries: &[TarEntry]) -> io::Result<Vec<u8>> {
    archive_with_dirs(entries, &[])
}

/// Like [`archive`], then each `(prefix, folder)` from disk appended under `prefix`, keeping
/// symlinks as links and file modes as they are (repository snapshots in build contexts).
pub fn archive_with_dirs(entries: &[TarEntry], folders: &[(&str, &Path)]) -> io::Result<Vec<u8>> {
    write_archive(Vec::new(), entries, folders)
}

/// Like [`archive_with_dirs`], written to `out` (a file, for contexts too big for memory).
pub fn write_archive<W: io::Write>(
    out: W,
    entries: &[TarEntry],
    folders: &[(&str, &Path)],
) -> io::Result<W> {
    let mut builder = tar::Builder::new(out);
    builder.follow_symlinks(false);
    let mut dirs = BTreeSet::new();
    for e in entries {
        let rel = e.path.trim_start_matches('/');
        if rel.is_empty() || rel.split('/').any(|c| c == "..") {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("archive path {:?} is empty or leaves the root", e.path),
            ));
        }
        let mut parent = Path::new(rel).parent();
        let mut chain = Vec::new();
        while let Some(p) = parent {
            if p.as_os_str().is_empty() {
                break;
            }
            chain.push(p.to_string_lossy().into_owned());
            parent = p.parent();
        }
        for d in chain.into_iter().rev() {
            if dirs.insert(d.clone()) {
                let mut h = header(tar::EntryType::Directory, 0o755, 0);
                builder.append_data(&mut h, format!("{d}/"), io::empty())?;
            }
        }
        let mut h = header(tar::EntryType::Regular, e.mode, e.contents.len() as u64);
        builder.append_data(&mut h, rel, e.contents.as_slice())?;
    }
    for (prefix, dir) in folders {
        builder.append_dir_all(prefix, dir)?;
    }
    builder.into_inner()
}

/// The archive uploaded to `/` of a job's container.
pub fn files_archive<'a>(files: impl IntoIterator<Item = &'a FileIn>) -> io::Result<Vec<u8>> {
    let entries: Vec<TarEntry> = files
        .into_iter()
        .map(|f| TarEntry {
            path: f.path.clone(),
            contents: f.contents.clone(),
            mode: f.mode,
        })
        .collect();
    archive(&entries)
}

fn header(kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_mode(mode);
    h.set_size(size);
    h.set_mtime(0);
    h.set_uid(0);
    h.set_gid(0);
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(tar_bytes: &[u8]) -> Vec<(String, u32)> {
        let mut a = tar::Archive::new(tar_bytes);
        a.entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.path().unwrap().to_string_lossy().into_owned(),
                    e.header().mode().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn parents_come_first_once_and_paths_are_relative() {
        let t = archive(&[
            TarEntry {
                path: "/swe-eval/job.sh".into(),
                contents: b"echo hi".to_vec(),
                mode: 0o755,
            },
            TarEntry {
                path: "/swe-eval/patch.diff".into(),
                contents: vec![],
                mode: 0o644,
            },
        ])
        .unwrap();
        assert_eq!(
            names(&t),
            vec![
                ("swe-eval/".to_string(), 0o755),
                ("swe-eval/job.sh".to_string(), 0o755),
                ("swe-eval/patch.diff".to_string(), 0o644)
            ]
        );
    }

    #[test]
    fn same_input_same_bytes() {
        let e = [TarEntry {
            path: "a/b/c".into(),
            contents: b"x".to_vec(),
            mode: 0o600,
        }];
        assert_eq!(archive(&e).unwrap(), archive(&e).unwrap());
    }

    #[test]
    fn escaping_paths_are_refused() {
        let e = [TarEntry {
            path: "/a/../../etc/passwd".into(),
            contents: vec![],
            mode: 0o600,
        }];
        assert!(archive(&e).is_err());
        assert!(archive(&[TarEntry {
            path: "/".into(),
            contents: vec![],
            mode: 0
        }])
        .is_err());
    }
}
