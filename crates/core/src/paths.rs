//! Safe paths: the two questions every command asks before it writes.
//!
//! 1. *Is this name a single safe path component?* Instance ids, model names and run ids end
//!    up in file and folder names (`<output>/<instance_id>/report.json`,
//!    `logs/run_evaluation/<run_id>/<model>/...`). A value such as `../../x`, `exp/1`, `..` or
//!    one with a NUL byte would write elsewhere or make stray folders, so it is refused:
//!    [`check_component`].
//! 2. *Is this output one of my inputs?* An output that is, or resolves to (through symbolic
//!    links, hard links or `..`), one of the command's input files or folders is refused
//!    before anything runs: [`IoPlan::check`]. And while the command runs, no write may land
//!    on an input file, whatever name it is reached by: [`IoPlan::protect`] records the inputs
//!    (files, and the files inside input folders) with `fsutil::protect`, and
//!    `fsutil::write_atomic` refuses to rename a finished file over one of them.
//!
//! Both refusals are usage errors (exit code 2) whose message names the offending value or
//! both paths.

use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// A value that cannot be used as a file or folder name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} `{value}` cannot be used as a file or folder name: {reason}")]
pub struct UnsafeComponent {
    /// What the value is (`instance_id`, `--run-id`, `model_name_or_path`, ...).
    pub what: String,
    /// The value, escaped for printing.
    pub value: String,
    /// Why it cannot be a name.
    pub reason: &'static str,
}

/// Longest name most file systems accept, in bytes.
const MAX_COMPONENT_BYTES: usize = 255;

/// Checks that `value` is one safe path component: not empty, not `.` or `..`, no `/`, `\`,
/// NUL or other control characters, at most 255 bytes.
pub fn check_component(what: &str, value: &str) -> Result<(), UnsafeComponent> {
    let reason = if value.is_empty() {
        Some("it is empty")
    } else if value == "." || value == ".." {
        Some("`.` and `..` name other folders")
    } else if value.contains('/') || value.contains('\\') {
        Some("it contains a path separator (`/` or `\\`)")
    } else if value.chars().any(char::is_control) {
        Some("it contains a control character")
    } else if value.len() > MAX_COMPONENT_BYTES {
        Some("it is longer than 255 bytes")
    } else {
        None
    };
    match reason {
        None => Ok(()),
        Some(reason) => Err(UnsafeComponent {
            what: what.to_string(),
            value: value.escape_debug().to_string(),
            reason,
        }),
    }
}

/// `base/value` once `value` is checked to be a single safe component.
pub fn join_component(base: &Path, what: &str, value: &str) -> Result<PathBuf, UnsafeComponent> {
    check_component(what, value)?;
    Ok(base.join(value))
}

/// A run id given on the command line that cannot be a folder name (clap names the flag).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{}` cannot be used as a file or folder name: {} (use letters, digits, `-`, `_` or `.`)",
    .0.value,
    .0.reason
)]
pub struct RunIdError(pub UnsafeComponent);

/// A clap value parser for run ids (and other names used as one path component).
pub fn run_id_arg(value: &str) -> Result<String, RunIdError> {
    check_component("run id", value)
        .map(|()| value.to_string())
        .map_err(RunIdError)
}

pub use crate::fsutil::Clobber;

/// An output path that cannot be written as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutputError {
    #[error(transparent)]
    /// The output is one of the inputs.
    Clobber(#[from] Clobber),
    #[error("refusing to write {0}: it is a folder; give a file name")]
    /// A file output names a folder.
    IsFolder(PathBuf),
    #[error("refusing to write into {0}: it is a file, and this command writes a folder of files")]
    /// A folder output names a file.
    NotAFolder(PathBuf),
    #[error("this command writes a folder of files, which standard output (`-`) cannot hold")]
    /// A folder output is `-`.
    FolderToStdout,
}

/// What a command writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// One file (`reward --output rewards.jsonl`).
    File(PathBuf),
    /// A folder the command writes files into (`grade`, `spec`, `correlate`, `run`).
    Folder(PathBuf),
    /// Standard output (`--output -`).
    Stdout,
}

