//! Renders the three scripts of an instance (environment setup, repository setup, eval) and
//! assembles its [`TestSpec`].
//!
//! The conda flavour follows swebench 4.1.0 line for line (its `eval.sh` is compared byte for
//! byte in tests). The Debian flavour keeps the same shape and markers but uses Debian's
//! `python3` in a venv, installs from PyPI, and prints the test command's exit code.

use sha2::{Digest, Sha256};

use crate::dataset::Instance;

use super::docker::{self, debian_release_for};
use super::frozen::{self, EnvPlan};
use super::pyrepr::list_repr;
use super::table::{table, RepoSpec};
use super::{
    directives, Flavour, RepoFiles, SpecError, SpecOptions, TestSpec, END_TEST_OUTPUT, ENV_NAME,
    REPO_DIR, START_TEST_OUTPUT, TEST_EXIT_CODE,
};

/// Heredoc delimiters of the official scripts.
const EVAL_HEREDOC: &str = "EOF_114329324912";
const ENV_HEREDOC: &str = "EOF_59812759871";
const CONDA_ACTIVATE: &str = "source /opt/miniconda3/bin/activate";
/// The Debian flavour's virtual environment (on `PATH` through the env Dockerfile).
const VENV_DIR: &str = "/opt/testbed";
/// pip for every Debian image: recent enough for Python 3.13, still accepts
/// `--no-use-pep517` and the legacy version strings old specs pin.
const PIP_PIN: &str = "pip==24.0";
const WHEEL_PIN: &str = "wheel==0.40.0";

