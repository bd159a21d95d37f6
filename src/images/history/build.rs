//! Building the history images a set of instance images needs, parents before children,
//! siblings in parallel, each instance image as soon as its own history image is there.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use futures_util::future::{BoxFuture, FutureExt, Shared};
use tokio::sync::Semaphore;

use super::context::{dockerfile, write_context};
use super::node::{repo_error, HistoryNode};
use super::plan::plan_chains;
use crate::engine::Engine;
use crate::images::build_one::{build_one, failure, OneImage};
use crate::images::{
    content_hash, BuildOptions, ImageError, ImageFailure, Layer, Phase, Prepared, Stage,
};

/// Which instances need a history image: `(instance_id, env image, repo, commit)`.
pub type Wanted = (String, String, String, String);

/// The name of an instance image that stands on a history image holding `content`
/// ([`HistoryNode::content`]): `tag` (the spec's name, which hashes the instance's own recipe)
/// with its version replaced by a hash of both. So an instance image is rebuilt whenever what
/// its history holds changes (a new layout, other tags kept), but not when the same history is
/// planned in another chain (another selection of instances): one built by `images build` of
/// a whole dataset is found by a run of one of its instances.
pub fn on_history(tag: &str, content: &str) -> String {
    let repo = tag.rsplit_once(':').map_or(tag, |(r, _)| r);
    let hash = content_hash(&[tag.as_bytes(), content.as_bytes()]);
    format!("{repo}:{}", &hash[..12])
}

/// A history image being made: its name once built, or why it could not be. Shared by its
/// children and by the instance images that stand on it.
pub type Pending<'a> = Shared<BoxFuture<'a, Result<String, ImageFailure>>>;

/// Plans the history images `wanted` needs (host git, now) and returns, per instance, what
/// its history image holds ([`HistoryNode::content`], which names the instance image; `None`
/// when it could not be planned) and the future that makes it (and resolves to its name): a node's future first awaits its parent's, then builds under one of `permits` (the
/// build parallelism, shared with the instance images), so siblings build in parallel and an
/// instance image can start as soon as its own chain is ready. A future nobody awaits (the
/// instance image is there already) builds nothing. Images built are added to `created`.
pub async fn plan_builds<'a, E: Engine>(
    engine: &'a E,
    wanted: &[Wanted],
    opts: &'a BuildOptions,
    permits: &'a Semaphore,
    created: &'a Mutex<Vec<(String, Layer)>>,
) -> BTreeMap<String, (Option<String>, Pending<'a>)> {
    let mut groups: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for (_, env, repo, commit) in wanted {
        groups
            .entry((env.clone(), repo.clone()))
            .or_default()
            .insert(commit.clone());
    }
    let ready = |r: Result<String, ImageFailure>| -> Pending<'a> {
        futures_util::future::ready(r).boxed().shared()
    };
    // (env, repo, commit) -> its image's name and future.
    type ByCommit<'a> = BTreeMap<(String, String, String), (Option<String>, Pending<'a>)>;
    let mut by_commit: ByCommit<'a> = BTreeMap::new();
    for ((env, repo), commits) in groups {
        let cache = opts.repos.clone();
        let (e2, r2, max) = (env.clone(), repo.clone(), opts.history_chain.max(1));
        let all = commits.clone();
        let started = tokio::time::Instant::now();
        let planned =
            tokio::task::spawn_blocking(move || plan_chains(&cache, &e2, &r2, &all, max)).await;
        let ok = planned.as_ref().is_ok_and(|(_, failed)| failed.is_empty());
        let hooks = &opts.hooks;
        hooks.timed(Stage::History, &repo, Phase::Fetch, started.elapsed(), ok);
        let (nodes, failed) = match planned {
            Ok(p) => p,
            Err(e) => {
                let f = failure(
                    Layer::Instance,
                    &env,
                    &repo_error(&repo, e.to_string()),
                    None,
                );
                for c in commits {
                    by_commit.insert(
                        (env.clone(), repo.clone(), c),
                        (None, ready(Err(f.clone()))),
                    );
                }
                continue;
            }
        };
        for (c, e) in failed {
            let f = failure(
                Layer::Instance,
                &format!("history of {repo} at {c}"),
                &e,
                None,
            );
            by_commit.insert((env.clone(), repo.clone(), c), (None, ready(Err(f))));
        }
        let mut futures: Vec<Pending<'a>> = Vec::with_capacity(nodes.len());
        for node in &nodes {
            let parent = node.parent.map(|p| (nodes[p].clone(), futures[p].clone()));
            let (node, key) = (
                node.clone(),
                (env.clone(), repo.clone(), node.commit.clone()),
            );
            let content = node.content.clone();
            let fut = async move {
                let parent = match parent {
                    Some((p, built)) => {
                        built.await?;
                        Some(p)
                    }
                    None => None,
                };
                let _permit = permits
                    .acquire()
                    .await
                    .expect("the semaphore is never closed");
                let mut local = Prepared::default();
                build_node(engine, &node, parent.as_ref(), opts, &mut local).await?;
                created
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend(local.created);
                Ok(node.tag)
            }
            .boxed()
            .shared();
            by_commit.insert(key, (Some(content), fut.clone()));
            futures.push(fut);
        }
    }
    wanted
        .iter()
        .map(|(id, env, repo, c)| {
            let fut = by_commit
                .get(&(env.clone(), repo.clone(), c.clone()))
                .cloned()
                .unwrap_or_else(|| {
                    let f = failure(
                        Layer::Instance,
                        env,
                        &repo_error(repo, format!("no history image planned for {c}")),
                        None,
                    );
                    (None, ready(Err(f)))
                });
            (id.clone(), fut)
        })
        .collect()
}

