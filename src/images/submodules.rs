//! Git submodules in history images: a commit whose tree has gitlinks gets each submodule the
//! run's repository sources can give, as `git submodule update --init` leaves it (its git
//! directory under `.git/modules/<name>`, its work tree at the gitlink commit, `url` and
//! `active` in the superproject's config, `git submodule status` with a blank prefix), so that
//! an install step that would clone it (astropy's `ah_bootstrap` runs `git submodule update
//! --init` for `astropy_helpers`) finds it there, as the official build, which had GitHub, did.
//!
//! As for the superproject (see [`super::history`]), all git work on the repository's objects
//! happens on the host against the bare cache of [`RepoCache`]: the submodule's repository is
//! fetched from its source (`--repo owner/name=...`, `--mirrors`, else GitHub, the `owner/name`
//! read from the `.gitmodules` URL), and its git directory holds one pack per history step of
//! the gitlink commit and its ancestors only, and the tags kept by the superproject's rule;
//! no branch and no remote-tracking ref (a clone's would point at later commits). The image
//! build only checks the work tree out. A submodule that cannot be had (no GitHub repository
//! in its URL, a source that does not answer or lacks the commit, a name git would refuse) is
//! left as before (an empty folder, `git submodule status` prefix `-`) and named in the history
//! image's build log; it fails nothing by itself.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{ImageError, RepoCache};
use swe_eval_core::repos::{git, git_input, GitCommandError};

