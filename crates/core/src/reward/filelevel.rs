//! What the reward does with a parsed patch (`crate::unidiff`, the package's exact reading):
//! SWE-RL's per-file change text ([`filelevel_diff`]), and a file's hunks applied to its
//! original text ([`apply_file`], for the search/replace variant's originals from a gold patch).

use std::fmt::Write as _;

use crate::pystr;
use crate::unidiff::{Hunk, LineType, PatchSet, PatchedFile};

/// SWE-RL's `get_filelevel_diff`: path -> the file's hunks rendered and stripped, joined with
/// newlines, behind a `rename from X to Y` line for renames. Binary files are left out; a
/// later file with the same path replaces an earlier one. Keys keep first-insertion order.
pub fn filelevel_diff(set: &PatchSet<'_>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for file in &set.files {
        if file.is_binary_file {
            continue;
        }
        let mut content = String::new();
        let path = if file.is_rename() {
            let src = file.source_file.unwrap_or("");
            let tgt = file.target_file.unwrap_or("");
            let src = src.strip_prefix("a/").unwrap_or(src);
            let tgt = tgt.strip_prefix("b/").unwrap_or(tgt);
            let _ = write!(content, "rename from {src} to {tgt}");
            src
        } else {
            file.path()
        };
        content.push('\n');
        let mut buf = String::new();
        for (k, hunk) in file.hunks.iter().enumerate() {
            if k > 0 {
                content.push('\n');
            }
            buf.clear();
            let _ = write!(buf, "{hunk}");
            content.push_str(pystr::strip(&buf));
        }
        let content = pystr::strip(&content).to_string();
        match out.iter_mut().find(|(p, _)| p == path) {
            Some(slot) => slot.1 = content,
            None => out.push((path.to_string(), content)),
        }
    }
    out
}

/// Why a file's hunks do not apply to the text given as its original.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("hunk {hunk} of {path} does not apply (its lines are not in the original)")]
pub struct ApplyError {
    /// The file's path, relative to the repository root.
    pub path: String,
    /// 1-based.
    pub hunk: usize,
}

/// The file's text after its hunks, applied to `original`: each hunk where its header says,
/// or failing that at the nearest place its old lines occur (as `patch` would, without fuzz).
/// `\ No newline at end of file` removes the terminator of the line before it.
pub fn apply_file(original: &str, file: &PatchedFile<'_>) -> Result<String, ApplyError> {
    let lines: Vec<&str> = original.split_inclusive('\n').collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut next = 0usize; // first original line not yet copied
    let mut offset: isize = 0;
    for (k, hunk) in file.hunks.iter().enumerate() {
        let (old, new) = hunk_sides(hunk);
        let stated = pystr::int_value(&hunk.source_start).unwrap_or(0) as isize;
        // A hunk with no old lines is placed after line `start`; otherwise it starts there.
        let base = if old.is_empty() { stated } else { stated - 1 };
        let want = base + offset;
        let fits = |at: usize| {
            at >= next && at + old.len() <= lines.len() && lines[at..at + old.len()] == old[..]
        };
        let err = || ApplyError {
            path: file.path().to_string(),
            hunk: k + 1,
        };
        let at = if want >= 0 && fits(want as usize) {
            want as usize
        } else {
            let want = want.max(next as isize) as usize;
            (0..=lines.len())
                .flat_map(|d| [want.checked_add(d), want.checked_sub(d).filter(|_| d > 0)])
                .flatten()
                .find(|&at| fits(at))
                .ok_or_else(err)?
        };
        out.extend(lines[next..at].iter().map(|s| s.to_string()));
        out.extend(new.iter().map(|s| s.to_string()));
        next = at + old.len();
        offset = at as isize - base;
    }
    out.extend(lines[next..].iter().map(|s| s.to_string()));
    Ok(out.concat())
}

/// The old and new lines of a hunk, terminators as the patch says.
fn hunk_sides<'a>(hunk: &Hunk<'a>) -> (Vec<&'a str>, Vec<&'a str>) {
    let (mut old, mut new) = (Vec::new(), Vec::new());
    // Which sides the previous line went to, for a following no-newline marker.
    let mut last = (false, false);
    for line in &hunk.lines {
        match line.line_type {
            LineType::Context => {
                old.push(line.value);
                new.push(line.value);
                last = (true, true);
            }
            LineType::Removed => {
                old.push(line.value);
                last = (true, false);
            }
            LineType::Added => {
                new.push(line.value);
                last = (false, true);
            }
            LineType::NoNewline => {
                let trim = |v: &mut Vec<&'a str>| {
                    if let Some(l) = v.last_mut() {
                        *l = l.strip_suffix('\n').unwrap_or(l);
                    }
                };
                if last.0 {
                    trim(&mut old);
                }
                if last.1 {
                    trim(&mut new);
                }
            }
            LineType::Empty => {}
        }
    }
    (old, new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unidiff::parse;

    #[test]
    fn rename_gets_a_header_line_and_the_source_key() {
        let text = "diff --git a/old.py b/new.py\nsimilarity index 90%\nrename from old.py\nrename to new.py\n--- a/old.py\n+++ b/new.py\n@@ -1 +1 @@\n-a\n+b\n";
        let set = parse(text).unwrap();
        assert_eq!(
            filelevel_diff(&set),
            vec![(
                "old.py".to_string(),
                "rename from old.py to new.py\n@@ -1,1 +1,1 @@\n-a\n+b".to_string()
            )]
        );
    }
}
