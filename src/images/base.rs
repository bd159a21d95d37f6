//! The offline base image: a Debian root file system made by `debootstrap` from a Debian
//! mirror (no container registry needed), then imported. Its tag is a hash of the bootstrap
//! recipe, so an existing tag is reused and an edited recipe gives a new image.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::{labels_for, ImageError, Layer};
use crate::engine::Engine;
use crate::spec::DebianRelease;

/// The bootstrap recipe, run as `bash bootstrap.sh RELEASE DIR MIRROR`.
pub const BOOTSTRAP_SCRIPT: &str = include_str!("../../harness-images/base/bootstrap.sh");
/// Debian's mirror, reachable over plain HTTP (no CA certificates needed yet).
pub const DEFAULT_MIRROR: &str = "http://deb.debian.org/debian";

/// The base image of `release`: `swe-eval/base.debian-<release>:<12 hex of the recipe>`.
pub fn base_image_name(release: DebianRelease) -> String {
    let hash = super::content_hash(&[BOOTSTRAP_SCRIPT.as_bytes(), release.name().as_bytes()]);
    format!("swe-eval/base.debian-{}:{}", release.name(), &hash[..12])
}

/// How a base image came to be.
#[derive(Debug, Clone, PartialEq)]
pub struct BaseOutcome {
    /// The base image's name.
    pub image: String,
    /// False when the tag already existed (nothing was done).
    pub built: bool,
    /// Time spent in debootstrap and the import.
    pub bootstrap: Duration,
    /// Time spent importing the root file system as an image.
    pub import: Duration,
}

/// Options of the bootstrap.
#[derive(Debug, Clone)]
pub struct BaseOptions {
    /// The Debian mirror debootstrap downloads from.
    pub mirror: String,
    /// Where the root file system is assembled (a temporary folder is made inside).
    pub work_dir: PathBuf,
    /// Where the bootstrap log goes (`<output>/logs/build_images/base/<name>/build_image.log`).
    pub log_file: Option<PathBuf>,
}

impl BaseOptions {
    /// The defaults, with the bootstrap log at its place under a run's build logs
    /// (`<build_logs>/base/debian-bootstrap/build_image.log`).
    pub fn logging_under(build_logs: &Path) -> BaseOptions {
        BaseOptions {
            log_file: Some(
                build_logs
                    .join("base")
                    .join("debian-bootstrap")
                    .join("build_image.log"),
            ),
            ..BaseOptions::default()
        }
    }
}

impl Default for BaseOptions {
    fn default() -> Self {
        BaseOptions {
            mirror: DEFAULT_MIRROR.to_string(),
            work_dir: std::env::temp_dir(),
            log_file: None,
        }
    }
}

/// Makes sure the base image of `release` exists, bootstrapping and importing it when not.
/// `aliases` are extra names given to it (e.g. the name a spec's Dockerfile starts `FROM`).
pub async fn ensure_base<E: Engine>(
    engine: &E,
    release: DebianRelease,
    aliases: &[String],
    opts: &BaseOptions,
) -> Result<BaseOutcome, ImageError> {
    let image = base_image_name(release);
    let mut outcome = BaseOutcome {
        image: image.clone(),
        built: false,
        bootstrap: Duration::ZERO,
        import: Duration::ZERO,
    };
    if !engine.image_exists(&image).await? {
        let t0 = Instant::now();
        let rootfs = bootstrap(release, opts).await?;
        outcome.bootstrap = t0.elapsed();
        let t1 = Instant::now();
        let labels = labels_for(Layer::Base, None);
        engine
            .import_image(&image, rootfs.path().to_path_buf(), labels)
            .await?;
        drop(rootfs);
        outcome.import = t1.elapsed();
        outcome.built = true;
    }
    for alias in aliases {
        if alias != &image {
            engine.tag_image(&image, alias).await?;
        }
    }
    Ok(outcome)
}

