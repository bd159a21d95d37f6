//! What a history step adds, packed on the host: the objects of `commit ^parent` in one or two
//! packs, the trees a setup commit would write again apart from the rest.

use std::collections::BTreeSet;
use std::path::Path;

use super::node::HistoryNode;
use swe_eval_core::repos::{git_input, git_input_bytes, GitCommandError};

/// Why the objects of a history step could not be listed.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// A git command failed.
    #[error(transparent)]
    Git(#[from] GitCommandError),
    /// `git cat-file --batch` gave what is not a tree as this reads one.
    #[error("git cat-file --batch: {what}")]
    Batch {
        /// What could not be read.
        what: String,
    },
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
pub(super) fn revs(node: &HistoryNode, parent: Option<&HistoryNode>) -> String {
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
pub fn split_objects(bare: &Path, revs: &str) -> Result<StepObjects, PackError> {
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
fn fixed_trees(batch: &[u8]) -> Result<BTreeSet<String>, PackError> {
    let bad = |what: &str| PackError::Batch {
        what: what.to_string(),
    };
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

#[cfg(test)]
mod tests {
    use super::super::context::write_context;
    use super::super::fixtures::with_scripts;
    use super::super::plan::plan_chains;
    use super::*;
    use crate::images::RepoCache;
    use swe_eval_core::repos::{git_ok, RepoSources};

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
}
