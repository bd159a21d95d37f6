//! File writes that never leave a half-written result behind: write a temporary file in the
//! same folder, flush it to disk, then rename it over the target. A reader sees the old file or
//! the whole new one, never a torn one, even when the disk fills or the process is killed.
//!
//! Files get the mode an ordinary `open(O_CREAT, 0666)` would give (0644 under the usual
//! umask 022), not the 0600 of a temporary file. No write lands on a file recorded as an
//! input with [`protect`] (`crate::paths` records each command's inputs), whatever name the
//! write reaches it by.

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

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

/// The step of a write refused because its target is one of the command's inputs.
pub const REFUSED_STEP: &str = "refuse to overwrite an input";

impl WriteError {
    /// The write was refused because it would land on an input ([`Clobber`]): the command
    /// line asked for it (bad usage), nothing failed.
    pub fn refused_input(&self) -> bool {
        self.step == REFUSED_STEP
    }
}

/// Makes sure `dir` is a folder that takes a file: creates it (and its parents), then writes
/// and removes one byte in it, so a command that would work for hours before its first write
/// fails at once on an unwritable or full output folder. The probe leaves nothing behind.
pub fn ready_folder(dir: &Path) -> Result<(), WriteError> {
    let err = |step, source| WriteError {
        path: dir.to_path_buf(),
        step,
        source,
    };
    std::fs::create_dir_all(dir).map_err(|e| err("create folder", e))?;
    let mut probe = tempfile::Builder::new()
        .prefix(".swe-eval-tmp-")
        .tempfile_in(dir)
        .map_err(|e| err("create a file in it", e))?;
    probe
        .write_all(b"x")
        .and_then(|()| probe.as_file().sync_all())
        .map_err(|e| err("write a file in it", e))?;
    probe.close().map_err(|e| err("remove the probe file", e))
}

/// The topmost folder of `path` (itself included) that does not exist yet: what a command
/// writing to `path` would create. `None` when `path` exists.
pub fn first_missing(path: &Path) -> Option<PathBuf> {
    let mut missing = None;
    for a in path.ancestors() {
        if a.as_os_str().is_empty() || a.symlink_metadata().is_ok() {
            break;
        }
        missing = Some(a.to_path_buf());
    }
    missing
}

/// Removes `dir` and every folder below it that holds no file, deepest first; folders with a
/// file anywhere below stay, as do files. For the folders a failed command created and did
/// not fill.
pub fn remove_empty_folders(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            remove_empty_folders(&e.path());
        }
    }
    // Fails, as it should, when something is left inside.
    let _ = std::fs::remove_dir(dir);
}

/// Writes `bytes` to `path` atomically, creating parent folders.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    write_atomic_with(path, |f| f.write_all(bytes)).map(|_| ())
}

/// Writes what `fill` writes to `path` atomically, creating parent folders (for outputs too
/// big to hold in memory, written piece by piece); returns the file's size. A `fill` that
/// fails leaves nothing behind.
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> Result<u64, WriteError> {
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
    fill(tmp.as_file_mut()).map_err(|e| err("write", e))?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o666 & !umask()))
        .map_err(|e| err("set permissions", e))?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| err("flush to disk", e))?;
    refuse_if_input(path).map_err(|c| err(REFUSED_STEP, std::io::Error::other(c)))?;
    let size = tmp
        .as_file()
        .metadata()
        .map_err(|e| err("read its size", e))?
        .len();
    tmp.persist(path)
        .map_err(|e| err("rename into place", e.error))?;
    Ok(size)
}

/// An output that would overwrite one of the command's inputs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("refusing to write {output}: it is {how} the input {input} ({flag}); choose another output path")]
pub struct Clobber {
    /// The path the write was to go to.
    pub output: PathBuf,
    /// The input already there.
    pub input: PathBuf,
    /// The flag the input came from (`--predictions`, ...).
    pub flag: String,
    /// `the same file as`, `inside the folder of`, ...
    pub how: &'static str,
}

/// (device, inode) of every protected input, with the input's path and flag.
type Protected = HashMap<(u64, u64), (PathBuf, String)>;
static PROTECTED: Mutex<Option<Protected>> = Mutex::new(None);

/// Records `path` (the entry, and the file it links to) as an input of this process, read
/// from `flag`: no [`write_atomic`] may replace it.
pub fn protect(path: &Path, flag: &str) {
    let mut guard = PROTECTED.lock().unwrap_or_else(|p| p.into_inner());
    let table = guard.get_or_insert_with(HashMap::new);
    for meta in [std::fs::symlink_metadata(path), std::fs::metadata(path)]
        .into_iter()
        .flatten()
    {
        if !meta.is_dir() {
            table.insert(
                (meta.dev(), meta.ino()),
                (path.to_path_buf(), flag.to_string()),
            );
        }
    }
}

/// Forgets every recorded input (for a process that runs several commands).
pub fn forget_protected() {
    *PROTECTED.lock().unwrap_or_else(|p| p.into_inner()) = None;
}

/// Refuses a write to `target` when the file already there is a recorded input (by device
/// and inode: the same file under any name, through links or `..`): what a command checks of
/// the files it will write before it starts.
pub fn refuse_if_input(target: &Path) -> Result<(), Clobber> {
    let guard = PROTECTED.lock().unwrap_or_else(|p| p.into_inner());
    let Some(table) = guard.as_ref() else {
        return Ok(());
    };
    for meta in [std::fs::symlink_metadata(target), std::fs::metadata(target)]
        .into_iter()
        .flatten()
    {
        if let Some((input, flag)) = table.get(&(meta.dev(), meta.ino())) {
            return Err(Clobber {
                output: target.to_path_buf(),
                input: input.clone(),
                flag: flag.clone(),
                how: "the same file as",
            });
        }
    }
    Ok(())
}

/// The process's file mode creation mask, read from `/proc/self/status` (reading it with
/// `umask(2)` would change it for a moment under other threads); 022 when unknown.
pub fn umask() -> u32 {
    static UMASK: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *UMASK.get_or_init(|| {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Umask:"))
                    .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
            })
            .unwrap_or(0o022)
    })
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
    fn files_get_the_ordinary_mode_not_a_temporary_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.jsonl");
        write_atomic(&p, b"x").unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o666 & !umask(), "mode {mode:o}");
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