/// Why a submodule's part of a history image's context could not be written.
#[derive(Debug, thiserror::Error)]
pub enum SubmoduleError {
    /// Its repository could not be fetched into the cache.
    #[error(transparent)]
    Repo(#[from] ImageError),
    /// A git command failed.
    #[error(transparent)]
    Git(#[from] GitCommandError),
    /// A file of its git directory could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file or folder.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
}

/// One gitlink of a commit and what the history image does with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Submodule {
    /// Its name in `.gitmodules` (`submodule.<name>.path`): its git directory is
    /// `.git/modules/<name>`.
    pub name: String,
    /// Where it is checked out, relative to the repository.
    pub path: String,
    /// The URL written to the configs: `.gitmodules`' own, or a relative one resolved
    /// against the superproject's GitHub address.
    pub url: String,
    /// The gitlink: the commit checked out.
    pub commit: String,
    /// The `owner/name` its repository is fetched as, when its URL names one on GitHub.
    pub repo: Option<String>,
    /// `(ref name, object id)` of the tags kept in its git directory, sorted.
    pub tags: Vec<(String, String)>,
    /// Why it is not checked out (`None`: it is).
    pub left_out: Option<String>,
}

impl Submodule {
    /// Whether the image holds it.
    pub fn included(&self) -> bool {
        self.left_out.is_none()
    }
}

/// The bare caches of submodule repositories fetched while planning, by `(repo, commit)`
/// (`None`: it could not be had): a gitlink shared by many commits is fetched (or found
/// missing) once.
pub type Fetched = BTreeMap<(String, String), Option<PathBuf>>;

/// The submodules of `commit` in `bare` (the superproject `repo`'s cache), each fetched through
/// `cache` when its repository can be had; tags kept by `kept_tags` (the superproject's rule).
/// `Err` only when the superproject's own objects cannot be read.
pub fn read(
    cache: &RepoCache,
    bare: &Path,
    repo: &str,
    commit: &str,
    fetched: &mut Fetched,
    kept_tags: impl Fn(&Path, &str) -> Result<Vec<(String, String)>, GitCommandError>,
) -> Result<Vec<Submodule>, GitCommandError> {
    if git(
        &["cat-file", "-e", &format!("{commit}:.gitmodules")],
        Some(bare),
    )
    .is_err()
    {
        // `git submodule update --init` initializes nothing without `.gitmodules`.
        return Ok(Vec::new());
    }
    let links = gitlinks(bare, commit)?;
    if links.is_empty() {
        return Ok(Vec::new());
    }
    let config = git(
        &[
            "config",
            "-z",
            "--list",
            "--blob",
            &format!("{commit}:.gitmodules"),
        ],
        Some(bare),
    );
    let entries = config.as_deref().map(parse_config).unwrap_or_default();
    let mut out = Vec::new();
    for (path, link) in links {
        let name = entries
            .iter()
            .find(|(k, v)| k.ends_with(".path") && v.trim_end_matches('/') == path)
            .and_then(|(k, _)| k.strip_prefix("submodule.")?.strip_suffix(".path"))
            .map(str::to_string);
        let value = |name: &str, key: &str| {
            let k = format!("submodule.{name}.{key}");
            entries
                .iter()
                .rev()
                .find(|(e, _)| *e == k)
                .map(|(_, v)| v.clone())
        };
        let mut sub = Submodule {
            name: name.clone().unwrap_or_else(|| path.clone()),
            path: path.clone(),
            url: String::new(),
            commit: link.clone(),
            repo: None,
            tags: Vec::new(),
            left_out: None,
        };
        let Some(name) = name else {
            sub.left_out = Some(match &config {
                Ok(_) => "no `.gitmodules` entry has its path".to_string(),
                Err(_) => "`.gitmodules` cannot be read".to_string(),
            });
            out.push(sub);
            continue;
        };
        let url = value(&name, "url").unwrap_or_default();
        if !safe_relative(&name) || !safe_relative(&path) {
            sub.left_out = Some("a name or path this image builder does not write".to_string());
        } else if value(&name, "update").as_deref() == Some("none") {
            sub.left_out = Some("`.gitmodules` says `update = none`".to_string());
        } else {
            match github_repo(&url, repo) {
                None => {
                    sub.left_out = Some(format!(
                        "its URL `{url}` names no GitHub repository the sources can give"
                    ))
                }
                Some((owner_name, resolved)) => {
                    sub.url = resolved;
                    let got = fetched
                        .entry((owner_name.clone(), link.clone()))
                        .or_insert_with(|| cache.ensure(&owner_name, &link).ok())
                        .clone();
                    let tags = got.map(|b| kept_tags(&b, &link));
                    match tags {
                        Some(Ok(t)) => sub.tags = t,
                        None | Some(Err(_)) => {
                            sub.left_out = Some(format!(
                                "{owner_name} at {link} cannot be had from {}",
                                cache.sources.source(&owner_name)
                            ))
                        }
                    }
                    sub.repo = Some(owner_name);
                }
            }
        }
        if sub.url.is_empty() {
            sub.url = url;
        }
        out.push(sub);
    }
    Ok(out)
}

/// `(path, commit)` of every gitlink in `commit`'s tree.
fn gitlinks(bare: &Path, commit: &str) -> Result<Vec<(String, String)>, GitCommandError> {
    let listed = git(&["ls-tree", "-r", "-z", commit], Some(bare))?;
    Ok(listed
        .split('\0')
        .filter_map(|entry| {
            let (meta, path) = entry.split_once('\t')?;
            let mut f = meta.split(' ');
            let (mode, kind, id) = (f.next()?, f.next()?, f.next()?);
            (mode == "160000" && kind == "commit").then(|| (path.to_string(), id.to_string()))
        })
        .collect())
}

/// `git config -z --list` output as `(key, value)` pairs.
fn parse_config(text: &str) -> Vec<(String, String)> {
    text.split('\0')
        .filter(|e| !e.is_empty())
        .map(|e| match e.split_once('\n') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (e.to_string(), String::new()),
        })
        .collect()
}

/// A relative path of plain components (letters, digits, `._-`, no `.` or `..`): what goes
/// into the image's paths and into its Dockerfile unquoted.
fn safe_relative(p: &str) -> bool {
    !p.is_empty()
        && p.split('/').all(|c| {
            !c.is_empty()
                && c != "."
                && c != ".."
                && !c.starts_with('-')
                && c.chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || "._-".contains(ch))
        })
}

