//! Frozen environments: the exact packages each SWE-bench Verified instance's tests ran with,
//! and how the Debian flavour reproduces them from PyPI and Debian.
//!
//! `frozen_envs.json` carries over the facts of SWE-bench v4.1.0's
//! `swebench/resources/swebench-og/<owner>__<repo>/<number>/environment.yml` (one per Verified
//! instance; written by `scripts/frozen_envs_dump.py`, equal environments stored once): the
//! Python version, the conda packages (name=version) and the pip packages (name==version).
//!
//! Every conda name found there is mapped by `conda_map.json` (`conda_map.rs`) to PyPI, Debian,
//! `skip` or `none`; a name it does not know is reported as unmapped.
//!
//! How close a built environment is to its frozen one is measured in `freeze_check.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use serde::Deserialize;

use super::conda_map::{conda_map, CondaMap, CondaTarget};
use super::frozen_too_old::{too_old_table, TooOldTable};
use super::frozen_wheels::{wheel_table, Substitution, WheelTable};
pub use super::pkgname::normalize_name;
use super::DebianRelease;

const FROZEN_JSON: &str = include_str!("frozen_envs.json");

/// One frozen environment as SWE-bench records it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub struct FrozenEnv {
    /// The full Python version (`3.9.20`).
    pub python: String,
    /// Conda packages, `name=version`.
    pub conda: Vec<String>,
    /// Pip packages, `name==version`.
    pub pip: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct FrozenFile {
    envs: Vec<FrozenEnv>,
    instances: BTreeMap<String, usize>,
}

fn frozen_file() -> &'static FrozenFile {
    static FILE: OnceLock<FrozenFile> = OnceLock::new();
    FILE.get_or_init(|| {
        // Part of the binary and covered by tests: a parse failure is a build bug.
        let f: FrozenFile =
            serde_json::from_str(FROZEN_JSON).expect("src/spec/frozen_envs.json parses");
        for (id, &i) in &f.instances {
            assert!(i < f.envs.len(), "frozen_envs.json: {id} names env {i}");
        }
        f
    })
}

/// The frozen environment of an instance (SWE-bench Verified ids), if SWE-bench has one.
pub fn frozen_env(instance_id: &str) -> Option<&'static FrozenEnv> {
    let f = frozen_file();
    f.instances.get(instance_id).map(|&i| &f.envs[i])
}

/// Every instance id with a frozen environment, sorted.
pub fn frozen_instance_ids() -> impl Iterator<Item = &'static str> {
    frozen_file().instances.keys().map(String::as_str)
}

/// The distinct frozen environments.
pub fn frozen_envs() -> &'static [FrozenEnv] {
    &frozen_file().envs
}

/// A Python package of a frozen environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    /// The PyPI name (the conda name for packages with no PyPI source).
    pub name: String,
    /// The pinned version.
    pub version: String,
    /// `pip`, or `conda NAME` when it came from the conda list.
    pub origin: String,
}

/// How the Debian flavour builds one frozen environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvPlan {
    /// The frozen Python version.
    pub python: String,
    /// Installed from PyPI in one resolver run (`name==version`), sorted by name.
    pub pins: Vec<Pin>,
    /// Debian packages (sorted): mapped ones, and the compiler when one is needed.
    pub debian: Vec<String>,
    /// Python packages with no PyPI or Debian source: `(name=version, reason)`.
    pub unavailable: Vec<(String, String)>,
    /// Conda packages the mapping does not know (`name=version`).
    pub unmapped: Vec<String>,
    /// A compiler and Python's headers are installed.
    pub compiler: bool,
    /// Pins with no wheel for the image's Python, replaced by the nearest release with one
    /// (see `spec/frozen_wheels.rs`); `pins` holds the chosen versions.
    pub substituted: Vec<Substitution>,
}

impl EnvPlan {
    /// The requirements file: one `name==version` a line.
    pub fn requirements(&self) -> String {
        self.pins
            .iter()
            .map(|p| format!("{}=={}\n", p.name, p.version))
            .collect()
    }

