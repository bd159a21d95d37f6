//! The bundled mini benchmark (`datasets/mini/`), embedded in the binary.
//!
//! `swe-eval run` with no arguments runs this benchmark from any working folder, so every file
//! it needs is compiled in: the dataset (8 tasks over 4 small Python repositories written for
//! this project), the demonstration predictions (one per failure mode the harness must grade
//! right), the verdict each prediction should get, and the repositories as git bundles.
//! [`materialize`] writes them out as ordinary files that the loaders and the image builder
//! take like any other input. The sources and the generator live in `scripts/mini/`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::dataset::{instance_from_value, Instance};
use crate::fsutil::write_atomic;
use crate::grading::{Category, ErrorReason, Mode};
use crate::predictions::{self, Prediction};

/// Owner part of the mini repositories' names (`swe-eval-mini/calc`).
pub const OWNER: &str = "swe-eval-mini";

/// The dataset version of every mini task (the key into the run specifications).
pub const VERSION: &str = "0.1";

/// Per-job timeout that suits the mini benchmark: every task's tests run in well under 2 s
/// (under 5 s with the machine loaded to 20), and the deadlocked prediction has to time out
/// without holding up the run: the run's wall is that job's start plus this timeout.
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;

/// `datasets/mini/dataset.jsonl`: SWE-bench rows with `FAIL_TO_PASS`/`PASS_TO_PASS` lists.
pub const DATASET: &str = include_str!("../../../datasets/mini/dataset.jsonl");
/// `datasets/mini/predictions.jsonl`: models `mini-gold` and `mini-demo`, with samples.
pub const PREDICTIONS: &str = include_str!("../../../datasets/mini/predictions.jsonl");
/// `datasets/mini/expected.json`: the verdict of every prediction, official and strict.
pub const EXPECTED: &str = include_str!("../../../datasets/mini/expected.json");
/// `datasets/mini/README.md`: what each task and prediction is for.
pub const README: &str = include_str!("../../../datasets/mini/README.md");

/// The repositories as git bundles, by name (without the owner).
pub const REPOS: &[(&str, &[u8])] = &[
    (
        "calc",
        include_bytes!("../../../datasets/mini/repos/calc.bundle"),
    ),
    (
        "iniconf",
        include_bytes!("../../../datasets/mini/repos/iniconf.bundle"),
    ),
    (
        "intervals",
        include_bytes!("../../../datasets/mini/repos/intervals.bundle"),
    ),
    (
        "strutils",
        include_bytes!("../../../datasets/mini/repos/strutils.bundle"),
    ),
];

/// Where [`materialize`] put the benchmark's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MiniBenchmark {
    /// The dataset, JSON Lines.
    pub dataset: PathBuf,
    /// The predictions, JSON Lines.
    pub predictions: PathBuf,
    /// The expected verdicts (`expected.json`).
    pub expected: PathBuf,
    /// A folder of mirrors: `<owner>__<name>.bundle` for each repository (`git clone` reads
    /// bundles as it reads repositories).
    pub mirrors: PathBuf,
}

/// Writes the embedded benchmark into `dir` (created if missing): `dataset.jsonl`,
/// `predictions.jsonl`, `expected.json`, `README.md` and `mirrors/`. Existing files are
/// replaced atomically, so a run reading a previous copy never sees a torn one.
pub fn materialize(dir: &Path) -> std::io::Result<MiniBenchmark> {
    let write = |path: &Path, bytes: &[u8]| {
        write_atomic(path, bytes).map_err(|e| std::io::Error::new(e.source.kind(), e))
    };
    let bench = MiniBenchmark {
        dataset: dir.join("dataset.jsonl"),
        predictions: dir.join("predictions.jsonl"),
        expected: dir.join("expected.json"),
        mirrors: dir.join("mirrors"),
    };
    write(&bench.dataset, DATASET.as_bytes())?;
    write(&bench.predictions, PREDICTIONS.as_bytes())?;
    write(&bench.expected, EXPECTED.as_bytes())?;
    write(&dir.join("README.md"), README.as_bytes())?;
    materialize_mirrors(&bench.mirrors)?;
    Ok(bench)
}

