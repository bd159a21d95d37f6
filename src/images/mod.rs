//! Image names, build contexts, and the image plan: which base, environment and instance images
//! each instance needs, building the missing ones (environment images shared across instances),
//! and removing what the cache level does not keep.
//!
//! Three layers: the base (Debian bootstrapped offline, see `base`; or the official conda base
//! built from its Dockerfile), the environment (per repository and version, content-hash tag),
//! and the instance (the repository at `base_commit` in `/testbed`; in the Debian flavour it
//! stands on a history image shared along the repository's commits, see `history`). A row that carries its own
//! `image` (SWE-bench 5) is run in it as is: nothing is built, it is pulled when missing. A
//! failed build fails only the instances that need it; its log is saved under
//! `<output>/logs/build_images/`. Preparation reports each build, each phase's time and each
//! instance's image as soon as it is ready through [`BuildHooks`] (see `build_events`), which
//! also stop it.
//!
//! A selection's images as a set (`swe-eval images`): the names the current recipes give them
//! (`selection`), the daemon's images measured against those names (`inventory`: present,
//! stale, missing, unused, their disk), removed when unused with the compiler cache volumes
//! no selected build mounts (`prune`), written to and loaded
//! from one archive (`archive`), pushed and pulled through a registry (`transfer`).

mod archive;
mod base;
mod build;
mod build_events;
mod build_failure;
mod build_one;
mod cleanup;
mod cleanup_report;
mod context;
mod envonly;
mod error;
mod history;
mod hold;
mod inventory;
mod naming;
mod plan;
mod prune;
mod repo;
mod selection;
mod submodules;
mod transfer;

pub use archive::{export_images, import_images, may_write_archive, ArchiveError, ArchiveReport};
pub use base::{base_image_name, build_base, ensure_base, BaseOptions, BaseOutcome};
pub use build::ensure;
pub use build_events::{BuildEvent, BuildHooks, Phase, Stage, StopFlag};
pub use build_failure::ImageFailure;
pub use build_one::{compiler_cache_volume, BuildOptions, Prepared, COMPILER_CACHE_DIR};
pub use cleanup::cleanup;
pub use cleanup_report::CleanupReport;
pub use context::{context_tar, context_tar_to};
pub use envonly::{ensure_env, EnvOutcome};
pub use error::ImageError;
pub use history::MAX_CHAIN;
pub use hold::{
    hold_labels, reap_dead as reap_dead_holds, release as release_holds, Holding, LABEL_REMOVES,
};
pub use inventory::{
    classify, disk, layer_bytes, list, mark_other_ca, Disk, InstanceStatus, LayerCounts,
    LayerState, LayerStatus, ListedLayer, Listing, ListingFile, NoSpec, OtherCa, OtherCaUse,
    UnusedImage,
};
pub use naming::{
    build_log_path, check_namespace, content_hash, labels_for, with_namespace, CacheLevel, Layer,
    NamespaceError, NamespaceFlaw, LABEL_INSTANCE, LABEL_LAYER, LABEL_REPO,
};
pub use plan::{
    plan, BaseRecipe, BuildChain, EnvRecipe, ImagePlan, InstanceImages, InstanceRecipe, PlanOptions,
};
pub use prune::{prune, PruneError, PruneOptions, PruneReport, VolumeReport};
pub use repo::{RepoCache, RepoSources};
pub use selection::{names, InstanceNames, Unnamed};
pub use transfer::{in_registry, pull_images, push_images, TransferReport};
