//! Which patch a saved log ran ([`check_folder`], [`check_output`]): a verdict is bound to the
//! patch that produced it, so a prediction is graded or packaged from a log only when the log
//! ran the prediction's own patch.
//!
//! Two kinds of evidence, the first wherever it exists:
//! - A log folder of `swe-eval run` or of the official harness holds the patch it applied as
//!   `patch.diff`, written from the prediction's text unchanged: the given patch must equal it
//!   byte for byte. Without one (`swe-eval run` writes only `verdict.json` for an empty patch),
//!   `verdict.json`'s `patch_hash` (the SHA-256 of the text, the key the runner resumes and
//!   shares verdicts by, `predictions::patch_hash`) must be the given patch's.
//! - A test output alone (a JSON Lines of `{instance_id, test_output}`, a package's
//!   `test_output.txt`) shows the tree the tests ran in: the eval script traces `git status`
//!   (the files changed since the environment's setup commit, and the untracked ones),
//!   `git show` (that setup commit) and `git -c core.fileMode=false diff <base_commit>` (every
//!   change since the dataset's base commit). [`check_output`] holds the patch against them:
//!   - by file: every file `git status` shows changed must be one the patch touches; every file
//!     the patch creates must be untracked (or under an untracked folder); every file the patch
//!     changes must show as changed, unless a `.rej` says its hunks were rejected. Untracked
//!     files the patch does not create are not held against it (an environment can leave
//!     build folders, `patch` leaves `.orig` files);
//!   - by line, when the diffs can be read whole: per file, the lines added minus the lines
//!     removed (a count per line text, which is the same for any correct diff between two
//!     versions of a file, whatever hunks a tool chose) of `git diff <base>` must be those of
//!     the setup commit plus the patch's, or minus them (the official harness's last apply
//!     command, `patch --batch`, applies a patch it finds already applied in reverse), or the
//!     setup commit's alone where the patch's hunks were rejected. Files a patch renames or
//!     changes in binary are held by file only.
//!
//!   The trace (stderr) and the commands' output (stdout) reach a log as two streams merged as
//!   they were read: a command's output can follow trace lines of later commands, and a long
//!   one can be split by them. The line check is made only on a diff found whole, right after
//!   its trace line or later in one piece with nothing else of it elsewhere; otherwise the file
//!   check stands alone (the result says which).
//!
//! Measured on the 399 official test outputs of the MiniMax run in `../shared` (each against
//! its own patch, and each against the dataset's gold patch): see the integration test
//! `submit::patches_are_held_against_the_official_test_outputs`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use super::{ReportError, VERDICT_FILE};
use crate::unidiff::{self, LineType};

/// The patch file of a log folder (and of a submission package's `logs/<id>/`).
pub const PATCH_FILE: &str = "patch.diff";

/// What a log says of the patch it ran, held against a given patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// The log ran this patch, as far as the evidence named goes.
    Same(Basis),
    /// The log ran another patch: what shows it.
    Differs(String),
    /// The log does not show which patch ran: why.
    Unknown(String),
}

/// The evidence a [`Check::Same`] rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// The folder's `patch.diff` equals the patch byte for byte.
    PatchFile,
    /// The folder's `verdict.json` carries the patch's hash.
    PatchHash,
    /// The test output's `git status` and `git diff`, file by file and line by line.
    Lines,
    /// The test output's `git status`, file by file only (its diffs could not be read whole).
    Files,
}

impl Basis {
    /// How the check was made, in words.
    pub fn words(self) -> &'static str {
        match self {
            Basis::PatchFile => "its patch.diff is the patch",
            Basis::PatchHash => "its verdict.json has the patch's hash",
            Basis::Lines => "its git status and git diff show the patch, line by line",
            Basis::Files => "its git status shows the patch's files (the diffs were interleaved)",
        }
    }
}