pub(super) fn build(inst: &Instance, opts: &SpecOptions<'_>) -> Result<TestSpec, SpecError> {
    let id = &inst.instance_id;
    let version = inst.version.clone();
    let spec = version.as_deref().and_then(|v| table().get(&inst.repo, v));
    let (row_image, image_note) = row_image(inst);
    let mut warnings: Vec<String> = image_note.into_iter().collect();

    // A SWE-bench 5 row brings its own script: use it as is, whatever the table says.
    if let Some(script) = &inst.eval_script {
        if spec.is_none() {
            let mut out = row_only_spec(inst, script, row_image);
            out.warnings.splice(0..0, warnings);
            return Ok(out);
        }
    }
    let version = version.ok_or_else(|| SpecError::MissingVersion {
        instance_id: id.clone(),
    })?;
    let spec = match spec {
        Some(s) => s,
        None if table().versions(&inst.repo).is_empty() => {
            return Err(SpecError::UnknownRepo {
                instance_id: id.clone(),
                repo: inst.repo.clone(),
            })
        }
        None => {
            return Err(SpecError::UnknownVersion {
                instance_id: id.clone(),
                repo: inst.repo.clone(),
                version,
                known: table().versions(&inst.repo).join(", "),
            })
        }
    };
    if inst.base_commit.is_empty() {
        return Err(SpecError::MissingBaseCommit {
            instance_id: id.clone(),
        });
    }
    let test_patch = match (&inst.test_patch, &inst.eval_script) {
        (Some(p), _) => p.as_str(),
        (None, Some(_)) => "",
        (None, None) => {
            return Err(SpecError::MissingTestPatch {
                instance_id: id.clone(),
            })
        }
    };

    let mut flavour = opts.flavour;
    if spec.flavour.as_deref() == Some("debian") && flavour != Flavour::Debian {
        warnings.push(format!(
            "the {} spec is for the debian flavour only; using it",
            inst.repo
        ));
        flavour = Flavour::Debian;
    }

    let test_directives = directives::test_directives(&inst.repo, test_patch);
    let test_files = directives::modified_files(test_patch);
    let test_cmd = std::iter::once(spec.test_cmd.as_str())
        .chain(test_directives.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    let ctx = Ctx {
        inst,
        spec,
        test_patch,
        test_files: &test_files,
        test_cmd: &test_cmd,
    };

    let log_parser = inst
        .log_parser
        .clone()
        .or_else(|| table().log_parser(&inst.repo).map(str::to_string))
        .unwrap_or_else(|| "parse_log_pytest".to_string());

    let mut out = skeleton(inst, test_patch, row_image);
    out.version = version;
    out.flavour = flavour;
    out.arch = opts.arch.to_string();
    out.python_version = spec.python.clone();
    out.test_cmd = test_cmd.clone();
    out.log_parser = log_parser;
    out.nano_cpus = spec.nano_cpus;

    match flavour {
        Flavour::Official => {
            let env_list = official_env_list(&ctx, opts.repo_files, &mut warnings);
            out.setup_env_script = script_text("set -euxo pipefail", &env_list);
            out.install_repo_script = script_text("set -euxo pipefail", &official_repo_list(&ctx));
            out.eval_script = script_text("set -uxo pipefail", &official_eval_list(&ctx));
            // The official tag hashes Python's `str(env_script_list)` (no spec sets
            // `docker_specs`, which would be appended).
            let hash = sha256_hex(&list_repr(&env_list), 22);
            out.base_image_tag = opts
                .base_image
                .map(str::to_string)
                .unwrap_or_else(|| docker::official_base_image(opts.arch));
            out.env_image_tag = format!("sweb.env.py.{}.{hash}:latest", opts.arch);
            out.instance_image_tag =
                format!("sweb.eval.{}.{}:latest", opts.arch, id.to_lowercase());
            out.env_dockerfile = docker::official_env_dockerfile(opts.arch, &out.base_image_tag);
            out.instance_dockerfile =
                docker::official_instance_dockerfile(opts.arch, &out.env_image_tag);
        }
        Flavour::Debian => {
            let frozen = opts
                .frozen_env
                .or_else(|| opts.frozen_envs.then(|| frozen::frozen_env(id)).flatten());
            let choice = match frozen {
                Some(f) => docker::debian_release_for_frozen(&f.python_minor()),
                None => debian_release_for(&spec.python),
            };
            let release = choice.release;
            out.debian_release = Some(release);
            out.ca_cert = opts.ca_cert;
            let (deb, label, apt) = match frozen {
                Some(env) => {
                    let plan = env.plan(&inst.repo, release);
                    warnings.extend(
                        choice
                            .warning
                            .map(|w| format!("frozen environment (python {}): {w}", env.python)),
                    );
                    warnings.extend(frozen_warnings(&plan));
                    let label = format!(
                        "frozen environment {} (python {})",
                        sha256_hex(&plan.requirements(), 12),
                        env.python
                    );
                    out.python_version = env.python.clone();
                    let deb = Debian::frozen(&plan, release);
                    let apt = plan.debian.clone();
                    out.frozen_env = Some(plan);
                    (deb, label, apt)
                }
                None => {
                    warnings.extend(choice.warning);
                    let deb = Debian::new(&ctx, release, opts.repo_files, &mut warnings);
                    let label = format!(
                        "{} {} (spec python {})",
                        inst.repo,
                        ctx.spec_version(),
                        spec.python
                    );
                    (deb, label, Vec::new())
                }
            };
            out.setup_env_script = deb.env_script();
            out.install_repo_script = deb.repo_script(&ctx);
            out.eval_script = deb.eval_script(&ctx);
            // The official instance build clones and installs with the network; the install
            // step (build requirements, dependencies the environment lacks) gets PyPI too.
            out.instance_build_network = spec.install.is_some() || !spec.pre_install.is_empty();
            out.base_image_tag = opts
                .base_image
                .map(str::to_string)
                .unwrap_or_else(|| docker::debian_base_image(release));
            out.env_dockerfile = docker::debian_env_dockerfile(
                &out.base_image_tag,
                release,
                &label,
                opts.ca_cert,
                &apt,
            );
            let env_hash = sha256_hex(
                &format!("{}\n{}", out.env_dockerfile, out.setup_env_script),
                22,
            );
            out.env_image_tag = format!(
                "swe-eval.env.py.{}.{}.{env_hash}:latest",
                release.name(),
                opts.arch
            );
            out.instance_dockerfile = docker::debian_instance_dockerfile(&out.env_image_tag);
            let inst_hash = sha256_hex(
                &format!(
                    "{}\n{}\n{}",
                    out.env_image_tag, out.instance_dockerfile, out.install_repo_script
                ),
                12,
            );
            out.instance_image_tag = format!(
                "swe-eval.eval.{}.{}.{}:{inst_hash}",
                release.name(),
                opts.arch,
                id.to_lowercase()
            );
        }
    }

    if let Some(script) = &inst.eval_script {
        out.eval_script = record_test_exit_code(script);
        out.eval_script_from_row = true;
    }
    out.warnings = warnings;
    Ok(out)
}

/// The image a row names for itself, and a note when it names two that disagree. A row with
/// its own `eval_script` (SWE-bench 5) runs in its own `image`: the script was written for
/// it, whereas `docker_image` (some copies of Verified carry it) names the official prebuilt
/// image, which may be unreachable. Without an eval script, `docker_image` comes first.
pub(super) fn row_image(inst: &Instance) -> (Option<String>, Option<String>) {
    let (first, second, first_name, second_name) = if inst.eval_script.is_some() {
        (&inst.image, &inst.docker_image, "image", "docker_image")
    } else {
        (&inst.docker_image, &inst.image, "docker_image", "image")
    };
    let note = match (first, second) {
        (Some(a), Some(b)) if a != b => Some(format!(
            "the row's `{first_name}` and `{second_name}` differ; `{first_name}` is used{}",
            if inst.eval_script.is_some() {
                " (it goes with the row's `eval_script`)"
            } else {
                ""
            }
        )),
        _ => None,
    };
    (first.clone().or_else(|| second.clone()), note)
}

/// A row with its own eval script and no spec in the table: nothing can be built for it, but
/// it can run in its own image.
fn row_only_spec(inst: &Instance, script: &str, row_image: Option<String>) -> TestSpec {
    let mut out = skeleton(inst, inst.test_patch.as_deref().unwrap_or(""), row_image);
    out.warnings.push(
        "no spec for this repo/version; the row's eval script and image are used as is".to_string(),
    );
    out.eval_script = record_test_exit_code(script);
    out.eval_script_from_row = true;
    out
}

/// A row's own eval script, made to record the test command's exit status as SWE-bench 5
/// does before running one: `SWEBENCH_TEST_EXIT_CODE=$?` just before the first line holding
/// the end marker and an echo of `>>>>> Test Exit Code: N` just after it (the script's own
/// status is the final test-file reset's, not the tests'). A script that already records it,
/// or has no end marker, is left as it is; nothing else changes.
pub fn record_test_exit_code(script: &str) -> String {
    if script.contains(TEST_EXIT_CODE) {
        return script.to_string();
    }
    let mut out = String::with_capacity(script.len() + 96);
    let mut done = false;
    for line in script.split_inclusive('\n') {
        if !done && line.contains(END_TEST_OUTPUT) {
            out.push_str("SWEBENCH_TEST_EXIT_CODE=$?\n");
            out.push_str(line);
            if !line.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&format!(
                "echo \"{TEST_EXIT_CODE}: $SWEBENCH_TEST_EXIT_CODE\"\n"
            ));
            done = true;
        } else {
            out.push_str(line);
        }
    }
    out
}

