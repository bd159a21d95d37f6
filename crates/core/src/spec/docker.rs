//! Dockerfile rendering for both flavours, and the Debian release chosen for a Python version.
//!
//! Templates live in `harness-images/official/` and `harness-images/debian/` and are embedded
//! at build time; placeholders are `{{name}}`.

use std::fmt;

/// The official conda base image (Ubuntu 22.04, Miniconda `py311_23.11.0-2`).
pub const OFFICIAL_BASE_TEMPLATE: &str =
    include_str!("../../../../harness-images/official/base.Dockerfile.tmpl");
const OFFICIAL_ENV_TEMPLATE: &str =
    include_str!("../../../../harness-images/official/env.Dockerfile.tmpl");
const OFFICIAL_INSTANCE_TEMPLATE: &str =
    include_str!("../../../../harness-images/official/instance.Dockerfile.tmpl");
const DEBIAN_ENV_TEMPLATE: &str =
    include_str!("../../../../harness-images/debian/env.Dockerfile.tmpl");
const DEBIAN_INSTANCE_TEMPLATE: &str =
    include_str!("../../../../harness-images/debian/instance.Dockerfile.tmpl");

/// The official base image's defaults (`DEFAULT_DOCKER_SPECS`).
pub const CONDA_VERSION: &str = "py311_23.11.0-2";
/// The Ubuntu release of the official base image.
pub const UBUNTU_VERSION: &str = "22.04";

/// A Debian release and the `python3` it ships.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DebianRelease {
    /// Debian 11 (Python 3.9).
    Bullseye,
    /// Debian 12 (Python 3.11).
    Bookworm,
    /// Debian 13 (Python 3.13).
    Trixie,
}

impl DebianRelease {
    /// Every release, oldest first.
    pub const ALL: [DebianRelease; 3] = [
        DebianRelease::Bullseye,
        DebianRelease::Bookworm,
        DebianRelease::Trixie,
    ];

    /// The release's code name (`bullseye`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DebianRelease::Bullseye => "bullseye",
            DebianRelease::Bookworm => "bookworm",
            DebianRelease::Trixie => "trixie",
        }
    }

    /// The release's `python3` (major, minor).
    pub fn python(self) -> (u32, u32) {
        match self {
            DebianRelease::Bullseye => (3, 9),
            DebianRelease::Bookworm => (3, 11),
            DebianRelease::Trixie => (3, 13),
        }
    }

    /// The release's `python3` as `major.minor`.
    pub fn python_version(self) -> String {
        let (a, b) = self.python();
        format!("{a}.{b}")
    }

    /// The release of a code name.
    pub fn from_name(name: &str) -> Option<DebianRelease> {
        DebianRelease::ALL.into_iter().find(|r| r.name() == name)
    }
}

impl fmt::Display for DebianRelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The release chosen for a Python version, and whether it is an exact match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseChoice {
    /// The release.
    pub release: DebianRelease,
    /// `None` when the release's `python3` is the spec's version; otherwise why not.
    pub warning: Option<String>,
}

/// The Debian release whose `python3` matches `python` (`3.9` bullseye, `3.11` bookworm,
/// `3.13` trixie), otherwise the nearest with a warning. Ties go to the older release: the
/// pinned packages of a spec have wheels for older interpreters more often than for newer.
/// A version that is not Python 3 gets the oldest release, with a warning.
pub fn debian_release_for(python: &str) -> ReleaseChoice {
    release_near(python, Tie::Older)
}

/// [`debian_release_for`] a frozen environment's Python: the nearest release too, but a tie
/// goes to the newer one. A frozen environment was resolved against its own Python late in
/// that Python's life (SWE-bench's are from 2024), so its pins are recent releases, many of
/// which require that Python or newer (`Requires-Python >=3.10`) and have wheels for the next
/// one; an older interpreter cannot install them at all. Measured on xarray's frozen 3.10
/// environment: on bullseye's 3.9, 8 of its 156 pins could not be installed (bokeh, Cartopy,
/// dask-expr, distributed, numcodecs, pyproj, scitools-iris, zarr).
pub fn debian_release_for_frozen(python: &str) -> ReleaseChoice {
    release_near(python, Tie::Newer)
}

/// Which of two equally near releases wins.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tie {
    Older,
    Newer,
}

fn release_near(python: &str, tie: Tie) -> ReleaseChoice {
    let parsed = parse_python(python);
    let Some((major, minor)) = parsed else {
        return ReleaseChoice {
            release: DebianRelease::Bookworm,
            warning: Some(format!(
                "python version `{python}` is not MAJOR.MINOR; using Debian bookworm (python 3.11)"
            )),
        };
    };
    let distance = |r: DebianRelease| {
        let (a, b) = r.python();
        if a != major {
            u32::MAX
        } else {
            b.abs_diff(minor)
        }
    };
    let best = DebianRelease::ALL
        .into_iter()
        .map(distance)
        .min()
        .unwrap_or(u32::MAX);
    let mut nearest = DebianRelease::ALL
        .into_iter()
        .filter(|r| distance(*r) == best);
    // ALL is oldest first; a version that is not Python 3 is equally far from every release
    // and gets the oldest either way.
    let first = nearest.next().unwrap_or(DebianRelease::Bullseye);
    let release = match tie {
        Tie::Newer if best != u32::MAX => nearest.next_back().unwrap_or(first),
        _ => first,
    };
    let warning = (distance(release) != 0).then(|| {
        format!(
            "no Debian release ships python {python}; using {} (python {}), the nearest",
            release.name(),
            release.python_version()
        )
    });
    ReleaseChoice { release, warning }
}

