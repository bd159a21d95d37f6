//! The per-instance test spec ([`TestSpec`]): its scripts, Dockerfiles, image names and build
//! contexts; the official image name; spec warnings grouped for printing.

use super::docker::DebianRelease;
use super::flavour::Flavour;
use super::frozen;
use super::names::DEFAULT_NAMESPACE;

/// A file for a Docker build context: its path inside the context and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    /// The path inside the context.
    pub path: String,
    /// The file's bytes.
    pub contents: Vec<u8>,
    /// Unix mode bits.
    pub mode: u32,
}

/// Everything needed to build the images of one instance and run its tests.
#[derive(Debug, Clone, PartialEq)]
pub struct TestSpec {
    /// The instance.
    pub instance_id: String,
    /// The repository, `owner/name`.
    pub repo: String,
    /// The specification's version key.
    pub version: String,
    /// The commit the task starts from.
    pub base_commit: String,
    /// Official or Debian images.
    pub flavour: Flavour,
    /// `x86_64` or `arm64`, as in the image names.
    pub arch: String,
    /// The spec's Python version (e.g. `3.9`).
    pub python_version: String,
    /// Debian flavour: the release chosen for the spec's Python.
    pub debian_release: Option<DebianRelease>,
    /// Problems worth telling the user (nearest Debian release, best-effort installs, ...),
    /// without the instance id (callers prefix it).
    pub warnings: Vec<String>,
    /// Appended to the test command, as the official harness derives them.
    pub test_directives: Vec<String>,
    /// Files reset to `base_commit` before and after the tests.
    pub test_files: Vec<String>,
    /// The full test command (the spec's `test_cmd` and the directives).
    pub test_cmd: String,
    /// The eval script (the row's own, or rendered for the flavour).
    pub eval_script: String,
    /// True when `eval_script` is the row's own (SWE-bench 5 rows); nothing needs building.
    pub eval_script_from_row: bool,
    /// The log parser's official name (`parse_log_pytest`, `parse_log_django`, ...).
    pub log_parser: String,
    /// The base image the environment image starts from.
    pub base_image_tag: String,
    /// `setup_env.sh` of the environment image.
    pub setup_env_script: String,
    /// `setup_repo.sh` of the instance image.
    pub install_repo_script: String,
    /// The environment image's Dockerfile.
    pub env_dockerfile: String,
    /// The instance image's Dockerfile.
    pub instance_dockerfile: String,
    /// Content-addressed environment image reference (`name:tag`): official flavour
    /// `sweb.env.py.x86_64.<22 hex>:latest` (the official name when the env script is),
    /// Debian `swe-eval.env.py.<release>.x86_64.<22 hex>:latest`.
    pub env_image_tag: String,
    /// Instance image reference (`name:tag`): official `sweb.eval.x86_64.<id>:latest`, Debian
    /// `swe-eval.eval.<release>.x86_64.<id>:<12 hex of everything it is built from>`.
    pub instance_image_tag: String,
    /// The image the row names: its `image` when it has an `eval_script`, else its
    /// `docker_image` (either one when only one is there).
    pub row_image: Option<String>,
    /// Tests the patch must make pass.
    pub fail_to_pass: Vec<String>,
    /// Tests that must keep passing.
    pub pass_to_pass: Vec<String>,
    /// CPU limit the official harness sets for some specs, in billionths of a CPU.
    pub nano_cpus: Option<u64>,
    /// Debian flavour: the build context of the environment image carries `ca.crt`.
    pub ca_cert: bool,
    /// Debian flavour: the instance's frozen environment (SWE-bench's own record of what its
    /// tests ran with), as the environment image installs it; `None` when there is none and
    /// the spec's package lists are installed instead.
    pub frozen_env: Option<frozen::EnvPlan>,
    /// The instance image's build needs the network (to PyPI, for the install step).
    pub instance_build_network: bool,
}

impl TestSpec {
    /// The official prebuilt image: the row's own image (see `row_image`) when no namespace is given,
    /// otherwise `<namespace>/sweb.eval.<arch>.<id>:latest` with `__` written `_1776_` (Docker
    /// Hub rejects double underscores). An empty namespace gives the local name.
    pub fn official_image_name(&self, namespace: Option<&str>) -> String {
        if namespace.is_none() {
            if let Some(img) = &self.row_image {
                return img.clone();
            }
        }
        official_image_name(
            &self.instance_id,
            namespace.unwrap_or(DEFAULT_NAMESPACE),
            &self.arch,
        )
    }

    /// The image's content identity, what a verdict records of its image
    /// ([`crate::identity`]): the image the row names, or the official image pulled from
    /// `namespace`, by name; else the recipe the image is built from (flavour, Dockerfiles,
    /// scripts, the base image and the base commit), hashed, so the same recipe gives the same
    /// identity whatever the image's tag and however often it is rebuilt.
    pub fn image_identity(&self, namespace: Option<&str>) -> String {
        if let Some(image) = &self.row_image {
            return format!("row {image}");
        }
        if let Some(ns) = namespace.filter(|ns| !ns.is_empty()) {
            return format!("pulled {}", self.official_image_name(Some(ns)));
        }
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for part in [
            self.flavour.as_str(),
            &self.base_image_tag,
            &self.env_dockerfile,
            &self.setup_env_script,
            &self.instance_dockerfile,
            &self.install_repo_script,
            &self.base_commit,
            if self.ca_cert { "ca" } else { "" },
        ] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        format!("built {}", hex::encode(h.finalize()))
    }

