//! The layers of ARCHITECTURE.md, held: this reads every file under `src/` and
//! `crates/core/src/`, finds which top-level modules it imports (`crate::x` paths, `use
//! crate::{x, y}` groups, and the core's modules through `swe_eval_core::x`) and which outside
//! crates it names, and fails on an import the rules below forbid, on any cycle
//! between top-level modules, or on any cycle between the files of one module (`a.rs` uses
//! `super::b` and `b.rs` uses `super::a`, directly or through `mod.rs`'s re-exports). The
//! rules are data; ARCHITECTURE.md states the same ones, and its module table, diagram and
//! figures are held against the import graph (`architecture_md_states_the_import_graph`).
//!
//! Comments and string literals are skipped, so a doc comment that mentions a module is not
//! an import. `src/main.rs` is the binary, not a module of the library, and is not checked.
//! Between modules, a module's test code counts with the rest of it. Between files, inline
//! modules (`mod tests { ... }`) are skipped: a test module's `super` is its own file, and what
//! tests import is no layer.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Outside crates that only the listed modules may name.
const ONLY_IN: &[(&str, &[&str])] = &[("bollard", &["engine"]), ("rusqlite", &["evaluator"])];

/// (module, the only modules that may import it): the evaluator serves the faces above it.
const ONLY_IMPORTED_BY: &[(&str, &[&str])] = &[("evaluator", &["cli", "serve"])];

/// (modules, modules none of them may import).
const FORBIDDEN: &[(&[&str], &[&str])] = &[
    // The pure core does no Docker and knows nothing of how a run is executed.
    (
        &["grading", "logparse", "reward", "study", "compare"],
        &["engine", "runner", "images", "orchestrate"],
    ),
    // Nothing but the binary imports the command line.
    (&[ALL], &["cli"]),
    // `run` and `serve` are two faces' flows over one session: neither imports the other.
    (&["orchestrate"], &["evaluator", "serve"]),
    (&["evaluator"], &["orchestrate"]),
    // The benchmarks sit below the faces: they load `serve` over HTTP, never through its code.
    (&["bench"], &["serve", "evaluator"]),
    // The dispatcher knows nothing of images being prepared or of the faces over it.
    (
        &["runner"],
        &["session", "images", "orchestrate", "evaluator"],
    ),
];

/// Modules that import nothing else of the crate (every layer may use them).
const LEAVES: &[&str] = &["owner", "repos", "fsutil", "pystr", "priority", "memory"];

/// (module, the only modules of the crate it may import): near-leaves every layer may use.
const ONLY_IMPORTS: &[(&str, &[&str])] = &[("unidiff", &["pystr"])];

/// File cycles inside a module that are known and being broken by the engineer working in
/// those files (issue 10); each must still be found, so an entry goes once its cycle does.
const KNOWN_FILE_CYCLES: &[&str] = &[];

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
    imports_through(code, "crate::")
}

/// The top-level modules of the core `code` imports from the harness crate:
/// `swe_eval_core::x` and `swe_eval_core::{x, y::z}`.
fn core_imports(code: &str) -> BTreeSet<String> {
    imports_through(code, "swe_eval_core::")
}

/// The top-level modules `code` names through `prefix` (`crate::`, `swe_eval_core::`).
fn imports_through(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + prefix.len()..];
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

/// The import graph of the tree under `src` (one crate), and the violations of the rules.
fn check(src: &Path) -> (Graph, Vec<Violation>) {
    check_crates(&[(Path::new("src"), src)])
}

