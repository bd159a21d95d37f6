//! A unified-diff parser and renderer that behaves as the `unidiff` package (0.7.5) does:
//! the same files, paths and hunks, the same rendering of a hunk (`str(hunk)`), and the same
//! inputs refused. The reward depends on all three: a patch `unidiff` refuses contributes
//! nothing, and the similarity compares the rendered hunk text character by character.
//!
//! The parser reads the text line by line, where a line ends after `\n` only (as Python's
//! `StringIO` splits it), and keeps the package's state machine: the same "current file",
//! "patch info" and leftover header variables, including the inputs on which the package fails
//! with an exception other than its own parse error (those count as failures too).

use std::fmt::{self, Write as _};
use std::sync::LazyLock;

use regex::Regex;

use super::pystr;

const DEV_NULL: &str = "/dev/null";
const NO_NEWLINE_VALUE: &str = " No newline at end of file\n";

/// What kind of line a hunk line is; rendered as its prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineType {
    /// A `+` line.
    Added,
    /// A `-` line.
    Removed,
    /// A ` ` (context) line.
    Context,
    /// `\ No newline at end of file` (or any line starting with a backslash inside a hunk).
    NoNewline,
    /// A blank line after a hunk, kept with no prefix.
    Empty,
}

impl LineType {
    /// The line's first character: `+`, `-` or a space.
    pub fn prefix(self) -> &'static str {
        match self {
            LineType::Added => "+",
            LineType::Removed => "-",
            LineType::Context => " ",
            LineType::NoNewline => "\\",
            LineType::Empty => "",
        }
    }
}

/// One line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line<'a> {
    /// Added, removed or context.
    pub line_type: LineType,
    /// The text after the prefix, with its line terminator.
    pub value: &'a str,
}

/// One hunk. Starts are kept as Python's `int` prints them (any length); lengths as counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk<'a> {
    /// The hunk header's start in the source file, as written.
    pub source_start: String,
    /// The hunk header's line count in the source file.
    pub source_length: u64,
    /// The hunk header's start in the target file, as written.
    pub target_start: String,
    /// The hunk header's line count in the target file.
    pub target_length: u64,
    /// The text after the second `@@` (often the enclosing function).
    pub section_header: &'a str,
    /// The hunk's lines.
    pub lines: Vec<Line<'a>>,
}

impl fmt::Display for Hunk<'_> {
    /// `str(hunk)`: the header with both lengths always written, then the lines as they came.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "@@ -{},{} +{},{} @@",
            self.source_start, self.source_length, self.target_start, self.target_length
        )?;
        if !self.section_header.is_empty() {
            write!(f, " {}", self.section_header)?;
        }
        f.write_char('\n')?;
        for line in &self.lines {
            f.write_str(line.line_type.prefix())?;
            f.write_str(line.value)?;
        }
        Ok(())
    }
}

/// One file of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchedFile<'a> {
    /// Index into [`PatchSet::infos`]: the header lines before the `---`/`+++` pair, shared
    /// with whatever the package shares them with.
    pub patch_info: Option<usize>,
    /// The `---` path, as written.
    pub source_file: Option<&'a str>,
    /// The `+++` path, as written.
    pub target_file: Option<&'a str>,
    /// What follows the `---` path after a tab.
    pub source_timestamp: Option<&'a str>,
    /// What follows the `+++` path after a tab.
    pub target_timestamp: Option<&'a str>,
    /// A `Binary files ... differ` or `GIT binary patch` entry.
    pub is_binary_file: bool,
    /// The file's hunks.
    pub hunks: Vec<Hunk<'a>>,
}

/// Python's `s[2:]`.
fn skip2(s: &str) -> &str {
    let mut it = s.char_indices().skip(2);
    it.next().map_or("", |(i, _)| &s[i..])
}

impl<'a> PatchedFile<'a> {
    /// The package's `is_rename`: both sides real files whose names differ past their prefix.
    pub fn is_rename(&self) -> bool {
        match (self.source_file, self.target_file) {
            (Some(s), Some(t)) => s != DEV_NULL && t != DEV_NULL && skip2(s) != skip2(t),
            _ => false,
        }
    }

