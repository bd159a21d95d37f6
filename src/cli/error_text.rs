//! How the binary prints the error that stopped a command: the one rule for every error type's
//! message and its chain.
//!
//! The rule: an error's `Display` is its whole message, its cause's text included (`cannot read
//! {path}: {source}`), and the cause is also its `source()`, for a program that wants the typed
//! cause. Most places show an error by its `Display` alone (problem lines, a verdict's reason,
//! `serve`'s JSON errors, notices), so the message must be whole there; every thiserror type of
//! the crates states its `#[source]` or `#[from]` field in its message (or is `transparent`),
//! which `every_error_with_a_cause_states_it_in_its_message` below holds. The chain is walked
//! here only for what a message left out: an outside crate's error that keeps its cause in
//! `source()` alone (an HTTP client's "error sending request" over the connection's refusal).

/// The lines to print for `err`: `error: ` and its message, then `  caused by: ` and each cause
/// below it whose text the lines above do not already state.
pub fn error_lines(err: &(dyn std::error::Error + 'static)) -> Vec<String> {
    let mut stated = err.to_string();
    let mut lines = vec![format!("error: {stated}")];
    let mut cause = err.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !text.is_empty() && !stated.contains(&text) {
            lines.push(format!("  caused by: {text}"));
            stated.push('\n');
            stated.push_str(&text);
        }
        cause = c.source();
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::CliError;
    use std::error::Error;
    use std::path::Path;

    /// Every cause's text in `err`'s chain, below `err`.
    fn causes(err: &(dyn Error + 'static)) -> Vec<String> {
        let mut out = Vec::new();
        let mut cause = err.source();
        while let Some(c) = cause {
            out.push(c.to_string());
            cause = c.source();
        }
        out
    }

    /// `err` as the binary prints it: each cause's text exactly once, the message first.
    fn printed_once(err: &(dyn Error + 'static)) -> Vec<String> {
        let lines = error_lines(err);
        let text = lines.join("\n");
        assert_eq!(lines[0], format!("error: {err}"));
        let chain = causes(err);
        assert!(!chain.is_empty(), "a representative with a cause: {text}");
        for cause in chain {
            assert_eq!(
                text.matches(&cause).count(),
                1,
                "the cause `{cause}` is said once in:\n{text}"
            );
        }
        lines
    }

    #[test]
    fn each_kind_of_error_prints_its_cause_once() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.json");

        // A file that cannot be read: the operating system's error under the message.
        let read = swe_eval_core::report::read_instance_report(&missing).unwrap_err();
        assert_eq!(printed_once(&CliError::from(read)).len(), 1);

        // Not JSON: the parser's error under the message.
        let bad = dir.path().join("report.json");
        std::fs::write(&bad, "{\"x\": [1,").unwrap();
        let parse = swe_eval_core::report::read_instance_report(&bad).unwrap_err();
        assert_eq!(printed_once(&CliError::from(parse)).len(), 1);

        // Nested: a workflow's error over a reader's error over the operating system's (it
        // printed each of the three messages, each holding the next, before).
        let flaky = crate::orchestrate::WorkflowError::Flaky(
            swe_eval_core::report::read_flaky_map(&missing).unwrap_err(),
        );
        let lines = printed_once(&CliError::from(flaky));
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with("error: --flaky: ") && lines[0].contains("missing.json"));

        // A message that is its cause's (`{0}` over `#[from]`), under a file's name.
        std::fs::write(&bad, "[").unwrap();
        let verdict = crate::runner::read_verdict(&bad).unwrap_err();
        assert_eq!(printed_once(&verdict).len(), 1);

        // A write that fails: the step and the operating system's error.
        // (under a file, which no folder can be made of)
        let write = swe_eval_core::fsutil::write_atomic(&bad.join("x"), b"x").unwrap_err();
        assert_eq!(printed_once(&CliError::from(write)).len(), 1);

        // An outside crate's error that keeps its cause to `source()`: the cause is printed.
        let lines = printed_once(&CliError::from(Wrapped(Outside)));
        assert_eq!(
            lines,
            [
                "error: cannot fetch the dataset: error sending request",
                "  caused by: connection refused",
            ]
        );
    }

    /// An error of ours over an outside crate's.
    #[derive(Debug, thiserror::Error)]
    #[error("cannot fetch the dataset: {0}")]
    struct Wrapped(#[source] Outside);

    impl swe_eval_core::failure::Classify for Wrapped {
        fn kind(&self) -> swe_eval_core::failure::ErrorKind {
            swe_eval_core::failure::ErrorKind::Failed
        }
    }

    /// An outside crate's error in the style of HTTP clients: the cause only in `source()`.
    #[derive(Debug)]
    struct Outside;

    impl std::fmt::Display for Outside {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("error sending request")
        }
    }

    impl Error for Outside {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            static REFUSED: std::sync::OnceLock<std::io::Error> = std::sync::OnceLock::new();
            Some(REFUSED.get_or_init(|| std::io::Error::other("connection refused")))
        }
    }

    #[test]
    fn every_error_with_a_cause_states_it_in_its_message() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        for dir in ["src", "crates/core/src"] {
            rust_files(&root.join(dir), &mut files);
        }
        let mut checked = 0;
        let mut silent = Vec::new();
        // This file's own test holds a made-up error that leaves its cause out.
        files.retain(|f| !f.ends_with("cli/error_text.rs"));
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            for (line, variant, ok) in variants_with_a_cause(&text) {
                checked += 1;
                if !ok {
                    silent.push(format!(
                        "{}:{line}: {variant}",
                        file.strip_prefix(root).unwrap().display()
                    ));
                }
            }
        }
        assert!(checked > 40, "only {checked} variants with a cause found");
        assert!(
            silent.is_empty(),
            "these errors have a cause their message does not state (add it, or make them \
             `transparent`):\n{}",
            silent.join("\n")
        );
    }

    fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// Each `#[error("...")]` item of `text` with a cause (a `#[source]` or `#[from]` field, or
    /// a field named `source`): (its line, its name, whether its message names the cause).
    /// `transparent` ones are their cause's message and are left out.
    fn variants_with_a_cause(text: &str) -> Vec<(usize, String, bool)> {
        let mut out = Vec::new();
        let mut rest = text;
        let mut offset = 0;
        while let Some(at) = rest.find("#[error(") {
            let start = offset + at;
            let after = &text[start + "#[error(".len()..];
            let Some(close) = after.find(")]\n") else {
                break;
            };
            let message = &after[..close];
            let body = &after[close + 3..];
            rest = body;
            offset = text.len() - body.len();
            if message.trim() == "transparent" {
                continue;
            }
            // The item: attributes and docs, then `Name(`, `Name {` or `struct Name`.
            let item = body
                .lines()
                .map(str::trim)
                .find(|l| !l.starts_with("///") && !l.starts_with("#[") && !l.is_empty())
                .unwrap_or("");
            let name: String = item
                .trim_start_matches("pub ")
                .trim_start_matches("struct ")
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let Some(open) = body.find(['(', '{', ';']) else {
                continue;
            };
            let fields = match body.as_bytes()[open] {
                b'(' => enclosed(&body[open..], '(', ')'),
                b'{' => enclosed(&body[open..], '{', '}'),
                _ => continue,
            };
            let line = text[..start].matches('\n').count() + 1;
            for cause in causes_of(fields, body.as_bytes()[open] == b'(') {
                let named = match cause.parse::<usize>() {
                    Ok(i) => names_index(message, i),
                    Err(_) => {
                        message.contains(&format!("{{{cause}}}"))
                            || message.contains(&format!("{{{cause}:"))
                            || message.contains(&format!(".{cause}"))
                            || message.contains(&format!(", {cause})"))
                    }
                };
                out.push((line, name.clone(), named));
            }
        }
        out
    }

    /// The text between `s`'s first character (`open`) and its matching `close`.
    fn enclosed(s: &str, open: char, close: char) -> &str {
        let mut depth = 0;
        for (i, c) in s.char_indices() {
            if c == open {
                depth += 1;
            } else if c == close {
                depth -= 1;
                if depth == 0 {
                    return &s[1..i];
                }
            }
        }
        ""
    }

    /// The causes among `fields`: tuple positions (`"0"`) or field names.
    fn causes_of(fields: &str, tuple: bool) -> Vec<String> {
        let mut out = Vec::new();
        let mut depth = 0;
        let mut parts = vec![String::new()];
        for c in fields.chars() {
            match c {
                '<' | '(' | '[' => depth += 1,
                '>' | ')' | ']' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(String::new());
                    continue;
                }
                _ => {}
            }
            parts.last_mut().unwrap().push(c);
        }
        let parts: Vec<&String> = parts.iter().filter(|p| !p.trim().is_empty()).collect();
        let marked = parts
            .iter()
            .any(|p| p.contains("#[source]") || p.contains("#[from]"));
        for (i, part) in parts.iter().enumerate() {
            let code: Vec<&str> = part
                .lines()
                .map(str::trim)
                .filter(|l| !l.starts_with("///"))
                .collect();
            let code = code.join(" ");
            let field = code
                .rsplit(']')
                .next()
                .unwrap_or("")
                .trim()
                .trim_start_matches("pub ")
                .split(':')
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            let is_cause = code.contains("#[source]")
                || code.contains("#[from]")
                || (!marked && !tuple && field == "source");
            if is_cause {
                out.push(if tuple { i.to_string() } else { field });
            }
        }
        out
    }

    /// Whether `message` shows tuple field `i` (`{0}`, `{0:?}`, or `.0` in its arguments).
    fn names_index(message: &str, i: usize) -> bool {
        message.contains(&format!("{{{i}}}"))
            || message.contains(&format!("{{{i}:"))
            || message.contains(&format!(".{i}"))
    }

    #[test]
    fn the_scan_finds_a_cause_left_out_of_a_message() {
        let text = r#"
pub enum E {
    /// Stated.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("bad row")]
    Row(#[from] serde_json::Error),
    #[error("{}: {source}", path.display())]
    Plain { path: PathBuf, source: Box<E> },
    #[error("{0}")]
    Same(#[from] std::io::Error),
    #[error(transparent)]
    Through(#[from] Other),
    #[error("no cause {0}")]
    Text(String),
}
"#;
        let found: Vec<(String, bool)> = variants_with_a_cause(text)
            .into_iter()
            .map(|(_, name, ok)| (name, ok))
            .collect();
        assert_eq!(
            found,
            [
                ("Read".to_string(), true),
                ("Row".to_string(), false),
                ("Plain".to_string(), true),
                ("Same".to_string(), true),
            ]
        );
    }
}