/// The row's own facts; everything rendered is left empty for the caller to fill.
fn skeleton(inst: &Instance, test_patch: &str, row_image: Option<String>) -> TestSpec {
    TestSpec {
        instance_id: inst.instance_id.clone(),
        repo: inst.repo.clone(),
        version: inst.version.clone().unwrap_or_default(),
        base_commit: inst.base_commit.clone(),
        flavour: Flavour::Official,
        arch: "x86_64".to_string(),
        python_version: String::new(),
        debian_release: None,
        warnings: Vec::new(),
        test_directives: directives::test_directives(&inst.repo, test_patch),
        test_files: directives::modified_files(test_patch),
        test_cmd: String::new(),
        eval_script: String::new(),
        eval_script_from_row: false,
        log_parser: inst
            .log_parser
            .clone()
            .unwrap_or_else(|| "parse_log_pytest".to_string()),
        base_image_tag: String::new(),
        setup_env_script: String::new(),
        install_repo_script: String::new(),
        env_dockerfile: String::new(),
        instance_dockerfile: String::new(),
        env_image_tag: String::new(),
        instance_image_tag: String::new(),
        row_image,
        fail_to_pass: inst.fail_to_pass().to_vec(),
        pass_to_pass: inst.pass_to_pass().to_vec(),
        nano_cpus: None,
        ca_cert: false,
        frozen_env: None,
        instance_build_network: false,
    }
}