    /// Everything the frozen file lists as a Python package, installable or not: what a built
    /// environment's `pip freeze` is compared with.
    pub fn expected(&self) -> Vec<Pin> {
        // A replaced pin is expected at its frozen version: it counts as different.
        let mut all: Vec<Pin> = self
            .pins
            .iter()
            .map(
                |p| match self.substituted.iter().find(|s| s.name == p.name) {
                    Some(s) => Pin {
                        version: s.frozen.clone(),
                        ..p.clone()
                    },
                    None => p.clone(),
                },
            )
            .collect();
        all.extend(self.unavailable.iter().map(|(nv, _)| {
            let (name, version) = nv.split_once('=').unwrap_or((nv, ""));
            Pin {
                name: name.to_string(),
                version: version.to_string(),
                origin: format!("conda {name}"),
            }
        }));
        all.sort_by_key(|p| normalize_name(&p.name));
        all
    }

    /// The pin of a package, by any spelling of its name.
    pub fn pin(&self, name: &str) -> Option<&Pin> {
        let n = normalize_name(name);
        self.pins.iter().find(|p| normalize_name(&p.name) == n)
    }

    /// Replaces each pin `table` says has no wheel for `python` (`major.minor`) by the nearest
    /// release that has one, and records it in `substituted`.
    pub fn replace_wheelless(&mut self, table: &WheelTable, python: &str) {
        self.substitute(python, false, |name, version| {
            table.replacement(name, version, python)
        });
    }

    /// Replaces each pin `table` says is too old to run on `python` (`major.minor`) by the
    /// first release that runs there, and records it in `substituted`.
    pub fn replace_too_old(&mut self, table: &TooOldTable, python: &str) {
        self.substitute(python, true, |name, version| {
            table.replacement(name, version, python)
        });
    }

    /// Replaces each pin `choose` gives another release for, recording it in `substituted`.
    fn substitute(
        &mut self,
        python: &str,
        too_old: bool,
        choose: impl Fn(&str, &str) -> Option<String>,
    ) {
        for pin in &mut self.pins {
            if let Some(chosen) = choose(&pin.name, &pin.version) {
                self.substituted.push(Substitution {
                    name: pin.name.clone(),
                    frozen: std::mem::replace(&mut pin.version, chosen.clone()),
                    chosen,
                    python: python.to_string(),
                    too_old,
                });
            }
        }
    }
}

impl FrozenEnv {
    /// `major.minor` of the frozen Python.
    pub fn python_minor(&self) -> String {
        self.python.split('.').take(2).collect::<Vec<_>>().join(".")
    }

    /// How to build this environment for `repo` on `release`, with `map`. Pip pins win over a
    /// conda package of the same PyPI name (pip ran last in the official environment).
    pub fn plan_with(&self, map: &CondaMap, repo: &str, release: DebianRelease) -> EnvPlan {
        let mut pins: BTreeMap<String, Pin> = BTreeMap::new();
        for p in &self.pip {
            let (name, version) = p.split_once("==").unwrap_or((p, ""));
            pins.insert(
                normalize_name(name),
                Pin {
                    name: name.to_string(),
                    version: version.to_string(),
                    origin: "pip".to_string(),
                },
            );
        }
        let mut debian = BTreeSet::new();
        let mut unavailable = Vec::new();
        let mut unmapped = Vec::new();
        for c in &self.conda {
            let (name, version) = c.split_once('=').unwrap_or((c, ""));
            match map.target(name) {
                None | Some(Err(_)) => unmapped.push(c.clone()),
                Some(Ok(CondaTarget::Pypi(pypi))) => {
                    pins.entry(normalize_name(pypi)).or_insert_with(|| Pin {
                        name: pypi.to_string(),
                        version: version.to_string(),
                        origin: format!("conda {name}"),
                    });
                }
                Some(Ok(CondaTarget::Debian(pkgs))) => {
                    debian.extend(pkgs.into_iter().map(str::to_string))
                }
                Some(Ok(CondaTarget::Skip(_))) => {}
                Some(Ok(CondaTarget::Unavailable(why))) => {
                    unavailable.push((c.clone(), why.to_string()))
                }
            }
        }
        let (_, debian_minor) = release.python();
        let frozen_minor = self
            .python
            .split('.')
            .nth(1)
            .and_then(|m| m.parse::<u32>().ok());
        // Old pins often lack wheels for a newer interpreter; development packages are there
        // to build against; some repositories build their own extensions.
        let compiler = frozen_minor != Some(debian_minor)
            || debian.iter().any(|d| d.ends_with("-dev"))
            || map.compiler_repos.iter().any(|r| r == repo);
        if compiler {
            debian.extend(map.compiler.iter().cloned());
        }
        EnvPlan {
            python: self.python.clone(),
            pins: pins.into_values().collect(),
            debian: debian.into_iter().collect(),
            unavailable,
            unmapped,
            compiler,
            substituted: Vec::new(),
        }
    }

