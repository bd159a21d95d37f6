//! Image names, build contexts, and the image plan: which base, environment and instance images
//! each instance needs, building the missing ones (environment images shared across instances),
//! and removing what the cache level does not keep.
//!
//! Three layers: the base (Debian bootstrapped offline, see `base`; or the official conda base
//! built from its Dockerfile), the environment (per repository and version, content-hash tag),
//! and the instance (the repository at `base_commit` in `/testbed`). A row that carries its own
//! `image` (SWE-bench 5) is run in it as is: nothing is built, it is pulled when missing. A
//! failed build fails only the instances that need it; its log is saved under
//! `<output>/logs/build_images/`.

pub mod base;
pub mod hold;
pub mod repo;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use futures_util::stream::{self, StreamExt};
use sha2::{Digest, Sha256};

use crate::engine::tarball::{self, Entry};
use crate::engine::{BuildSettings, Engine, EngineError, TarSource, LABEL_TOOL};
use crate::spec::{DebianRelease, Flavour, TestSpec};

pub use base::{base_image_name, ensure_base, BaseOptions, BaseOutcome};
pub use repo::{RepoCache, RepoSources};

/// Label naming the layer of an image the tool built (`base`, `env`, `instance`).
pub const LABEL_LAYER: &str = "swe-eval.layer";

/// An image layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Layer {
    Base,
    Env,
    Instance,
}

impl Layer {
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Base => "base",
            Layer::Env => "env",
            Layer::Instance => "instance",
        }
    }

    /// The folder of its build logs under `logs/build_images/` (the official layout's names).
    fn log_folder(self) -> &'static str {
        match self {
            Layer::Base => "base",
            Layer::Env => "env",
            Layer::Instance => "instances",
        }
    }
}

/// Which images survive the end of a run: `none` removes every image the run built or pulled,
/// `base` keeps base images, `env` keeps base and environment images, `instance` keeps all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum CacheLevel {
    None,
    Base,
    #[default]
    Env,
    Instance,
}

impl CacheLevel {
    /// True when an image of `layer` is kept at this level.
    pub fn keeps(self, layer: Layer) -> bool {
        match self {
            CacheLevel::None => false,
            CacheLevel::Base => layer == Layer::Base,
            CacheLevel::Env => layer != Layer::Instance,
            CacheLevel::Instance => true,
        }
    }
}

impl FromStr for CacheLevel {
    type Err = ImageError;
    fn from_str(s: &str) -> Result<Self, ImageError> {
        match s {
            "none" => Ok(CacheLevel::None),
            "base" => Ok(CacheLevel::Base),
            "env" => Ok(CacheLevel::Env),
            "instance" => Ok(CacheLevel::Instance),
            other => Err(ImageError::CacheLevel(other.to_string())),
        }
    }
}

/// Failures of image preparation that are not one instance's build failure.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("base image bootstrap of Debian {release} failed: {message}")]
    Bootstrap {
        release: String,
        message: String,
        log: String,
    },
    #[error("repository {repo}: {message}")]
    Repo { repo: String, message: String },
    #[error("build context of {image}: {message}")]
    Context { image: String, message: String },
    #[error("unknown cache level `{0}` (expected none, base, env or instance)")]
    CacheLevel(String),
}

impl ImageError {
    /// The log worth saving beside the failure, if any.
    pub fn log(&self) -> Option<&str> {
        match self {
            ImageError::Engine(EngineError::Build { log, .. })
            | ImageError::Bootstrap { log, .. } => Some(log),
            _ => None,
        }
    }
}

/// SHA-256 hex of `parts`, each length-prefixed so that different splits never collide.
pub fn content_hash(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    hex::encode(h.finalize())
}

/// Labels put on an image the tool builds.
pub fn labels_for(layer: Layer, instance_id: Option<&str>) -> BTreeMap<String, String> {
    let mut l = BTreeMap::from([
        (LABEL_TOOL.to_string(), "1".to_string()),
        (LABEL_LAYER.to_string(), layer.as_str().to_string()),
    ]);
    if let Some(id) = instance_id {
        l.insert("swe-eval.instance-id".to_string(), id.to_string());
    }
    l
}