/// What every renderer reads.
struct Ctx<'a> {
    inst: &'a Instance,
    spec: &'a RepoSpec,
    test_patch: &'a str,
    test_files: &'a [String],
    test_cmd: &'a str,
}

impl Ctx<'_> {
    fn base(&self) -> &str {
        &self.inst.base_commit
    }

    fn spec_version(&self) -> &str {
        self.inst.version.as_deref().unwrap_or("")
    }

    /// The commit requirements files are read at: the environment-setup commit, else the base.
    fn env_commit(&self) -> &str {
        self.inst
            .environment_setup_commit
            .as_deref()
            .filter(|c| !c.is_empty())
            .unwrap_or(&self.inst.base_commit)
    }

    fn reset_tests(&self) -> String {
        format!("git checkout {} {}", self.base(), self.test_files.join(" "))
    }

    fn apply_test_patch(&self) -> String {
        format!(
            "git apply -v - <<'{EVAL_HEREDOC}'\n{}\n{EVAL_HEREDOC}",
            self.test_patch
        )
    }

    /// The repository's requirements as the official harness assembles them, when a source of
    /// repository files is at hand.
    fn requirements(&self, files: Option<&dyn RepoFiles>) -> Option<String> {
        let files = files?;
        let commit = self.env_commit();
        let read = |path: &str| files.read(commit, path);
        table()
            .requirements_paths(&self.inst.repo)
            .iter()
            .find_map(|path| Some(assemble_requirements(&read(path)?, path, &read)))
    }

    /// The repository's `environment.yml`, renamed to the `testbed` environment.
    fn environment_yml(&self, files: Option<&dyn RepoFiles>) -> Option<String> {
        let files = files?;
        table()
            .environment_yml_paths(&self.inst.repo)
            .iter()
            .find_map(|path| {
                let text = files.read(self.env_commit(), path)?;
                let renamed: Vec<String> = text
                    .split('\n')
                    .map(|l| {
                        if l.starts_with("name:") {
                            format!("name: {ENV_NAME}")
                        } else {
                            replace_yanked_yml_line(l)
                        }
                    })
                    .collect();
                Some(renamed.join("\n"))
            })
    }

    /// The install command as the spec gives it (`None` when the spec has none).
    fn install(&self) -> Option<&str> {
        self.spec.install.as_deref()
    }
}

/// `#!/bin/bash`, the `set` line, then one command per line.
fn script_text(set_line: &str, commands: &[String]) -> String {
    let mut s = format!("#!/bin/bash\n{set_line}\n");
    for c in commands {
        s.push_str(c);
        s.push('\n');
    }
    s
}

/// A `requirements.txt` with its `-r` includes inlined first, editable/comment/`.[test` lines
/// dropped and yanked packages replaced, as `get_requirements` does.
fn assemble_requirements(text: &str, path: &str, read: &dyn Fn(&str) -> Option<String>) -> String {
    let excluded = |l: &str| {
        let t = l.trim();
        ["-e .", "#", ".[test"].iter().any(|p| t.starts_with(p))
    };
    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
    let mut additional: Vec<String> = Vec::new();
    let mut original: Vec<&str> = Vec::new();
    for line in text.split('\n') {
        if line.trim().starts_with("-r") {
            // The official harness slices the raw line after two characters.
            let name = line.get(2..).unwrap_or("").trim();
            let sub = if dir.is_empty() {
                name.to_string()
            } else {
                format!("{dir}/{name}")
            };
            if let Some(t) = read(&sub) {
                additional.extend(t.split('\n').filter(|l| !excluded(l)).map(str::to_string));
            }
        } else if !excluded(line) {
            original.push(line);
        }
    }
    additional.push(original.join("\n"));
    additional
        .join("\n")
        .split('\n')
        .map(replace_yanked_requirement)
        .collect::<Vec<_>>()
        .join("\n")
}

