//! From dataset rows to what the runner needs per instance: the test spec (eval script, log
//! parser) and a ready image, built through the image plan. An instance whose spec or image
//! cannot be had gets a `Setup` whose image is the reason why, so only its own predictions
//! fail (as infrastructure errors) and the run goes on.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::dataset::Instance;
use crate::engine::tarball::Entry;
use crate::engine::Engine;
use crate::images::{self, BaseOptions, BuildOptions, PlanOptions, Prepared, RepoCache};
use crate::repos::RepoSources;
use crate::spec::{Flavour, SpecOptions, TestSpec};

use crate::runner::Setup;

/// How images are chosen and built.
#[derive(Debug, Clone)]
pub struct PrepareOptions {
    /// Official (conda) or Debian images.
    pub flavour: Flavour,
    /// Registry and namespace of official images (`--namespace`).
    pub namespace: Option<String>,
    /// A PEM bundle the Debian environment images trust (`--ca-cert`).
    pub ca_cert: Option<Vec<u8>>,
    /// Local repositories and mirrors to build instance images from.
    pub repos: RepoSources,
    /// Bare repository cache (fetched once, reused by later runs).
    pub repo_cache: PathBuf,
    /// `<output>/logs/build_images`.
    pub build_logs: PathBuf,
    /// Instance images built at once.
    pub parallel: usize,
}

/// What was prepared: a setup per instance, and the images created (for cleanup by cache
/// level).
#[derive(Debug, Default)]
pub struct Prepare {
    /// What each instance runs in, by instance id.
    pub setups: HashMap<String, Arc<Setup>>,
    /// The images this preparation created or holds.
    pub images: Prepared,
    /// Spec warnings worth showing (nearest Debian release, best-effort installs, ...).
    pub warnings: Vec<String>,
}

/// Specs and images for `instances`.
pub async fn prepare<E: Engine>(
    engine: &E,
    instances: &[&Instance],
    opts: &PrepareOptions,
) -> Prepare {
    let mut out = Prepare::default();
    let mut specs = Vec::new();
    let spec_opts = SpecOptions {
        ca_cert: opts.ca_cert.is_some(),
        ..SpecOptions::new(opts.flavour)
    };
    let mut spec_warnings = Vec::new();
    for inst in instances {
        match TestSpec::with_options(inst, &spec_opts) {
            Ok(spec) => {
                spec_warnings.extend(
                    spec.warnings
                        .iter()
                        .map(|w| (inst.instance_id.clone(), w.clone())),
                );
                specs.push((*inst, spec));
            }
            Err(e) => {
                out.setups.insert(
                    inst.instance_id.clone(),
                    Arc::new(Setup {
                        instance: (*inst).clone(),
                        image: Err(format!("no test spec: {e}")),
                        eval_script: String::new(),
                        log_parser: crate::logparse::parser_for_repo(&inst.repo).to_string(),
                        cpus: None,
                    }),
                );
            }
        }
    }
    out.warnings
        .extend(crate::spec::group_warnings(&spec_warnings));
    let plan_opts = PlanOptions {
        namespace: opts.namespace.clone(),
        ..Default::default()
    };
    let only_specs: Vec<TestSpec> = specs.iter().map(|(_, s)| s.clone()).collect();
    let mut plan = images::plan(&only_specs, &plan_opts);
    if let Some(pem) = &opts.ca_cert {
        for inst in &mut plan.instances {
            if let Some(chain) = &mut inst.build {
                chain.env.files.push(Entry {
                    path: "ca.crt".into(),
                    contents: pem.clone(),
                    mode: 0o644,
                });
            }
        }
    }
    let build = BuildOptions {
        logs_dir: opts.build_logs.clone(),
        repos: RepoCache::new(opts.repo_cache.clone(), opts.repos.clone()),
        base: BaseOptions::logging_under(&opts.build_logs),
        parallel: opts.parallel.max(1),
        history_chain: images::history::MAX_CHAIN,
    };
    out.images = images::ensure(engine, &plan, &build).await;
    // Failures of the daemon (not of a recipe) get two more tries, after a pause.
    let mut wait = std::time::Duration::from_secs(2);
    for _ in 0..2 {
        let again: Vec<_> = plan
            .instances
            .iter()
            .filter(|i| {
                out.images
                    .failed
                    .get(&i.instance_id)
                    .is_some_and(|f| f.transient)
            })
            .cloned()
            .collect();
        if again.is_empty() {
            break;
        }
        tokio::time::sleep(wait).await;
        wait *= 2;
        let retry = images::ensure(engine, &images::ImagePlan { instances: again }, &build).await;
        for (id, image) in retry.images {
            out.images.failed.remove(&id);
            out.images.images.insert(id, image);
        }
        out.images.failed.extend(retry.failed);
        out.images.created.extend(retry.created);
    }
    for (inst, spec) in specs {
        let image = match out.images.images.get(&inst.instance_id) {
            Some(img) => Ok(img.clone()),
            None => Err(match out.images.failed.get(&inst.instance_id) {
                Some(f) => {
                    let log = f
                        .log_path
                        .as_ref()
                        .map(|p| format!(" (log: {})", p.display()))
                        .unwrap_or_default();
                    format!(
                        "image {} ({} layer) not available: {}{log}",
                        f.image,
                        f.layer.as_str(),
                        f.message
                    )
                }
                None => "no image was prepared".to_string(),
            }),
        };
        out.setups.insert(
            inst.instance_id.clone(),
            Arc::new(Setup {
                instance: inst.clone(),
                image,
                eval_script: spec.eval_script,
                log_parser: spec.log_parser,
                cpus: spec.nano_cpus.map(|n| n as f64 / 1e9),
            }),
        );
    }
    out
}
