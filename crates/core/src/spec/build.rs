//! Assembles an instance's [`TestSpec`]: its row checked, the spec of its repository and
//! version found, the test directives read from the test patch, and the three scripts
//! (environment setup, repository setup, eval) rendered by the flavour's renderer
//! (`conda.rs` for the official flavour, `debian.rs` for the Debian one), with the image
//! names that hash them. A SWE-bench 5 row with its own eval script keeps it.

use sha2::{Digest, Sha256};

use crate::dataset::Instance;

use super::conda::{official_env_list, official_eval_list, official_repo_list};
use super::debian::{frozen_warnings, Debian};
use super::docker::{self, debian_release_for};
use super::frozen;
use super::pyrepr::list_repr;
use super::script_parts::{script_text, Ctx};
use super::table::table;
use super::{
    directives, Flavour, SpecError, SpecOptions, TestSpec, END_TEST_OUTPUT, TEST_EXIT_CODE,
};

/// The spec of `inst` with `opts` (see [`TestSpec::with_options`]).
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
pub fn sha256_hex(text: &str, n: usize) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let mut s = hex::encode(digest);
    s.truncate(n);
    s
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
