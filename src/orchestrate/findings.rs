//! What a validation found about each instance, judged from its gold and empty verdicts
//! (read back from the run's per-prediction file) and from each run's test log: gold does not
//! resolve, the untouched tree already resolves, or a verdict or a graded test's status
//! changes between repetitions (the flaky map's rows, `report::FlakyRow`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;

use crate::runner::{Category, Layout, Verdict};
use swe_eval_core::dataset::{Dataset, Instance};
use swe_eval_core::report::{FlakyRow, TestFlip, MISSING};
use swe_eval_core::wire::FLAKY_MAP_VERSION;

/// How many times a validation runs each instance's gold patch and its empty patch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repeats {
    /// Runs of the gold patch (at least 1 is run).
    pub gold: u32,
    /// Runs of the empty patch; 0 leaves the untouched tree unrun, so "resolves without a
    /// patch" is not checked and only the gold runs can be flaky.
    pub empty: u32,
}

impl Repeats {
    /// `k` runs of each patch.
    pub fn each(k: u32) -> Repeats {
        Repeats { gold: k, empty: k }
    }

    /// `k` runs of the gold patch and none of the empty one.
    pub fn gold_only(k: u32) -> Repeats {
        Repeats { gold: k, empty: 0 }
    }
}

/// What validation found about one instance.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// The instance.
    pub instance_id: String,
    /// Categories of the gold runs, then of the empty runs, in sample order.
    pub gold: Vec<Category>,
    /// Categories of the empty runs, in sample order.
    pub empty: Vec<Category>,
    /// Some gold run did not resolve.
    pub gold_not_resolved: bool,
    /// Some empty run resolved: the tests do not need the fix.
    pub empty_resolves: bool,
    /// The verdicts of the gold or of the empty runs differ between runs, or a FAIL_TO_PASS
    /// or PASS_TO_PASS test's status does (`tests`).
    pub flaky: bool,
    /// The graded tests whose status differs between runs of one patch.
    pub tests: Vec<TestFlip>,
    /// Some gold run was unresolved only for want of the network (its verdict's
    /// `needs_network`): rerun with `--network` before blaming the instance.
    pub gold_needs_network: bool,
    /// Runs of the gold or the empty patch that have no verdict (the validation was
    /// interrupted before them): the instance is not validated until a rerun with the same
    /// run id does them.
    pub runs_missing: u32,
}

impl Finding {
    /// True when anything above is wrong with the instance, or some of its runs are missing.
    pub fn flagged(&self) -> bool {
        self.gold_not_resolved || self.empty_resolves || self.flaky || self.runs_missing > 0
    }

    /// The instance's row of the flaky map.
    pub fn flaky_row(&self, repo: &str) -> FlakyRow {
        FlakyRow {
            format_version: FLAKY_MAP_VERSION,
            instance_id: self.instance_id.clone(),
            repo: repo.to_string(),
            flaky: self.flaky,
            gold: self.gold.clone(),
            empty: self.empty.clone(),
            tests: self.tests.clone(),
        }
    }
}

/// Judges one instance from its gold and empty verdicts.
pub fn judge(instance_id: &str, gold: Vec<Category>, empty: Vec<Category>) -> Finding {
    let varies = |v: &[Category]| v.windows(2).any(|w| w[0] != w[1]);
    Finding {
        instance_id: instance_id.to_string(),
        gold_not_resolved: gold.iter().any(|c| *c != Category::Resolved),
        empty_resolves: empty.contains(&Category::Resolved),
        flaky: varies(&gold) || varies(&empty),
        gold,
        empty,
        gold_needs_network: false,
        tests: Vec::new(),
        runs_missing: 0,
    }
}

/// The graded tests (FAIL_TO_PASS, then PASS_TO_PASS) whose status differs between the runs
/// of one patch. `gold` and `empty` hold, per run in sample order, the status of each of
/// `tests` (`None`: that run's log did not parse). Runs without a log do not make a flip.
pub fn test_flips(
    tests: &[String],
    gold: &[Option<Vec<String>>],
    empty: &[Option<Vec<String>>],
) -> Vec<TestFlip> {
    let column = |runs: &[Option<Vec<String>>], i: usize| -> Vec<Option<String>> {
        runs.iter()
            .map(|r| r.as_ref().map(|s| s[i].clone()))
            .collect()
    };
    let varies = |v: &[Option<String>]| v.iter().flatten().collect::<BTreeSet<_>>().len() > 1;
    tests
        .iter()
        .enumerate()
        .filter_map(|(i, test)| {
            let (g, e) = (column(gold, i), column(empty, i));
            (varies(&g) || varies(&e)).then(|| TestFlip {
                test: test.clone(),
                gold: g,
                empty: e,
            })
        })
        .collect()
}