/// Runs the recipe into a temporary folder; returns the root file system as a tar file (a
/// quarter of a GB: streamed to the daemon from disk, never held in memory).
async fn bootstrap(
    release: DebianRelease,
    opts: &BaseOptions,
) -> Result<tempfile::NamedTempFile, ImageError> {
    let release_name = release.name().to_string();
    let opts = opts.clone();
    // debootstrap and tar are blocking processes that take minutes: off the async workers.
    tokio::task::spawn_blocking(move || bootstrap_blocking(&release_name, &opts))
        .await
        .map_err(|e| ImageError::Bootstrap {
            release: release.name().into(),
            message: e.to_string(),
            log: String::new(),
        })?
}

fn bootstrap_blocking(
    release: &str,
    opts: &BaseOptions,
) -> Result<tempfile::NamedTempFile, ImageError> {
    let fail = |message: String, log: String| ImageError::Bootstrap {
        release: release.into(),
        message,
        log,
    };
    std::fs::create_dir_all(&opts.work_dir)
        .map_err(|e| fail(format!("{}: {e}", opts.work_dir.display()), String::new()))?;
    let tmp = tempfile::Builder::new()
        .prefix("swe-eval-base-")
        .tempdir_in(&opts.work_dir)
        .map_err(|e| {
            fail(
                format!("temporary folder in {}: {e}", opts.work_dir.display()),
                String::new(),
            )
        })?;
    let script = tmp.path().join("bootstrap.sh");
    std::fs::write(&script, BOOTSTRAP_SCRIPT).map_err(|e| fail(e.to_string(), String::new()))?;
    let rootfs = tmp.path().join("rootfs");
    let out = Command::new("bash")
        .arg(&script)
        .arg(release)
        .arg(&rootfs)
        .arg(&opts.mirror)
        .output()
        .map_err(|e| fail(format!("cannot run bash: {e}"), String::new()))?;
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if let Some(f) = &opts.log_file {
        let _ = write_log(f, &log);
    }
    if !out.status.success() {
        let hint = if log.contains("must be root") || log.contains("Permission denied") {
            " (debootstrap needs root: run as root or with sudo)"
        } else {
            ""
        };
        return Err(fail(
            format!("debootstrap exited with {}{hint}", out.status),
            log,
        ));
    }
    let tar = tempfile::NamedTempFile::new_in(&opts.work_dir).map_err(|e| {
        fail(
            format!("temporary file in {}: {e}", opts.work_dir.display()),
            log.clone(),
        )
    })?;
    tar_rootfs(&rootfs, tar.path()).map_err(|m| fail(m, log.clone()))?;
    // Removing the tree also needs root for some files; the temporary folder does it on drop.
    drop(tmp);
    Ok(tar)
}

/// A tar of the root file system with numeric owners (uids inside the image, not the host's).
fn tar_rootfs(dir: &Path, dest: &Path) -> Result<(), String> {
    let out = Command::new("tar")
        .args(["--numeric-owner", "--xattrs", "-C"])
        .arg(dir)
        .arg("-cf")
        .arg(dest)
        .arg(".")
        .output()
        .map_err(|e| format!("cannot run tar: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "tar of {} failed: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

/// Writes a build log, creating its folder; a log that cannot be written is reported, not fatal.
pub(crate) fn write_log(path: &Path, text: &str) -> Result<(), String> {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    crate::fsutil::write_atomic(path, text.as_bytes()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_names_hash_the_recipe_and_release() {
        let a = base_image_name(DebianRelease::Bookworm);
        let b = base_image_name(DebianRelease::Bullseye);
        assert!(a.starts_with("swe-eval/base.debian-bookworm:"), "{a}");
        assert_eq!(a.rsplit(':').next().unwrap().len(), 12);
        assert_ne!(a.rsplit(':').next(), b.rsplit(':').next());
        assert_eq!(a, base_image_name(DebianRelease::Bookworm));
    }
}