/// A command's inputs (with the flag each came from) and its outputs.
#[derive(Debug, Clone, Default)]
pub struct IoPlan {
    /// Input paths, each with the flag it came from.
    pub inputs: Vec<(String, PathBuf)>,
    /// What the command writes.
    pub outputs: Vec<Output>,
}

impl IoPlan {
    /// A plan with no inputs and no outputs.
    pub fn new() -> IoPlan {
        IoPlan::default()
    }

    /// Adds an output.
    pub fn output(mut self, output: Output) -> IoPlan {
        self.outputs.push(output);
        self
    }

    /// Adds a file output when there is one (`--json FILE`).
    pub fn output_file(self, path: Option<&Path>) -> IoPlan {
        match path {
            Some(p) if is_stdout(p) => self.output(Output::Stdout),
            Some(p) => self.output(Output::File(p.to_path_buf())),
            None => self,
        }
    }

    /// Adds an input path (a file or a folder) read from `flag`.
    pub fn input(mut self, flag: &str, path: impl Into<PathBuf>) -> IoPlan {
        self.inputs.push((flag.to_string(), path.into()));
        self
    }

    /// Adds an input given as text that may be a word rather than a path (`gold`, `-`).
    pub fn input_spec(self, flag: &str, spec: &str) -> IoPlan {
        if spec == "gold" || spec == "-" {
            self
        } else {
            self.input(flag, spec)
        }
    }

