//! Shared repository history on the real daemon: instance images of one repository stand on a
//! chain of history images (one per base commit), and each holds its base commit checked out,
//! no object of a later commit (reachable or not), the tags of its ancestors and no later one;
//! images of one repository share their history layers, a release line forks the chain, and
//! a full chain starts a new root.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use swe_eval::engine::tarball::Entry;
use swe_eval::engine::Engine;
use swe_eval::images::{
    cleanup, ensure, BaseOptions, BaseRecipe, BuildChain, BuildOptions, CacheLevel, EnvRecipe,
    ImagePlan, InstanceImages, InstanceRecipe, RepoCache, RepoSources,
};
use swe_eval::spec::DebianRelease;

use crate::common::git;
use crate::engine::{base_image, engine, job, run_id};

/// Commits with fixed dates (so the newer-tag rule is exercised on known dates).
fn commit(dir: &Path, name: &str, day: u32) -> String {
    std::fs::write(dir.join(format!("{name}.txt")), name).unwrap();
    git(dir, &["add", "."]);
    let date = format!("2020-01-{day:02} 12:00:00 +0000");
    let out = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c"])
        .args(["commit.gpgsign=false", "commit", "-q", "-m", name])
        .env("GIT_COMMITTER_DATE", &date)
        .env("GIT_AUTHOR_DATE", &date)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    git(dir, &["rev-parse", "HEAD"])
}

/// main: c1 (v0) - c2 (v1, annotated) - c3 - c4 (v2) - c5 (v9); release: c2 - r1 (vr).
fn upstream(root: &Path) -> (std::path::PathBuf, BTreeMap<&'static str, String>) {
    let up = root.join("upstream");
    std::fs::create_dir_all(&up).unwrap();
    git(&up, &["init", "-q", "-b", "main"]);
    let mut c = BTreeMap::new();
    c.insert("c1", commit(&up, "c1", 1));
    git(&up, &["tag", "v0"]);
    c.insert("c2", commit(&up, "c2", 2));
    git(&up, &["tag", "-a", "-m", "one", "v1"]);
    git(&up, &["checkout", "-q", "-b", "release"]);
    c.insert("r1", commit(&up, "r1", 3));
    git(&up, &["tag", "vr"]);
    git(&up, &["checkout", "-q", "main"]);
    c.insert("c3", commit(&up, "c3", 4));
    c.insert("c4", commit(&up, "c4", 5));
    git(&up, &["tag", "v2"]);
    c.insert("c5", commit(&up, "c5", 6));
    git(&up, &["tag", "v9"]);
    (up, c)
}