/// An official image name (`swebench/sweb.eval....`, `sweb.env....`) under another registry or
/// namespace: everything before the last `/` is replaced by `namespace` (removed when empty).
/// Names that are not official (`sweb.` prefix) are returned as they are.
pub fn with_namespace(image: &str, namespace: &str) -> String {
    let last = image.rsplit('/').next().unwrap_or(image);
    if !last.starts_with("sweb.") {
        return image.to_string();
    }
    let ns = namespace.trim_end_matches('/');
    if ns.is_empty() {
        last.to_string()
    } else {
        format!("{ns}/{last}")
    }
}

/// A log file path under `logs/build_images/<layer>/<image>/build_image.log`; the image name is
/// made a single safe path component.
pub fn build_log_path(logs_dir: &Path, layer: Layer, image: &str) -> PathBuf {
    let safe: String = image
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    logs_dir
        .join(layer.log_folder())
        .join(safe)
        .join("build_image.log")
}

/// A build context: a `Dockerfile`, extra files, and optionally a repository snapshot as `repo/`.
pub fn context_tar(
    dockerfile: &str,
    files: &[Entry],
    repo_dir: Option<&Path>,
) -> std::io::Result<Vec<u8>> {
    context_tar_to(Vec::new(), dockerfile, files, repo_dir)
}

/// [`context_tar`] written to `out` (a file, for contexts too big for memory).
pub fn context_tar_to<W: std::io::Write>(
    out: W,
    dockerfile: &str,
    files: &[Entry],
    repo_dir: Option<&Path>,
) -> std::io::Result<W> {
    let mut entries = vec![Entry {
        path: "Dockerfile".into(),
        contents: dockerfile.as_bytes().to_vec(),
        mode: 0o644,
    }];
    entries.extend(files.iter().cloned());
    let folders: Vec<(&str, &Path)> = repo_dir.map(|d| ("repo", d)).into_iter().collect();
    tarball::write_archive(out, &entries, &folders)
}

/// How the base of a build chain is made.
#[derive(Debug, Clone, PartialEq)]
pub enum BaseRecipe {
    /// Bootstrapped offline with debootstrap; `alias` is the name the environment Dockerfile
    /// starts `FROM` (given to the bootstrapped image as a second tag).
    Debian {
        release: DebianRelease,
        alias: String,
    },
    /// Built from a Dockerfile (the official conda base; needs a registry for its `FROM`).
    Dockerfile { tag: String, dockerfile: String },
}

impl BaseRecipe {
    /// The name environment images start from.
    pub fn image(&self) -> &str {
        match self {
            BaseRecipe::Debian { alias, .. } => alias,
            BaseRecipe::Dockerfile { tag, .. } => tag,
        }
    }
}

/// The environment image of a chain: shared by every instance with the same tag.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvRecipe {
    pub tag: String,
    pub dockerfile: String,
    pub files: Vec<Entry>,
}

/// The instance image of a chain.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceRecipe {
    pub tag: String,
    pub dockerfile: String,
    pub files: Vec<Entry>,
    /// The build context needs `repo/`: `repo` at `base_commit`, made on the host.
    pub needs_repo: bool,
    /// The build needs the network even with the repository in the context (its install
    /// step fetches from PyPI, as the official build does).
    pub network: bool,
}

/// Base, environment and instance images built locally.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildChain {
    pub base: BaseRecipe,
    pub env: EnvRecipe,
    pub instance: InstanceRecipe,
}

/// The images of one instance.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceImages {
    pub instance_id: String,
    /// `owner/name`, for the repository snapshot.
    pub repo: String,
    pub base_commit: String,
    /// A ready image (the row's own, or an official one, namespace applied): used when
    /// present, pulled when missing.
    pub prebuilt: Option<String>,
    /// Built when there is no prebuilt image or it cannot be had; `None` for rows run as is.
    pub build: Option<BuildChain>,
}

