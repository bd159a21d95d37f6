//! Per-repository, per-version specifications as data, test directives, eval scripts and
//! Dockerfiles: everything the runner and the image builder need to know about one instance.
//!
//! Two image flavours:
//! - [`Flavour::Official`]: conda in `/opt/miniconda3`, environment `testbed`, as the official
//!   SWE-bench 4.1.0 images are built; its `eval.sh` is byte-identical to the official one.
//! - [`Flavour::Debian`]: no conda; the Debian release whose `python3` is nearest the
//!   instance's Python; for SWE-bench Verified instances exactly the packages of SWE-bench's
//!   frozen environment (see `frozen`), otherwise the spec's package lists, from PyPI with
//!   pinned build tools and no build isolation, so the eval script's re-install runs without
//!   network.
//!
//! A row that carries its own `eval_script` (SWE-bench 5) is run with it as is.

mod build;
mod conda;
mod conda_map;
mod debian;
mod directives;
mod docker;
mod error;
mod flavour;
mod freeze_check;
mod frozen;
mod frozen_too_old;
mod frozen_wheels;
mod names;
mod options;
mod pkgname;
mod pyrepr;
mod script_parts;
mod table;
mod table_error;
mod test_spec;

pub use build::sha256_hex;
pub use debian::BUILD_REQUIREMENTS_READER;
pub use directives::{modified_files, test_directives};
pub use docker::official_base_dockerfile;
pub use docker::{
    debian_base_image, debian_release_for, debian_release_for_frozen, DebianRelease, ReleaseChoice,
};
pub use error::SpecError;
pub use flavour::Flavour;
pub use freeze_check::{compare_freeze, EnvCheck};
pub use frozen::{frozen_env, frozen_envs, frozen_instance_ids, EnvPlan, FrozenEnv};
pub use names::{
    DEFAULT_NAMESPACE, END_TEST_OUTPUT, ENV_NAME, REPO_DIR, START_TEST_OUTPUT, TEST_EXIT_CODE,
};
pub use options::{GitRepoFiles, RepoFiles, SpecOptions};
pub use table::{table, RepoSpec};
pub use test_spec::{group_warnings, official_image_name, ContextFile, TestSpec};