fn layers(image: &str) -> Vec<String> {
    let out = Command::new("docker")
        .args(["image", "inspect", "-f", "{{json .RootFS.Layers}}", image])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn shared(a: &[String], b: &[String]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[tokio::test]
async fn instance_images_share_history_layers_and_hold_nothing_newer_than_their_base() {
    let Some(e) = engine().await else { return };
    base_image().await;
    let tmp = tempfile::tempdir().unwrap();
    let (up, c) = upstream(tmp.path());
    let alias = "swe-eval-it/base:bookworm".to_string();
    let env = "swe-eval-it/env.hist:it".to_string();
    // (instance, base) ; c and d share a base, f is on the release line.
    let wanted = [
        ("a", "c1"),
        ("b", "c2"),
        ("c", "c3"),
        ("d", "c3"),
        ("e", "c4"),
        ("f", "r1"),
    ];
    let leaf = |id: &str| format!("swe-eval-it/hist.{id}:it");
    // Fixed names and leftovers of a run that died before its cleanup, cleared first.
    let leftovers = Command::new("docker")
        .args(["images", "--format", "{{.Repository}}:{{.Tag}}"])
        .arg("swe-eval.history.local__hist")
        .output()
        .unwrap();
    let leftovers = String::from_utf8_lossy(&leftovers.stdout).into_owned();
    for id in wanted
        .iter()
        .map(|(i, _)| leaf(i))
        .chain([env.clone()])
        .chain(leftovers.lines().map(str::to_string))
    {
        e.remove_image(&id).await.unwrap();
    }
    let chain = |id: &str| {
        BuildChain {
        base: BaseRecipe::Debian {
            release: DebianRelease::Bookworm,
            alias: alias.clone(),
        },
        env: EnvRecipe {
            tag: env.clone(),
            dockerfile: format!("FROM {alias}\nCOPY setup_env.sh /root/\nRUN /bin/sh /root/setup_env.sh\n"),
            files: vec![Entry {
                path: "setup_env.sh".into(),
                contents: b"echo env-ready\n".to_vec(),
                mode: 0o755,
            }],
        },
        instance: InstanceRecipe {
            tag: leaf(id),
            dockerfile: format!(
                "FROM {env}\nCOPY setup_repo.sh /root/\nRUN /bin/bash /root/setup_repo.sh\nWORKDIR /testbed/\n"
            ),
            files: vec![Entry {
                path: "setup_repo.sh".into(),
                // The Debian repo script's checkout steps must rewrite no file of the history
                // image (each one rewritten would be copied up into this layer).
                contents: format!(
                    "set -e\necho {id} > /root/instance\ncd /testbed\n\
                     stat -c '%n %i %Y.%y %Z' c1.txt > /root/before\n\
                     git -c core.fileMode=false update-index -q --refresh\n\
                     git -c core.fileMode=false checkout -q -f HEAD\n\
                     git -c core.fileMode=false reset -q --hard HEAD\n\
                     find /testbed ! -type l ! -perm 777 -exec chmod 777 {{}} +\n\
                     stat -c '%n %i %Y.%y %Z' c1.txt > /root/after\n"
                )
                .into_bytes(),
                mode: 0o755,
            }],
            needs_repo: true,
            network: false,
        },
    }
    };
    let plan = ImagePlan {
        instances: wanted
            .iter()
            .map(|(id, base)| InstanceImages {
                instance_id: id.to_string(),
                repo: "local/hist".into(),
                base_commit: c[base].clone(),
                prebuilt: None,
                build: Some(chain(id)),
            })
            .collect(),
    };
    let mut sources = RepoSources::default();
    sources
        .add_override(&format!("local/hist={}", up.display()))
        .unwrap();
    let opts = BuildOptions {
        logs_dir: tmp.path().join("out/logs/build_images"),
        repos: RepoCache::new(tmp.path().join("repo-cache"), sources),
        base: BaseOptions::default(),
        parallel: 2,
        // Short chains: c1 - c2 - c3 is full, so c4 starts a new one.
        history_chain: 3,
    };
    let prepared = ensure(&e, &plan, &opts).await;
    assert!(prepared.failed.is_empty(), "{:?}", prepared.failed);

    let expect_tags = BTreeMap::from([
        ("c1", "v0"),
        ("c2", "v0 v1"),
        ("c3", "v0 v1"),
        ("c4", "v0 v1 v2"),
        ("r1", "v0 v1 vr"),
    ]);
    for (id, base) in wanted {
        let image = &prepared.images[id];
        assert_eq!(image, &leaf(id));
        let out = e
            .run_job(job(
                image,
                &run_id(&format!("hist-{id}")),
                // find first: git status rewrites the index.
                "cd /testbed && find /testbed ! -type l ! -perm 777 | wc -l \
                 && git rev-parse HEAD && git -c core.fileMode=false status --porcelain | wc -l \
                 && git tag -l | xargs && ls | xargs && cat /root/instance \
                 && cmp /root/before /root/after && echo untouched \
                 && echo --- && git rev-list --all && echo --- \
                 && git cat-file --batch-all-objects --batch-check='%(objectname)'",
            ))
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&out.output).into_owned();
        assert_eq!(out.exit_code, Some(0), "{text}");
        let mut parts = text.split("---\n");
        let head: Vec<&str> = parts.next().unwrap().lines().collect();
        assert_eq!(head[0], "0", "{id}: everything writable by all");
        assert_eq!(head[1], c[base], "{id}: base checked out");
        assert_eq!(head[2], "0", "{id}: clean work tree");
        assert_eq!(
            head[3], expect_tags[base],
            "{id}: older tags kept, newer absent"
        );
        let files: Vec<String> = git(&up, &["ls-tree", "--name-only", &c[base]])
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(head[4], files.join(" "), "{id}: work tree of its base");
        assert_eq!(head[5], id, "{id}: its own instance layer");
        assert_eq!(head[6], "untouched", "{id}: the repo script rewrote a file");
        let reachable: BTreeSet<&str> = parts.next().unwrap().lines().collect();
        let ancestors = git(&up, &["rev-list", &c[base]]);
        assert_eq!(
            reachable,
            ancestors.lines().collect::<BTreeSet<_>>(),
            "{id}: only the base and its ancestors reachable"
        );
        // Not even unreachable objects of later commits: every object is the base's history
        // or a kept tag.
        let mut allowed: BTreeSet<String> = git(&up, &["rev-list", "--objects", &c[base]])
            .lines()
            .map(|l| l.split(' ').next().unwrap().to_string())
            .collect();
        for t in expect_tags[base].split(' ') {
            allowed.insert(git(&up, &["rev-parse", t]));
        }
        for o in parts.next().unwrap().lines() {
            assert!(
                allowed.contains(o),
                "{id}: object {o} is not in {base}'s history"
            );
        }
    }

    // The Debian repo script's setup commit (modes staged alone, then `commit -a`) touches no
    // pack: git "freshens" a pack holding an object it would write, and a touched pack is
    // copied up whole into the instance's layer.
    let out = e
        .run_job(job(
            &prepared.images["c"],
            &run_id("hist-freshen"),
            "cd /testbed && git -c core.fileMode=false update-index -q --refresh \
             && find /testbed ! -type l ! -perm 777 -exec chmod 777 {} + \
             && stat -c '%n %y' .git/objects/pack/*.pack > /tmp/before \
             && git ls-files -z -s | { grep -z '^100644' || true; } \
                | sed -z 's/^100644/100755/' \
                | git update-index -z --index-info && git update-index -q --refresh \
             && git -c user.name=t -c user.email=t@t commit -q --allow-empty -am setup \
             && git ls-tree -r HEAD | cut -c1-6 | sort -u | xargs \
             && stat -c '%n %y' .git/objects/pack/*.pack > /tmp/after \
             && cmp /tmp/before /tmp/after && echo packs-untouched",
        ))
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.output).into_owned();
    assert_eq!(text, "100755\npacks-untouched\n", "{text}");

    // Layers: every image starts with the environment's; a step adds two.
    let env_n = layers(&env).len();
    let l: BTreeMap<&str, Vec<String>> = wanted
        .iter()
        .map(|(id, _)| (*id, layers(&leaf(id))))
        .collect();
    assert_eq!(
        shared(&l["a"], &l["b"]),
        env_n + 2,
        "b stands on a's history (c1)"
    );
    assert_eq!(
        shared(&l["b"], &l["c"]),
        env_n + 4,
        "c stands on b's (c1, c2)"
    );
    assert_eq!(
        shared(&l["c"], &l["d"]),
        env_n + 6,
        "same base: one history image, then their own layers"
    );
    assert_eq!(
        shared(&l["c"], &l["f"]),
        env_n + 4,
        "the release line forks after c2"
    );
    assert_eq!(
        shared(&l["e"], &l["c"]),
        env_n,
        "c4 is a new root: the chain was full"
    );
    assert_eq!(
        l["e"].len(),
        env_n + 2 + 2,
        "a root is two layers, then its own two"
    );

    // The history images go with the instance images they were built for.
    let errors = cleanup(&e, &prepared, CacheLevel::Env).await.errors;
    assert!(errors.is_empty(), "{errors:?}");
    for (name, _) in prepared.created.iter().filter(|(n, _)| n != &env) {
        assert!(!e.image_exists(name).await.unwrap(), "{name} removed");
    }
    e.remove_image(&env).await.unwrap();
}
