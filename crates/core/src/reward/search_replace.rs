//! Raw SWE-RL model outputs: `<think>`/`<solution>` tags and SEARCH/REPLACE blocks, read and
//! applied exactly as the reference (`extract_thought_solution`, `parse_search_replace`,
//! `apply_code_change`) does, with its error messages, and turned into a patch `git apply`
//! accepts so that such outputs can be executed like any prediction.

use std::sync::LazyLock;

use regex::Regex;

use super::{udiff, Files};
use crate::{pystr, unidiff};

/// Why an output is not a valid edit; the messages are the reference's, byte for byte.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// The output does not hold exactly one of this tag.
    #[error("count of {0} is not 1")]
    TagCount(&'static str),
    /// The thought before the solution is empty.
    #[error("Thought is empty")]
    EmptyThought,
    /// The solution has no search/replace block.
    #[error("No valid search blocks found")]
    NoBlocks,
    /// Every block's search text equals its replace text.
    #[error("Search and replace blocks are identical")]
    Identical,
    /// Carries the search text with the newline the reference puts in front of it.
    #[error("Search block not found in the code: {0}")]
    NotFound(String),
    /// Not the reference's: it would go on until memory runs out (a replacement that contains
    /// its own search text doubles the file with each block).
    #[error("edited file exceeds {0} bytes")]
    TooLarge(usize),
    /// Not the reference's either, and only from [`to_git_patch`]: git writes such a path
    /// only in its quoted form, which unidiff-style readers do not take apart, so the output
    /// is refused rather than turned into a patch that names some other file.
    #[error("path {0:?} cannot be named in a patch (a control character, quote or backslash, or a diff header inside it)")]
    UnpatchablePath(String),
}

/// The size an edited file may reach: [`GROWTH_FACTOR`] times its original, and never less
/// than [`MIN_SIZE_CAP`] (new and tiny files get room for real edits).
pub const GROWTH_FACTOR: usize = 64;
/// See [`GROWTH_FACTOR`].
pub const MIN_SIZE_CAP: usize = 16 << 20;

/// The largest size an edit may bring a file of `original` bytes to.
pub fn size_cap(original: usize) -> usize {
    original.saturating_mul(GROWTH_FACTOR).max(MIN_SIZE_CAP)
}

const TAGS: [&str; 4] = ["<think>", "</think>", "<solution>", "</solution>"];

/// `extract_thought_solution`: each tag exactly once, a non-empty thought; returns the
/// stripped thought and answer.
pub fn thought_and_answer(output: &str) -> Result<(&str, &str), FormatError> {
    for tag in TAGS {
        if output.matches(tag).count() != 1 {
            return Err(FormatError::TagCount(tag));
        }
    }
    let between = |open: &str, close: &str| {
        let after = output.split(open).nth(1).unwrap_or("");
        pystr::strip(after.split(close).next().unwrap_or(""))
    };
    let thought = between("<think>", "</think>");
    let answer = between("<solution>", "</solution>");
    if thought.is_empty() {
        return Err(FormatError::EmptyThought);
    }
    Ok((thought, answer))
}

static BLOCK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"```.*?\n### (.*)\n<<<<<<< SEARCH\n([\s\S]*?)\n=======\n([\s\S]*?)\n>>>>>>> REPLACE\n```",
    )
    .expect("valid regex")
});

/// Search/replace pairs of one file, in order.
pub type Edits = Vec<(String, Vec<(String, String)>)>;

/// `parse_search_replace`: every block, grouped by path in order of first appearance.
pub fn parse_blocks(answer: &str) -> Edits {
    let mut out: Edits = Vec::new();
    for caps in BLOCK.captures_iter(answer) {
        let get = |i| caps.get(i).map_or("", |m| m.as_str()).to_string();
        let (path, search, replace) = (get(1), get(2), get(3));
        match out.iter_mut().find(|(p, _)| *p == path) {
            Some((_, pairs)) => pairs.push((search, replace)),
            None => out.push((path, vec![(search, replace)])),
        }
    }
    out
}

/// `apply_code_change` (not silent): per path, from `"\n" + original` (`""` when missing),
/// each pair must differ and its `"\n" + search` must occur; every occurrence is replaced.
/// Returns path -> new text, in the order of `edits`. A file that would grow past
/// [`size_cap`] of its original size is [`FormatError::TooLarge`], found before the
/// replacement is made.
pub fn apply(code_context: &Files, edits: &Edits) -> Result<Vec<(String, String)>, FormatError> {
    let mut out = Vec::with_capacity(edits.len());
    for (path, pairs) in edits {
        let original = code_context.get(path).map_or("", String::as_str);
        let cap = size_cap(original.len());
        let mut text = format!("\n{original}");
        for (search, replace) in pairs {
            if search == replace {
                return Err(FormatError::Identical);
            }
            let search = format!("\n{search}");
            // Non-overlapping, left to right: the occurrences `replace` will substitute.
            let count = text.matches(search.as_str()).count();
            if count == 0 {
                return Err(FormatError::NotFound(search));
            }
            // Both sides carry the same leading newline, so it cancels out of the growth.
            let growth = replace.len().saturating_sub(search.len() - 1);
            let new_len = (text.len() - 1).saturating_add(count.saturating_mul(growth));
            if new_len > cap {
                return Err(FormatError::TooLarge(cap));
            }
            text = text.replace(&search, &format!("\n{replace}"));
        }
        out.push((path.clone(), text[1..].to_string()));
    }
    Ok(out)
}