/// The GitHub `owner/name` a submodule URL names, and the URL to write: `.gitmodules`' own, or
/// for a relative one (`../other.git`) the address git resolves it to against the
/// superproject `repo`'s GitHub remote (as the official clone had it).
pub fn github_repo(url: &str, repo: &str) -> Option<(String, String)> {
    let url = url.trim();
    let (rest, written) = if url.starts_with("./") || url.starts_with("../") {
        let mut parts: Vec<&str> = repo.split('/').collect();
        let mut rel = url;
        loop {
            if let Some(r) = rel.strip_prefix("../") {
                parts.pop()?;
                rel = r;
            } else if let Some(r) = rel.strip_prefix("./") {
                rel = r;
            } else {
                break;
            }
        }
        let joined = parts.into_iter().chain([rel]).collect::<Vec<_>>().join("/");
        (joined.clone(), format!("https://github.com/{joined}"))
    } else {
        let rest = [
            "https://github.com/",
            "http://github.com/",
            "https://www.github.com/",
            "git://github.com/",
            "ssh://git@github.com/",
            "git@github.com:",
        ]
        .iter()
        .find_map(|p| url.strip_prefix(p))?;
        (rest.to_string(), url.to_string())
    };
    let rest = rest.trim_end_matches('/');
    let rest = rest.strip_suffix(".git").unwrap_or(rest);
    let mut f = rest.split('/');
    let (owner, name) = (f.next()?, f.next()?);
    let ok = |s: &str| {
        !s.is_empty()
            && s != "."
            && s != ".."
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    };
    (f.next().is_none() && ok(owner) && ok(name)).then(|| (format!("{owner}/{name}"), written))
}

/// Whether a history image of `child`'s submodules can stand on one of `parent`'s: every
/// submodule the parent holds is held by the child too, at the same path, from the same
/// repository and URL, at the same commit or a descendant (`is_ancestor(repo, a, b)`). Else
/// the parent's layers would hold a submodule or objects newer than the child's gitlink.
pub fn fits(
    parent: &[Submodule],
    child: &[Submodule],
    is_ancestor: impl Fn(&str, &str, &str) -> bool,
) -> bool {
    parent.iter().filter(|p| p.included()).all(|p| {
        child.iter().any(|c| {
            c.included()
                && c.name == p.name
                && c.path == p.path
                && c.url == p.url
                && c.repo == p.repo
                && (c.commit == p.commit
                    || p.repo
                        .as_deref()
                        .is_some_and(|r| is_ancestor(r, &p.commit, &c.commit)))
        })
    })
}

/// The same submodule in the parent's image, when it holds it.
fn in_parent<'a>(s: &Submodule, parent: &'a [Submodule]) -> Option<&'a Submodule> {
    parent.iter().find(|p| p.included() && p.name == s.name)
}

/// Writes under `gitdir` (the context folder copied over `/testbed/.git/`) the git directory
/// parts of each submodule `subs` holds: `modules/<name>/` with a pack of what its gitlink adds
/// to the parent image's (the gitlink commit, its ancestors, the tags kept; never anything
/// newer) and `packed-refs`; for a submodule new in this image also `HEAD` (detached at the
/// gitlink), `config` (as a submodule clone writes it, its work tree and `origin`) and the
/// empty folders of a repository.
pub fn write_context(
    cache: &RepoCache,
    subs: &[Submodule],
    parent: &[Submodule],
    gitdir: &Path,
) -> Result<(), SubmoduleError> {
    let io = |p: &Path, source: std::io::Error| SubmoduleError::Write {
        path: p.to_path_buf(),
        source,
    };
    for s in subs.iter().filter(|s| s.included()) {
        let Some(repo) = s.repo.as_deref() else {
            continue;
        };
        let bare = cache.ensure(repo, &s.commit)?;
        let before = in_parent(s, parent);
        let dir = gitdir.join("modules").join(&s.name);
        let pack_dir = dir.join("objects/pack");
        std::fs::create_dir_all(&pack_dir).map_err(|e| io(&pack_dir, e))?;
        let had: Vec<&(String, String)> =
            before.map(|b| b.tags.iter().collect()).unwrap_or_default();
        let mut revs = format!("{}\n", s.commit);
        for t in s.tags.iter().filter(|t| !had.contains(t)) {
            revs.push_str(&format!("{}\n", t.1));
        }
        if let Some(b) = before {
            revs.push_str(&format!("^{}\n", b.commit));
        }
        git_input(
            &[
                "-c",
                "pack.writeReverseIndex=false",
                "pack-objects",
                "-q",
                "--revs",
                "--delta-base-offset",
                &pack_dir.join("pack").to_string_lossy(),
            ],
            Some(&bare),
            revs.as_bytes(),
        )?;
        let write = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).map_err(|e| io(&p, e))
        };
        let refs: String = s.tags.iter().map(|(r, o)| format!("{o} {r}\n")).collect();
        write("packed-refs", &refs)?;
        if before.is_none() {
            write("HEAD", &format!("{}\n", s.commit))?;
            let up = "../".repeat(2 + s.name.split('/').count());
            write(
                "config",
                &format!(
                    "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
                     \tlogallrefupdates = true\n\tworktree = {up}{path}\n\
                     [remote \"origin\"]\n\turl = {url}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
                    path = s.path,
                    url = config_value(&s.url),
                ),
            )?;
            for d in ["refs/heads", "refs/tags", "objects/info", "info"] {
                let p = dir.join(d);
                std::fs::create_dir_all(&p).map_err(|e| io(&p, e))?;
            }
        }
    }
    Ok(())
}

