//! SWE-bench dataset rows and their loaders.
//!
//! Rows come as a JSON list, JSON Lines, or Parquet (as Hugging Face ships SWE-bench Verified).
//! `FAIL_TO_PASS`/`PASS_TO_PASS` may be JSON-encoded strings (Hugging Face) or plain lists.
//! Fields this crate does not know are kept in `extra`, so nothing a newer dataset carries is
//! lost when rows are written back out. A malformed row is reported with its file, line and
//! field and the other rows still load.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

pub mod hub;
mod parquet_rows;

/// One SWE-bench task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Instance {
    /// The task's id, `<owner>__<name>-<number>`.
    pub instance_id: String,
    /// The repository, `owner/name`.
    pub repo: String,
    /// The commit the task starts from.
    #[serde(default, deserialize_with = "null_as_default")]
    pub base_commit: String,
    /// The gold patch (the merged human change, without its tests).
    #[serde(default, deserialize_with = "null_as_default")]
    pub patch: String,
    /// The patch that adds or changes the tests that decide the task.
    #[serde(default)]
    pub test_patch: Option<String>,
    /// The issue text the model was given.
    #[serde(default)]
    pub problem_statement: Option<String>,
    /// The comments before the fix, as the dataset has them.
    #[serde(default)]
    pub hints_text: Option<String>,
    /// When the fix was created.
    #[serde(default)]
    pub created_at: Option<String>,
    /// Key into the per-repository specifications.
    #[serde(default, deserialize_with = "string_or_number")]
    pub version: Option<String>,
    /// The commit the environment is installed from.
    #[serde(default)]
    pub environment_setup_commit: Option<String>,
    /// Tests the fix must make pass (`FAIL_TO_PASS`).
    #[serde(rename = "FAIL_TO_PASS", default, deserialize_with = "test_list")]
    pub fail_to_pass: Option<Vec<String>>,
    /// Tests that must keep passing (`PASS_TO_PASS`).
    #[serde(rename = "PASS_TO_PASS", default, deserialize_with = "test_list")]
    pub pass_to_pass: Option<Vec<String>>,
    /// Verified's difficulty bucket, e.g. "<15 min fix".
    #[serde(default)]
    pub difficulty: Option<String>,
    /// The official prebuilt image of this instance, where the dataset names one.
    #[serde(default)]
    pub docker_image: Option<String>,
    /// SWE-bench 5 rows: the image to run in, as is (nothing is built).
    #[serde(default)]
    pub image: Option<String>,
    /// SWE-bench 5 rows: the eval script to run, as is.
    #[serde(default)]
    pub eval_script: Option<String>,
    /// SWE-bench 5 rows: the named log parser (`parse_log_pytest`, ...).
    #[serde(default)]
    pub log_parser: Option<String>,
    /// Everything else the row carried, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
    /// True when the row had a `patch` field at all (`null` counts): a reward needs the gold
    /// patch, and an absent field must not pass for an empty one.
    #[serde(skip)]
    pub has_patch_field: bool,
}

impl Instance {
    /// The owner-less repository name, e.g. `django` for `django/django`.
    pub fn repo_name(&self) -> &str {
        self.repo.rsplit('/').next().unwrap_or(&self.repo)
    }

    /// The `FAIL_TO_PASS` tests, empty when the row has none.
    pub fn fail_to_pass(&self) -> &[String] {
        self.fail_to_pass.as_deref().unwrap_or(&[])
    }

    /// The `PASS_TO_PASS` tests, empty when the row has none.
    pub fn pass_to_pass(&self) -> &[String] {
        self.pass_to_pass.as_deref().unwrap_or(&[])
    }
}

fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

fn string_or_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(other) => Err(serde::de::Error::custom(format!(
            "expected a string or a number, found {other}"
        ))),
    }
}

/// A test list: a JSON list of strings, or a string holding one (Hugging Face's encoding).
fn test_list<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => {
            if s.trim().is_empty() {
                return Ok(Some(Vec::new()));
            }
            serde_json::from_str::<Vec<String>>(&s)
                .map(Some)
                .map_err(|e| {
                    serde::de::Error::custom(format!("a JSON-encoded list of test names: {e}"))
                })
        }
        Some(v @ Value::Array(_)) => serde_json::from_value::<Vec<String>>(v)
            .map(Some)
            .map_err(|e| serde::de::Error::custom(format!("a list of test names: {e}"))),
        Some(other) => Err(serde::de::Error::custom(format!(
            "expected a list of test names, found {other}"
        ))),
    }
}

