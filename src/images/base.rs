//! The offline base image: a Debian root file system made by `debootstrap` from a Debian
//! mirror (no container registry needed), then imported. Its tag is a hash of the bootstrap
//! recipe, so an existing tag is reused and an edited recipe gives a new image.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::{labels_for, ImageError, Layer};
use crate::engine::Engine;
use swe_eval_core::spec::DebianRelease;

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
    /// Where `scripts/setup.sh` bootstraps the root file system ahead of the first run
    /// (`harness-images/base/prefetch.sh`, `<cache>/base`): a missing base waits for a
    /// bootstrap in progress there and imports what it left instead of bootstrapping again.
    /// `None`: always bootstrap here.
    pub prefetched: Option<PathBuf>,
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
            prefetched: None,
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
        // One bootstrap at a time per recipe: a run waits for the one `scripts/setup.sh`
        // started (or another run's), then looks again.
        let ahead = match &opts.prefetched {
            Some(dir) => Prefetch::lock(dir, &image).await,
            None => None,
        };
        if !engine.image_exists(&image).await? {
            outcome = match ahead.as_ref().filter(|p| p.tar.is_file()) {
                Some(p) => match import_prefetched(engine, &image, p, opts).await {
                    Ok(o) => o,
                    // A root file system that does not import is bootstrapped again here.
                    Err(e) => {
                        let _ = std::fs::remove_file(&p.tar);
                        note(
                            opts,
                            &format!("{}: not imported ({e}); bootstrapping", p.tar.display()),
                        );
                        build_base(engine, release, &image, opts).await?
                    }
                },
                None => build_base(engine, release, &image, opts).await?,
            };
        }
        drop(ahead);
    }
    for alias in aliases {
        if alias != &image {
            engine.tag_image(&image, alias).await?;
        }
    }
    Ok(outcome)
}

/// A root file system bootstrapped ahead of the run for one base image, under its lock:
/// `<dir>/<release>-<12 hex>.tar` (written whole, then renamed), `.lock` (held by whoever
/// bootstraps it) and `.log`, as `harness-images/base/prefetch.sh` names them.
struct Prefetch {
    tar: PathBuf,
    log: PathBuf,
    /// Holds the lock until dropped.
    _lock: std::fs::File,
}

impl Prefetch {
    /// The file stem of `image` (`swe-eval/base.debian-bookworm:0123456789ab` ->
    /// `debian-bookworm-0123456789ab`).
    fn stem(image: &str) -> String {
        let name = image.rsplit('/').next().unwrap_or(image);
        name.trim_start_matches("base.").replace(':', "-")
    }

    /// Takes the lock of `image`'s prefetch in `dir`, waiting while another process holds it
    /// (a bootstrap in progress). `None` when the lock file cannot be made: no waiting then.
    async fn lock(dir: &Path, image: &str) -> Option<Prefetch> {
        let stem = Self::stem(image);
        let (dir, tar, log) = (
            dir.to_path_buf(),
            dir.join(format!("{stem}.tar")),
            dir.join(format!("{stem}.log")),
        );
        let lock = dir.join(format!("{stem}.lock"));
        let file = tokio::task::spawn_blocking(move || {
            std::fs::create_dir_all(&dir).ok()?;
            let f = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&lock)
                .ok()?;
            f.lock().ok()?;
            Some(f)
        })
        .await
        .ok()??;
        Some(Prefetch {
            tar,
            log,
            _lock: file,
        })
    }
}

/// Imports the root file system `p` left as `image`, then removes it; its bootstrap log goes
/// into the run's log.
async fn import_prefetched<E: Engine>(
    engine: &E,
    image: &str,
    p: &Prefetch,
    opts: &BaseOptions,
) -> Result<BaseOutcome, ImageError> {
    let t0 = Instant::now();
    let labels = labels_for(Layer::Base, None);
    engine.import_image(image, p.tar.clone(), labels).await?;
    let _ = std::fs::remove_file(&p.tar);
    let earlier = std::fs::read_to_string(&p.log).unwrap_or_default();
    note(
        opts,
        &format!(
            "root file system bootstrapped ahead by scripts/setup.sh ({}), imported; its log:\n{earlier}",
            p.tar.display()
        ),
    );
    Ok(BaseOutcome {
        image: image.to_string(),
        built: true,
        bootstrap: Duration::ZERO,
        import: t0.elapsed(),
    })
}

/// Adds a line to the bootstrap log, if there is one.
fn note(opts: &BaseOptions, line: &str) {
    if let Some(f) = &opts.log_file {
        let old = std::fs::read_to_string(f).unwrap_or_default();
        let _ = write_log(f, &format!("{old}{line}\n"));
    }
}