/// The statuses of `tests` in the test log of the run whose folder is `dir` (`MISSING` for a
/// test not in it), read with `parser`; `None` when there is no log or it does not parse.
fn run_statuses(dir: &Path, parser: &str, tests: &[String]) -> Option<Vec<String>> {
    let bytes = std::fs::read(dir.join(swe_eval_core::report::TEST_OUTPUT_FILE)).ok()?;
    let log = String::from_utf8_lossy(&bytes);
    match swe_eval_core::logparse::parse_test_log(parser, &log) {
        Ok(swe_eval_core::logparse::LogReading::Parsed { statuses, .. }) => Some(
            tests
                .iter()
                .map(|t| statuses.get(t).map_or(MISSING, |s| s.as_str()).to_string())
                .collect(),
        ),
        _ => None,
    }
}

/// The log parser a run of `inst` uses (as its test spec picks it).
fn parser_of(inst: &Instance) -> String {
    inst.log_parser
        .clone()
        .or_else(|| {
            swe_eval_core::spec::table()
                .log_parser(&inst.repo)
                .map(str::to_string)
        })
        .unwrap_or_else(|| "parse_log_pytest".to_string())
}

/// The model names of the gold and the empty runs.
pub const GOLD: &str = "gold";
/// The model name of the empty runs.
pub const EMPTY: &str = "empty";

/// Why a validation's verdicts could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum FindingsError {
    /// The per-prediction file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A row of the per-prediction file is not a verdict.
    #[error("{}: {message}", path.display())]
    Json {
        /// The file.
        path: std::path::PathBuf,
        /// The line and what is wrong with it.
        message: String,
    },
}

impl swe_eval_core::failure::Classify for FindingsError {
    fn kind(&self) -> swe_eval_core::failure::ErrorKind {
        swe_eval_core::failure::ErrorKind::Failed
    }
}

/// Every verdict of the run `layout` names, from its per-prediction file.
pub fn read_verdicts(layout: &Layout) -> Result<Vec<Verdict>, FindingsError> {
    let path = layout.jsonl_path();
    let text = std::fs::read_to_string(&path).map_err(|source| FindingsError::Read {
        path: path.clone(),
        source,
    })?;
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            crate::runner::parse_verdict(line.as_bytes()).map_err(|e| FindingsError::Json {
                path: path.clone(),
                message: format!("line {}: {e}", i + 1),
            })
        })
        .collect()
}