    /// The package's `path`: the source name (the target for added files and renames) with an
    /// `a/` or `b/` prefix removed.
    pub fn path(&self) -> &'a str {
        let mut p = self.source_file;
        if matches!(p, None | Some(DEV_NULL))
            || (self.is_rename() && !matches!(self.target_file, None | Some(DEV_NULL)))
        {
            p = self.target_file;
        }
        let p = p.unwrap_or("");
        if p.starts_with("a/") || p.starts_with("b/") {
            &p[2..]
        } else {
            p
        }
    }
}

/// A parsed patch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PatchSet<'a> {
    /// The files, in patch order.
    pub files: Vec<PatchedFile<'a>>,
    /// Header-line groups ("patch info"), referenced by files.
    pub infos: Vec<Vec<&'a str>>,
}

impl fmt::Display for PatchSet<'_> {
    /// `str(PatchSet)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for file in &self.files {
            if let Some(info) = file.patch_info {
                for line in &self.infos[info] {
                    f.write_str(line)?;
                }
            }
            if !file.is_binary_file && !file.hunks.is_empty() {
                let side = |name: Option<&str>, ts: Option<&str>| {
                    let mut s = name.unwrap_or("None").to_string();
                    if let Some(ts) = ts.filter(|t| !t.is_empty()) {
                        s.push('\t');
                        s.push_str(ts);
                    }
                    s
                };
                writeln!(f, "--- {}", side(file.source_file, file.source_timestamp))?;
                writeln!(f, "+++ {}", side(file.target_file, file.target_timestamp))?;
            }
            for hunk in &file.hunks {
                write!(f, "{hunk}")?;
            }
        }
        Ok(())
    }
}

/// Why the package would refuse a patch, at which 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {kind}")]
pub struct ParseError {
    /// The 1-based line the parser stopped at.
    pub line: usize,
    /// What was wrong there.
    pub kind: ParseErrorKind,
}

/// What the `unidiff` package would raise.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    /// A `new file mode` line where none may be.
    #[error("unexpected new file marker")]
    UnexpectedNewFile,
    /// A `deleted file mode` line where none may be.
    #[error("unexpected deleted file marker")]
    UnexpectedDeletedFile,
    /// The package's `Target without source` error.
    #[error("target without source")]
    TargetWithoutSource,
    /// A hunk header outside a file.
    #[error("unexpected hunk")]
    UnexpectedHunk,
    /// A line inside a hunk that is not a hunk line.
    #[error("hunk diff line expected")]
    HunkLineExpected,
    /// A hunk with more lines than its header says.
    #[error("hunk is longer than expected")]
    HunkTooLong,
    /// A hunk with fewer lines than its header says.
    #[error("hunk is shorter than expected")]
    HunkTooShort,
    /// A `\ No newline at end of file` marker where none may be.
    #[error("unexpected no-newline marker")]
    UnexpectedMarker,
    /// A blank line after the last hunk that the package refuses.
    #[error("unexpected trailing newline character")]
    UnexpectedTrailingNewline,
    /// The package fails with `UnboundLocalError` here (a `+++` line with no `---` before it).
    #[error("target file header with no source file header before it")]
    NoSourceHeader,
    /// The package fails with `AttributeError` here (`GIT binary patch` outside a file).
    #[error("binary patch outside a file")]
    BinaryOutsideFile,
}

static RE_GIT_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^diff --git (?P<source>a/[^\t\n]+) (?P<target>b/[^\t\n]+)").expect("valid regex")
});
static RE_GIT_HEADER_URI: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^diff --git (?P<source>.*://[^\t\n]+) (?P<target>.*://[^\t\n]+)")
        .expect("valid regex")
});
static RE_GIT_HEADER_NO_PREFIX: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^diff --git (?P<source>[^\t\n]+) (?P<target>[^\t\n]+)").expect("valid regex")
});
// Python's `\s` in a str pattern is `str.isspace`, which adds U+001C..U+001F to White_Space.
static RE_BINARY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^Binary files? (?P<source>[^\t]+?)(?:\t[\s\x1C-\x1F0-9:+\-]+)?",
        r"(?: and (?P<target>[^\t]+?)(?:\t[\s\x1C-\x1F0-9:+\-]+)?)? (?:differ|has changed)"
    ))
    .expect("valid regex")
});

