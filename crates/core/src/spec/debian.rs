//! The Debian flavour's scripts: the same shape and markers as the official ones, with
//! Debian's `python3` in a venv, packages from PyPI (a frozen environment's pins in one
//! resolver run, with a fallback pin by pin), the repository's build requirements held to the
//! environment's versions, and the test command's exit code printed.

use super::docker;
use super::frozen::EnvPlan;
use super::script_parts::{
    commit_setup, environment_yml_fetch_script, prune_history, requirements_fetch_script,
    script_text, shell_quote, Ctx, ENV_HEREDOC,
};
use super::table::table;
use super::{RepoFiles, END_TEST_OUTPUT, REPO_DIR, START_TEST_OUTPUT, TEST_EXIT_CODE};

/// The Debian flavour's virtual environment (on `PATH` through the env Dockerfile).
const VENV_DIR: &str = "/opt/testbed";

/// pip for every Debian image: recent enough for Python 3.13, still accepts
/// `--no-use-pep517` and the legacy version strings old specs pin.
const PIP_PIN: &str = "pip==24.0";

const WHEEL_PIN: &str = "wheel==0.40.0";

/// The Debian flavour's renderer: what the environment image installs, and what is left to
/// the instance image for want of repository files.
pub(super) struct Debian {
    /// Python packages are installed at all (otherwise the image's `python3` is used as is).
    venv: bool,
    env_commands: Vec<String>,
    /// Commands for `setup_repo.sh` before `pre_install` (requirements from the checkout).
    deferred: Vec<String>,
    /// The era's setuptools pin, also a constraint on the repository's build requirements.
    setuptools: String,
}

impl Debian {
    pub(super) fn new(
        ctx: &Ctx<'_>,
        release: docker::DebianRelease,
        files: Option<&dyn RepoFiles>,
        warnings: &mut Vec<String>,
    ) -> Debian {
        let spec = ctx.spec;
        let pip_packages = spec.pip_packages.as_deref().unwrap_or(&[]);
        let venv = spec.packages.is_some() || !pip_packages.is_empty() || spec.install.is_some();
        let mut env_commands = Vec::new();
        let mut deferred = Vec::new();
        let setuptools = setuptools_pin(&spec.python, release).to_string();
        if venv {
            // An isolated venv: with the system site-packages visible, pip would take the
            // image's own pytest as satisfying `pytest`, and `/usr/bin/pytest` (system Python)
            // would then run the tests without the packages installed here.
            env_commands.push(format!("python3 -m venv {VENV_DIR}"));
            env_commands.push(format!(
                "python -m pip install {PIP_PIN} {setuptools} {WHEEL_PIN}"
            ));
        }
        let checkout_get = format!("cat \"{REPO_DIR}/$1\"");
        match spec.packages.as_deref() {
            None | Some("") => {}
            Some("requirements.txt") => {
                let dest = "$HOME/requirements.txt";
                let target = match ctx.requirements(files) {
                    Some(reqs) => {
                        env_commands.push(format!(
                            "cat <<'{ENV_HEREDOC}' > {dest}\n{reqs}\n{ENV_HEREDOC}"
                        ));
                        &mut env_commands
                    }
                    None => {
                        deferred.push(requirements_fetch_script(
                            table().requirements_paths(&ctx.inst.repo),
                            &checkout_get,
                            dest,
                        ));
                        &mut deferred
                    }
                };
                target.push(format!("python -m pip install -r {dest}"));
                target.push(format!("rm {dest}"));
            }
            Some("environment.yml") => {
                warnings.push("conda environment.yml dependencies are installed from PyPI by name, best effort".to_string());
                let dest = "/tmp/environment.yml";
                let target = match ctx.environment_yml(files) {
                    Some(yml) => {
                        env_commands.push(format!(
                            "cat <<'{ENV_HEREDOC}' > {dest}\n{yml}\n{ENV_HEREDOC}"
                        ));
                        &mut env_commands
                    }
                    None => {
                        deferred.push(environment_yml_fetch_script(
                            table().environment_yml_paths(&ctx.inst.repo),
                            &checkout_get,
                            dest,
                        ));
                        &mut deferred
                    }
                };
                target.push(yml_pip_install(dest));
                target.push(format!("rm {dest}"));
            }
            Some(pkgs) => {
                env_commands.push(format!("python -m pip install {}", conda_to_pip(pkgs)))
            }
        }
        if !pip_packages.is_empty() {
            env_commands.push(format!("python -m pip install {}", pip_packages.join(" ")));
        }
        Debian {
            venv,
            env_commands,
            deferred,
            setuptools,
        }
    }

