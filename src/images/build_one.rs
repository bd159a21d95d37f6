//! Building one image (any layer from its Dockerfile and context, or the base from its
//! recipe), and what building hands back: [`Prepared`] images and each [`ImageFailure`]
//! (`build_failure.rs`).
//! [`super::build`] (the plan), [`super::history`] and [`super::envonly`] build through it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{
    base, base_image_name, build_log_path, context_tar, context_tar_to, ensure_base, labels_for,
    BaseOptions, BaseRecipe, BuildEvent, BuildHooks, EnvRecipe, ImageError, ImageFailure, Layer,
    Phase, RepoCache, Stage,
};
use crate::engine::TarEntry;
use crate::engine::{BuildSettings, Engine, TarSource};

/// Options of [`super::ensure`].
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// `<output>/logs/build_images`: failed (and base) build logs go here.
    pub logs_dir: PathBuf,
    /// Where the repositories for instance images are fetched and kept.
    pub repos: RepoCache,
    /// How the base image is bootstrapped when it is missing.
    pub base: BaseOptions,
    /// Instance images built at once.
    pub parallel: usize,
    /// History images in one chain at most before a new root (see ARCHITECTURE.md, shared repository history);
    /// [`super::history::MAX_CHAIN`] unless a test wants short chains.
    pub history_chain: usize,
    /// Where progress and timings go, and the stop flag (default: nowhere, never).
    pub hooks: BuildHooks,
}

/// What [`super::ensure`] prepared.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prepared {
    /// instance_id -> the image its jobs run in.
    pub images: BTreeMap<String, String>,
    /// instance_id -> why it has none.
    pub failed: BTreeMap<String, ImageFailure>,
    /// Images this call created (built, imported or pulled), with their layer.
    pub created: Vec<(String, Layer)>,
}

pub(super) fn failure(
    layer: Layer,
    image: &str,
    e: &ImageError,
    log_path: Option<PathBuf>,
) -> ImageFailure {
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
        stopped: matches!(e, ImageError::Stopped { .. }),
    }
}

pub(super) async fn ensure_base_recipe<E: Engine>(
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
            let started = tokio::time::Instant::now();
            match ensure_base(engine, *release, std::slice::from_ref(alias), &bopts).await {
                Ok(o) => {
                    if o.built {
                        let hooks = &opts.hooks;
                        hooks.timed(Stage::Base, &name, Phase::Build, started.elapsed(), true);
                        created(hooks, out, &name, Layer::Base);
                    }
                    Ok(())
                }
                Err(e) => Err(failure(Layer::Base, &name, &e, Some(log_path))),
            }
        }
        BaseRecipe::Dockerfile { tag, dockerfile } => match engine.image_exists(tag).await {
            Ok(true) => Ok(()),
            Ok(false) => {
                let image = OneImage {
                    layer: Layer::Base,
                    tag,
                    dockerfile,
                    files: &[],
                    folder: None,
                    network: true,
                    instance_id: None,
                };
                build_one(engine, &image, opts, out).await
            }
            Err(e) => Err(failure(Layer::Base, tag, &e.into(), None)),
        },
    }
}

/// Builds the environment image `env` of `repo`'s instances (with the network: its installs
/// fetch packages), labelled with the repository ([`super::LABEL_REPO`]) so that a later
/// recipe's environment is known to replace it.
pub(super) async fn build_env<E: Engine>(
    engine: &E,
    env: &EnvRecipe,
    repo: &str,
    opts: &BuildOptions,
    out: &mut Prepared,
) -> Result<(), ImageFailure> {
    let (dockerfile, files) = (&env.dockerfile, &env.files);
    let image = OneImage {
        layer: Layer::Env,
        tag: &env.tag,
        dockerfile,
        files,
        folder: None,
        network: true,
        instance_id: None,
    };
    let mut labels = labels_for(Layer::Env, None);
    labels.insert(super::LABEL_REPO.to_string(), repo.to_string());
    build_labelled(engine, &image, labels, opts, out).await
}

/// One image to build: what it is, its recipe and context, and how it builds.
#[derive(Clone, Copy)]
pub(super) struct OneImage<'a> {
    /// Its layer (for labels, logs and the cache level).
    pub(super) layer: Layer,
    /// Its name.
    pub(super) tag: &'a str,
    /// Its Dockerfile.
    pub(super) dockerfile: &'a str,
    /// Files of its build context beside the Dockerfile.
    pub(super) files: &'a [TarEntry],
    /// A folder of the host put in the context under a name (a history image's packs).
    pub(super) folder: Option<(&'a str, &'a Path)>,
    /// Network for its `RUN` steps.
    pub(super) network: bool,
    /// The instance it is for (instance images).
    pub(super) instance_id: Option<&'a str>,
}

pub(super) async fn build_one<E: Engine>(
    engine: &E,
    image: &OneImage<'_>,
    opts: &BuildOptions,
    out: &mut Prepared,
) -> Result<(), ImageFailure> {
    let labels = labels_for(image.layer, image.instance_id);
    build_labelled(engine, image, labels, opts, out).await
}

/// [`build_one`] with `labels` on the image.
async fn build_labelled<E: Engine>(
    engine: &E,
    image: &OneImage<'_>,
    labels: BTreeMap<String, String>,
    opts: &BuildOptions,
    out: &mut Prepared,
) -> Result<(), ImageFailure> {
    let OneImage {
        layer,
        tag,
        dockerfile,
        files,
        folder,
        network,
        instance_id,
    } = *image;
    match engine.image_exists(tag).await {
        Ok(true) => return Ok(()),
        Ok(false) => {}
        Err(e) => return Err(failure(layer, tag, &e.into(), None)),
    }
    let hooks = &opts.hooks;
    if hooks.stopped() {
        let e = ImageError::Stopped {
            image: tag.to_string(),
        };
        return Err(failure(layer, tag, &e, None));
    }
    // A context with a folder (a history image's pack: a whole history for a root) can be
    // hundreds of MB: it goes through a temporary file, streamed to the daemon, never whole
    // in memory.
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
    let ctx: TarSource = match folder {
        None => context_tar(dockerfile, files, None)
            .map_err(ctx_err)?
            .into(),
        Some(folder) => {
            let f = tempfile::NamedTempFile::new().map_err(ctx_err)?;
            context_tar_to(f.as_file(), dockerfile, files, &[folder]).map_err(ctx_err)?;
            let path = f.path().to_path_buf();
            _ctx_file = Some(f);
            path.into()
        }
    };
    let log_path = build_log_path(&opts.logs_dir, layer, tag);
    // Builds that need no network run without (hermetic, and no network endpoint to set up).
    let settings = BuildSettings { network };
    let stage = Stage::of(layer, instance_id);
    hooks.send(BuildEvent::Started {
        stage,
        image: tag.to_string(),
    });
    let started = tokio::time::Instant::now();
    let built = engine.build_image_with(tag, ctx, labels, settings).await;
    hooks.timed(stage, tag, Phase::Build, started.elapsed(), built.is_ok());
    match built {
        Ok(log) => {
            // Kept as the official harness keeps it: what a build left out is named there
            // (a frozen environment's pins that did not install). As for a failed build, a
            // log that cannot be written is absent (its path is not reported), and does not
            // undo the image.
            let _ = base::write_log(&log_path, &log);
            created(hooks, out, tag, layer);
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

/// Records (and reports) that this preparation made `image`.
pub(super) fn created(hooks: &BuildHooks, out: &mut Prepared, image: &str, layer: Layer) {
    out.created.push((image.to_string(), layer));
    hooks.send(BuildEvent::Created {
        image: image.to_string(),
        layer,
    });
}
