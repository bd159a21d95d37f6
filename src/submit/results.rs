//! The `results/` folder of a leaderboard submission, computed as the SWE-bench experiments
//! repository's analysis script (`analysis/get_results.py`) computes it: every instance of the
//! dataset counts in the totals; an instance without a `logs/<id>/` folder or without its
//! `patch.diff` is `no_generation`, one without `test_output.txt` is `no_logs`, and every other
//! one is graded again from its own `patch.diff` and `test_output.txt`. Resolution never comes
//! from the package's `report.json` files, so a doctored report cannot change the score.
//!
//! Files (as that script writes them: `json.dump(..., indent=2)`):
//! - `results.json`: `{"no_generation": [...], "no_logs": [...], "resolved": [...]}`, ids sorted;
//! - `resolved_by_repo.json`: `{"<owner/name>": {"resolved": n, "total": n}}` for every
//!   repository of the dataset (written sorted; the script's order is a Python set's);
//! - `resolved_by_time.json`: the same per year of the instance's `created_at`, years ascending.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::SubmitError;

use swe_eval_core::dataset::{Dataset, Instance};
use swe_eval_core::grading::{self, GradeInput, Mode};
use swe_eval_core::report::SavedLog;
use swe_eval_core::report::{to_python_json_indent, TEST_OUTPUT_FILE};

/// The folder of the computed results.
pub const RESULTS_DIR: &str = "results";
/// `{no_generation, no_logs, resolved}`.
pub const RESULTS_FILE: &str = "results.json";
/// Resolved and total per repository.
pub const BY_REPO_FILE: &str = "resolved_by_repo.json";
/// Resolved and total per year of `created_at`.
pub const BY_TIME_FILE: &str = "resolved_by_time.json";
/// A prediction's patch, in `logs/<instance_id>/` (as in a run's log folder).
pub use swe_eval_core::report::PATCH_FILE;
/// The per-instance logs folder.
pub const LOGS_DIR: &str = "logs";

/// Resolved and total instances of one repository or year.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Instances resolved.
    pub resolved: usize,
    /// Instances in all.
    pub total: usize,
}

/// Everything the analysis script derives from a submission folder.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Results {
    /// Instances of the dataset (the denominator of the resolve rate).
    pub total: usize,
    /// Instances without a `logs/<id>/patch.diff` (no prediction), sorted.
    pub no_generation: Vec<String>,
    /// Instances with a patch but no `test_output.txt`, sorted.
    pub no_logs: Vec<String>,
    /// Instances resolved when graded again from their logs, sorted.
    pub resolved: Vec<String>,
    /// Per repository (`owner/name`).
    pub by_repo: BTreeMap<String, Tally>,
    /// Keyed by year (`"2019"`).
    pub by_year: BTreeMap<String, Tally>,
    /// Instances whose dataset row has no usable `created_at` (left out of `by_year`).
    pub undated: Vec<String>,
    /// Instances whose logs could not be graded, with why (counted unresolved).
    pub ungradable: Vec<String>,
}

impl Results {
    /// Percent resolved over the whole dataset, as the script prints it.
    pub fn rate(&self) -> String {
        py_percent(self.resolved.len(), self.total)
    }

    /// The script's summary text (what the checklist asks to paste into the README and PR).
    pub fn summary_text(&self, name: &str, split: &str) -> String {
        let rule = "=".repeat(50);
        let mut s = format!("Submission summary for {name} on SWE-bench {split} split\n{rule}\n");
        s += &format!(
            "Resolved {} instances ({}%)\n{rule}\nResolved by Repository\n",
            self.resolved.len(),
            self.rate()
        );
        for (repo, t) in &self.by_repo {
            s += &format!(
                "- {repo}: {}/{} ({}%)\n",
                t.resolved,
                t.total,
                py_percent(t.resolved, t.total)
            );
        }
        s += &format!("{rule}\nResolved by Time\n");
        for (year, t) in &self.by_year {
            s += &format!(
                "- {year}: {}/{} ({}%)\n",
                t.resolved,
                t.total,
                py_percent(t.resolved, t.total)
            );
        }
        s
    }

    fn results_json(&self) -> Value {
        json!({
            "no_generation": self.no_generation,
            "no_logs": self.no_logs,
            "resolved": self.resolved,
        })
    }

    fn tally_json(map: &BTreeMap<String, Tally>) -> Value {
        let mut m = Map::new();
        for (k, t) in map {
            m.insert(k.clone(), json!({"resolved": t.resolved, "total": t.total}));
        }
        Value::Object(m)
    }

