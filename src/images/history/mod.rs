//! Shared repository history for instance images: the repository at an instance's
//! `base_commit` comes from a *history image*, and the history images of one repository on one
//! environment image form a tree of Docker parents, so each commit's history is stored once.
//!
//! The history image of commit `c` is built `FROM` the history image of `c`'s nearest planned
//! ancestor `p` (same environment and repository), and its new layers hold only what `c` adds:
//! a self-contained (non-thin) pack of the objects `c ^p` made on the host with `git
//! pack-objects --revs` (never anything newer than `c`, so no later commit is in the image, even
//! unreachable), `packed-refs` with the tags kept for `c` (those pointing at `c` or an ancestor,
//! dated no later than `c`, as the repo script's own rule), and a checkout that rewrites only
//! the files that differ between `p` and `c`. A commit with no planned ancestor is a root: its
//! pack holds its whole history and it is built `FROM` the environment image. The trees a setup
//! commit would write again go into a small pack of their own ([`split_objects`]), so that git
//! touches that one and not the big pack (overlay would copy it up into the instance's layer).
//! The instance image is then its history image plus the repo script (install step, setup
//! commit), with no repacking, and is named after what its history image holds too
//! ([`on_history`]: the commit, tags, submodules and layout, not the chain, so that an
//! instance image is found whatever selection its history was planned in).
//! Chains are cut (a new root) after [`MAX_CHAIN`] history images or packs, for overlay's
//! layer limit and git's automatic repack (see the constant).
//!
//! A commit whose tree has gitlinks also gets, in the same layers, each submodule the run's
//! sources can give, as `git submodule update --init` leaves it, with only its gitlink commit's
//! history (see [`submodules`]); a history image stands only on a parent whose submodules it
//! holds at the same or later commits.
//!
//! All git work happens on the host against the bare cache of [`RepoCache`]; the image builds
//! need no network. A history image is built once its parent is, siblings in parallel, and an
//! instance image as soon as its own history image is (builds share one bound); a history
//! image that cannot be built fails the instances that stand on it, and only those.
//!
//! - `node.rs`: one history image, and the limits and naming every part shares.
//! - `plan.rs`: the chains of one repository on one environment image.
//! - `pack.rs`: what a step adds, packed on the host.
//! - `context.rs`: a step's build context and Dockerfile.
//! - `build.rs`: building the history images and handing each instance its own.

mod build;
mod context;
#[cfg(test)]
mod fixtures;
mod node;
mod pack;
mod plan;

pub(super) use build::{on_history, plan_builds, Wanted};
pub use node::MAX_CHAIN;
pub(super) use plan::plan_chains;