/// The import graph of the crates (each its `src` folder: the name shown, and where it is),
/// and the violations of the rules. Their top-level modules are one graph: a module of the
/// harness crate importing `swe_eval_core::x` imports the core's module `x`.
fn check_crates(crates: &[(&Path, &Path)]) -> (Graph, Vec<Violation>) {
    let mut graph: Graph = BTreeMap::new();
    let mut violations = Vec::new();
    for (shown, src) in crates {
        check_one(shown, src, &mut graph, &mut violations);
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

/// Adds the crate under `src` (shown as `shown`) to `graph`, and its violations.
fn check_one(shown: &Path, src: &Path, graph: &mut Graph, violations: &mut Vec<Violation>) {
    for rel in rust_files(src) {
        let Some(module) = module_of(&rel) else {
            continue;
        };
        let text = std::fs::read_to_string(src.join(&rel)).unwrap();
        let code = code_only(&text);
        let file = shown.join(&rel);
        for (krate, allowed) in ONLY_IN {
            if names_crate(&code, krate) && !allowed.contains(&module.as_str()) {
                violations.push(Violation {
                    file: file.clone(),
                    rule: format!("{krate} is used only in {}", allowed.join(", ")),
                });
            }
        }
        // One public path per item: a file module is private and its API re-exported.
        for name in public_file_mods(&code) {
            violations.push(Violation {
                file: file.clone(),
                rule: format!(
                    "`pub mod {name};` gives every item of {name} a second public path: \
                     declare it `mod {name};` and re-export its API"
                ),
            });
        }
        let deps = graph.entry(module.clone()).or_default();
        let mut imported = crate_imports(&code);
        imported.extend(core_imports(&code));
        for dep in imported {
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
            for (m, importers) in ONLY_IMPORTED_BY {
                if *m == dep && !importers.contains(&module.as_str()) {
                    violations.push(Violation {
                        file: file.clone(),
                        rule: format!("{dep} is imported only by {}", importers.join(", ")),
                    });
                }
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
    let files = file_graph(src);
    for cycle in cycles(&files) {
        violations.push(Violation {
            file: shown.join(&cycle[0]),
            rule: format!("file import cycle {} -> {}", cycle.join(" -> "), cycle[0]),
        });
    }
}

/// The modules `code` declares public as files of their own (`pub mod x;`; not the inline
/// `pub mod x { ... }`, and not `pub(crate)`).
fn public_file_mods(code: &str) -> Vec<String> {
    code.lines()
        .filter_map(|l| {
            let name = l.trim().strip_prefix("pub mod ")?.strip_suffix(';')?.trim();
            name.chars().all(is_ident).then(|| name.to_string())
        })
        .collect()
}

/// `code` without the bodies of inline modules (`mod tests { ... }`), each replaced by `{}`.
fn without_inline_mods(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("mod ") {
        let before = rest[..at].chars().next_back();
        let after = &rest[at + "mod ".len()..];
        let name_len = after.chars().take_while(|c| is_ident(*c)).count();
        let tail = after[name_len..].trim_start();
        if before.is_some_and(is_ident) || name_len == 0 || !tail.starts_with('{') {
            out.push_str(&rest[..at + "mod ".len()]);
            rest = after;
            continue;
        }
        out.push_str(&rest[..at]);
        let body = &tail[1..];
        let mut depth = 1;
        let mut end = body.len();
        for (i, c) in body.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push_str("{}");
        rest = &body[end..];
    }
    out.push_str(rest);
    out
}

/// `code` without its `pub use` statements (a `mod.rs`'s re-exports are no dependency).
fn without_reexports(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    loop {
        let found = ["pub use ", "pub(crate) use ", "pub(super) use "]
            .iter()
            .filter_map(|p| rest.find(p))
            .min();
        let Some(at) = found else { break };
        out.push_str(&rest[..at]);
        rest = rest[at..].find(';').map_or("", |end| &rest[at + end + 1..]);
    }
    out.push_str(rest);
    out
}

/// Every path `code` names from `crate::`, `super::` or `self::`, as segments, with the
/// groups of `use` trees expanded (`super::{a, b::{c}}` -> `super a`, `super b c`).
fn module_paths(code: &str) -> Vec<Vec<String>> {
    fn tree(text: &str, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
        // Reads one use tree at the start of `text`; returns the bytes it took.
        let mut path = prefix.to_vec();
        let mut i = 0;
        let b = text.as_bytes();
        loop {
            while i < b.len() && (b[i] as char).is_whitespace() {
                i += 1;
            }
            if b.get(i) == Some(&b'{') {
                i += 1;
                loop {
                    while i < b.len() && (b[i] == b',' || (b[i] as char).is_whitespace()) {
                        i += 1;
                    }
                    if i >= b.len() || b[i] == b'}' {
                        return i + 1;
                    }
                    let took = tree(&text[i..], &path, out);
                    if took == 0 {
                        return i;
                    }
                    i += took;
                }
            }
            let len = text[i..].chars().take_while(|c| is_ident(*c)).count();
            if len == 0 {
                if path.len() > prefix.len() {
                    out.push(path);
                }
                return i;
            }
            path.push(text[i..i + len].to_string());
            i += len;
            if text[i..].starts_with("::") {
                i += 2;
            } else {
                out.push(path);
                return i;
            }
        }
    }
    let mut out = Vec::new();
    for start in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(start) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| is_ident(c) || c == ':') {
                continue;
            }
            tree(&code[at..], &[], &mut out);
        }
    }
    out
}

/// The names `mod_rs` re-exports from its own children: name -> the child's file
/// (`pub use build::{ensure, Prepared as P}` -> `ensure` and `P` -> `build.rs`).
fn reexports(dir: &Path, mod_rs: &str) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let code = code_only(mod_rs);
    for (at, _) in code.match_indices("use ") {
        let before = code[..at].trim_end();
        if !(before.ends_with("pub") || before.ends_with(')')) {
            continue;
        }
        let stmt = &code[at + "use ".len()..];
        let stmt = &stmt[..stmt.find(';').unwrap_or(stmt.len())];
        let stmt = stmt.trim_start().trim_start_matches("self::");
        let child: String = stmt.chars().take_while(|c| is_ident(*c)).collect();
        let Some(file) = child_file(dir, &child) else {
            continue;
        };
        // Each name the statement brings in: the last word of each leaf (`x as y` -> y).
        for leaf in stmt.split([',', '{', '}']) {
            if let Some(name) = leaf.split_whitespace().last() {
                let name = name.rsplit("::").next().unwrap_or(name);
                if !name.is_empty() && name.chars().all(is_ident) {
                    out.insert(name.to_string(), file.clone());
                }
            }
        }
    }
    out
}

/// The file of `dir`'s child module `name` (`name.rs` or `name/mod.rs`), if there is one.
fn child_file(dir: &Path, name: &str) -> Option<PathBuf> {
    if name.is_empty() {
        return None;
    }
    let flat = dir.join(format!("{name}.rs"));
    let nested = dir.join(name).join("mod.rs");
    [flat, nested].into_iter().find(|p| p.is_file())
}

/// The file a path resolves to, from the module folder `dir`: a child module's file, or, for
/// an item, the file `dir/mod.rs` re-exports it from (`mod.rs` itself when it defines it).
fn resolve(src: &Path, mut dir: PathBuf, segments: &[String]) -> Option<PathBuf> {
    for (i, seg) in segments.iter().enumerate() {
        if let Some(file) = child_file(&dir, seg) {
            if file.ends_with("mod.rs") && i + 1 < segments.len() {
                dir = file.parent()?.to_path_buf();
                continue;
            }
            return Some(file);
        }
        if dir == src {
            return None; // an item of lib.rs
        }
        let mod_rs = dir.join("mod.rs");
        let text = std::fs::read_to_string(&mod_rs).ok()?;
        return Some(reexports(&dir, &text).remove(seg).unwrap_or(mod_rs));
    }
    Some(dir.join("mod.rs"))
}

/// File -> (file of the same top-level module it imports -> itself), for every file in a
/// module folder under `src` (paths relative to `src`, as text).
fn file_graph(src: &Path) -> Graph {
    let mut graph: Graph = BTreeMap::new();
    for rel in rust_files(src) {
        if rel.components().count() < 2 {
            continue;
        }
        let module = module_of(&rel);
        let path = src.join(&rel);
        let text = std::fs::read_to_string(&path).unwrap();
        let is_mod_rs = rel.ends_with("mod.rs");
        let mut code = without_inline_mods(&code_only(&text));
        if is_mod_rs {
            code = without_reexports(&code);
        }
        let dir = path.parent().unwrap().to_path_buf();
        let mut targets = BTreeSet::new();
        for segs in module_paths(&code) {
            let (base, rest) = match segs[0].as_str() {
                "crate" => (src.to_path_buf(), &segs[1..]),
                "self" if is_mod_rs => (dir.clone(), &segs[1..]),
                "self" => continue,
                _ => {
                    // `super`, `super::super`, ...: up from this file's module.
                    let ups = segs.iter().take_while(|s| *s == "super").count();
                    let mut base = if is_mod_rs {
                        dir.parent().unwrap().to_path_buf()
                    } else {
                        dir.clone()
                    };
                    for _ in 1..ups {
                        base = base.parent().unwrap().to_path_buf();
                    }
                    (base, &segs[ups..])
                }
            };
            targets.extend(resolve(src, base, rest));
        }
        if is_mod_rs {
            // A mod.rs names its children without a prefix: `history::plan(...)`.
            for (at, _) in code.match_indices("::") {
                let before = &code[..at];
                let name: String = before
                    .chars()
                    .rev()
                    .take_while(|c| is_ident(*c))
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                let prev = before[..before.len() - name.len()].chars().next_back();
                if prev.is_some_and(|c| is_ident(c) || c == ':') {
                    continue;
                }
                if let Some(file) = child_file(&dir, &name) {
                    targets.insert(file);
                }
            }
        }
        let from = rel.display().to_string();
        let entry = graph.entry(from.clone()).or_default();
        for t in targets {
            let Ok(t) = t.strip_prefix(src) else { continue };
            if t == rel || module_of(t) != module {
                continue;
            }
            entry
                .entry(t.display().to_string())
                .or_default()
                .insert(rel.clone());
        }
    }
    graph
}

/// Every node `from` reaches by one arrow or more.
fn reachable(graph: &Graph, from: &str) -> BTreeSet<String> {
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
}

/// The cycles of the module graph, one per strongly connected component of more than one
/// module, each as a path through it.
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    let reach = |from: &str| reachable(graph, from);
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
fn describe(graph: &Graph) -> String {
    graph
        .iter()
        .map(|(m, deps)| {
            let deps: Vec<&str> = deps.keys().map(String::as_str).collect();
            format!("{m} -> {}\n", deps.join(", "))
        })
        .collect()
}

/// The crates' `src` folders: the harness crate's and the core's, each as shown in messages
/// and where it is.
fn crate_sources() -> Vec<(PathBuf, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    ["src", "crates/core/src"]
        .iter()
        .map(|rel| (PathBuf::from(rel), root.join(rel)))
        .collect()
}

#[test]
fn the_crate_keeps_its_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (graph, mut violations) = check_these_crates();
    for known in KNOWN_FILE_CYCLES {
        let before = violations.len();
        violations.retain(|v| v.rule != *known);
        assert!(
            violations.len() < before,
            "{known} is gone: remove it from KNOWN_FILE_CYCLES"
        );
    }
    assert!(
        graph.len() >= 10,
        "too few modules found under {}: {graph:?}",
        src.display()
    );
    assert!(
        violations.is_empty(),
        "forbidden imports (see ARCHITECTURE.md):\n{}\nimport graph:\n{}",
        listed(&violations),
        describe(&graph)
    );
}