/// Holds `patch` against what the log folder `dir` ran: its `patch.diff` and its
/// `verdict.json`'s `patch_hash`, each where present (either showing another patch decides);
/// [`Check::Unknown`] when it has neither.
pub fn check_folder(dir: &Path, patch: &str) -> Result<Check, ReportError> {
    let path = dir.join(PATCH_FILE);
    let by_file = match std::fs::read(&path) {
        Ok(ran) if ran == patch.as_bytes() => Some(Check::Same(Basis::PatchFile)),
        Ok(ran) => {
            let ran = String::from_utf8_lossy(&ran);
            return Ok(Check::Differs(format!(
                "{} is another patch (sha256 {}, the prediction's {}; {})",
                path.display(),
                short(&crate::predictions::patch_hash(&ran)),
                short(&crate::predictions::patch_hash(patch)),
                first_difference(&ran, patch)
            )));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => return Err(ReportError::Read { path, source }),
    };
    let by_hash = check_verdict(dir, patch)?;
    Ok(match (by_file, by_hash) {
        (_, differs @ Check::Differs(_)) => differs,
        (Some(same), _) => same,
        (None, other) => other,
    })
}

/// Holds `patch` against the `patch_hash` of the folder's `verdict.json`.
fn check_verdict(dir: &Path, patch: &str) -> Result<Check, ReportError> {
    let path = dir.join(VERDICT_FILE);
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Check::Unknown(format!(
                "{} holds neither {PATCH_FILE} nor {VERDICT_FILE}",
                dir.display()
            )))
        }
        Err(source) => return Err(ReportError::Read { path, source }),
    };
    let ran = serde_json::from_slice::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("patch_hash")?.as_str().map(str::to_string));
    Ok(match ran {
        None => Check::Unknown(format!("{} has no patch_hash", path.display())),
        Some(h) if h == crate::predictions::patch_hash(patch) => Check::Same(Basis::PatchHash),
        Some(h) => Check::Differs(format!(
            "{} is of another patch (patch_hash {}, the prediction's {}{})",
            path.display(),
            short(&h),
            short(&crate::predictions::patch_hash(patch)),
            if h == crate::predictions::patch_hash("") {
                ": the run's patch was empty"
            } else {
                ""
            }
        )),
    })
}

/// Holds `patch` against a saved log: its folder's `patch.diff` and `verdict.json`, and its
/// test output; any of them showing another patch decides.
pub fn check_log(
    folder: Option<&Path>,
    log: &super::SavedLog,
    patch: &str,
) -> Result<Check, ReportError> {
    let by_folder = match folder {
        Some(dir) => check_folder(dir, patch)?,
        None => Check::Unknown("the log has no folder".into()),
    };
    // The test output is held against the patch as well: a folder's patch.diff replaced after
    // the run still shows in the tree the tests ran in.
    let by_output = match log {
        super::SavedLog::Output(out) => check_output(out, patch),
        _ => Check::Unknown("the log has no test output".into()),
    };
    Ok(match (by_folder, by_output) {
        (differs @ Check::Differs(_), _) | (_, differs @ Check::Differs(_)) => differs,
        (same @ Check::Same(_), _) => same,
        (Check::Unknown(_), other) => other,
    })
}

fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}

