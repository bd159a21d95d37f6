//! The layers of ARCHITECTURE.md, held: this reads every file under `src/`, finds which
//! top-level modules it imports (`crate::x` paths, `use crate::{x, y}` groups) and which
//! outside crates it names, and fails on an import the rules below forbid, or on any cycle
//! between top-level modules. The rules are data; ARCHITECTURE.md states the same ones.
//!
//! Comments and string literals are skipped, so a doc comment that mentions a module is not
//! an import. `src/main.rs` is the binary, not a module of the library, and is not checked.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Outside crates that only the listed modules may name.
const ONLY_IN: &[(&str, &[&str])] = &[("bollard", &["engine"])];

/// (modules, modules none of them may import).
const FORBIDDEN: &[(&[&str], &[&str])] = &[
    // The pure core does no Docker and knows nothing of how a run is executed.
    (
        &["grading", "logparse", "reward", "study", "compare"],
        &["engine", "runner", "images", "orchestrate"],
    ),
    // Nothing but the binary imports the command line.
    (&[ALL], &["cli"]),
];

/// Modules that import nothing else of the crate (every layer may use them).
const LEAVES: &[&str] = &["owner", "repos", "fsutil", "pystr"];

/// (module, the only modules of the crate it may import): near-leaves every layer may use.
const ONLY_IMPORTS: &[(&str, &[&str])] = &[("unidiff", &["pystr"])];

/// Stands for every module in [`FORBIDDEN`].
const ALL: &str = "*";

/// One forbidden import found.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Violation {
    file: PathBuf,
    rule: String,
}

/// The top-level module a file under `src/` belongs to (`src/images/hold.rs` -> `images`),
/// or `None` for the crate root and the binary.
fn module_of(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    if rel.components().count() == 1 {
        let stem = first.strip_suffix(".rs")?;
        return (stem != "lib" && stem != "main").then(|| stem.to_string());
    }
    Some(first.to_string())
}

/// `text` without comments and string or char literals (each replaced by a space).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                out.push(' ');
            }
            b'r' if matches!(b.get(i + 1), Some(b'"' | b'#'))
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) =>
            {
                let mut j = i + 1;
                let mut hashes = 0;
                while b.get(j) == Some(&b'#') {
                    hashes += 1;
                    j += 1;
                }
                if b.get(j) != Some(&b'"') {
                    out.push('r');
                    i += 1;
                    continue;
                }
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                j += 1;
                while j < b.len() && !b[j..].starts_with(&close) {
                    j += 1;
                }
                i = j + close.len();
                out.push(' ');
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push(' ');
            }
            // A char literal ('x', '\n', '\''), not a lifetime ('a).
            b'\'' if b.get(i + 2) == Some(&b'\'') || b.get(i + 1) == Some(&b'\\') => {
                i += 1;
                while i < b.len() && b[i] != b'\'' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push(' ');
            }
            c => {
                out.push(c as char);
                i += 1;
            }
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The top-level modules `code` imports: `crate::x` and `crate::{x, y::z}`.
fn crate_imports(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(is_ident) {
            continue; // `swe_eval_crate::`, not ours
        }
        let rest_trim = rest.trim_start();
        if let Some(group) = rest_trim.strip_prefix('{') {
            // The group up to its closing brace, split at its own commas: each piece starts
            // with a top-level module's name.
            let mut depth = 0;
            let mut pieces = vec![String::new()];
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => pieces.push(String::new()),
                    _ => {}
                }
                if let Some(last) = pieces.last_mut() {
                    last.push(c);
                }
            }
            for piece in pieces {
                let piece = piece.trim_start_matches([',', ' ', '\n', '\t', '\r']);
                let name: String = piece.chars().take_while(|c| is_ident(*c)).collect();
                if !name.is_empty() {
                    found.insert(name);
                }
            }
        } else {
            let name: String = rest_trim.chars().take_while(|c| is_ident(*c)).collect();
            if !name.is_empty() {
                found.insert(name);
            }
        }
    }
    found.remove("self");
    found
}