/// Options of [`plan`].
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// Registry and namespace replacing `swebench` in official names (`--namespace`).
    pub namespace: Option<String>,
    /// Official flavour: try the prebuilt official image before building (default on).
    pub skip_official_pull: bool,
    /// Architecture of official names.
    pub arch: Option<String>,
}

impl InstanceImages {
    /// The images of `spec`'s instance.
    pub fn from_spec(spec: &TestSpec, opts: &PlanOptions) -> InstanceImages {
        let ns = opts.namespace.as_deref();
        let files = |fs: Vec<crate::spec::ContextFile>| -> Vec<Entry> {
            fs.into_iter()
                .map(|f| Entry {
                    path: f.path,
                    contents: f.contents,
                    mode: f.mode,
                })
                .collect()
        };
        let mut out = InstanceImages {
            instance_id: spec.instance_id.clone(),
            repo: spec.repo.clone(),
            base_commit: spec.base_commit.clone(),
            prebuilt: None,
            build: None,
        };
        if spec.eval_script_from_row {
            if let Some(img) = &spec.row_image {
                out.prebuilt = Some(match ns {
                    Some(ns) => with_namespace(img, ns),
                    None => img.clone(),
                });
                return out;
            }
        }
        let base = match (spec.flavour, spec.debian_release) {
            (Flavour::Debian, Some(release)) => BaseRecipe::Debian {
                release,
                alias: spec.base_image_tag.clone(),
            },
            _ => BaseRecipe::Dockerfile {
                tag: spec.base_image_tag.clone(),
                dockerfile: crate::spec::docker::official_base_dockerfile(
                    opts.arch.as_deref().unwrap_or("x86_64"),
                ),
            },
        };
        if spec.flavour == Flavour::Official && !opts.skip_official_pull {
            out.prebuilt = Some(spec.official_image_name(ns));
        }
        out.build = Some(BuildChain {
            base,
            env: EnvRecipe {
                tag: spec.env_image_tag.clone(),
                dockerfile: spec.env_dockerfile.clone(),
                files: files(spec.env_context_files()),
            },
            instance: InstanceRecipe {
                tag: spec.instance_image_tag.clone(),
                dockerfile: spec.instance_dockerfile.clone(),
                files: files(spec.instance_context_files()),
                needs_repo: spec.instance_needs_repo_in_context(),
                network: spec.instance_build_network,
            },
        });
        out
    }
}

/// The images every instance needs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImagePlan {
    pub instances: Vec<InstanceImages>,
}

/// The image plan of `specs`.
pub fn plan(specs: &[TestSpec], opts: &PlanOptions) -> ImagePlan {
    ImagePlan {
        instances: specs
            .iter()
            .map(|s| InstanceImages::from_spec(s, opts))
            .collect(),
    }
}

impl ImagePlan {
    /// Distinct environment images and how many instances share each.
    pub fn env_images(&self) -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for i in &self.instances {
            if let Some(b) = &i.build {
                *m.entry(b.env.tag.clone()).or_default() += 1;
            }
        }
        m
    }
}

/// Options of [`ensure`].
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// `<output>/logs/build_images`: failed (and base) build logs go here.
    pub logs_dir: PathBuf,
    pub repos: RepoCache,
    pub base: BaseOptions,
    /// Instance images built at once.
    pub parallel: usize,
}

/// Why one instance has no image.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageFailure {
    pub image: String,
    pub layer: Layer,
    pub message: String,
    /// The saved build log, if there was one.
    pub log_path: Option<PathBuf>,
    /// Worth retrying (a daemon hiccup), as opposed to a broken recipe.
    pub transient: bool,
}

/// What [`ensure`] prepared.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prepared {
    /// instance_id -> the image its jobs run in.
    pub images: BTreeMap<String, String>,
    /// instance_id -> why it has none.
    pub failed: BTreeMap<String, ImageFailure>,
    /// Images this call created (built, imported or pulled), with their layer.
    pub created: Vec<(String, Layer)>,
}

