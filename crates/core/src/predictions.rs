//! Predictions as the SWE-bench ecosystem writes them, and their samples.
//!
//! Accepted: JSON Lines; a JSON list; a JSON object keyed by instance id; or the word `gold`
//! (the dataset's own patches, model name `gold`). Several predictions for one instance and
//! model are samples, numbered 0, 1, ... in file order unless a `sample` field says otherwise.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::dataset::{json_values, kind_of, Dataset, InputProblem, LoadError, Loaded, RowError};

/// One model output for one instance.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// The instance the patch is for.
    pub instance_id: String,
    /// The model that wrote it.
    pub model_name_or_path: String,
    /// `None` when the file had `null` or no patch at all.
    pub model_patch: Option<String>,
    /// Sample number within (instance, model).
    pub sample: u32,
    /// Where it came from: 1-based line (JSONL, JSON) or position (gold), for messages.
    pub line: Option<usize>,
    /// Every other field of the input row, kept verbatim.
    pub extra: Map<String, Value>,
}

impl Prediction {
    /// The patch text, `""` when there is none.
    pub fn patch(&self) -> &str {
        self.model_patch.as_deref().unwrap_or("")
    }

    /// True when there is nothing to apply (the official harness's `empty_patch`).
    pub fn is_empty_patch(&self) -> bool {
        self.patch().trim().is_empty()
    }

    /// SHA-256 of the patch text, hex: the key for resume and for sharing verdicts.
    pub fn patch_hash(&self) -> String {
        patch_hash(self.patch())
    }

    /// The model name as a file-system-safe folder name (as the official harness: `/` -> `__`).
    pub fn model_dir_name(&self) -> String {
        model_dir_name(&self.model_name_or_path)
    }
}

/// SHA-256 of a patch text, hex.
pub fn patch_hash(patch: &str) -> String {
    hex::encode(Sha256::digest(patch.as_bytes()))
}

/// A model name as one folder name (`/` becomes `__`, as officially).
pub fn model_dir_name(model: &str) -> String {
    model.replace('/', "__")
}

/// The name of sample `sample` of an instance in a run's layout (its log folder, and its key
/// in saved logs): the instance id for sample 0, `<instance_id>.sample<k>` for sample k > 0.
/// The one place that spells it; [`parse_sample_name`] reads it back.
pub fn sample_name(instance_id: &str, sample: u32) -> String {
    if sample == 0 {
        instance_id.to_string()
    } else {
        format!("{instance_id}.sample{sample}")
    }
}

/// The instance id and sample a name made by [`sample_name`] stands for; a name without a
/// `.sample<k>` suffix (digits only) is sample 0 of itself, and `None` as the sample means
/// digits too many for a sample number.
pub fn parse_sample_name(name: &str) -> (String, Option<u32>) {
    match name.rsplit_once(".sample") {
        Some((id, k)) if !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) => {
            (id.to_string(), k.parse().ok())
        }
        _ => (name.to_string(), Some(0)),
    }
}

/// The official run summary's file name of one model's sample in run `run_id`:
/// `<model>.<run_id>.json` for sample 0, `<model>.<run_id>.sample<k>.json` after.
pub fn summary_file_name(model: &str, run_id: &str, sample: u32) -> String {
    let model = model_dir_name(model);
    if sample == 0 {
        format!("{model}.{run_id}.json")
    } else {
        format!("{model}.{run_id}.sample{sample}.json")
    }
}

/// Loads predictions from `spec`: a path, or the word `gold` (which needs the dataset).
pub fn load(spec: &str, dataset: Option<&Dataset>) -> Result<Loaded<Prediction>, LoadError> {
    if spec == "gold" {
        let Some(ds) = dataset else {
            return Err(LoadError::Invalid(InputProblem::new(
                "gold",
                None,
                None,
                "`gold` predictions need a dataset",
            )));
        };
        return Ok(gold(ds));
    }
    load_path(Path::new(spec))
}

/// The dataset's own patches as predictions of the model `gold`.
pub fn gold(ds: &Dataset) -> Loaded<Prediction> {
    let items = ds
        .instances
        .iter()
        .enumerate()
        .map(|(i, inst)| Prediction {
            instance_id: inst.instance_id.clone(),
            model_name_or_path: "gold".into(),
            model_patch: Some(inst.patch.clone()),
            sample: 0,
            line: Some(i + 1),
            extra: Map::new(),
        })
        .collect();
    Loaded {
        items,
        problems: Vec::new(),
    }
}

