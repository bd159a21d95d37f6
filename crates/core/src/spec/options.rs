//! How specs are made ([`SpecOptions`]), and where the repository's files come from when a
//! spec needs one ([`RepoFiles`]).

use std::fmt;

use super::flavour::Flavour;
use super::frozen;

/// Reads a file of a repository at a commit (the instance's environment-setup commit, or its
/// base commit when the row has none), e.g. from a local clone with `git show`. `None` when
/// the file (or the commit) is not there.
pub trait RepoFiles {
    /// The file's text, or `None` when the file or the commit is not there.
    fn read(&self, commit: &str, path: &str) -> Option<String>;
}

/// [`RepoFiles`] from a local git repository (bare or not): `git -C <dir> show <commit>:<path>`.
#[derive(Debug, Clone)]
pub struct GitRepoFiles {
    /// The repository folder.
    pub dir: std::path::PathBuf,
}

impl RepoFiles for GitRepoFiles {
    fn read(&self, commit: &str, path: &str) -> Option<String> {
        // The repository the user named may be another user's: git is told it is safe.
        let out = std::process::Command::new("git")
            .args(crate::repos::trusting(&self.dir))
            .arg("-C")
            .arg(&self.dir)
            .args(["show", &format!("{commit}:{path}")])
            .env("GIT_TERMINAL_PROMPT", "0")
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        // Requirements files are text; a non-UTF-8 byte is replaced rather than the file lost.
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// Everything that shapes a [`super::TestSpec`] besides the row.
#[derive(Clone, Copy)]
pub struct SpecOptions<'a> {
    /// Official or Debian images.
    pub flavour: Flavour,
    /// `x86_64` or `arm64`.
    pub arch: &'a str,
    /// Debian flavour: the build context carries `ca.crt`, a PEM bundle pip trusts for HTTPS.
    pub ca_cert: bool,
    /// Debian flavour: the image the environment image starts from (default
    /// [`super::debian_base_image`] of the chosen release).
    pub base_image: Option<&'a str>,
    /// Source of `requirements.txt`/`environment.yml` for specs that read them. With it the
    /// conda environment script is the official one (same content-hash tag); without it the
    /// script fetches them from GitHub while building (conda) or installs them from the
    /// checkout in the instance image (Debian).
    pub repo_files: Option<&'a dyn RepoFiles>,
    /// Debian flavour: an instance with a frozen environment (SWE-bench Verified) gets exactly
    /// its packages (default); otherwise the spec's package lists are installed.
    pub frozen_envs: bool,
    /// Debian flavour: this frozen environment instead of the instance's own (a frozen-style
    /// file of one's own; tests).
    pub frozen_env: Option<&'a frozen::FrozenEnv>,
}

impl fmt::Debug for SpecOptions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpecOptions")
            .field("flavour", &self.flavour)
            .field("arch", &self.arch)
            .field("ca_cert", &self.ca_cert)
            .field("base_image", &self.base_image)
            .field("repo_files", &self.repo_files.is_some())
            .field("frozen_envs", &self.frozen_envs)
            .field("frozen_env", &self.frozen_env.map(|e| &e.python))
            .finish()
    }
}

impl SpecOptions<'static> {
    /// The defaults for `flavour`: x86_64, no CA bundle, no repository files, frozen environments.
    pub fn new(flavour: Flavour) -> SpecOptions<'static> {
        SpecOptions {
            flavour,
            arch: "x86_64",
            ca_cert: false,
            base_image: None,
            repo_files: None,
            frozen_envs: true,
            frozen_env: None,
        }
    }
}