/// The findings of each of `instance_ids` (rows of `dataset`), from the run's per-prediction
/// file (resumed verdicts included) and each run's test log; `repeats` is how many runs of
/// each patch the validation asked for (those without a verdict are `runs_missing`).
pub fn findings(
    layout: &Layout,
    dataset: &Dataset,
    instance_ids: &[String],
    repeats: Repeats,
) -> Result<Vec<Finding>, FindingsError> {
    let mut by: BTreeMap<(String, String), BTreeMap<u32, Category>> = BTreeMap::new();
    let mut gold_network = BTreeSet::new();
    for v in read_verdicts(layout)? {
        if v.needs_network && v.model == GOLD {
            gold_network.insert(v.instance_id.clone());
        }
        by.entry((v.instance_id, v.model))
            .or_default()
            .insert(v.sample, v.category);
    }
    let mut take = |id: &str, model: &str| -> BTreeMap<u32, Category> {
        by.remove(&(id.to_string(), model.to_string()))
            .unwrap_or_default()
    };
    Ok(instance_ids
        .iter()
        .map(|id| {
            let gold = take(id, GOLD);
            let empty = take(id, EMPTY);
            let tests = match dataset.get(id) {
                Some(inst) => {
                    let parser = parser_of(inst);
                    let graded: Vec<String> = inst
                        .fail_to_pass()
                        .iter()
                        .chain(inst.pass_to_pass())
                        .cloned()
                        .collect();
                    let runs = |model: &str, samples: &BTreeMap<u32, Category>| {
                        samples
                            .keys()
                            .map(|&k| {
                                let dir = layout.prediction_dir(model, id, k);
                                run_statuses(&dir, &parser, &graded)
                            })
                            .collect::<Vec<_>>()
                    };
                    test_flips(&graded, &runs(GOLD, &gold), &runs(EMPTY, &empty))
                }
                None => Vec::new(),
            };
            let missing = |runs: &BTreeMap<u32, Category>, of: u32| {
                (0..of).filter(|k| !runs.contains_key(k)).count() as u32
            };
            let runs_missing = missing(&gold, repeats.gold) + missing(&empty, repeats.empty);
            let mut f = judge(
                id,
                gold.into_values().collect(),
                empty.into_values().collect(),
            );
            f.runs_missing = runs_missing;
            f.gold_needs_network = gold_network.contains(id);
            f.flaky |= !tests.is_empty();
            f.tests = tests;
            f
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use Category::*;

    #[test]
    fn judging_flags_each_kind_of_untrustworthy_instance() {
        let cases = [
            (
                vec![Resolved, Resolved],
                vec![Unresolved, Unresolved],
                false,
                "healthy",
            ),
            (
                vec![Resolved, Unresolved],
                vec![Unresolved, Unresolved],
                true,
                "gold flips",
            ),
            (
                vec![Unresolved, Unresolved],
                vec![Unresolved, Unresolved],
                true,
                "gold never resolves",
            ),
            (
                vec![Resolved, Resolved],
                vec![Resolved, Resolved],
                true,
                "resolves without a patch",
            ),
            (
                vec![Resolved, Resolved],
                vec![Unresolved, Error],
                true,
                "empty run flips",
            ),
            (
                vec![],
                vec![],
                false,
                "nothing ran: judged by findings, as runs missing",
            ),
        ];
        for (gold, empty, flagged, why) in cases {
            assert_eq!(judge("x", gold, empty).flagged(), flagged, "{why}");
        }
        let f = judge(
            "x",
            vec![Resolved, Unresolved],
            vec![Unresolved, Unresolved],
        );
        assert!(f.flaky && f.gold_not_resolved && !f.empty_resolves);
    }

    #[test]
    fn a_test_whose_status_changes_between_runs_of_one_patch_makes_the_instance_flaky() {
        use swe_eval_core::logparse::{END_TEST_OUTPUT, START_TEST_OUTPUT};
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path(), "v");
        let rows: Vec<Instance> = swe_eval_core::mini::DATASET
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let ds = Dataset::new(rows);
        let id = "swe-eval-mini__calc-1";
        let inst = ds.get(id).unwrap();
        let (f2p, p2p) = (inst.fail_to_pass(), inst.pass_to_pass());
        // Gold: every graded test passes in run 0; in run 1 one PASS_TO_PASS test fails and
        // another is not in the log. Empty: the FAIL_TO_PASS tests fail in both runs, and
        // run 1's log has no test output section (it does not make a flip).
        let log = |lines: Vec<String>| {
            format!(
                "{START_TEST_OUTPUT}\n{}\n{END_TEST_OUTPUT}\n",
                lines.join("\n")
            )
        };
        let all_pass: Vec<String> = f2p
            .iter()
            .chain(p2p)
            .map(|t| format!("PASSED {t}"))
            .collect();
        let mut one_fails = all_pass.clone();
        one_fails[f2p.len()] = format!("FAILED {}", p2p[0]);
        one_fails.remove(f2p.len() + 1);
        let empty_log: Vec<String> = f2p
            .iter()
            .map(|t| format!("FAILED {t}"))
            .chain(p2p.iter().map(|t| format!("PASSED {t}")))
            .collect();
        let runs = [
            (GOLD, 0, "resolved", log(all_pass)),
            (GOLD, 1, "unresolved", log(one_fails)),
            (EMPTY, 0, "unresolved", log(empty_log)),
            (EMPTY, 1, "unresolved", "no markers here\n".to_string()),
        ];
        let mut lines = Vec::new();
        for (model, sample, category, text) in &runs {
            let d = layout.prediction_dir(model, id, *sample);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join(swe_eval_core::report::TEST_OUTPUT_FILE), text).unwrap();
            lines.push(verdict_line(id, model, *sample, category, false));
        }
        std::fs::write(layout.jsonl_path(), lines.join("\n") + "\n").unwrap();
        let f = findings(&layout, &ds, &[id.to_string()], Repeats::each(2)).unwrap();
        let f = &f[0];
        assert!(f.flaky && f.gold_not_resolved);
        let s = |x: &str| Some(x.to_string());
        assert_eq!(
            f.tests,
            [
                TestFlip {
                    test: p2p[0].clone(),
                    gold: vec![s("PASSED"), s("FAILED")],
                    empty: vec![s("PASSED"), None],
                },
                TestFlip {
                    test: p2p[1].clone(),
                    gold: vec![s("PASSED"), s(MISSING)],
                    empty: vec![s("PASSED"), None],
                },
            ]
        );
        let row = f.flaky_row(&inst.repo);
        assert!(row.flaky && row.repo == "swe-eval-mini/calc" && row.tests.len() == 2);

        // Stable statuses and verdicts: not flaky.
        let stable = test_flips(
            &["a".into()],
            &[
                Some(vec!["PASSED".into()]),
                None,
                Some(vec!["PASSED".into()]),
            ],
            &[Some(vec!["FAILED".into()]), Some(vec!["FAILED".into()])],
        );
        assert!(stable.is_empty());
    }

    fn verdict_line(id: &str, model: &str, sample: u32, category: &str, network: bool) -> String {
        serde_json::json!({
            "instance_id": id, "model": model, "sample": sample, "patch_hash": "h",
            "run_id": "v", "category": category, "resolved": category == "resolved",
            "strict_category": category, "strict_resolved": category == "resolved",
            "official_report": true, "applied_with": null, "fail_to_pass_success": 0,
            "fail_to_pass_failure": 1, "pass_to_pass_success": 0, "pass_to_pass_failure": 0,
            "test_exit_code": 1, "timed_out": false, "reason": null, "infra_retries": 0,
            "setup_secs": 1.0, "run_secs": 2.0, "teardown_secs": 0.5, "total_secs": 3.5,
            "shared_from": null, "needs_network": network
        })
        .to_string()
    }

    #[test]
    fn a_gold_run_unresolved_for_want_of_the_network_is_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path(), "v");
        let line = |id: &str, model: &str, category: &str, network: bool| {
            verdict_line(id, model, 0, category, network)
        };
        let lines = [
            line("a", GOLD, "unresolved", true),
            line("a", EMPTY, "unresolved", false),
            line("b", GOLD, "unresolved", false),
            line("b", EMPTY, "unresolved", false),
        ];
        std::fs::write(layout.jsonl_path(), lines.join("\n") + "\n").unwrap();
        let ids = ["a".into(), "b".into()];
        let f = findings(&layout, &Dataset::default(), &ids, Repeats::each(1)).unwrap();
        assert!(f[0].gold_not_resolved && f[0].gold_needs_network);
        assert!(f[1].gold_not_resolved && !f[1].gold_needs_network);
        assert!(f.iter().all(|f| f.runs_missing == 0));
    }

    #[test]
    fn runs_an_interrupted_validation_did_not_do_are_missing_not_failures() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path(), "v");
        let lines = [
            verdict_line("a", GOLD, 0, "resolved", false),
            verdict_line("a", GOLD, 2, "resolved", false),
            verdict_line("b", GOLD, 0, "resolved", false),
            verdict_line("b", GOLD, 1, "unresolved", false),
        ];
        std::fs::write(layout.jsonl_path(), lines.join("\n") + "\n").unwrap();
        let ids = ["a".into(), "b".into(), "c".into()];
        let f = findings(&layout, &Dataset::default(), &ids, Repeats::gold_only(3)).unwrap();
        let (a, b, c) = (&f[0], &f[1], &f[2]);
        // a: two of three gold runs done, both resolved: not failing, not yet validated.
        assert_eq!(a.runs_missing, 1);
        assert!(!a.gold_not_resolved && !a.flaky && a.flagged(), "{a:?}");
        // b: already flaky with a run missing.
        assert_eq!(b.runs_missing, 1);
        assert!(b.flaky && b.gold_not_resolved, "{b:?}");
        // c: never ran: not "gold does not resolve", every run missing.
        assert_eq!(c.runs_missing, 3);
        assert!(!c.gold_not_resolved && !c.flaky && c.flagged(), "{c:?}");
        // With the empty runs asked for too, they count as missing.
        let f = findings(&layout, &Dataset::default(), &ids, Repeats::each(3)).unwrap();
        assert_eq!((f[0].runs_missing, f[2].runs_missing), (4, 6));
    }
}
