//! Building one image (any layer from its Dockerfile and context, or the base from its
//! recipe), and what building hands back: [`Prepared`] images and each [`ImageFailure`]
//! (`build_failure.rs`).
//! [`super::build`] (the plan), [`super::history`] and [`super::envonly`] build through it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::build_failure::failure_message;
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
    // A log named only once written (a bootstrap that did not start wrote none).
    let log_path = log_path.filter(|p| p.exists());
    ImageFailure {
        image: image.to_string(),
        layer,
        message: failure_message(&e.to_string(), log_path.as_deref(), e.log()),
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
                    compiler_cache: None,
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
        compiler_cache: None,
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
    /// A named volume holding a compiler cache (ccache) its `RUN` steps use, shared by the
    /// builds of one repository on one environment ([`compiler_cache_volume`]); the image is
    /// then made in a container and committed (the volume is not part of it). `None`, an
    /// engine that cannot, or a Dockerfile beyond what [`commit_steps`] reads: a plain build.
    pub(super) compiler_cache: Option<&'a str>,
}

/// Where the compiler cache volume is mounted while an image is made.
pub const COMPILER_CACHE_DIR: &str = "/var/cache/swe-eval-ccache";

/// The compiler cache volume of `repo`'s instance builds on environment image `env`:
/// `swe-eval-ccache.<owner__name>.<12 hex of the environment's name>`.
pub fn compiler_cache_volume(repo: &str, env: &str) -> String {
    let hash = super::content_hash(&[env.as_bytes()]);
    format!(
        "swe-eval-ccache.{}.{}",
        repo.replacen('/', "__", 1).to_lowercase(),
        &hash[..12]
    )
}

/// A Dockerfile as the steps of a build in a container: the image it starts `FROM`, the files
/// its `COPY ./<file> <dir>/` lines put in, its `RUN` lines as one shell script (stopping at
/// the first that fails), and its `WORKDIR` lines as changes to the image's configuration.
/// `None` for anything else (another instruction, a continued line, a file not in `files`).
pub(super) fn commit_steps(
    dockerfile: &str,
    files: &[TarEntry],
) -> Option<(String, Vec<crate::engine::FileIn>, String, Vec<String>)> {
    let mut from = None;
    let (mut copies, mut runs, mut changes) = (Vec::new(), Vec::new(), Vec::new());
    for line in dockerfile.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.ends_with('\\') {
            return None;
        }
        let (word, rest) = line.split_once(char::is_whitespace)?;
        let rest = rest.trim();
        match word {
            "FROM" if from.is_none() && !rest.contains(char::is_whitespace) => {
                from = Some(rest.to_string())
            }
            "COPY" => {
                let (src, dest) = rest.split_once(char::is_whitespace)?;
                let (src, dest) = (src.trim_start_matches("./"), dest.trim());
                if !dest.starts_with('/') || !dest.ends_with('/') || dest.contains(' ') {
                    return None;
                }
                let f = files.iter().find(|f| f.path == src)?;
                copies.push(crate::engine::FileIn {
                    path: format!("{dest}{src}"),
                    contents: f.contents.clone(),
                    mode: f.mode,
                });
            }
            // A WORKDIR before a RUN would be the RUN's directory: only trailing ones.
            "RUN" if !rest.starts_with('[') && changes.is_empty() => runs.push(rest.to_string()),
            "WORKDIR" => changes.push(format!("WORKDIR {rest}")),
            _ => return None,
        }
    }
    let script = runs
        .iter()
        .map(|r| format!("( {r} ) || exit $?"))
        .collect::<Vec<_>>()
        .join("\n");
    Some((from?, copies, script, changes))
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
        compiler_cache,
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
    let cached = match compiler_cache.and_then(|v| Some((v, commit_steps(dockerfile, files)?))) {
        Some((volume, (from, copies, script, changes))) => {
            let build = crate::engine::CommitBuild {
                tag: tag.to_string(),
                from,
                name: format!(
                    "swe-eval-build.{}",
                    &super::content_hash(&[tag.as_bytes()])[..16]
                ),
                files: copies,
                command: vec![
                    "/bin/bash".into(),
                    "-c".into(),
                    with_compiler_cache(&script),
                ],
                volumes: vec![(volume.to_string(), COMPILER_CACHE_DIR.to_string())],
                volume_labels: labels_for(layer, None),
                network,
                labels: labels.clone(),
                changes,
            };
            match engine.commit_build(build).await {
                Err(crate::engine::EngineError::Unsupported { .. }) => None,
                r => Some(r),
            }
        }
        None => None,
    };
    let built = match cached {
        Some(r) => r,
        None => engine.build_image_with(tag, ctx, labels, settings).await,
    };
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