    /// Refuses an output that is, or resolves to, one of the inputs (for an output folder: an
    /// input file given as the folder, or an input folder that is the same folder).
    pub fn check(&self) -> Result<(), OutputError> {
        for output in &self.outputs {
            let (out, is_folder) = match output {
                Output::Stdout => continue,
                Output::File(p) => (p, false),
                Output::Folder(p) => (p, true),
            };
            let out_resolved = resolve(out);
            let out_id = identity(&out_resolved);
            let out_meta = std::fs::metadata(&out_resolved).ok();
            for (flag, input) in &self.inputs {
                let in_resolved = resolve(input);
                let same = out_resolved == in_resolved
                    || (out_id.is_some() && out_id == identity(&in_resolved));
                if same {
                    return Err(OutputError::Clobber(Clobber {
                        output: out.clone(),
                        input: input.clone(),
                        flag: flag.clone(),
                        how: if is_folder {
                            "(as the folder to write into) the same path as"
                        } else {
                            "the same file as"
                        },
                    }));
                }
                // Files an output folder shares with an input folder are caught when written.
            }
            if is_folder && is_stdout(out) {
                return Err(OutputError::FolderToStdout);
            }
            match out_meta {
                Some(m) if is_folder && !m.is_dir() => {
                    return Err(OutputError::NotAFolder(out.clone()))
                }
                Some(m) if !is_folder && m.is_dir() => {
                    return Err(OutputError::IsFolder(out.clone()))
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Records the inputs so no write of this process lands on them (see
    /// `fsutil::protect`). Files inside input folders are recorded too, up to a bound, except
    /// under an output folder (a command may rewrite what it wrote there before, as a resumed
    /// run does).
    pub fn protect(&self) {
        let skip: Vec<PathBuf> = self
            .outputs
            .iter()
            .filter_map(|o| match o {
                Output::Folder(p) => Some(resolve(p)),
                _ => None,
            })
            .collect();
        for (flag, input) in &self.inputs {
            let mut budget = FOLDER_WALK_LIMIT;
            record(flag, input, &skip, &mut budget);
        }
    }
}

/// Files recorded per input folder at most (an official logs tree has a few thousand).
const FOLDER_WALK_LIMIT: usize = 200_000;

fn record(flag: &str, path: &Path, skip: &[PathBuf], budget: &mut usize) {
    // The entry itself (a symbolic link named as the input is protected as a name too) and
    // what it points to.
    crate::fsutil::protect(path, flag);
    if !std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        return;
    }
    if !skip.is_empty() && skip.contains(&resolve(path)) {
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    for entry in entries.flatten() {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let p = entry.path();
        // Symbolic links to folders are not walked (no cycles); links to files are recorded.
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            record(flag, &p, skip, budget);
        } else {
            crate::fsutil::protect(&p, flag);
        }
    }
}

/// (device, inode) of an existing path, following links.
fn identity(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The absolute path `path` names, with symbolic links and `..` resolved as far as the path
/// exists and the rest normalized by its components (`a/missing/../b` is `a/b`).
pub fn resolve(path: &Path) -> PathBuf {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::from("/");
    let mut resolved_so_far = true;
    for comp in abs.components() {
        match comp {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                out.push(name);
                if resolved_so_far {
                    match std::fs::canonicalize(&out) {
                        Ok(c) => out = c,
                        Err(_) => resolved_so_far = is_dangling_link(&out),
                    }
                }
            }
        }
    }
    out
}

fn is_dangling_link(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

/// True for the conventional "standard output" file name.
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == OsStr::new("-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_are_single_and_safe() {
        for ok in [
            "django__django-11099",
            "openrouter:minimax__minimax-m2.5",
            "run-1.x",
            "é",
        ] {
            assert!(check_component("x", ok).is_ok(), "{ok}");
        }
        for (bad, why) in [
            ("", "empty"),
            (".", "`.`"),
            ("..", "`..`"),
            ("../../x", "separator"),
            ("exp/1", "separator"),
            ("a\\b", "separator"),
            ("a\0b", "control"),
            ("a\nb", "control"),
        ] {
            let e = check_component("instance_id", bad).unwrap_err();
            assert!(e.to_string().contains(why), "{bad:?}: {e}");
            assert!(e.to_string().starts_with("instance_id `"), "{e}");
        }
        assert!(check_component("x", &"a".repeat(256)).is_err());
        let e = run_id_arg("exp/1").unwrap_err().to_string();
        assert_eq!(
            e,
            "`exp/1` cannot be used as a file or folder name: it contains a path separator \
             (`/` or `\\`) (use letters, digits, `-`, `_` or `.`)"
        );
        assert_eq!(run_id_arg("try1").unwrap(), "try1");
    }

    #[test]
    fn resolve_follows_links_and_dotdot() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("in.jsonl"), "x").unwrap();
        std::fs::create_dir(d.join("sub")).unwrap();
        std::os::unix::fs::symlink(d.join("in.jsonl"), d.join("link")).unwrap();
        let want = resolve(&d.join("in.jsonl"));
        assert_eq!(resolve(&d.join("sub/../in.jsonl")), want);
        assert_eq!(resolve(&d.join("missing/../in.jsonl")), want);
        assert_eq!(resolve(&d.join("link")), want);
        assert_eq!(
            resolve(&d.join("missing/x")),
            resolve(d).join("missing").join("x")
        );
    }

    #[test]
    fn check_refuses_outputs_that_are_inputs() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("p.jsonl"), "x").unwrap();
        std::fs::hard_link(d.join("p.jsonl"), d.join("hard.jsonl")).unwrap();
        std::fs::create_dir(d.join("logs")).unwrap();
        let plan = |out: Output| {
            IoPlan::new()
                .output(out)
                .input("--predictions", d.join("p.jsonl"))
                .input("--logs", d.join("logs"))
                .input_spec("--dataset", "gold")
        };
        for out in [
            Output::File(d.join("p.jsonl")),
            Output::File(d.join("logs/../p.jsonl")),
            Output::File(d.join("hard.jsonl")),
            Output::Folder(d.join("p.jsonl")),
            Output::Folder(d.join("logs/.")),
        ] {
            let e = plan(out.clone()).check().unwrap_err();
            assert!(matches!(e, OutputError::Clobber(_)), "{out:?}: {e}");
            assert!(e.to_string().contains("refusing to write"), "{out:?}: {e}");
        }
        for out in [
            Output::File(d.join("out.jsonl")),
            Output::Folder(d.join("logs/out")),
            Output::Stdout,
        ] {
            assert!(plan(out.clone()).check().is_ok(), "{out:?}");
        }
        for (out, want) in [
            (Output::File(d.join("logs")), "it is a folder"),
            (Output::Folder(d.join("hard.jsonl")), "it is a file"),
            (Output::Folder("-".into()), "standard output"),
        ] {
            let e = IoPlan::new().output(out.clone()).check().unwrap_err();
            assert!(e.to_string().contains(want), "{out:?}: {e}");
        }
    }
}
