//! `swe-eval spec`: write each instance's eval script and Dockerfiles (with their setup
//! scripts) to `DIR/<instance_id>/`, so they can be read, diffed against the official
//! harness, or built by hand. Rows that cannot be handled are reported by id and line; the
//! others are still written.

use std::path::{Path, PathBuf};

use super::args::DatasetFile;
use super::CliResult;
use crate::orchestrate::{ending, Troubles};
use swe_eval_core::dataset;
use swe_eval_core::fsutil::write_atomic;
use swe_eval_core::repos::RepoSources;
use swe_eval_core::spec::{Flavour, GitRepoFiles, RepoFiles, SpecOptions, TestSpec};

/// `swe-eval spec`: the dataset rows and where their specs go.
#[derive(Debug, clap::Args)]
#[command(mut_arg("dataset", |a| a.help("Dataset rows (JSON, JSON Lines or Parquet), or a Hugging Face dataset name")))]
pub struct Args {
    /// The dataset rows.
    #[command(flatten)]
    pub dataset: DatasetFile,
    /// Folder to write `<instance_id>/{eval.sh, env.Dockerfile, instance.Dockerfile, ...}` to.
    #[arg(long, short = 'o')]
    pub output: PathBuf,
    /// `official` (conda, as the official images) or `debian` (Debian's Python, offline).
    #[arg(long, value_parser = super::values::flavour(), default_value_t = Flavour::Official)]
    pub flavour: Flavour,
    /// Only these instances (space- or comma-separated, or repeated).
    #[arg(long, short = 'i', visible_alias = "instance_ids", num_args = 1.., value_delimiter = ',')]
    pub instance_ids: Vec<String>,
    /// Debian flavour: a PEM bundle pip trusts for HTTPS, copied into each environment
    /// image's build context as `ca.crt`.
    #[arg(long)]
    pub ca_cert: Option<PathBuf>,
    /// Debian flavour: the base image environment images start from.
    #[arg(long)]
    pub base_image: Option<String>,
    /// A local clone of a repository (`owner/name=PATH`, repeatable). Specs that read
    /// `requirements.txt`/`environment.yml` take them from it, so the conda environment
    /// script and its image tag are the official ones, with no network.
    #[arg(long = "repo", value_name = "OWNER/NAME=PATH")]
    pub repos: Vec<String>,
    /// A folder of local clones, `<owner>__<name>` or `<owner>/<name>` (as `swe-eval run`).
    #[arg(long)]
    pub mirrors: Option<PathBuf>,
    /// Also build the Debian environment image of every chosen instance that has a SWE-bench
    /// frozen environment (needs Docker, PyPI and Debian's mirror; existing images are
    /// reused) and compare its `pip freeze` with the frozen Python packages: matched,
    /// different version, missing and extra, per environment and overall, every missing
    /// package named. Written to `DIR/check_env.json`.
    #[arg(long)]
    pub check_env: bool,
}

impl Args {
    /// What the command reads and writes, for the clobber check.
    pub fn io(&self) -> swe_eval_core::paths::IoPlan {
        let mut plan = swe_eval_core::paths::IoPlan::new()
            .input("--dataset", &self.dataset.dataset)
            .output(swe_eval_core::paths::Output::Folder(self.output.clone()));
        if let Some(ca) = &self.ca_cert {
            plan = plan.input("--ca-cert", ca);
        }
        plan
    }
}

