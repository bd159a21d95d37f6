//! Fuzzing of every parser of outside input, bounded so that CI runs it in seconds: the
//! dataset loader (JSON, JSON Lines, Parquet bytes), the predictions loader, the unified-diff
//! parser and the reward on top of it, the search/replace parser and its reward, every log
//! parser by every name `logparse` accepts, grading, and the readers of saved logs and reports.
//!
//! Inputs are random bytes, random mutations of real inputs (the mini benchmark's embedded
//! files, the grading fixtures, and `../shared/datasets` when it is there), truncations, huge
//! lines, deep nesting and invalid UTF-8. Every call runs under a watchdog thread: a panic
//! fails the case, and so does a call that is still running after [`LIMIT`]. Where a parser
//! returns an error, the error must name the file (and the line, where the format has lines).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::LazyLock;
use std::time::Duration;

use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;
use swe_eval_core::dataset::{self, LoadError, Loaded};
use swe_eval_core::grading::{self, GradeInput, RunOutcome};
use swe_eval_core::logparse::{self, PARSER_NAMES};
use swe_eval_core::report::SavedLogs;
use swe_eval_core::reward::{self, Files};
use swe_eval_core::unidiff;
use swe_eval_core::{mini, predictions, report};

/// A parser call still running after this long is a hang. Generous: debug build, 2 cores
/// shared with other jobs; real calls on these inputs take milliseconds.
const LIMIT: Duration = Duration::from_secs(60);

/// Inputs tried, over all targets (printed by each test, for the closing figures).
static INPUTS: AtomicUsize = AtomicUsize::new(0);

/// Runs `f` on a thread with a 2 MiB stack (the smallest a worker thread of the binary gets)
/// and returns its value; re-raises its panic; fails when it is still running after [`LIMIT`].
fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    INPUTS.fetch_add(1, Ordering::Relaxed);
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let _ = tx.send(f());
        })
        .expect("spawn watchdog thread");
    match rx.recv_timeout(LIMIT) {
        Ok(v) => {
            let _ = handle.join();
            v
        }
        Err(RecvTimeoutError::Disconnected) => match handle.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the thread sends before it ends"),
        },
        Err(RecvTimeoutError::Timeout) => panic!("{what}: still running after {LIMIT:?} (hang)"),
    }
}

/// `n` cases, times `SWE_EVAL_FUZZ_SCALE` (default 1) for a longer run by hand.
fn cases(n: u32) -> ProptestConfig {
    let scale = std::env::var("SWE_EVAL_FUZZ_SCALE")
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        .unwrap_or(1)
        .max(1);
    ProptestConfig {
        // Shrinking a multi-kilobyte input is slow and the failing input is printed anyway.
        max_shrink_iters: 64,
        failure_persistence: None,
        ..crate::common::proptest_config(n * scale)
    }
}

// ---------------------------------------------------------------------------------------
// Seeds: real inputs to mutate.

/// Real inputs, by kind.
struct Seeds {
    /// Dataset rows (one JSON object per line).
    dataset_rows: Vec<String>,
    /// Prediction rows (one JSON object per line).
    prediction_rows: Vec<String>,
    /// Whole prediction documents in the other accepted shapes (JSON list, object keyed by id).
    prediction_docs: Vec<String>,
    /// Unified diffs (gold, test and model patches).
    patches: Vec<String>,
    /// Test logs, each with the parser that reads it.
    logs: Vec<(String, String)>,
    /// Raw search/replace outputs, with the files they edit and the oracle's new files.
    search_replace: Vec<(Files, Files, String)>,
    /// A Parquet file of dataset rows, when the fixture is there.
    parquet: Option<Vec<u8>>,
}

