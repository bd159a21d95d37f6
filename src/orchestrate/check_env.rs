//! How close the built environments are to SWE-bench's frozen ones: for each distinct Debian
//! environment image of the chosen instances (built when missing), its `pip freeze --all`
//! against the frozen file's Python packages: matched, different version, missing, extra.
//! Instances with no frozen environment are listed, not checked.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::engine::{Engine, JobSpec, Limits, LABEL_OWNER, LABEL_TOOL};
use crate::images::{self, BaseOptions, BuildOptions, PlanOptions, Prepared, RepoCache};
use swe_eval_core::dataset::Instance;
use swe_eval_core::repos::RepoSources;
use swe_eval_core::spec::{compare_freeze, EnvCheck};
use swe_eval_core::spec::{Flavour, SpecOptions, TestSpec};

/// Where environment images are built and what they trust.
#[derive(Debug, Clone)]
pub struct CheckEnvOptions {
    /// A PEM bundle the environment builds trust (`--ca-cert`).
    pub ca_cert: Option<Vec<u8>>,
    /// `<output>/logs/build_images`: failed build logs go here.
    pub build_logs: PathBuf,
    /// Deadline of the `pip freeze` container.
    pub freeze_timeout: Duration,
}

/// One environment image and how it compares.
#[derive(Debug, Clone, Serialize)]
pub struct EnvReport {
    /// The environment image's name.
    pub env_image: String,
    /// The repository, `owner/name`.
    pub repo: String,
    /// The instances sharing it.
    pub instances: Vec<String>,
    /// The frozen Python, and the Debian release's.
    pub frozen_python: String,
    /// The Debian release the image is built on.
    pub debian_release: String,
    /// That release's `python3` version.
    pub debian_python: String,
    /// Seconds the environment build took; `None` when the image was there already.
    pub build_seconds: Option<f64>,
    /// Why it could not be built or inspected.
    pub error: Option<String>,
    /// The build log, when this check built the image (or failed to).
    pub build_log: Option<PathBuf>,
    /// The installed packages against the frozen ones, when the image could be inspected.
    pub check: Option<EnvCheck>,
    /// Python packages the plan knew it could not install (part of `check.missing`).
    pub unavailable: Vec<String>,
    /// Pins replaced for want of a wheel or as too old to run on the image's Python, `name
    /// frozen -> chosen` (part of `check.different`).
    pub substituted: Vec<String>,
}

/// Every environment checked, and what was left out.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CheckEnvReport {
    /// The environments checked.
    pub envs: Vec<EnvReport>,
    /// Instances with no frozen environment (not SWE-bench Verified).
    pub no_frozen_env: Vec<String>,
    /// Instances with no test spec, with the reason.
    pub spec_errors: Vec<(String, String)>,
}

/// Totals over the checked environments.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Overall {
    /// Environments checked.
    pub envs_total: usize,
    /// Of them built (or found) and inspected.
    pub envs_built: usize,
    /// Frozen packages over all environments.
    pub expected: usize,
    /// Installed at the frozen version.
    pub matched: usize,
    /// Installed at another version.
    pub different: usize,
    /// Not installed.
    pub missing: usize,
    /// Installed but not frozen.
    pub extra: usize,
    /// Matched / expected over all packages.
    pub match_percent: f64,
    /// The mean of each environment's match percentage.
    pub mean_env_match_percent: f64,
}

impl CheckEnvReport {
    /// The totals over every checked environment.
    pub fn overall(&self) -> Overall {
        let checked: Vec<&EnvCheck> = self.envs.iter().filter_map(|e| e.check.as_ref()).collect();
        let sum = |f: fn(&EnvCheck) -> usize| checked.iter().map(|c| f(c)).sum::<usize>();
        let expected = sum(EnvCheck::expected);
        let matched = sum(|c| c.matched.len());
        Overall {
            envs_total: self.envs.len(),
            envs_built: checked.len(),
            expected,
            matched,
            different: sum(|c| c.different.len()),
            missing: sum(|c| c.missing.len()),
            extra: sum(|c| c.extra.len()),
            match_percent: if expected == 0 {
                0.0
            } else {
                100.0 * matched as f64 / expected as f64
            },
            mean_env_match_percent: if checked.is_empty() {
                0.0
            } else {
                checked.iter().map(|c| c.match_percent()).sum::<f64>() / checked.len() as f64
            },
        }
    }

    /// Problems worth an exit status: environments not built, and rows with no spec.
    pub fn problems(&self) -> usize {
        self.envs.iter().filter(|e| e.check.is_none()).count() + self.spec_errors.len()
    }
}

/// Builds (when missing) the Debian environment image of every instance that has a frozen
/// environment, one per distinct image, and compares each one's `pip freeze --all` with it.
pub async fn check_envs<E: Engine>(
    engine: &E,
    instances: &[&Instance],
    opts: &CheckEnvOptions,
) -> CheckEnvReport {
    check_envs_with(engine, instances, opts, |_| {}).await
}