/// Makes every image of `plan` present: prebuilt ones used or pulled, the rest built (each
/// base and environment once). A failure fails only the instances that need that image.
pub async fn ensure<E: Engine>(engine: &E, plan: &ImagePlan, opts: &BuildOptions) -> Prepared {
    let mut out = Prepared::default();
    let mut to_build = Vec::new();
    for inst in &plan.instances {
        match resolve_prebuilt(engine, inst, &mut out).await {
            Ok(Some(image)) => {
                out.images.insert(inst.instance_id.clone(), image);
            }
            Ok(None) => to_build.push(inst),
            Err(f) => {
                out.failed.insert(inst.instance_id.clone(), f);
            }
        }
    }

    // Bases and environments, each once, in order; a failure is remembered by image name.
    let mut layer_failures: BTreeMap<String, ImageFailure> = BTreeMap::new();
    let mut done: BTreeSet<String> = BTreeSet::new();
    for inst in &to_build {
        let Some(chain) = &inst.build else { continue };
        let base_name = chain.base.image().to_string();
        if !done.contains(&base_name) && !layer_failures.contains_key(&base_name) {
            match ensure_base_recipe(engine, &chain.base, opts, &mut out).await {
                Ok(()) => {
                    done.insert(base_name.clone());
                }
                Err(f) => {
                    layer_failures.insert(base_name.clone(), f);
                }
            }
        }
        let env = &chain.env;
        if done.contains(&base_name)
            && !done.contains(&env.tag)
            && !layer_failures.contains_key(&env.tag)
        {
            match build_one(
                engine,
                Layer::Env,
                &env.tag,
                &env.dockerfile,
                &env.files,
                None,
                true,
                None,
                opts,
                &mut out,
            )
            .await
            {
                Ok(()) => {
                    done.insert(env.tag.clone());
                }
                Err(f) => {
                    layer_failures.insert(env.tag.clone(), f);
                }
            }
        }
    }

    // Instance images, a few at a time.
    let jobs = to_build.into_iter().filter_map(|inst| {
        let chain = inst.build.as_ref()?;
        for dep in [chain.base.image(), chain.env.tag.as_str()] {
            if let Some(f) = layer_failures.get(dep) {
                return Some(futures_util::future::Either::Left(std::future::ready((
                    inst,
                    Err(f.clone()),
                    Vec::new(),
                ))));
            }
        }
        Some(futures_util::future::Either::Right(async move {
            let mut local = Prepared::default();
            let r = build_instance(engine, inst, chain, opts, &mut local).await;
            (inst, r, local.created)
        }))
    });
    let results: Vec<_> = stream::iter(jobs)
        .buffer_unordered(opts.parallel.max(1))
        .collect()
        .await;
    for (inst, r, created) in results {
        out.created.extend(created);
        match r {
            Ok(image) => {
                out.images.insert(inst.instance_id.clone(), image);
            }
            Err(f) => {
                out.failed.insert(inst.instance_id.clone(), f);
            }
        }
    }
    out
}

fn failure(layer: Layer, image: &str, e: &ImageError, log_path: Option<PathBuf>) -> ImageFailure {
    let transient = match e {
        ImageError::Engine(ee) => ee.is_transient(),
        _ => false,
    };
    ImageFailure {
        image: image.to_string(),
        layer,
        message: e.to_string(),
        log_path,
        transient,
    }
}

/// A prebuilt image present or pulled: `Ok(Some)`; none to be had but a chain to build:
/// `Ok(None)`; neither: the failure.
async fn resolve_prebuilt<E: Engine>(
    engine: &E,
    inst: &InstanceImages,
    out: &mut Prepared,
) -> Result<Option<String>, ImageFailure> {
    // An instance image built by an earlier run is as good as a pulled one.
    if let Some(chain) = &inst.build {
        match engine.image_exists(&chain.instance.tag).await {
            Ok(true) => return Ok(Some(chain.instance.tag.clone())),
            Ok(false) => {}
            Err(e) => {
                return Err(failure(
                    Layer::Instance,
                    &chain.instance.tag,
                    &e.into(),
                    None,
                ))
            }
        }
    }
    let Some(image) = &inst.prebuilt else {
        return Ok(None);
    };
    let pulled = match engine.image_exists(image).await {
        Ok(true) => return Ok(Some(image.clone())),
        Ok(false) => engine.pull_image(image).await,
        Err(e) => Err(e),
    };
    match pulled {
        Ok(()) => {
            out.created.push((image.clone(), Layer::Instance));
            Ok(Some(image.clone()))
        }
        Err(_) if inst.build.is_some() => Ok(None),
        Err(e) => Err(failure(Layer::Instance, image, &e.into(), None)),
    }
}