/// The import graph of this repository's two crates, and the violations of the rules.
fn check_these_crates() -> (Graph, Vec<Violation>) {
    let sources = crate_sources();
    let crates: Vec<(&Path, &Path)> = sources
        .iter()
        .map(|(shown, src)| (shown.as_path(), src.as_path()))
        .collect();
    check_crates(&crates)
}

/// Violations as lines: `  file: rule`.
fn listed(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(|v| format!("  {}: {}", v.file.display(), v.rule))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules `src/lib.rs` declares.
fn top_level_modules(lib_rs: &str) -> Vec<String> {
    code_only(lib_rs)
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l
                .strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("mod "))?;
            Some(rest.strip_suffix(';')?.trim().to_string())
        })
        .collect()
}

/// The text of `doc` under the heading `## {title}`, up to the next heading of that level.
fn doc_section<'a>(doc: &'a str, title: &str) -> &'a str {
    let heading = format!("## {title}\n");
    let Some(at) = doc
        .match_indices(&heading)
        .map(|(at, _)| at)
        .find(|&at| at == 0 || doc[..at].ends_with('\n'))
    else {
        return "";
    };
    let body = &doc[at + heading.len()..];
    let end = body.find("\n## ").map_or(body.len(), |e| e + 1);
    &body[..end]
}

