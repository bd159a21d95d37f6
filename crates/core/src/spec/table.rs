//! The per-repository, per-version specification table, as data.
//!
//! `specs.json` carries over the facts of swebench 4.1.0's `MAP_REPO_VERSION_TO_SPECS` for the
//! Python repositories (generated once by `scripts/spec_dump_table.py`), plus the project's own
//! mini benchmark under the wildcard repo `swe-eval-mini/*`. It is parsed once, on first use.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::{Map, Value};

/// Install and test facts for one repository at one version.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RepoSpec {
    /// The Python version the environment is created with.
    pub python: String,
    /// Conda packages: a list of shell words, or `requirements.txt` / `environment.yml` to
    /// read them from the repository.
    #[serde(default)]
    pub packages: Option<String>,
    /// Run in the instance image after `pre_install`, and again by the eval script.
    #[serde(default)]
    pub install: Option<String>,
    /// Shell commands run before `install`.
    #[serde(default)]
    pub pre_install: Vec<String>,
    /// `None` and `Some(empty)` differ: the official env script has a bare `pip install`
    /// line for the latter.
    #[serde(default)]
    pub pip_packages: Option<Vec<String>>,
    /// Run at the top of the eval script (locale exports and the like).
    #[serde(default)]
    pub eval_commands: Vec<String>,
    /// The test command, before the directives are appended.
    pub test_cmd: String,
    /// `conda create` then `conda env update`, instead of `conda env create`.
    #[serde(default)]
    pub no_use_env: bool,
    /// The tests run as a non-root user.
    #[serde(default)]
    pub execute_test_as_nonroot: bool,
    /// CPU limit the official harness applies (in billionths of a CPU).
    #[serde(default)]
    pub nano_cpus: Option<u64>,
    /// Extra environment variables for the test run (the project's own specs only).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The image flavour this spec is meant for, when it has only one (`debian` for the mini
    /// benchmark).
    #[serde(default)]
    pub flavour: Option<String>,
    /// The official `docker_specs` overrides (none of the Python specs sets one today).
    #[serde(default)]
    pub docker_specs: Map<String, Value>,
}

#[derive(Debug, Deserialize)]
struct TableFile {
    specs: BTreeMap<String, serde_json::Map<String, Value>>,
    log_parsers: BTreeMap<String, String>,
    requirements_paths: BTreeMap<String, Vec<String>>,
    environment_yml_paths: BTreeMap<String, Vec<String>>,
    base_commit_branch: BTreeMap<String, BTreeMap<String, String>>,
}

/// The whole table, parsed.
#[derive(Debug)]
pub struct Table {
    /// repo -> version -> spec, versions in the order the official table lists them.
    pub specs: BTreeMap<String, Vec<(String, RepoSpec)>>,
    /// repo -> official log parser name.
    pub log_parsers: BTreeMap<String, String>,
    /// repo -> where its `requirements.txt` files may be.
    pub requirements_paths: BTreeMap<String, Vec<String>>,
    /// repo -> where its `environment.yml` files may be.
    pub environment_yml_paths: BTreeMap<String, Vec<String>>,
    /// repo -> base commit -> the branch to fetch it from (commits not on the default branch).
    pub base_commit_branch: BTreeMap<String, BTreeMap<String, String>>,
}

const SPECS_JSON: &str = include_str!("specs.json");

/// The suffix that makes a table key match every repo under an owner (`swe-eval-mini/*`).
const WILDCARD: &str = "/*";

impl Table {
    fn parse() -> Table {
        // The file is part of the binary and covered by tests; a parse failure is a build bug.
        let file: TableFile = serde_json::from_str(SPECS_JSON).expect("src/spec/specs.json parses");
        let specs = file
            .specs
            .into_iter()
            .map(|(repo, versions)| {
                let versions = versions
                    .into_iter()
                    .map(|(v, s)| {
                        let spec: RepoSpec = serde_json::from_value(s)
                            .unwrap_or_else(|e| panic!("specs.json {repo} {v}: {e}"));
                        (v, spec)
                    })
                    .collect();
                (repo, versions)
            })
            .collect();
        Table {
            specs,
            log_parsers: file.log_parsers,
            requirements_paths: file.requirements_paths,
            environment_yml_paths: file.environment_yml_paths,
            base_commit_branch: file.base_commit_branch,
        }
    }

    /// The table key a repository falls under: itself, or `owner/*`.
    fn key<'a>(&'a self, repo: &str) -> Option<&'a str> {
        if let Some((k, _)) = self.specs.get_key_value(repo) {
            return Some(k);
        }
        let owner = repo.split('/').next()?;
        let wild = format!("{owner}{WILDCARD}");
        self.specs.get_key_value(&wild).map(|(k, _)| k.as_str())
    }

    /// The spec of `repo` at `version`.
    pub fn get(&self, repo: &str, version: &str) -> Option<&RepoSpec> {
        let key = self.key(repo)?;
        self.specs[key]
            .iter()
            .find(|(v, _)| v == version)
            .map(|(_, s)| s)
    }

    /// The versions the table knows for `repo`.
    pub fn versions(&self, repo: &str) -> Vec<&str> {
        match self.key(repo) {
            Some(k) => self.specs[k].iter().map(|(v, _)| v.as_str()).collect(),
            None => Vec::new(),
        }
    }

    /// The official log-parser name of `repo` (`parse_log_django`, ...).
    pub fn log_parser(&self, repo: &str) -> Option<&str> {
        let key = self.key(repo)?;
        self.log_parsers.get(key).map(String::as_str)
    }

    /// Where `requirements.txt` may live in `repo`, in the order the official harness tries.
    pub fn requirements_paths(&self, repo: &str) -> &[String] {
        self.requirements_paths
            .get(repo)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Where `environment.yml` may live in `repo`, in order.
    pub fn environment_yml_paths(&self, repo: &str) -> &[String] {
        self.environment_yml_paths
            .get(repo)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The branch to clone for a base commit that is not on the default branch.
    pub fn base_commit_branch(&self, repo: &str, base_commit: &str) -> Option<&str> {
        self.base_commit_branch
            .get(repo)?
            .get(base_commit)
            .map(String::as_str)
    }
}

/// The table, parsed on first use.
pub fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(Table::parse)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_verified_repo_is_in_the_table() {
        for repo in [
            "astropy/astropy",
            "django/django",
            "pallets/flask",
            "matplotlib/matplotlib",
            "pylint-dev/pylint",
            "pytest-dev/pytest",
            "psf/requests",
            "scikit-learn/scikit-learn",
            "mwaskom/seaborn",
            "sphinx-doc/sphinx",
            "sympy/sympy",
            "pydata/xarray",
        ] {
            assert!(!table().versions(repo).is_empty(), "{repo} has no versions");
            assert!(table().log_parser(repo).is_some(), "{repo} has no parser");
        }
    }

    #[test]
    fn mini_repos_match_the_wildcard() {
        let s = table().get("swe-eval-mini/calc", "0.1").expect("mini spec");
        assert_eq!(s.test_cmd, "pytest -rA");
        assert_eq!(s.flavour.as_deref(), Some("debian"));
        assert_eq!(
            table().log_parser("swe-eval-mini/calc"),
            Some("parse_log_pytest")
        );
        assert!(table().get("swe-eval-mini/calc", "9.9").is_none());
    }

    #[test]
    fn django_19_runs_without_parallel_flag() {
        let s = table().get("django/django", "1.9").unwrap();
        assert_eq!(s.test_cmd, "./tests/runtests.py --verbosity 2");
    }
}