async fn ensure_base_recipe<E: Engine>(
    engine: &E,
    recipe: &BaseRecipe,
    opts: &BuildOptions,
    out: &mut Prepared,
) -> Result<(), ImageFailure> {
    match recipe {
        BaseRecipe::Debian { release, alias } => {
            let name = base_image_name(*release);
            let log_path = build_log_path(&opts.logs_dir, Layer::Base, &name);
            let mut bopts = opts.base.clone();
            bopts.log_file = Some(log_path.clone());
            match ensure_base(engine, *release, std::slice::from_ref(alias), &bopts).await {
                Ok(o) => {
                    if o.built {
                        out.created.push((name, Layer::Base));
                    }
                    Ok(())
                }
                Err(e) => Err(failure(Layer::Base, &name, &e, Some(log_path))),
            }
        }
        BaseRecipe::Dockerfile { tag, dockerfile } => match engine.image_exists(tag).await {
            Ok(true) => Ok(()),
            Ok(false) => {
                build_one(
                    engine,
                    Layer::Base,
                    tag,
                    dockerfile,
                    &[],
                    None,
                    true,
                    None,
                    opts,
                    out,
                )
                .await
            }
            Err(e) => Err(failure(Layer::Base, tag, &e.into(), None)),
        },
    }
}

async fn build_instance<E: Engine>(
    engine: &E,
    inst: &InstanceImages,
    chain: &BuildChain,
    opts: &BuildOptions,
    out: &mut Prepared,
) -> Result<String, ImageFailure> {
    let ir = &chain.instance;
    let snapshot = if ir.needs_repo {
        let tmp = tempfile::tempdir().map_err(|e| {
            failure(
                Layer::Instance,
                &ir.tag,
                &ImageError::Context {
                    image: ir.tag.clone(),
                    message: e.to_string(),
                },
                None,
            )
        })?;
        let dest = tmp.path().join("repo");
        let repos = opts.repos.clone();
        let (repo, commit, d) = (inst.repo.clone(), inst.base_commit.clone(), dest.clone());
        // git runs for seconds to minutes: off the async workers.
        let r = tokio::task::spawn_blocking(move || repos.snapshot(&repo, &commit, &d))
            .await
            .map_err(|e| ImageError::Repo {
                repo: inst.repo.clone(),
                message: e.to_string(),
            })
            .and_then(|r| r);
        if let Err(e) = r {
            return Err(failure(Layer::Instance, &ir.tag, &e, None));
        }
        Some((tmp, dest))
    } else {
        None
    };
    let repo_dir = snapshot.as_ref().map(|(_, d)| d.as_path());
    build_one(
        engine,
        Layer::Instance,
        &ir.tag,
        &ir.dockerfile,
        &ir.files,
        repo_dir,
        ir.network,
        Some(&inst.instance_id),
        opts,
        out,
    )
    .await?;
    Ok(ir.tag.clone())
}

