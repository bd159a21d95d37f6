//! The content key of an executed verdict: everything that decides it, hashed. Two requests
//! with one key get one verdict (the second from the cache, or from the first one's job while
//! it runs); any change of patch, test script, image recipe, flavour, grading settings or
//! harness version makes another key.

use sha2::{Digest, Sha256};

use crate::engine::Limits;
use swe_eval_core::spec::TestSpec;

/// What the job's settings add to a key (the same for every request of a server).
#[derive(Debug, Clone, PartialEq)]
pub struct KeySettings {
    /// Strict mode (it changes what runs: collection-altering files are removed).
    pub strict: bool,
    /// Network access of the job containers.
    pub network: bool,
    /// The job's timeout, in seconds.
    pub timeout_secs: u64,
    /// The job's limits.
    pub limits: Limits,
}

/// The harness version a key carries: a new release may grade differently.
pub fn harness_version() -> String {
    format!(
        "swe-eval {} verdict {}",
        env!("CARGO_PKG_VERSION"),
        swe_eval_core::wire::VERDICT_VERSION
    )
}

/// Everything a key holds but the patch, hashed: the same for every request of an instance on
/// one server, so it is made once per instance and each request hashes only its patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recipe([u8; 32]);

impl Recipe {
    /// The recipe of executing on `spec`'s instance with `settings`. Each part is
    /// length-prefixed, so no two different inputs hash the same bytes.
    pub fn of(spec: &TestSpec, settings: &KeySettings) -> Recipe {
        let mut h = Sha256::new();
        let mut part = |name: &str, bytes: &[u8]| {
            h.update(name.as_bytes());
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        part("harness", harness_version().as_bytes());
        part("instance", spec.instance_id.as_bytes());
        part("eval_script", spec.eval_script.as_bytes());
        part("log_parser", spec.log_parser.as_bytes());
        part("flavour", format!("{:?}", spec.flavour).as_bytes());
        // The image recipe: the row's own image, or the Dockerfiles and scripts it is built from.
        match &spec.row_image {
            Some(image) => part("row_image", image.as_bytes()),
            None => {
                part("base_image", spec.base_image_tag.as_bytes());
                part("env_dockerfile", spec.env_dockerfile.as_bytes());
                part("setup_env", spec.setup_env_script.as_bytes());
                part("instance_dockerfile", spec.instance_dockerfile.as_bytes());
                part("install_repo", spec.install_repo_script.as_bytes());
                part("base_commit", spec.base_commit.as_bytes());
            }
        }
        part("fail_to_pass", spec.fail_to_pass.join("\n").as_bytes());
        part("pass_to_pass", spec.pass_to_pass.join("\n").as_bytes());
        part("strict", &[u8::from(settings.strict)]);
        part("network", &[u8::from(settings.network)]);
        part("timeout", &settings.timeout_secs.to_le_bytes());
        let l = &settings.limits;
        let limits = format!("{:?} {:?} {:?}", l.cpus, l.memory_bytes, l.pids);
        part("limits", limits.as_bytes());
        part("cpus", format!("{:?}", spec.nano_cpus).as_bytes());
        Recipe(h.finalize().into())
    }

    /// The content key (hex SHA-256) of executing `patch` with this recipe.
    pub fn key(&self, patch: &str) -> String {
        let mut h = Sha256::new();
        h.update(b"recipe");
        h.update(self.0);
        h.update(b"patch");
        h.update((patch.len() as u64).to_le_bytes());
        h.update(patch.as_bytes());
        hex::encode(h.finalize())
    }
}

/// The content key (hex SHA-256) of executing `patch` on `spec`'s instance with `settings`:
/// [`Recipe::of`] then [`Recipe::key`].
pub fn content_key(spec: &TestSpec, patch: &str, settings: &KeySettings) -> String {
    Recipe::of(spec, settings).key(patch)
}