/// `script` with ccache in front of the compilers when the image has it (Debian's
/// `/usr/lib/ccache`: `gcc`, `x86_64-linux-gnu-gcc`... that call ccache; `cc` and `c++` in a
/// folder of this build's), its cache in
/// the mounted volume; then the cache's statistics for this build, in the build log: its own
/// log where ccache keeps one (4.4 and later: Debian bookworm), else how far the shared
/// counters moved during the build (ccache 4.2 in bullseye has no such log). The image
/// is made as without: ccache gives the compiler's own output, and nothing of it is on the
/// image's `PATH` afterwards.
fn with_compiler_cache(script: &str) -> String {
    format!(
        "if [ -d /usr/lib/ccache ] && command -v ccache >/dev/null; then\n\
         mkdir -p /tmp/swe-eval-ccache-bin\n\
         for c in cc c++; do ln -sf \"$(command -v ccache)\" /tmp/swe-eval-ccache-bin/$c; done\n\
         export PATH=/tmp/swe-eval-ccache-bin:/usr/lib/ccache:$PATH CCACHE_DIR={COMPILER_CACHE_DIR} \\\n\
         CCACHE_MAXSIZE=5G CCACHE_STATSLOG=/tmp/swe-eval-ccache.log\n\
         echo 'swe-eval: compiler cache {COMPILER_CACHE_DIR} (ccache)'\n\
         ccache --print-stats > /tmp/swe-eval-ccache.before 2>/dev/null || :\n\
         else echo 'swe-eval: no ccache in the image: compiling without a cache'; fi\n\
         {script}\n\
         if [ -n \"${{CCACHE_DIR:-}}\" ]; then\n\
         echo 'swe-eval: compiler cache, this build:'\n\
         if [ -s \"$CCACHE_STATSLOG\" ]; then ccache --show-log-stats -v 2>/dev/null || cat \"$CCACHE_STATSLOG\"\n\
         else\n\
         moved=$(ccache --print-stats 2>/dev/null | awk -F '\\t' 'NR == FNR {{ was[$1] = $2; next }} $1 !~ /timestamp/ && $2 != was[$1] {{ print $1 \": \" $2 - was[$1] }}' /tmp/swe-eval-ccache.before - 2>/dev/null)\n\
         if [ -n \"$moved\" ]; then echo \"$moved\"; echo '(counters of the shared cache moved during this build; ccache too old for a log of its own)'; else echo 'no compilation'; fi\n\
         fi\n\
         rm -rf \"$CCACHE_STATSLOG\" /tmp/swe-eval-ccache.before /tmp/swe-eval-ccache-bin\n\
         fi\n"
    )
}

/// Records (and reports) that this preparation made `image`.
pub(super) fn created(hooks: &BuildHooks, out: &mut Prepared, image: &str, layer: Layer) {
    out.created.push((image.to_string(), layer));
    hooks.send(BuildEvent::Created {
        image: image.to_string(),
        layer,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup_repo() -> Vec<TarEntry> {
        vec![TarEntry {
            path: "setup_repo.sh".into(),
            contents: b"echo hi\n".to_vec(),
            mode: 0o755,
        }]
    }

    #[test]
    fn the_debian_instance_dockerfile_reads_as_steps_in_a_container() {
        let dockerfile = include_str!("../../harness-images/debian/instance.Dockerfile.tmpl")
            .replace("{{env_image}}", "env-1:latest");
        let (from, copies, script, changes) = commit_steps(&dockerfile, &setup_repo()).unwrap();
        assert_eq!(from, "env-1:latest");
        assert_eq!(copies.len(), 1);
        assert_eq!(
            (copies[0].path.as_str(), copies[0].contents.as_slice()),
            ("/root/setup_repo.sh", b"echo hi\n".as_slice())
        );
        assert_eq!(
            script,
            "( sed -i -e 's/\\r$//' /root/setup_repo.sh ) || exit $?\n\
             ( /bin/bash /root/setup_repo.sh ) || exit $?"
        );
        assert_eq!(changes, ["WORKDIR /testbed/"]);
        let wrapped = with_compiler_cache(&script);
        assert!(wrapped.contains("/usr/lib/ccache:$PATH"), "{wrapped}");
        assert!(wrapped.contains(&script));
    }

    #[test]
    fn a_dockerfile_beyond_the_steps_read_is_left_to_a_plain_build() {
        let files = setup_repo();
        for dockerfile in [
            "FROM a\nENV X=1\nRUN true\n",
            "FROM a\nRUN true \\\n  && false\n",
            "FROM a\nCOPY ./other.sh /root/\n",
            "FROM a\nCOPY ./setup_repo.sh /root/x.sh\n",
            "FROM a\nWORKDIR /testbed/\nRUN true\n",
            "FROM a AS b\nRUN true\n",
            "FROM a\nRUN [\"true\"]\n",
            "RUN true\n",
        ] {
            assert!(commit_steps(dockerfile, &files).is_none(), "{dockerfile}");
        }
    }

    #[test]
    fn compiler_cache_volumes_are_per_repository_and_environment() {
        let v = compiler_cache_volume("Astropy/astropy", "env-1:latest");
        assert!(v.starts_with("swe-eval-ccache.astropy__astropy."), "{v}");
        assert_eq!(v, compiler_cache_volume("Astropy/astropy", "env-1:latest"));
        assert_ne!(v, compiler_cache_volume("Astropy/astropy", "env-2:latest"));
        assert_ne!(v, compiler_cache_volume("o/n", "env-1:latest"));
    }
}