#[allow(clippy::too_many_arguments)]
async fn build_one<E: Engine>(
    engine: &E,
    layer: Layer,
    tag: &str,
    dockerfile: &str,
    files: &[Entry],
    repo_dir: Option<&Path>,
    needs_network: bool,
    instance_id: Option<&str>,
    opts: &BuildOptions,
    out: &mut Prepared,
) -> Result<(), ImageFailure> {
    match engine.image_exists(tag).await {
        Ok(true) => return Ok(()),
        Ok(false) => {}
        Err(e) => return Err(failure(layer, tag, &e.into(), None)),
    }
    // A context with a repository can be hundreds of MB (full history): it goes through a
    // temporary file, streamed to the daemon, never whole in memory.
    let ctx_err = |e: std::io::Error| {
        failure(
            layer,
            tag,
            &ImageError::Context {
                image: tag.to_string(),
                message: e.to_string(),
            },
            None,
        )
    };
    let mut _ctx_file = None;
    let ctx: TarSource = match repo_dir {
        None => context_tar(dockerfile, files, None)
            .map_err(ctx_err)?
            .into(),
        Some(dir) => {
            let f = tempfile::NamedTempFile::new().map_err(ctx_err)?;
            context_tar_to(f.as_file(), dockerfile, files, Some(dir)).map_err(ctx_err)?;
            let path = f.path().to_path_buf();
            _ctx_file = Some(f);
            path.into()
        }
    };
    let log_path = build_log_path(&opts.logs_dir, layer, tag);
    // An instance image whose repository comes in the context needs no network unless its
    // install step does: build it without (hermetic, and no network endpoint to set up).
    let settings = BuildSettings {
        network: !(layer == Layer::Instance && repo_dir.is_some()) || needs_network,
    };
    match engine
        .build_image_with(tag, ctx, labels_for(layer, instance_id), settings)
        .await
    {
        Ok(_log) => {
            out.created.push((tag.to_string(), layer));
            Ok(())
        }
        Err(e) => {
            let e = ImageError::from(e);
            let saved = e
                .log()
                .map(|l| base::write_log(&log_path, l).is_ok())
                .unwrap_or(false);
            Err(failure(layer, tag, &e, saved.then_some(log_path)))
        }
    }
}

/// What [`cleanup`] did.
#[derive(Debug, Default)]
pub struct CleanupReport {
    /// Images removed: this run's own, then those earlier runs handed over.
    pub removed: Vec<String>,
    /// Images another live process still uses, with who holds them (an owner id, or
    /// "a container"): marked, and removed by the first cleanup that finds them unheld.
    pub handed_over: Vec<(String, String)>,
    /// Removals that failed, by image.
    pub errors: Vec<(String, EngineError)>,
}