/// [`check_envs`], telling `on_env` about each environment as soon as it is checked (builds
/// take minutes each).
pub async fn check_envs_with<E: Engine>(
    engine: &E,
    instances: &[&Instance],
    opts: &CheckEnvOptions,
    mut on_env: impl FnMut(&EnvReport),
) -> CheckEnvReport {
    let mut report = CheckEnvReport::default();
    let spec_opts = SpecOptions {
        ca_cert: opts.ca_cert.is_some(),
        ..SpecOptions::new(Flavour::Debian)
    };
    // Distinct environment images, in first-seen order, with the instances sharing them.
    let mut by_image: BTreeMap<String, (TestSpec, Vec<String>)> = BTreeMap::new();
    let mut order = Vec::new();
    for inst in instances {
        match TestSpec::with_options(inst, &spec_opts) {
            Ok(spec) if spec.frozen_env.is_some() => {
                let entry = by_image
                    .entry(spec.env_image_tag.clone())
                    .or_insert_with(|| {
                        order.push(spec.env_image_tag.clone());
                        (spec.clone(), Vec::new())
                    });
                entry.1.push(inst.instance_id.clone());
            }
            Ok(_) => report.no_frozen_env.push(inst.instance_id.clone()),
            Err(e) => report
                .spec_errors
                .push((inst.instance_id.clone(), e.to_string())),
        }
    }
    for tag in order {
        let (spec, ids) = by_image
            .remove(&tag)
            .expect("every tag in order is in the map");
        let env = check_spec(engine, &spec, ids, opts).await;
        on_env(&env);
        report.envs.push(env);
    }
    report
}

/// Builds (when missing) the environment image of one Debian-flavour spec that has a frozen
/// environment, and compares its `pip freeze --all` with it. `instances` are those sharing it.
pub async fn check_spec<E: Engine>(
    engine: &E,
    spec: &TestSpec,
    instances: Vec<String>,
    opts: &CheckEnvOptions,
) -> EnvReport {
    let (Some(plan), Some(release)) = (spec.frozen_env.as_ref(), spec.debian_release) else {
        return EnvReport {
            env_image: spec.env_image_tag.clone(),
            repo: spec.repo.clone(),
            instances,
            frozen_python: String::new(),
            debian_release: String::new(),
            debian_python: String::new(),
            build_seconds: None,
            error: Some("not a Debian-flavour spec with a frozen environment".to_string()),
            build_log: None,
            check: None,
            unavailable: Vec::new(),
            substituted: Vec::new(),
        };
    };
    let build = BuildOptions {
        logs_dir: opts.build_logs.clone(),
        // Environment images need no repository.
        repos: RepoCache::new(std::env::temp_dir(), RepoSources::default()),
        base: BaseOptions::logging_under(&opts.build_logs),
        parallel: 1,
        history_chain: images::MAX_CHAIN,
        hooks: Default::default(),
    };
    let mut report = EnvReport {
        env_image: spec.env_image_tag.clone(),
        repo: spec.repo.clone(),
        instances,
        frozen_python: plan.python.clone(),
        debian_release: release.name().to_string(),
        debian_python: release.python_version(),
        build_seconds: None,
        error: None,
        build_log: None,
        check: None,
        unavailable: plan.unavailable.iter().map(|(n, _)| n.clone()).collect(),
        substituted: plan.substituted.iter().map(|s| s.to_string()).collect(),
    };
    let mut image = images::InstanceImages::from_spec(spec, &PlanOptions::default());
    let repo = image.repo.clone();
    let Some(chain) = image.build.as_mut() else {
        report.error = Some("no build recipe".to_string());
        return report;
    };
    if let Some(pem) = &opts.ca_cert {
        chain.env.files.push(crate::engine::TarEntry {
            path: "ca.crt".into(),
            contents: pem.clone(),
            mode: 0o644,
        });
    }
    let mut prepared = Prepared::default();
    match images::ensure_env(engine, chain, &repo, &build, &mut prepared).await {
        Ok(o) => {
            report.build_seconds = o.built.then_some(o.build_time.as_secs_f64());
            let log =
                images::build_log_path(&opts.build_logs, images::Layer::Env, &spec.env_image_tag);
            report.build_log = (o.built && log.is_file()).then_some(log);
        }
        Err(f) => {
            report.error = Some(f.message);
            report.build_log = f.log_path;
            return report;
        }
    }
    let job = JobSpec {
        image: spec.env_image_tag.clone(),
        name: format!(
            "swe-eval.check-env.{}.{}",
            std::process::id(),
            &swe_eval_core::spec::sha256_hex(&spec.env_image_tag, 12)
        ),
        labels: BTreeMap::from([
            (LABEL_TOOL.to_string(), "1".to_string()),
            (LABEL_OWNER.to_string(), crate::owner::owner_id()),
        ]),
        files: Vec::new(),
        command: vec![
            "/bin/sh".into(),
            "-c".into(),
            "python -m pip freeze --all 2>/dev/null".into(),
        ],
        env: Vec::new(),
        working_dir: None,
        limits: Limits::default(),
        network: false,
        timeout: opts.freeze_timeout,
        max_output_bytes: 1 << 20,
        watch: Vec::new(),
        gate: None,
    };
    match engine.run_job(job).await {
        Ok(out) if out.exit_code == Some(0) => {
            let freeze = String::from_utf8_lossy(&out.output);
            report.check = Some(compare_freeze(&plan.expected(), &freeze));
        }
        Ok(out) => {
            report.error = Some(format!(
                "pip freeze exited with {:?}: {}",
                out.exit_code,
                String::from_utf8_lossy(&out.output).trim()
            ))
        }
        Err(e) => report.error = Some(format!("pip freeze: {e}")),
    }
    report
}