    /// The environment image's build context besides the Dockerfile.
    pub fn env_context_files(&self) -> Vec<ContextFile> {
        vec![ContextFile {
            path: "setup_env.sh".to_string(),
            contents: self.setup_env_script.clone().into_bytes(),
            mode: 0o755,
        }]
    }

    /// The instance image's build context besides the Dockerfile. (The Debian flavour's
    /// repository is not in it: the image builder stands the image on a history image.)
    pub fn instance_context_files(&self) -> Vec<ContextFile> {
        vec![ContextFile {
            path: "setup_repo.sh".to_string(),
            contents: self.install_repo_script.clone().into_bytes(),
            mode: 0o755,
        }]
    }

    /// The Debian instance image takes the repository from a history image the image builder
    /// makes from the host's git (see `images::history`).
    pub fn instance_needs_repo_in_context(&self) -> bool {
        self.flavour == Flavour::Debian
    }

    /// The instance image's install compiles: a Debian environment that installs a compiler
    /// (and ccache with it: `compiler` in src/spec/conda_map.json), so its build uses a
    /// compiler cache shared by the repository's instance builds on that environment.
    pub fn compiles(&self) -> bool {
        self.flavour == Flavour::Debian
            && self
                .frozen_env
                .as_ref()
                .is_some_and(|p| p.compiler && p.debian.iter().any(|d| d == "ccache"))
    }
}

/// `<namespace>/sweb.eval.<arch>.<id lowercased>:latest` with `__` written `_1776_`; without
/// the namespace prefix (and without the rewrite) when `namespace` is empty.
pub fn official_image_name(instance_id: &str, namespace: &str, arch: &str) -> String {
    let key = format!("sweb.eval.{arch}.{}:latest", instance_id.to_lowercase());
    if namespace.is_empty() {
        key
    } else {
        format!("{namespace}/{key}").replace("__", "_1776_")
    }
}

/// Spec warnings of many instances as lines to print: a warning several instances share is
/// said once, with the first instance and how many more (a dataset whose every row carries
/// the same oddity gives one line, not one per row).
pub fn group_warnings(warnings: &[(String, String)]) -> Vec<String> {
    let mut order: Vec<(&str, &str, usize)> = Vec::new();
    for (id, w) in warnings {
        match order.iter_mut().find(|(_, text, _)| *text == w.as_str()) {
            Some((_, _, n)) => *n += 1,
            None => order.push((id, w, 1)),
        }
    }
    order
        .into_iter()
        .map(|(id, w, n)| match n {
            1 => format!("{id}: {w}"),
            n => format!("{id} and {} more instances: {w}", n - 1),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn official_names_rewrite_double_underscores() {
        assert_eq!(
            official_image_name("django__django-11099", "swebench", "x86_64"),
            "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"
        );
        assert_eq!(
            official_image_name("Foo__Bar-1", "", "x86_64"),
            "sweb.eval.x86_64.foo__bar-1:latest"
        );
        assert_eq!(
            official_image_name("a__b-1", "localhost:5000/mirror", "x86_64"),
            "localhost:5000/mirror/sweb.eval.x86_64.a_1776_b-1:latest"
        );
    }

    #[test]
    fn a_row_with_its_own_eval_script_runs_in_its_own_image() {
        let row = |extra: serde_json::Value| {
            let mut v = serde_json::json!({
                "instance_id": "astropy__astropy-12907", "repo": "astropy/astropy",
                "base_commit": "HEAD", "patch": "", "version": "4.3", "test_patch": "",
            });
            v.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            crate::dataset::instance_from_value(v).unwrap()
        };
        let own = row(serde_json::json!({
            "image": "own:1", "docker_image": "docker.io/swebench/x:latest",
            "eval_script": "#!/bin/bash\necho hi\n",
        }));
        let spec = TestSpec::new(&own, Flavour::Official).unwrap();
        assert_eq!(spec.row_image.as_deref(), Some("own:1"));
        assert_eq!(spec.official_image_name(None), "own:1");
        let notes: Vec<_> = spec
            .warnings
            .iter()
            .filter(|w| w.contains("differ"))
            .collect();
        assert_eq!(notes.len(), 1, "{:?}", spec.warnings);
        assert!(notes[0].contains("`image` is used"), "{}", notes[0]);

        let official = row(serde_json::json!({"docker_image": "docker.io/swebench/x:latest"}));
        let spec = TestSpec::new(&official, Flavour::Official).unwrap();
        assert_eq!(
            spec.row_image.as_deref(),
            Some("docker.io/swebench/x:latest")
        );
        assert!(!spec.warnings.iter().any(|w| w.contains("differ")));

        let same = row(serde_json::json!({
            "image": "own:1", "docker_image": "own:1", "eval_script": "echo",
        }));
        let spec = TestSpec::new(&same, Flavour::Official).unwrap();
        assert!(!spec.warnings.iter().any(|w| w.contains("differ")));
    }

    #[test]
    fn shared_warnings_are_said_once() {
        let w = |id: &str, text: &str| (id.to_string(), text.to_string());
        let lines = group_warnings(&[w("a", "x"), w("b", "y"), w("c", "x"), w("d", "x")]);
        assert_eq!(lines, ["a and 2 more instances: x", "b: y"]);
    }
}