/// Where two texts first differ, by line, for a message.
fn first_difference(ran: &str, given: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (ran.lines().collect(), given.lines().collect());
    let at = a
        .iter()
        .zip(&b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let show = |v: &[&str]| {
        v.get(at).map_or_else(
            || "(end)".to_string(),
            |l| format!("{:?}", l.chars().take(80).collect::<String>()),
        )
    };
    format!(
        "first difference at line {}: the log's {}, the prediction's {}",
        at + 1,
        show(&a),
        show(&b)
    )
}

/// A line's text without its terminator, and whether the file lacks a final newline there.
type LineKey = (String, bool);

/// Per line text, how many more times a file holds it after a change than before.
type Net = BTreeMap<LineKey, i64>;

/// One file of a diff, as the checks see it.
#[derive(Debug, Default, Clone)]
struct FileChange {
    /// The file is new (its source is `/dev/null`).
    created: bool,
    /// The file is renamed or copied (held by file only).
    renamed: bool,
    /// A binary change (held by file only).
    binary: bool,
    /// Lines added minus lines removed, per line text (zero counts left out).
    net: Net,
}

/// A path as written after `---`/`+++` or in `diff --git`, without its `a/`/`b/` prefix and
/// quotes.
fn clean_path(p: &str) -> String {
    let p = p.trim_end_matches(['\n', '\r']);
    let p = p
        .strip_prefix('"')
        .and_then(|q| q.strip_suffix('"'))
        .unwrap_or(p);
    p.strip_prefix("a/")
        .or_else(|| p.strip_prefix("b/"))
        .unwrap_or(p)
        .to_string()
}

/// The files of a diff text by path (the target's, or the source's for a deletion), read with
/// the crate's diff reader.
fn changes(text: &str) -> BTreeMap<String, FileChange> {
    let (set, _) = unidiff::parse_lenient(text);
    let mut out: BTreeMap<String, FileChange> = BTreeMap::new();
    for f in &set.files {
        let source = f.source_file.filter(|s| *s != "/dev/null").map(clean_path);
        let target = f.target_file.filter(|t| *t != "/dev/null").map(clean_path);
        let renamed = f.is_rename();
        let Some(path) = target.clone().or(source.clone()) else {
            continue;
        };
        let entry = out.entry(path.clone()).or_default();
        entry.created |= source.is_none() && target.is_some();
        entry.renamed |= renamed;
        entry.binary |= f.is_binary_file;
        if renamed {
            if let Some(s) = source {
                out.entry(s).or_default().renamed = true;
            }
            continue;
        }
        let entry = out.entry(path).or_default();
        for h in &f.hunks {
            for (i, l) in h.lines.iter().enumerate() {
                let sign = match l.line_type {
                    LineType::Added => 1,
                    LineType::Removed => -1,
                    _ => continue,
                };
                let noeol = h
                    .lines
                    .get(i + 1)
                    .is_some_and(|n| n.line_type == LineType::NoNewline);
                let text = l.value.strip_suffix('\n').unwrap_or(l.value).to_string();
                *entry.net.entry((text, noeol)).or_default() += sign;
            }
        }
        entry.net.retain(|_, v| *v != 0);
    }
    // Paths that `diff --git` names without hunks or `---`/`+++` (mode changes, binary
    // files) are files too.
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            current = rest.split_once(" b/").map(|(_, b)| clean_path(b));
            if let Some(c) = &current {
                out.entry(c.clone()).or_default();
            }
        } else if line.starts_with("Binary files ") || line.starts_with("GIT binary patch") {
            if let Some(c) = &current {
                out.entry(c.clone()).or_default().binary = true;
            }
        }
    }
    out
}

/// `git status` as the test output shows it.
#[derive(Debug, Default)]
struct Status {
    /// Tracked files changed since the setup commit (modified, deleted, ...).
    changed: BTreeSet<String>,
    /// Untracked files and folders (folders end with `/`).
    untracked: BTreeSet<String>,
}

impl Status {
    /// True when `path`, or a folder above it, is untracked.
    fn shows_untracked(&self, path: &str) -> bool {
        self.untracked.contains(path)
            || self
                .untracked
                .iter()
                .any(|u| u.ends_with('/') && path.starts_with(u.as_str()))
    }
}

/// The trace line of the eval script's `git diff <base_commit>` (with `-c core.fileMode=false`
/// since SWE-bench 2; plain in older scripts).
fn diff_trace(line: &str) -> Option<&str> {
    let rest = line
        .strip_prefix("+ git -c core.fileMode=false diff ")
        .or_else(|| line.strip_prefix("+ git diff "))?;
    (rest.len() >= 7 && rest.bytes().all(|b| b.is_ascii_hexdigit())).then_some(rest)
}

/// The commit the test output's `git diff <commit>` compared the tree with: the base commit
/// the log's tests ran on.
pub fn diff_base(test_output: &str) -> Option<&str> {
    test_output.lines().find_map(diff_trace)
}

/// `git status` of the test output: from its trace line to the `git show` output or the
/// `git diff` trace, other trace lines skipped; `None` when its first line (`On branch ...`,
/// `HEAD detached ...`) is not there (its output came before its trace line, or not at all).
fn read_status(lines: &[&str]) -> Option<Status> {
    let at = lines.iter().position(|l| *l == "+ git status")?;
    let mut st = Status::default();
    let mut untracked = false;
    let mut seen = false;
    for l in &lines[at + 1..] {
        if l.starts_with("commit ") || diff_trace(l).is_some() {
            break;
        }
        if l.starts_with('+') {
            continue;
        }
        if l.starts_with("On branch ")
            || l.starts_with("HEAD detached ")
            || l.starts_with("Not currently on any branch")
        {
            seen = true;
        } else if l.starts_with("Untracked files:") {
            untracked = true;
        } else if l.starts_with("Changes ") {
            untracked = false;
        } else if let Some(body) = l.strip_prefix('\t') {
            if untracked {
                st.untracked.insert(clean_path(body));
            } else if let Some((_, path)) = body.split_once(':') {
                // `renamed:   a -> b` (staged only) names both.
                for p in path.trim().split(" -> ") {
                    st.changed.insert(clean_path(p.trim()));
                }
            }
        }
    }
    seen.then_some(st)
}

