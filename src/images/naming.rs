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

/// A `--namespace` that cannot start an image name: Docker would refuse every name made with it
/// (and answer a lookup with a status that says nothing of why).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{namespace}` cannot start an image name: {reason} (a namespace is [HOST[:PORT]/]PATH, \
     PATH's parts of lowercase letters and digits, joined by `.`, `_`, `__` or `-`)"
)]
pub struct NamespaceError {
    /// The namespace given.
    pub namespace: String,
    /// What is wrong with it.
    pub reason: NamespaceFlaw,
}

/// What is wrong with a `--namespace`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NamespaceFlaw {
    /// Every name made with it would be longer than Docker takes.
    #[error("it is {length} characters long, and a name with it would pass Docker's {NAME_MAX}")]
    TooLong {
        /// Its length.
        length: usize,
    },
    /// Its registry host has a port that is not a number.
    #[error("`{host}` has a port that is not a number")]
    Port {
        /// The host as given.
        host: String,
    },
    /// Its registry host is not a host name.
    #[error("`{host}` is not a registry host name")]
    Host {
        /// The host as given.
        host: String,
    },
    /// Two slashes, or one at its start.
    #[error("it has an empty part (two slashes, or one at its start)")]
    EmptyPart,
    /// A path component has a character Docker refuses.
    #[error("`{part}` has {}", character_words(*character))]
    Character {
        /// The component.
        part: String,
        /// The first character refused.
        character: char,
    },
    /// A path component's runs are joined otherwise than Docker takes.
    #[error(
        "`{part}` does not start and end with a letter or digit, or joins them otherwise \
         than by `.`, `_`, `__` or dashes"
    )]
    Separators {
        /// The component.
        part: String,
    },
}

/// A refused character as a message names it: `an uppercase letter`, or the character quoted.
fn character_words(c: char) -> String {
    if c.is_ascii_uppercase() {
        "an uppercase letter".to_string()
    } else {
        format!("{c:?}")
    }
}

impl swe_eval_core::failure::Classify for NamespaceError {
    fn kind(&self) -> swe_eval_core::failure::ErrorKind {
        swe_eval_core::failure::ErrorKind::Usage
    }
}

/// The longest repository name Docker takes.
const NAME_MAX: usize = 255;

/// Checks that `namespace` can start an image name (`<namespace>/sweb.eval....`), as Docker's
/// reference grammar reads one: an optional registry host (it has a `.` or a `:`, or is
/// `localhost`; an optional numeric port), then path components of lowercase letters and
/// digits joined by one separator (`.`, `_`, `__`, or dashes). Empty (build locally) is fine.
pub fn check_namespace(namespace: &str) -> Result<(), NamespaceError> {
    let fail = |reason: NamespaceFlaw| NamespaceError {
        namespace: namespace.to_string(),
        reason,
    };
    if namespace.is_empty() {
        return Ok(());
    }
    // The longest official name part after it: `/sweb.eval.x86_64.<id>`, ids up to ~50.
    if namespace.len() > NAME_MAX - 80 {
        return Err(fail(NamespaceFlaw::TooLong {
            length: namespace.len(),
        }));
    }
    let ns = namespace.strip_suffix('/').unwrap_or(namespace);
    let mut parts = ns.split('/').peekable();
    let first = parts.peek().copied().unwrap_or_default();
    let is_host = first.contains(['.', ':']) || first == "localhost";
    if is_host {
        parts.next();
        check_host(first).map_err(fail)?;
    }
    for part in parts {
        check_component(part).map_err(fail)?;
    }
    Ok(())
}

/// `HOST[:PORT]`: dot-separated labels of letters, digits and inner dashes; a numeric port.
fn check_host(host: &str) -> Result<(), NamespaceFlaw> {
    let (name, port) = match host.rsplit_once(':') {
        Some((n, p)) => (n, Some(p)),
        None => (host, None),
    };
    if let Some(p) = port {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
            return Err(NamespaceFlaw::Port {
                host: host.to_string(),
            });
        }
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if !name.split('.').all(label_ok) {
        return Err(NamespaceFlaw::Host {
            host: host.to_string(),
        });
    }
    Ok(())
}

/// One path component: `[a-z0-9]+` runs joined by `.`, `_`, `__` or dashes.
fn check_component(part: &str) -> Result<(), NamespaceFlaw> {
    if part.is_empty() {
        return Err(NamespaceFlaw::EmptyPart);
    }
    if let Some(character) = part
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')))
    {
        return Err(NamespaceFlaw::Character {
            part: part.to_string(),
            character,
        });
    }
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let starts_ends = part.starts_with(alnum) && part.ends_with(alnum);
    // Separators between runs: one `.`, one `_`, `__`, or any number of `-`.
    let separators_ok = part
        .split(alnum)
        .filter(|s| !s.is_empty())
        .all(|s| s == "." || s == "_" || s == "__" || s.bytes().all(|b| b == b'-'));
    if !starts_ends || !separators_ok {
        return Err(NamespaceFlaw::Separators {
            part: part.to_string(),
        });
    }
    Ok(())
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

    #[test]
    fn namespaces_are_checked_as_docker_reads_image_names() {
        for ok in [
            "",
            "swebench",
            "docker.io/swebench",
            "127.0.0.1:5000/swebench",
            "localhost:5000",
            "reg.example.com/team/sub",
            "a__b/c.d/e-f/g---h",
            "mirror/",
        ] {
            assert_eq!(check_namespace(ok), Ok(()), "{ok}");
        }
        for (bad, says) in [
            ("a//b", "empty part"),
            ("/a", "empty part"),
            ("Bad Namespace", "`Bad Namespace` has an uppercase letter"),
            ("UPPER", "uppercase"),
            ("a b", "' '"),
            ("a/-b", "does not start and end"),
            ("a/b._c", "joins them"),
            ("reg:port/x", "port that is not a number"),
            ("-reg.io/x", "not a registry host"),
        ] {
            let e = check_namespace(bad).unwrap_err();
            assert!(e.to_string().contains(says), "{bad}: {e}");
            assert!(e
                .to_string()
                .starts_with(&format!("`{bad}` cannot start an image name")));
        }
        assert!(check_namespace(&"a".repeat(200)).is_err());
    }
}