/// Bootstraps `release` and imports it as `tag`, whether or not an image of that name exists.
pub async fn build_base<E: Engine>(
    engine: &E,
    release: DebianRelease,
    tag: &str,
    opts: &BaseOptions,
) -> Result<BaseOutcome, ImageError> {
    let t0 = Instant::now();
    let rootfs = bootstrap(release, opts).await?;
    let bootstrap = t0.elapsed();
    let t1 = Instant::now();
    let labels = labels_for(Layer::Base, None);
    engine
        .import_image(tag, rootfs.path().to_path_buf(), labels)
        .await?;
    drop(rootfs);
    Ok(BaseOutcome {
        image: tag.to_string(),
        built: true,
        bootstrap,
        import: t1.elapsed(),
    })
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
    let tar = tempfile::NamedTempFile::new_in(&opts.work_dir).map_err(|e| {
        fail(
            format!("temporary file in {}: {e}", opts.work_dir.display()),
            String::new(),
        )
    })?;
    let how = Privilege::of_this_process().map_err(|e| fail(e.to_string(), String::new()))?;
    let out = how
        .command(&script, release, &rootfs, &opts.mirror, tar.path())
        .output()
        .map_err(|e| fail(format!("cannot run {}: {e}", how.program()), String::new()))?;
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if let Some(f) = &opts.log_file {
        let _ = write_log(f, &log);
    }
    if !out.status.success() {
        let hint = match how {
            Privilege::Root
                if log.contains("must be root") || log.contains("Permission denied") =>
            {
                " (debootstrap needs root: run as root or with sudo)"
            }
            Privilege::Unshare if log.contains("newuidmap") || log.contains("subuid") => {
                " (bootstrapping as an ordinary user needs subordinate ids: an administrator \
                 adds them with `usermod --add-subuids 100000-165535 --add-subgids \
                 100000-165535 USER`, and Debian's uidmap package)"
            }
            _ => "",
        };
        return Err(fail(
            format!("{} exited with {}{hint}", how.describe(), out.status),
            log,
        ));
    }
    if how == Privilege::Root {
        tar_rootfs(&rootfs, tar.path()).map_err(|e| fail(e.to_string(), log.clone()))?;
    }
    // As root, removing the tree needs root for some files: the temporary folder does it on
    // drop. In a user namespace the recipe removed it there (outside, its files are owned by
    // subordinate ids the user cannot remove).
    drop(tmp);
    Ok(tar)
}

/// How the recipe gets the root it needs: as root, or as an ordinary user in a user namespace
/// where they are root over their subordinate ids (`podman unshare`, as rootless Podman
/// stores images), so a user without root bootstraps the base their rootless Podman imports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Privilege {
    /// This process is root: the recipe runs as is, and the tar is made here.
    Root,
    /// An ordinary user: the recipe, the tar and the removal of the tree run under
    /// `podman unshare`, with `container=lxc` so debootstrap bind-mounts the devices it may
    /// not create (the recipe removes them from the image anyway).
    Unshare,
}

/// The offline base needs root, and this process has neither root nor Podman to get it in a
/// user namespace.
#[derive(Debug, thiserror::Error)]
#[error(
    "the offline base is bootstrapped by debootstrap, which needs root: this process runs as uid \
     {uid}. Run as root or with sudo, or install podman (with uidmap) to bootstrap in a user \
     namespace as rootless Podman does"
)]
struct NoPrivilege {
    /// The user id this process runs as.
    uid: u32,
}

impl Privilege {
    fn of_this_process() -> Result<Privilege, NoPrivilege> {
        use std::os::unix::fs::MetadataExt;
        let uid = std::fs::metadata("/proc/self").map_or(0, |m| m.uid());
        if uid == 0 {
            return Ok(Privilege::Root);
        }
        let podman = Command::new("podman")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if podman {
            Ok(Privilege::Unshare)
        } else {
            Err(NoPrivilege { uid })
        }
    }

    fn program(self) -> &'static str {
        match self {
            Privilege::Root => "bash",
            Privilege::Unshare => "podman unshare",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Privilege::Root => "debootstrap",
            Privilege::Unshare => "debootstrap in `podman unshare`",
        }
    }

    fn command(
        self,
        script: &Path,
        release: &str,
        rootfs: &Path,
        mirror: &str,
        tar: &Path,
    ) -> Command {
        match self {
            Privilege::Root => {
                let mut c = Command::new("bash");
                c.arg(script).arg(release).arg(rootfs).arg(mirror);
                c
            }
            Privilege::Unshare => {
                // An ordinary user's PATH often lacks the sbin folders debootstrap and chroot
                // live in.
                let mut c = Command::new("podman");
                c.args(["unshare", "env", "container=lxc"])
                    .arg("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
                    .args(["bash", "-c", UNSHARED_STEPS, "bootstrap"])
                    .arg(script)
                    .arg(release)
                    .arg(rootfs)
                    .arg(mirror)
                    .arg(tar);
                c
            }
        }
    }
}

/// The recipe, the tar (numeric owners: the ids inside the namespace, as inside the image)
/// and the removal of the tree, in one user namespace: `$1` recipe, `$2` release, `$3` tree,
/// `$4` mirror, `$5` tar.
const UNSHARED_STEPS: &str = r#"bash "$1" "$2" "$3" "$4"; s=$?
if [ "$s" -eq 0 ]; then tar --numeric-owner --xattrs -C "$3" -cf "$5" . ; s=$?; fi
rm -rf "$3"
exit "$s""#;