/// Writes only the repositories' bundles into `dir` (created if missing), for a run whose rows
/// are the mini benchmark's but come from a file of the user's ([`holds`]).
pub fn materialize_mirrors(dir: &Path) -> std::io::Result<PathBuf> {
    for (name, bytes) in REPOS {
        write_atomic(&dir.join(mirror_file_name(name)), bytes)
            .map_err(|e| std::io::Error::new(e.source.kind(), e))?;
    }
    Ok(dir.to_path_buf())
}

/// The bundled dataset's rows, as any loader reads them.
pub fn instances() -> Vec<Instance> {
    DATASET
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let value = serde_json::from_str(l).expect("the embedded dataset is JSON Lines");
            instance_from_value(value).expect("the embedded dataset's rows are instances")
        })
        .collect()
}

/// True when `rows` are the mini benchmark's: at least one row, and every row equal to one of
/// the bundled dataset's (all fields). The input's file name and place play no part, so
/// `run -d datasets/mini/dataset.jsonl -p ...` gets the same settings as a bare `run`.
pub fn holds(rows: &[Instance]) -> bool {
    let bundled = instances();
    !rows.is_empty() && rows.iter().all(|r| bundled.contains(r))
}

/// Of `predictions`, the (instance, model, sample) of those that are bundled predictions,
/// unchanged (same instance, model and patch): the ones [`expected`] has a verdict for. A
/// user's own patch on the mini tasks has no expected verdict.
pub fn bundled_keys(predictions: &[Prediction]) -> HashSet<(String, String, u32)> {
    let bundled = predictions::from_bytes(Path::new("predictions.jsonl"), PREDICTIONS.as_bytes())
        .expect("the embedded predictions load")
        .items;
    predictions
        .iter()
        .filter(|p| {
            bundled.iter().any(|b| {
                b.instance_id == p.instance_id
                    && b.model_name_or_path == p.model_name_or_path
                    && b.sample == p.sample
                    && b.model_patch == p.model_patch
            })
        })
        .map(|p| {
            (
                p.instance_id.clone(),
                p.model_name_or_path.clone(),
                p.sample,
            )
        })
        .collect()
}

/// The mirror file of a repository: `swe-eval-mini__calc.bundle` for `calc`.
pub fn mirror_file_name(name: &str) -> String {
    format!("{OWNER}__{name}.bundle")
}

/// The verdict one prediction of the mini benchmark must get.
#[derive(Debug, Clone, PartialEq)]
pub struct Expected {
    /// The instance.
    pub instance_id: String,
    /// The model.
    pub model_name_or_path: String,
    /// The sample number.
    pub sample: u32,
    /// What the prediction demonstrates: `gold`, `partial`, `conftest`, ...
    pub case: String,
    /// Under official grading.
    pub category: Category,
    /// Under `--strict`.
    pub strict_category: Category,
    /// Why, when either category is an error (`error_kind` in the file).
    pub error_reason: Option<ErrorReason>,
    /// True when the verdict holds only where the tests have no network (in the container).
    pub container_only: bool,
    /// Why this verdict is the right one.
    pub reason: String,
}

impl Expected {
    /// The expected category under `mode`.
    pub fn category(&self, mode: Mode) -> Category {
        match mode {
            Mode::Official => self.category,
            Mode::Strict => self.strict_category,
        }
    }
}

/// `expected.json`'s row as written (categories as words, the error kind apart).
#[derive(Debug, Deserialize)]
struct ExpectedRow {
    instance_id: String,
    model_name_or_path: String,
    sample: u32,
    case: String,
    category: String,
    strict_category: String,
    #[serde(default)]
    error_kind: Option<String>,
    #[serde(default)]
    container_only: bool,
    reason: String,
}