/// The end of a run of diff blocks starting at `lines[start]` (a `diff --git` line), read by
/// structure (headers, then hunks by their counts); `None` when a hunk is cut short (the output
/// was split).
fn diff_extent(lines: &[&str], start: usize) -> Option<usize> {
    let header = |l: &str| {
        [
            "diff --git ",
            "old mode ",
            "new mode ",
            "deleted file mode ",
            "new file mode ",
            "similarity index ",
            "dissimilarity index ",
            "rename from ",
            "rename to ",
            "copy from ",
            "copy to ",
            "index ",
            "--- ",
            "+++ ",
            "Binary files ",
        ]
        .iter()
        .any(|p| l.starts_with(p))
    };
    let mut i = start;
    while i < lines.len() {
        let l = lines[i];
        if let Some(h) = unidiff_counts(l) {
            let (mut old, mut new) = h;
            i += 1;
            while old > 0 || new > 0 {
                let l = lines.get(i)?;
                match l.as_bytes().first() {
                    Some(b' ') => {
                        old = old.checked_sub(1)?;
                        new = new.checked_sub(1)?;
                    }
                    Some(b'-') => old = old.checked_sub(1)?,
                    Some(b'+') => new = new.checked_sub(1)?,
                    Some(b'\\') => {}
                    _ => return None,
                }
                i += 1;
            }
            while lines.get(i).is_some_and(|l| l.starts_with('\\')) {
                i += 1;
            }
        } else if header(l) {
            i += 1;
        } else {
            break;
        }
    }
    Some(i)
}

/// The counts of a hunk header `@@ -a[,b] +c[,d] @@`.
fn unidiff_counts(line: &str) -> Option<(u64, u64)> {
    let rest = line.strip_prefix("@@ -")?;
    let (old, rest) = rest.split_once(" +")?;
    let (new, _) = rest.split_once(" @@")?;
    let count = |r: &str| -> Option<u64> {
        match r.split_once(',') {
            Some((_, n)) => n.parse().ok(),
            None => r.parse::<u64>().ok().map(|_| 1),
        }
    };
    Some((count(old)?, count(new)?))
}

/// The most a command's output can be and still reach the log in one piece: one write to a
/// pipe of at most `PIPE_BUF` (4096 bytes on Linux), as git's buffered output of that size is.
const ONE_WRITE: usize = 4096;

/// The setup commit's changes and the changes since the base commit, when both can be read
/// whole from the test output (see the module comment).
fn read_diffs(
    lines: &[&str],
) -> Option<(BTreeMap<String, FileChange>, BTreeMap<String, FileChange>)> {
    let show_at = lines.iter().position(|l| *l == "+ git show")?;
    let diff_at = lines.iter().position(|l| diff_trace(l).is_some())?;
    // The setup commit: its header, its message, then its blocks in one piece.
    let commit = show_at
        + lines[show_at..]
            .iter()
            .position(|l| l.starts_with("commit ") && l.len() >= 47)?;
    let mut i = commit + 1;
    while i < lines.len()
        && (lines[i].starts_with("Author:")
            || lines[i].starts_with("Date:")
            || lines[i].starts_with("Merge:")
            || lines[i].is_empty()
            || lines[i].starts_with("    "))
    {
        i += 1;
    }
    let (show_text, show_end) = if lines.get(i).is_some_and(|l| l.starts_with("diff --git ")) {
        let end = diff_extent(lines, i)?;
        (lines[i..end].join("\n") + "\n", end)
    } else {
        (String::new(), i)
    };
    // The changes since the base commit: the first run of blocks after both the trace line and
    // the setup commit's output; none when no block follows at all.
    let from = (diff_at + 1).max(show_end);
    let blocks: Vec<usize> = (from..lines.len())
        .filter(|&k| lines[k].starts_with("diff --git "))
        .collect();
    let diff_text = match blocks.first() {
        None => String::new(),
        Some(&start) => {
            let end = diff_extent(lines, start)?;
            // Another block further on: the output was split, or something else prints diffs.
            if blocks.iter().any(|&k| k >= end) {
                return None;
            }
            // A hunk header further on: a split output.
            if lines[end..].iter().any(|l| l.starts_with("@@ -")) {
                return None;
            }
            // In one piece ending where the trace goes on.
            if !lines
                .get(end)
                .is_none_or(|l| l.starts_with('+') || l.is_empty())
            {
                return None;
            }
            lines[start..end].join("\n") + "\n"
        }
    };
    // An output larger than one pipe write (4096 bytes) can be read in pieces with trace lines
    // between them, at any line: only a smaller one is surely whole.
    if show_text.len() > ONE_WRITE || diff_text.len() > ONE_WRITE {
        return None;
    }
    Some((changes(&show_text), changes(&diff_text)))
}