/// Why the tar of a root file system could not be made.
#[derive(Debug, thiserror::Error)]
enum TarError {
    /// `tar` could not be run.
    #[error("cannot run tar for {}: {source}", dir.display())]
    Spawn {
        /// The tree.
        dir: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// `tar` failed.
    #[error("tar of {} failed: {stderr}", dir.display())]
    Failed {
        /// The tree.
        dir: PathBuf,
        /// What it wrote on its standard error.
        stderr: String,
    },
}

/// A tar of the root file system with numeric owners (uids inside the image, not the host's).
fn tar_rootfs(dir: &Path, dest: &Path) -> Result<(), TarError> {
    let out = Command::new("tar")
        .args(["--numeric-owner", "--xattrs", "-C"])
        .arg(dir)
        .arg("-cf")
        .arg(dest)
        .arg(".")
        .output()
        .map_err(|source| TarError::Spawn {
            dir: dir.to_path_buf(),
            source,
        })?;
    if !out.status.success() {
        return Err(TarError::Failed {
            dir: dir.to_path_buf(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(())
}

/// A build log that could not be written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LogWriteError {
    /// Its folder could not be made.
    #[error("cannot make {}: {source}", dir.display())]
    Folder {
        /// The folder.
        dir: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The file could not be written.
    #[error(transparent)]
    Write(#[from] swe_eval_core::fsutil::WriteError),
}

/// Writes a build log, creating its folder; a log that cannot be written is reported, not fatal.
pub(crate) fn write_log(path: &Path, text: &str) -> Result<(), LogWriteError> {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).map_err(|source| LogWriteError::Folder {
            dir: p.to_path_buf(),
            source,
        })?;
    }
    Ok(swe_eval_core::fsutil::write_atomic(path, text.as_bytes())?)
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

    /// Options whose own bootstrap fails at once (no mirror answers on port 9): a test that
    /// reaches it fails instead of bootstrapping for minutes.
    fn no_bootstrap(dir: &Path) -> BaseOptions {
        BaseOptions {
            mirror: "http://127.0.0.1:9/debian".into(),
            work_dir: dir.join("work"),
            log_file: Some(dir.join("log").join("build_image.log")),
            prefetched: Some(dir.join("base")),
        }
    }

    fn prefetched_tar(dir: &Path) -> PathBuf {
        let stem = Prefetch::stem(&base_image_name(DebianRelease::Bookworm));
        dir.join("base").join(format!("{stem}.tar"))
    }

    #[test]
    fn the_prefetch_files_are_named_after_the_image() {
        assert_eq!(
            Prefetch::stem("swe-eval/base.debian-bookworm:0123456789ab"),
            "debian-bookworm-0123456789ab"
        );
    }

    #[test]
    fn prefetch_sh_names_the_image_as_the_harness_does() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let out = Command::new("bash")
            .arg(root.join("harness-images/base/prefetch.sh"))
            .args(["--name", "bookworm"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            base_image_name(DebianRelease::Bookworm)
        );
    }

    #[tokio::test]
    async fn a_root_file_system_bootstrapped_ahead_is_imported_not_bootstrapped_again() {
        let dir = tempfile::tempdir().unwrap();
        let opts = no_bootstrap(dir.path());
        let tar = prefetched_tar(dir.path());
        std::fs::create_dir_all(tar.parent().unwrap()).unwrap();
        std::fs::write(&tar, b"rootfs").unwrap();
        std::fs::write(
            tar.with_extension("log"),
            "I: Base system installed successfully.\n",
        )
        .unwrap();
        let engine = crate::engine::FakeEngine::new();
        let o = ensure_base(&engine, DebianRelease::Bookworm, &[], &opts)
            .await
            .unwrap();
        assert!(o.built);
        assert_eq!(o.bootstrap, Duration::ZERO);
        assert!(engine.calls().iter().any(|c| matches!(c,
            crate::engine::Call::ImportImage { tag, .. } if *tag == o.image)));
        assert!(!tar.exists(), "the imported root file system is removed");
        let log = std::fs::read_to_string(opts.log_file.unwrap()).unwrap();
        assert!(
            log.contains("bootstrapped ahead") && log.contains("installed successfully"),
            "{log}"
        );
    }

    #[tokio::test]
    async fn a_run_waits_for_the_bootstrap_in_progress() {
        let dir = tempfile::tempdir().unwrap();
        let opts = no_bootstrap(dir.path());
        let tar = prefetched_tar(dir.path());
        std::fs::create_dir_all(tar.parent().unwrap()).unwrap();
        // The prefetch holds the lock, writes its tar a moment later, then lets go.
        let lock = std::fs::File::create(tar.with_extension("lock")).unwrap();
        lock.lock().unwrap();
        let writer = {
            let tar = tar.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                std::fs::write(&tar, b"rootfs").unwrap();
                drop(lock);
            })
        };
        let engine = crate::engine::FakeEngine::new();
        let o = ensure_base(&engine, DebianRelease::Bookworm, &[], &opts)
            .await
            .unwrap();
        writer.join().unwrap();
        assert!(o.built);
        assert!(!tar.exists());
    }
}
