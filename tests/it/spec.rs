//! Specs, test directives, eval scripts and Dockerfiles against the official harness:
//! - the 399 official `eval.sh` of the partial-Verified run, byte for byte;
//! - swebench 4.1.0's own rendering of every Verified repo/version (`tests/fixtures/spec/
//!   oracle.json`, written once by `scripts/spec_oracle.py`);
//! - `swe-eval spec` end to end.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use swe_eval_core::dataset::{self, Instance};
use swe_eval_core::spec::{self, table, DebianRelease, Flavour, RepoFiles, SpecOptions, TestSpec};

use crate::common;

const ORACLE: &str = include_str!("../fixtures/spec/oracle.json");

fn oracle() -> Value {
    serde_json::from_str(ORACLE).expect("oracle fixture parses")
}

fn partial_verified(ds: &Path) -> Vec<Instance> {
    let loaded = dataset::load(&ds.join("partial-verified/swebench_verified_partial.jsonl"))
        .expect("partial verified loads");
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    loaded.items
}

fn official_scripts(ds: &Path) -> BTreeMap<String, String> {
    let path = ds.join("predictions/pydantic-deep_minimax-m2.5/instance_eval_scripts.jsonl");
    let text = std::fs::read_to_string(&path).expect("eval scripts read");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("eval script row parses");
            (
                v["instance_id"].as_str().unwrap().to_string(),
                v["eval_sh"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The first line where two texts differ, for a readable failure.
fn first_difference(ours: &str, theirs: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.split('\n').collect(), theirs.split('\n').collect());
    for i in 0..a.len().max(b.len()) {
        let (x, y) = (a.get(i), b.get(i));
        if x != y {
            return format!("line {}:\n  ours:     {:?}\n  official: {:?}", i + 1, x, y);
        }
    }
    "identical".to_string()
}

#[test]
fn all_399_official_eval_scripts_are_byte_identical() {
    let ds = crate::require_shared!();
    let rows = partial_verified(&ds);
    let official = official_scripts(&ds);
    assert_eq!(official.len(), 399);
    let by_id: BTreeMap<&str, &Instance> =
        rows.iter().map(|r| (r.instance_id.as_str(), r)).collect();
    let mut matched = 0;
    let mut failures = Vec::new();
    for (id, expected) in &official {
        let inst = by_id
            .get(id.as_str())
            .unwrap_or_else(|| panic!("{id} not in the dataset"));
        let ts = TestSpec::new(inst, Flavour::Official).unwrap_or_else(|e| panic!("{e}"));
        if &ts.eval_script == expected {
            matched += 1;
        } else {
            failures.push(format!(
                "{id}: {}",
                first_difference(&ts.eval_script, expected)
            ));
        }
    }
    eprintln!("eval.sh byte-identical: {matched}/{}", official.len());
    assert!(
        failures.is_empty(),
        "{} differ; first: {}",
        failures.len(),
        failures[0]
    );
}

#[test]
fn test_directives_and_reset_files_match_the_oracle_on_399_patches() {
    let ds = crate::require_shared!();
    let rows = partial_verified(&ds);
    let oracle = oracle();
    let expected = oracle["rows"].as_object().unwrap();
    assert_eq!(expected.len(), 399);
    let mut checked = 0;
    for inst in &rows {
        let Some(want) = expected.get(&inst.instance_id) else {
            continue;
        };
        let patch = inst.test_patch.as_deref().unwrap();
        let strings = |v: &Value| -> Vec<String> {
            v.as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(
            spec::test_directives(&inst.repo, patch),
            strings(&want["directives"]),
            "{} directives",
            inst.instance_id
        );
        assert_eq!(
            spec::modified_files(patch),
            strings(&want["modified_files"]),
            "{} modified files",
            inst.instance_id
        );
        if let Some(key) = want.get("env_image_key") {
            let ts = TestSpec::new(inst, Flavour::Official).unwrap();
            assert_eq!(
                ts.env_image_tag,
                key.as_str().unwrap(),
                "{} env image",
                inst.instance_id
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 399);
}

/// A synthetic row as the oracle script rendered it.
fn synthetic(repo: &str, version: &str) -> Instance {
    serde_json::from_value(serde_json::json!({
        "instance_id": format!("{}-1", repo.replace('/', "__")),
        "repo": repo,
        "version": version,
        "base_commit": "0123456789abcdef0123456789abcdef01234567",
        "environment_setup_commit": "0123456789abcdef0123456789abcdef01234567",
        "test_patch": "diff --git a/tests/test_x.py b/tests/test_x.py\n--- a/tests/test_x.py\n+++ b/tests/test_x.py\n@@ -1 +1,2 @@\n x\n+y\n",
    }))
    .unwrap()
}

/// Repository files served from a map, as a mirror would serve them.
struct MapFiles(BTreeMap<String, String>);

impl RepoFiles for MapFiles {
    fn read(&self, commit: &str, path: &str) -> Option<String> {
        assert_eq!(
            commit, "0123456789abcdef0123456789abcdef01234567",
            "env setup commit"
        );
        self.0.get(path).cloned()
    }
}

/// One check per Verified repository over all its versions: the spec exists with the
/// oracle's facts, renders in both flavours, and where the oracle could render without the
/// network, our scripts, Dockerfiles and image names are its own.
fn check_repo(repo: &str) {
    let oracle = oracle();
    let versions = oracle["specs"][repo]
        .as_object()
        .unwrap_or_else(|| panic!("{repo} in oracle"));
    assert_eq!(
        table().versions(repo).len(),
        versions.len(),
        "{repo}: version count"
    );
    let mut compared = 0;
    for (version, entry) in versions {
        let ours = table()
            .get(repo, version)
            .unwrap_or_else(|| panic!("{repo} {version}: no spec"));
        let theirs = &entry["spec"];
        assert_eq!(
            ours.test_cmd,
            theirs["test_cmd"].as_str().unwrap(),
            "{repo} {version} test_cmd"
        );
        assert_eq!(
            ours.python,
            theirs["python"].as_str().unwrap(),
            "{repo} {version} python"
        );
        assert_eq!(
            ours.install.as_deref(),
            theirs["install"].as_str(),
            "{repo} {version} install"
        );
        assert_eq!(
            ours.packages.as_deref(),
            theirs["packages"].as_str(),
            "{repo} {version} packages"
        );
        let inst = synthetic(repo, version);
        // Specs that read requirements.txt/environment.yml were rendered by the oracle from
        // synthetic repository files; we read the same files.
        let files = entry.get("files").map(|f| {
            MapFiles(serde_json::from_value::<BTreeMap<String, String>>(f.clone()).unwrap())
        });
        let mut opts = SpecOptions::new(Flavour::Official);
        opts.repo_files = files.as_ref().map(|f| f as &dyn RepoFiles);
        let official = TestSpec::with_options(&inst, &opts).unwrap();
        let debian = TestSpec::new(&inst, Flavour::Debian).unwrap();
        assert!(debian
            .eval_script
            .contains(">>>>> Test Exit Code: $SWEBENCH_TEST_EXIT_CODE"));
        assert!(debian.eval_script.contains(": '>>>>> Start Test Output'"));
        assert!(
            !debian.eval_script.contains("conda"),
            "{repo} {version}: conda in debian eval.sh"
        );
        assert!(debian.debian_release.is_some());
        let Some(r) = entry.get("rendered") else {
            continue;
        };
        let s = |k: &str| r[k].as_str().unwrap();
        assert_eq!(
            official.eval_script,
            s("eval_script"),
            "{repo} {version}: eval.sh"
        );
        assert_eq!(
            official.setup_env_script,
            s("env_script"),
            "{repo} {version}: setup_env.sh"
        );
        assert_eq!(
            official.install_repo_script,
            s("install_repo_script"),
            "{repo} {version}: setup_repo.sh"
        );
        assert_eq!(
            official.env_image_tag,
            s("env_image_key"),
            "{repo} {version}: env image"
        );
        assert_eq!(
            official.instance_image_tag,
            s("instance_image_key"),
            "{repo} {version}: instance image"
        );
        assert_eq!(
            official.env_dockerfile,
            s("env_dockerfile"),
            "{repo} {version}: env Dockerfile"
        );
        assert_eq!(
            official.instance_dockerfile,
            s("instance_dockerfile"),
            "{repo} {version}: instance Dockerfile"
        );
        let mut no_row_image = official.clone();
        no_row_image.row_image = None;
        assert_eq!(
            no_row_image.official_image_name(None),
            s("remote_instance_image_key"),
            "{repo} {version}: registry name"
        );
        compared += 1;
    }
    eprintln!(
        "{repo}: {} versions, {compared} rendered and compared with swebench 4.1.0",
        versions.len()
    );
}

#[test]
fn spec_astropy() {
    check_repo("astropy/astropy");
}
#[test]
fn spec_django() {
    check_repo("django/django");
}
#[test]
fn spec_flask() {
    check_repo("pallets/flask");
}
#[test]
fn spec_matplotlib() {
    check_repo("matplotlib/matplotlib");
}
#[test]
fn spec_pylint() {
    check_repo("pylint-dev/pylint");
}
#[test]
fn spec_pytest() {
    check_repo("pytest-dev/pytest");
}
#[test]
fn spec_requests() {
    check_repo("psf/requests");
}
#[test]
fn spec_scikit_learn() {
    check_repo("scikit-learn/scikit-learn");
}
#[test]
fn spec_seaborn() {
    check_repo("mwaskom/seaborn");
}
#[test]
fn spec_sphinx() {
    check_repo("sphinx-doc/sphinx");
}
#[test]
fn spec_sympy() {
    check_repo("sympy/sympy");
}
#[test]
fn spec_xarray() {
    check_repo("pydata/xarray");
}

#[test]
fn official_base_dockerfile_matches_the_oracle() {
    assert_eq!(
        spec::official_base_dockerfile("x86_64"),
        oracle()["base_dockerfile"].as_str().unwrap()
    );
}

#[test]
fn mini_benchmark_spec_is_debian_pytest_without_install() {
    let inst: Instance = serde_json::from_value(serde_json::json!({
        "instance_id": "swe-eval-mini__calc-1",
        "repo": "swe-eval-mini/calc",
        "version": "0.1",
        "base_commit": "abc",
        "test_patch": "diff --git a/tests/test_calc.py b/tests/test_calc.py\n--- a/tests/test_calc.py\n+++ b/tests/test_calc.py\n@@ -1 +1,2 @@\n x\n+y\n",
    }))
    .unwrap();
    // Asked for the official flavour, the mini spec still renders for Debian (it has no conda).
    let ts = TestSpec::new(&inst, Flavour::Official).unwrap();
    assert_eq!(ts.flavour, Flavour::Debian);
    assert_eq!(ts.debian_release, Some(DebianRelease::Bookworm));
    assert_eq!(ts.log_parser, "parse_log_pytest");
    assert_eq!(ts.test_cmd, "pytest -rA tests/test_calc.py");
    assert!(!ts.eval_script.contains("pip install"));
    assert!(
        !ts.setup_env_script.contains("venv"),
        "no install step, no venv"
    );
    assert!(ts
        .env_dockerfile
        .starts_with("# swe-eval environment image"));
    assert!(ts
        .env_dockerfile
        .contains("FROM swe-eval/base.debian-bookworm:latest"));
    let lines: Vec<&str> = ts.eval_script.lines().collect();
    let start = lines
        .iter()
        .position(|l| *l == ": '>>>>> Start Test Output'")
        .unwrap();
    assert_eq!(lines[start + 1], "pytest -rA tests/test_calc.py");
    assert_eq!(lines[start + 2], "SWEBENCH_TEST_EXIT_CODE=$?");
    assert_eq!(lines[start + 3], ": '>>>>> End Test Output'");
    assert_eq!(
        lines[start + 4],
        "echo \">>>>> Test Exit Code: $SWEBENCH_TEST_EXIT_CODE\""
    );
}

#[test]
fn row_with_its_own_eval_script_uses_it_as_is() {
    let inst: Instance = serde_json::from_value(serde_json::json!({
        "instance_id": "org__proj-7",
        "repo": "org/proj",
        "version": "1.0",
        "base_commit": "abc",
        "image": "registry.example/proj:7",
        "eval_script": "#!/bin/bash\necho hi\n",
        "log_parser": "parse_log_go_test",
    }))
    .unwrap();
    let ts = TestSpec::new(&inst, Flavour::Debian).unwrap();
    assert!(ts.eval_script_from_row);
    assert_eq!(ts.eval_script, "#!/bin/bash\necho hi\n");
    assert_eq!(ts.log_parser, "parse_log_go_test");
    assert_eq!(ts.official_image_name(None), "registry.example/proj:7");
    assert_eq!(
        ts.official_image_name(Some("mirror")),
        "mirror/sweb.eval.x86_64.org_1776_proj-7:latest"
    );
}

#[test]
fn debian_flavour_pins_build_tools_and_skips_build_isolation() {
    let inst = synthetic("pytest-dev/pytest", "5.4");
    let ts = TestSpec::new(&inst, Flavour::Debian).unwrap();
    assert_eq!(ts.debian_release, Some(DebianRelease::Bullseye));
    assert!(ts.warnings.is_empty(), "{:?}", ts.warnings);
    assert!(ts.setup_env_script.contains("python3 -m venv /opt/testbed"));
    assert!(ts.setup_env_script.contains("setuptools==68.0.0"));
    assert!(ts
        .eval_script
        .contains("python -m pip install --no-build-isolation -e ."));
    assert!(ts
        .install_repo_script
        .contains("python -m pip install --no-build-isolation -e ."));
    assert!(ts
        .env_image_tag
        .starts_with("swe-eval.env.py.bullseye.x86_64."));
    // 3.10 has no Debian release: the nearest, with a warning.
    let x = TestSpec::new(&synthetic("pydata/xarray", "2022.06"), Flavour::Debian).unwrap();
    assert_eq!(x.debian_release, Some(DebianRelease::Bullseye));
    assert!(x.warnings.iter().any(|w| w.contains("nearest")));
}

#[test]
fn unknown_versions_and_repos_are_errors_that_name_the_row() {
    let mut inst = synthetic("django/django", "9.9");
    let e = TestSpec::new(&inst, Flavour::Official)
        .unwrap_err()
        .to_string();
    assert!(e.contains("django__django-1") && e.contains("9.9"), "{e}");
    inst.repo = "nobody/nothing".into();
    let e = TestSpec::new(&inst, Flavour::Official)
        .unwrap_err()
        .to_string();
    assert!(e.contains("nobody/nothing"), "{e}");
}

#[test]
fn cli_writes_every_instance_and_reports_bad_rows() {
    let ds = crate::require_shared!();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("rows.jsonl");
    let rows = partial_verified(&ds);
    let pick: Vec<&Instance> = rows
        .iter()
        .filter(|r| r.test_patch.is_some())
        .take(3)
        .collect();
    let mut text: String = pick
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    let mut bad = pick[0].clone();
    bad.instance_id = "bad__row-1".into();
    bad.version = Some("0.0.0".into());
    text.push_str(&(serde_json::to_string(&bad).unwrap() + "\n"));
    std::fs::write(&data, text).unwrap();
    let out = tmp.path().join("out");
    let run = std::process::Command::new(common::bin())
        .args(["spec", "--dataset"])
        .arg(&data)
        .arg("--output")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("bad__row-1") && stderr.contains("row 4"),
        "{stderr}"
    );
    for inst in &pick {
        let dir = out.join(&inst.instance_id);
        for f in [
            "eval.sh",
            "env.Dockerfile",
            "instance.Dockerfile",
            "setup_env.sh",
            "setup_repo.sh",
        ] {
            assert!(dir.join(f).is_file(), "{} missing {f}", inst.instance_id);
        }
        let want = TestSpec::new(inst, Flavour::Official).unwrap().eval_script;
        assert_eq!(std::fs::read_to_string(dir.join("eval.sh")).unwrap(), want);
    }
    assert!(!out.join("bad__row-1").exists());
}

#[test]
fn every_rendered_script_is_valid_bash_in_both_flavours() {
    let ds = crate::require_shared!();
    let rows = partial_verified(&ds);
    let tmp = tempfile::tempdir().unwrap();
    let mut n = 0;
    for inst in rows.iter().filter(|r| r.test_patch.is_some()) {
        for flavour in [Flavour::Official, Flavour::Debian] {
            let ts = TestSpec::new(inst, flavour).unwrap();
            for (name, text) in [
                ("eval", &ts.eval_script),
                ("env", &ts.setup_env_script),
                ("repo", &ts.install_repo_script),
            ] {
                let path = tmp
                    .path()
                    .join(format!("{}.{flavour}.{name}.sh", inst.instance_id));
                std::fs::write(path, text).unwrap();
                n += 1;
            }
            if flavour == Flavour::Debian {
                assert!(!ts.eval_script.contains("conda"), "{}", inst.instance_id);
                assert!(ts
                    .eval_script
                    .contains("echo \">>>>> Test Exit Code: $SWEBENCH_TEST_EXIT_CODE\""));
            }
        }
    }
    // One shell for all files: `bash -n` parses without running.
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg("for f in \"$1\"/*.sh; do bash -n \"$f\" 2>&1 || echo \"BAD $f\"; done")
        .arg("bash")
        .arg(tmp.path())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(!report.contains("BAD"), "{report}");
    assert_eq!(n, 399 * 2 * 3);
}

/// Runs `git` in `dir` with fixed identities and dates, failing the test on error.
fn git(dir: &Path, home: &Path, args: &[&str], date: &str) -> String {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The Debian `setup_repo.sh` on a mirror-like clone (later commits on two branches, a later
/// tag): only the base commit's history survives, the official no-future-commits check
/// passes, and HEAD is the `SWE-bench` commit on top of the base.
#[test]
fn debian_repo_setup_removes_later_history_from_a_mirror_clone() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, repo) = (tmp.path().join("home"), tmp.path().join("testbed"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&repo).unwrap();
    let d1 = "2020-01-01T00:00:00Z";
    git(&repo, &home, &["init", "-q", "-b", "master"], d1);
    std::fs::write(repo.join("a.py"), "x = 1\n").unwrap();
    git(&repo, &home, &["add", "."], d1);
    git(&repo, &home, &["commit", "-qm", "base"], d1);
    git(&repo, &home, &["tag", "v1"], d1);
    let base = git(&repo, &home, &["rev-parse", "HEAD"], d1);
    std::fs::write(repo.join("a.py"), "x = 2\n").unwrap();
    git(
        &repo,
        &home,
        &["commit", "-qam", "later"],
        "2021-01-01T00:00:00Z",
    );
    git(&repo, &home, &["tag", "v2"], "2021-01-01T00:00:00Z");
    git(
        &repo,
        &home,
        &["checkout", "-qb", "feature"],
        "2021-01-01T00:00:00Z",
    );
    std::fs::write(repo.join("b.py"), "y = 1\n").unwrap();
    git(&repo, &home, &["add", "."], "2022-01-01T00:00:00Z");
    git(
        &repo,
        &home,
        &["commit", "-qm", "feature"],
        "2022-01-01T00:00:00Z",
    );

    let inst: Instance = serde_json::from_value(serde_json::json!({
        "instance_id": "swe-eval-mini__t-1",
        "repo": "swe-eval-mini/t",
        "version": "0.1",
        "base_commit": base,
        "test_patch": "diff --git a/t.py b/t.py\n--- a/t.py\n+++ b/t.py\n@@ -1 +1 @@\n-a\n+b\n",
    }))
    .unwrap();
    let ts = TestSpec::new(&inst, Flavour::Debian).unwrap();
    let script = ts
        .install_repo_script
        .replace("/testbed", repo.to_str().unwrap());
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .env("HOME", &home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "setup_repo.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d = "2030-01-01T00:00:00Z";
    assert_eq!(git(&repo, &home, &["rev-parse", "HEAD~1"], d), base);
    assert_eq!(
        git(&repo, &home, &["log", "-1", "--format=%s"], d),
        "SWE-bench"
    );
    assert_eq!(git(&repo, &home, &["rev-list", "--all", "--count"], d), "2");
    assert_eq!(git(&repo, &home, &["tag", "-l"], d), "v1");
    assert_eq!(
        std::fs::read_to_string(repo.join("a.py")).unwrap(),
        "x = 1\n"
    );
    assert!(!repo.join("b.py").exists());
}

#[test]
fn debian_release_choice_table() {
    // (spec python, release, exact match?, reason)
    let cases = [
        ("3.9", DebianRelease::Bullseye, true, "bullseye ships 3.9"),
        ("3.11", DebianRelease::Bookworm, true, "bookworm ships 3.11"),
        ("3.13", DebianRelease::Trixie, true, "trixie ships 3.13"),
        (
            "3.5",
            DebianRelease::Bullseye,
            false,
            "older than any: the oldest",
        ),
        ("3.6", DebianRelease::Bullseye, false, "nearest is 3.9"),
        ("3.7", DebianRelease::Bullseye, false, "nearest is 3.9"),
        ("3.8", DebianRelease::Bullseye, false, "nearest is 3.9"),
        (
            "3.10",
            DebianRelease::Bullseye,
            false,
            "tie 3.9/3.11 goes to the older",
        ),
        (
            "3.12",
            DebianRelease::Bookworm,
            false,
            "tie 3.11/3.13 goes to the older",
        ),
        (
            "3.14",
            DebianRelease::Trixie,
            false,
            "newer than any: the newest",
        ),
        (
            "2.7",
            DebianRelease::Bullseye,
            false,
            "no Python 3 at all: the oldest, with a warning",
        ),
    ];
    for (py, release, exact, why) in cases {
        let c = spec::debian_release_for(py);
        assert_eq!(c.release, release, "{py}: {why}");
        assert_eq!(c.warning.is_none(), exact, "{py}: {why}");
    }
    assert!(spec::debian_release_for("three").warning.is_some());
    // A frozen environment's Python: the nearest too, but a tie goes to the newer release
    // (its recent pins need that Python or newer); elsewhere the same as a spec's.
    for (py, release) in [
        ("3.10", DebianRelease::Bookworm),
        ("3.12", DebianRelease::Trixie),
        ("3.6", DebianRelease::Bullseye),
        ("3.8", DebianRelease::Bullseye),
        ("3.9", DebianRelease::Bullseye),
        ("3.11", DebianRelease::Bookworm),
        ("3.14", DebianRelease::Trixie),
        ("2.7", DebianRelease::Bullseye),
    ] {
        let c = spec::debian_release_for_frozen(py);
        assert_eq!(c.release, release, "frozen {py}");
        assert_eq!(
            c.warning.is_none(),
            spec::debian_release_for(py).warning.is_none(),
            "frozen {py}"
        );
    }
    let xarray = spec::frozen_env("pydata__xarray-4094").unwrap();
    assert_eq!(xarray.python, "3.10.15");
    let mut row = synthetic("pydata/xarray", "2022.06");
    row.instance_id = "pydata__xarray-4094".to_string();
    let ts = TestSpec::new(&row, Flavour::Debian).unwrap();
    assert_eq!(ts.debian_release, Some(DebianRelease::Bookworm));
    assert!(ts
        .warnings
        .iter()
        .any(|w| w.contains("using bookworm (python 3.11)")));
    // Every Python version in the table maps somewhere, and the Verified ones as above.
    for repo in table().specs.keys() {
        for v in table().versions(repo) {
            let py = &table().get(repo, v).unwrap().python;
            let c = spec::debian_release_for(py);
            assert_eq!(
                c.warning.is_none(),
                ["3.9", "3.11", "3.13"].contains(&py.as_str()),
                "{repo} {v}"
            );
        }
    }
}

/// `swe-eval spec --repo django/django=PATH` reads requirements from the local clone (git, at
/// the row's commit): the conda environment script and its image tag are then exactly what
/// swebench 4.1.0 renders from the same files, with no network.
#[test]
fn cli_reads_requirements_from_a_local_clone_like_the_official_harness() {
    let oracle = oracle();
    let entry = &oracle["specs"]["django/django"]["3.0"];
    let files: BTreeMap<String, String> = serde_json::from_value(entry["files"].clone()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (home, repo) = (tmp.path().join("home"), tmp.path().join("django"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&repo).unwrap();
    let d = "2020-01-01T00:00:00Z";
    git(&repo, &home, &["init", "-q"], d);
    for (path, text) in &files {
        let p = repo.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    git(&repo, &home, &["add", "."], d);
    git(&repo, &home, &["commit", "-qm", "base"], d);
    let base = git(&repo, &home, &["rev-parse", "HEAD"], d);
    // A later commit changes the requirements: the row's commit must be the one read.
    std::fs::write(repo.join("tests/requirements/py3.txt"), "later\n").unwrap();
    git(
        &repo,
        &home,
        &["commit", "-qam", "later"],
        "2021-01-01T00:00:00Z",
    );

    let row = serde_json::json!({
        "patch": "",
        "instance_id": "django__django-1",
        "repo": "django/django",
        "version": "3.0",
        "base_commit": base,
        "test_patch": "diff --git a/tests/a/tests.py b/tests/a/tests.py\n--- a/tests/a/tests.py\n+++ b/tests/a/tests.py\n@@ -1 +1 @@\n-a\n+b\n",
    });
    let data = tmp.path().join("rows.jsonl");
    std::fs::write(&data, format!("{row}\n")).unwrap();
    let out = tmp.path().join("out");
    let run = std::process::Command::new(common::bin())
        .args(["spec", "--dataset"])
        .arg(&data)
        .arg("--output")
        .arg(&out)
        .arg("--repo")
        .arg(format!("django/django={}", repo.display()))
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let dir = out.join("django__django-1");
    let env = std::fs::read_to_string(dir.join("setup_env.sh")).unwrap();
    assert_eq!(env, entry["rendered"]["env_script"].as_str().unwrap());
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("spec.json")).unwrap()).unwrap();
    assert_eq!(meta["env_image"], entry["rendered"]["env_image_key"]);
}

/// A Verified instance in the Debian flavour gets its frozen environment: the exact pins in
/// one `pip install -r`, the frozen Python's Debian release, the Debian packages the mapping
/// names; without frozen environments, the spec's own lists as before.
#[test]
fn debian_flavour_installs_the_frozen_environment() {
    let mut inst = synthetic("pytest-dev/pytest", "4.5");
    inst.instance_id = "pytest-dev__pytest-5262".to_string();
    let ts = TestSpec::new(&inst, Flavour::Debian).unwrap();
    let plan = ts
        .frozen_env
        .as_ref()
        .expect("pytest-5262 has a frozen environment");
    assert_eq!(ts.python_version, "3.9.20");
    assert_eq!(ts.debian_release, Some(DebianRelease::Bullseye));
    assert!(ts.warnings.is_empty(), "{:?}", ts.warnings);
    let env = &ts.setup_env_script;
    for pin in [
        "pluggy==0.11.0\n",
        "more-itertools==10.1.0\n",
        "wheel==0.44.0\n",
    ] {
        assert!(env.contains(pin), "{pin} in {env}");
    }
    assert_eq!(
        env.matches("pip install -r /root/frozen-requirements.txt")
            .count(),
        1,
        "one resolver run: {env}"
    );
    assert!(env.contains("python -m pip install pip==24.0 setuptools==68.0.0 wheel==0.44.0"));
    assert_eq!(plan.pins.len(), 9);
    assert!(ts
        .env_dockerfile
        .contains("apt-get install -y --no-install-recommends tzdata"));
    assert!(
        ts.instance_build_network,
        "pip install -e . gets PyPI while building"
    );

    // The same environment for another instance with the same frozen file: the same image.
    let mut other = inst.clone();
    other.instance_id = "pytest-dev__pytest-5227".to_string();
    let other = TestSpec::new(&other, Flavour::Debian).unwrap();
    assert_eq!(
        spec::frozen_env("pytest-dev__pytest-5227") == spec::frozen_env("pytest-dev__pytest-5262"),
        other.env_image_tag == ts.env_image_tag,
        "equal frozen environments share the image, different ones do not"
    );

    let mut opts = SpecOptions::new(Flavour::Debian);
    opts.frozen_envs = false;
    let loose = TestSpec::with_options(&inst, &opts).unwrap();
    assert!(loose.frozen_env.is_none());
    assert!(!loose.setup_env_script.contains("frozen-requirements"));
    assert_ne!(loose.env_image_tag, ts.env_image_tag);

    // Official flavour: untouched (the PyPI swebench 4.1.0 wheel has no frozen files).
    let official = TestSpec::new(&inst, Flavour::Official).unwrap();
    assert!(official.frozen_env.is_none());
    assert!(!official.setup_env_script.contains("frozen"));
}

/// Every Verified row of the shared data renders from its frozen environment, with one
/// environment image per distinct frozen file, and names what it cannot install.
#[test]
fn every_verified_row_renders_its_frozen_environment() {
    let ds = crate::require_shared!();
    let rows = partial_verified(&ds);
    let mut images: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    // Frozen files that differ only in what is not installed (conda runtime libraries) give
    // the same environment.
    let mut plans: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    let mut n = 0;
    for inst in rows.iter().filter(|r| r.test_patch.is_some()) {
        let ts = TestSpec::new(inst, Flavour::Debian).unwrap();
        let env = spec::frozen_env(&inst.instance_id)
            .unwrap_or_else(|| panic!("{}: no frozen environment", inst.instance_id));
        let plan = ts.frozen_env.as_ref().unwrap();
        assert_eq!(ts.python_version, env.python, "{}", inst.instance_id);
        for pin in &plan.pins {
            let line = format!("\n{}=={}\n", pin.name, pin.version);
            assert!(
                ts.setup_env_script.contains(&line),
                "{}: {line}",
                inst.instance_id
            );
        }
        if !plan.unavailable.is_empty() {
            let w = ts.warnings.join("\n");
            for (name, _) in &plan.unavailable {
                assert!(
                    w.contains(name.as_str()),
                    "{}: {name} not reported",
                    inst.instance_id
                );
                assert!(
                    ts.setup_env_script.contains(name.as_str()),
                    "{}: {name} not in the build log",
                    inst.instance_id
                );
            }
        }
        images
            .entry(inst.repo.clone())
            .or_default()
            .insert(ts.env_image_tag.clone());
        let key = format!("{} {:?} {}", env.python, plan.debian, plan.requirements());
        plans.entry(inst.repo.clone()).or_default().insert(key);
        n += 1;
    }
    assert_eq!(n, 399);
    for (repo, tags) in &images {
        assert_eq!(
            tags.len(),
            plans[repo].len(),
            "{repo}: one image per distinct environment"
        );
    }
}

/// The Debian flavour's instance build installs `[build-system] requires` before the
/// repository's own `pip install --no-build-isolation`: the reader must see every requirement,
/// extras in brackets included (pytest's `"setuptools-scm[toml]>=6.2.3"` once ended the list).
#[test]
fn build_requirements_reader_keeps_requirements_with_extras() {
    if !common::require_program("python3") {
        return;
    }
    let read = |pyproject: &str| -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("pyproject.toml"), pyproject).unwrap();
        let out = std::process::Command::new("python3")
            .arg("-c")
            .arg(spec::BUILD_REQUIREMENTS_READER)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    };
    let multiline = "[build-system]\nrequires = [\n  # keep in sync with setup.py\n  \"setuptools>=45.0\",\n  \"setuptools-scm[toml]>=6.2.3\",\n  \"wheel\",\n]\nbuild-backend = \"setuptools.build_meta\"\n\n[tool.other]\nrequires = [\"not-this\"]\n";
    assert_eq!(
        read(multiline),
        ["setuptools>=45.0", "setuptools-scm[toml]>=6.2.3", "wheel"]
    );
    let one_line =
        "[build-system]\nrequires = ['setuptools', \"setuptools_scm[toml]>=3.4\", 'wheel']\n";
    assert_eq!(
        read(one_line),
        ["setuptools", "setuptools_scm[toml]>=3.4", "wheel"]
    );
    assert!(read("[tool.black]\nline-length = 88\n").is_empty());
}

/// `tox --current-env` runs the tests through a symlink to the venv's interpreter, which alone
/// is the bare system Python: the Debian instance script makes the system Python's site read
/// the venv's packages for sphinx (all of whose specs test that way), and only there.
#[test]
fn tox_current_env_gets_the_environment_through_the_system_python() {
    let sphinx = TestSpec::new(&synthetic("sphinx-doc/sphinx", "4.1"), Flavour::Debian).unwrap();
    assert!(sphinx.eval_script.contains("tox --current-env"));
    let repo = &sphinx.install_repo_script;
    let line = repo
        .lines()
        .find(|l| l.contains("swe_eval_testbed.pth"))
        .unwrap_or_else(|| panic!("no .pth line in {repo}"));
    assert!(line.contains("/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])'"));
    assert!(line.contains("site.addsitedir('$swe_site')"), "{line}");
    let pytest = TestSpec::new(&synthetic("pytest-dev/pytest", "5.4"), Flavour::Debian).unwrap();
    assert!(!pytest.install_repo_script.contains("swe_eval_testbed.pth"));
    let official =
        TestSpec::new(&synthetic("sphinx-doc/sphinx", "4.1"), Flavour::Official).unwrap();
    assert!(!official
        .install_repo_script
        .contains("swe_eval_testbed.pth"));
}

/// The Debian instance build installs the repository's build requirements with the
/// environment's packages held at their versions; one that would change them is left out and
/// named (run by bash with a stand-in `python` that plays pip: the whole set conflicts,
/// `oldest-supported-numpy` alone does).
#[test]
fn build_requirements_keep_the_environments_packages() {
    if !common::require_program("bash") {
        return;
    }
    let mut inst = synthetic("pytest-dev/pytest", "4.5");
    inst.instance_id = "pytest-dev__pytest-5262".to_string();
    let ts = TestSpec::new(&inst, Flavour::Debian).unwrap();
    let script = &ts.install_repo_script;
    let start = script
        .find("if [ -f pyproject.toml ]")
        .unwrap_or_else(|| panic!("a build requirements step: {script}"));
    let end = start + script[start..].find("\nfi\nfi").expect("its end") + "\nfi\nfi".len();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let block = script[start..end].replace("/tmp/", &format!("{}/", d.display()));
    std::fs::write(d.join("pyproject.toml"), "").unwrap();
    std::fs::create_dir(d.join("bin")).unwrap();
    let python = d.join("bin/python");
    std::fs::write(
        &python,
        r#"#!/bin/bash
echo "$*" >> "$CALLS"
case "$1 $2 $3" in
  "- "*) cat > /dev/null; printf 'setuptools\noldest-supported-numpy\ncython==0.29.30\n' ;;
  "-m pip freeze") printf 'numpy==1.25.2\npip==24.0\nsetuptools==68.0.0\nrepo @ file:///testbed\nPyYAML==6.0.1\n' ;;
  "-m pip install") case "$4" in -r|oldest-supported-numpy) exit 1 ;; esac ;;
esac
"#,
    )
    .unwrap();
    std::fs::set_permissions(&python, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let calls = d.join("calls.log");
    let out = std::process::Command::new("bash")
        .args(["-euo", "pipefail", "-c", &block])
        .current_dir(d)
        .env("PATH", format!("{}:/usr/bin:/bin", d.join("bin").display()))
        .env("CALLS", &calls)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let constraints = std::fs::read_to_string(d.join("swe_build_constraints.txt")).unwrap();
    assert_eq!(
        constraints, "setuptools==68.0.0\nnumpy==1.25.2\nPyYAML==6.0.1\n",
        "the setuptools pin, then every installed package at its version but pip's and \
         setuptools' own (and no URL line)"
    );
    let cons = d.join("swe_build_constraints.txt");
    let installs: Vec<String> = std::fs::read_to_string(&calls)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("-m pip install"))
        .map(str::to_string)
        .collect();
    let c = cons.display();
    assert_eq!(
        installs,
        [
            format!(
                "-m pip install -r {}/swe_build_reqs.txt -c {c}",
                d.display()
            ),
            format!("-m pip install setuptools -c {c}"),
            format!("-m pip install oldest-supported-numpy -c {c}"),
            format!("-m pip install cython==0.29.30 -c {c}"),
        ]
    );
    assert!(
        stdout.contains(
            "swe-eval: build requirements not installed (they would change the environment's packages): oldest-supported-numpy\n"
        ),
        "{stdout}"
    );
}