/// `^<prefix>(?P<filename>[^\t\n]+)(?:\t(?P<timestamp>[^\n]+))?`
fn file_header<'a>(line: &'a str, prefix: &str) -> Option<(&'a str, Option<&'a str>)> {
    let rest = line.strip_prefix(prefix)?;
    let end = rest.find(['\t', '\n']).unwrap_or(rest.len());
    if end == 0 {
        return None;
    }
    let name = &rest[..end];
    let after = &rest[end..];
    let ts = after.strip_prefix('\t').and_then(|t| {
        let e = t.find('\n').unwrap_or(t.len());
        (e > 0).then(|| &t[..e])
    });
    Some((name, ts))
}

/// `^<prefix>\d+$` with Python's `\d` and `$` (which also matches before a final newline).
fn mode_line(line: &str, prefix: &str) -> bool {
    let body = line.strip_suffix('\n').unwrap_or(line);
    body.strip_prefix(prefix)
        .is_some_and(|d| !d.is_empty() && d.chars().all(|c| pystr::decimal_value(c).is_some()))
}

/// Takes a run of Python decimal digits from the front of `s`.
fn digits(s: &str) -> Option<(&str, &str)> {
    let end = s
        .char_indices()
        .find(|&(_, c)| pystr::decimal_value(c).is_none())
        .map_or(s.len(), |(i, _)| i);
    (end > 0).then(|| (&s[..end], &s[end..]))
}

/// `start[,length]`, the length defaulting to 1 as the package does.
fn range(s: &str) -> Option<(String, u64, &str)> {
    let (start, rest) = digits(s)?;
    let (len, rest) = match rest.strip_prefix(',').and_then(digits) {
        Some((len, rest)) => {
            // Too large to count up to means the hunk can never be complete; the package
            // then fails with "shorter than expected", and so does a saturated count.
            (
                pystr::int_value(&pystr::normalize_int(len)).unwrap_or(u64::MAX),
                rest,
            )
        }
        None => (1, rest),
    };
    Some((pystr::normalize_int(start), len, rest))
}

/// `^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))?\ @@[ ]?(.*)`
fn hunk_header(line: &str) -> Option<Hunk<'_>> {
    let rest = line.strip_prefix("@@ -")?;
    let (source_start, source_length, rest) = range(rest)?;
    let rest = rest.strip_prefix(" +")?;
    let (target_start, target_length, rest) = range(rest)?;
    let rest = rest.strip_prefix(" @@")?;
    let rest = rest.strip_prefix(' ').unwrap_or(rest);
    let section_header = &rest[..rest.find('\n').unwrap_or(rest.len())];
    Some(Hunk {
        source_start,
        source_length,
        target_start,
        target_length,
        section_header,
        lines: Vec::new(),
    })
}