/// The whole of `calculate_search_replace_reward` up to the new file contents.
pub fn edited_files(
    code_context: &Files,
    output: &str,
) -> Result<Vec<(String, String)>, FormatError> {
    let (_, answer) = thought_and_answer(output)?;
    let edits = parse_blocks(answer);
    if edits.is_empty() {
        return Err(FormatError::NoBlocks);
    }
    apply(code_context, &edits)
}

/// The paths an output edits (empty when it cannot be parsed): the files to read from the
/// repository before [`edited_files`].
pub fn edited_paths(output: &str) -> Vec<String> {
    thought_and_answer(output)
        .map(|(_, answer)| parse_blocks(answer).into_iter().map(|(p, _)| p).collect())
        .unwrap_or_default()
}

/// A search/replace output as a patch `git apply` accepts (files in the order edited; a file
/// absent from `code_context` is created). Empty when the edits change nothing.
pub fn to_git_patch(code_context: &Files, output: &str) -> Result<String, FormatError> {
    let new = edited_files(code_context, output)?;
    if let Some((path, _)) = new.iter().find(|(p, _)| !plain_git_path(p)) {
        return Err(FormatError::UnpatchablePath(path.clone()));
    }
    let mut patch = String::new();
    for (path, text) in &new {
        let diff = udiff::git_file_diff(path, code_context.get(path).map(String::as_str), text);
        // A name such as "x+++ b/y" gives header lines that read as another file: refuse
        // rather than hand `git apply` a patch that means something else.
        let reads_back = |d: &str| {
            unidiff::parse(d).is_ok_and(|set| set.files.len() == 1 && set.files[0].path() == path)
        };
        if !diff.is_empty() && !reads_back(&diff) {
            return Err(FormatError::UnpatchablePath(path.clone()));
        }
        patch.push_str(&diff);
    }
    Ok(patch)
}

/// Whether git writes `path` in a diff header as is: no control character, double quote or
/// backslash (git leaves other non-ASCII text unquoted for `git apply`).
fn plain_git_path(path: &str) -> bool {
    !path
        .chars()
        .any(|c| c.is_control() || c == '"' || c == '\\')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Files {
        Files::from([("m.py".to_string(), "a = 1\nb = 1\n".to_string())])
    }

    fn output(search: &str, replace: &str) -> String {
        format!("<think>t</think><solution>\n```python\n### m.py\n<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n```\n</solution>")
    }

    #[test]
    fn replaces_every_occurrence() {
        let new = edited_files(&ctx(), &output("a = 1", "a = 2")).unwrap();
        assert_eq!(new, [("m.py".to_string(), "a = 2\nb = 1\n".to_string())]);
        let new = edited_files(&ctx(), &output(" = 1", " = 2"));
        assert_eq!(
            new,
            Err(FormatError::NotFound("\n = 1".into())),
            "search must start a line"
        );
    }

    #[test]
    fn git_patch_for_an_edit() {
        let p = to_git_patch(&ctx(), &output("b = 1", "b = 3")).unwrap();
        assert_eq!(p, "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n a = 1\n-b = 1\n+b = 3\n");
    }

    #[test]
    fn paths_git_would_quote_are_refused() {
        let ctx = Files::new();
        let out = |path: &str| {
            format!("<think>t</think><solution>\n```python\n### {path}\n<<<<<<< SEARCH\n\n=======\n# x\n>>>>>>> REPLACE\n```\n</solution>")
        };
        for bad in [
            "pkg\t/util.py",
            "a\u{1}b.py",
            "q\"uote.py",
            "back\\slash.py",
            "del\u{7f}.py",
        ] {
            assert_eq!(
                to_git_patch(&ctx, &out(bad)),
                Err(FormatError::UnpatchablePath(bad.to_string())),
                "{bad:?}"
            );
        }
        for header in ["pkg+++ b//new.py", "a b/c --- d"] {
            assert_eq!(
                to_git_patch(&ctx, &out(header)),
                Err(FormatError::UnpatchablePath(header.to_string())),
                "{header:?}"
            );
        }
        let p = to_git_patch(&ctx, &out("pkg/\u{e9}t\u{e9} file.py")).unwrap();
        assert!(p.starts_with("diff --git a/pkg/\u{e9}t\u{e9} file.py b/pkg/\u{e9}t\u{e9} file.py\nnew file mode 100644\n"), "{p}");
        assert!(crate::unidiff::parse(&p).is_ok(), "{p}");
    }
}