fn first_lines(path: &Path, n: usize) -> Vec<String> {
    std::fs::read_to_string(path)
        .map(|t| t.lines().take(n).map(str::to_string).collect())
        .unwrap_or_default()
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A search/replace seed written here, so the target has seeds without the shared data.
fn own_search_replace_seed() -> (Files, Files, String) {
    let code: Files = [(
        "pkg/a.py".to_string(),
        "def f(x):\n    return x + 1\n\n\ndef g():\n    pass\n".to_string(),
    )]
    .into();
    let oracle: Files = [(
        "pkg/a.py".to_string(),
        "def f(x):\n    return x + 2\n\n\ndef g():\n    pass\n".to_string(),
    )]
    .into();
    let output = "<think>\nthe constant is wrong\n</think>\n<solution>\n```python\n### pkg/a.py\n<<<<<<< SEARCH\ndef f(x):\n    return x + 1\n=======\ndef f(x):\n    return x + 2\n>>>>>>> REPLACE\n```\n\n```python\n### pkg/b.py\n<<<<<<< SEARCH\n\n=======\nY = 2\n>>>>>>> REPLACE\n```\n</solution>\n".to_string();
    (code, oracle, output)
}

static SEEDS: LazyLock<Seeds> = LazyLock::new(|| {
    let mut s = Seeds {
        dataset_rows: mini::DATASET.lines().map(str::to_string).collect(),
        prediction_rows: mini::PREDICTIONS.lines().map(str::to_string).collect(),
        prediction_docs: Vec::new(),
        patches: Vec::new(),
        logs: Vec::new(),
        search_replace: vec![own_search_replace_seed()],
        parquet: std::fs::read(fixtures().join("hostile/mini.parquet")).ok(),
    };
    for row in &s.dataset_rows {
        if let Ok(v) = serde_json::from_str::<Value>(row) {
            for k in ["patch", "test_patch"] {
                if let Some(p) = v[k].as_str() {
                    s.patches.push(p.to_string());
                }
            }
        }
    }
    for row in &s.prediction_rows {
        if let Some(p) = serde_json::from_str::<Value>(row)
            .ok()
            .and_then(|v| v["model_patch"].as_str().map(str::to_string))
        {
            s.patches.push(p);
        }
    }
    // The grading fixtures are real-shaped logs with the parser that reads them.
    if let Ok(dir) = std::fs::read_dir(fixtures().join("grading")) {
        let mut paths: Vec<_> = dir.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for p in paths {
            let Ok(v) = serde_json::from_slice::<Value>(&std::fs::read(&p).unwrap_or_default())
            else {
                continue;
            };
            if let (Some(log), Some(parser)) = (v["log"].as_str(), v["parser"].as_str()) {
                s.logs.push((parser.to_string(), log.to_string()));
            }
        }
    }
    if let Some(shared) = crate::common::shared_datasets() {
        s.dataset_rows.extend(first_lines(
            &shared.join("partial-verified/swebench_verified_partial.jsonl"),
            12,
        ));
        let preds = shared.join("predictions/pydantic-deep_minimax-m2.5");
        for row in first_lines(&preds.join("all_preds.jsonl"), 24) {
            if let Some(p) = serde_json::from_str::<Value>(&row)
                .ok()
                .and_then(|v| v["model_patch"].as_str().map(str::to_string))
            {
                s.patches.push(p);
            }
            s.prediction_rows.push(row);
        }
        for row in first_lines(&preds.join("instance_test_outputs.jsonl"), 12) {
            let Ok(v) = serde_json::from_str::<Value>(&row) else {
                continue;
            };
            let (Some(id), Some(log)) = (v["instance_id"].as_str(), v["test_output"].as_str())
            else {
                continue;
            };
            let repo = id
                .rsplit_once('-')
                .map_or(id, |(r, _)| r)
                .replacen("__", "/", 1);
            s.logs.push((
                logparse::parser_for_repo(&repo).to_string(),
                log.to_string(),
            ));
        }
        let keyed =
            shared.join("predictions/mini-swe-agent_claude-sonnet-4.5/full_i0_run1/preds.json");
        if let Ok(Value::Object(m)) =
            serde_json::from_slice::<Value>(&std::fs::read(keyed).unwrap_or_default())
        {
            let few: serde_json::Map<String, Value> = m.into_iter().take(4).collect();
            s.prediction_docs
                .push(serde_json::to_string_pretty(&few).unwrap());
        }
        let edge = shared.join("reward-fixtures/swerl_edge_cases.json");
        if let Ok(v) = serde_json::from_slice::<Value>(&std::fs::read(edge).unwrap_or_default()) {
            let files = |k: &str| -> Files {
                v[k].as_object()
                    .map(|m| {
                        m.iter()
                            .filter_map(|(p, t)| Some((p.clone(), t.as_str()?.to_string())))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let (code, oracle) = (files("code_context"), files("oracle_new_content"));
            for c in v["cases"].as_array().into_iter().flatten() {
                if let Some(out) = c["model_output"].as_str() {
                    s.search_replace
                        .push((code.clone(), oracle.clone(), out.to_string()));
                }
            }
        }
    }
    // A JSON list of the mini predictions: the other document shape.
    let list: Vec<Value> = s
        .prediction_rows
        .iter()
        .take(5)
        .filter_map(|r| serde_json::from_str(r).ok())
        .collect();
    s.prediction_docs
        .push(serde_json::to_string_pretty(&list).unwrap());
    s
});

// ---------------------------------------------------------------------------------------
// Mutations.

/// Tokens of the formats under test: inserting them makes mutations reach deeper branches.
const TOKENS: &[&[u8]] = &[
    b"\"",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"\n",
    b"\r\n",
    b"\\",
    b"\\u",
    b"\\ud800",
    b"null",
    b"1e999",
    b"-0",
    b"\"instance_id\":",
    b"\"repo\":",
    b"\"model_patch\":",
    b"\"FAIL_TO_PASS\":",
    b"\"sample\":",
    b"18446744073709551616",
    b"diff --git a/x b/x\n",
    b"--- a/",
    b"+++ b/",
    b"--- /dev/null\n",
    b"@@ -1,3 +1,4 @@",
    b"@@ -0,0 +1 @@\n",
    b"@@ -1,99999999999999999999 +1 @@\n",
    b"\\ No newline at end of file\n",
    b"new file mode 100644\n",
    b"deleted file mode 100644\n",
    b"rename from a\n",
    b"GIT binary patch\n",
    b"Binary files a/x and b/x differ\n",
    b"<think>",
    b"</think>",
    b"<solution>",
    b"</solution>",
    b"```python\n### ",
    b"<<<<<<< SEARCH\n",
    b"\n=======\n",
    b"\n>>>>>>> REPLACE\n```",
    b">>>>> Start Test Output",
    b">>>>> End Test Output",
    b">>>>> Test Exit Code: ",
    b">>>>> Patch Apply Failed",
    b"PASSED ",
    b"FAILED ",
    b"ERROR ",
    b"SKIPPED ",
    b"XFAIL ",
    b"::",
    b" ... ok\n",
    b" ... FAIL\n",
    b" - ",
    b"[ 50%]",
    b"test_",
    b"\0",
    b"\xff",
    b"\xc3",
    b"\xe2\x82",
    b"\xef\xbb\xbf",
    b"\t",
];

#[derive(Debug, Clone)]
enum Mutation {
    Flip(Index, u8),
    Delete(Index, usize),
    Insert(Index, Vec<u8>),
    Token(Index, Index),
    Duplicate(Index, usize),
    Truncate(Index),
    /// A line of this many bytes.
    HugeLine(Index, usize),
    /// This many nested brackets.
    Nest(Index, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        2 => (any::<Index>(), 1usize..64).prop_map(|(i, n)| Mutation::Delete(i, n)),
        2 => (any::<Index>(), proptest::collection::vec(any::<u8>(), 1..16)).prop_map(|(i, b)| Mutation::Insert(i, b)),
        4 => (any::<Index>(), any::<Index>()).prop_map(|(i, t)| Mutation::Token(i, t)),
        1 => (any::<Index>(), 1usize..400).prop_map(|(i, n)| Mutation::Duplicate(i, n)),
        1 => any::<Index>().prop_map(Mutation::Truncate),
        1 => (any::<Index>(), 10_000usize..200_000).prop_map(|(i, n)| Mutation::HugeLine(i, n)),
        1 => (any::<Index>(), 100usize..5_000).prop_map(|(i, n)| Mutation::Nest(i, n)),
    ]
}

fn apply_mutations(seed: &[u8], muts: &[Mutation]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for m in muts {
        let at = |i: &Index, len: usize| i.index(len + 1);
        match m {
            Mutation::Flip(i, x) if !b.is_empty() => {
                let k = i.index(b.len());
                b[k] ^= x | 1;
            }
            Mutation::Flip(..) => {}
            Mutation::Delete(i, n) => {
                let k = at(i, b.len());
                let end = (k + n).min(b.len());
                b.drain(k..end);
            }
            Mutation::Insert(i, bytes) => {
                let k = at(i, b.len());
                b.splice(k..k, bytes.iter().copied());
            }
            Mutation::Token(i, t) => {
                let k = at(i, b.len());
                b.splice(k..k, t.get(TOKENS).iter().copied());
            }
            Mutation::Duplicate(i, n) => {
                let k = at(i, b.len());
                let end = (k + n).min(b.len());
                let piece = b[k..end].to_vec();
                b.splice(end..end, piece);
            }
            Mutation::Truncate(i) => b.truncate(at(i, b.len())),
            Mutation::HugeLine(i, n) => {
                let k = at(i, b.len());
                b.splice(k..k, std::iter::repeat_n(b'a', *n));
            }
            Mutation::Nest(i, n) => {
                let k = at(i, b.len());
                let nest: Vec<u8> = std::iter::repeat_n(b'[', *n)
                    .chain(std::iter::repeat_n(b']', *n))
                    .collect();
                b.splice(k..k, nest);
            }
        }
    }
    b
}

/// A seed (picked from `seeds`) with up to 6 mutations, or random bytes.
fn input_from(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Bytes> {
    let mutated =
        (any::<Index>(), proptest::collection::vec(mutation(), 0..6)).prop_map(move |(i, muts)| {
            if seeds.is_empty() {
                apply_mutations(b"", &muts)
            } else {
                apply_mutations(i.get::<Vec<u8>>(&seeds), &muts)
            }
        });
    prop_oneof![
        6 => mutated,
        1 => proptest::collection::vec(any::<u8>(), 0..2048),
    ]
    .prop_map(Bytes)
}

/// Several dataset or prediction rows joined as JSON Lines, then mutated.
fn jsonl_from(rows: &[String]) -> impl Strategy<Value = Bytes> {
    let rows = rows.to_vec();
    let docs = (proptest::collection::vec(any::<Index>(), 1..5)).prop_map(move |picks| {
        picks
            .iter()
            .map(|i| i.get(rows.as_slice()).as_str())
            .collect::<Vec<_>>()
            .join("\n")
            .into_bytes()
    });
    (docs, proptest::collection::vec(mutation(), 0..6))
        .prop_map(|(doc, muts)| Bytes(apply_mutations(&doc, &muts)))
}

/// Input bytes; printed as escaped text (at most 2,000 characters) when a case fails, rather
/// than one number per line.
#[derive(Clone)]
struct Bytes(Vec<u8>);

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = String::from_utf8_lossy(&self.0);
        let shown: String = text.chars().take(2000).collect();
        write!(f, "{} bytes: \"{}\"", self.0.len(), shown.escape_debug())
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

// ---------------------------------------------------------------------------------------
// Checks shared by the loaders.

fn line_count(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&c| c == b'\n').count() + 1
}

/// A loader's answer for a file that exists: never an I/O error; every problem and a refusal
/// name this file, with a line within the file for the line-based formats.
fn check_loaded<T>(
    path: &Path,
    bytes: &[u8],
    res: &Result<Loaded<T>, LoadError>,
    has_lines: bool,
) -> Result<(), TestCaseError> {
    let lines = line_count(bytes);
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let check = |p: &dataset::InputProblem| -> Result<(), TestCaseError> {
        prop_assert_eq!(&p.location.path, path, "problem names another file: {}", p);
        prop_assert!(!p.message.trim().is_empty(), "empty message: {:?}", p);
        prop_assert!(
            p.to_string().contains(&name),
            "message does not name the file: {}",
            p
        );
        if has_lines {
            let line = p.location.line;
            // A file that yields nothing and no other problem is named as a whole.
            let whole_file = line.is_none() && p.message.starts_with("no rows");
            prop_assert!(
                whole_file || line.is_some_and(|l| l >= 1 && l <= lines),
                "line {:?} outside 1..={}: {}",
                line,
                lines,
                p
            );
        }
        Ok(())
    };
    match res {
        Ok(l) => l.problems.iter().try_for_each(check),
        Err(LoadError::Invalid(p)) => check(p),
        Err(e @ (LoadError::Io { .. } | LoadError::Fetch(_))) => Err(TestCaseError::fail(format!(
            "I/O or hub error on an existing file: {e}"
        ))),
    }
}

fn temp_file(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn load_dataset_bytes(name: &str, bytes: &[u8], has_lines: bool) -> Result<usize, TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_file(&dir, name, bytes);
    let p = path.clone();
    let res = bounded(name, move || dataset::load(&p));
    check_loaded(&path, bytes, &res, has_lines)?;
    if let Ok(l) = &res {
        let mut ids: Vec<_> = l.items.iter().map(|i| i.instance_id.as_str()).collect();
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        prop_assert_eq!(ids.len(), n, "duplicate instance ids kept");
        for inst in &l.items {
            prop_assert!(!inst.instance_id.is_empty() && !inst.repo.is_empty());
        }
    }
    Ok(res.map(|l| l.items.len()).unwrap_or(0))
}

fn load_predictions_bytes(name: &str, bytes: &[u8], has_lines: bool) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_file(&dir, name, bytes);
    let p = path.clone();
    let res = bounded(name, move || predictions::load(p.to_str().unwrap(), None));
    check_loaded(&path, bytes, &res, has_lines)?;
    if let Ok(l) = &res {
        let mut keys: Vec<_> = l
            .items
            .iter()
            .map(|p| (&p.instance_id, &p.model_name_or_path, p.sample))
            .collect();
        let n = keys.len();
        keys.sort_unstable();
        keys.dedup();
        prop_assert_eq!(
            keys.len(),
            n,
            "two predictions share (instance, model, sample)"
        );
    }
    Ok(())
}

fn row_seeds(rows: &[String]) -> Vec<Vec<u8>> {
    rows.iter().map(|r| r.clone().into_bytes()).collect()
}

// ---------------------------------------------------------------------------------------
// Targets.

proptest! {
    #![proptest_config(cases(600))]

    #[test]
    fn dataset_jsonl(bytes in jsonl_from(&SEEDS.dataset_rows)) {
        load_dataset_bytes("dataset.jsonl", &bytes, true)?;
    }

    #[test]
    fn dataset_json_documents(rows in proptest::collection::vec(any::<Index>(), 1..4), muts in proptest::collection::vec(mutation(), 0..6)) {
        let picked: Vec<Value> = rows.iter().filter_map(|i| serde_json::from_str(i.get::<String>(&SEEDS.dataset_rows)).ok()).collect();
        let doc = serde_json::to_string_pretty(&picked).unwrap();
        let bytes = apply_mutations(doc.as_bytes(), &muts);
        load_dataset_bytes("dataset.json", &bytes, true)?;
    }

    #[test]
    fn dataset_random_bytes_any_extension(bytes in input_from(row_seeds(&SEEDS.dataset_rows)), ext in prop::sample::select(vec!["jsonl", "json", "parquet", "txt", "ndjson"])) {
        // A `.parquet` name, or any file starting with PAR1, goes to the Parquet reader, which
        // has no lines to name.
        let has_lines = ext != "parquet" && !bytes.starts_with(b"PAR1");
        load_dataset_bytes(&format!("dataset.{ext}"), &bytes, has_lines)?;
    }

    #[test]
    fn predictions_jsonl(bytes in jsonl_from(&SEEDS.prediction_rows)) {
        load_predictions_bytes("preds.jsonl", &bytes, true)?;
    }

    #[test]
    fn predictions_documents_and_random_bytes(bytes in input_from(SEEDS.prediction_docs.iter().map(|d| d.clone().into_bytes()).collect())) {
        load_predictions_bytes("preds.json", &bytes, true)?;
    }
}

proptest! {
    #![proptest_config(cases(200))]

    #[test]
    fn dataset_parquet_bytes(muts in proptest::collection::vec(mutation(), 0..4), prefix in any::<bool>()) {
        let seed = SEEDS.parquet.clone().unwrap_or_else(|| b"PAR1\0\0\0\0PAR1".to_vec());
        let mut bytes = apply_mutations(&seed, &muts);
        if prefix && !bytes.starts_with(b"PAR1") {
            bytes.splice(0..0, *b"PAR1");
        }
        load_dataset_bytes("dataset.parquet", &bytes, false)?;
        // Sniffed by its magic bytes under another name.
        if bytes.starts_with(b"PAR1") {
            load_dataset_bytes("dataset.jsonl", &bytes, false)?;
        }
    }
}

/// The unified-diff parser, its per-file rendering, applying each file to an empty original,
/// and the reward against the first seed: no panic, errors inside the text, rewards in range.
fn check_diff(text: String, oracle: String) -> Result<(), TestCaseError> {
    let lines = text.split('\n').count() + 1;
    let t = text.clone();
    let parsed = bounded("unidiff::parse", move || {
        unidiff::parse(&t).map(|set| {
            let changes = reward::filelevel_diff(&set);
            let applied = set
                .files
                .iter()
                .filter(|f| reward::apply_file("", f).is_ok())
                .count();
            let paths: Vec<String> = set.files.iter().map(|f| f.path().to_string()).collect();
            (changes.len(), applied, paths)
        })
    });
    if let Err(e) = &parsed {
        prop_assert!(
            e.line >= 1 && e.line <= lines,
            "error line {} outside 1..={}: {}",
            e.line,
            lines,
            e
        );
        prop_assert!(e.to_string().starts_with("line "), "{}", e);
    }
    let r = bounded("reward::unidiff_reward", move || {
        reward::unidiff_reward(&oracle, &text)
    });
    prop_assert!(
        r.similarity.is_finite() && (0.0..=1.0).contains(&r.similarity),
        "similarity {}",
        r.similarity
    );
    prop_assert!(
        r.reward == -1.0 || (r.format.is_ok() && r.reward == r.similarity),
        "reward {} format {:?}",
        r.reward,
        r.format
    );
    for f in &r.files {
        prop_assert!((0.0..=1.0).contains(&f.similarity) && (f.in_pred || f.in_oracle));
    }
    Ok(())
}

proptest! {
    #![proptest_config(cases(600))]

    #[test]
    fn unified_diffs(bytes in input_from(SEEDS.patches.iter().map(|p| p.clone().into_bytes()).collect())) {
        check_diff(lossy(&bytes), SEEDS.patches[0].clone())?;
    }

    #[test]
    fn unified_diffs_as_oracle(bytes in input_from(SEEDS.patches.iter().map(|p| p.clone().into_bytes()).collect())) {
        // The gold side is outside input too (a dataset row).
        let r = { let t = lossy(&bytes); let p = SEEDS.patches[1 % SEEDS.patches.len()].clone(); bounded("unidiff_reward(oracle)", move || reward::unidiff_reward(&t, &p)) };
        prop_assert!((0.0..=1.0).contains(&r.similarity));
    }
}

/// Builds a search/replace output from parts, so the parser's branches are reached.
fn search_replace_output() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("<think>".to_string()),
        Just("</think>".to_string()),
        Just("<solution>".to_string()),
        Just("</solution>".to_string()),
        Just("```python\n### pkg/a.py\n".to_string()),
        Just("```\n### ../../etc/passwd\n".to_string()),
        Just("<<<<<<< SEARCH\n".to_string()),
        Just("\n=======\n".to_string()),
        Just("\n>>>>>>> REPLACE\n```".to_string()),
        Just("def f(x):\n    return x + 1\n".to_string()),
        Just("    pass\n".to_string()),
        Just("\n".to_string()),
        "[ -~\n]{0,40}".prop_map(|s| s),
    ];
    proptest::collection::vec(piece, 0..30).prop_map(|v| v.concat())
}

fn check_search_replace(code: Files, oracle: Files, output: String) -> Result<(), TestCaseError> {
    let (c, o, out) = (code.clone(), oracle, output.clone());
    let r = bounded("search_replace_reward", move || {
        reward::search_replace_reward(&c, &o, &out)
    });
    prop_assert!(
        r.reward == -1.0 || (0.0..=1.0).contains(&r.reward),
        "reward {}",
        r.reward
    );
    prop_assert_eq!(r.reward == -1.0, !r.format.is_ok() || r.similarity == -1.0);
    let patch = bounded("to_git_patch", move || reward::to_git_patch(&code, &output));
    if let Ok(p) = patch {
        // What the harness would execute must be a diff its own parser reads.
        if !p.is_empty() {
            prop_assert!(
                unidiff::parse(&p).is_ok(),
                "generated patch does not parse:\n{}",
                p
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(cases(500))]

    #[test]
    fn search_replace_built(output in search_replace_output(), pick in any::<Index>()) {
        let (code, oracle, _) = pick.get(SEEDS.search_replace.as_slice()).clone();
        check_search_replace(code, oracle, output)?;
    }

    #[test]
    fn search_replace_mutated(pick in any::<Index>(), muts in proptest::collection::vec(mutation(), 0..6)) {
        let (code, oracle, output) = pick.get(SEEDS.search_replace.as_slice()).clone();
        let output = lossy(&apply_mutations(output.as_bytes(), &muts));
        check_search_replace(code, oracle, output)?;
    }
}

/// Every parser name on one log, bare and as the official harness reads a whole log.
fn check_log(log: String) -> Result<(), TestCaseError> {
    let n = log.lines().count();
    bounded("logparse (every name)", move || -> Result<(), String> {
        for name in PARSER_NAMES {
            let map = logparse::parse(name, &log).map_err(|e| e.to_string())?;
            if map.len() > n + 1 {
                return Err(format!("{name}: {} statuses from {n} lines", map.len()));
            }
            logparse::parse_test_log(name, &log).map_err(|e| e.to_string())?;
        }
        let _ = (
            logparse::test_section(&log),
            logparse::test_exit_code(&log),
            logparse::bad_marker(&log),
        );
        Ok(())
    })
    .map_err(TestCaseError::fail)
}

/// Grading of a log for an instance of the mini benchmark, with the patch given.
fn check_grade(
    log: String,
    patch: String,
    exit_code: Option<i32>,
    pick: Index,
) -> Result<(), TestCaseError> {
    let inst = {
        static MINI: LazyLock<Vec<dataset::Instance>> = LazyLock::new(|| {
            mini::DATASET
                .lines()
                .filter_map(|l| dataset::instance_from_value(serde_json::from_str(l).ok()?).ok())
                .collect()
        });
        pick.get(MINI.as_slice()).clone()
    };
    let v = bounded("grading::grade", move || {
        let outcome = RunOutcome::Completed {
            log: &log,
            exit_code,
        };
        let input = GradeInput::for_instance(&inst, Some(&patch), outcome);
        let _ = grading::collection_files(&patch);
        grading::grade(&input)
    });
    let v = v.map_err(|e| TestCaseError::fail(format!("grade refused a known parser: {e}")))?;
    if v.category.is_resolved() {
        prop_assert!(v.tests.is_some(), "resolved without test groups");
    }
    if v.strict_category.is_resolved() {
        prop_assert!(
            v.category.is_resolved(),
            "strict resolves what official does not"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(cases(300))]

    #[test]
    fn logs_every_parser(bytes in input_from(SEEDS.logs.iter().map(|(_, l)| l.clone().into_bytes()).collect())) {
        check_log(lossy(&bytes))?;
    }

    #[test]
    fn grading(bytes in input_from(SEEDS.logs.iter().map(|(_, l)| l.clone().into_bytes()).collect()),
               patch in input_from(SEEDS.patches.iter().map(|p| p.clone().into_bytes()).collect()),
               exit_code in proptest::option::of(-1i32..300), pick in any::<Index>()) {
        check_grade(lossy(&bytes), lossy(&patch), exit_code, pick)?;
    }

    #[test]
    fn saved_logs_jsonl(bytes in input_from(SEEDS.logs.iter().take(4).map(|(_, l)| serde_json::json!({"instance_id": "x__y-1", "test_output": l}).to_string().into_bytes()).collect())) {
        let dir = tempfile::tempdir().unwrap();
        let path = temp_file(&dir, "logs.jsonl", &bytes);
        let p = path.clone();
        if let Err(e) = bounded("SavedLogs::open", move || SavedLogs::open(&p)) {
            prop_assert!(e.to_string().contains("logs.jsonl"), "error does not name the file: {}", e);
        }
    }

    #[test]
    fn instance_report(bytes in input_from(vec![br#"{"x__y-1": {"patch_is_None": false, "patch_exists": true, "patch_successfully_applied": true, "resolved": true, "tests_status": {"FAIL_TO_PASS": {"success": ["a"], "failure": []}, "PASS_TO_PASS": {"success": [], "failure": []}, "FAIL_TO_FAIL": {"success": [], "failure": []}, "PASS_TO_FAIL": {"success": [], "failure": []}}}}"#.to_vec()])) {
        let dir = tempfile::tempdir().unwrap();
        let path = temp_file(&dir, "report.json", &bytes);
        let p = path.clone();
        if let Err(e) = bounded("read_instance_report", move || report::read_instance_report(&p)) {
            prop_assert!(e.to_string().contains("report.json"), "error does not name the file: {}", e);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Extremes, each once: sizes and shapes random generation rarely reaches.

fn nested(depth: usize) -> String {
    "[".repeat(depth) + &"]".repeat(depth)
}

#[test]
fn extremes_loaders() {
    let huge = "x".repeat(8 << 20);
    let row = |extra: &str| format!("{{\"instance_id\":\"a__b-1\",\"repo\":\"a/b\"{extra}}}");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("deep list", nested(200_000).into_bytes()),
        (
            "deep field",
            row(&format!(",\"FAIL_TO_PASS\":{}", nested(100_000))).into_bytes(),
        ),
        (
            "deep objects",
            ("{\"a\":".repeat(50_000) + "1" + &"}".repeat(50_000)).into_bytes(),
        ),
        (
            "8 MiB string field",
            row(&format!(",\"patch\":\"{huge}\"")).into_bytes(),
        ),
        ("8 MiB garbage line", huge.clone().into_bytes()),
        ("200k empty lines", "\n".repeat(200_000).into_bytes()),
        ("200k bad lines", "{\n".repeat(200_000).into_bytes()),
        (
            "invalid UTF-8 in a row",
            [row(",\"patch\":\"").as_bytes(), b"\xff\xfe\xc3", b"\"}"].concat(),
        ),
        (
            "lone surrogate escape",
            row(",\"patch\":\"\\ud800\"").into_bytes(),
        ),
        (
            "BOM then rows",
            [b"\xef\xbb\xbf".as_slice(), row("").as_bytes()].concat(),
        ),
        ("NUL bytes", vec![0u8; 4096]),
        (
            "number overflow",
            row(",\"version\":1e999999,\"sample\":18446744073709551616").into_bytes(),
        ),
        ("empty file", Vec::new()),
    ];
    for (what, bytes) in cases {
        for name in ["d.jsonl", "d.json"] {
            load_dataset_bytes(name, &bytes, true)
                .unwrap_or_else(|e| panic!("{what} as {name}: {e}"));
            load_predictions_bytes(name, &bytes, true)
                .unwrap_or_else(|e| panic!("{what} as {name}: {e}"));
        }
    }
    eprintln!(
        "fuzz: {} inputs so far (this binary)",
        INPUTS.load(Ordering::Relaxed)
    );
}

#[test]
fn extremes_diffs_logs_and_rewards() {
    let long = "y".repeat(4 << 20);
    let diffs = [
        "--- a/x\n+++ b/x\n@@ -1,99999999999999999999 +1,99999999999999999999 @@\n-a\n+b\n".to_string(),
        "--- a/x\n+++ b/x\n@@ -18446744073709551615,18446744073709551615 +18446744073709551615,1 @@\n-a\n+b\n".to_string(),
        "--- a/x\n+++ b/x\n@@ -1,4294967296 +1 @@\n".to_string() + &" a\n".repeat(1000),
        format!("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-{long}\n+{long}x\n"),
        format!("--- a/{long}\n+++ b/{long}\n@@ -1 +1 @@\n-a\n+b\n"),
        "--- a/x\n+++ b/x\n".repeat(50_000),
        "diff --git a/x b/x\n".repeat(50_000),
        "--- a/x\n+++ b/x\n@@ -1,100000 +1,100000 @@\n".to_string() + &" same\n".repeat(100_000),
        "+++ b/x\n@@ -1 +1 @@\n-a\n+b\n".to_string(),
        "GIT binary patch\nliteral 0\n".to_string(),
        "--- a/../../etc/passwd\n+++ b/../../etc/passwd\n@@ -1 +1 @@\n-root\n+evil\n".to_string(),
        "\r\n".repeat(100_000),
    ];
    for d in diffs {
        check_diff(d.clone(), SEEDS.patches[0].clone()).unwrap();
        check_diff(SEEDS.patches[0].clone(), d).unwrap();
    }
    // Every log goes through all 20 parser names twice, so sizes are a quarter of the diffs'.
    let line = &long[..1 << 20];
    let logs = [
        format!(">>>>> Start Test Output\nPASSED {line}\n>>>>> End Test Output\n"),
        "PASSED a::b\n".repeat(50_000),
        "test_x (m.T) ... ok\n".repeat(25_000),
        format!("{}\n", "[".repeat(1 << 18)),
        ">>>>> Start Test Output\n".repeat(10_000),
        "\u{FFFD}".repeat(1 << 18),
    ];
    for log in logs {
        check_log(log).unwrap();
    }
}

/// The search/replace reward replaces every occurrence, as the reference does; an output whose
/// replacement holds its own search text must not make it hang or exhaust memory on a few
/// blocks. Eight doubling blocks stay small (256 times the file); this pins that they finish.
#[test]
fn extremes_search_replace() {
    let (code, oracle, _) = own_search_replace_seed();
    let block = "```python\n### pkg/a.py\n<<<<<<< SEARCH\n    pass\n=======\n    pass\n    pass\n>>>>>>> REPLACE\n```\n";
    let output = format!(
        "<think>\nx\n</think>\n<solution>\n{}</solution>\n",
        block.repeat(8)
    );
    check_search_replace(code.clone(), oracle.clone(), output).unwrap();
    let many = format!(
        "<think>\nx\n</think>\n<solution>\n{}</solution>\n",
        "```python\n### pkg/a.py\n<<<<<<< SEARCH\nnot there\n=======\nx\n>>>>>>> REPLACE\n```\n"
            .repeat(20_000)
    );
    check_search_replace(code, oracle, many).unwrap();
}

/// The Parquet seed is a real dataset file: its mutations start from something the loader reads.
#[test]
fn parquet_seed_loads() {
    let Some(bytes) = SEEDS.parquet.clone() else {
        panic!("tests/fixtures/hostile/mini.parquet is missing (scripts/faults_parquet_seed.sh)");
    };
    let dir = tempfile::tempdir().unwrap();
    let path = temp_file(&dir, "mini.parquet", &bytes);
    let loaded = dataset::load(&path).unwrap();
    assert_eq!(loaded.items.len(), 8, "{:?}", loaded.problems);
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
}

/// A mutation of the Parquet seed (three edits, found at 100x the CI case count) on which the
/// parquet crate's decoder reads past the end of the file ten thousand times a second for
/// hours. The loader's read budget ends it at once, as a problem naming the file and row.
#[test]
fn parquet_decoder_loop_is_cut_short() {
    let path = fixtures().join("hostile/parquet-decoder-loop.parquet");
    let p = path.clone();
    let t0 = std::time::Instant::now();
    let loaded = bounded("parquet decoder loop", move || dataset::load(&p)).unwrap();
    let took = t0.elapsed();
    assert!(loaded.items.is_empty(), "{:?}", loaded.items.len());
    assert_eq!(loaded.problems.len(), 1, "{:?}", loaded.problems);
    let problem = loaded.problems[0].to_string();
    assert!(
        problem.contains("parquet-decoder-loop.parquet:1")
            && problem.contains("kept reading far past what the file holds"),
        "{problem}"
    );
    eprintln!("cut short after {took:.2?}");
}