/// Writes every instance's eval script and Dockerfiles.
pub fn run(args: Args) -> CliResult {
    let (ds, problems) = args.dataset.load()?;
    let loaded = dataset::Loaded {
        items: ds.instances,
        problems,
    };
    super::print_problems("skipped row: ", &loaded.problems);
    let mut problems = loaded.problems.len();
    // Rows that loaded but cannot be handled: at most 20 lines on stderr, then a count.
    let mut row_problems: Vec<String> = Vec::new();
    let row_problem = |i: usize, e: &dyn std::fmt::Display| {
        format!("{} row {}: {e}", args.dataset.dataset.display(), i + 1)
    };
    let ca = match &args.ca_cert {
        Some(p) => Some(
            std::fs::read(p)
                .map_err(|e| super::failed(format!("cannot read {}: {e}", p.display())))?,
        ),
        None => None,
    };
    let mut sources = RepoSources {
        mirrors: args.mirrors.clone(),
        ..Default::default()
    };
    for flag in &args.repos {
        sources.add_override(flag)?;
    }
    let opts = SpecOptions {
        flavour: args.flavour,
        arch: "x86_64",
        ca_cert: ca.is_some(),
        base_image: args.base_image.as_deref(),
        repo_files: None,
        frozen_envs: true,
        frozen_env: None,
    };
    let wanted: Vec<&str> = args
        .instance_ids
        .iter()
        .flat_map(|s| s.split_whitespace())
        .collect();
    let mut written = 0usize;
    let mut spec_warnings = Vec::new();
    for (i, inst) in loaded.items.iter().enumerate() {
        if !wanted.is_empty() && !wanted.contains(&inst.instance_id.as_str()) {
            continue;
        }
        // Only a local repository (not a URL or a bundle) can serve files without the network.
        let local = Some(PathBuf::from(sources.source(&inst.repo)))
            .filter(|p| p.is_dir())
            .map(|dir| GitRepoFiles { dir });
        let opts = SpecOptions {
            repo_files: local.as_ref().map(|g| g as &dyn RepoFiles),
            ..opts
        };
        let spec = match TestSpec::with_options(inst, &opts) {
            Ok(s) => s,
            Err(e) => {
                // The error names the instance; the row number is among the rows that loaded.
                row_problems.push(row_problem(i, &e));
                continue;
            }
        };
        spec_warnings.extend(
            spec.warnings
                .iter()
                .map(|w| (spec.instance_id.clone(), w.clone())),
        );
        let dir = match swe_eval_core::paths::join_component(
            &args.output,
            "instance_id",
            &inst.instance_id,
        ) {
            Ok(dir) => dir,
            Err(e) => {
                row_problems.push(row_problem(i, &e));
                continue;
            }
        };
        // The output folder refusing a file stops the command (exit 1): every later row
        // would fail the same way. The folder of this instance goes if this run made it.
        let made = swe_eval_core::fsutil::first_missing(&dir);
        if let Err(e) = write_spec(&dir, &spec, ca.as_deref()) {
            if let Some(made) = made {
                let _ = std::fs::remove_dir_all(made);
            }
            super::print_problems("", &row_problems);
            eprintln!(
                "wrote {written} instance folder(s) to {} before the output folder failed",
                args.output.display()
            );
            return Err(e.into());
        }
        written += 1;
    }
    for id in &wanted {
        if !loaded.items.iter().any(|i| i.instance_id == *id) {
            row_problems.push(format!("{id}: not in {}", args.dataset.dataset.display()));
        }
    }
    super::print_problems("", &row_problems);
    problems += row_problems.len();
    let grouped: Vec<String> = swe_eval_core::spec::group_warnings(&spec_warnings)
        .into_iter()
        .map(|w| w.to_string())
        .collect();
    super::print_problems("warning: ", &grouped);
    eprintln!(
        "wrote {written} instance folder(s) to {} ({} flavour); {problems} problem(s)",
        args.output.display(),
        args.flavour
    );
    if args.check_env {
        let chosen: Vec<&swe_eval_core::dataset::Instance> = loaded
            .items
            .iter()
            .filter(|i| wanted.is_empty() || wanted.contains(&i.instance_id.as_str()))
            .collect();
        problems += check_env(&args, &chosen, ca)?;
    }
    Ok(ending(&Troubles::of_inputs(problems)))
}

/// `--check-env`: builds and compares, prints a line per environment and the totals, writes
/// `check_env.json`; returns the number of problems (environments not checked, bad rows).
fn check_env(
    args: &Args,
    chosen: &[&swe_eval_core::dataset::Instance],
    ca: Option<Vec<u8>>,
) -> Result<usize, super::CliError> {
    use crate::orchestrate::{check_envs_with, CheckEnvOptions};
    let opts = CheckEnvOptions {
        ca_cert: ca,
        build_logs: args.output.join("logs").join("build_images"),
        freeze_timeout: std::time::Duration::from_secs(300),
    };
    let rt = tokio::runtime::Runtime::new()?;
    let report = rt.block_on(async {
        let engine = crate::engine::connect(&Default::default()).await?;
        Ok::<_, super::CliError>(check_envs_with(&engine, chosen, &opts, print_env).await)
    })?;
    if !report.no_frozen_env.is_empty() {
        eprintln!(
            "no frozen environment (not checked): {}",
            report.no_frozen_env.join(", ")
        );
    }
    let o = report.overall();
    eprintln!(
        "check-env: {}/{} environments built and checked; {}/{} frozen packages matched ({:.1}%), {} different, {} missing, {} extra; mean per environment {:.1}%",
        o.envs_built,
        o.envs_total,
        o.matched,
        o.expected,
        o.match_percent,
        o.different,
        o.missing,
        o.extra,
        o.mean_env_match_percent
    );
    let json = serde_json::json!({ "overall": o, "report": report });
    swe_eval_core::fsutil::write_json_atomic(&args.output.join("check_env.json"), &json)?;
    Ok(report.problems())
}