/// Holds `patch` against the tree a test output shows (see the module comment).
pub fn check_output(test_output: &str, patch: &str) -> Check {
    if test_output.trim().is_empty() {
        return Check::Unknown("the test output is empty (no tests ran)".into());
    }
    let lines: Vec<&str> = test_output.lines().collect();
    let Some(status) = read_status(&lines) else {
        return Check::Unknown(
            "the test output has no `git status` of the tree (not an eval script's trace)".into(),
        );
    };
    let given = changes(patch);
    let touched: BTreeSet<&str> = given.keys().map(String::as_str).collect();

    // By file.
    if let Some(other) = status
        .changed
        .iter()
        .find(|p| !touched.contains(p.as_str()))
    {
        return Check::Differs(format!(
            "its `git status` shows {other} changed, a file the patch does not touch"
        ));
    }
    for (path, f) in &given {
        if f.created && !f.renamed && !status.shows_untracked(path) {
            return Check::Differs(format!(
                "the patch creates {path}, which its `git status` does not show"
            ));
        }
        let rejected = status.untracked.contains(&format!("{path}.rej"));
        if !f.created
            && !f.renamed
            && !f.net.is_empty()
            && !status.changed.contains(path)
            && !rejected
        {
            return Check::Differs(format!(
                "the patch changes {path}, which its `git status` shows unchanged"
            ));
        }
    }

    // By line.
    let Some((setup, since_base)) = read_diffs(&lines) else {
        return Check::Same(Basis::Files);
    };
    let empty = FileChange::default();
    let paths: BTreeSet<&String> = setup
        .keys()
        .chain(since_base.keys())
        .chain(given.keys())
        .collect();
    for path in paths {
        let (s, d, m) = (
            setup.get(path).unwrap_or(&empty),
            since_base.get(path).unwrap_or(&empty),
            given.get(path).unwrap_or(&empty),
        );
        // Created files are untracked (not in `git diff`); renames and binary changes are held
        // by file.
        if [s, d, m].iter().any(|f| f.renamed || f.binary) || m.created {
            continue;
        }
        let combined = |k: i64| -> Net {
            let mut n = s.net.clone();
            for (line, v) in &m.net {
                *n.entry(line.clone()).or_default() += k * v;
            }
            n.retain(|_, v| *v != 0);
            n
        };
        let rejected = status.untracked.contains(&format!("{path}.rej"));
        let fits = combined(1) == d.net || combined(-1) == d.net || (rejected && s.net == d.net);
        if !fits {
            return Check::Differs(format!(
                "its `git diff` of {path} is not the patch's change ({})",
                net_difference(&d.net, &combined(1))
            ));
        }
    }
    Check::Same(Basis::Lines)
}

/// The first line a diff's change and the expected change disagree on, for a message.
fn net_difference(shown: &Net, expected: &Net) -> String {
    let keys: BTreeSet<&LineKey> = shown.keys().chain(expected.keys()).collect();
    let mut diffs: HashMap<&LineKey, (i64, i64)> = HashMap::new();
    for k in keys {
        let (a, b) = (
            shown.get(k).copied().unwrap_or(0),
            expected.get(k).copied().unwrap_or(0),
        );
        if a != b {
            diffs.insert(k, (a, b));
        }
    }
    let mut v: Vec<_> = diffs.into_iter().collect();
    v.sort();
    match v.first() {
        None => "no difference".into(),
        Some(((text, _), (a, b))) => format!(
            "{} line(s) differ, e.g. {:?} counted {a:+} in the log, {b:+} by the patch",
            v.len(),
            text.chars().take(60).collect::<String>()
        ),
    }
}

#[cfg(test)]
mod tests;