/// An error kind of `expected.json`.
fn reason_from_word(kind: &str) -> Option<ErrorReason> {
    Some(match kind {
        "patch_apply_failed" => ErrorReason::PatchApplyFailed,
        "timeout" => ErrorReason::Timeout,
        "no_test_output" => ErrorReason::NoTestOutput,
        "infra" => ErrorReason::Infra,
        _ => return None,
    })
}

/// A category word of `expected.json`; `error` needs its error kind (`infra` makes it an
/// infrastructure error).
fn category_from_words(word: &str, error_kind: Option<&str>) -> Option<Category> {
    Some(match word {
        "resolved" => Category::Resolved,
        "unresolved" => Category::Unresolved,
        "empty_patch" => Category::EmptyPatch,
        "error" => Category::of_error(reason_from_word(error_kind?)?),
        _ => return None,
    })
}

/// A problem in the embedded `expected.json` (a build defect; the unit tests rule it out).
#[derive(Debug, thiserror::Error)]
pub enum ExpectedError {
    /// `expected.json` is not valid JSON of the expected shape.
    #[error("embedded expected.json: {0}")]
    Json(#[from] serde_json::Error),
    /// A category word that is not one of the verdict categories.
    #[error("embedded expected.json: {instance_id} {model}#{sample}: unknown category `{word}`")]
    Category {
        /// The prediction's instance.
        instance_id: String,
        /// The prediction's model.
        model: String,
        /// The prediction's sample.
        sample: u32,
        /// The word found.
        word: String,
    },
}

/// Parses the embedded `expected.json`, reporting what is wrong with it.
pub fn try_expected() -> Result<Vec<Expected>, ExpectedError> {
    let rows: Vec<ExpectedRow> = serde_json::from_str(EXPECTED)?;
    rows.into_iter()
        .map(|r| {
            let kind = r.error_kind.as_deref();
            let parse = |word: &str| {
                category_from_words(word, kind).ok_or_else(|| ExpectedError::Category {
                    instance_id: r.instance_id.clone(),
                    model: r.model_name_or_path.clone(),
                    sample: r.sample,
                    word: word.to_string(),
                })
            };
            Ok(Expected {
                category: parse(&r.category)?,
                strict_category: parse(&r.strict_category)?,
                error_reason: kind.and_then(reason_from_word),
                instance_id: r.instance_id,
                model_name_or_path: r.model_name_or_path,
                sample: r.sample,
                case: r.case,
                container_only: r.container_only,
                reason: r.reason,
            })
        })
        .collect()
}

/// The verdict of every bundled prediction, in the predictions file's order.
pub fn expected() -> Vec<Expected> {
    // The data is compiled in and checked by this module's tests, so a failure here is a
    // defect of the build, not of anyone's input.
    try_expected().expect("the embedded expected.json is valid")
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet};

    use super::*;
    use crate::dataset;
    use crate::predictions;

    #[test]
    fn only_unchanged_bundled_predictions_have_expected_verdicts() {
        let all = predictions::from_bytes(Path::new("p.jsonl"), PREDICTIONS.as_bytes())
            .unwrap()
            .items;
        assert_eq!(bundled_keys(&all).len(), expected().len());
        let mut own = all.clone();
        own[0].model_patch = Some(format!("{}\n", own[0].patch()));
        own[1].model_name_or_path = "my-model".into();
        let keys = bundled_keys(&own);
        assert_eq!(keys.len(), all.len() - 2);
        assert!(!keys.contains(&(
            own[0].instance_id.clone(),
            own[0].model_name_or_path.clone(),
            0
        )));
    }