    /// [`FrozenEnv::plan_with`] the mapping the binary carries, then the pins with no wheel
    /// for the release's Python replaced ([`EnvPlan::replace_wheelless`], the table the
    /// binary carries).
    pub fn plan(&self, repo: &str, release: DebianRelease) -> EnvPlan {
        let mut plan = self.plan_with(conda_map(), repo, release);
        plan.replace_wheelless(wheel_table(), &release.python_version());
        plan.replace_too_old(too_old_table(), &release.python_version());
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::super::conda_map::test_map as map;
    use super::*;

    fn env(python: &str, conda: &[&str], pip: &[&str]) -> FrozenEnv {
        FrozenEnv {
            python: python.to_string(),
            conda: conda.iter().map(|s| s.to_string()).collect(),
            pip: pip.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn plan_maps_every_conda_name_and_pip_wins() {
        let m = map(
            r#""python": "skip: interpreter", "numpy": "pypi:numpy", "setuptools_scm": "pypi:setuptools-scm", "graphviz": "debian:graphviz", "cdms2": "none: conda-forge only""#,
        );
        let e = env(
            "3.9.20",
            &[
                "python=3.9.20",
                "numpy=1.25.2",
                "setuptools_scm=8.1.0",
                "graphviz=12.0.0",
                "cdms2=3.1.5",
                "mystery=1.0",
            ],
            &["setuptools-scm==8.0.4", "six==1.16.0"],
        );
        let p = e.plan_with(&m, "o/r", DebianRelease::Bullseye);
        assert_eq!(
            p.requirements(),
            "numpy==1.25.2\nsetuptools-scm==8.0.4\nsix==1.16.0\n",
            "the pip pin of setuptools-scm wins over conda's setuptools_scm"
        );
        assert_eq!(p.pin("Setuptools_SCM").unwrap().origin, "pip");
        assert_eq!(p.pin("numpy").unwrap().origin, "conda numpy");
        assert_eq!(p.debian, vec!["graphviz"]);
        assert!(
            !p.compiler,
            "same python, no -dev package, no extension repo"
        );
        assert_eq!(
            p.unavailable,
            vec![("cdms2=3.1.5".to_string(), "conda-forge only".to_string())]
        );
        assert_eq!(p.unmapped, vec!["mystery=1.0"]);
        let names: Vec<_> = p.expected().into_iter().map(|p| p.name).collect();
        assert_eq!(names, ["cdms2", "numpy", "setuptools-scm", "six"]);
    }

    #[test]
    fn compiler_when_python_differs_dev_packages_or_extension_repo() {
        let m = map(r#""cairo": "debian:libcairo2-dev""#);
        let plain = env("3.9.20", &[], &["a==1"]);
        assert!(!plain.plan_with(&m, "o/r", DebianRelease::Bullseye).compiler);
        let p = plain.plan_with(&m, "a/ext", DebianRelease::Bullseye);
        assert!(p.compiler);
        assert_eq!(p.debian, vec!["build-essential", "python3-dev"]);
        assert!(
            env("3.6.13", &[], &[])
                .plan_with(&m, "o/r", DebianRelease::Bullseye)
                .compiler
        );
        let cairo =
            env("3.11.10", &["cairo=1.18.0"], &[]).plan_with(&m, "o/r", DebianRelease::Bookworm);
        assert_eq!(
            cairo.debian,
            vec!["build-essential", "libcairo2-dev", "python3-dev"]
        );
    }
}

/// The data the binary carries: SWE-bench's 500 frozen files and the mapping of their names.
#[cfg(test)]
mod data_tests {
    use super::*;

    #[test]
    fn all_verified_instances_have_one_and_equal_ones_are_stored_once() {
        assert_eq!(frozen_instance_ids().count(), 500);
        assert_eq!(frozen_envs().len(), 63);
        let distinct: BTreeSet<_> = frozen_envs().iter().collect();
        assert_eq!(
            distinct.len(),
            frozen_envs().len(),
            "no env is stored twice"
        );
        let repos: BTreeSet<_> = frozen_instance_ids()
            .map(|id| id.rsplit_once('-').unwrap().0)
            .collect();
        assert_eq!(repos.len(), 12, "{repos:?}");
    }

    #[test]
    fn a_frozen_file_reads_as_swebench_wrote_it() {
        // swebench-og/pytest-dev__pytest/5262/environment.yml
        let e = frozen_env("pytest-dev__pytest-5262").unwrap();
        assert_eq!(e.python, "3.9.20");
        assert_eq!(e.python_minor(), "3.9");
        assert!(e.conda.contains(&"libgcc-ng=11.2.0".to_string()));
        assert_eq!(
            e.pip,
            [
                "atomicwrites==1.4.1",
                "attrs==23.1.0",
                "more-itertools==10.1.0",
                "pluggy==0.11.0",
                "py==1.11.0",
                "setuptools==68.0.0",
                "six==1.16.0",
                "wcwidth==0.2.6"
            ]
        );
        let p = e.plan("pytest-dev/pytest", DebianRelease::Bullseye);
        assert_eq!(
            p.requirements(),
            "atomicwrites==1.4.1\nattrs==23.1.0\nmore-itertools==10.1.0\npluggy==0.11.0\npy==1.11.0\nsetuptools==68.0.0\nsix==1.16.0\nwcwidth==0.2.6\nwheel==0.44.0\n",
            "the pip list, and conda's wheel (pip, python and the runtime libraries skipped)"
        );
        assert_eq!(p.debian, ["tzdata"]);
        assert!(p.unavailable.is_empty() && p.unmapped.is_empty() && !p.compiler);
        assert!(frozen_env("pytest-dev__pytest-1").is_none());
    }

    #[test]
    fn every_conda_name_of_every_frozen_file_is_mapped() {
        let map = conda_map();
        let mut used = BTreeSet::new();
        for e in frozen_envs() {
            for c in &e.conda {
                let name = c.split('=').next().unwrap();
                match map.target(name) {
                    Some(Ok(_)) => {
                        used.insert(name);
                    }
                    other => panic!("conda name `{name}`: {other:?}"),
                }
            }
        }
        assert_eq!(
            used.len(),
            map.len(),
            "every mapping entry is used by some frozen file"
        );
    }

    #[test]
    fn python_packages_go_to_pypi_and_runtime_pieces_are_skipped() {
        let map = conda_map();
        for (conda, pypi) in [
            ("matplotlib-base", "matplotlib"),
            ("msgpack-python", "msgpack"),
            ("brotli-python", "Brotli"),
            ("python-tzdata", "tzdata"),
            ("pyqt", "PyQt5"),
            ("numpy", "numpy"),
            ("setuptools_scm", "setuptools-scm"),
        ] {
            assert_eq!(
                map.target(conda),
                Some(Ok(CondaTarget::Pypi(pypi))),
                "{conda}"
            );
        }
        for conda in [
            "python",
            "libgcc-ng",
            "_openmp_mutex",
            "ca-certificates",
            "openssl",
            "numpy-base",
            "hdf5",
        ] {
            assert!(
                matches!(map.target(conda), Some(Ok(CondaTarget::Skip(_)))),
                "{conda}"
            );
        }
        assert!(matches!(
            map.target("cdms2"),
            Some(Ok(CondaTarget::Unavailable(_)))
        ));
        assert_eq!(
            map.target("graphviz"),
            Some(Ok(CondaTarget::Debian(vec!["graphviz"])))
        );
    }

    /// The distinct frozen environments of a repository's instances (`owner__name`), each with
    /// the first instance that uses it.
    fn envs_of(repo_prefix: &str) -> Vec<(&'static str, &'static FrozenEnv)> {
        let mut seen = BTreeSet::new();
        frozen_instance_ids()
            .filter(|id| id.rsplit_once('-').unwrap().0 == repo_prefix)
            .map(|id| (id, frozen_env(id).unwrap()))
            .filter(|(_, e)| seen.insert(*e as *const FrozenEnv))
            .collect()
    }

    /// django, matplotlib and scikit-learn cannot be fetched here, so their environments are
    /// only rendered: each one from its frozen file, every pip pin verbatim, every conda Python
    /// package at its conda version under its PyPI name, the conda names with no source named,
    /// and the Python each gets. Facts from SWE-bench v4.1.0's `swebench-og` files.
    #[test]
    fn unfetchable_repositories_render_every_frozen_environment() {
        let map = conda_map();
        let mut seen = BTreeMap::new();
        for (prefix, repo) in [
            ("django__django", "django/django"),
            ("matplotlib__matplotlib", "matplotlib/matplotlib"),
            ("scikit-learn__scikit-learn", "scikit-learn/scikit-learn"),
        ] {
            let envs = envs_of(prefix);
            seen.insert(repo, envs.len());
            for (id, e) in envs {
                let choice = super::super::docker::debian_release_for_frozen(&e.python_minor());
                let p = e.plan(repo, choice.release);
                let reqs = p.requirements();
                assert!(p.unmapped.is_empty(), "{id}: {:?}", p.unmapped);
                // The frozen version of a pin, or the release that replaced it.
                let installed = |name: &str, version: &str| {
                    p.substituted
                        .iter()
                        .find(|s| s.name == name && s.frozen == version)
                        .map_or(version.to_string(), |s| s.chosen.clone())
                };
                for pin in e.pip.iter().filter(|l| !l.starts_with("pip==")) {
                    let (name, version) = pin.split_once("==").unwrap();
                    let line = format!("{name}=={}\n", installed(name, version));
                    assert!(reqs.contains(&line), "{id}: pip pin {pin}");
                }
                for c in &e.conda {
                    let (name, version) = c.split_once('=').unwrap();
                    match map.target(name).unwrap().unwrap() {
                        CondaTarget::Pypi(pypi) => {
                            let pin = p.pin(pypi).unwrap_or_else(|| panic!("{id}: {c}"));
                            if pin.origin != "pip" {
                                assert_eq!(pin.version, installed(pypi, version), "{id}: {c}");
                            }
                        }
                        CondaTarget::Debian(pkgs) => {
                            for d in pkgs {
                                assert!(p.debian.iter().any(|x| x == d), "{id}: {c}");
                            }
                        }
                        CondaTarget::Unavailable(_) => {
                            assert!(p.unavailable.iter().any(|(n, _)| n == c), "{id}: {c}")
                        }
                        CondaTarget::Skip(_) => {
                            assert!(!reqs.contains(&format!("\n{name}==")), "{id}: {c}")
                        }
                    }
                }
                let exact = ["3.9", "3.11"].contains(&e.python_minor().as_str());
                assert_eq!(choice.warning.is_none(), exact, "{id}: python {}", e.python);
                // A compiler for old pins on another Python, and for the C extensions of
                // matplotlib and scikit-learn.
                assert_eq!(p.compiler, !exact || repo != "django/django", "{id}");
            }
        }
        assert_eq!(
            seen,
            BTreeMap::from([
                ("django/django", 8),
                ("matplotlib/matplotlib", 8),
                ("scikit-learn/scikit-learn", 5)
            ])
        );

        // swebench-og/django__django/11099: Python 3.6 (bullseye's 3.9 is the nearest), the pip
        // list as is; pip, python and the conda runtime skipped; conda's setuptools and wheel.
        let d = frozen_env("django__django-11099").unwrap();
        assert_eq!(d.python, "3.6.13");
        let p = d.plan("django/django", DebianRelease::Bullseye);
        assert_eq!(
            p.pins.len(),
            36 + 3,
            "36 pip pins, conda's certifi, setuptools, wheel"
        );
        for pin in [
            "asgiref==3.4.1",
            "numpy==1.19.5",
            "pylibmc==1.6.3",
            "selenium==3.141.0",
            "setuptools==58.0.4",
            "wheel==0.37.1",
            "certifi==2021.5.30",
        ] {
            assert!(p.requirements().contains(&format!("{pin}\n")), "{pin}");
        }
        assert!(p.unavailable.is_empty() && p.unmapped.is_empty());

        // swebench-og/scikit-learn__scikit-learn/10297: everything from conda, numpy-base and
        // the BLAS pieces skipped. numpy 1.19.2 has no wheel for 3.9 (they came with 1.19.3).
        let s = frozen_env("scikit-learn__scikit-learn-10297").unwrap();
        assert!(s.pip.is_empty());
        let p = s.plan("scikit-learn/scikit-learn", DebianRelease::Bullseye);
        assert_eq!(
            p.substituted
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>(),
            ["numpy 1.19.2 -> 1.19.3"]
        );
        assert_eq!(
            p.expected()
                .iter()
                .find(|p| p.name == "numpy")
                .unwrap()
                .version,
            "1.19.2",
            "measured against the frozen version"
        );
        for pin in [
            "numpy==1.19.3",
            "scipy==1.5.2",
            "Cython==0.29.24",
            "pytest==6.2.4",
        ] {
            assert!(p.requirements().contains(&format!("{pin}\n")), "{pin}");
        }
        assert!(p.pin("numpy-base").is_none() && p.pin("libopenblas").is_none());

        // swebench-og/matplotlib__matplotlib/22719: Python 3.11, so bookworm exactly; cairo,
        // graphviz and pandoc from Debian; PyQt5 from PyPI; pygobject and wxpython named.
        let m = frozen_env("matplotlib__matplotlib-22719").unwrap();
        let choice = super::super::docker::debian_release_for_frozen(&m.python_minor());
        assert_eq!(choice.release, DebianRelease::Bookworm);
        let p = m.plan("matplotlib/matplotlib", choice.release);
        for d in ["graphviz", "libcairo2-dev", "pandoc"] {
            assert!(p.debian.iter().any(|x| x == d), "{d}: {:?}", p.debian);
        }
        assert_eq!(p.pin("pyqt5").unwrap().version, "5.15.10");
        assert_eq!(p.pin("numpy").unwrap().version, "1.25.2");
        let missing: Vec<_> = p.unavailable.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(missing, ["pygobject=3.50.0", "wxpython=4.2.2"]);
    }

    /// The pins replaced for want of a wheel, over every frozen environment of the repositories
    /// fetchable here, on the release each one gets: only xarray's numpy (frozen on 3.10, run
    /// on bookworm's 3.11) and astropy's Python 3.6 environment (on bullseye's 3.9); the
    /// environments whose Python is the release's own keep every pin.
    #[test]
    fn fetchable_repositories_replace_only_pins_with_no_wheel() {
        let mut got: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        for (prefix, repo) in [
            ("sympy__sympy", "sympy/sympy"),
            ("sphinx-doc__sphinx", "sphinx-doc/sphinx"),
            ("pydata__xarray", "pydata/xarray"),
            ("pytest-dev__pytest", "pytest-dev/pytest"),
            ("astropy__astropy", "astropy/astropy"),
            ("pylint-dev__pylint", "pylint-dev/pylint"),
            ("psf__requests", "psf/requests"),
            ("pallets__flask", "pallets/flask"),
        ] {
            for (id, e) in envs_of(prefix) {
                let release =
                    super::super::docker::debian_release_for_frozen(&e.python_minor()).release;
                let p = e.plan(repo, release);
                for s in &p.substituted {
                    let pin = p.pin(&s.name).unwrap();
                    assert_eq!(pin.version, s.chosen, "{id}");
                    assert!(p
                        .requirements()
                        .contains(&format!("{}=={}\n", s.name, s.chosen)));
                    let expected = p.expected();
                    let frozen = expected.iter().find(|x| x.name == s.name).unwrap();
                    assert_eq!(
                        frozen.version, s.frozen,
                        "{id}: compared with the frozen one"
                    );
                    assert_eq!(s.python, release.python_version());
                }
                got.entry(repo).or_default().extend(
                    p.substituted
                        .iter()
                        .map(|s| format!("{} on {}", s, s.python)),
                );
            }
        }
        got.retain(|_, v| !v.is_empty());
        let want = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(
            got,
            BTreeMap::from([
                ("pydata/xarray", want(&["numpy 1.23.0 -> 1.23.2 on 3.11"])),
                (
                    "astropy/astropy",
                    want(&[
                        "cython 0.27.3 -> 0.29.21 on 3.9",
                        "numpy 1.16.0 -> 1.19.3 on 3.9",
                        "pyerfa 1.7.0 -> 1.7.1 on 3.9",
                        "hypothesis 3.44.2 -> 4.19.0 on 3.9"
                    ])
                ),
            ])
        );
        // The spec names them (and the build log echoes the same line).
        let xr = frozen_env("pydata__xarray-7393").unwrap();
        let p = xr.plan("pydata/xarray", DebianRelease::Bookworm);
        let w = super::super::debian::frozen_warnings(&p);
        assert!(
            w.iter()
                .any(|w| w.contains("no wheel for python 3.11")
                    && w.contains("numpy 1.23.0 -> 1.23.2")),
            "{w:?}"
        );
        let old = frozen_env("astropy__astropy-7166").unwrap();
        let w = super::super::debian::frozen_warnings(
            &old.plan("astropy/astropy", DebianRelease::Bullseye),
        );
        assert!(
            w.iter().any(|w| w.contains("do not run on python 3.9")
                && w.contains("(src/spec/too_old.json): hypothesis 3.44.2 -> 4.19.0")
                && !w.contains("numpy")),
            "{w:?}"
        );
    }

    /// The repositories the network cannot bring here render all the same: every frozen file
    /// has a plan whose pins are exact and that names whatever it cannot install.
    #[test]
    fn every_frozen_environment_plans_with_exact_pins() {
        let mut unavailable = BTreeSet::new();
        for id in frozen_instance_ids() {
            let e = frozen_env(id).unwrap();
            let repo = id.rsplit_once('-').unwrap().0.replacen("__", "/", 1);
            let release =
                super::super::docker::debian_release_for_frozen(&e.python_minor()).release;
            let p = e.plan(&repo, release);
            assert!(p.unmapped.is_empty(), "{id}: {:?}", p.unmapped);
            assert!(!p.pins.is_empty(), "{id}");
            for pin in &p.pins {
                assert!(
                    !pin.version.is_empty() && !pin.name.contains(' '),
                    "{id}: {pin:?}"
                );
            }
            assert_eq!(
                p.expected().len(),
                p.pins.len() + p.unavailable.len(),
                "{id}: every Python package is expected"
            );
            if [
                "astropy/astropy",
                "matplotlib/matplotlib",
                "scikit-learn/scikit-learn",
            ]
            .contains(&repo.as_str())
            {
                assert!(p.compiler, "{id} builds C extensions");
            }
            unavailable.extend(
                p.unavailable
                    .iter()
                    .map(|(n, _)| n.split('=').next().unwrap().to_string()),
            );
        }
        assert_eq!(
            unavailable.into_iter().collect::<Vec<_>>(),
            [
                "cdat_info",
                "cdms2",
                "cdtime",
                "distarray",
                "esmpy",
                "pygobject",
                "wxpython"
            ],
            "the Python packages with no PyPI or Debian source"
        );
        let django = frozen_env("django__django-11099").unwrap();
        assert!(django
            .plan("django/django", DebianRelease::Bullseye)
            .pin("asgiref")
            .is_some());
    }
}