/// Loads predictions from a file (JSON Lines, a JSON list or a JSON object keyed by instance id).
pub fn load_path(path: &Path) -> Result<Loaded<Prediction>, LoadError> {
    let bytes = std::fs::read(path).map_err(|source| LoadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    from_bytes(path, &bytes)
}

/// Parses predictions from bytes already read; `path` is used in messages only.
pub fn from_bytes(path: &Path, bytes: &[u8]) -> Result<Loaded<Prediction>, LoadError> {
    let values = json_values(path, bytes)?;
    let mut out = Loaded {
        items: Vec::new(),
        problems: values.problems,
    };
    for (value, line) in values.items {
        match prediction_from_value(value) {
            Ok((mut p, explicit_sample)) => {
                p.line = line;
                out.items.push((p, explicit_sample));
            }
            Err(e) => out.problems.push(e.at(path, line)),
        }
    }
    let items = number_samples(out.items, path, &mut out.problems);
    out.problems.sort_by_key(|p| p.location.line);
    if items.is_empty() && out.problems.is_empty() {
        out.problems.push(crate::dataset::no_rows(path));
    }
    Ok(Loaded {
        items,
        problems: out.problems,
    })
}

/// Gives each prediction without an explicit `sample` the next free number within its
/// (instance, model), in file order; two rows claiming the same explicit sample are a problem.
fn number_samples(
    rows: Vec<(Prediction, Option<u32>)>,
    path: &Path,
    problems: &mut Vec<InputProblem>,
) -> Vec<Prediction> {
    let mut taken: HashMap<(String, String), std::collections::HashSet<u32>> = HashMap::new();
    for (p, s) in &rows {
        if let Some(s) = s {
            taken
                .entry((p.instance_id.clone(), p.model_name_or_path.clone()))
                .or_default()
                .insert(*s);
        }
    }
    let mut next: HashMap<(String, String), u32> = HashMap::new();
    let mut claimed: HashMap<(String, String, u32), Option<usize>> = HashMap::new();
    let mut out = Vec::with_capacity(rows.len());
    for (mut p, s) in rows {
        let key = (p.instance_id.clone(), p.model_name_or_path.clone());
        let sample = match s {
            Some(s) => s,
            None => {
                let n = next.entry(key.clone()).or_insert(0);
                let used = taken.entry(key.clone()).or_default();
                while used.contains(n) {
                    *n += 1;
                }
                let s = *n;
                used.insert(s);
                *n += 1;
                s
            }
        };
        let ck = (key.0, key.1, sample);
        if let Some(first) = claimed.get(&ck) {
            problems.push(InputProblem::new(
                path.to_path_buf(),
                p.line,
                Some("sample".into()),
                format!(
                    "sample {sample} of {} by {} already given at line {}; this row is ignored",
                    p.instance_id,
                    p.model_name_or_path,
                    first.map_or("?".to_string(), |l| l.to_string())
                ),
            ));
            continue;
        }
        claimed.insert(ck, p.line);
        p.sample = sample;
        out.push(p);
    }
    out
}

fn prediction_from_value(value: Value) -> Result<(Prediction, Option<u32>), RowError> {
    let Value::Object(mut map) = value else {
        return Err(RowError::whole(format!(
            "expected an object, found {}",
            kind_of(&value)
        )));
    };
    let instance_id = match map.remove("instance_id") {
        Some(Value::String(s)) if !s.trim().is_empty() => {
            crate::paths::check_component("instance_id", &s)
                .map_err(|e| RowError::in_field("instance_id", e.to_string()))?;
            s
        }
        Some(other) => {
            return Err(RowError::in_field(
                "instance_id",
                format!("expected a non-empty string, found {}", kind_of(&other)),
            ))
        }
        None => return Err(RowError::in_field("instance_id", "missing")),
    };
    let model_name_or_path = match map.remove("model_name_or_path") {
        Some(Value::String(s)) if !s.is_empty() => {
            // Runs name folders and summaries after the model (`/` written `__`).
            crate::paths::check_component("model_name_or_path", &model_dir_name(&s))
                .map_err(|e| RowError::in_field("model_name_or_path", e.to_string()))?;
            s
        }
        None => return Err(RowError::in_field("model_name_or_path", missing(&map))),
        Some(other) => {
            return Err(RowError::in_field(
                "model_name_or_path",
                format!("expected a non-empty string, found {}", kind_of(&other)),
            ))
        }
    };
    let model_patch = match map.remove("model_patch") {
        Some(Value::String(s)) => Some(s),
        Some(Value::Null) => None,
        None => return Err(RowError::in_field("model_patch", missing(&map))),
        Some(other) => {
            return Err(RowError::in_field(
                "model_patch",
                format!("expected a string or null, found {}", kind_of(&other)),
            ))
        }
    };
    let sample = match map.remove("sample") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) if n.as_u64().is_some_and(|v| v <= u32::MAX as u64) => {
            Some(n.as_u64().unwrap() as u32)
        }
        Some(other) => {
            return Err(RowError::in_field(
                "sample",
                format!("expected a non-negative whole number, found {other}"),
            ))
        }
    };
    Ok((
        Prediction {
            instance_id,
            model_name_or_path,
            model_patch,
            sample: 0,
            line: None,
            extra: map,
        },
        sample,
    ))
}