    fn loaded(
        dir: &Path,
    ) -> (
        MiniBenchmark,
        dataset::Dataset,
        Vec<predictions::Prediction>,
    ) {
        let bench = materialize(dir).unwrap();
        let ds = dataset::load(&bench.dataset).unwrap();
        assert!(
            ds.problems.is_empty(),
            "dataset problems: {:?}",
            ds.problems
        );
        let ds = dataset::Dataset::new(ds.items);
        let preds = predictions::load(bench.predictions.to_str().unwrap(), Some(&ds)).unwrap();
        assert!(
            preds.problems.is_empty(),
            "prediction problems: {:?}",
            preds.problems
        );
        (bench, ds, preds.items)
    }

    #[test]
    fn dataset_loads_with_the_documented_shape() {
        let dir = tempfile::tempdir().unwrap();
        let (_, ds, _) = loaded(dir.path());
        assert!(ds.len() >= 8, "at least 8 tasks, got {}", ds.len());
        let names: HashSet<&str> = REPOS.iter().map(|(n, _)| *n).collect();
        for inst in &ds.instances {
            let name = inst.repo_name();
            assert_eq!(inst.repo, format!("{OWNER}/{name}"));
            assert!(
                names.contains(name),
                "{}: no bundle for {name}",
                inst.instance_id
            );
            assert!(inst.instance_id.starts_with(&format!("{OWNER}__{name}-")));
            assert_eq!(inst.version.as_deref(), Some(VERSION));
            assert_eq!(inst.base_commit.len(), 40, "{}", inst.instance_id);
            assert!(
                !inst.fail_to_pass().is_empty(),
                "{}: no FAIL_TO_PASS",
                inst.instance_id
            );
            assert!(
                !inst.pass_to_pass().is_empty(),
                "{}: no PASS_TO_PASS",
                inst.instance_id
            );
            for t in inst.fail_to_pass().iter().chain(inst.pass_to_pass()) {
                assert!(t.starts_with("tests/test_") && t.contains(".py::"), "{t}");
            }
            // The gold patch is source only and the test patch tests only, as in SWE-bench.
            assert!(
                !inst.patch.contains("diff --git a/tests/"),
                "{}",
                inst.instance_id
            );
            let test_patch = inst.test_patch.as_deref().unwrap_or_default();
            assert!(
                test_patch.starts_with("diff --git a/tests/"),
                "{}",
                inst.instance_id
            );
            assert!(inst
                .problem_statement
                .as_deref()
                .is_some_and(|p| !p.is_empty()));
        }
    }

    #[test]
    fn every_prediction_has_exactly_one_expected_verdict() {
        let dir = tempfile::tempdir().unwrap();
        let (_, ds, preds) = loaded(dir.path());
        let expected = expected();
        assert_eq!(expected.len(), preds.len());
        let by_key: HashMap<(&str, &str, u32), &Expected> = expected
            .iter()
            .map(|e| {
                (
                    (
                        e.instance_id.as_str(),
                        e.model_name_or_path.as_str(),
                        e.sample,
                    ),
                    e,
                )
            })
            .collect();
        assert_eq!(
            by_key.len(),
            expected.len(),
            "duplicate keys in expected.json"
        );
        for p in &preds {
            let key = (
                p.instance_id.as_str(),
                p.model_name_or_path.as_str(),
                p.sample,
            );
            let e = by_key
                .get(&key)
                .unwrap_or_else(|| panic!("no verdict for {key:?}"));
            assert!(
                ds.get(&p.instance_id).is_some(),
                "{}: not in the dataset",
                p.instance_id
            );
            assert_eq!(
                p.extra.get("case").and_then(|c| c.as_str()),
                Some(e.case.as_str())
            );
            // The empty case is the only one with nothing to apply.
            assert_eq!(
                p.is_empty_patch(),
                e.category == Category::EmptyPatch,
                "{key:?}"
            );
        }
    }