/// Where in an input file a problem is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file.
    pub path: PathBuf,
    /// 1-based line for JSON Lines and JSON; row number (1-based) for Parquet.
    pub line: Option<usize>,
    /// The field at fault, when one can be named.
    pub field: Option<String>,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        Ok(())
    }
}

/// A problem with one row (the other rows still load) or with a whole file.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{location}: {message}")]
pub struct InputProblem {
    /// Where the problem is.
    pub location: Location,
    /// What is wrong there.
    pub message: String,
}

/// A file that could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not in a readable format at all.
    #[error("{0}")]
    Invalid(InputProblem),
    /// A Hugging Face dataset name whose split could not be had.
    #[error(transparent)]
    Hub(#[from] hub::HubError),
}

/// What a loader produced: the rows that loaded, and the problems of those that did not.
#[derive(Debug, Clone)]
pub struct Loaded<T> {
    /// The rows that loaded.
    pub items: Vec<T>,
    /// The rows that did not, and why.
    pub problems: Vec<InputProblem>,
}

impl<T> Default for Loaded<T> {
    fn default() -> Self {
        Loaded {
            items: Vec::new(),
            problems: Vec::new(),
        }
    }
}

/// The dataset, indexed by instance id.
#[derive(Debug, Clone, Default)]
pub struct Dataset {
    /// The instances in file order.
    pub instances: Vec<Instance>,
    index: HashMap<String, usize>,
}

impl Dataset {
    /// The dataset of these instances (the last of a repeated id wins the index).
    pub fn new(instances: Vec<Instance>) -> Self {
        let index = instances
            .iter()
            .enumerate()
            .map(|(i, inst)| (inst.instance_id.clone(), i))
            .collect();
        Dataset { instances, index }
    }

    /// The instance with this id.
    pub fn get(&self, instance_id: &str) -> Option<&Instance> {
        self.index.get(instance_id).map(|&i| &self.instances[i])
    }

    /// How many instances.
    pub fn len(&self) -> usize {
        self.instances.len()
    }

    /// True without instances.
    pub fn is_empty(&self) -> bool {
        self.instances.is_empty()
    }
}

/// Loads a dataset file (`.json`, `.jsonl`/`.ndjson`, or `.parquet`), decided by extension
/// and, failing that, by the first non-blank byte. Duplicate instance ids are problems; the
/// first row wins.
pub fn load(path: &Path) -> Result<Loaded<Instance>, LoadError> {
    load_checked(path, false)
}

/// Loads a dataset whose gold patches are needed (`reward`): a row without a `patch` field is
/// a problem naming file, line and field, not an empty gold patch.
pub fn load_with_gold(path: &Path) -> Result<(Dataset, Vec<InputProblem>), LoadError> {
    let loaded = load_checked(path, true)?;
    Ok((Dataset::new(loaded.items), loaded.problems))
}

fn load_checked(path: &Path, need_patch: bool) -> Result<Loaded<Instance>, LoadError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let mut loaded = if ext.as_deref() == Some("parquet") {
        parquet_rows::load(path)?
    } else {
        let bytes = std::fs::read(path).map_err(|source| LoadError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        if bytes.starts_with(b"PAR1") {
            parquet_rows::load(path)?
        } else {
            load_json_rows(path, &bytes)?
        }
    };
    let mut seen = HashMap::new();
    let mut kept = Vec::with_capacity(loaded.items.len());
    for (inst, line) in loaded.items.drain(..) {
        if need_patch && !inst.has_patch_field {
            loaded.problems.push(InputProblem {
                location: Location {
                    path: path.to_path_buf(),
                    line,
                    field: Some("patch".into()),
                },
                message: "missing (a required field here: rewards compare with the gold \
                          patch; use null or \"\" for none)"
                    .into(),
            });
            continue;
        }
        if let Some(first) = seen.get(&inst.instance_id) {
            loaded.problems.push(InputProblem {
                location: Location {
                    path: path.to_path_buf(),
                    line,
                    field: Some("instance_id".into()),
                },
                message: format!(
                    "duplicate instance id {} (first at row {first}); this row is ignored",
                    inst.instance_id
                ),
            });
            continue;
        }
        seen.insert(inst.instance_id.clone(), line.unwrap_or(0));
        kept.push(inst);
    }
    if kept.is_empty() && loaded.problems.is_empty() {
        loaded.problems.push(no_rows(path));
    }
    Ok(Loaded {
        items: kept,
        problems: loaded.problems,
    })
}