/// A value for a git config file: quoted, with `"` and `\` escaped.
fn config_value(v: &str) -> String {
    format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Single-quoted for `sh`.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// `find` arguments that keep out the work trees of the submodules `subs` holds (their files
/// keep the modes git gives them, as after the official `chmod -R 777` that came before the
/// submodule was cloned): `-path /testbed/<path> -prune -o ` each.
pub fn prune_args(repo_dir: &str, subs: &[Submodule]) -> String {
    subs.iter()
        .filter(|s| s.included())
        .map(|s| format!("-path {repo_dir}/{} -prune -o ", s.path))
        .collect()
}

/// The shell steps, run in the repository after its checkout, that make each submodule `subs`
/// holds what `git submodule update --init` leaves (on top of `parent`'s): `active` and `url`
/// in the superproject's config, the work tree's `.git` file, the checkout at the gitlink (of
/// only what changed, for a submodule the parent image holds); and an `echo` naming each one
/// left out, for the build log. Each step starts with ` && `.
pub fn run_steps(subs: &[Submodule], parent: &[Submodule]) -> String {
    let mut out = String::new();
    for s in subs {
        let Some(why) = &s.left_out else {
            continue;
        };
        out.push_str(&format!(
            " && echo {}",
            sh_quote(&format!(
                "swe-eval: submodule {} ({}) at {} not checked out: {why}",
                s.path, s.url, s.commit
            ))
        ));
    }
    for s in subs.iter().filter(|s| s.included()) {
        let (name, path, c) = (&s.name, &s.path, &s.commit);
        match in_parent(s, parent) {
            Some(p) if p.commit == *c => {}
            Some(_) => out.push_str(&format!(
                " && git -C {path} -c core.logAllRefUpdates=false -c advice.detachedHead=false checkout -q --detach {c}"
            )),
            None => {
                let up = "../".repeat(path.split('/').count());
                out.push_str(&format!(
                    " && git config submodule.{name}.active true \
                     && git config submodule.{name}.url {url} \
                     && mkdir -p {path} && echo 'gitdir: {up}.git/modules/{name}' > {path}/.git \
                     && git -C {path} -c core.logAllRefUpdates=false reset -q --hard {c}",
                    url = sh_quote(&s.url),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_github_repositories_relative_ones_against_the_superproject() {
        let r = |u: &str| github_repo(u, "astropy/astropy");
        let helpers = "astropy/astropy-helpers".to_string();
        for u in [
            "https://github.com/astropy/astropy-helpers.git",
            "https://github.com/astropy/astropy-helpers",
            "git://github.com/astropy/astropy-helpers.git",
            "git@github.com:astropy/astropy-helpers.git",
            "ssh://git@github.com/astropy/astropy-helpers.git/",
        ] {
            assert_eq!(r(u), Some((helpers.clone(), u.to_string())), "{u}");
        }
        assert_eq!(
            r("../astropy-helpers.git"),
            Some((
                helpers.clone(),
                "https://github.com/astropy/astropy-helpers.git".to_string()
            ))
        );
        assert_eq!(r("../../other/x").map(|x| x.0), Some("other/x".to_string()));
        for u in [
            "https://gitlab.com/a/b.git",
            "https://github.com/a",
            "https://github.com/a/b/c",
            "../../../x",
            "./sub",
            "/srv/git/x",
            "https://github.com/a/..",
        ] {
            assert_eq!(r(u), None, "{u}");
        }
    }

    #[test]
    fn names_and_paths_that_leave_the_repository_are_refused() {
        for ok in ["astropy_helpers", "deps/helpers", "a.b-c"] {
            assert!(safe_relative(ok), "{ok}");
        }
        for bad in [
            "", "..", "a/../b", "/abs", "a//b", "-x", "a b", "a'b", "a\nb", "x/.",
        ] {
            assert!(!safe_relative(bad), "{bad:?}");
        }
    }

    fn sub(name: &str, commit: &str, included: bool) -> Submodule {
        Submodule {
            name: name.into(),
            path: name.into(),
            url: format!("https://github.com/o/{name}.git"),
            commit: commit.into(),
            repo: Some(format!("o/{name}")),
            tags: Vec::new(),
            left_out: (!included).then(|| "no".to_string()),
        }
    }

    #[test]
    fn a_child_stands_on_a_parent_whose_submodules_it_holds_at_the_same_or_a_later_commit() {
        // "a" is an ancestor of "b" in o/h; "c" is on another line.
        let anc = |r: &str, a: &str, b: &str| r == "o/h" && a == "a" && b == "b";
        let p = [sub("h", "a", true)];
        assert!(fits(&p, &[sub("h", "a", true)], anc), "same gitlink");
        assert!(fits(&p, &[sub("h", "b", true)], anc), "moved forward");
        assert!(!fits(&p, &[sub("h", "c", true)], anc), "not a descendant");
        assert!(!fits(&p, &[], anc), "gone in the child");
        assert!(
            !fits(&p, &[sub("h", "a", false)], anc),
            "left out in the child"
        );
        assert!(fits(&[sub("h", "a", false)], &[], anc), "nothing held");
        assert!(fits(&[], &[sub("h", "c", true)], anc), "new in the child");
        let mut moved = sub("h", "a", true);
        moved.path = "elsewhere".into();
        assert!(!fits(&p, &[moved], anc), "another path");
    }

    #[test]
    fn run_steps_initialize_new_submodules_check_out_moved_ones_and_name_those_left_out() {
        let parent = [sub("kept", "k1", true), sub("moved", "m1", true)];
        let mut nested = sub("deps/new", "n1", true);
        nested.url = "https://github.com/o/it's.git".into();
        let subs = [
            sub("kept", "k1", true),
            sub("moved", "m2", true),
            nested,
            sub("gone", "g1", false),
        ];
        let steps = run_steps(&subs, &parent);
        assert!(!steps.contains("-C kept"), "{steps}");
        assert!(steps.contains(
            " && git -C moved -c core.logAllRefUpdates=false -c advice.detachedHead=false checkout -q --detach m2"
        ));
        assert!(
            steps.contains(
                " && git config submodule.deps/new.active true \
             && git config submodule.deps/new.url 'https://github.com/o/it'\\''s.git' \
             && mkdir -p deps/new && echo 'gitdir: ../../.git/modules/deps/new' > deps/new/.git \
             && git -C deps/new -c core.logAllRefUpdates=false reset -q --hard n1"
            ),
            "{steps}"
        );
        assert!(steps.contains(
            "echo 'swe-eval: submodule gone (https://github.com/o/gone.git) at g1 not checked out: no'"
        ));
        assert_eq!(
            prune_args("/testbed", &subs),
            "-path /testbed/kept -prune -o -path /testbed/moved -prune -o -path /testbed/deps/new -prune -o "
        );
    }
}
