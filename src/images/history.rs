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
//! commit), with no repacking, and is named after its history image too ([`on_history`]).
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

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Mutex;

use futures_util::future::{BoxFuture, FutureExt, Shared};
use tokio::sync::Semaphore;

use super::build_one::{build_one, failure};
use super::submodules::{self, Submodule};
use super::{
    content_hash, BuildOptions, ImageError, ImageFailure, Layer, Phase, Prepared, RepoCache, Stage,
};
use crate::engine::Engine;
use crate::repos::{git, git_input, git_input_bytes};

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
const LAYOUT: &str =
    "layout 3: submodules the sources give, as `git submodule update --init` leaves them";

/// Where the repository lives in every image (the official `/testbed`).
const REPO_DIR: &str = "/testbed";

/// Files a history step makes writable by all, as the repo script's `chmod -R 777` would, but
/// touching (and so copying up) only those not already so, and none in the work trees of the
/// submodules it holds (`{prune}`: [`submodules::prune_args`]; the official chmod came before
/// the submodule was cloned). (The index's stat data of the files a step writes goes stale
/// when Docker commits the layer, which gives them new inodes and ctimes: the repo script
/// refreshes it before its forced checkout, which would otherwise rewrite them all.)
fn chmod_new(prune: &str) -> String {
    format!("find {REPO_DIR} {prune}! -type l ! -perm 777 -exec chmod 777 {{}} +")
}

/// One history image: the repository at `commit` on environment `env`.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryNode {
    /// The image's name (content-addressed: environment, parent, commit, tags).
    pub tag: String,
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

/// The history images of one repository on one environment image, parents first; commits
/// that could not be planned are reported by commit.
pub fn plan_chains(
    cache: &RepoCache,
    env: &str,
    repo: &str,
    commits: &BTreeSet<String>,
    max_chain: usize,
) -> (Vec<HistoryNode>, BTreeMap<String, ImageError>) {
    let mut failed = BTreeMap::new();
    let mut known: Vec<(u64, String)> = Vec::new();
    let mut bare = None;
    for c in commits {
        let counted = cache.ensure(repo, c).and_then(|b| {
            let n = git(&["rev-list", "--count", c], Some(&b))
                .map_err(|m| repo_error(repo, m))?
                .trim()
                .parse::<u64>()
                .map_err(|e| repo_error(repo, format!("rev-list --count {c}: {e}")))?;
            Ok((b, n))
        });
        match counted {
            Ok((b, n)) => {
                bare = Some(b);
                known.push((n, c.clone()));
            }
            Err(e) => {
                failed.insert(c.clone(), e);
            }
        }
    }
    let Some(bare) = bare else {
        return (Vec::new(), failed);
    };
    // Ancestors have fewer commits: in this order every parent comes before its children.
    known.sort();
    let mut nodes: Vec<HistoryNode> = Vec::new();
    let mut counts: Vec<u64> = Vec::new();
    let mut fetched = submodules::Fetched::new();
    for (n, c) in &known {
        let read = kept_tags(&bare, c).and_then(|tags| {
            let subs = submodules::read(cache, &bare, repo, c, &mut fetched, kept_tags)?;
            Ok((tags, subs))
        });
        let (tags, subs) = match read {
            Ok(t) => t,
            Err(m) => {
                failed.insert(c.clone(), repo_error(repo, m));
                continue;
            }
        };
        let sub_ancestor = |r: &str, a: &str, b: &str| {
            fetched
                .get(&(r.to_string(), b.to_string()))
                .and_then(|f| f.as_ref().ok())
                .is_some_and(|sub_bare| is_ancestor(sub_bare, a, b))
        };
        // The nearest planned ancestor: of those with fewer commits, the one with the most
        // whose submodules this commit holds at the same or later commits.
        let nearest = (0..nodes.len()).rev().find(|&i| {
            counts[i] < *n
                && is_ancestor(&bare, &nodes[i].commit, c)
                && submodules::fits(&nodes[i].submodules, &subs, sub_ancestor)
        });
        let mut node = HistoryNode {
            tag: String::new(),
            env: env.to_string(),
            repo: repo.to_string(),
            commit: c.clone(),
            parent: None,
            depth: 1,
            packs: 2,
            tags,
            submodules: subs,
        };
        if let Some(i) = nearest.filter(|&i| nodes[i].depth < max_chain) {
            // A step has a second pack when it adds trees a setup commit could rewrite.
            let own = match split_objects(&bare, &revs(&node, Some(&nodes[i]))) {
                Ok(objects) => 1 + usize::from(!objects.fixed.is_empty()),
                Err(m) => {
                    failed.insert(c.clone(), repo_error(repo, m));
                    continue;
                }
            };
            if nodes[i].packs + own <= max_chain {
                (node.parent, node.depth, node.packs) =
                    (Some(i), nodes[i].depth + 1, nodes[i].packs + own);
            }
        }
        // Named by everything it is built from: its Dockerfile (the parent's name, so the
        // whole chain, and the recipe), the tags it keeps and the layout of its packs.
        let mut tag_text: String = node
            .tags
            .iter()
            .map(|(r, o)| format!("{o} {r}\n"))
            .collect();
        for s in &node.submodules {
            tag_text.extend(s.tags.iter().map(|(r, o)| format!("{o} {} {r}\n", s.name)));
        }
        let recipe = dockerfile(&node, node.parent.map(|i| &nodes[i]));
        let hash = content_hash(&[recipe.as_bytes(), tag_text.as_bytes(), LAYOUT.as_bytes()]);
        node.tag = format!(
            "swe-eval.history.{}:{}",
            repo.replacen('/', "__", 1).to_lowercase(),
            &hash[..16]
        );
        counts.push(*n);
        nodes.push(node);
    }
    (nodes, failed)
}

