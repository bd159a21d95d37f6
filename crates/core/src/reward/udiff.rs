//! Line diffs rendered as `difflib.unified_diff` renders them, for the search/replace reward
//! (SWE-RL's `generate_unified_diff`/`get_normalized_patch`), and as `git apply` reads them,
//! for turning a search/replace output into a patch that can be executed.

use std::fmt::Write as _;

use super::sequence_matcher::{line_ids, Opcode, Scratch, SequenceMatcher, Tag};
use super::Files;
use crate::pystr;

/// difflib's `_format_range_unified`: `start` alone for one line, `start,length` otherwise,
/// with an empty range written as the line before it.
fn format_range(start: usize, stop: usize) -> String {
    let mut beginning = start + 1;
    let length = stop - start;
    if length == 1 {
        return beginning.to_string();
    }
    if length == 0 {
        beginning -= 1;
    }
    format!("{beginning},{length}")
}

/// Grouped opcodes of two line sequences, as `SequenceMatcher(None, a, b)` (`autojunk` as
/// asked) gives them to `unified_diff`.
fn groups(a: &[&str], b: &[&str], n: usize, autojunk: bool) -> Vec<Vec<Opcode>> {
    let (ai, bi, alphabet) = line_ids(a, b);
    let mut scratch = Scratch::default();
    SequenceMatcher::new(&ai, &bi, alphabet, autojunk, &mut scratch).grouped_opcodes(n)
}

/// `difflib.unified_diff(a, b, fromfile, tofile, n=n, lineterm=lineterm)` (no dates): the
/// lines it yields, in order.
pub fn unified_diff(
    a: &[&str],
    b: &[&str],
    fromfile: &str,
    tofile: &str,
    n: usize,
    lineterm: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    for (k, group) in groups(a, b, n, true).iter().enumerate() {
        if k == 0 {
            out.push(format!("--- {fromfile}{lineterm}"));
            out.push(format!("+++ {tofile}{lineterm}"));
        }
        let (first, last) = (group[0], group[group.len() - 1]);
        out.push(format!(
            "@@ -{} +{} @@{lineterm}",
            format_range(first.i1, last.i2),
            format_range(first.j1, last.j2)
        ));
        for op in group {
            if op.tag == Tag::Equal {
                out.extend(a[op.i1..op.i2].iter().map(|l| format!(" {l}")));
                continue;
            }
            if matches!(op.tag, Tag::Replace | Tag::Delete) {
                out.extend(a[op.i1..op.i2].iter().map(|l| format!("-{l}")));
            }
            if matches!(op.tag, Tag::Replace | Tag::Insert) {
                out.extend(b[op.j1..op.j2].iter().map(|l| format!("+{l}")));
            }
        }
    }
    out
}

/// SWE-RL's `generate_unified_diff(old, new)`: the `unified_diff` of `splitlines()` with three
/// lines of context and no terminators, without its two file header lines, joined by `\n`;
/// empty when nothing changed.
pub fn normalized_patch(old: &str, new: &str) -> String {
    let (a, b) = (pystr::splitlines(old), pystr::splitlines(new));
    let lines = unified_diff(&a, &b, "old", "new", 3, "");
    lines
        .get(2..)
        .map(|rest| rest.join("\n"))
        .unwrap_or_default()
}

/// SWE-RL's `get_normalized_patch`: path -> normalized patch against the original (`""` when
/// the original is missing), files with no visible change left out.
pub fn normalized_patches<'p>(
    code_context: &Files,
    new_content: impl IntoIterator<Item = (&'p String, &'p String)>,
) -> Vec<(String, String)> {
    new_content
        .into_iter()
        .filter_map(|(path, new)| {
            let old = code_context.get(path).map_or("", String::as_str);
            let patch = normalized_patch(old, new);
            (!patch.is_empty()).then(|| (path.clone(), patch))
        })
        .collect()
}

/// A git-style diff of one file that `git apply` accepts: `old` is `None` for a new file.
/// Lines are compared with their terminators, so a change to the final newline shows (with
/// git's `\ No newline at end of file` marker). Empty when nothing changed.
pub fn git_file_diff(path: &str, old: Option<&str>, new: &str) -> String {
    let old_text = old.unwrap_or("");
    if old.is_some() && old_text == new {
        return String::new();
    }
    let a: Vec<&str> = old_text.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let mut out = String::new();
    let _ = writeln!(out, "diff --git a/{path} b/{path}");
    if old.is_none() {
        out.push_str("new file mode 100644\n--- /dev/null\n");
    } else {
        let _ = writeln!(out, "--- a/{path}");
    }
    let _ = writeln!(out, "+++ b/{path}");
    let push_line = |out: &mut String, prefix: char, line: &str| {
        out.push(prefix);
        out.push_str(line);
        if !line.ends_with('\n') {
            out.push_str("\n\\ No newline at end of file\n");
        }
    };
    for group in groups(&a, &b, 3, false) {
        let (first, last) = (group[0], group[group.len() - 1]);
        let _ = writeln!(
            out,
            "@@ -{} +{} @@",
            format_range(first.i1, last.i2),
            format_range(first.j1, last.j2)
        );
        for op in group {
            if op.tag == Tag::Equal {
                a[op.i1..op.i2]
                    .iter()
                    .for_each(|l| push_line(&mut out, ' ', l));
                continue;
            }
            if matches!(op.tag, Tag::Replace | Tag::Delete) {
                a[op.i1..op.i2]
                    .iter()
                    .for_each(|l| push_line(&mut out, '-', l));
            }
            if matches!(op.tag, Tag::Replace | Tag::Insert) {
                b[op.j1..op.j2]
                    .iter()
                    .for_each(|l| push_line(&mut out, '+', l));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalized_patch_matches_difflib() {
        // CPython: '\n'.join(list(difflib.unified_diff('a\nb\nc'.splitlines(),
        //   'a\nB\nc'.splitlines(), 'old', 'new', lineterm=''))[2:])
        assert_eq!(
            normalized_patch("a\nb\nc\n", "a\nB\nc"),
            "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c"
        );
        assert_eq!(normalized_patch("", "x\n"), "@@ -0,0 +1 @@\n+x");
        assert_eq!(
            normalized_patch("x\n", "x"),
            "",
            "final newline is invisible to splitlines"
        );
    }

    #[test]
    fn git_diff_marks_missing_final_newline() {
        let d = git_file_diff("f.txt", Some("a\nb"), "a\nc");
        assert_eq!(
            d,
            "diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
        );
        assert!(git_file_diff("n.py", None, "x\n")
            .starts_with("diff --git a/n.py b/n.py\nnew file mode 100644\n--- /dev/null\n"));
    }
}
