//! From dataset rows to what the dispatcher needs per instance: the test spec (eval script,
//! log parser) first, for the instances asked for at once ([`specs`]), then the images, built
//! through the image plan and reported one by one as each is ready or failed ([`build`]), so
//! the session hands each instance to the dispatcher without waiting for the others. An
//! instance whose spec or image cannot be had gets a `Setup` whose image is the reason why, so
//! only its own predictions fail (as infrastructure errors) and the rest goes on.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::engine::Engine;
use crate::engine::TarEntry;
use crate::images::{
    self, BaseOptions, BuildHooks, BuildOptions, ImageFailure, PlanOptions, Prepared, RepoCache,
};
use swe_eval_core::dataset::Instance;
use swe_eval_core::repos::RepoSources;
use swe_eval_core::spec::{Flavour, SpecError, SpecOptions, TestSpec};

use crate::runner::{NoImage, Setup};

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
    /// Where `scripts/setup.sh` bootstraps the base image's root file system ahead of the run
    /// (`<cache>/base`, see `images::BaseOptions::prefetched`); `None`: not looked at.
    pub base_cache: Option<PathBuf>,
    /// `<output>/logs/build_images`.
    pub build_logs: PathBuf,
    /// Image builds at once (`--build-jobs`), apart from the run's workers.
    pub parallel: usize,
}

/// The test specs of the instances to prepare: those with a spec, and a final setup (whose
/// image says why there is none) for each without.
#[derive(Debug, Default)]
pub struct Specs {
    /// Instances with a spec, in the order given.
    pub ready: Vec<(Instance, TestSpec)>,
    /// Setups of the instances that have no spec, by instance id: final, nothing to build.
    pub failed: HashMap<String, Arc<Setup>>,
    /// Spec warnings worth showing (nearest Debian release, best-effort installs, ...).
    pub warnings: Vec<String>,
}

/// The test specs of `instances` (no Docker: cheap, done before any image is prepared).
pub fn specs(instances: &[&Instance], opts: &PrepareOptions) -> Specs {
    let mut out = Specs::default();
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
                out.ready.push(((*inst).clone(), spec));
            }
            Err(e) => {
                let setup = no_spec_setup(inst, e);
                out.failed.insert(inst.instance_id.clone(), Arc::new(setup));
            }
        }
    }
    out.warnings
        .extend(swe_eval_core::spec::group_warnings(&spec_warnings));
    out
}

/// The final setup of an instance that has no test spec (`why`): nothing to run it in.
pub fn no_spec_setup(inst: &Instance, why: SpecError) -> Setup {
    Setup {
        instance: inst.clone(),
        image: Err(NoImage::NoSpec(why)),
        eval_script: String::new(),
        log_parser: swe_eval_core::logparse::parser_for_repo(&inst.repo).to_string(),
        image_identity: String::new(),
        cpus: None,
    }
}

/// What `inst` runs in: `spec`'s script and parser, in `image` (or why there is none), the
/// image's identity as `opts` prepare it.
pub fn setup(
    inst: &Instance,
    spec: &TestSpec,
    opts: &PrepareOptions,
    image: Result<String, NoImage>,
) -> Setup {
    Setup {
        instance: inst.clone(),
        image,
        eval_script: spec.eval_script.clone(),
        log_parser: spec.log_parser.clone(),
        image_identity: spec.image_identity(opts.namespace.as_deref()),
        cpus: spec.nano_cpus.map(|n| n as f64 / 1e9),
    }
}

/// Why an instance whose image `failure` could not be had has none, for its setup (the
/// failure's message names its build log when there is one).
pub fn unavailable(failure: &ImageFailure) -> NoImage {
    NoImage::Failed {
        image: failure.image.clone(),
        layer: failure.layer.as_str(),
        message: failure.message.clone(),
    }
}

/// Makes the images of `specs` present (built, found or pulled), reporting through `hooks`
/// as it goes: each instance's image as soon as it is ready or failed, each build and its
/// phases' times. Failures of the daemon (not of a recipe) get two more tries, after a pause;
/// until then their instances are reported as transient failures.
pub async fn build<E: Engine>(
    engine: &E,
    specs: &[(Instance, TestSpec)],
    opts: &PrepareOptions,
    hooks: BuildHooks,
) -> Prepared {
    let plan_opts = PlanOptions {
        namespace: opts.namespace.clone(),
        ..Default::default()
    };
    let only_specs: Vec<TestSpec> = specs.iter().map(|(_, s)| s.clone()).collect();
    let mut plan = images::plan(&only_specs, &plan_opts);
    if let Some(pem) = &opts.ca_cert {
        for inst in &mut plan.instances {
            if let Some(chain) = &mut inst.build {
                chain.env.files.push(TarEntry {
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
        base: BaseOptions {
            prefetched: opts.base_cache.clone(),
            ..BaseOptions::logging_under(&opts.build_logs)
        },
        parallel: opts.parallel.max(1),
        history_chain: images::MAX_CHAIN,
        hooks,
    };
    let mut out = images::ensure(engine, &plan, &build).await;
    // Failures of the daemon (not of a recipe) get two more tries, after a pause.
    let mut wait = std::time::Duration::from_secs(2);
    for _ in 0..2 {
        let again: Vec<_> = plan
            .instances
            .iter()
            .filter(|i| out.failed.get(&i.instance_id).is_some_and(|f| f.transient))
            .cloned()
            .collect();
        if again.is_empty() || build.hooks.stopped() {
            break;
        }
        tokio::time::sleep(wait).await;
        wait *= 2;
        let retry = images::ensure(engine, &images::ImagePlan { instances: again }, &build).await;
        for (id, image) in retry.images {
            out.failed.remove(&id);
            out.images.insert(id, image);
        }
        out.failed.extend(retry.failed);
        out.created.extend(retry.created);
    }
    out
}