    /// A frozen environment: its pins in one resolver run, in a fresh venv.
    pub(super) fn frozen(plan: &EnvPlan, release: docker::DebianRelease) -> Debian {
        // The environment's own setuptools, else the era's (build requirements are constrained
        // to it, and the install runs without build isolation).
        let setuptools = plan.pin("setuptools").map_or_else(
            || setuptools_pin(&plan.python, release).to_string(),
            |p| format!("setuptools=={}", p.version),
        );
        let wheel = plan.pin("wheel").map_or_else(
            || WHEEL_PIN.to_string(),
            |p| format!("wheel=={}", p.version),
        );
        let dest = "/root/frozen-requirements.txt";
        let mut env_commands = vec![
            format!("python3 -m venv {VENV_DIR}"),
            format!("python -m pip install {PIP_PIN} {setuptools} {wheel}"),
            format!(
                "cat <<'{ENV_HEREDOC}' > {dest}\n{}{ENV_HEREDOC}",
                plan.requirements()
            ),
        ];
        env_commands.extend(
            frozen_warnings(plan)
                .into_iter()
                .map(|w| format!("echo {}", shell_quote(&format!("swe-eval: {w}")))),
        );
        env_commands.push(pinned_install(dest));
        env_commands.push(format!("rm {dest}"));
        Debian {
            venv: true,
            env_commands,
            deferred: Vec::new(),
            setuptools,
        }
    }

    pub(super) fn env_script(&self) -> String {
        script_text("set -euxo pipefail", &self.env_commands)
    }

