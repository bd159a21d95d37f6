//! Strict mode's collection rules: the files a patch creates or edits that change how tests
//! are collected or configured (`conftest.py`, `pytest.ini`, `sitecustomize.py`, ...), read
//! from the patch as `git apply` or GNU `patch` would apply it, and whether one matters to the
//! framework that runs the tests.

use crate::logparse;
use crate::unidiff::{self, LineType};

/// True when a collection file matters to the framework behind `parser`: Django's and
/// sympy's own runners ignore pytest configuration, but every Python process loads
/// `sitecustomize.py`, `usercustomize.py` and `.pth` files.
pub(super) fn affects_framework(file: &CollectionFile, parser: &str) -> bool {
    let name = file.path.rsplit('/').next().unwrap_or(&file.path);
    let interpreter_wide =
        matches!(name, "sitecustomize.py" | "usercustomize.py") || name.ends_with(".pth");
    interpreter_wide
        || !matches!(
            logparse::canonical_parser(parser),
            Some("parse_log_django" | "parse_log_sympy")
        )
}

/// A file a patch creates or edits that changes how tests are collected or configured.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CollectionFile {
    /// Path relative to the repository root.
    pub path: String,
    /// True when the patch creates the file (delete it before the run); false when it edits
    /// an existing one (restore it from the base commit before the run).
    pub added: bool,
}

/// Files a patch creates or edits that change test collection: `conftest.py`,
/// `sitecustomize.py`, `usercustomize.py`, `pytest.ini`, `.pth` files at any depth, and
/// `tox.ini`, `setup.cfg` or `pyproject.toml` when created or when the edit touches pytest
/// configuration. The runner removes (or restores) them before the tests in strict mode.
pub fn collection_files(patch: &str) -> Vec<CollectionFile> {
    const PYTEST_KEYS: [&str; 8] = [
        "pytest",
        "addopts",
        "testpaths",
        "python_files",
        "python_classes",
        "python_functions",
        "norecursedirs",
        "confcutdir",
    ];
    let mut out: Vec<CollectionFile> = Vec::new();
    for file in patch_files(patch) {
        let name = file.path.rsplit('/').next().unwrap_or(&file.path);
        let always = matches!(
            name,
            "conftest.py" | "sitecustomize.py" | "usercustomize.py" | "pytest.ini" | ".pytest.ini"
        ) || name.ends_with(".pth");
        let config = matches!(name, "tox.ini" | "setup.cfg" | "pyproject.toml");
        let hit = always
            || (config
                && (file.added
                    || file
                        .changed
                        .iter()
                        .any(|l| PYTEST_KEYS.iter().any(|k| l.contains(k)))));
        if hit {
            out.push(CollectionFile {
                path: file.path,
                added: file.added,
            });
        }
    }
    out
}

/// The paths of [`collection_files`] that the patch creates.
pub fn collection_files_added(patch: &str) -> Vec<String> {
    collection_files(patch)
        .into_iter()
        .filter(|f| f.added)
        .map(|f| f.path)
        .collect()
}

/// The files of `test_files` (the hidden tests' files, which the eval script checks out at the
/// base commit before it applies the test patch) that `patch` creates or edits: the patch's
/// edits to them are undone before the tests run, so they count for nothing. Read leniently,
/// as [`collection_files`].
pub fn test_files_edited(patch: &str, test_files: &[String]) -> Vec<String> {
    patch_files(patch)
        .into_iter()
        .map(|f| f.path)
        .filter(|p| test_files.contains(p))
        .collect()
}

struct PatchFile {
    path: String,
    added: bool,
    /// Added and removed lines of the file's hunks (without the +/- sign).
    changed: Vec<String>,
}

/// The files a (model) patch leaves in the tree: path (the `+++` side, without `b/`), whether
/// the patch creates it, and its changed lines. Read leniently ([`unidiff::parse_lenient`]): a
/// patch the `unidiff` package refuses may still apply with `git apply` or GNU `patch`, and
/// must not hide the files it creates. Deleted files are left out; binary files are kept (with
/// no changed lines), since `git apply` creates them too. A path the reader sees twice (a
/// `diff --git` line whose `---` names another source starts a second file) is one file,
/// created if either says so.
fn patch_files(patch: &str) -> Vec<PatchFile> {
    let (set, _refused) = unidiff::parse_lenient(patch);
    let mut out: Vec<PatchFile> = Vec::new();
    for f in &set.files {
        // GNU patch strips the CR of a CRLF patch, names included.
        let Some(target) = f.target_file.map(str::trim_end) else {
            continue;
        };
        if target == "/dev/null" {
            continue;
        }
        let path = target.strip_prefix("b/").unwrap_or(target);
        let added = f.source_file.map(str::trim_end) == Some("/dev/null");
        let changed = f
            .hunks
            .iter()
            .flat_map(|h| &h.lines)
            .filter(|l| matches!(l.line_type, LineType::Added | LineType::Removed))
            .map(|l| l.value.trim_end_matches(['\n', '\r']).to_string());
        match out.iter_mut().find(|seen| seen.path == path) {
            Some(seen) => {
                seen.added |= added;
                seen.changed.extend(changed);
            }
            None => out.push(PatchFile {
                path: path.to_string(),
                added,
                changed: changed.collect(),
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hidden_tests_files_a_patch_edits_or_creates_are_named() {
        let patch = "diff --git a/src/m.py b/src/m.py\n--- a/src/m.py\n+++ b/src/m.py\n@@ -1 +1 @@\n-a\n+b\n\
                     diff --git a/tests/test_m.py b/tests/test_m.py\n--- a/tests/test_m.py\n+++ b/tests/test_m.py\n@@ -1 +1,2 @@\n a\n+def test_x(): pass\n\
                     diff --git a/tests/test_new.py b/tests/test_new.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_new.py\n@@ -0,0 +1 @@\n+x\n";
        let tests = [
            "tests/test_m.py".to_string(),
            "tests/test_new.py".to_string(),
        ];
        assert_eq!(test_files_edited(patch, &tests), tests);
        assert_eq!(
            test_files_edited(patch, &["tests/test_other.py".to_string()]),
            Vec::<String>::new()
        );
        assert!(test_files_edited("not a diff", &tests).is_empty());
    }
}
