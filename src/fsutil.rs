//! File writes that never leave a half-written result behind: write a temporary file in the
//! same folder, flush it to disk, then rename it over the target. A reader sees the old file or
//! the whole new one, never a torn one, even when the disk fills or the process is killed.

use std::io::Write;
use std::path::{Path, PathBuf};

/// A failed write, naming the file and the step that failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {path}: {step}: {source}")]
pub struct WriteError {
    /// The file.
    pub path: PathBuf,
    /// The step that failed (`create folder`, `write`, `rename into place`, ...).
    pub step: &'static str,
    /// The operating system's error.
    #[source]
    pub source: std::io::Error,
}

/// Writes `bytes` to `path` atomically, creating parent folders.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let err = |step, source| WriteError {
        path: path.to_path_buf(),
        step,
        source,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(|e| err("create folder", e))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".swe-eval-tmp-")
        .tempfile_in(dir)
        .map_err(|e| err("create temporary file", e))?;
    tmp.write_all(bytes).map_err(|e| err("write", e))?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| err("flush to disk", e))?;
    tmp.persist(path)
        .map_err(|e| err("rename into place", e.error))?;
    Ok(())
}

/// Serializes `value` as pretty JSON (with a final newline) and writes it atomically.
pub fn write_json_atomic<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), WriteError> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| WriteError {
        path: path.to_path_buf(),
        step: "serialize",
        source: std::io::Error::other(e),
    })?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_file_and_leaves_no_temporaries() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b/report.json");
        write_atomic(&p, b"first").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("report.json")]);
    }

    #[test]
    fn error_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, b"x").unwrap();
        let e = write_atomic(&blocker.join("under-a-file.json"), b"x").unwrap_err();
        assert!(e.to_string().contains("under-a-file.json"), "{e}");
    }
}