    pub(super) fn repo_script(&self, ctx: &Ctx<'_>) -> String {
        let base = ctx.base();
        let mut l = vec![
            format!("cd {REPO_DIR}"),
            format!("git config --global --add safe.directory {REPO_DIR}"),
            // `core.fileMode=false`: the history image's files are 777 already (as after the
            // official `chmod -R 777`); a mode is no local change to undo file by file. The
            // refresh first: Docker gave the files new stat data when it committed their
            // layer, and a forced checkout rewrites (copies up) every file whose stat differs.
            "git -c core.fileMode=false update-index -q --refresh || true".to_string(),
            format!("git -c core.fileMode=false checkout -q -f {base}"),
            // The history image holds no branch or remote; these lines keep the script right
            // for a clone that carries them (only the base commit's history, as the official
            // single-branch clone).
            "git remote remove origin 2>/dev/null || true".to_string(),
            r#"git for-each-ref --format='%(refname)' | { grep -v '^refs/tags/' || true; } | while read -r ref; do git update-ref --no-deref -d "$ref"; done"#.to_string(),
            "git checkout -q -b main".to_string(),
            format!("git -c core.fileMode=false reset --hard {base}"),
            "git clean -fdxq".to_string(),
            // `chmod -R 777` touching only what is not so already: the history image's files
            // are, and a chmod would copy every one of them up into this layer. Not in the
            // work tree of a checked-out submodule (the history image holds those the sources
            // give): the official chmod ran before its clone, and a mode change would show it
            // modified.
            format!(r#"swe_subs=(); while IFS= read -r -d '' p; do if [ -e "{REPO_DIR}/$p/.git" ]; then swe_subs+=(-path "{REPO_DIR}/$p" -prune -o); fi; done < <(git ls-files -s -z | {{ grep -z '^160000 ' || true; }} | cut -z -f2-)"#),
            format!(r#"find {REPO_DIR} "${{swe_subs[@]}}" ! -type l ! -perm 777 -exec chmod 777 {{}} +"#),
        ];
        l.extend(prune_history(base, false));
        if self.venv {
            l.push(r#"echo "Current environment: $VIRTUAL_ENV ($(python --version))""#.to_string());
            if ctx.test_cmd.contains("--current-env") {
                l.push(BASE_INTERPRETER_SEES_ENV.to_string());
            }
        }
        l.extend(self.deferred.iter().cloned());
        l.extend(ctx.spec.pre_install.iter().map(|c| offline_tolerant(c)));
        if let Some(install) = ctx.install() {
            if install.contains("pip install") {
                l.push(build_requirements(&self.setuptools));
            }
            l.push(no_build_isolation(install));
        }
        // The chmod made every file executable, which the official setup commit does not
        // record: there the `git reset --hard` after its `chmod -R 777` gives each file back
        // the repository's mode, and its setup commit holds content changes only (none of the
        // 399 official eval logs' `git show` lists a mode change). So modes are no change
        // here (`core.fileMode=false`, kept in the repository's config for the eval script's
        // `git status`, `diff` and `checkout` too): with the modes recorded, a `git checkout
        // <base>` of an eval script whose test patch only adds files finds every file
        // "modified" and aborts where the official one switches to the base commit
        // (sphinx-doc__sphinx-9711: resolved here, unresolved officially). The refresh
        // compares without writing: a hash of every file again would make git "freshen"
        // (touch) the pack holding each blob, copying that pack up whole into this layer.
        l.push("git config core.fileMode false".to_string());
        l.push("git update-index -q --refresh || true".to_string());
        l.extend(commit_setup());
        script_text("set -euxo pipefail", &l)
    }

    pub(super) fn eval_script(&self, ctx: &Ctx<'_>) -> String {
        let mut l = vec![format!("cd {REPO_DIR}")];
        l.extend(
            ctx.spec
                .env
                .iter()
                .map(|(k, v)| format!("export {k}={}", shell_quote(v))),
        );
        l.extend(ctx.spec.eval_commands.iter().cloned());
        l.extend([
            format!("git config --global --add safe.directory {REPO_DIR}"),
            format!("cd {REPO_DIR}"),
            "git status".to_string(),
            "git show".to_string(),
            format!("git -c core.fileMode=false diff {}", ctx.base()),
        ]);
        l.extend(ctx.install().map(no_build_isolation));
        l.extend([
            ctx.reset_tests(),
            ctx.apply_test_patch(),
            format!(": '{START_TEST_OUTPUT}'"),
            ctx.test_cmd.to_string(),
            "SWEBENCH_TEST_EXIT_CODE=$?".to_string(),
            format!(": '{END_TEST_OUTPUT}'"),
            format!("echo \"{TEST_EXIT_CODE}: $SWEBENCH_TEST_EXIT_CODE\""),
            ctx.reset_tests(),
        ]);
        script_text("set -uxo pipefail", &l)
    }
}

/// `tox --current-env` (tox-current-env) runs the tests with a symlink to `sys.executable` in
/// `.tox/<env>/bin`. In the official conda environment that symlink leads to the
/// environment's own interpreter, whose prefix is the environment; a venv's interpreter found
/// through a symlink outside the venv finds no `pyvenv.cfg` and is the bare system Python, so
/// sphinx's tests failed on `import docutils` (every sphinx instance from 8459 on, gold and
/// empty alike). A `.pth` file in the system Python's first site folder adds the venv's
/// site-packages (and its own `.pth` files: editable installs) ahead of Debian's
/// `dist-packages`; the venv itself never reads the system site folders.
const BASE_INTERPRETER_SEES_ENV: &str = r#"swe_site=$(python -c 'import sysconfig; print(sysconfig.get_path("purelib"))') && swe_base=$(/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])') && mkdir -p "$swe_base" && echo "import site; site.addsitedir('$swe_site')" > "$swe_base/swe_eval_testbed.pth""#;

/// Installs the repository's `[build-system] requires` (after `pre_install`, which may pin
/// them), with the era's setuptools as a constraint: the install then runs without build
/// isolation, at image build and again, offline, in the eval script.
/// The Python program that prints `[build-system] requires` of `pyproject.toml`, one per
/// line. The list is read up to its own closing bracket: a requirement's extras
/// (`"setuptools-scm[toml]>=6.2.3"`) hold brackets too (a first reading stopped at the first
/// `]`, and pytest's `setuptools_scm` was never installed: version 0.0.0, no `_version.py`).
pub const BUILD_REQUIREMENTS_READER: &str = r#"import re
t = open("pyproject.toml").read()
m = re.search(r"^\[build-system\](.*?)(?=^\[|\Z)", t, re.S | re.M)
b = re.sub(r"(?m)#.*$", "", m.group(1)) if m else ""
r = re.search(r"requires\s*=\s*\[((?:[^\]\"']|\"[^\"]*\"|'[^']*')*)\]", b, re.S)
print("\n".join(re.findall(r"[\"']([^\"']+)[\"']", r.group(1))) if r else "")"#;

/// Installs the repository's build requirements into the environment, the packages already
/// there held at their versions (official builds put build requirements in an isolated
/// environment, so they never change the test environment: `oldest-supported-numpy` would
/// otherwise downgrade its numpy, and the install then fetch the newest one the project allows).
/// Requirements that cannot be had without changing an installed package are left out, named.
fn build_requirements(setuptools: &str) -> String {
    let reader = BUILD_REQUIREMENTS_READER;
    format!(
        "if [ -f pyproject.toml ]; then python - > /tmp/swe_build_reqs.txt <<'EOF_SWE_BUILD'\n{reader}\nEOF_SWE_BUILD\n\
         {{ echo {setuptools}; python -m pip freeze --all | grep -E '^[A-Za-z0-9._-]+==' | grep -v -i -E '^(pip|setuptools)==' || true; }} > /tmp/swe_build_constraints.txt\n\
         if [ -s /tmp/swe_build_reqs.txt ] && ! python -m pip install -r /tmp/swe_build_reqs.txt -c /tmp/swe_build_constraints.txt; then\n  \
         swe_left=\"\"; while read -r req; do python -m pip install \"$req\" -c /tmp/swe_build_constraints.txt || swe_left=\"$swe_left $req\"; done < /tmp/swe_build_reqs.txt\n  \
         echo \"swe-eval: build requirements not installed (they would change the environment's packages):$swe_left\"\n\
         fi\n\
         fi"
    )
}

/// setuptools for the spec's era, within what the image's interpreter can run: old specs
/// need `setup.py` features later releases removed (`use_2to3` went in 58); Python 3.12+
/// has no `distutils`, which setuptools before 60 needs.
fn setuptools_pin(spec_python: &str, release: docker::DebianRelease) -> &'static str {
    let minor = spec_python
        .split('.')
        .nth(1)
        .and_then(|m| m.parse::<u32>().ok())
        .unwrap_or(9);
    let (_, image_minor) = release.python();
    if image_minor >= 12 {
        return "setuptools==70.0.0";
    }
    match minor {
        0..=6 => "setuptools==57.5.0",
        7..=9 => "setuptools==68.0.0",
        _ => "setuptools==70.0.0",
    }
}

/// pip takes `name==1.2` where conda takes `name=1.2`.
fn conda_to_pip(pkgs: &str) -> String {
    let chars: Vec<char> = pkgs.chars().collect();
    let mut out = String::with_capacity(pkgs.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| chars[j]);
        let next = chars.get(i + 1).copied();
        if c == '=' && !matches!(prev, Some('=' | '<' | '>' | '!' | '~')) && next != Some('=') {
            out.push_str("==");
        } else {
            out.push(c);
        }
    }
    out
}

/// Installs the plain dependencies of an `environment.yml` from PyPI one by one (conda-only
/// names fail and are skipped).
fn yml_pip_install(path: &str) -> String {
    // Only the `dependencies:` block (not `channels:`), no URLs; `name=1.2` becomes `name==1.2`.
    format!(
        r#"awk '/^dependencies:/{{d=1;next}} /^[^[:space:]-]/{{d=0}} d' {path} | grep -v -e '://' -e 'git+' | sed -n -E 's/^[[:space:]]*-[[:space:]]+([A-Za-z0-9_.-]+)[[:space:]]*(([<>=!~]=?)[[:space:]]*([^[:space:]#]+))?.*$/\1\3\4/p' | grep -v -E '^(python|pip)([<>=!~]|$)' | sed -E 's/^([A-Za-z0-9_.-]+)=([^=])/\1==\2/' | while read -r pkg; do python -m pip install "$pkg" || echo "swe-eval: skipped $pkg"; done"#
    )
}

/// What a frozen environment's plan leaves out, by name: for the spec's warnings and the
/// environment build's log.
pub(super) fn frozen_warnings(plan: &EnvPlan) -> Vec<String> {
    let mut w = Vec::new();
    if !plan.unavailable.is_empty() {
        let names: Vec<String> = plan
            .unavailable
            .iter()
            .map(|(n, why)| format!("{n} ({why})"))
            .collect();
        w.push(format!(
            "frozen environment: not installable, will be missing: {}",
            names.join("; ")
        ));
    }
    if !plan.unmapped.is_empty() {
        w.push(format!(
            "frozen environment: conda packages with no mapping (src/spec/conda_map.json), not installed: {}",
            plan.unmapped.join(", ")
        ));
    }
    /// What replaced a kind of pin, for the Python it was replaced on.
    type Why = fn(&str) -> String;
    let kinds: [(bool, Why); 2] = [
        (false, |py| {
            format!("no wheel for python {py} at the frozen version, the nearest release with one installed instead (src/spec/wheels.json)")
        }),
        (true, |py| {
            format!("releases that do not run on python {py}, the first that does installed instead (src/spec/too_old.json)")
        }),
    ];
    for (too_old, what) in kinds {
        let these: Vec<_> = plan
            .substituted
            .iter()
            .filter(|s| s.too_old == too_old)
            .collect();
        if let Some(first) = these.first() {
            let names: Vec<String> = these.iter().map(|s| s.to_string()).collect();
            w.push(format!(
                "frozen environment: {}: {}",
                what(&first.python),
                names.join(", ")
            ));
        }
    }
    w
}

/// Where the fallback of [`pinned_install`] collects the pins' wheels (removed after).
const WHEELHOUSE: &str = "/tmp/swe-eval-wheels";

/// Sorts the pins of a requirements file (`name==version` a line), run by the environment's
/// own Python inside the build with the `packaging` pip carries (names compared as PEP 503
/// says, versions as PEP 440 does). `with-wheel FILE DIR` prints the pins that have a wheel
/// in DIR; `not-installed FILE` those the environment does not hold at that version.
const PINS_PY: &str = r#"import os, sys
from importlib.metadata import distributions
from pip._vendor.packaging.utils import canonicalize_name, parse_wheel_filename
from pip._vendor.packaging.version import InvalidVersion, Version
def same(a, b):
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a.lower() == b.lower()
mode, path = sys.argv[1], sys.argv[2]
have = {}
if mode == "with-wheel":
    for f in os.listdir(sys.argv[3]):
        try:
            name, version, _, _ = parse_wheel_filename(f)
        except Exception:
            continue
        have[name] = str(version)
else:
    have = {canonicalize_name(d.metadata["Name"]): d.version for d in distributions()}
for line in open(path):
    pin = line.strip()
    name, sep, version = pin.partition("==")
    name = canonicalize_name(name)
    hit = bool(sep) and name in have and same(have[name], version)
    if pin and hit == (mode == "with-wheel"):
        print(pin)
"#;

/// Installs a pinned requirements file in one resolver run. Should that fail (PyPI's metadata
/// refusing a combination conda's allowed, a pin with no distribution for this interpreter or
/// whose source does not build), the pins are installed without dependency resolution, as the
/// frozen set stands: every wheel pip can get or build for them is collected in one run
/// (`pip wheel` keeps going past a source that fails to build) and installed from there in
/// one more (as from an index: `pip freeze` names them `name==version`); the pins still not
/// installed are then tried one by one, and those that fail are named in the build log, as is
/// what `pip check` finds amiss in the result.
fn pinned_install(path: &str) -> String {
    format!(
        r#"if ! python -m pip install -r {path}; then
  echo 'swe-eval: the pinned set did not install in one resolver run; installing the pins without dependency resolution'
  python -m pip wheel --no-deps -w {WHEELHOUSE} -r {path} || echo 'swe-eval: not every pin gave a wheel; the others are retried one by one'
  cat <<'{ENV_HEREDOC}' > /tmp/swe-eval-pins.py
{PINS_PY}{ENV_HEREDOC}
  mkdir -p {WHEELHOUSE}
  python /tmp/swe-eval-pins.py with-wheel {path} {WHEELHOUSE} > /tmp/swe-eval-pins.txt
  if [ -s /tmp/swe-eval-pins.txt ]; then
    python -m pip install --no-deps --no-index --find-links {WHEELHOUSE} -r /tmp/swe-eval-pins.txt || echo 'swe-eval: the collected wheels did not install together; the pins are retried one by one'
  fi
  rm -rf {WHEELHOUSE}
  python /tmp/swe-eval-pins.py not-installed {path} > /tmp/swe-eval-pins.txt
  swe_failed=""
  while read -r pin; do python -m pip install --no-deps "$pin" || swe_failed="$swe_failed $pin"; done < /tmp/swe-eval-pins.txt
  rm /tmp/swe-eval-pins.py /tmp/swe-eval-pins.txt
  [ -z "$swe_failed" ] || echo "swe-eval: frozen pins not installed:$swe_failed"
  python -m pip check || echo 'swe-eval: pip check (above) finds the frozen set at odds with PyPI metadata'
fi"#
    )
}

/// Pre-install steps patch build files or fetch system packages (`apt-get`, `wget`), which
/// need the network; offline, a failed step is reported and the build goes on rather than
/// failing the whole image. Braces, not a subshell, so assignments still take effect.
fn offline_tolerant(cmd: &str) -> String {
    format!("{{ {cmd} ; }} || echo 'swe-eval: pre_install step failed (offline?), continuing'")
}

/// The repository's own install must not fetch build tools (the tests run offline).
fn no_build_isolation(cmd: &str) -> String {
    if cmd.contains("--no-build-isolation") || !cmd.contains("pip install") {
        return cmd.to_string();
    }
    cmd.replace("pip install", "pip install --no-build-isolation")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conda_pins_become_pip_pins() {
        assert_eq!(
            conda_to_pip("numpy=1.19 scipy>=1.2 'a==1' b"),
            "numpy==1.19 scipy>=1.2 'a==1' b"
        );
    }

    #[test]
    fn pinned_install_falls_back_to_collected_wheels_then_to_pins_one_by_one() {
        let s = pinned_install("/r.txt");
        let at = |needle: &str| s.find(needle).unwrap_or_else(|| panic!("{needle} in {s}"));
        // One resolver run first; only when it fails, the fallback, in this order.
        assert_eq!(s.matches("pip install -r /r.txt").count(), 1, "{s}");
        assert!(s.starts_with("if ! python -m pip install -r /r.txt; then"));
        let steps = [
            "pip wheel --no-deps -w /tmp/swe-eval-wheels -r /r.txt",
            "with-wheel /r.txt /tmp/swe-eval-wheels",
            "pip install --no-deps --no-index --find-links /tmp/swe-eval-wheels -r /tmp/swe-eval-pins.txt",
            "not-installed /r.txt",
            r#"python -m pip install --no-deps "$pin""#,
            "frozen pins not installed:",
            "python -m pip check",
        ];
        for w in steps.windows(2) {
            assert!(at(w[0]) < at(w[1]), "{} before {}: {s}", w[0], w[1]);
        }
        // The helper is written by a heredoc that it must not end early.
        assert!(!PINS_PY.contains(ENV_HEREDOC));
        assert!(s.trim_end().ends_with("fi"));
    }

    #[test]
    fn install_gets_no_build_isolation_once() {
        assert_eq!(
            no_build_isolation("python -m pip install -e ."),
            "python -m pip install --no-build-isolation -e ."
        );
        let m = r#"python -m pip install --no-build-isolation -e ".[dev]""#;
        assert_eq!(no_build_isolation(m), m);
        assert_eq!(
            no_build_isolation("python setup.py install"),
            "python setup.py install"
        );
    }
}

#[cfg(test)]
mod fetch_tests {
    use super::*;