/// `types-pkg_resources` was yanked from PyPI; the official harness installs
/// `types-setuptools` instead (dropping the version).
const YANKED: &str = "types-pkg_resources";
const YANKED_REPLACEMENT: &str = "types-setuptools";

fn is_yanked_spec(rest: &str) -> bool {
    rest.is_empty() || rest.starts_with(['<', '>', '=', '!', '~'])
}

fn replace_yanked_requirement(line: &str) -> String {
    match line.strip_prefix(YANKED) {
        Some(rest) if is_yanked_spec(rest) => YANKED_REPLACEMENT.to_string(),
        _ => line.to_string(),
    }
}

/// In an `environment.yml` pip list, `- types-pkg_resources...` keeps its indentation.
fn replace_yanked_yml_line(line: &str) -> String {
    let trimmed = line.trim_start();
    if let Some(after_dash) = trimmed.strip_prefix('-') {
        let item = after_dash.trim_start();
        if let Some(rest) = item.strip_prefix(YANKED) {
            if is_yanked_spec(rest) {
                let prefix_len = line.len() - item.len();
                return format!("{}{YANKED_REPLACEMENT}", &line[..prefix_len]);
            }
        }
    }
    line.to_string()
}

/// Bash that assembles the requirements file at build time, as `get_requirements` does, for
/// when no repository files were given: `get` prints a repository file (from GitHub, or from
/// the checkout).
fn requirements_fetch_script(paths: &[String], get: &str, dest: &str) -> String {
    let paths = paths
        .iter()
        .map(|p| shell_quote(p))
        .collect::<Vec<_>>()
        .join(" ");
    format!(
        r#"swe_get() {{ {get}; }}
swe_keep() {{ grep -v -E '^[[:space:]]*(-e \.|#|\.\[test)' || true; }}
SWE_REQ=""; for p in {paths}; do if swe_get "$p" > /tmp/swe_req_top.txt 2>/dev/null; then SWE_REQ="$p"; break; fi; done
test -n "$SWE_REQ"
SWE_REQ_DIR=$(dirname "$SWE_REQ"); : > /tmp/swe_req_extra.txt; : > /tmp/swe_req_main.txt
while IFS= read -r line || [ -n "$line" ]; do t="${{line#"${{line%%[![:space:]]*}}"}}"; case "$t" in -r*) f="${{line:2}}"; f="${{f#"${{f%%[![:space:]]*}}"}}"; f="${{f%"${{f##*[![:space:]]}}"}}"; swe_get "$SWE_REQ_DIR/$f" 2>/dev/null | swe_keep >> /tmp/swe_req_extra.txt;; *) printf '%s\n' "$line" | swe_keep >> /tmp/swe_req_main.txt;; esac; done < /tmp/swe_req_top.txt
cat /tmp/swe_req_extra.txt /tmp/swe_req_main.txt | sed -E 's/^types-pkg_resources([<>=!~]=?.*)?$/types-setuptools/' > {dest}"#
    )
}

/// Bash that writes the repository's `environment.yml` (renamed to `testbed`) to `dest`.
fn environment_yml_fetch_script(paths: &[String], get: &str, dest: &str) -> String {
    let paths = paths
        .iter()
        .map(|p| shell_quote(p))
        .collect::<Vec<_>>()
        .join(" ");
    format!(
        r#"swe_get() {{ {get}; }}
SWE_YML=""; for p in {paths}; do if swe_get "$p" > {dest} 2>/dev/null; then SWE_YML="$p"; break; fi; done
test -n "$SWE_YML"
sed -i -E 's/^name:.*/name: {ENV_NAME}/' {dest}"#
    )
}

fn github_get(ctx: &Ctx<'_>) -> String {
    format!(
        "curl -fsSL \"https://raw.githubusercontent.com/{}/{}/$1\"",
        ctx.inst.repo,
        ctx.env_commit()
    )
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The official `make_env_script_list_py` (no cached environment.yml ships with 4.1.0).
fn official_env_list(
    ctx: &Ctx<'_>,
    files: Option<&dyn RepoFiles>,
    warnings: &mut Vec<String>,
) -> Vec<String> {
    let spec = ctx.spec;
    let py = &spec.python;
    let mut l = vec![CONDA_ACTIVATE.to_string()];
    match spec.packages.as_deref().unwrap_or("") {
        "requirements.txt" => {
            l.push(format!("conda create -n {ENV_NAME} python={py} -y"));
            let dest = "$HOME/requirements.txt";
            match ctx.requirements(files) {
                Some(reqs) => l.push(format!(
                    "cat <<'{ENV_HEREDOC}' > {dest}\n{reqs}\n{ENV_HEREDOC}"
                )),
                None => {
                    warnings.push("requirements are fetched from GitHub at build time; the env image tag differs from the official one".to_string());
                    l.push(requirements_fetch_script(
                        table().requirements_paths(&ctx.inst.repo),
                        &github_get(ctx),
                        dest,
                    ));
                }
            }
            l.push(format!(
                "conda activate {ENV_NAME} && python -m pip install -r {dest}"
            ));
            l.push(format!("rm {dest}"));
        }
        "environment.yml" => {
            let dest = "environment.yml";
            match ctx.environment_yml(files) {
                Some(yml) => l.push(format!(
                    "cat <<'{ENV_HEREDOC}' > {dest}\n{yml}\n{ENV_HEREDOC}"
                )),
                None => {
                    warnings.push("environment.yml is fetched from GitHub at build time; the env image tag differs from the official one".to_string());
                    l.push(environment_yml_fetch_script(
                        table().environment_yml_paths(&ctx.inst.repo),
                        &github_get(ctx),
                        dest,
                    ));
                }
            }
            if spec.no_use_env {
                l.push(format!(
                    "conda create -c conda-forge -n {ENV_NAME} python={py} -y"
                ));
                l.push(format!("conda env update -f {dest}"));
            } else {
                l.push(format!("conda env create --file {dest}"));
                l.push(format!(
                    "conda activate {ENV_NAME} && conda install python={py} -y"
                ));
            }
            l.push(format!("rm {dest}"));
        }
        pkgs => l.push(format!("conda create -n {ENV_NAME} python={py} {pkgs} -y")),
    }
    l.push(format!("conda activate {ENV_NAME}"));
    if let Some(pp) = &spec.pip_packages {
        l.push(format!("python -m pip install {}", pp.join(" ")));
    }
    l
}

/// The commands that check out the base commit and remove all later history, shared by both
/// flavours (after the clone or copy). The official clone holds later history, which only
/// `git gc --prune=now --aggressive` removes; the Debian flavour's repository never held any
/// (its history image has `base_commit` and its ancestors only), so it skips the repack, which
/// would rewrite the whole history into the instance's own layer.
fn prune_history(base: &str, repack: bool) -> Vec<String> {
    let mut l = vec![
        format!("TARGET_TIMESTAMP=$(git show -s --format=%ci {base})"),
        r#"git tag -l | while read tag; do TAG_COMMIT=$(git rev-list -n 1 "$tag"); TAG_TIME=$(git show -s --format=%ci "$TAG_COMMIT"); if [[ "$TAG_TIME" > "$TARGET_TIMESTAMP" ]]; then git tag -d "$tag"; fi; done"#.to_string(),
        "git reflog expire --expire=now --all".to_string(),
    ];
    if repack {
        l.push("git gc --prune=now --aggressive".to_string());
    }
    l.extend([
        r#"AFTER_TIMESTAMP=$(date -d "$TARGET_TIMESTAMP + 1 second" '+%Y-%m-%d %H:%M:%S')"#
            .to_string(),
        r#"COMMIT_COUNT=$(git log --oneline --all --since="$AFTER_TIMESTAMP" | wc -l)"#.to_string(),
        r#"[ "$COMMIT_COUNT" -eq 0 ] || exit 1"#.to_string(),
    ]);
    l
}

/// The commit that makes `git diff` show only what the patch changes afterwards.
fn commit_setup() -> Vec<String> {
    vec![
        "git config --global user.email setup@swebench.config".to_string(),
        "git config --global user.name SWE-bench".to_string(),
        "git commit --allow-empty -am SWE-bench".to_string(),
    ]
}

/// The official `make_repo_script_list_py`.
fn official_repo_list(ctx: &Ctx<'_>) -> Vec<String> {
    let repo = &ctx.inst.repo;
    let base = ctx.base();
    let branch = table()
        .base_commit_branch(repo, base)
        .map(|b| format!("--branch {b}"))
        .unwrap_or_default();
    let mut l = vec![
        format!(
            "git clone -o origin {branch} --single-branch https://github.com/{repo} {REPO_DIR}"
        ),
        format!("chmod -R 777 {REPO_DIR}"),
        format!("cd {REPO_DIR}"),
        format!("git reset --hard {base}"),
        "git remote remove origin".to_string(),
    ];
    l.extend(prune_history(base, true));
    l.push(CONDA_ACTIVATE.to_string());
    l.push(format!("conda activate {ENV_NAME}"));
    l.push(r#"echo "Current environment: $CONDA_DEFAULT_ENV""#.to_string());
    l.extend(ctx.spec.pre_install.iter().cloned());
    l.extend(ctx.install().map(str::to_string));
    l.extend(commit_setup());
    l
}

/// The official `make_eval_script_list_py`.
fn official_eval_list(ctx: &Ctx<'_>) -> Vec<String> {
    let mut l = vec![
        CONDA_ACTIVATE.to_string(),
        format!("conda activate {ENV_NAME}"),
        format!("cd {REPO_DIR}"),
    ];
    l.extend(ctx.spec.eval_commands.iter().cloned());
    l.extend([
        format!("git config --global --add safe.directory {REPO_DIR}"),
        format!("cd {REPO_DIR}"),
        "git status".to_string(),
        "git show".to_string(),
        format!("git -c core.fileMode=false diff {}", ctx.base()),
        CONDA_ACTIVATE.to_string(),
        format!("conda activate {ENV_NAME}"),
    ]);
    l.extend(ctx.install().map(str::to_string));
    l.extend([
        ctx.reset_tests(),
        ctx.apply_test_patch(),
        format!(": '{START_TEST_OUTPUT}'"),
        ctx.test_cmd.to_string(),
        format!(": '{END_TEST_OUTPUT}'"),
        ctx.reset_tests(),
    ]);
    l
}

/// The Debian flavour's renderer: what the environment image installs, and what is left to
/// the instance image for want of repository files.
struct Debian {
    /// Python packages are installed at all (otherwise the image's `python3` is used as is).
    venv: bool,
    env_commands: Vec<String>,
    /// Commands for `setup_repo.sh` before `pre_install` (requirements from the checkout).
    deferred: Vec<String>,
    /// The era's setuptools pin, also a constraint on the repository's build requirements.
    setuptools: String,
}

impl Debian {
    fn new(
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
    fn frozen(plan: &EnvPlan, release: docker::DebianRelease) -> Debian {
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

    fn env_script(&self) -> String {
        script_text("set -euxo pipefail", &self.env_commands)
    }

    fn repo_script(&self, ctx: &Ctx<'_>) -> String {
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
        // The chmod made every file executable, which the setup commit records (as the
        // official one does). Staged here by mode alone (`--index-info`, then a refresh that
        // compares without writing): `commit -a` or `update-index --chmod` would hash every
        // file again, and git "freshens" (touches) the pack holding each blob it finds, which
        // copies that pack up whole into this layer.
        l.push(r#"git ls-files -z -s | { grep -z '^100644' || true; } | sed -z 's/^100644/100755/' | git update-index -z --index-info"#.to_string());
        l.push("git update-index -q --refresh || true".to_string());
        l.extend(commit_setup());
        script_text("set -euxo pipefail", &l)
    }

    fn eval_script(&self, ctx: &Ctx<'_>) -> String {
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

impl TestSpec {
    /// The spec of `inst` for `flavour`, with default options.
    pub fn new(inst: &Instance, flavour: Flavour) -> Result<TestSpec, SpecError> {
        TestSpec::with_options(inst, &SpecOptions::new(flavour))
    }

    /// The spec of `inst` with explicit options.
    pub fn with_options(inst: &Instance, opts: &SpecOptions<'_>) -> Result<TestSpec, SpecError> {
        build(inst, opts)
    }
}

/// The first `n` hex digits of the SHA-256 of `text`.
pub(crate) fn sha256_hex(text: &str, n: usize) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let mut s = hex::encode(digest);
    s.truncate(n);
    s
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

    #[test]
    fn yanked_requirement_is_replaced() {
        assert_eq!(
            replace_yanked_requirement("types-pkg_resources==0.1"),
            "types-setuptools"
        );
        assert_eq!(
            replace_yanked_requirement("types-pkg_resources_x"),
            "types-pkg_resources_x"
        );
        assert_eq!(
            replace_yanked_yml_line("    - types-pkg_resources"),
            "    - types-setuptools"
        );
    }

    fn files(path: &str) -> Option<String> {
        (path == "reqs/base.txt").then(|| "six\n# c\n-e .\n".to_string())
    }

    #[test]
    fn requirements_inline_includes_first() {
        let text = "-r base.txt\npytest\n.[test]\nmock";
        assert_eq!(
            assemble_requirements(text, "reqs/dev.txt", &files),
            "six\n\npytest\nmock"
        );
    }
}

#[cfg(test)]
mod fetch_tests {
    use super::*;

    /// The build-time requirements fetch (bash) assembles what `assemble_requirements` does,
    /// up to blank lines (which pip ignores).
    #[test]
    fn bash_fetch_agrees_with_rust_assembly() {
        let tmp = tempfile::tempdir().unwrap();
        let main = "# comment\n-r base.txt\n-e .\nnumpy>=1.0\ntypes-pkg_resources==0.1\n.[test]\n  pytest\nlast-no-newline";
        let base = "six\n# x\nmock==1.0\n-e .\n";
        let dir = tmp.path().join("tests/requirements");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("py3.txt"), main).unwrap();
        std::fs::write(dir.join("base.txt"), base).unwrap();
        let paths = vec![
            "missing.txt".to_string(),
            "tests/requirements/py3.txt".to_string(),
        ];
        let script = requirements_fetch_script(&paths, "cat \"$ROOT/$1\"", "\"$OUT\"");
        let out = tmp.path().join("out.txt");
        let status = std::process::Command::new("bash")
            .args(["-euo", "pipefail", "-c", &script])
            .env("ROOT", tmp.path())
            .env("OUT", &out)
            .status()
            .unwrap();
        assert!(status.success());
        let read = |path: &str| std::fs::read_to_string(tmp.path().join(path)).ok();
        let want = assemble_requirements(main, "tests/requirements/py3.txt", &read);
        let non_blank = |s: &str| {
            s.lines()
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        let got = std::fs::read_to_string(&out).unwrap();
        assert_eq!(non_blank(&got), non_blank(&want));
        assert!(got.contains("types-setuptools\n") && !got.contains("-e ."));
    }

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

#[cfg(test)]
mod exit_code_tests {
    use super::*;

    #[test]
    fn row_scripts_record_the_test_exit_code_as_swebench_5_does() {
        let script = "#!/bin/bash\nset -uxo pipefail\n: '>>>>> Start Test Output'\npytest -rA t.py\n: '>>>>> End Test Output'\ngit checkout abc t.py\n";
        assert_eq!(
            record_test_exit_code(script),
            "#!/bin/bash\nset -uxo pipefail\n: '>>>>> Start Test Output'\npytest -rA t.py\nSWEBENCH_TEST_EXIT_CODE=$?\n: '>>>>> End Test Output'\necho \">>>>> Test Exit Code: $SWEBENCH_TEST_EXIT_CODE\"\ngit checkout abc t.py\n",
            "captured right after the test command, echoed after the end marker"
        );
        let once = record_test_exit_code(script);
        assert_eq!(
            record_test_exit_code(&once),
            once,
            "a script that records it already is kept"
        );
        let no_marker = "#!/bin/bash\npytest\n";
        assert_eq!(
            record_test_exit_code(no_marker),
            no_marker,
            "no end marker: left alone"
        );
    }
}
