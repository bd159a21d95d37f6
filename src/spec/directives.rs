//! Which files a test patch touches, and which test directives the official harness derives
//! from it.
//!
//! Two lists, with different rules, both as swebench 4.1.0 computes them:
//! - the *modified files* (reset with `git checkout <base> ...` before and after the tests) are
//!   the pre-image paths of the patch as `unidiff.PatchSet` reads them: files the patch creates
//!   have no pre-image and are left out;
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
/// pre-image paths (without `a/`) of every file that is not created by the patch.
pub fn modified_files(patch: &str) -> Vec<String> {
    let mut files: Vec<FileEntry> = Vec::new();
    // Index into `files` of the file whose header is being read, as unidiff's `current_file`.
    let mut current: Option<usize> = None;
    // unidiff's `patch_info is None`: true right after a file has started hunks.
    let mut in_info = false;
    let mut last_source: Option<String> = None;
    let mut lines = split_keep_newline(patch).into_iter();
    while let Some(line) = lines.next() {
        let body = line.strip_suffix('\n').unwrap_or(line);
        if let Some((src, _tgt)) = parse_diff_git_header(body) {
            files.push(FileEntry {
                source: src.to_string(),
            });
            current = Some(files.len() - 1);
            in_info = true;
            continue;
        }
        if is_mode_line(body, "new file mode ") {
            if let Some(i) = current {
                files[i].source = "/dev/null".to_string();
            }
            in_info = true;
            continue;
        }
        if is_mode_line(body, "deleted file mode ") {
            in_info = true;
            continue;
        }
        if let Some(name) = header_name(body, "--- ") {
            if let Some(i) = current {
                if files[i].source != name {
                    current = None;
                }
            }
            last_source = Some(name.to_string());
            continue;
        }
        if header_name(body, "+++ ").is_some() {
            if current.is_none() {
                files.push(FileEntry {
                    source: last_source.clone().unwrap_or_default(),
                });
                current = Some(files.len() - 1);
                in_info = false;
            }
            continue;
        }
        if let Some((src_len, tgt_len)) = parse_hunk_header(body) {
            in_info = false;
            if current.is_none() {
                // unidiff raises here; the official harness would crash. Keep what we have.
                break;
            }
            skip_hunk(&mut lines, src_len, tgt_len);
            continue;
        }
        if body.starts_with("\\ No newline at end of file") {
            continue;
        }
        if line == "\n" && current.is_some() {
            continue;
        }
        if !in_info {
            current = None;
            in_info = true;
        }
        if let Some(src) = binary_source(body) {
            if current.is_none() {
                files.push(FileEntry {
                    source: src.to_string(),
                });
            }
            in_info = false;
            current = None;
            continue;
        }
        if line == "GIT binary patch\n" {
            in_info = false;
            current = None;
        }
    }
    files
        .into_iter()
        .filter(|f| f.source != "/dev/null")
        .filter_map(|f| f.source.strip_prefix("a/").map(str::to_string))
        .collect()
}

struct FileEntry {
    source: String,
}

/// Lines with their `\n` kept, as Python's `StringIO` iterates them.
fn split_keep_newline(s: &str) -> Vec<&str> {
    s.split_inclusive('\n').collect()
}

fn is_mode_line(line: &str, prefix: &str) -> bool {
    line.strip_prefix(prefix)
        .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
}

/// `--- name[\ttimestamp]` / `+++ name[\ttimestamp]`.
fn header_name<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = line.strip_prefix(prefix)?;
    let name = rest.split('\t').next().unwrap_or(rest);
    if name.is_empty() {
        None
    } else {
        Some(name)
    }
}

/// unidiff's three `diff --git` patterns: `a/.. b/..`, URI-like, then any two tokens. The
/// regexes are greedy on `[^\t\n]+`, so the split is at the last ` b/` (first pattern) or the
/// last space (the others).
fn parse_diff_git_header(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix("diff --git ")?;
    let rest = rest.split('\t').next().unwrap_or(rest);
    if rest.starts_with("a/") {
        if let Some(at) = rest.rfind(" b/") {
            if at >= 3 {
                return Some((&rest[..at], &rest[at + 1..]));
            }
        }
    }
    let at = rest.rfind(' ')?;
    if at == 0 || at + 1 >= rest.len() {
        return None;
    }
    Some((&rest[..at], &rest[at + 1..]))
}

/// `@@ -a[,b] +c[,d] @@`: the source and target lengths (default 1).
fn parse_hunk_header(line: &str) -> Option<(usize, usize)> {
    let rest = line.strip_prefix("@@ -")?;
    let (src, rest) = rest.split_once(" +")?;
    let (tgt, _) = rest.split_once(" @@")?;
    let len = |range: &str| -> Option<usize> {
        let mut parts = range.splitn(2, ',');
        let start = parts.next()?;
        if start.is_empty() || !start.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        match parts.next() {
            None => Some(1),
            Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => n.parse().ok(),
            Some(_) => None,
        }
    };
    Some((len(src)?, len(tgt)?))
}

/// Consumes a hunk's body: lines are counted against the header's lengths, so a body line that
/// looks like a header (`--- x`, `diff --git`) is not read as one.
fn skip_hunk<'a>(lines: &mut impl Iterator<Item = &'a str>, src_len: usize, tgt_len: usize) {
    let (mut src, mut tgt) = (0usize, 0usize);
    if src_len == 0 && tgt_len == 0 {
        return;
    }
    for line in lines.by_ref() {
        match line.as_bytes().first() {
            Some(b'+') => tgt += 1,
            Some(b'-') => src += 1,
            Some(b'\\') => {}
            _ => {
                src += 1;
                tgt += 1;
            }
        }
        if src >= src_len && tgt >= tgt_len {
            break;
        }
    }
}

/// `Binary files X and Y differ`: the source name.
fn binary_source(line: &str) -> Option<&str> {
    let rest = line
        .strip_prefix("Binary files ")
        .or_else(|| line.strip_prefix("Binary file "))?;
    let rest = rest
        .strip_suffix(" differ")
        .or_else(|| rest.strip_suffix(" has changed"))?;
    let src = rest.split(" and ").next().unwrap_or(rest);
    Some(src.split('\t').next().unwrap_or(src))
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