fn parse_python(v: &str) -> Option<(u32, u32)> {
    let mut it = v.trim().split('.');
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

/// The offline base image of a Debian release, named as `harness-images/base/bootstrap.sh`
/// names it (`swe-eval/base.debian-<release>`) with the tag `latest`; the image builder passes
/// its content-hash tag through [`super::SpecOptions::base_image`]. Debian with `python3`,
/// `python3-pytest`, `python3-venv`, `python3-pip`, `git` and `patch`.
pub fn debian_base_image(release: DebianRelease) -> String {
    format!("swe-eval/base.debian-{}:latest", release.name())
}

/// The official base image name of an architecture.
pub fn official_base_image(arch: &str) -> String {
    format!("sweb.base.py.{arch}:latest")
}

/// The Docker platform string of an architecture.
pub fn platform(arch: &str) -> &'static str {
    if arch == "arm64" {
        "linux/arm64/v8"
    } else {
        "linux/x86_64"
    }
}

/// Fills `{{name}}` placeholders.
fn fill(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (k, v) in vars {
        out = out.replace(&format!("{{{{{k}}}}}"), v);
    }
    out
}

/// The official conda base Dockerfile.
pub fn official_base_dockerfile(arch: &str) -> String {
    let conda_arch = if arch == "arm64" { "aarch64" } else { arch };
    fill(
        OFFICIAL_BASE_TEMPLATE,
        &[
            ("platform", platform(arch)),
            ("ubuntu_version", UBUNTU_VERSION),
            ("conda_version", CONDA_VERSION),
            ("conda_arch", conda_arch),
        ],
    )
}

/// The official environment Dockerfile (runs `setup_env.sh`).
pub fn official_env_dockerfile(arch: &str, base_image: &str) -> String {
    fill(
        OFFICIAL_ENV_TEMPLATE,
        &[("platform", platform(arch)), ("base_image_key", base_image)],
    )
}

/// The official instance Dockerfile (runs `setup_repo.sh`, which clones from GitHub).
pub fn official_instance_dockerfile(arch: &str, env_image: &str) -> String {
    fill(
        OFFICIAL_INSTANCE_TEMPLATE,
        &[("platform", platform(arch)), ("env_image_name", env_image)],
    )
}

/// The Debian environment Dockerfile. `apt` are Debian packages installed in a step of their
/// own before the Python packages (equal lists share the layer across environment images); a
/// Debian mirror that cannot be reached leaves them out, named in the build log.
pub fn debian_env_dockerfile(
    base_image: &str,
    release: DebianRelease,
    label: &str,
    ca_cert: bool,
    apt: &[String],
) -> String {
    let ca = if ca_cert {
        "COPY ./ca.crt /usr/local/share/ca-certificates/swe-eval-extra.crt\n\
         ENV PIP_CERT=/usr/local/share/ca-certificates/swe-eval-extra.crt\n"
    } else {
        ""
    };
    let py = release.python_version();
    let apt = apt_step(apt);
    fill(
        DEBIAN_ENV_TEMPLATE,
        &[
            ("base_image", base_image),
            ("release", release.name()),
            ("python", &py),
            ("label", label),
            ("ca_cert", ca),
            ("apt", &apt),
        ],
    )
}

/// The `RUN` line that installs Debian packages (empty for none).
fn apt_step(pkgs: &[String]) -> String {
    if pkgs.is_empty() {
        return String::new();
    }
    let list = pkgs.join(" ");
    [
        format!("RUN (apt-get update && apt-get install -y --no-install-recommends {list}) \\"),
        format!(
            "    || echo 'swe-eval: Debian packages not installed (no Debian mirror?): {list}'; \\"
        ),
        "    rm -rf /var/lib/apt/lists/*\n".to_string(),
    ]
    .join("\n")
}

/// The Debian instance Dockerfile (copies the repository from the context's `repo/`).
pub fn debian_instance_dockerfile(env_image: &str) -> String {
    fill(DEBIAN_INSTANCE_TEMPLATE, &[("env_image", env_image)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_have_no_unfilled_placeholders() {
        for text in [
            official_base_dockerfile("x86_64"),
            official_env_dockerfile("x86_64", "b"),
            official_instance_dockerfile("x86_64", "e"),
            debian_env_dockerfile(
                "b",
                DebianRelease::Bookworm,
                "x",
                true,
                &["graphviz".to_string()],
            ),
            debian_instance_dockerfile("e"),
        ] {
            assert!(!text.contains("{{"), "{text}");
        }
    }
}