/// Removes the images `prepared` created that `level` does not keep. An image another live
/// process holds ([`hold`]) is handed over instead: a marker records that it is to go, and
/// this or any later cleanup removes it once nobody holds it. Those earlier runs handed
/// over are removed here too, unless this run's own level keeps them. Failures are collected,
/// not stopped at.
pub async fn cleanup<E: Engine>(
    engine: &E,
    prepared: &Prepared,
    level: CacheLevel,
) -> CleanupReport {
    let mut report = CleanupReport::default();
    let me = crate::owner::owner_id();
    let held = match hold::held_by_others(engine, &me).await {
        Ok(held) => held,
        Err(e) => {
            // Not knowing what others hold, removing could break their runs: keep everything.
            report
                .errors
                .push(("(the holds of other runs)".to_string(), e));
            return report;
        }
    };
    // Instances first: an environment image cannot go while an instance image stands on it.
    let mut doomed: Vec<&(String, Layer)> = prepared
        .created
        .iter()
        .filter(|(_, l)| !level.keeps(*l))
        .collect();
    doomed.sort_by_key(|(_, l)| std::cmp::Reverse(*l));
    for (image, _) in doomed {
        let holder = match held.get(image) {
            Some(owner) => owner.clone(),
            None => match engine.remove_image(image).await {
                Ok(()) => {
                    report.removed.push(image.clone());
                    continue;
                }
                // A job container of another run, or a hold made since the listing.
                Err(EngineError::ImageInUse { .. }) => "a container".to_string(),
                Err(e) => {
                    report.errors.push((image.clone(), e));
                    continue;
                }
            },
        };
        match hold::mark_doomed(engine, image).await {
            Ok(()) => report.handed_over.push((image.clone(), holder)),
            Err(e) => report.errors.push((image.clone(), e)),
        }
    }
    let keep: BTreeSet<&str> = prepared
        .created
        .iter()
        .filter(|(_, l)| level.keeps(*l))
        .map(|(i, _)| i.as_str())
        .collect();
    hold::sweep_doomed(engine, &held, &keep, &mut report).await;
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_hash_separates_parts() {
        assert_ne!(content_hash(&[b"ab", b"c"]), content_hash(&[b"a", b"bc"]));
        assert_eq!(content_hash(&[b"x"]), content_hash(&[b"x"]));
        assert_eq!(content_hash(&[]).len(), 64);
    }

    #[test]
    fn namespaces_replace_the_registry_of_official_names_only() {
        let cases = [
            (
                "swebench/sweb.eval.x86_64.a_1776_b-1:latest",
                "127.0.0.1:5000/swebench",
                "127.0.0.1:5000/swebench/sweb.eval.x86_64.a_1776_b-1:latest",
            ),
            (
                "sweb.eval.x86_64.a_1776_b-1:latest",
                "mirror",
                "mirror/sweb.eval.x86_64.a_1776_b-1:latest",
            ),
            (
                "swebench/sweb.eval.x86_64.a_1776_b-1:latest",
                "",
                "sweb.eval.x86_64.a_1776_b-1:latest",
            ),
            ("myorg/custom:1", "mirror", "myorg/custom:1"),
        ];
        for (image, ns, want) in cases {
            assert_eq!(with_namespace(image, ns), want, "{image} under {ns:?}");
        }
    }

    #[test]
    fn cache_levels_keep_what_they_say() {
        use Layer::*;
        let keeps = |c: CacheLevel| [Base, Env, Instance].map(|l| c.keeps(l));
        assert_eq!(keeps(CacheLevel::None), [false, false, false]);
        assert_eq!(keeps(CacheLevel::Base), [true, false, false]);
        assert_eq!(keeps(CacheLevel::Env), [true, true, false]);
        assert_eq!(keeps(CacheLevel::Instance), [true, true, true]);
        assert_eq!("env".parse::<CacheLevel>().unwrap(), CacheLevel::Env);
        assert!("all".parse::<CacheLevel>().is_err());
    }

    #[test]
    fn build_logs_live_under_safe_names() {
        let p = build_log_path(Path::new("/o/logs/build_images"), Layer::Instance, "a/b:c");
        assert_eq!(
            p,
            Path::new("/o/logs/build_images/instances/a_b_c/build_image.log")
        );
    }

    #[test]
    fn context_holds_dockerfile_files_and_repo() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("r/pkg")).unwrap();
        std::fs::write(tmp.path().join("r/pkg/x.py"), "x = 1\n").unwrap();
        let files = [Entry {
            path: "setup_repo.sh".into(),
            contents: b"true".to_vec(),
            mode: 0o755,
        }];
        let t = context_tar("FROM scratch\n", &files, Some(&tmp.path().join("r"))).unwrap();
        let mut names: Vec<String> = tar::Archive::new(t.as_slice())
            .entries()
            .unwrap()
            .map(|e| {
                e.unwrap()
                    .path()
                    .unwrap()
                    .to_string_lossy()
                    .trim_end_matches('/')
                    .to_string()
            })
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "Dockerfile",
                "repo",
                "repo/pkg",
                "repo/pkg/x.py",
                "setup_repo.sh"
            ]
        );
    }
}

#[cfg(test)]
mod plan_tests {
    use super::*;
    use crate::engine::fake::{Call, FakeEngine};

    fn chain(env: &str, inst: &str, needs_repo: bool) -> BuildChain {
        BuildChain {
            base: BaseRecipe::Debian {
                release: DebianRelease::Bookworm,
                alias: "swe-eval/base:bookworm".into(),
            },
            env: EnvRecipe {
                tag: env.into(),
                dockerfile: "FROM swe-eval/base:bookworm\n".into(),
                files: vec![],
            },
            instance: InstanceRecipe {
                tag: inst.into(),
                dockerfile: format!("FROM {env}\n"),
                files: vec![],
                needs_repo,
                network: false,
            },
        }
    }

    fn inst(id: &str, prebuilt: Option<&str>, build: Option<BuildChain>) -> InstanceImages {
        InstanceImages {
            instance_id: id.into(),
            repo: "o/n".into(),
            base_commit: "c".into(),
            prebuilt: prebuilt.map(str::to_string),
            build,
        }
    }

