//! Planning the history images of one repository on one environment image: each planned
//! commit `FROM` the history image of its nearest planned ancestor, chains cut at
//! [`MAX_CHAIN`], each node named by its content.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::context::dockerfile;
use super::node::{repo_error, HistoryNode, LAYOUT};
use super::pack::{revs, split_objects};
use crate::images::submodules;
use crate::images::{content_hash, ImageError, RepoCache};
use swe_eval_core::repos::{git, GitCommandError};

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
                .and_then(Option::as_ref)
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
            content: String::new(),
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
        // What the repository in the image is, whichever parent it stands on: the instance
        // images' name (the packs differ by chain; the objects, refs and checkout do not).
        let mut held = format!("{env}\n{repo}\n{c}\n");
        for s in &node.submodules {
            held.push_str(&format!(
                "{} {} {} {} {:?}\n",
                s.name, s.path, s.url, s.commit, s.left_out
            ));
        }
        node.content =
            content_hash(&[held.as_bytes(), tag_text.as_bytes(), LAYOUT.as_bytes()])[..16].into();
        counts.push(*n);
        nodes.push(node);
    }
    (nodes, failed)
}

fn is_ancestor(bare: &Path, a: &str, b: &str) -> bool {
    git(&["merge-base", "--is-ancestor", a, b], Some(bare)).is_ok()
}

/// The tags to keep at `commit`: those pointing at it or an ancestor whose commit is dated no
/// later than it (committer dates compared as the repo script compares them, `%ci` strings).
fn kept_tags(bare: &Path, commit: &str) -> Result<Vec<(String, String)>, GitCommandError> {
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

#[cfg(test)]
mod tests {
    use super::super::context::write_context;
    use super::super::fixtures::upstream;
    use super::*;
    use swe_eval_core::repos::{git_ok, RepoSources};

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
}