fn repo_error(repo: &str, message: String) -> ImageError {
    ImageError::Repo {
        repo: repo.to_string(),
        message,
    }
}

fn is_ancestor(bare: &Path, a: &str, b: &str) -> bool {
    git(&["merge-base", "--is-ancestor", a, b], Some(bare)).is_ok()
}

/// The tags to keep at `commit`: those pointing at it or an ancestor whose commit is dated no
/// later than it (committer dates compared as the repo script compares them, `%ci` strings).
pub(super) fn kept_tags(bare: &Path, commit: &str) -> Result<Vec<(String, String)>, String> {
    let date = git(&["show", "-s", "--format=%ci", commit], Some(bare))?;
    let date = date.trim();
    let out = git(
        &[
            "for-each-ref",
            &format!("--merged={commit}"),
            "--format=%(objectname)%09%(refname)%09%(committerdate:iso)%09%(*committerdate:iso)",
            "refs/tags",
        ],
        Some(bare),
    )?;
    let mut tags: Vec<(String, String)> = out
        .lines()
        .filter_map(|l| {
            let mut f = l.split('\t');
            let (oid, name, own, peeled) = (f.next()?, f.next()?, f.next()?, f.next()?);
            let when = if peeled.is_empty() { own } else { peeled };
            (!when.is_empty() && when <= date).then(|| (name.to_string(), oid.to_string()))
        })
        .collect();
    tags.sort();
    Ok(tags)
}

/// The objects a history image adds to its parent's, as `git rev-list --objects` lines
/// (`<id> [<path>]`, the path guiding `pack-objects`' choice of deltas), in two parts.
#[derive(Debug, Default, PartialEq)]
pub struct StepObjects {
    /// Trees whose entries are all executable files, directories, symlinks or submodules:
    /// those a setup commit that makes every file executable could write again.
    pub fixed: String,
    /// Everything else.
    pub rest: String,
}

/// The `rev-list --stdin` input of what `node` adds to `parent`: its commit and the tags it
/// keeps that the parent does not, minus the parent's commit.
fn revs(node: &HistoryNode, parent: Option<&HistoryNode>) -> String {
    let had: BTreeSet<&(String, String)> =
        parent.map(|p| p.tags.iter().collect()).unwrap_or_default();
    let mut revs = format!("{}\n", node.commit);
    for t in node.tags.iter().filter(|t| !had.contains(t)) {
        revs.push_str(&format!("{}\n", t.1));
    }
    if let Some(p) = parent {
        revs.push_str(&format!("^{}\n", p.commit));
    }
    revs
}

/// The objects of `revs` (a `rev-list --stdin` input), the trees a setup commit could
/// rewrite apart.
///
/// Why apart: the repo script's setup commit records every file as executable, and a tree
/// that is already so (a directory of scripts, or one that was all executable at some point
/// of the history) is written again with the same id. Git then "freshens" the pack that holds
/// it (sets its mtime, so a concurrent repack keeps it), and overlay copies a touched pack up
/// whole into the instance's layer: a whole history for a tree of a few entries. Git looks an
/// object up in the pack it last found something in first, so a newer pack holding a copy
/// would not be enough; such trees live only in their own small pack, which is the one
/// touched. A tree counts whatever its subtrees hold: a few more trees in the small pack cost
/// nothing, one missing would cost the whole pack.
pub fn split_objects(bare: &Path, revs: &str) -> Result<StepObjects, String> {
    let listed = git_input(
        &["rev-list", "--objects", "--stdin"],
        Some(bare),
        revs.as_bytes(),
    )?;
    let ids: String = listed
        .lines()
        .filter_map(|l| l.split(' ').next())
        .map(|id| format!("{id}\n"))
        .collect();
    let kinds = git_input(
        &["cat-file", "--batch-check=%(objectname) %(objecttype)"],
        Some(bare),
        ids.as_bytes(),
    )?;
    let trees: String = kinds
        .lines()
        .filter_map(|l| l.strip_suffix(" tree"))
        .map(|id| format!("{id}\n"))
        .collect();
    let contents = git_input_bytes(&["cat-file", "--batch"], Some(bare), trees.as_bytes())?;
    let fixed = fixed_trees(&contents)?;
    let mut out = StepObjects::default();
    for line in listed.lines().filter(|l| !l.is_empty()) {
        let id = line.split(' ').next().unwrap_or_default();
        let part = if fixed.contains(id) {
            &mut out.fixed
        } else {
            &mut out.rest
        };
        part.push_str(line);
        part.push('\n');
    }
    Ok(out)
}