    #[test]
    fn gold_predictions_match_the_dataset_and_resolve() {
        let dir = tempfile::tempdir().unwrap();
        let (_, ds, preds) = loaded(dir.path());
        let expected = expected();
        let gold: Vec<_> = preds
            .iter()
            .filter(|p| p.model_name_or_path == "mini-gold")
            .collect();
        assert_eq!(gold.len(), ds.len(), "one gold prediction per task");
        for p in gold {
            assert_eq!(p.patch(), ds.get(&p.instance_id).unwrap().patch);
        }
        for e in expected.iter().filter(|e| e.case == "gold") {
            assert_eq!(e.category(Mode::Official), Category::Resolved);
            assert_eq!(e.category(Mode::Strict), Category::Resolved);
        }
    }

    #[test]
    fn the_demo_covers_every_failure_mode() {
        let expected = expected();
        let cases: HashSet<&str> = expected.iter().map(|e| e.case.as_str()).collect();
        for case in [
            "gold",
            "correct-different",
            "partial",
            "wrong",
            "malformed",
            "does-not-apply",
            "empty",
            "deadlock",
            "edits-tests",
            "conftest",
            "fake-passed",
            "network",
        ] {
            assert!(cases.contains(case), "no `{case}` prediction");
        }
        let verdict = |case: &str| {
            let e = expected.iter().find(|e| e.case == case).unwrap();
            (e.category, e.strict_category)
        };
        let reason = |case: &str| {
            expected
                .iter()
                .find(|e| e.case == case)
                .unwrap()
                .error_reason
        };
        let error = (Category::Error, Category::Error);
        assert_eq!(verdict("malformed"), error);
        assert_eq!(reason("malformed"), Some(ErrorReason::PatchApplyFailed));
        assert_eq!(verdict("does-not-apply"), error);
        assert_eq!(
            reason("does-not-apply"),
            Some(ErrorReason::PatchApplyFailed)
        );
        assert_eq!(verdict("deadlock"), error);
        assert_eq!(reason("deadlock"), Some(ErrorReason::Timeout));
        assert_eq!(
            verdict("empty"),
            (Category::EmptyPatch, Category::EmptyPatch)
        );
        // The two known holes of the official grader, closed by strict mode.
        assert_eq!(
            verdict("conftest"),
            (Category::Resolved, Category::Unresolved)
        );
        assert_eq!(
            verdict("fake-passed"),
            (Category::Resolved, Category::Unresolved)
        );
        assert_eq!(
            verdict("network"),
            (Category::Unresolved, Category::Unresolved)
        );
        // Only the network case depends on where the tests run.
        let container_only: Vec<&str> = expected
            .iter()
            .filter(|e| e.container_only)
            .map(|e| e.case.as_str())
            .collect();
        assert_eq!(container_only, ["network"]);
    }

    #[test]
    fn materialize_writes_mirrors_named_as_owner_and_repo() {
        let dir = tempfile::tempdir().unwrap();
        let bench = materialize(&dir.path().join("mini")).unwrap();
        for (name, bytes) in REPOS {
            let path = bench.mirrors.join(format!("swe-eval-mini__{name}.bundle"));
            assert_eq!(&std::fs::read(&path).unwrap(), bytes);
            assert!(
                bytes.starts_with(b"# v2 git bundle\n"),
                "{name}: not a git bundle"
            );
        }
        assert_eq!(std::fs::read_to_string(&bench.expected).unwrap(), EXPECTED);
        // A second materialization over the first replaces the files.
        assert_eq!(materialize(&dir.path().join("mini")).unwrap(), bench);
    }

    #[test]
    fn unknown_category_words_are_rejected() {
        assert_eq!(
            category_from_words("error", Some("timeout")),
            Some(Category::Error)
        );
        assert_eq!(
            category_from_words("error", Some("infra")),
            Some(Category::InfraError)
        );
        assert_eq!(category_from_words("error", Some("flaky")), None);
        assert_eq!(category_from_words("error", None), None);
        assert_eq!(category_from_words("passed", None), None);
    }
}