/// One row of ARCHITECTURE.md's module table.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TableRow {
    /// The module (the second column).
    module: String,
    /// The modules its imports column lists (the fourth column: every lowercase name in
    /// backticks; `nothing` lists none), or `None` for `anything`.
    imports: Option<BTreeSet<String>>,
}

/// The rows of the module table (under `## Modules`), in its order: the ground floor first.
fn module_table(doc: &str) -> Vec<TableRow> {
    doc_section(doc, "Modules")
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let name = cells.get(2)?.strip_prefix('`')?.strip_suffix('`')?;
            if !name.chars().all(is_ident) {
                return None;
            }
            let cell = cells.get(4).copied().unwrap_or_default();
            let imports = (!cell.starts_with("anything")).then(|| {
                cell.split('`')
                    .skip(1)
                    .step_by(2)
                    .filter(|n| {
                        !n.is_empty()
                            && n.chars()
                                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                    })
                    .map(str::to_string)
                    .collect()
            });
            Some(TableRow {
                module: name.to_string(),
                imports,
            })
        })
        .collect()
}

/// The modules ARCHITECTURE.md's module table has a row for.
fn architecture_rows(doc: &str) -> BTreeSet<String> {
    module_table(doc).into_iter().map(|r| r.module).collect()
}

/// The arrows of the graph that no longer path implies (its transitive reduction): what the
/// module diagram draws, every other arrow following from them.
fn reduction(graph: &Graph) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (a, deps) in graph {
        for b in deps.keys() {
            let implied = deps
                .keys()
                .any(|c| c != b && reachable(graph, c).contains(b));
            if !implied {
                out.insert((a.clone(), b.clone()));
            }
        }
    }
    out
}