/// The ids of the trees in `cat-file --batch` output whose every entry is an executable file,
/// a directory, a symlink or a submodule.
fn fixed_trees(batch: &[u8]) -> Result<BTreeSet<String>, String> {
    let bad = |what: &str| format!("git cat-file --batch: {what}");
    let mut fixed = BTreeSet::new();
    let mut at = 0;
    while at < batch.len() {
        let eol = batch[at..]
            .iter()
            .position(|&b| b == b'\n')
            .ok_or_else(|| bad("a header without its end"))?;
        let header = std::str::from_utf8(&batch[at..at + eol]).map_err(|_| bad("a header"))?;
        let mut f = header.split(' ');
        let (id, kind, size) = (f.next(), f.next(), f.next());
        let (Some(id), Some("tree"), Some(size)) = (id, kind, size) else {
            return Err(bad(&format!("not a tree: {header}")));
        };
        let size: usize = size.parse().map_err(|_| bad(header))?;
        let body = batch
            .get(at + eol + 1..at + eol + 1 + size)
            .ok_or_else(|| bad(&format!("{id} cut short")))?;
        at += eol + 1 + size + 1;
        // Entries: `<mode> <name>\0<raw id>`.
        let (mut i, mut all) = (0, true);
        while i < body.len() {
            let sp = body[i..].iter().position(|&b| b == b' ');
            let nul = body[i..].iter().position(|&b| b == 0);
            let (Some(sp), Some(nul)) = (sp, nul) else {
                return Err(bad(&format!("tree {id} unreadable")));
            };
            let mode = &body[i..i + sp];
            if !matches!(mode, b"100755" | b"40000" | b"120000" | b"160000") {
                all = false;
                break;
            }
            i += nul + 1 + 20;
        }
        if all {
            fixed.insert(id.to_string());
        }
    }
    Ok(fixed)
}

/// Writes into `dir/git/` what `node`'s build copies over `/testbed/.git/`: the objects it adds
/// to its parent's, in one pack, and in a second one the trees a setup commit could rewrite
/// (see [`split_objects`]); `packed-refs`; for a root, the rest of a repository (`HEAD`
/// detached at the commit, `config`, empty `refs/`).
pub fn write_context(
    cache: &RepoCache,
    node: &HistoryNode,
    parent: Option<&HistoryNode>,
    dir: &Path,
) -> Result<(), ImageError> {
    let fail = |m: String| repo_error(&node.repo, m);
    let io = |p: &Path, e: std::io::Error| repo_error(&node.repo, format!("{}: {e}", p.display()));
    let bare = cache.ensure(&node.repo, &node.commit)?;
    let gitdir = dir.join("git");
    let pack_dir = gitdir.join("objects/pack");
    std::fs::create_dir_all(&pack_dir).map_err(|e| io(&pack_dir, e))?;
    let objects = split_objects(&bare, &revs(node, parent)).map_err(fail)?;
    let base = pack_dir.join("pack");
    for part in [&objects.rest, &objects.fixed] {
        if part.is_empty() {
            continue;
        }
        git_input(
            &[
                // No `.rev` file: an image's older git (Debian 11's 2.30) calls it garbage.
                "-c",
                "pack.writeReverseIndex=false",
                "pack-objects",
                "-q",
                "--delta-base-offset",
                &base.to_string_lossy(),
            ],
            Some(&bare),
            part.as_bytes(),
        )
        .map_err(fail)?;
    }
    let refs: String = node
        .tags
        .iter()
        .map(|(r, o)| format!("{o} {r}\n"))
        .collect();
    let write = |name: &str, text: &str| {
        let p = gitdir.join(name);
        std::fs::write(&p, text).map_err(|e| io(&p, e))
    };
    write("packed-refs", &refs)?;
    let before = parent.map_or(&[][..], |p| &p.submodules[..]);
    submodules::write_context(cache, &node.submodules, before, &gitdir).map_err(fail)?;
    if parent.is_none() {
        write("HEAD", &format!("{}\n", node.commit))?;
        write(
            "config",
            "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n",
        )?;
        for d in ["refs/heads", "refs/tags", "objects/info", "info"] {
            let p = gitdir.join(d);
            std::fs::create_dir_all(&p).map_err(|e| io(&p, e))?;
        }
    }
    // Writable by all as copied in: a chmod in the RUN step would copy each pack up whole.
    make_all_writable(&gitdir).map_err(|e| io(&gitdir, e))
}

fn make_all_writable(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777))?;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            make_all_writable(&entry.path())?;
        } else {
            std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o777))?;
        }
    }
    Ok(())
}

