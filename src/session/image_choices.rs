//! Where a run's images and repositories come from: the user's choices (flags) turned into
//! [`PrepareOptions`], with the defaults that depend on the input (the mini benchmark builds
//! Debian images from its own mirrors) and on the environment (the repository cache).

use std::path::{Path, PathBuf};

use super::prepare::PrepareOptions;
use swe_eval_core::repos::{RepoFlagError, RepoSources};
use swe_eval_core::spec::Flavour;

/// The image and repository choices of `run` and `validate`, as given.
#[derive(Debug, Clone, Default)]
pub struct ImageChoices {
    /// `owner/name=PATH_OR_URL` overrides (`--repo`).
    pub repos: Vec<String>,
    /// A folder of mirrors (`--mirrors`).
    pub mirrors: Option<PathBuf>,
    /// Registry/namespace of prebuilt official images (`--namespace`).
    pub namespace: Option<String>,
    /// A PEM bundle image builds trust (`--ca-cert`).
    pub ca_cert: Option<PathBuf>,
    /// The image flavour; `None` picks Debian for the mini benchmark, else official.
    pub flavour: Option<Flavour>,
    /// Image builds at once (`--build-jobs`); `None` for [`default_build_jobs`].
    pub build_jobs: Option<usize>,
}

/// Image builds at once by default: half the cores, at least 1 and at most 4. Builds run
/// beside the jobs (whose default is min(4, cores)), and load the machine differently: a
/// build is mostly the daemon writing layers and host git and installers on disk and network.
pub fn default_build_jobs() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores / 2).clamp(1, 4)
}

/// Why the choices cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    /// A `--repo` flag is not `owner/name=PATH`.
    #[error(transparent)]
    RepoFlag(#[from] RepoFlagError),
    /// The `--ca-cert` file could not be read.
    #[error("cannot read --ca-cert {}: {source}", path.display())]
    CaCert {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A count or duration outside its documented range (`swe_eval_core::bounds`): a zero timeout,
    /// a worker count beyond the maximum.
    #[error("{0}")]
    OutOfRange(String),
    /// A path could not be made absolute.
    #[error("cannot make {} absolute: {source}", path.display())]
    Path {
        /// The path.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

/// `path` made absolute (against the current folder), with the path named in the error.
pub fn absolute(path: &Path) -> Result<PathBuf, OptionsError> {
    std::path::absolute(path).map_err(|source| OptionsError::Path {
        path: path.to_path_buf(),
        source,
    })
}

impl swe_eval_core::failure::Classify for OptionsError {
    fn kind(&self) -> swe_eval_core::failure::ErrorKind {
        use swe_eval_core::failure::ErrorKind;
        match self {
            OptionsError::RepoFlag(_) | OptionsError::OutOfRange(_) => ErrorKind::Usage,
            OptionsError::CaCert { source, .. }
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                ErrorKind::Usage
            }
            _ => ErrorKind::Failed,
        }
    }
}

/// Image and repository options from the choices (`mini_mirrors` when the input is the mini
/// benchmark, which also makes Debian the default flavour).
pub fn prepare_options(
    output: &Path,
    choices: &ImageChoices,
    mini_mirrors: Option<PathBuf>,
) -> Result<PrepareOptions, OptionsError> {
    let flavour = match choices.flavour {
        Some(f) => f,
        None if mini_mirrors.is_some() => Flavour::Debian,
        None => Flavour::Official,
    };
    let mirrors = match &choices.mirrors {
        Some(m) => Some(absolute(m)?),
        None => mini_mirrors,
    };
    let mut sources = RepoSources {
        mirrors,
        ..Default::default()
    };
    for r in &choices.repos {
        sources.add_override(&absolute_repo_flag(r))?;
    }
    let ca_cert = match &choices.ca_cert {
        Some(p) => Some(std::fs::read(p).map_err(|source| OptionsError::CaCert {
            path: p.clone(),
            source,
        })?),
        None => None,
    };
    Ok(PrepareOptions {
        flavour,
        namespace: choices.namespace.clone(),
        ca_cert,
        repos: sources,
        repo_cache: repo_cache_dir(output),
        base_cache: Some(cache_dir(output).join("base")),
        build_logs: output.join("logs").join("build_images"),
        parallel: choices.build_jobs.unwrap_or_else(default_build_jobs).max(1),
    })
}

/// The bare repository cache: `<cache>/repos` (see [`cache_dir`]).
fn repo_cache_dir(output: &Path) -> PathBuf {
    cache_dir(output).join("repos")
}

/// Earlier runs' job durations, which order the next run's jobs longest first:
/// `<cache>/durations.json` (`<cache>`: `$SWE_EVAL_CACHE`, else `$XDG_CACHE_HOME/swe-eval`,
/// else `~/.cache/swe-eval`, else `.cache` under the output folder).
pub fn durations_file(output: &Path) -> PathBuf {
    cache_dir(output).join("durations.json")
}

/// swe-eval's cache: `$SWE_EVAL_CACHE`, else `$XDG_CACHE_HOME/swe-eval`, else
/// `~/.cache/swe-eval`, else `.cache` under the output folder.
fn cache_dir(output: &Path) -> PathBuf {
    if let Some(d) = std::env::var_os("SWE_EVAL_CACHE") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("swe-eval");
    }
    if let Some(h) = std::env::var_os("HOME") {
        return PathBuf::from(h).join(".cache").join("swe-eval");
    }
    output.join(".cache")
}

/// `owner/name=PATH` with PATH made absolute when it is a local path that exists.
pub fn absolute_repo_flag(flag: &str) -> String {
    match flag.split_once('=') {
        Some((repo, src)) if Path::new(src).exists() => match std::path::absolute(src) {
            Ok(p) => format!("{repo}={}", p.display()),
            Err(_) => flag.to_string(),
        },
        _ => flag.to_string(),
    }
}