/// True when `code` names the outside crate `krate` (`krate::...` or `use krate`).
fn names_crate(code: &str, krate: &str) -> bool {
    code.match_indices(krate).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = &code[at + krate.len()..];
        !before.is_some_and(|c| is_ident(c) || c == ':')
            && (after.starts_with("::") || after.trim_start().starts_with(';'))
    })
}

/// Every `.rs` file under `dir`, relative to it.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// Module -> (imported module -> files importing it).
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<PathBuf>>>;

/// The import graph of the tree under `src`, and the violations of the rules.
fn check(src: &Path) -> (Graph, Vec<Violation>) {
    let mut graph: Graph = BTreeMap::new();
    let mut violations = Vec::new();
    for rel in rust_files(src) {
        let Some(module) = module_of(&rel) else {
            continue;
        };
        let text = std::fs::read_to_string(src.join(&rel)).unwrap();
        let code = code_only(&text);
        let file = Path::new("src").join(&rel);
        for (krate, allowed) in ONLY_IN {
            if names_crate(&code, krate) && !allowed.contains(&module.as_str()) {
                violations.push(Violation {
                    file: file.clone(),
                    rule: format!("{krate} is used only in {}", allowed.join(", ")),
                });
            }
        }
        let deps = graph.entry(module.clone()).or_default();
        for dep in crate_imports(&code) {
            if dep == module {
                continue;
            }
            for (from, to) in FORBIDDEN {
                let applies = from.contains(&ALL) || from.contains(&module.as_str());
                if applies && to.contains(&dep.as_str()) {
                    violations.push(Violation {
                        file: file.clone(),
                        rule: format!("{module} must not import {dep}"),
                    });
                }
            }
            if LEAVES.contains(&module.as_str()) {
                violations.push(Violation {
                    file: file.clone(),
                    rule: format!("{module} imports nothing of the crate, but imports {dep}"),
                });
            }
            for (m, allowed) in ONLY_IMPORTS {
                if *m == module && !allowed.contains(&dep.as_str()) {
                    violations.push(Violation {
                        file: file.clone(),
                        rule: format!(
                            "{module} imports only {}, but imports {dep}",
                            allowed.join(", ")
                        ),
                    });
                }
            }
            deps.entry(dep).or_default().insert(file.clone());
        }
    }
    for cycle in cycles(&graph) {
        let first = &cycle[0];
        let files = &graph[first][&cycle[1 % cycle.len()]];
        violations.push(Violation {
            file: files.iter().next().cloned().unwrap_or_default(),
            rule: format!("import cycle {} -> {first}", cycle.join(" -> ")),
        });
    }
    violations.sort();
    violations.dedup();
    (graph, violations)
}

/// The cycles of the module graph, one per strongly connected component of more than one
/// module, each as a path through it.
fn cycles(graph: &BTreeMap<String, BTreeMap<String, BTreeSet<PathBuf>>>) -> Vec<Vec<String>> {
    let reach = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(m) = todo.pop() {
            for d in graph.get(&m).into_iter().flat_map(|d| d.keys()) {
                if seen.insert(d.clone()) {
                    todo.push(d.clone());
                }
            }
        }
        seen
    };
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for m in graph.keys() {
        if done.contains(m) || !reach(m).contains(m) {
            continue;
        }
        // The modules on a cycle through m: reachable from m and reaching m.
        let scc: BTreeSet<String> = reach(m)
            .into_iter()
            .filter(|o| o == m || reach(o).contains(m))
            .collect();
        done.extend(scc.iter().cloned());
        // A path m -> ... -> m inside the component, by breadth-first search.
        let mut prev: BTreeMap<String, String> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([m.clone()]);
        let mut back = None;
        while let Some(x) = queue.pop_front() {
            for d in graph[&x].keys().filter(|d| scc.contains(*d)) {
                if d == m {
                    back = Some(x.clone());
                    break;
                }
                if !prev.contains_key(d) {
                    prev.insert(d.clone(), x.clone());
                    queue.push_back(d.clone());
                }
            }
            if back.is_some() {
                break;
            }
        }
        let mut path = vec![back.expect("m reaches itself")];
        while path.last() != Some(m) {
            let p = prev[path.last().unwrap()].clone();
            path.push(p);
        }
        path.reverse();
        out.push(path);
    }
    out
}

