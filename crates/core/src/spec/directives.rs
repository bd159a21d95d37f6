//! Which files a test patch touches, and which test directives the official harness derives
//! from it.
//!
//! Two lists, with different rules, both as swebench 4.1.0 computes them:
//! - the *modified files* (reset with `git checkout <base> ...` before and after the tests) are
//!   the pre-image paths of the patch as `unidiff.PatchSet` reads them (the crate's port of it,
//!   `crate::unidiff`): files the patch creates have no pre-image and are left out;
//! - the *test directives* (appended to the test command) are every `b/` path named on a
//!   `diff --git` line, minus non-test extensions; for Django they become module paths.

/// Extensions (suffixes) the official harness does not pass to the test command. `csv` has no
/// dot there, so `foo_csv` is dropped too; kept as is for fidelity.
const NON_TEST_EXTS: &[&str] = &[
    ".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml",
];

/// The test directives of a test patch for `repo`, in patch order (duplicates kept, as the
/// official harness keeps them).
pub fn test_directives(repo: &str, test_patch: &str) -> Vec<String> {
    if repo == "swe-bench/humaneval" {
        return vec!["test.py".to_string()];
    }
    let mut out: Vec<String> = test_patch
        .split('\n')
        .filter_map(diff_git_target)
        .filter(|d| !NON_TEST_EXTS.iter().any(|ext| d.ends_with(ext)))
        .map(str::to_string)
        .collect();
    if repo == "django/django" {
        for d in &mut out {
            let mut s = d.as_str();
            s = s.strip_suffix(".py").unwrap_or(s);
            s = s.strip_prefix("tests/").unwrap_or(s);
            *d = s.replace('/', ".");
        }
    }
    out
}

/// The `(.*)` of `diff --git a/.* b/(.*)`: Python's `re.findall` with a greedy `a/.*`, so the
/// target starts after the *last* ` b/` on the line. The match may start anywhere in a line.
fn diff_git_target(line: &str) -> Option<&str> {
    // `.` stops at `\n` only, so a `\r` stays part of the directive, as in Python.
    let start = line.find("diff --git a/")?;
    let rest = &line[start + "diff --git a/".len()..];
    let at = rest.rfind(" b/")?;
    Some(&rest[at + " b/".len()..])
}

/// The files a patch modifies, as `swebench.harness.utils.get_modified_files` lists them:
/// pre-image paths (without `a/`) of every file that is not created by the patch. The official
/// function reads the patch with `unidiff.PatchSet`; so does this ([`crate::unidiff`]), leniently:
/// on a patch the package refuses (where the official harness would crash) it keeps what it
/// can read.
pub fn modified_files(patch: &str) -> Vec<String> {
    let (set, _refused) = crate::unidiff::parse_lenient(patch);
    set.files
        .iter()
        .filter_map(|f| f.source_file)
        .filter(|source| *source != "/dev/null")
        .filter_map(|source| source.strip_prefix("a/"))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str = "diff --git a/tests/foo/test_a.py b/tests/foo/test_a.py
--- a/tests/foo/test_a.py
+++ b/tests/foo/test_a.py
@@ -1,2 +1,3 @@
 x
+--- a/not/a/header
 y
diff --git a/tests/foo/data.json b/tests/foo/data.json
new file mode 100644
--- /dev/null
+++ b/tests/foo/data.json
@@ -0,0 +1 @@
+{}
diff --git a/tests/new_test.py b/tests/new_test.py
new file mode 100644
--- /dev/null
+++ b/tests/new_test.py
@@ -0,0 +1 @@
+pass
";

    #[test]
    fn modified_files_skip_created_files_and_hunk_bodies() {
        assert_eq!(modified_files(PATCH), vec!["tests/foo/test_a.py"]);
    }

    #[test]
    fn directives_drop_non_test_extensions() {
        assert_eq!(
            test_directives("pytest-dev/pytest", PATCH),
            vec!["tests/foo/test_a.py", "tests/new_test.py"]
        );
    }

    #[test]
    fn django_directives_are_modules() {
        assert_eq!(
            test_directives("django/django", PATCH),
            vec!["foo.test_a", "new_test"]
        );
    }

    #[test]
    fn csv_suffix_without_dot_is_dropped_as_official() {
        let p = "diff --git a/t/test_csv b/t/test_csv\n";
        assert!(test_directives("psf/requests", p).is_empty());
    }
}
