//! The names a selection of instances gives its images under the current recipes: per
//! instance its base, environment, history (Debian flavour) and instance image, as a run
//! would look for them. A Debian instance image is named after what its history image holds
//! ([`super::history::on_history`]: not the chain it was planned in), and history images are planned on the host's git from
//! the repository's sources, exactly as [`super::ensure`] plans them for the same selection;
//! an instance whose repository cannot be had gets the reason instead of those two names.

use std::collections::{BTreeMap, BTreeSet};

use super::{base_image_name, compiler_cache_volume, history, BaseRecipe, ImagePlan, RepoCache};

/// Why an instance's history and instance images cannot be named.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unnamed {
    /// The history of its repository at its commit could not be planned (the repository or
    /// the commit cannot be had); `reason` says so, naming the repository.
    #[error("{reason}")]
    History {
        /// `owner/name`.
        repo: String,
        /// The base commit.
        commit: String,
        /// What failed.
        reason: String,
    },
    /// No history was planned for its commit.
    #[error("no history was planned for {repo} at {commit}")]
    NotPlanned {
        /// `owner/name`.
        repo: String,
        /// The base commit.
        commit: String,
    },
}

/// The names of one instance's images under the current recipes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceNames {
    /// The instance.
    pub instance_id: String,
    /// `owner/name`.
    pub repo: String,
    /// A ready image the row names, or the official prebuilt one: used when present (or
    /// pulled), so nothing else is needed then.
    pub prebuilt: Option<String>,
    /// The base image's names (the bootstrapped image and the name environment Dockerfiles
    /// start `FROM`); empty when the instance is run in its row's own image.
    pub base: Vec<String>,
    /// The environment image.
    pub env: Option<String>,
    /// The history image its instance image stands on, with the history images under it
    /// (parents first), or why they cannot be named (the repository cannot be had);
    /// `None` when the instance image needs no repository history (official flavour).
    pub history: Option<Result<Vec<String>, Unnamed>>,
    /// The instance image built locally, or why it cannot be named.
    pub instance: Option<Result<String, Unnamed>>,
    /// The compiler cache volume its instance build mounts ([`super::compiler_cache_volume`]
    /// of its repository and environment), when the build compiles on its history.
    pub compiler_cache: Option<String>,
}

impl InstanceNames {
    /// Every name the instance uses (for what a prune keeps and an export carries).
    pub fn all(&self) -> impl Iterator<Item = &String> {
        let history = match &self.history {
            Some(Ok(chain)) => chain.as_slice(),
            _ => &[],
        };
        self.prebuilt
            .iter()
            .chain(&self.base)
            .chain(&self.env)
            .chain(history)
            .chain(self.instance.iter().filter_map(|r| r.as_ref().ok()))
    }
}

/// The names of `plan`'s images. Histories are planned with the host's git on `repos`
/// (fetched from the sources when the cache lacks a commit, as a run does), chains of at
/// most `max_chain` images; blocking.
pub fn names(plan: &ImagePlan, repos: &RepoCache, max_chain: usize) -> Vec<InstanceNames> {
    // (env, repo) -> commits, as `ensure` groups them for the history plan.
    let mut groups: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for inst in &plan.instances {
        if let Some(chain) = inst.build.as_ref().filter(|c| c.instance.needs_repo) {
            groups
                .entry((chain.env.tag.clone(), inst.repo.clone()))
                .or_default()
                .insert(inst.base_commit.clone());
        }
    }
    // (env, repo, commit) -> the chain of history images, root first, and what the last one
    // holds, or why there is none.
    type Chain = Result<(Vec<String>, String), Unnamed>;
    let mut chains: BTreeMap<(String, String, String), Chain> = BTreeMap::new();
    for ((env, repo), commits) in groups {
        let (nodes, failed) = history::plan_chains(repos, &env, &repo, &commits, max_chain);
        for node in &nodes {
            let mut chain = vec![node.tag.clone()];
            let mut at = node.parent;
            while let Some(i) = at {
                chain.push(nodes[i].tag.clone());
                at = nodes[i].parent;
            }
            chain.reverse();
            let key = (env.clone(), repo.clone(), node.commit.clone());
            chains.insert(key, Ok((chain, node.content.clone())));
        }
        for (commit, e) in failed {
            let unnamed = Unnamed::History {
                repo: repo.clone(),
                commit: commit.clone(),
                reason: e.to_string(),
            };
            chains.insert((env.clone(), repo.clone(), commit), Err(unnamed));
        }
    }
    plan.instances
        .iter()
        .map(|inst| {
            let mut out = InstanceNames {
                instance_id: inst.instance_id.clone(),
                repo: inst.repo.clone(),
                prebuilt: inst.prebuilt.clone(),
                base: Vec::new(),
                env: None,
                history: None,
                instance: None,
                compiler_cache: None,
            };
            let Some(chain) = &inst.build else {
                return out;
            };
            out.base = match &chain.base {
                BaseRecipe::Debian { release, alias } => {
                    let name = base_image_name(*release);
                    if *alias == name {
                        vec![name]
                    } else {
                        vec![name, alias.clone()]
                    }
                }
                BaseRecipe::Dockerfile { tag, .. } => vec![tag.clone()],
            };
            out.env = Some(chain.env.tag.clone());
            // As the build decides it: an install that compiles, on the repository's history.
            out.compiler_cache = (chain.instance.compiler_cache && chain.instance.needs_repo)
                .then(|| compiler_cache_volume(&inst.repo, &chain.env.tag));
            if chain.instance.needs_repo {
                let key = (
                    chain.env.tag.clone(),
                    inst.repo.clone(),
                    inst.base_commit.clone(),
                );
                let history = chains.get(&key).cloned().unwrap_or_else(|| {
                    Err(Unnamed::NotPlanned {
                        repo: inst.repo.clone(),
                        commit: inst.base_commit.clone(),
                    })
                });
                out.instance = Some(match &history {
                    Ok((_, content)) => Ok(history::on_history(&chain.instance.tag, content)),
                    Err(e) => Err(e.clone()),
                });
                out.history = Some(history.map(|(names, _)| names));
            } else {
                out.instance = Some(Ok(chain.instance.tag.clone()));
            }
            out
        })
        .collect()
}