/// "missing", with a hint when the row has a field that looks like the one meant (`patch`
/// for `model_patch`, `model` for `model_name_or_path`). An empty string or `null` is an
/// empty patch; only an absent field is refused.
fn missing(rest: &Map<String, Value>) -> String {
    let near: Vec<&str> = ["patch", "model", "diff", "prediction", "model_name"]
        .into_iter()
        .filter(|k| rest.contains_key(*k))
        .collect();
    if near.is_empty() {
        "missing (a required field; use null or \"\" for an empty patch)".to_string()
    } else {
        format!(
            "missing (a required field); the row has {}: a misspelling?",
            near.iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// Splits predictions into those whose instance is in the dataset and problems for the rest.
pub fn check_against(dataset: &Dataset, preds: Vec<Prediction>, path: &Path) -> Loaded<Prediction> {
    let mut out = Loaded::default();
    for p in preds {
        if dataset.get(&p.instance_id).is_some() {
            out.items.push(p);
        } else {
            out.problems.push(InputProblem::new(
                path.to_path_buf(),
                p.line,
                Some("instance_id".into()),
                format!("instance {} is not in the dataset", p.instance_id),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_names_read_back_as_written() {
        assert_eq!(sample_name("a__b-1", 0), "a__b-1");
        assert_eq!(sample_name("a__b-1", 3), "a__b-1.sample3");
        for k in [0, 1, 7, 1234] {
            assert_eq!(
                parse_sample_name(&sample_name("x.sample__y-2", k)),
                ("x.sample__y-2".to_string(), Some(k))
            );
        }
        assert_eq!(parse_sample_name("a.sample"), ("a.sample".into(), Some(0)));
        assert_eq!(
            parse_sample_name("a.sample1x"),
            ("a.sample1x".into(), Some(0))
        );
        assert_eq!(parse_sample_name("a.sample99999999999"), ("a".into(), None));
        assert_eq!(summary_file_name("org/m", "r", 0), "org__m.r.json");
        assert_eq!(summary_file_name("org/m", "r", 2), "org__m.r.sample2.json");
    }

    fn parse(text: &str) -> Loaded<Prediction> {
        from_bytes(Path::new("p.jsonl"), text.as_bytes()).unwrap()
    }

    #[test]
    fn jsonl_samples_numbered_in_file_order() {
        let l = parse(concat!(
            "{\"instance_id\":\"a\",\"model_name_or_path\":\"m\",\"model_patch\":\"x\"}\n",
            "{\"instance_id\":\"a\",\"model_name_or_path\":\"m\",\"model_patch\":\"y\"}\n",
            "{\"instance_id\":\"b\",\"model_name_or_path\":\"m\",\"model_patch\":null}\n",
        ));
        assert!(l.problems.is_empty());
        let s: Vec<_> = l
            .items
            .iter()
            .map(|p| (p.instance_id.as_str(), p.sample))
            .collect();
        assert_eq!(s, [("a", 0), ("a", 1), ("b", 0)]);
        assert!(l.items[2].is_empty_patch());
    }

    #[test]
    fn explicit_samples_are_respected_and_others_fill_gaps() {
        let l = parse(concat!(
            "{\"instance_id\":\"a\",\"model_name_or_path\":\"m\",\"model_patch\":\"x\",\"sample\":0}\n",
            "{\"instance_id\":\"a\",\"model_name_or_path\":\"m\",\"model_patch\":\"y\"}\n",
            "{\"instance_id\":\"a\",\"model_name_or_path\":\"m\",\"model_patch\":\"z\",\"sample\":0}\n",
        ));
        let s: Vec<_> = l.items.iter().map(|p| p.sample).collect();
        assert_eq!(s, [0, 1]);
        assert_eq!(l.problems.len(), 1);
        assert_eq!(l.problems[0].location.line, Some(3));
        assert_eq!(l.problems[0].location.field.as_deref(), Some("sample"));
    }

    #[test]
    fn json_object_keyed_by_id() {
        let l = from_bytes(
            Path::new("preds.json"),
            b"{\"a__b-1\": {\"model_name_or_path\":\"m\",\"model_patch\":\"d\"},\n \"a__b-2\": {\"model_name_or_path\":\"m\",\"model_patch\":\"\"}}",
        )
        .unwrap();
        assert_eq!(l.items.len(), 2);
        assert_eq!(l.items[1].instance_id, "a__b-2");
        assert_eq!(l.items[1].line, Some(2));
        assert!(l.items[1].is_empty_patch());
    }

    #[test]
    fn json_list_and_field_errors() {
        let l = from_bytes(
            Path::new("preds.json"),
            b"[{\"instance_id\":\"a\",\"model_name_or_path\":\"m\",\"model_patch\":\"d\"},\n{\"instance_id\":\"b\",\"model_name_or_path\":\"m\",\"model_patch\":3}]",
        )
        .unwrap();
        assert_eq!(l.items.len(), 1);
        assert_eq!(l.problems[0].location.field.as_deref(), Some("model_patch"));
        assert_eq!(l.problems[0].location.line, Some(2));
    }

    #[test]
    fn missing_required_fields_are_problems_but_null_is_an_empty_patch() {
        let l = parse(concat!(
            "{\"instance_id\":\"a\",\"model_name_or_path\":\"m\",\"patch\":\"x\"}\n",
            "{\"instance_id\":\"b\",\"model_patch\":\"x\"}\n",
            "{\"instance_id\":\"c\",\"model_name_or_path\":\"m\",\"model_patch\":null}\n",
            "{\"instance_id\":\"d\",\"model_name_or_path\":\"m\",\"model_patch\":\"\"}\n",
        ));
        let ids: Vec<_> = l.items.iter().map(|p| p.instance_id.as_str()).collect();
        assert_eq!(ids, ["c", "d"]);
        assert!(l.items.iter().all(Prediction::is_empty_patch));
        let found: Vec<_> = l
            .problems
            .iter()
            .map(|p| (p.location.line, p.location.field.as_deref()))
            .collect();
        assert_eq!(
            found,
            [
                (Some(1), Some("model_patch")),
                (Some(2), Some("model_name_or_path"))
            ]
        );
        assert!(
            l.problems[0].to_string().contains("the row has `patch`"),
            "{}",
            l.problems[0]
        );
    }

    #[test]
    fn ids_and_model_names_must_be_safe_folder_names() {
        let l = parse(concat!(
            "{\"instance_id\":\"../../x\",\"model_name_or_path\":\"m\",\"model_patch\":\"\"}\n",
            "{\"instance_id\":\"a\",\"model_name_or_path\":\"..\",\"model_patch\":\"\"}\n",
            "{\"instance_id\":\"a\",\"model_name_or_path\":\"org/model\",\"model_patch\":\"\"}\n",
        ));
        assert_eq!(l.items.len(), 1, "`/` in a model name is written `__`");
        assert_eq!(l.problems.len(), 2);
        assert!(l.problems[0]
            .to_string()
            .contains("p.jsonl:1: field `instance_id`"));
        assert!(l.problems[1]
            .to_string()
            .contains("p.jsonl:2: field `model_name_or_path`"));
    }

    #[test]
    fn a_file_without_rows_says_so() {
        let l = parse("\n\n");
        assert!(l.items.is_empty());
        assert_eq!(l.problems.len(), 1);
        assert!(
            l.problems[0].message.contains("no rows"),
            "{}",
            l.problems[0]
        );
    }

    #[test]
    fn non_utf8_bytes_do_not_fail_the_file_but_refuse_their_row() {
        let mut bytes =
            b"{\"instance_id\":\"a\",\"model_name_or_path\":\"m\",\"model_patch\":\"x".to_vec();
        bytes.push(0xff);
        bytes.extend_from_slice(
            b"\"}\n{\"instance_id\":\"b\",\"model_name_or_path\":\"m\",\"model_patch\":\"y\"}\n",
        );
        let l = from_bytes(Path::new("p.jsonl"), &bytes).unwrap();
        assert_eq!(l.items.len(), 1);
        assert_eq!(l.items[0].instance_id, "b");
        assert_eq!(l.problems.len(), 1);
        assert_eq!(l.problems[0].location.field.as_deref(), Some("model_patch"));
    }
}