/// The problem of a file that yields no rows at all and no other problem that would say why
/// (an empty file, `[]`, `{}`).
pub fn no_rows(path: &Path) -> InputProblem {
    InputProblem {
        location: Location {
            path: path.to_path_buf(),
            line: None,
            field: None,
        },
        message: "no rows: the file yields nothing to work on".into(),
    }
}

/// Loads a dataset and indexes it; problems are returned beside it.
pub fn load_dataset(path: &Path) -> Result<(Dataset, Vec<InputProblem>), LoadError> {
    let loaded = load(path)?;
    Ok((Dataset::new(loaded.items), loaded.problems))
}

/// Loads `--dataset` as the commands take it: a file, or else a Hugging Face dataset name
/// (`SWE-bench/SWE-bench_Verified`) whose `split` is fetched once into the Hugging Face cache
/// ([`hub`], settings from the environment) and read as Parquet. A split in several files is
/// read in file order, a duplicate id in a later file being a problem like one within a file.
pub fn load_dataset_split(
    arg: &Path,
    split: &str,
) -> Result<(Dataset, Vec<InputProblem>), LoadError> {
    let name = arg.to_string_lossy();
    if arg.exists() || !hub::is_repo_id(&name) {
        return load_dataset(arg);
    }
    let files = hub::fetch_split(&hub::HubConfig::from_env(), &name, split)?;
    let mut items: Vec<Instance> = Vec::new();
    let mut problems = Vec::new();
    let mut first: HashMap<String, PathBuf> = HashMap::new();
    for file in &files {
        let loaded = load(file)?;
        problems.extend(loaded.problems);
        for inst in loaded.items {
            if let Some(prev) = first.get(&inst.instance_id) {
                problems.push(InputProblem {
                    location: Location {
                        path: file.clone(),
                        line: None,
                        field: Some("instance_id".into()),
                    },
                    message: format!(
                        "duplicate instance id {} (first in {}); this row is ignored",
                        inst.instance_id,
                        prev.display()
                    ),
                });
                continue;
            }
            first.insert(inst.instance_id.clone(), file.clone());
            items.push(inst);
        }
    }
    Ok((Dataset::new(items), problems))
}

/// Rows with the line they came from.
type Located<T> = Loaded<(T, Option<usize>)>;

fn load_json_rows(path: &Path, bytes: &[u8]) -> Result<Located<Instance>, LoadError> {
    let values = json_values(path, bytes)?;
    let mut out = Located::default();
    for (value, line) in values.items {
        match instance_from_value(value) {
            Ok(inst) => out.items.push((inst, line)),
            Err((field, message)) => out.problems.push(InputProblem {
                location: Location {
                    path: path.to_path_buf(),
                    line,
                    field,
                },
                message,
            }),
        }
    }
    out.problems.extend(values.problems);
    out.problems.sort_by_key(|p| p.location.line);
    Ok(out)
}

/// Turns one JSON value into an instance, naming the field at fault when it fails.
pub fn instance_from_value(value: Value) -> Result<Instance, (Option<String>, String)> {
    let Value::Object(map) = value else {
        return Err((
            None,
            format!("expected an object, found {}", kind_of(&value)),
        ));
    };
    for required in ["instance_id", "repo"] {
        match map.get(required) {
            Some(Value::String(s)) if !s.is_empty() => {}
            Some(other) => {
                return Err((
                    Some(required.into()),
                    format!("expected a non-empty string, found {}", kind_of(other)),
                ))
            }
            None => return Err((Some(required.into()), "missing".into())),
        }
    }
    // Ids name folders (`<output>/<instance_id>/`): one safe path component.
    if let Some(Value::String(id)) = map.get("instance_id") {
        crate::paths::check_component("instance_id", id)
            .map_err(|e| (Some("instance_id".to_string()), e.to_string()))?;
    }
    let has_patch_field = map.contains_key("patch");
    // Deserialize field by field on failure so the message can name the field.
    match serde_json::from_value::<Instance>(Value::Object(map.clone())) {
        Ok(inst) => Ok(Instance {
            has_patch_field,
            ..inst
        }),
        Err(e) => {
            for (key, v) in &map {
                let mut single = Map::new();
                single.insert("instance_id".into(), Value::String("x".into()));
                single.insert("repo".into(), Value::String("x".into()));
                single.insert(key.clone(), v.clone());
                if let Err(fe) = serde_json::from_value::<Instance>(Value::Object(single)) {
                    return Err((Some(key.clone()), fe.to_string()));
                }
            }
            Err((None, e.to_string()))
        }
    }
}

pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Splits a JSON or JSON Lines file into values with their 1-based line numbers. A JSON
/// document whose top level is a list yields its elements (line = where each starts); an
/// object keyed by id yields its values with the key injected as `instance_id` if absent.
/// Invalid UTF-8 is replaced (U+FFFD) rather than refused, so one bad byte costs nothing else.
pub(crate) fn json_values(path: &Path, bytes: &[u8]) -> Result<Located<Value>, LoadError> {
    let text = String::from_utf8_lossy(bytes);
    let trimmed = text.trim_start_matches('\u{feff}');
    let first = trimmed.trim_start().chars().next();
    let mut out = Located::default();
    let whole_doc = matches!(first, Some('[')) || {
        // `{` may start a JSON object document or the first line of JSON Lines.
        matches!(first, Some('{')) && serde_json::from_str::<Value>(trimmed).is_ok() && {
            // A single-line JSON Lines file parses as one object too; it is a document keyed
            // by id only if every value is an object and it has no `instance_id` of its own.
            let v: Value = serde_json::from_str(trimmed).unwrap_or(Value::Null);
            v.as_object()
                .is_some_and(|m| !m.contains_key("instance_id") && m.values().all(Value::is_object))
        }
    };
    if whole_doc {
        let value: Value = serde_json::from_str(trimmed).map_err(|e| {
            LoadError::Invalid(InputProblem {
                location: Location {
                    path: path.to_path_buf(),
                    line: Some(e.line()),
                    field: None,
                },
                message: format!("invalid JSON: {e}"),
            })
        })?;
        let starts = element_start_lines(trimmed);
        match value {
            Value::Array(items) => {
                for (i, item) in items.into_iter().enumerate() {
                    out.items.push((item, starts.get(i).copied()));
                }
            }
            Value::Object(map) => {
                for (i, (key, mut item)) in map.into_iter().enumerate() {
                    if let Value::Object(obj) = &mut item {
                        obj.entry("instance_id").or_insert(Value::String(key));
                    }
                    out.items.push((item, starts.get(i).copied()));
                }
            }
            other => {
                return Err(LoadError::Invalid(InputProblem {
                    location: Location {
                        path: path.to_path_buf(),
                        line: Some(1),
                        field: None,
                    },
                    message: format!(
                        "expected a list of rows or an object keyed by instance id, found {}",
                        kind_of(&other)
                    ),
                }))
            }
        }
        return Ok(out);
    }
    for (i, line) in trimmed.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(v) => out.items.push((v, Some(i + 1))),
            Err(e) => out.problems.push(InputProblem {
                location: Location {
                    path: path.to_path_buf(),
                    line: Some(i + 1),
                    field: None,
                },
                message: format!("invalid JSON at column {}: {e}", e.column()),
            }),
        }
    }
    Ok(out)
}