    fn opts(dir: &Path) -> BuildOptions {
        BuildOptions {
            logs_dir: dir.join("logs"),
            repos: RepoCache::new(dir.join("repos"), RepoSources::default()),
            base: BaseOptions::default(),
            parallel: 2,
        }
    }

    #[tokio::test]
    async fn shared_env_once_failures_isolated_prebuilt_pulled_or_built() {
        let tmp = tempfile::tempdir().unwrap();
        let e = FakeEngine::new();
        e.add_image(&base_image_name(DebianRelease::Bookworm));
        e.add_pullable("reg/sweb.eval.x86_64.p:latest");
        e.fail_build("env-bad", "E: no such package");
        let plan = ImagePlan {
            instances: vec![
                inst("a", None, Some(chain("env-1", "inst-a", false))),
                inst("b", None, Some(chain("env-1", "inst-b", false))),
                inst("c", None, Some(chain("env-bad", "inst-c", false))),
                inst("p", Some("reg/sweb.eval.x86_64.p:latest"), None),
                inst(
                    "q",
                    Some("reg/sweb.eval.x86_64.q:latest"),
                    Some(chain("env-1", "inst-q", false)),
                ),
                inst("r", Some("reg/sweb.eval.x86_64.r:latest"), None),
            ],
        };
        let got = ensure(&e, &plan, &opts(tmp.path())).await;
        let images: Vec<(&str, &str)> = got
            .images
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            images,
            [
                ("a", "inst-a"),
                ("b", "inst-b"),
                ("p", "reg/sweb.eval.x86_64.p:latest"),
                ("q", "inst-q")
            ],
            "q's pull failed, so it was built"
        );
        let c = &got.failed["c"];
        assert_eq!(
            (c.layer, c.image.as_str(), c.transient),
            (Layer::Env, "env-bad", false)
        );
        let log = std::fs::read_to_string(c.log_path.as_ref().unwrap()).unwrap();
        assert_eq!(log, "E: no such package");
        assert!(
            got.failed["r"].message.contains("pull"),
            "nothing to build: a pull failure"
        );
        let env1_builds = e
            .calls()
            .iter()
            .filter(|c| matches!(c, Call::BuildImage { tag, .. } if tag == "env-1"))
            .count();
        assert_eq!(env1_builds, 1, "the shared environment is built once");
        assert!(e.calls().contains(&Call::TagImage {
            image: base_image_name(DebianRelease::Bookworm),
            new_name: "swe-eval/base:bookworm".into()
        }));

        // Cache level env: instance images (built and pulled) go, environments stay.
        assert!(cleanup(&e, &got, CacheLevel::Env).await.errors.is_empty());
        let left = e.images();
        for gone in [
            "inst-a",
            "inst-b",
            "inst-q",
            "reg/sweb.eval.x86_64.p:latest",
        ] {
            assert!(!left.contains(&gone.to_string()), "{gone} removed");
        }
        assert!(left.contains(&"env-1".to_string()));

        // A second run finds nothing to do for a and b but their instance images again.
        let again = ensure(&e, &plan, &opts(tmp.path())).await;
        assert!(
            !again.created.iter().any(|(n, _)| n == "env-1"),
            "env-1 cached"
        );
    }

    #[tokio::test]
    async fn an_existing_instance_image_is_used_without_pulling_or_building() {
        let tmp = tempfile::tempdir().unwrap();
        let e = FakeEngine::new();
        e.add_image("inst-a");
        let plan = ImagePlan {
            instances: vec![inst(
                "a",
                Some("reg/sweb.eval.x86_64.a:latest"),
                Some(chain("env-1", "inst-a", true)),
            )],
        };
        let got = ensure(&e, &plan, &opts(tmp.path())).await;
        assert_eq!(got.images["a"], "inst-a");
        assert!(got.created.is_empty());
        assert!(!e
            .calls()
            .iter()
            .any(|c| matches!(c, Call::PullImage(_) | Call::BuildImage { .. })));
    }
}
