//! Image names and labels: the layers, the cache levels that keep them, content-hash tags,
//! official names under another namespace, and where a build's log goes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use sha2::{Digest, Sha256};

use super::ImageError;
use crate::engine::LABEL_TOOL;

/// Label naming the layer of an image the tool built (`base`, `env`, `instance`).
pub const LABEL_LAYER: &str = "swe-eval.layer";

/// Label naming the repository (`owner/name`) an environment image was built for (images
/// built on it inherit it).
pub const LABEL_REPO: &str = "swe-eval.repo";

/// Label naming the instance an instance image was built for.
pub const LABEL_INSTANCE: &str = "swe-eval.instance-id";

/// An image layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Layer {
    /// The offline Debian base image.
    Base,
    /// The environment image, shared by the instances of one repository and version.
    Env,
    /// The instance image, the repository at its base commit.
    Instance,
}

impl Layer {
    /// The label value: `base`, `env` or `instance`.
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
    /// Remove every image the run built or pulled.
    None,
    /// Keep base images.
    Base,
    /// Keep base and environment images (the default).
    #[default]
    Env,
    /// Keep every image, instance images too.
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
        l.insert(LABEL_INSTANCE.to_string(), id.to_string());
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
}