/// Parses `text` as `unidiff.PatchSet(text)` does.
pub fn parse(text: &str) -> Result<PatchSet<'_>, ParseError> {
    let mut set = PatchSet::default();
    let mut current: Option<usize> = None;
    let mut info: Option<usize> = None;
    // The package's function-level variables, which outlive the branch that set them.
    let mut source_file: Option<Option<&str>> = None;
    let mut source_timestamp: Option<Option<&str>> = None;
    let mut lines = text
        .split_inclusive('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l));
    let err = |line, kind| Err(ParseError { line, kind });
    while let Some((no, line)) = lines.next() {
        if line.starts_with("diff --git ") {
            let caps = RE_GIT_HEADER
                .captures(line)
                .or_else(|| RE_GIT_HEADER_URI.captures(line))
                .or_else(|| RE_GIT_HEADER_NO_PREFIX.captures(line));
            if let Some(caps) = caps {
                let (src, tgt) = (
                    caps.name("source").map(|m| m.as_str()),
                    caps.name("target").map(|m| m.as_str()),
                );
                set.infos.push(vec![line]);
                info = Some(set.infos.len() - 1);
                source_file = Some(src);
                set.files.push(PatchedFile {
                    patch_info: info,
                    source_file: src,
                    target_file: tgt,
                    source_timestamp: None,
                    target_timestamp: None,
                    is_binary_file: false,
                    hunks: Vec::new(),
                });
                current = Some(set.files.len() - 1);
                continue;
            }
        }
        if mode_line(line, "new file mode ") {
            let (Some(f), Some(i)) = (current, info) else {
                return err(no, ParseErrorKind::UnexpectedNewFile);
            };
            set.files[f].source_file = Some(DEV_NULL);
            set.infos[i].push(line);
            continue;
        }
        if mode_line(line, "deleted file mode ") {
            let (Some(f), Some(i)) = (current, info) else {
                return err(no, ParseErrorKind::UnexpectedDeletedFile);
            };
            set.files[f].target_file = Some(DEV_NULL);
            set.infos[i].push(line);
            continue;
        }
        if let Some((name, ts)) = file_header(line, "--- ") {
            source_file = Some(Some(name));
            source_timestamp = Some(ts);
            if let Some(f) = current {
                if set.files[f].source_file != Some(name) {
                    current = None;
                } else {
                    set.files[f].source_timestamp = ts;
                }
            }
            continue;
        }
        if let Some((name, ts)) = file_header(line, "+++ ") {
            match current {
                Some(f) if set.files[f].target_file != Some(name) => {
                    return err(no, ParseErrorKind::TargetWithoutSource);
                }
                Some(f) => set.files[f].target_timestamp = ts,
                None => {
                    let (Some(src), Some(src_ts)) = (source_file, source_timestamp) else {
                        return err(no, ParseErrorKind::NoSourceHeader);
                    };
                    set.files.push(PatchedFile {
                        patch_info: info,
                        source_file: src,
                        target_file: Some(name),
                        source_timestamp: src_ts,
                        target_timestamp: ts,
                        is_binary_file: false,
                        hunks: Vec::new(),
                    });
                    current = Some(set.files.len() - 1);
                    info = None;
                }
            }
            continue;
        }
        if let Some(hunk) = hunk_header(line) {
            info = None;
            let Some(f) = current else {
                return err(no, ParseErrorKind::UnexpectedHunk);
            };
            let hunk = parse_hunk(hunk, no, &mut lines)?;
            set.files[f].hunks.push(hunk);
            continue;
        }
        if line.starts_with("\\ No newline at end of file") {
            let Some(last) = current.and_then(|f| set.files[f].hunks.last_mut()) else {
                return err(no, ParseErrorKind::UnexpectedMarker);
            };
            last.lines.push(Line {
                line_type: LineType::NoNewline,
                value: NO_NEWLINE_VALUE,
            });
            continue;
        }
        if line == "\n" {
            if let Some(f) = current {
                let Some(last) = set.files[f].hunks.last_mut() else {
                    return err(no, ParseErrorKind::UnexpectedTrailingNewline);
                };
                last.lines.push(Line {
                    line_type: LineType::Empty,
                    value: "\n",
                });
                continue;
            }
        }
        let i = match info {
            Some(i) => i,
            None => {
                current = None;
                set.infos.push(Vec::new());
                set.infos.len() - 1
            }
        };
        info = Some(i);
        if let Some(caps) = RE_BINARY.captures(line) {
            let src = caps.name("source").map(|m| m.as_str());
            let tgt = caps.name("target").map(|m| m.as_str());
            source_file = Some(src);
            set.infos[i].push(line);
            match current {
                Some(f) => set.files[f].is_binary_file = true,
                None => set.files.push(PatchedFile {
                    patch_info: Some(i),
                    source_file: src,
                    target_file: tgt,
                    source_timestamp: None,
                    target_timestamp: None,
                    is_binary_file: true,
                    hunks: Vec::new(),
                }),
            }
            info = None;
            current = None;
            continue;
        }
        if line == "GIT binary patch\n" {
            let Some(f) = current else {
                return err(no, ParseErrorKind::BinaryOutsideFile);
            };
            set.files[f].is_binary_file = true;
            info = None;
            current = None;
            continue;
        }
        set.infos[i].push(line);
    }
    Ok(set)
}