/// The graph as text, one line per module: `module -> a, b, c`.
fn describe(graph: &BTreeMap<String, BTreeMap<String, BTreeSet<PathBuf>>>) -> String {
    graph
        .iter()
        .map(|(m, deps)| {
            let deps: Vec<&str> = deps.keys().map(String::as_str).collect();
            format!("{m} -> {}\n", deps.join(", "))
        })
        .collect()
}

#[test]
fn the_crate_keeps_its_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (graph, violations) = check(&src);
    assert!(
        graph.len() >= 10,
        "too few modules found under {}: {graph:?}",
        src.display()
    );
    assert!(
        violations.is_empty(),
        "forbidden imports (see ARCHITECTURE.md):\n{}\nimport graph:\n{}",
        violations
            .iter()
            .map(|v| format!("  {}: {}", v.file.display(), v.rule))
            .collect::<Vec<_>>()
            .join("\n"),
        describe(&graph)
    );
}

#[test]
fn the_checker_finds_each_kind_of_violation() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path();
    let write = |rel: &str, text: &str| {
        let p = src.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write("lib.rs", "pub mod grading;\n");
    write(
        "main.rs",
        "use swe_eval::cli;\nfn main() { cli::dispatch(); }\n",
    );
    // The pure core importing the runner and naming bollard.
    write(
        "grading.rs",
        "use crate::{logparse, runner::Verdict};\nfn f() { let _ = bollard::Docker::connect; }\n",
    );
    // A comment, a string and a doc link are no imports.
    write(
        "logparse/mod.rs",
        "//! see crate::engine and bollard::Docker\nconst S: &str = \"crate::images\";\n/// [`crate::cli`]\nfn g() {}\n",
    );
    // A cycle between two modules, and one importing the CLI.
    write("runner/mod.rs", "use crate::report::Summary;\n");
    write(
        "report/x.rs",
        "pub use crate::runner::Verdict as V;\nuse crate::cli::Outcome;\n",
    );
    // A leaf that imports something, and a near-leaf importing more than it may.
    write("owner.rs", "use crate::fsutil;\n");
    write("unidiff.rs", "use crate::{pystr, grading};\n");
    write("engine/docker.rs", "use bollard::Docker;\n");

    let (graph, violations) = check(src);
    let rules: Vec<(String, String)> = violations
        .iter()
        .map(|v| (v.file.display().to_string(), v.rule.clone()))
        .collect();
    let want = [
        ("src/grading.rs", "bollard is used only in engine"),
        ("src/grading.rs", "grading must not import runner"),
        (
            "src/owner.rs",
            "owner imports nothing of the crate, but imports fsutil",
        ),
        ("src/report/x.rs", "import cycle report -> runner -> report"),
        ("src/report/x.rs", "report must not import cli"),
        (
            "src/unidiff.rs",
            "unidiff imports only pystr, but imports grading",
        ),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(f, r)| (f.to_string(), r.to_string()))
        .collect();
    assert_eq!(rules, want, "graph:\n{}", describe(&graph));
    assert!(
        !graph.contains_key("main") && !graph["logparse"].contains_key("engine"),
        "{graph:?}"
    );
    assert!(graph["grading"].contains_key("logparse"));
}

#[test]
fn import_paths_are_read_from_code_only() {
    let code = code_only(
        "use crate::{a, b::{c, d}, e::f as g};\n// crate::h\nlet s = \"crate::i\"; let r = r#\"crate::j\"#;\nlet c = '\"'; fn x<'a>(v: &'a crate::k::T) {}\n/* crate::l /* nested */ crate::m */ my_crate::n;\n",
    );
    let found: Vec<String> = crate_imports(&code).into_iter().collect();
    assert_eq!(found, ["a", "b", "e", "k"]);
    assert!(names_crate("use bollard::Docker;", "bollard"));
    assert!(names_crate("extern crate bollard;", "bollard"));
    assert!(!names_crate("let not_bollard::x = 1;", "bollard"));
}