    /// The `environment.yml` fallback installs the `dependencies:` entries by name, with
    /// conda pins as pip pins, and nothing from `channels:`, URLs, python or pip.
    #[test]
    fn environment_yml_dependencies_become_pip_installs() {
        let tmp = tempfile::tempdir().unwrap();
        let yml = tmp.path().join("environment.yml");
        std::fs::write(
            &yml,
            "name: xarray-tests\nchannels:\n  - conda-forge\n  - nodefaults\ndependencies:\n  - boto3\n  - numpy>=1.21\n  - pandas=1.5  # pinned\n  - pip\n  - python=3.10\n  - pip:\n      - numbagg\n      - git+https://github.com/x/y\nvariables:\n  - not-a-dep\n",
        )
        .unwrap();
        let log = tmp.path().join("log");
        let script = format!(
            "python() {{ echo \"$4\" >> {}; }}\n{}",
            log.display(),
            yml_pip_install(yml.to_str().unwrap())
        );
        let status = std::process::Command::new("bash")
            .args(["-euo", "pipefail", "-c", &script])
            .status()
            .unwrap();
        assert!(status.success());
        let got = std::fs::read_to_string(&log).unwrap();
        assert_eq!(got, "boto3\nnumpy>=1.21\npandas==1.5\nnumbagg\n");
    }
}