/// The package's `_parse_hunk` (full parsing, not `metadata_only`): reads lines until the
/// counts in the header are met, refusing a hunk that runs over or ends early. `header_no` is
/// the header's 1-based line: where a hunk with no body is reported to end.
fn parse_hunk<'a>(
    mut hunk: Hunk<'a>,
    header_no: usize,
    lines: &mut impl Iterator<Item = (usize, &'a str)>,
) -> Result<Hunk<'a>, ParseError> {
    let (mut src, mut tgt) = (0u64, 0u64);
    let mut last_no = header_no;
    for (no, line) in lines.by_ref() {
        last_no = no;
        let first = line.as_bytes().first().copied();
        let (line_type, value) = match first {
            Some(b'+') => (LineType::Added, &line[1..]),
            Some(b'-') => (LineType::Removed, &line[1..]),
            Some(b' ') => (LineType::Context, &line[1..]),
            Some(b'\\') => (LineType::NoNewline, &line[1..]),
            // `[\r\n]{1,2}`: a blank line counts as context; anything after the first two
            // line-break characters is dropped, as the package's regex drops it.
            Some(b'\r' | b'\n') => {
                let n = line
                    .bytes()
                    .take(2)
                    .take_while(|b| matches!(b, b'\r' | b'\n'))
                    .count();
                (LineType::Context, &line[..n])
            }
            _ => {
                return Err(ParseError {
                    line: no,
                    kind: ParseErrorKind::HunkLineExpected,
                })
            }
        };
        match line_type {
            LineType::Added => tgt += 1,
            LineType::Removed => src += 1,
            LineType::Context => {
                src += 1;
                tgt += 1;
            }
            _ => {}
        }
        if src > hunk.source_length || tgt > hunk.target_length {
            return Err(ParseError {
                line: no,
                kind: ParseErrorKind::HunkTooLong,
            });
        }
        hunk.lines.push(Line { line_type, value });
        if src == hunk.source_length && tgt == hunk.target_length {
            break;
        }
    }
    if src < hunk.source_length || tgt < hunk.target_length {
        return Err(ParseError {
            line: last_no,
            kind: ParseErrorKind::HunkTooShort,
        });
    }
    Ok(hunk)
}

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

    #[test]
    fn hunk_is_rendered_with_both_lengths() {
        let set = parse("--- a/x\n+++ b/x\n@@ -1 +1 @@ def f():\n-a\n+b\n").unwrap();
        assert_eq!(set.files.len(), 1);
        assert_eq!(
            set.files[0].hunks[0].to_string(),
            "@@ -1,1 +1,1 @@ def f():\n-a\n+b\n"
        );
        assert_eq!(set.files[0].path(), "x");
    }

    #[test]
    fn refusals_match_the_package() {
        let cases: &[(&str, ParseErrorKind)] = &[
            (
                "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n+b\n",
                ParseErrorKind::HunkTooShort,
            ),
            (
                "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n-b\n",
                ParseErrorKind::HunkTooLong,
            ),
            ("@@ -1 +1 @@\n-a\n+b\n", ParseErrorKind::UnexpectedHunk),
            ("+++ b/x\n", ParseErrorKind::NoSourceHeader),
            (
                "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\nzzz\n",
                ParseErrorKind::HunkLineExpected,
            ),
            ("new file mode 100644\n", ParseErrorKind::UnexpectedNewFile),
            (
                "\\ No newline at end of file\n",
                ParseErrorKind::UnexpectedMarker,
            ),
        ];
        for (text, kind) in cases {
            assert_eq!(parse(text).map(|_| ()).unwrap_err().kind, *kind, "{text:?}");
        }
    }

    #[test]
    fn error_lines_are_the_real_one_based_lines() {
        let line_of = |text: &str| parse(text).map(|_| ()).unwrap_err().line;
        // A header on the last line with no body: the header's line, where the input ended.
        assert_eq!(line_of("--- a/x\n+++ b/x\n@@ -1 +1 @@"), 3);
        assert_eq!(line_of("--- a/x\n+++ b/x\n@@ -1 +1 @@\n"), 3);
        assert_eq!(
            parse("--- a/x\n+++ b/x\n@@ -1 +1 @@")
                .unwrap_err()
                .to_string(),
            "line 3: hunk is shorter than expected"
        );
        // A body cut short: the last line read.
        assert_eq!(line_of("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n"), 5);
        assert_eq!(line_of("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n-b\n"), 5);
        assert_eq!(line_of("x\n@@ -1 +1 @@\n"), 2);
    }

    #[test]
    fn rename_gets_a_header_line_and_the_source_key() {
        let text = "diff --git a/old.py b/new.py\nsimilarity index 90%\nrename from old.py\nrename to new.py\n--- a/old.py\n+++ b/new.py\n@@ -1 +1 @@\n-a\n+b\n";
        let set = parse(text).unwrap();
        let fl = filelevel_diff(&set);
        assert_eq!(
            fl,
            vec![(
                "old.py".to_string(),
                "rename from old.py to new.py\n@@ -1,1 +1,1 @@\n-a\n+b".to_string()
            )]
        );
        assert_eq!(
            set.to_string(),
            text.replace("@@ -1 +1 @@", "@@ -1,1 +1,1 @@")
        );
    }
}