/// `node`'s Dockerfile: the objects and refs copied in, then the checkout (whole for a root,
/// only what changed since the parent otherwise) made writable by all.
pub fn dockerfile(node: &HistoryNode, parent: Option<&HistoryNode>) -> String {
    let c = &node.commit;
    let (from, checkout) = match parent {
        None => (node.env.as_str(), format!("reset -q --hard {c}")),
        Some(p) => (
            p.tag.as_str(),
            // The work tree is all 777 (`core.fileMode=false`: not a local change to keep
            // or undo), so only the files that differ between the commits are written.
            format!("-c core.fileMode=false -c advice.detachedHead=false checkout -q --detach {c}"),
        ),
    };
    let before = parent.map_or(&[][..], |p| &p.submodules[..]);
    format!(
        "# swe-eval history image: {repo} at {c} ({kind})\n\
         FROM {from}\n\
         COPY git/ {REPO_DIR}/.git/\n\
         RUN cd {REPO_DIR} && git -c core.logAllRefUpdates=false {checkout} && {chmod}{subs}\n",
        chmod = chmod_new(&submodules::prune_args(REPO_DIR, &node.submodules)),
        subs = submodules::run_steps(&node.submodules, before),
        repo = node.repo,
        kind = if parent.is_some() {
            "objects since its parent"
        } else {
            "whole history"
        },
    )
}

/// Which instances need a history image: `(instance_id, env image, repo, commit)`.
pub type Wanted = (String, String, String, String);

/// The name of an instance image that stands on history image `history`: `tag` (the spec's
/// name, which hashes the instance's own recipe) with its version replaced by a hash of both,
/// so an instance image is rebuilt whenever its history image is (a new layout, a changed
/// chain) and never taken from an earlier run's history.
pub fn on_history(tag: &str, history: &str) -> String {
    let repo = tag.rsplit_once(':').map_or(tag, |(r, _)| r);
    let hash = content_hash(&[tag.as_bytes(), history.as_bytes()]);
    format!("{repo}:{}", &hash[..12])
}

/// A history image being made: its name once built, or why it could not be. Shared by its
/// children and by the instance images that stand on it.
pub type Pending<'a> = Shared<BoxFuture<'a, Result<String, ImageFailure>>>;

