//! One history image ([`HistoryNode`]) and the limits and naming every part of the history
//! planning and building shares.

use super::super::submodules::Submodule;
use crate::images::ImageError;

/// History images in one chain at most, and packs in one chain at most (a step has one or two,
/// see `write_context`; a root counts two). Each image adds two image layers (the objects and
/// refs, then the checkout), so 40 of them stay well under overlay's 128 lower layers with the
/// environment's and the instance's own; and a repository of 40 packs stays under git's
/// `gc.autoPackLimit` (50), beyond which the setup commit (or an agent's) would start an
/// automatic repack of the whole history into the instance's layer.
pub const MAX_CHAIN: usize = 40;

/// What a history image holds for the same commits, in words; part of its name, so an image
/// of an earlier layout is never reused. Changed whenever [`write_context`] or
/// [`dockerfile`] changes what ends up in the image.
pub(super) const LAYOUT: &str =
    "layout 3: submodules the sources give, as `git submodule update --init` leaves them";

/// One history image: the repository at `commit` on environment `env`.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryNode {
    /// The image's name (content-addressed: environment, parent, commit, tags).
    pub tag: String,
    /// What the image holds whatever chain it was planned in: a hash of the environment, the
    /// commit, the tags kept, the submodules and the layout, not of its parent. The instance
    /// images on it are named after this ([`super::on_history`]), so that an instance image
    /// built while its history stood in one chain is found by a run that plans another (a
    /// selection of other instances, another chain limit).
    pub content: String,
    /// The environment image the chain's root starts from.
    pub env: String,
    /// `owner/name`.
    pub repo: String,
    /// The commit checked out.
    pub commit: String,
    /// Index of the node it is built `FROM` (in the same plan); `None` for a root.
    pub parent: Option<usize>,
    /// 1 for a root, the parent's depth + 1 otherwise.
    pub depth: usize,
    /// Packs in the chain up to this image (a root counts two, the most it has).
    pub packs: usize,
    /// `(ref name, object id)` of the tags kept, sorted.
    pub tags: Vec<(String, String)>,
    /// The commit's gitlinks: the submodules held (checked out) and those left out.
    pub submodules: Vec<Submodule>,
}

/// [`ImageError::Repo`] of `repo`, saying `what` went wrong.
pub(super) fn repo_error(repo: &str, what: impl std::fmt::Display) -> ImageError {
    ImageError::Repo {
        repo: repo.to_string(),
        message: what.to_string(),
    }
}