    /// The three files, by name, as the script writes them.
    pub fn files(&self) -> [(&'static str, String); 3] {
        [
            (RESULTS_FILE, to_python_json_indent(&self.results_json(), 2)),
            (
                BY_REPO_FILE,
                to_python_json_indent(&Self::tally_json(&self.by_repo), 2),
            ),
            (
                BY_TIME_FILE,
                to_python_json_indent(&Self::tally_json(&self.by_year), 2),
            ),
        ]
    }
}

/// `round(part * 100. / whole, 2)` printed as Python prints a float (`50.0`, `63.64`).
pub fn py_percent(part: usize, whole: usize) -> String {
    if whole == 0 {
        return "0.0".into();
    }
    let x = part as f64 * 100.0 / whole as f64;
    let rounded: f64 = format!("{x:.2}").parse().unwrap_or(x);
    if rounded.fract() == 0.0 {
        format!("{rounded:.1}")
    } else {
        format!("{rounded}")
    }
}

/// The year of a `created_at` value (`2019-07-01T12:00:00Z`, `2019-07-01 12:00:00`).
pub fn year_of(created_at: &str) -> Option<String> {
    let y = created_at.trim().get(..4)?;
    (y.chars().all(|c| c.is_ascii_digit()) && created_at.trim().as_bytes().get(4) == Some(&b'-'))
        .then(|| y.to_string())
}

/// What one instance's folder holds, read from disk.
enum Found {
    NoGeneration,
    NoLogs,
    Logs { patch: String, output: String },
}

fn read_instance(logs: &Path, id: &str) -> Result<Found, SubmitError> {
    let dir = logs.join(id);
    if !dir.is_dir() {
        return Ok(Found::NoGeneration);
    }
    let patch_path = dir.join(PATCH_FILE);
    if !patch_path.is_file() {
        return Ok(Found::NoGeneration);
    }
    let out_path = dir.join(TEST_OUTPUT_FILE);
    if !out_path.is_file() {
        return Ok(Found::NoLogs);
    }
    let patch = read_text(&patch_path)?;
    let output = read_test_output(&out_path)?;
    Ok(Found::Logs { patch, output })
}

/// A package's `test_output.txt`, decoded as the analysis script decodes it: a test output
/// dumped by sb-cli is one JSON string.
pub(super) fn read_test_output(path: &Path) -> Result<String, SubmitError> {
    let mut output = read_text(path)?;
    if output.starts_with('"') {
        if let Ok(Value::String(s)) = serde_json::from_str::<Value>(&output) {
            output = s;
        }
    }
    Ok(output)
}

pub(crate) fn read_text(path: &Path) -> Result<String, SubmitError> {
    let bytes = std::fs::read(path).map_err(|source| SubmitError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Why an instance's log cannot be graded (it is listed as ungradable).
#[derive(Debug, thiserror::Error)]
pub enum Ungradable {
    /// The dataset's row does not say which tests must pass.
    #[error("{instance_id}: dataset row has no FAIL_TO_PASS/PASS_TO_PASS; cannot grade its log")]
    NoTestLists {
        /// The instance.
        instance_id: String,
    },
    /// The row names a log parser the grader does not have.
    #[error("{instance_id}: {source}")]
    Parser {
        /// The instance.
        instance_id: String,
        /// The parser named.
        #[source]
        source: swe_eval_core::logparse::UnknownParser,
    },
}

/// Official grading of one patch and its test output: resolved or not, or why it could not be
/// graded.
pub fn grade_log(inst: &Instance, patch: &str, output: &str) -> Result<bool, Ungradable> {
    if inst.fail_to_pass.is_none() || inst.pass_to_pass.is_none() {
        return Err(Ungradable::NoTestLists {
            instance_id: inst.instance_id.clone(),
        });
    }
    let log = SavedLog::Output(output.to_string());
    let input = GradeInput::for_instance(inst, Some(patch), log.outcome());
    grading::grade(&input)
        .map(|v| v.category(Mode::Official).is_resolved())
        .map_err(|source| Ungradable::Parser {
            instance_id: inst.instance_id.clone(),
            source,
        })
}

/// One instance's logs as found, and whether they resolve it (or why they cannot be graded).
type Graded = (Found, Result<bool, Ungradable>);

/// Grades the submission folder `dir` from its own `logs/` as the analysis script does.
pub fn regrade(ds: &Dataset, dir: &Path) -> Result<Results, SubmitError> {
    use rayon::prelude::*;
    let logs = dir.join(LOGS_DIR);
    let graded: Vec<Result<Graded, SubmitError>> = ds
        .instances
        .par_iter()
        .map(|inst| {
            let found = read_instance(&logs, &inst.instance_id)?;
            let verdict = match &found {
                Found::Logs { patch, output } => grade_log(inst, patch, output),
                _ => Ok(false),
            };
            Ok((found, verdict))
        })
        .collect();
    let mut r = Results {
        total: ds.instances.len(),
        ..Results::default()
    };
    let mut years: BTreeMap<String, Tally> = BTreeMap::new();
    for (inst, g) in ds.instances.iter().zip(graded) {
        let (found, verdict) = g?;
        let id = inst.instance_id.clone();
        let repo = r.by_repo.entry(inst.repo.clone()).or_default();
        repo.total += 1;
        let year = inst.created_at.as_deref().and_then(year_of);
        match &year {
            Some(y) => years.entry(y.clone()).or_default().total += 1,
            None => r.undated.push(id.clone()),
        }
        let resolved = match found {
            Found::NoGeneration => {
                r.no_generation.push(id);
                false
            }
            Found::NoLogs => {
                r.no_logs.push(id);
                false
            }
            Found::Logs { .. } => match verdict {
                Ok(res) => res,
                Err(e) => {
                    r.ungradable.push(e.to_string());
                    false
                }
            },
        };
        if resolved {
            repo.resolved += 1;
            if let Some(y) = &year {
                years.entry(y.clone()).or_default().resolved += 1;
            }
            r.resolved.push(inst.instance_id.clone());
        }
    }
    r.by_year = years;
    for list in [&mut r.no_generation, &mut r.no_logs, &mut r.resolved] {
        list.sort();
        list.dedup();
    }
    Ok(r)
}

/// Compares the files in `dir/results/` with `expected`, one message per number or id that
/// differs (empty when everything matches).
pub fn compare_files(dir: &Path, expected: &Results) -> Vec<String> {
    let mut out = Vec::new();
    let base = dir.join(RESULTS_DIR);
    let load = |name: &str, out: &mut Vec<String>| -> Option<Value> {
        let path = base.join(name);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                out.push(format!("{}: cannot read: {e}", rel(dir, &path).display()));
                return None;
            }
        };
        match serde_json::from_str(&text) {
            Ok(v) => Some(v),
            Err(e) => {
                out.push(format!("{}: not JSON: {e}", rel(dir, &path).display()));
                None
            }
        }
    };
    if let Some(v) = load(RESULTS_FILE, &mut out) {
        let name = format!("{RESULTS_DIR}/{RESULTS_FILE}");
        let want = [
            ("no_generation", &expected.no_generation),
            ("no_logs", &expected.no_logs),
            ("resolved", &expected.resolved),
        ];
        match v.as_object() {
            None => out.push(format!("{name}: expected an object")),
            Some(obj) => {
                for k in obj.keys() {
                    if !want.iter().any(|(w, _)| w == k) {
                        out.push(format!("{name}: unexpected key \"{k}\""));
                    }
                }
                for (key, ids) in want {
                    compare_ids(&name, key, obj.get(key), ids, &mut out);
                }
            }
        }
    }
    for (file, what, map) in [
        (BY_REPO_FILE, "repository", &expected.by_repo),
        (BY_TIME_FILE, "year", &expected.by_year),
    ] {
        if let Some(v) = load(file, &mut out) {
            compare_tallies(&format!("{RESULTS_DIR}/{file}"), what, &v, map, &mut out);
        }
    }
    out
}

fn rel(base: &Path, p: &Path) -> PathBuf {
    p.strip_prefix(base).unwrap_or(p).to_path_buf()
}

fn compare_ids(file: &str, key: &str, got: Option<&Value>, want: &[String], out: &mut Vec<String>) {
    let Some(Value::Array(items)) = got else {
        out.push(format!("{file}: \"{key}\" is missing or not a list"));
        return;
    };
    let mut have = BTreeSet::new();
    for item in items {
        match item.as_str() {
            Some(s) => {
                if !have.insert(s.to_string()) {
                    out.push(format!("{file}: \"{key}\" lists {s} twice"));
                }
            }
            None => out.push(format!("{file}: \"{key}\" holds a non-string {item}")),
        }
    }
    let want: BTreeSet<String> = want.iter().cloned().collect();
    if have.len() != want.len() {
        out.push(format!(
            "{file}: \"{key}\" has {} ids, the package's logs give {}",
            have.len(),
            want.len()
        ));
    }
    let extra: Vec<_> = have.difference(&want).cloned().collect();
    let missing: Vec<_> = want.difference(&have).cloned().collect();
    if !extra.is_empty() {
        out.push(format!(
            "{file}: \"{key}\" lists {} that the package's logs do not: {}",
            extra.len(),
            extra.join(", ")
        ));
    }
    if !missing.is_empty() {
        out.push(format!(
            "{file}: \"{key}\" leaves out {} that the package's logs give: {}",
            missing.len(),
            missing.join(", ")
        ));
    }
}

fn compare_tallies(
    file: &str,
    what: &str,
    got: &Value,
    want: &BTreeMap<String, Tally>,
    out: &mut Vec<String>,
) {
    let Some(obj) = got.as_object() else {
        out.push(format!("{file}: expected an object"));
        return;
    };
    for k in obj.keys() {
        if !want.contains_key(k) {
            out.push(format!(
                "{file}: {what} {k} is not in the dataset's grading"
            ));
        }
    }
    for (k, t) in want {
        let Some(entry) = obj.get(k) else {
            out.push(format!("{file}: {what} {k} is missing"));
            continue;
        };
        for (field, n) in [("resolved", t.resolved), ("total", t.total)] {
            match entry.get(field).and_then(Value::as_u64) {
                Some(v) if v as usize == n => {}
                Some(v) => out.push(format!(
                    "{file}: {what} {k}: {field} is {v}, the package's logs give {n}"
                )),
                None => out.push(format!(
                    "{file}: {what} {k}: \"{field}\" is missing or not a count"
                )),
            }
        }
        if let Some(o) = entry.as_object() {
            for f in o.keys().filter(|f| *f != "resolved" && *f != "total") {
                out.push(format!("{file}: {what} {k}: unexpected field \"{f}\""));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_prints_as_python_rounds() {
        // Python 3: round(229*100./500, 2), round(100/3, 2), round(100.0, 2), round(200/3, 2)
        assert_eq!(py_percent(229, 500), "45.8");
        assert_eq!(py_percent(1, 3), "33.33");
        assert_eq!(py_percent(2, 2), "100.0");
        assert_eq!(py_percent(2, 3), "66.67");
        assert_eq!(py_percent(0, 0), "0.0");
    }

    #[test]
    fn years_come_from_iso_dates_only() {
        assert_eq!(year_of("2019-07-01T12:00:00Z").as_deref(), Some("2019"));
        assert_eq!(year_of("2023-01-02 03:04:05").as_deref(), Some("2023"));
        assert_eq!(year_of("None"), None);
        assert_eq!(year_of("19-07-01"), None);
    }

    #[test]
    fn files_are_written_as_json_dump_indent_2() {
        let mut r = Results {
            total: 2,
            resolved: vec!["a__b-1".into()],
            ..Results::default()
        };
        r.by_repo.insert(
            "a/b".into(),
            Tally {
                resolved: 1,
                total: 2,
            },
        );
        let [(_, results), (_, by_repo), (_, by_time)] = r.files();
        // Python: json.dumps({...}, indent=2)
        assert_eq!(
            results,
            "{\n  \"no_generation\": [],\n  \"no_logs\": [],\n  \"resolved\": [\n    \"a__b-1\"\n  ]\n}"
        );
        assert_eq!(
            by_repo,
            "{\n  \"a/b\": {\n    \"resolved\": 1,\n    \"total\": 2\n  }\n}"
        );
        assert_eq!(by_time, "{}");
    }

    #[test]
    fn comparison_names_each_differing_number() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Results {
            total: 1,
            resolved: vec!["x".into()],
            ..Results::default()
        };
        r.by_repo.insert(
            "o/n".into(),
            Tally {
                resolved: 1,
                total: 1,
            },
        );
        for (name, text) in r.files() {
            swe_eval_core::fsutil::write_atomic(
                &dir.path().join(RESULTS_DIR).join(name),
                text.as_bytes(),
            )
            .unwrap();
        }
        assert!(compare_files(dir.path(), &r).is_empty());
        let mut other = r.clone();
        other.by_repo.get_mut("o/n").unwrap().resolved = 0;
        other.resolved.clear();
        let msgs = compare_files(dir.path(), &other);
        assert!(
            msgs.iter()
                .any(|m| m.contains("resolved_by_repo.json: repository o/n: resolved is 1")),
            "{msgs:?}"
        );
        assert!(
            msgs.iter().any(|m| m.contains("\"resolved\" lists 1")),
            "{msgs:?}"
        );
    }
}