/// One environment's line, and its different and missing packages by name.
fn print_env(env: &crate::orchestrate::EnvReport) {
    let head = format!(
        "{} python {} on {} ({}): {} instance(s)",
        env.repo,
        env.frozen_python,
        env.debian_release,
        env.debian_python,
        env.instances.len()
    );
    let built = env
        .build_seconds
        .map(|s| format!(", built in {s:.0} s"))
        .unwrap_or_default();
    match (&env.check, &env.error) {
        (Some(c), _) => {
            eprintln!(
                "{head}{built}: {}/{} frozen packages matched ({:.1}%), {} different, {} missing, {} extra [{}]",
                c.matched.len(),
                c.expected(),
                c.match_percent(),
                c.different.len(),
                c.missing.len(),
                c.extra.len(),
                env.env_image
            );
            for (n, want, got) in &c.different {
                eprintln!("  different: {n} {got} (frozen {want})");
            }
            for s in &env.substituted {
                eprintln!(
                    "  substituted for python {} (no wheel, or too old to run there): {s}",
                    env.debian_python
                );
            }
            for (n, want) in &c.missing {
                eprintln!("  missing: {n}=={want}");
            }
        }
        (None, e) => {
            let log = env
                .build_log
                .as_ref()
                .map(|p| format!(" (log: {})", p.display()))
                .unwrap_or_default();
            eprintln!(
                "{head}: not checked: {}{log}",
                e.as_deref().unwrap_or("unknown")
            );
        }
    }
}

/// `eval.sh`, the two Dockerfiles and their build-context files, side by side.
fn write_spec(
    dir: &Path,
    spec: &TestSpec,
    ca: Option<&[u8]>,
) -> Result<(), swe_eval_core::fsutil::WriteError> {
    write_atomic(&dir.join("eval.sh"), spec.eval_script.as_bytes())?;
    if spec.env_dockerfile.is_empty() {
        return Ok(());
    }
    write_atomic(&dir.join("env.Dockerfile"), spec.env_dockerfile.as_bytes())?;
    write_atomic(
        &dir.join("instance.Dockerfile"),
        spec.instance_dockerfile.as_bytes(),
    )?;
    for f in spec
        .env_context_files()
        .into_iter()
        .chain(spec.instance_context_files())
    {
        write_atomic(&dir.join(&f.path), &f.contents)?;
    }
    if let (true, Some(ca)) = (spec.ca_cert, ca) {
        write_atomic(&dir.join("ca.crt"), ca)?;
    }
    let meta = serde_json::json!({
        "instance_id": spec.instance_id,
        "repo": spec.repo,
        "version": spec.version,
        "flavour": spec.flavour.as_str(),
        "python": spec.python_version,
        "debian_release": spec.debian_release.map(|r| r.name()),
        "log_parser": spec.log_parser,
        "test_directives": spec.test_directives,
        "base_image": spec.base_image_tag,
        "env_image": spec.env_image_tag,
        "instance_image": spec.instance_image_tag,
        "official_image": spec.official_image_name(None),
        "warnings": spec.warnings,
        "frozen_env": spec.frozen_env.as_ref().map(|p| serde_json::json!({
            "python": p.python,
            "pins": p.pins.len(),
            "debian_packages": p.debian,
            "unavailable": p.unavailable.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            "unmapped": p.unmapped,
            "substituted": p.substituted.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        })),
    });
    swe_eval_core::fsutil::write_json_atomic(&dir.join("spec.json"), &meta)
}
