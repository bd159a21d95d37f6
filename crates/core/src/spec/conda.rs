//! The official flavour's scripts: SWE-bench 4.1.0's `make_env_script_list_py`,
//! `make_repo_script_list_py` and `make_eval_script_list_py`, line for line (the eval scripts
//! are compared byte for byte with the official ones in the tests).

use super::script_parts::{
    commit_setup, environment_yml_fetch_script, prune_history, requirements_fetch_script, Ctx,
    ENV_HEREDOC,
};
use super::table::table;
use super::{RepoFiles, END_TEST_OUTPUT, ENV_NAME, REPO_DIR, START_TEST_OUTPUT};

const CONDA_ACTIVATE: &str = "source /opt/miniconda3/bin/activate";

fn github_get(ctx: &Ctx<'_>) -> String {
    format!(
        "curl -fsSL \"https://raw.githubusercontent.com/{}/{}/$1\"",
        ctx.inst.repo,
        ctx.env_commit()
    )
}

/// The official `make_env_script_list_py` (no cached environment.yml ships with 4.1.0).
pub(super) fn official_env_list(
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

/// The official `make_repo_script_list_py`.
pub(super) fn official_repo_list(ctx: &Ctx<'_>) -> Vec<String> {
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
pub(super) fn official_eval_list(ctx: &Ctx<'_>) -> Vec<String> {
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
