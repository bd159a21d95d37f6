//! Loading a dataset file ([`load`], [`load_dataset`]): the format decided by extension or
//! content, duplicate ids reported, the first row kept; the rows as a [`Dataset`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::instance::Instance;
use super::json_rows::load_json_rows;
use super::loaded::{InputProblem, LoadError, Loaded};
use super::parquet_rows;

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
            loaded.problems.push(InputProblem::new(
                path.to_path_buf(),
                line,
                Some("patch".into()),
                "missing (a required field here: rewards compare with the gold \
                          patch; use null or \"\" for none)",
            ));
            continue;
        }
        if let Some(first) = seen.get(&inst.instance_id) {
            loaded.problems.push(InputProblem::new(
                path.to_path_buf(),
                line,
                Some("instance_id".into()),
                format!(
                    "duplicate instance id {} (first at row {first}); this row is ignored",
                    inst.instance_id
                ),
            ));
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
    InputProblem::new(
        path.to_path_buf(),
        None,
        None,
        "no rows: the file yields nothing to work on",
    )
}

/// Loads a dataset and indexes it; problems are returned beside it.
pub fn load_dataset(path: &Path) -> Result<(Dataset, Vec<InputProblem>), LoadError> {
    let loaded = load(path)?;
    Ok((Dataset::new(loaded.items), loaded.problems))
}

/// Loads a dataset kept in several files (a split of a Hugging Face dataset, as the hub keeps
/// it), read in file order; a duplicate id in a later file is a problem like one within a file.
pub fn load_dataset_files(files: &[PathBuf]) -> Result<(Dataset, Vec<InputProblem>), LoadError> {
    let mut items: Vec<Instance> = Vec::new();
    let mut problems = Vec::new();
    let mut first: HashMap<String, PathBuf> = HashMap::new();
    for file in files {
        let loaded = load(file)?;
        problems.extend(loaded.problems);
        for inst in loaded.items {
            if let Some(prev) = first.get(&inst.instance_id) {
                problems.push(InputProblem::new(
                    file.clone(),
                    None,
                    Some("instance_id".into()),
                    format!(
                        "duplicate instance id {} (first in {}); this row is ignored",
                        inst.instance_id,
                        prev.display()
                    ),
                ));
                continue;
            }
            first.insert(inst.instance_id.clone(), file.clone());
            items.push(inst);
        }
    }
    Ok((Dataset::new(items), problems))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

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