async fn build_node<E: Engine>(
    engine: &E,
    node: &HistoryNode,
    parent: Option<&HistoryNode>,
    opts: &BuildOptions,
    out: &mut Prepared,
) -> Result<(), ImageFailure> {
    match engine.image_exists(&node.tag).await {
        Ok(true) => return Ok(()),
        Ok(false) => {}
        Err(e) => return Err(failure(Layer::Instance, &node.tag, &e.into(), None)),
    }
    let ctx_fail = |e: ImageError| failure(Layer::Instance, &node.tag, &e, None);
    let tmp = tempfile::tempdir().map_err(|e| {
        ctx_fail(ImageError::Context {
            image: node.tag.clone(),
            message: e.to_string(),
        })
    })?;
    let (cache, n, p, dir) = (
        opts.repos.clone(),
        node.clone(),
        parent.cloned(),
        tmp.path().to_path_buf(),
    );
    if opts.hooks.stopped() {
        return Err(ctx_fail(ImageError::Stopped {
            image: node.tag.clone(),
        }));
    }
    // git runs for seconds (a root's pack is the whole history): off the async workers.
    let started = tokio::time::Instant::now();
    let written = tokio::task::spawn_blocking(move || write_context(&cache, &n, p.as_ref(), &dir))
        .await
        .map_err(|e| ctx_fail(repo_error(&node.repo, e.to_string())))
        .and_then(|r| r.map_err(ctx_fail));
    let took = started.elapsed();
    let ok = written.is_ok();
    opts.hooks
        .timed(Stage::History, &node.tag, Phase::Snapshot, took, ok);
    written?;
    let recipe = dockerfile(node, parent);
    let packs = tmp.path().join("git");
    let image = OneImage {
        layer: Layer::Instance,
        tag: &node.tag,
        dockerfile: &recipe,
        files: &[],
        folder: Some(("git", &packs)),
        network: false,
        instance_id: None,
        compiler_cache: None,
    };
    build_one(engine, &image, opts, out).await
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::upstream;
    use super::super::node::MAX_CHAIN;
    use crate::images::RepoCache;
    use swe_eval_core::repos::RepoSources;

    #[tokio::test]
    async fn instance_images_are_named_after_what_their_history_holds_not_its_chain_and_every_image_used_is_held(
    ) {
        use crate::engine::FakeEngine;
        use crate::images::hold::{hold_labels, Holding};
        use crate::images::{
            base_image_name, ensure, BaseOptions, BaseRecipe, BuildChain, BuildOptions, EnvRecipe,
            ImagePlan, InstanceImages, InstanceRecipe,
        };
        use swe_eval_core::spec::DebianRelease;
        let tmp = tempfile::tempdir().unwrap();
        let (up, c) = upstream(tmp.path());
        let mut s = RepoSources::default();
        s.add_override(&format!("o/n={}", up.display())).unwrap();
        let inst = |id: &str, base: &str| InstanceImages {
            instance_id: id.into(),
            repo: "o/n".into(),
            base_commit: c[base].clone(),
            prebuilt: None,
            build: Some(BuildChain {
                base: BaseRecipe::Debian {
                    release: DebianRelease::Bookworm,
                    alias: "swe-eval/base:bookworm".into(),
                },
                env: EnvRecipe {
                    tag: "env-1".into(),
                    dockerfile: "FROM swe-eval/base:bookworm\n".into(),
                    files: vec![],
                },
                instance: InstanceRecipe {
                    tag: format!("inst-{id}:spec"),
                    dockerfile: "FROM env-1\n".into(),
                    files: vec![],
                    needs_repo: true,
                    network: false,
                    compiler_cache: false,
                },
            }),
        };
        let plan = ImagePlan {
            instances: vec![inst("a", "c1"), inst("b", "c3")],
        };
        let mut opts = BuildOptions {
            logs_dir: tmp.path().join("logs"),
            repos: RepoCache::new(tmp.path().join("repos"), s),
            base: BaseOptions::default(),
            parallel: 2,
            history_chain: MAX_CHAIN,
            hooks: Default::default(),
        };
        let e = std::sync::Arc::new(FakeEngine::new());
        e.add_image(&base_image_name(DebianRelease::Bookworm));
        let holding = Holding::new(e.clone(), hold_labels("me", "run-1"));
        let got = ensure(&holding, &plan, &opts).await;
        assert!(got.failed.is_empty(), "{:?}", got.failed);
        let histories: Vec<&String> = got
            .created
            .iter()
            .map(|(n, _)| n)
            .filter(|n| n.starts_with("swe-eval.history.o__n:"))
            .collect();
        assert_eq!(histories.len(), 2, "c1, then c3 on it: {:?}", got.created);
        for id in ["a", "b"] {
            let name = &got.images[id];
            assert!(name.starts_with(&format!("inst-{id}:")), "{name}");
            assert_ne!(
                name,
                &format!("inst-{id}:spec"),
                "named after its history too"
            );
        }
        let held = holding.held();
        for image in histories.iter().copied().chain(got.images.values()) {
            assert!(held.contains(image), "{image} held: {held:?}");
        }

        // Again: both instance images found, their history neither built nor needed.
        let again = ensure(&*e, &plan, &opts).await;
        assert_eq!((&again.images, again.created.len()), (&got.images, 0));

        // The same histories planned in other chains: b alone (c3 a root of its own, not a
        // step on c1), or chains of one. The history images have other names, but what they
        // hold is the same: both instance images are found, nothing is built.
        let b_alone = ImagePlan {
            instances: vec![inst("b", "c3")],
        };
        let alone = ensure(&*e, &b_alone, &opts).await;
        assert_eq!(alone.images["b"], got.images["b"]);
        assert!(alone.created.is_empty(), "{:?}", alone.created);
        opts.history_chain = 1;
        let other = ensure(&*e, &plan, &opts).await;
        assert_eq!(other.images, got.images);
        assert!(other.created.is_empty(), "{:?}", other.created);
        // The names a listing gives are the run's.
        let listed = crate::images::names(&b_alone, &opts.repos, MAX_CHAIN);
        assert_eq!(
            listed[0].instance.clone().unwrap().unwrap(),
            got.images["b"]
        );
        let chain = listed[0].history.clone().unwrap().unwrap();
        assert_eq!(chain.len(), 1, "b alone: a root {chain:?}");
        assert!(
            !histories.contains(&&chain[0]),
            "another history image name"
        );

        // A history that holds something else (another commit): another instance image.
        let moved = ImagePlan {
            instances: vec![inst("b", "c2")],
        };
        let elsewhere = crate::images::names(&moved, &opts.repos, MAX_CHAIN);
        assert_ne!(
            elsewhere[0].instance.clone().unwrap().unwrap(),
            got.images["b"]
        );
    }
}