/// 1-based line numbers where each top-level element of a JSON list or object starts.
fn element_start_lines(text: &str) -> Vec<usize> {
    let mut lines = Vec::new();
    let (mut depth, mut in_str, mut escaped, mut line) = (0usize, false, false, 1usize);
    let mut expecting = false;
    for c in text.chars() {
        if c == '\n' {
            line += 1;
        }
        if in_str {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
            continue;
        }
        if expecting && !c.is_whitespace() && c != ']' && c != '}' {
            lines.push(line);
            expecting = false;
        }
        match c {
            '"' => in_str = true,
            '[' | '{' => {
                depth += 1;
                if depth == 1 {
                    expecting = true;
                }
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            ',' if depth == 1 => expecting = true,
            _ => {}
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn jsonl_with_string_encoded_lists_and_extra_fields() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "d.jsonl",
            "{\"instance_id\":\"a__b-1\",\"repo\":\"a/b\",\"base_commit\":\"c\",\"patch\":\"p\",\"FAIL_TO_PASS\":\"[\\\"t1\\\"]\",\"PASS_TO_PASS\":[\"t2\"],\"version\":3.0,\"new_field\":7}\n",
        );
        let loaded = load(&p).unwrap();
        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
        let inst = &loaded.items[0];
        assert_eq!(inst.fail_to_pass(), ["t1"]);
        assert_eq!(inst.pass_to_pass(), ["t2"]);
        assert_eq!(inst.version.as_deref(), Some("3.0"));
        assert_eq!(inst.extra.get("new_field"), Some(&Value::from(7)));
    }

    #[test]
    fn a_row_without_patch_or_with_an_unsafe_id_is_a_problem() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "d.jsonl",
            concat!(
                "{\"instance_id\":\"a__b-1\",\"repo\":\"a/b\"}\n",
                "{\"instance_id\":\"../../x\",\"repo\":\"a/b\",\"patch\":\"\"}\n",
                "{\"instance_id\":\"a__b-3\",\"repo\":\"a/b\",\"patch\":null}\n",
            ),
        );
        let loaded = load(&p).unwrap();
        assert_eq!(
            loaded.items.len(),
            2,
            "no patch is fine where none is needed"
        );
        assert_eq!(loaded.items[1].patch, "", "null is an empty patch");
        let found: Vec<_> = loaded
            .problems
            .iter()
            .map(|p| (p.location.line, p.location.field.as_deref()))
            .collect();
        assert_eq!(found, [(Some(2), Some("instance_id"))]);
        let (ds, problems) = load_with_gold(&p).unwrap();
        assert_eq!(ds.len(), 1);
        let found: Vec<_> = problems
            .iter()
            .map(|p| (p.location.line, p.location.field.as_deref()))
            .collect();
        assert_eq!(
            found,
            [(Some(2), Some("instance_id")), (Some(1), Some("patch"))]
        );
        let empty = write(&dir, "e.jsonl", "\n");
        let loaded = load(&empty).unwrap();
        assert!(loaded.problems[0].message.contains("no rows"));
    }

    #[test]
    fn json_list_and_bad_row_named_by_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "d.json",
            "[\n {\"instance_id\":\"a__b-1\",\"repo\":\"a/b\",\"patch\":\"\"},\n {\"instance_id\":\"a__b-2\",\"repo\":\"a/b\",\"patch\":null,\n  \"FAIL_TO_PASS\": 5}\n]\n",
        );
        let loaded = load(&p).unwrap();
        assert_eq!(loaded.items.len(), 1);
        assert_eq!(loaded.problems.len(), 1);
        let pr = &loaded.problems[0];
        assert_eq!(pr.location.line, Some(3));
        assert_eq!(pr.location.field.as_deref(), Some("FAIL_TO_PASS"));
        assert!(
            pr.to_string().contains("d.json:3: field `FAIL_TO_PASS`"),
            "{pr}"
        );
    }

    #[test]
    fn malformed_jsonl_line_is_reported_and_others_load() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "d.jsonl",
            "{\"instance_id\":\"a__b-1\",\"repo\":\"a/b\",\"patch\":\"\"}\n{not json\n{\"instance_id\":\"a__b-2\"}\n",
        );
        let loaded = load(&p).unwrap();
        assert_eq!(loaded.items.len(), 1);
        assert_eq!(loaded.problems.len(), 2);
        assert_eq!(loaded.problems[0].location.line, Some(2));
        assert_eq!(loaded.problems[1].location.line, Some(3));
        assert_eq!(loaded.problems[1].location.field.as_deref(), Some("repo"));
    }

    #[test]
    fn duplicate_ids_keep_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "d.jsonl",
            "{\"instance_id\":\"x\",\"repo\":\"a/b\",\"patch\":\"1\"}\n{\"instance_id\":\"x\",\"repo\":\"a/b\",\"patch\":\"2\"}\n",
        );
        let loaded = load(&p).unwrap();
        assert_eq!(loaded.items.len(), 1);
        assert_eq!(loaded.items[0].patch, "1");
        assert_eq!(loaded.problems.len(), 1);
    }
}