/// The arrows (`a --> b`) of the mermaid block under `## Module diagram`, and every word of it
/// (the modules it names).
fn diagram(doc: &str) -> (BTreeSet<(String, String)>, BTreeSet<String>) {
    let section = doc_section(doc, "Module diagram");
    let block = section
        .split("```mermaid")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .unwrap_or_default();
    let mut arrows = BTreeSet::new();
    for line in block.lines() {
        if let Some((a, b)) = line.split_once("-->") {
            let (a, b) = (a.trim(), b.trim());
            if a.chars().all(is_ident) && b.chars().all(is_ident) {
                arrows.insert((a.to_string(), b.to_string()));
            }
        }
    }
    let words = block
        .split(|c: char| !is_ident(c))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    (arrows, words)
}

/// The figure ARCHITECTURE.md gives as `**{name}: N**` (a line may break inside it), if it
/// gives one.
fn doc_figure(doc: &str, name: &str) -> Option<usize> {
    let flat = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    let marker = format!("**{name}: ");
    let at = flat.find(&marker)? + marker.len();
    let digits: String = flat[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// What ARCHITECTURE.md says of the imports, held against the code: `declared` is every
/// top-level module with the `lib.rs` that declares it, `graph` the import graph of the crates.
/// A module of the code with no row; a module importing one its row's imports column does
/// not list (each importing file named), or one that is not above it in the table (an arrow
/// back up); a column listing a module nothing of its row imports, or a name that is no module;
/// a figure of the structure that is not the code's; and a module diagram that is not the
/// graph's transitive reduction (or leaves a module out).
fn check_architecture(doc: &str, declared: &[(PathBuf, String)], graph: &Graph) -> Vec<Violation> {
    let doc_file = PathBuf::from("ARCHITECTURE.md");
    let at_doc = |rule: String| Violation {
        file: doc_file.clone(),
        rule,
    };
    let table = module_table(doc);
    let place: BTreeMap<&str, usize> = table
        .iter()
        .enumerate()
        .map(|(i, r)| (r.module.as_str(), i))
        .collect();
    let modules: BTreeSet<&str> = declared.iter().map(|(_, m)| m.as_str()).collect();
    let mut out = Vec::new();
    for (lib, m) in declared {
        if !place.contains_key(m.as_str()) {
            out.push(Violation {
                file: lib.clone(),
                rule: format!("`{m}` has no row in ARCHITECTURE.md's module table"),
            });
        }
    }
    let mut back_up = 0;
    for (m, deps) in graph {
        let Some(&at) = place.get(m.as_str()) else {
            continue;
        };
        let listed = table[at].imports.as_ref();
        for (dep, files) in deps {
            let unlisted = listed.is_some_and(|l| !l.contains(dep));
            let up = place.get(dep.as_str()).is_some_and(|&d| d >= at);
            back_up += usize::from(up);
            for file in files {
                if unlisted {
                    out.push(Violation {
                        file: file.clone(),
                        rule: format!(
                            "imports `{dep}`, which ARCHITECTURE.md's imports column for `{m}` \
                             does not list"
                        ),
                    });
                }
                if up {
                    out.push(Violation {
                        file: file.clone(),
                        rule: format!(
                            "`{m}` imports `{dep}`, which is not above it in ARCHITECTURE.md's \
                             module table (an arrow back up)"
                        ),
                    });
                }
            }
        }
    }
    for row in &table {
        for x in row.imports.iter().flatten() {
            if !modules.contains(x.as_str()) {
                out.push(at_doc(format!(
                    "the imports column of `{}` lists `{x}`, which is no module of the crates",
                    row.module
                )));
            } else if !graph.get(&row.module).is_some_and(|d| d.contains_key(x)) {
                out.push(at_doc(format!(
                    "the imports column of `{}` lists `{x}`, which no file of {} imports",
                    row.module, row.module
                )));
            }
        }
    }
    let drawn = reduction(graph);
    let figures = [
        ("modules", declared.len()),
        ("import arrows", graph.values().map(BTreeMap::len).sum()),
        ("drawn", drawn.len()),
        ("pointing back up", back_up),
        ("cycles", cycles(graph).len()),
    ];
    for (name, counted) in figures {
        match doc_figure(doc, name) {
            Some(said) if said == counted => {}
            Some(said) => out.push(at_doc(format!(
                "says **{name}: {said}**, but the code has {counted}"
            ))),
            None => out.push(at_doc(format!(
                "gives no **{name}: N** (the code has {counted})"
            ))),
        }
    }
    let (arrows, words) = diagram(doc);
    for (a, b) in drawn.difference(&arrows) {
        out.push(at_doc(format!(
            "the module diagram lacks `{a} --> {b}` (an import no longer path implies)"
        )));
    }
    for (a, b) in arrows.difference(&drawn) {
        out.push(at_doc(format!(
            "the module diagram draws `{a} --> {b}`, which is no import or one a longer path implies"
        )));
    }
    for m in &modules {
        if !words.contains(*m) {
            out.push(at_doc(format!("the module diagram leaves out `{m}`")));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Every top-level module of the crates, with the `lib.rs` that declares it (as shown in
/// messages).
fn declared_modules() -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for (shown, src) in crate_sources() {
        let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
        for m in top_level_modules(&lib) {
            out.push((shown.join("lib.rs"), m));
        }
    }
    out
}

/// ARCHITECTURE.md's module table, module diagram and figures say what the code imports:
/// every import of every module is in its row's imports column and points up the table, every
/// module listed is imported, the diagram draws every arrow no longer path implies, and the
/// counts are the code's.
#[test]
fn architecture_md_states_the_import_graph() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let (graph, _) = check_these_crates();
    let declared = declared_modules();
    assert!(
        declared.len() >= 20 && module_table(&doc).len() >= 20,
        "too few modules read: {declared:?}"
    );
    let found = check_architecture(&doc, &declared, &graph);
    assert!(
        found.is_empty(),
        "ARCHITECTURE.md and the code differ:\n{}\nimport graph:\n{}",
        listed(&found),
        describe(&graph)
    );
}

#[test]
fn every_top_level_module_has_a_row_in_architecture_md() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let mut modules = Vec::new();
    for (_, src) in crate_sources() {
        let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
        modules.extend(top_level_modules(&lib));
    }
    assert!(
        modules.len() >= 10,
        "too few modules in the crates' lib.rs: {modules:?}"
    );
    let rows = architecture_rows(&doc);
    let missing: Vec<&String> = modules.iter().filter(|m| !rows.contains(*m)).collect();
    assert!(
        missing.is_empty(),
        "modules of the crates' lib.rs with no row in ARCHITECTURE.md's module table: {missing:?}"
    );
    let gone: Vec<&String> = rows.iter().filter(|r| !modules.contains(r)).collect();
    assert!(
        gone.is_empty(),
        "rows of ARCHITECTURE.md's module table for modules no crate's lib.rs declares: {gone:?}"
    );
}

#[test]
fn architecture_rows_and_lib_modules_are_read_as_written() {
    let lib = "//! pub mod not_this;\npub mod a;\n#[doc(hidden)]\npub mod b;\nmod c;\n";
    assert_eq!(top_level_modules(lib), ["a", "b", "c"]);
    let doc = "## Modules\n\n| Tier | Module | What | Imports |\n| --- | --- | --- | --- |\n| leaves | `owner` | x | nothing |\n| | `repos` | y `z` | `owner` (its `Id`), `fsutil` (tests) |\n| x | not a module | z | |\n| | `cli` | w | anything |\n\n## Next\n\n| | `later` | not in the table | nothing |\n";
    assert_eq!(
        architecture_rows(doc),
        BTreeSet::from(["cli".into(), "owner".into(), "repos".into()])
    );
    let set = |names: &[&str]| Some(names.iter().map(|n| n.to_string()).collect());
    let imports: Vec<(String, Option<BTreeSet<String>>)> = module_table(doc)
        .into_iter()
        .map(|r| (r.module, r.imports))
        .collect();
    assert_eq!(
        imports,
        [
            ("owner".to_string(), set(&[])),
            ("repos".to_string(), set(&["fsutil", "owner"])),
            ("cli".to_string(), None),
        ]
    );
    assert_eq!(doc_figure("x **cycles: 12** y", "cycles"), Some(12));
    assert_eq!(
        doc_figure("x **pointing\nback up: 3**", "pointing back up"),
        Some(3)
    );
    assert_eq!(doc_figure("x **cycles: none**", "cycles"), None);
}

/// Writes `text` to `src/rel`, making its folders.
fn write_file(src: &Path, rel: &str, text: &str) {
    let p = src.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

#[test]
fn the_checker_finds_each_kind_of_violation() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path();
    let write = |rel: &str, text: &str| write_file(src, rel, text);
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
    // A file module made public (an inline one is no file of its own).
    write(
        "engine/mod.rs",
        "pub mod docker;\nmod fake;\npub mod inline { pub fn f() {} }\n",
    );
    // A layer below the evaluator importing it.
    write("images/x.rs", "use crate::evaluator::Evaluator;\n");

    let (graph, violations) = check(src);
    let rules: Vec<(String, String)> = violations
        .iter()
        .map(|v| (v.file.display().to_string(), v.rule.clone()))
        .collect();
    let want = [
        (
            "src/engine/mod.rs",
            "`pub mod docker;` gives every item of docker a second public path: declare it \
             `mod docker;` and re-export its API",
        ),
        ("src/grading.rs", "bollard is used only in engine"),
        ("src/grading.rs", "grading must not import runner"),
        (
            "src/images/x.rs",
            "evaluator is imported only by cli, serve",
        ),
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
fn the_checker_finds_file_cycles_inside_a_module() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path();
    let write = |rel: &str, text: &str| write_file(src, rel, text);
    write("lib.rs", "pub mod images;\npub mod runner;\n");
    // build.rs -> history.rs by name; history.rs -> build.rs through a re-export of mod.rs.
    write(
        "images/mod.rs",
        "mod build;\nmod history;\nmod naming;\npub use build::{ensure, Prepared as P};\npub use naming::Layer;\n",
    );
    write(
        "images/build.rs",
        "use super::{history, Layer};\npub struct Prepared;\n",
    );
    write(
        "images/history.rs",
        "use super::P;\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::images::history::x;\n}\n",
    );
    // naming.rs -> build.rs only from its test module: no cycle.
    write(
        "images/naming.rs",
        "pub struct Layer;\n#[cfg(test)]\nmod tests {\n    use crate::images::build::Prepared;\n}\n",
    );
    // A mod.rs that holds logic naming its child, and the child importing it back.
    write(
        "runner/mod.rs",
        "mod job;\npub use job::run;\nfn go() { job::run(); }\npub struct Setup;\n",
    );
    write(
        "runner/job.rs",
        "use crate::runner::Setup;\npub fn run() {}\n",
    );
    // Two files of different modules importing each other is the module check's business.
    write("runner/grade.rs", "use crate::images::naming::Layer;\n");

    let (_, violations) = check(src);
    let rules: Vec<String> = violations
        .iter()
        .filter(|v| v.rule.starts_with("file import cycle"))
        .map(|v| format!("{}: {}", v.file.display(), v.rule))
        .collect();
    assert_eq!(
        rules,
        [
            "src/images/build.rs: file import cycle images/build.rs -> images/history.rs -> images/build.rs",
            "src/runner/job.rs: file import cycle runner/job.rs -> runner/mod.rs -> runner/job.rs",
        ],
        "{:#?}",
        file_graph(src)
    );
    let graph = file_graph(src);
    assert!(!graph["images/naming.rs"].contains_key("images/build.rs"));
    assert!(graph["images/build.rs"].contains_key("images/naming.rs"));
}

#[test]
fn the_architecture_check_finds_each_kind_of_fault() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path();
    let write = |rel: &str, text: &str| write_file(src, rel, text);
    write(
        "lib.rs",
        "pub mod owner;\npub mod fsutil;\npub mod images;\npub mod runner;\npub mod report;\npub mod cli;\n",
    );
    write("owner.rs", "pub struct Id;\n");
    write("fsutil.rs", "pub fn write() {}\n");
    write(
        "runner/mod.rs",
        "mod job;\nuse crate::fsutil::write;\npub struct Job;\n",
    );
    write("runner/job.rs", "use crate::owner::Id;\n");
    write("images/mod.rs", "use crate::runner::Job;\n");
    write("report.rs", "use crate::owner::Id;\n");
    write("cli/mod.rs", "use crate::{images, runner};\n");
    let (graph, _) = check(src);
    let declared: Vec<(PathBuf, String)> =
        top_level_modules(&std::fs::read_to_string(src.join("lib.rs")).unwrap())
            .into_iter()
            .map(|m| (PathBuf::from("src/lib.rs"), m))
            .collect();
    // fsutil lists an import it does not make; images sits below runner, which it imports;
    // runner's column misses owner and names no module; report has no row; the figures and
    // the diagram are wrong.
    let doc =
        "# A\n\n## Modules\n\n| Tier | Module | What | Imports |\n| --- | --- | --- | --- |\n\
| leaves | `owner` | ids | nothing |\n| | `fsutil` | writes | `owner` |\n\
| | `images` | images | `runner` (its `Job`) |\n| | `runner` | jobs | `fsutil`, `gone` |\n\
| face | `cli` | the face | anything |\n\n\
In figures: **modules: 6**, **import arrows: 9**, **drawn: 5**, **pointing back up: 0**,\n\
**cycles: 0**.\n\n## Module diagram\n\n```mermaid\nflowchart TD\n    runner --> owner\n\
    images --> runner\n    cli --> runner\n    runner --> fsutil\n    report --> owner\n```\n";
    let rules: Vec<String> = check_architecture(doc, &declared, &graph)
        .iter()
        .map(|v| format!("{}: {}", v.file.display(), v.rule))
        .collect();
    assert_eq!(
        rules,
        [
            "ARCHITECTURE.md: says **import arrows: 9**, but the code has 6",
            "ARCHITECTURE.md: says **pointing back up: 0**, but the code has 1",
            "ARCHITECTURE.md: the imports column of `fsutil` lists `owner`, which no file of fsutil imports",
            "ARCHITECTURE.md: the imports column of `runner` lists `gone`, which is no module of the crates",
            "ARCHITECTURE.md: the module diagram draws `cli --> runner`, which is no import or one a longer path implies",
            "ARCHITECTURE.md: the module diagram lacks `cli --> images` (an import no longer path implies)",
            "src/images/mod.rs: `images` imports `runner`, which is not above it in ARCHITECTURE.md's module table (an arrow back up)",
            "src/lib.rs: `report` has no row in ARCHITECTURE.md's module table",
            "src/runner/job.rs: imports `owner`, which ARCHITECTURE.md's imports column for `runner` does not list",
        ],
        "graph:\n{}",
        describe(&graph)
    );
    // The transitive reduction keeps an arrow only where no longer path gives it.
    assert_eq!(
        reduction(&graph),
        [
            ("cli", "images"),
            ("images", "runner"),
            ("report", "owner"),
            ("runner", "fsutil"),
            ("runner", "owner"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
    );
    // A diagram that leaves a module out is told so.
    let without = doc.replace("    runner --> fsutil\n", "");
    let rules: Vec<String> = check_architecture(&without, &declared, &graph)
        .into_iter()
        .map(|v| v.rule)
        .collect();
    assert!(
        rules.contains(&"the module diagram leaves out `fsutil`".to_string()),
        "{rules:#?}"
    );
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

/// The packages `package` depends on, directly or through others, as Cargo.lock records them
/// (build and dev dependencies included: the lock file does not tell them apart, so this
/// over-approximates what the package links).
fn lock_closure(lock: &str, package: &str) -> BTreeSet<String> {
    let mut deps: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for block in lock.split("[[package]]").skip(1) {
        let name = block
            .lines()
            .find_map(|l| l.strip_prefix("name = \""))
            .and_then(|l| l.strip_suffix('"'))
            .unwrap_or_default()
            .to_string();
        let list = block
            .split_once("dependencies = [")
            .map(|(_, rest)| rest.split_once(']').map_or(rest, |(list, _)| list))
            .unwrap_or("");
        let names = list
            .split(',')
            .filter_map(|d| {
                let d = d.trim().trim_matches('"');
                d.split_whitespace().next().map(str::to_string)
            })
            .collect();
        deps.entry(name).or_default().extend::<Vec<String>>(names);
    }
    let mut seen = BTreeSet::new();
    let mut todo = vec![package.to_string()];
    while let Some(p) = todo.pop() {
        for d in deps.get(&p).into_iter().flatten() {
            if seen.insert(d.clone()) {
                todo.push(d.clone());
            }
        }
    }
    seen
}

/// The pure core runs no container, no async runtime and no HTTP: none of the crates that
/// could is among its dependencies, however deep, so the compiler holds the rule.
#[test]
fn the_core_crate_depends_on_no_runtime_no_docker_and_no_http() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).unwrap();
    let core = lock_closure(&lock, "swe-eval-core");
    assert!(
        core.contains("serde_json") && core.contains("parquet"),
        "the core's dependencies were not read from Cargo.lock: {core:?}"
    );
    let harness = lock_closure(&lock, "swe-eval");
    for forbidden in [
        "tokio",
        "bollard",
        "hyper",
        "hyper-util",
        "hf-hub",
        "ureq",
        "rusqlite",
        "mio",
    ] {
        assert!(
            harness.contains(forbidden),
            "{forbidden} is no dependency of the harness either: the check cannot fail"
        );
        assert!(
            !core.contains(forbidden),
            "the core (crates/core) depends on {forbidden}"
        );
    }
}

#[test]
fn the_lock_closure_follows_dependencies_through_packages() {
    let lock = "version = 4\n\n[[package]]\nname = \"a\"\nversion = \"1\"\ndependencies = [\n \"b\",\n \"c 2.0.0\",\n]\n\n[[package]]\nname = \"b\"\nversion = \"1\"\ndependencies = [\n \"d\",\n]\n\n[[package]]\nname = \"c\"\nversion = \"2.0.0\"\n\n[[package]]\nname = \"d\"\nversion = \"1\"\n\n[[package]]\nname = \"e\"\nversion = \"1\"\n";
    assert_eq!(
        lock_closure(lock, "a"),
        BTreeSet::from(["b".into(), "c".into(), "d".into()])
    );
    assert!(lock_closure(lock, "e").is_empty());
}