/// Plans the history images `wanted` needs (host git, now) and returns, per instance, the
/// name of its history image (`None` when it could not be planned) and the future that makes
/// it: a node's future first awaits its parent's, then builds under one of `permits` (the
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
            let name = node.tag.clone();
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
            by_commit.insert(key, (Some(name), fut.clone()));
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
    build_one(
        engine,
        Layer::Instance,
        &node.tag,
        &dockerfile(node, parent),
        &[],
        Some(("git", &tmp.path().join("git"))),
        false,
        None,
        opts,
        out,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repos::{git_ok, RepoSources};

    /// main: c1 (v0) - c2 (v1, annotated) - c3 - c4 (v2) - c5 (v9); release: c2 - r1 (vr).
    fn upstream(root: &Path) -> (std::path::PathBuf, BTreeMap<&'static str, String>) {
        let up = root.join("up");
        std::fs::create_dir_all(&up).unwrap();
        git_ok(&up, &["init", "-q", "-b", "main"]);
        let mut c = BTreeMap::new();
        let commit = |name: &'static str, c: &mut BTreeMap<&'static str, String>| {
            std::fs::write(up.join(format!("{name}.txt")), name).unwrap();
            git_ok(&up, &["add", "."]);
            let date = format!("2020-01-0{} 12:00:00 +0000", c.len() + 1);
            let args = ["-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", name];
            let out = std::process::Command::new("git")
                .current_dir(&up)
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .env("GIT_COMMITTER_DATE", &date)
                .env("GIT_AUTHOR_DATE", &date)
                .output()
                .unwrap();
            assert!(out.status.success());
            c.insert(name, git_ok(&up, &["rev-parse", "HEAD"]));
        };
        commit("c1", &mut c);
        git_ok(&up, &["tag", "v0"]);
        commit("c2", &mut c);
        git_ok(&up, &["tag", "-a", "-m", "one", "v1"]);
        git_ok(&up, &["checkout", "-q", "-b", "release"]);
        commit("r1", &mut c);
        git_ok(&up, &["tag", "vr"]);
        git_ok(&up, &["checkout", "-q", "main"]);
        for n in ["c3", "c4"] {
            commit(n, &mut c);
        }
        git_ok(&up, &["tag", "v2"]);
        commit("c5", &mut c);
        git_ok(&up, &["tag", "v9"]);
        (up, c)
    }

    #[test]
    fn chains_follow_ancestry_branch_at_release_lines_and_reroot_when_full() {
        let tmp = tempfile::tempdir().unwrap();
        let (up, c) = upstream(tmp.path());
        let mut s = RepoSources::default();
        s.add_override(&format!("o/n={}", up.display())).unwrap();
        let cache = RepoCache::new(tmp.path().join("cache"), s);
        let commits: BTreeSet<String> = ["c1", "c2", "c3", "c4", "r1"]
            .iter()
            .map(|n| c[n].clone())
            .collect();
        let (nodes, failed) = plan_chains(&cache, "env:1", "o/n", &commits, 4);
        assert!(failed.is_empty(), "{failed:?}");
        let by = |n: &str| nodes.iter().position(|x| x.commit == c[n]).unwrap();
        let parent = |n: &str| nodes[by(n)].parent.map(|p| nodes[p].commit.clone());
        assert_eq!(parent("c1"), None);
        assert_eq!(parent("c2"), Some(c["c1"].clone()));
        assert_eq!(parent("c3"), Some(c["c2"].clone()));
        assert_eq!(parent("r1"), Some(c["c2"].clone()), "release line forks");
        assert_eq!(
            parent("c4"),
            None,
            "c3's chain is full (4 packs): a new root"
        );
        assert_eq!(nodes[by("c3")].depth, 3);
        for (i, n) in nodes.iter().enumerate() {
            assert!(n.parent.is_none_or(|p| p < i), "parents first");
        }
        let tags =
            |n: &str| -> Vec<String> { nodes[by(n)].tags.iter().map(|(r, _)| r.clone()).collect() };
        assert_eq!(tags("c1"), ["refs/tags/v0"]);
        assert_eq!(tags("c3"), ["refs/tags/v0", "refs/tags/v1"]);
        assert_eq!(tags("r1"), ["refs/tags/v0", "refs/tags/v1", "refs/tags/vr"]);
        assert_eq!(tags("c4"), ["refs/tags/v0", "refs/tags/v1", "refs/tags/v2"]);
        let names: BTreeSet<&str> = nodes.iter().map(|n| n.tag.as_str()).collect();
        assert_eq!(names.len(), 5, "one image per commit");

        // The pack of a step holds what the commit adds and nothing newer.
        let dir = tmp.path().join("ctx");
        write_context(&cache, &nodes[by("c3")], Some(&nodes[by("c2")]), &dir).unwrap();
        let packs: Vec<_> = std::fs::read_dir(dir.join("git/objects/pack"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "idx"))
            .collect();
        assert_eq!(packs.len(), 1);
        let files = std::fs::read_dir(dir.join("git/objects/pack"))
            .unwrap()
            .count();
        assert_eq!(
            files, 2,
            "a pack and its index, no `.rev` an older git calls garbage"
        );
        let listed = git_ok(
            tmp.path(),
            &["verify-pack", "-v", &packs[0].to_string_lossy()],
        );
        let objects: BTreeSet<&str> = listed
            .lines()
            .filter_map(|l| l.split(' ').next())
            .filter(|w| w.len() == 40)
            .collect();
        assert!(objects.contains(c["c3"].as_str()));
        for absent in ["c1", "c2", "c4", "c5", "r1"] {
            assert!(
                !objects.contains(c[absent].as_str()),
                "{absent} not in c3's pack"
            );
        }
        assert_eq!(
            std::fs::read_to_string(dir.join("git/packed-refs"))
                .unwrap()
                .lines()
                .count(),
            2
        );
        assert!(
            !dir.join("git/HEAD").exists(),
            "a step keeps its parent's HEAD"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&packs[0]).unwrap().permissions().mode();
        assert_eq!(
            mode & 0o777,
            0o777,
            "copied in writable: no chmod copies it up"
        );
    }

    /// `bin/` holds only executables (its tree is what a setup commit writes again); `lib/` and
    /// the top hold a plain file.
    fn with_scripts(root: &Path) -> (std::path::PathBuf, String) {
        use std::os::unix::fs::PermissionsExt;
        let up = root.join("scripts");
        std::fs::create_dir_all(up.join("bin")).unwrap();
        std::fs::create_dir_all(up.join("lib")).unwrap();
        git_ok(&up, &["init", "-q", "-b", "main"]);
        std::fs::write(up.join("bin/run"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(up.join("bin/run"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::fs::write(up.join("lib/a.txt"), "a").unwrap();
        std::fs::write(up.join("README"), "r").unwrap();
        git_ok(&up, &["add", "."]);
        git_ok(
            &up,
            &[
                "-c",
                "core.hooksPath=/dev/null",
                "commit",
                "-q",
                "-m",
                "one",
            ],
        );
        let c = git_ok(&up, &["rev-parse", "HEAD"]);
        (up, c)
    }

    #[test]
    fn trees_a_setup_commit_rewrites_get_a_pack_of_their_own() {
        let tmp = tempfile::tempdir().unwrap();
        let (up, c) = with_scripts(tmp.path());
        let split = split_objects(&up.join(".git"), &format!("{c}\n")).unwrap();
        let ids = |text: &str| -> BTreeSet<String> {
            text.lines()
                .map(|l| l.split(' ').next().unwrap().to_string())
                .collect()
        };
        let bin = git_ok(&up, &["rev-parse", &format!("{c}:bin")]);
        assert_eq!(ids(&split.fixed), BTreeSet::from([bin]));
        let all = ids(&git_ok(&up, &["rev-list", "--objects", &c]));
        let rest = ids(&split.rest);
        assert_eq!(rest.len() + 1, all.len(), "every other object, once");
        assert!(rest.is_subset(&all));
        for kept in [c.clone(), git_ok(&up, &["rev-parse", &format!("{c}:lib")])] {
            assert!(rest.contains(&kept), "{kept} with the others");
        }

        // A root gets both packs, the small one holding exactly that tree.
        let mut s = RepoSources::default();
        s.add_override(&format!("o/s={}", up.display())).unwrap();
        let cache = RepoCache::new(tmp.path().join("cache"), s);
        let (nodes, failed) = plan_chains(&cache, "env:1", "o/s", &BTreeSet::from([c.clone()]), 40);
        assert!(failed.is_empty(), "{failed:?}");
        assert_eq!(nodes[0].packs, 2, "a root counts two packs");
        let dir = tmp.path().join("ctx");
        write_context(&cache, &nodes[0], None, &dir).unwrap();
        let mut packed: Vec<BTreeSet<String>> = std::fs::read_dir(dir.join("git/objects/pack"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "idx"))
            .map(|p| {
                git_ok(tmp.path(), &["verify-pack", "-v", &p.to_string_lossy()])
                    .lines()
                    .filter_map(|l| l.split(' ').next())
                    .filter(|w| w.len() == 40)
                    .map(str::to_string)
                    .collect()
            })
            .collect();
        packed.sort_by_key(|p| p.len());
        assert_eq!(packed, [ids(&split.fixed), rest]);
    }

    /// A commit in `dir` dated `day` (so the tag rule sees known dates).
    fn dated_commit(dir: &Path, msg: &str, day: u32) -> String {
        let date = format!("2020-01-{day:02} 12:00:00 +0000");
        let out = std::process::Command::new("git")
            .current_dir(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c"])
            .args([
                "core.hooksPath=/dev/null",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                msg,
            ])
            .env("GIT_COMMITTER_DATE", &date)
            .env("GIT_AUTHOR_DATE", &date)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        git_ok(dir, &["rev-parse", "HEAD"])
    }

    /// `helpers`: h1 (hv1) - h2 (hv2) - h3 (hv3), each adding a file. `sup`: s1 (gitlink
    /// `helpers` at h1, and `vendored` whose URL is no GitHub address), s2 (helpers at h2),
    /// s3 (helpers back at h1), s4 (helpers at h2, its repository given by a source that
    /// does not exist).
    fn with_submodule(root: &Path) -> (std::path::PathBuf, BTreeMap<&'static str, String>) {
        let (h, sup) = (root.join("helpers"), root.join("sup"));
        let mut c = BTreeMap::new();
        std::fs::create_dir_all(&h).unwrap();
        git_ok(&h, &["init", "-q", "-b", "main"]);
        for (i, name) in ["h1", "h2", "h3"].into_iter().enumerate() {
            std::fs::write(h.join(format!("{name}.py")), name).unwrap();
            git_ok(&h, &["add", "."]);
            c.insert(name, dated_commit(&h, name, i as u32 + 1));
            git_ok(&h, &["tag", &format!("hv{}", i + 1)]);
        }
        std::fs::create_dir_all(&sup).unwrap();
        git_ok(&sup, &["init", "-q", "-b", "main"]);
        let modules = |helpers_url: &str| {
            format!(
                "[submodule \"helpers\"]\n\tpath = helpers\n\turl = {helpers_url}\n\
                 [submodule \"vendored\"]\n\tpath = third/vendored\n\turl = https://example.invalid/v.git\n"
            )
        };
        let link = |sup: &Path, path: &str, commit: &str| {
            let info = format!("160000,{commit},{path}");
            git_ok(sup, &["update-index", "--add", "--cacheinfo", &info]);
        };
        std::fs::write(sup.join("main.py"), "x").unwrap();
        std::fs::write(
            sup.join(".gitmodules"),
            modules("https://github.com/o/helpers.git"),
        )
        .unwrap();
        git_ok(&sup, &["add", "."]);
        link(&sup, "helpers", &c["h1"]);
        link(&sup, "third/vendored", &c["h1"]);
        c.insert("s1", dated_commit(&sup, "s1", 10));
        link(&sup, "helpers", &c["h2"]);
        c.insert("s2", dated_commit(&sup, "s2", 11));
        link(&sup, "helpers", &c["h1"]);
        c.insert("s3", dated_commit(&sup, "s3", 12));
        link(&sup, "helpers", &c["h2"]);
        std::fs::write(sup.join(".gitmodules"), modules("../missing.git")).unwrap();
        git_ok(&sup, &["add", ".gitmodules"]);
        c.insert("s4", dated_commit(&sup, "s4", 13));
        (root.to_path_buf(), c)
    }

    /// The object ids of the packs under `dir`.
    fn packed(dir: &Path) -> BTreeSet<String> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return BTreeSet::new();
        };
        entries
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "idx"))
            .flat_map(|p| {
                git_ok(Path::new("/"), &["verify-pack", "-v", &p.to_string_lossy()])
                    .lines()
                    .filter_map(|l| l.split(' ').next().map(str::to_string))
                    .filter(|w| w.len() == 40)
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Runs `node`'s Dockerfile `RUN` line in `work` (its `/testbed`) after copying the context
    /// over `work/.git`, as the image build does.
    fn build_here(
        cache: &RepoCache,
        node: &HistoryNode,
        parent: Option<&HistoryNode>,
        work: &Path,
    ) {
        let ctx = tempfile::tempdir().unwrap();
        write_context(cache, node, parent, ctx.path()).unwrap();
        let copied = std::process::Command::new("cp")
            .arg("-a")
            .arg(ctx.path().join("git/."))
            .arg(work.join(".git"))
            .output()
            .unwrap();
        assert!(copied.status.success(), "{copied:?}");
        let recipe = dockerfile(node, parent);
        let run = recipe
            .lines()
            .find_map(|l| l.strip_prefix("RUN "))
            .unwrap()
            .replace(REPO_DIR, &work.to_string_lossy());
        let out = std::process::Command::new("sh")
            .args(["-c", &run])
            .output()
            .unwrap();
        assert!(out.status.success(), "{run}: {out:?}");
    }

    #[test]
    fn submodules_the_sources_give_are_checked_out_at_their_gitlink_with_nothing_newer() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, c) = with_submodule(tmp.path());
        let mut s = RepoSources::default();
        s.add_override(&format!("o/sup={}", root.join("sup").display()))
            .unwrap();
        s.add_override(&format!("o/helpers={}", root.join("helpers").display()))
            .unwrap();
        s.add_override(&format!("o/missing={}", root.join("nowhere").display()))
            .unwrap();
        let cache = RepoCache::new(tmp.path().join("cache"), s);
        let commits: BTreeSet<String> = ["s1", "s2", "s3", "s4"]
            .iter()
            .map(|n| c[n].clone())
            .collect();
        let (nodes, failed) = plan_chains(&cache, "env:1", "o/sup", &commits, MAX_CHAIN);
        assert!(
            failed.is_empty(),
            "a submodule left out fails nothing: {failed:?}"
        );
        let by = |n: &str| nodes.iter().position(|x| x.commit == c[n]).unwrap();
        let (s1, s2, s3, s4) = (by("s1"), by("s2"), by("s3"), by("s4"));
        let helpers = |i: usize| {
            nodes[i]
                .submodules
                .iter()
                .find(|s| s.path == "helpers")
                .unwrap()
        };
        let held = helpers(s1);
        assert_eq!(
            (held.name.as_str(), held.url.as_str(), held.repo.as_deref()),
            (
                "helpers",
                "https://github.com/o/helpers.git",
                Some("o/helpers")
            )
        );
        assert_eq!(
            (held.commit.as_str(), held.left_out.as_deref()),
            (c["h1"].as_str(), None)
        );
        let tag_names =
            |i: usize| -> Vec<&str> { helpers(i).tags.iter().map(|t| t.0.as_str()).collect() };
        assert_eq!(tag_names(s1), ["refs/tags/hv1"]);
        assert_eq!(
            tag_names(s2),
            ["refs/tags/hv1", "refs/tags/hv2"],
            "hv3 is newer"
        );
        let vendored = nodes[s1]
            .submodules
            .iter()
            .find(|s| s.path == "third/vendored")
            .unwrap();
        assert!(
            vendored
                .left_out
                .as_deref()
                .unwrap()
                .contains("example.invalid"),
            "{vendored:?}"
        );
        let missing = helpers(s4);
        assert_eq!(missing.repo.as_deref(), Some("o/missing"), "relative URL");
        assert_eq!(missing.url, "https://github.com/o/missing.git");
        assert!(
            missing
                .left_out
                .as_deref()
                .unwrap()
                .contains("cannot be had"),
            "{missing:?}"
        );

        assert_eq!(nodes[s2].parent, Some(s1), "the gitlink moved forward");
        assert_eq!(
            nodes[s3].parent,
            Some(s1),
            "s2's helpers (h2) is newer than s3's (h1): on s1, which has h1"
        );
        assert_eq!(
            nodes[s4].parent, None,
            "every ancestor's image holds the helpers s4 leaves out: a new root"
        );

        // The recipe names what it leaves out and keeps submodule work trees out of the chmod.
        let recipe = dockerfile(&nodes[s1], None);
        assert!(
            recipe.contains("-path /testbed/helpers -prune -o ! -type l"),
            "{recipe}"
        );
        assert!(
            recipe.contains("swe-eval: submodule third/vendored"),
            "{recipe}"
        );
        let recipe = dockerfile(&nodes[s4], None);
        assert!(recipe.contains("swe-eval: submodule helpers (https://github.com/o/missing.git)"));

        // Contexts: the root's submodule pack is h1's history; the step adds h2 alone.
        let ctx = tempfile::tempdir().unwrap();
        write_context(&cache, &nodes[s1], None, ctx.path()).unwrap();
        let module = ctx.path().join("git/modules/helpers");
        let history = |r: &str| -> BTreeSet<String> {
            git_ok(&root.join("helpers"), &["rev-list", "--objects", r])
                .lines()
                .map(|l| l[..40].to_string())
                .collect()
        };
        let hv1 = git_ok(&root.join("helpers"), &["rev-parse", "hv1"]);
        assert_eq!(packed(&module.join("objects/pack")), history(&c["h1"]));
        assert_eq!(
            std::fs::read_to_string(module.join("HEAD")).unwrap(),
            format!("{}\n", c["h1"])
        );
        assert_eq!(
            std::fs::read_to_string(module.join("packed-refs")).unwrap(),
            format!("{hv1} refs/tags/hv1\n")
        );
        let config = std::fs::read_to_string(module.join("config")).unwrap();
        assert!(
            config.contains("\tworktree = ../../../helpers\n"),
            "{config}"
        );
        assert!(
            config.contains("\turl = \"https://github.com/o/helpers.git\"\n"),
            "{config}"
        );
        assert!(!ctx.path().join("git/modules/vendored").exists());
        let step = tempfile::tempdir().unwrap();
        write_context(&cache, &nodes[s2], Some(&nodes[s1]), step.path()).unwrap();
        let module = step.path().join("git/modules/helpers");
        let added: BTreeSet<String> = history(&c["h2"])
            .difference(&history(&c["h1"]))
            .cloned()
            .collect();
        assert_eq!(packed(&module.join("objects/pack")), added);
        assert!(!module.join("HEAD").exists() && !module.join("config").exists());

        // Built in place with the host's git: `git submodule status` and `git status` as after
        // `git submodule update --init`, then the step moves the submodule forward.
        let work = tmp.path().join("home/testbed");
        std::fs::create_dir_all(work.join(".git")).unwrap();
        build_here(&cache, &nodes[s1], None, &work);
        // Untrimmed: the blank prefix is the point.
        let status = git(&["submodule", "status"], Some(&work)).unwrap();
        assert_eq!(
            status.lines().collect::<Vec<_>>(),
            [
                format!(" {} helpers (hv1)", c["h1"]),
                format!("-{} third/vendored", c["h1"])
            ],
            "{status}"
        );
        assert_eq!(
            git_ok(
                &work,
                &["-c", "core.fileMode=false", "status", "--porcelain"]
            ),
            ""
        );
        assert_eq!(
            git_ok(&work, &["config", "submodule.helpers.url"]),
            "https://github.com/o/helpers.git"
        );
        let sub = work.join("helpers");
        assert!(sub.join("h1.py").exists() && !sub.join("h2.py").exists());
        build_here(&cache, &nodes[s2], Some(&nodes[s1]), &work);
        let status = git(&["submodule", "status", "helpers"], Some(&work)).unwrap();
        assert_eq!(status, format!(" {} helpers (hv2)\n", c["h2"]));
        assert_eq!(
            git_ok(
                &work,
                &["-c", "core.fileMode=false", "status", "--porcelain"]
            ),
            ""
        );
        assert!(sub.join("h2.py").exists());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(sub.join("h1.py"))
            .unwrap()
            .permissions()
            .mode();
        assert_ne!(
            mode & 0o777,
            0o777,
            "the step's chmod left the submodule's files alone"
        );
        assert_eq!(
            std::fs::metadata(work.join("main.py"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o777
        );
        let reachable = git_ok(&sub, &["rev-list", "--all"]);
        assert_eq!(reachable.lines().count(), 2, "h1 and h2: {reachable}");
        let objects: BTreeSet<String> = git_ok(
            &sub,
            &[
                "cat-file",
                "--batch-all-objects",
                "--batch-check=%(objectname)",
            ],
        )
        .lines()
        .map(str::to_string)
        .collect();
        let hv2 = git_ok(&root.join("helpers"), &["rev-parse", "hv2"]);
        let mut allowed = history(&c["h2"]);
        allowed.extend([hv1, hv2]);
        assert!(objects.is_subset(&allowed), "nothing of h3 in the image");
    }

    #[tokio::test]
    async fn instance_images_are_named_after_their_history_and_every_image_used_is_held() {
        use crate::engine::FakeEngine;
        use crate::images::hold::{hold_labels, Holding};
        use crate::images::{
            base_image_name, ensure, BaseOptions, BaseRecipe, BuildChain, BuildOptions, EnvRecipe,
            ImagePlan, InstanceImages, InstanceRecipe,
        };
        use crate::spec::DebianRelease;
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

        // Another history (chains of one: c3 a root of its own) is another instance image;
        // a's history is the same root, so its image is found.
        opts.history_chain = 1;
        let other = ensure(&*e, &plan, &opts).await;
        assert_eq!(other.images["a"], got.images["a"]);
        assert_ne!(other.images["b"], got.images["b"]);
        assert!(other.created.iter().any(|(n, _)| n == &other.images["b"]));
    }
}
