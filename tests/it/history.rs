//! Shared repository history on the real daemon: instance images of one repository stand on a
//! chain of history images (one per base commit), and each holds its base commit checked out,
//! no object of a later commit (reachable or not), the tags of its ancestors and no later one;
//! images of one repository share their history layers, a release line forks the chain, and
//! a full chain starts a new root; the repo script's setup commit copies no pack up into the
//! instance's layer, not even through a directory of executables whose tree it writes again.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use swe_eval::engine::Engine;
use swe_eval::engine::TarEntry;
use swe_eval::images::{
    cleanup, ensure, BaseOptions, BaseRecipe, BuildChain, BuildOptions, CacheLevel, EnvRecipe,
    ImagePlan, InstanceImages, InstanceRecipe, RepoCache, RepoSources,
};
use swe_eval_core::spec::DebianRelease;

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

/// Bytes no compression shrinks (xorshift), so a pack holding them is at least that big.
fn noise(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// The size of the big file in c1: what a pack copied up would weigh at least.
const NOISE: usize = 4 << 20;

/// main: c1 (v0) - c2 (v1, annotated) - c3 - c4 (v2) - c5 (v9); release: c2 - r1 (vr). c1
/// also adds `bin/` and `tools/` (executables only), and a big incompressible file (so the
/// root's pack is big); c2 makes `tools/` plain files, so the setup commit on c2 and later,
/// which makes every file executable, writes `tools/`'s tree of c1 again (it already exists:
/// git touches the pack holding it).
fn upstream(root: &Path) -> (std::path::PathBuf, BTreeMap<&'static str, String>) {
    use std::os::unix::fs::PermissionsExt;
    let up = root.join("upstream");
    std::fs::create_dir_all(up.join("bin")).unwrap();
    git(&up, &["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(up.join("tools")).unwrap();
    for name in ["bin/run", "bin/check", "tools/make.sh"] {
        std::fs::write(up.join(name), format!("#!/bin/sh\necho {name}\n")).unwrap();
        std::fs::set_permissions(up.join(name), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::write(up.join("noise.bin"), noise(NOISE)).unwrap();
    let mut c = BTreeMap::new();
    c.insert("c1", commit(&up, "c1", 1));
    git(&up, &["tag", "v0"]);
    let plain = std::fs::Permissions::from_mode(0o644);
    std::fs::set_permissions(up.join("tools/make.sh"), plain).unwrap();
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

/// The plan of `wanted` (`(instance, base commit)`) of repository `repo`, taken from the local
/// clone `up`, each built by `chain`, and the build options (under `tmp`, `parallel` builds at
/// once, chains of at most `history_chain`).
pub fn local_plan(
    tmp: &Path,
    repo: &str,
    up: &Path,
    wanted: &[(&str, String)],
    chain: impl Fn(&str) -> BuildChain,
    parallel: usize,
    history_chain: usize,
) -> (ImagePlan, BuildOptions) {
    let plan = ImagePlan {
        instances: wanted
            .iter()
            .map(|(id, base)| InstanceImages {
                instance_id: id.to_string(),
                repo: repo.into(),
                base_commit: base.clone(),
                prebuilt: None,
                build: Some(chain(id)),
            })
            .collect(),
    };
    let mut sources = RepoSources::default();
    sources
        .add_override(&format!("{repo}={}", up.display()))
        .unwrap();
    let opts = BuildOptions {
        logs_dir: tmp.join("out/logs/build_images"),
        repos: RepoCache::new(tmp.join("repo-cache"), sources),
        base: BaseOptions::default(),
        parallel,
        history_chain,
        hooks: Default::default(),
    };
    (plan, opts)
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
    let mut leftovers = String::new();
    for reference in ["swe-eval.history.local__hist", "swe-eval-it/hist.*"] {
        let out = Command::new("docker")
            .args(["images", "--format", "{{.Repository}}:{{.Tag}}"])
            .arg("--filter")
            .arg(format!("reference={reference}"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        leftovers.push_str(&String::from_utf8_lossy(&out.stdout));
    }
    for id in leftovers.lines().map(str::to_string).chain([env.clone()]) {
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
            files: vec![TarEntry {
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
            files: vec![TarEntry {
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
                     stat -c '%n %i %Y.%y %Z' c1.txt > /root/after\n\
                     git config core.fileMode false\n\
                     git update-index -q --refresh || true\n\
                     git -c user.name=t -c user.email=t@t commit -q --allow-empty -am setup\n"
                )
                .into_bytes(),
                mode: 0o755,
            }],
            needs_repo: true,
            network: false,
            compiler_cache: false,
        },
    }
    };
    let bases: Vec<(&str, String)> = wanted.iter().map(|(id, b)| (*id, c[b].clone())).collect();
    // Short chains: c1 - c2 - c3 is full (a root counts two packs), so c4 starts a new one.
    let (plan, opts) = local_plan(tmp.path(), "local/hist", &up, &bases, chain, 2, 4);
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
        assert!(
            image.starts_with(&format!("swe-eval-it/hist.{id}:")) && image != &leaf(id),
            "{id}: named after its recipe and its history image: {image}"
        );
        let out = e
            .run_job(job(
                image,
                &run_id(&format!("hist-{id}")),
                // find first: git status rewrites the index.
                // The work tree and the packs; the setup commit's own files (index, loose
                // objects, logs) come after the chmod, as in the repo script.
                "cd /testbed && find /testbed /testbed/.git/objects/pack -path /testbed/.git -prune \
                   -o ! -type l ! -perm 777 -print | wc -l \
                 && git rev-parse HEAD~1 && git -c core.fileMode=false status --porcelain | wc -l \
                 && git tag -l | xargs && ls | xargs && cat /root/instance \
                 && cmp /root/before /root/after && echo untouched \
                 && git log -1 --format=%s && git ls-tree -r HEAD | cut -c1-6 | sort -u | xargs \
                 && echo --- && git rev-list --all && echo --- \
                 && git cat-file --batch-all-objects --batch-check='%(objectname)' \
                 && echo --- && git rev-parse HEAD && git rev-list --objects HEAD ^HEAD~1 | cut -c1-40",
            ))
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&out.output).into_owned();
        assert_eq!(out.exit_code, Some(0), "{text}");
        let mut parts = text.split("---\n");
        let head: Vec<&str> = parts.next().unwrap().lines().collect();
        assert_eq!(head[0], "0", "{id}: everything writable by all");
        assert_eq!(
            head[1], c[base],
            "{id}: base checked out, then the setup commit"
        );
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
        let mut modes: Vec<String> = git(&up, &["ls-tree", "-r", &c[base]])
            .lines()
            .map(|l| l[..6].to_string())
            .collect();
        modes.sort();
        modes.dedup();
        assert_eq!(
            (head[7], head[8]),
            ("setup", modes.join(" ").as_str()),
            "{id}: every file recorded with the repository's own mode, as officially"
        );
        let reachable: BTreeSet<&str> = parts.next().unwrap().lines().collect();
        let objects = parts.next().unwrap();
        let mut setup = parts.next().unwrap().lines();
        let setup_commit = setup.next().unwrap();
        let ancestors = git(&up, &["rev-list", &c[base]]);
        let mut expected: BTreeSet<&str> = ancestors.lines().collect();
        expected.insert(setup_commit);
        assert_eq!(
            reachable, expected,
            "{id}: only the base, its ancestors and the setup commit reachable"
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
        allowed.extend(setup.map(str::to_string));
        for o in objects.lines() {
            assert!(
                allowed.contains(o),
                "{id}: object {o} is not in {base}'s history"
            );
        }
    }

    // No pack copied up into an instance's layer: git "freshens" (touches) the pack holding
    // any object it writes again, such as `bin/`'s tree (all executable) that the setup
    // commit writes, and overlay copies a touched file up whole. The layer of the repo script
    // stays far smaller than the root's pack (the big file), which a copy-up would add.
    let rows = |image: &str| -> Vec<(u64, String)> {
        let out = Command::new("docker")
            .args(["history", "-H=false", "--no-trunc", "--format"])
            .args(["{{.Size}}\t{{.CreatedBy}}", image])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                let (size, by) = l.split_once('\t').unwrap();
                (size.parse().unwrap(), by.to_string())
            })
            .collect()
    };
    let copied_in = rows(&prepared.images["a"])
        .into_iter()
        .filter(|(_, by)| by.contains("COPY dir:"))
        .map(|(size, _)| size)
        .max()
        .unwrap();
    assert!(
        copied_in >= NOISE as u64,
        "the root's pack: {copied_in} bytes"
    );
    for (id, _) in wanted {
        let setup: Vec<u64> = rows(&prepared.images[id])
            .into_iter()
            .filter(|(_, by)| by.contains("/root/setup_repo.sh") && by.contains("bash"))
            .map(|(size, _)| size)
            .collect();
        assert_eq!(setup.len(), 1, "{id}: one repo script layer");
        assert!(
            setup[0] < 256 << 10,
            "{id}: the repo script's layer is {} bytes: a pack was copied up",
            setup[0]
        );
    }

    // An agent's commit in a job touches no big pack either (only the small pack of the
    // trees a commit writes again, or loose objects).
    let out = e
        .run_job(job(
            &prepared.images["c"],
            &run_id("hist-freshen"),
            "cd /testbed && touch /tmp/mark && sleep 1 \
             && git -c user.name=t -c user.email=t@t commit -q --allow-empty -am again \
             && find .git/objects/pack -name '*.pack' -newer /tmp/mark -size +64k | wc -l",
        ))
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.output).into_owned();
    assert_eq!(text, "0\n", "{text}");

    // Layers: every image starts with the environment's; a step adds two.
    let env_n = layers(&env).len();
    let l: BTreeMap<&str, Vec<String>> = wanted
        .iter()
        .map(|(id, _)| (*id, layers(&prepared.images[*id])))
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

/// `helpers`: h1 (hv1) - h2 (hv2) - h3 (hv3), dated 2020-01-01 to 03.
fn helpers_repo(root: &Path) -> (std::path::PathBuf, Vec<String>) {
    let h = root.join("helpers");
    std::fs::create_dir_all(&h).unwrap();
    git(&h, &["init", "-q", "-b", "main"]);
    let commits = (1..=3)
        .map(|i| {
            std::fs::write(h.join(format!("h{i}.py")), format!("H = {i}\n")).unwrap();
            let c = commit(&h, &format!("h{i}"), i);
            git(&h, &["tag", &format!("hv{i}")]);
            c
        })
        .collect();
    (h, commits)
}

/// The mini benchmark's `calc` (run here as `swe-eval-mini/subm`, so that this test's images
/// have names of their own) with two commits on its first task's base: s1 adds submodule
/// `helpers` (URL on GitHub, given here by `--repo`) at h1 and `third/vendored` (URL nowhere
/// the sources reach), s2 moves `helpers` to h2. Returns the clone and (s1, s2).
fn calc_with_submodules(
    root: &Path,
    base: &str,
    h: &[String],
) -> (std::path::PathBuf, [String; 2]) {
    let bench = swe_eval_core::mini::materialize(&root.join("mini")).unwrap();
    let calc = root.join("calc");
    let bundle = bench
        .mirrors
        .join(swe_eval_core::mini::mirror_file_name("calc"));
    let out = Command::new("git")
        .args(["clone", "-q"])
        .arg(&bundle)
        .arg(&calc)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    git(&calc, &["checkout", "-q", "-B", "with-submodules", base]);
    std::fs::write(
        calc.join(".gitmodules"),
        "[submodule \"helpers\"]\n\tpath = helpers\n\turl = https://github.com/swe-eval-mini/helpers.git\n\
         [submodule \"vendored\"]\n\tpath = third/vendored\n\turl = https://example.invalid/vendored.git\n",
    )
    .unwrap();
    git(&calc, &["add", ".gitmodules"]);
    let link = |path: &str, c: &str| {
        let info = format!("160000,{c},{path}");
        git(&calc, &["update-index", "--add", "--cacheinfo", &info]);
    };
    link("helpers", &h[0]);
    link("third/vendored", &h[0]);
    git(&calc, &["commit", "-q", "-m", "s1: submodules"]);
    let s1 = git(&calc, &["rev-parse", "HEAD"]);
    link("helpers", &h[1]);
    git(&calc, &["commit", "-q", "-m", "s2: helpers moved on"]);
    let s2 = git(&calc, &["rev-parse", "HEAD"]);
    (calc, [s1, s2])
}

/// A submodule whose repository the sources give is in the instance image as `git submodule
/// update --init` leaves it, through the real Debian recipe (history image, then the repo
/// script with its chmod and setup commit): `git submodule status` with a blank prefix,
/// `git status` clean, the superproject's config naming it, its git directory under
/// `.git/modules` holding its gitlink commit's history and nothing newer, its files at git's
/// modes; one the sources cannot give is left uninitialized and named in the build log; the
/// step to a later gitlink checks it out on its parent's image.
#[tokio::test]
async fn submodules_from_the_sources_are_in_the_image_as_git_submodule_update_leaves_them() {
    use swe_eval::images::{plan, PlanOptions};
    use swe_eval_core::dataset::Instance;
    use swe_eval_core::spec::{Flavour, SpecOptions, TestSpec};
    let Some(e) = engine().await else { return };
    base_image().await;
    // Leftovers of a run that died before its cleanup (this test's own names), cleared first.
    for reference in [
        "swe-eval.history.swe-eval-mini__subm",
        "swe-eval.eval.*.swe-eval-mini__subm-*",
    ] {
        let out = Command::new("docker")
            .args(["images", "--format", "{{.Repository}}:{{.Tag}}", "--filter"])
            .arg(format!("reference={reference}"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        for image in String::from_utf8_lossy(&out.stdout).lines() {
            e.remove_image(image).await.unwrap();
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let (helpers, h) = helpers_repo(tmp.path());
    let row = swe_eval_core::mini::DATASET
        .lines()
        .find(|l| l.contains("\"swe-eval-mini__calc-1\""))
        .unwrap();
    let mut row: serde_json::Value = serde_json::from_str(row).unwrap();
    let base = row["base_commit"].as_str().unwrap().to_string();
    let (calc, s) = calc_with_submodules(tmp.path(), &base, &h);
    let specs: Vec<TestSpec> = s
        .iter()
        .enumerate()
        .map(|(i, commit)| {
            row["instance_id"] = format!("swe-eval-mini__subm-{}", i + 1).into();
            row["repo"] = "swe-eval-mini/subm".into();
            row["base_commit"] = commit.clone().into();
            let inst: Instance = serde_json::from_value(row.clone()).unwrap();
            TestSpec::with_options(&inst, &SpecOptions::new(Flavour::Debian)).unwrap()
        })
        .collect();
    let mut sources = RepoSources::default();
    for (repo, dir) in [("subm", &calc), ("helpers", &helpers)] {
        sources
            .add_override(&format!("swe-eval-mini/{repo}={}", dir.display()))
            .unwrap();
    }
    let logs = tmp.path().join("out/logs/build_images");
    let opts = BuildOptions {
        logs_dir: logs.clone(),
        repos: RepoCache::new(tmp.path().join("repo-cache"), sources),
        base: BaseOptions::default(),
        parallel: 2,
        history_chain: swe_eval::images::MAX_CHAIN,
        hooks: Default::default(),
    };
    let prepared = ensure(&e, &plan(&specs, &PlanOptions::default()), &opts).await;
    assert!(prepared.failed.is_empty(), "{:?}", prepared.failed);

    let objects = |r: &str| -> BTreeSet<String> {
        git(&helpers, &["rev-list", "--objects", r])
            .lines()
            .map(|l| l[..40].to_string())
            .collect()
    };
    for (i, spec) in specs.iter().enumerate() {
        let id = &spec.instance_id;
        let out = e
            .run_job(job(
                &prepared.images[id],
                &run_id(&format!("subm-{i}")),
                "cd /testbed && git submodule status && echo --- && git status --porcelain \
                 && echo --- && git config submodule.helpers.url && git config submodule.helpers.active \
                 && cat helpers/.git && stat -c %a helpers/h1.py && git -C helpers rev-parse HEAD \
                 && git -C helpers tag -l | xargs && git -C helpers for-each-ref --format='%(refname)' | xargs \
                 && echo --- && git -C helpers rev-list --all && echo --- \
                 && git -C helpers cat-file --batch-all-objects --batch-check='%(objectname)' \
                 && echo --- && ls -A third/vendored | wc -l",
            ))
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&out.output).into_owned();
        assert_eq!(out.exit_code, Some(0), "{id}: {text}");
        let parts: Vec<&str> = text.split("---\n").collect();
        let gitlink = &h[i];
        assert_eq!(
            parts[0],
            format!(
                " {gitlink} helpers (hv{})\n-{} third/vendored\n",
                i + 1,
                h[0]
            ),
            "{id}: helpers initialized and up to date, vendored not"
        );
        assert_eq!(
            parts[1], "",
            "{id}: git status clean after the setup commit"
        );
        let info: Vec<&str> = parts[2].lines().collect();
        let tags: Vec<String> = (1..=i + 1).map(|t| format!("hv{t}")).collect();
        assert_eq!(
            info,
            [
                "https://github.com/swe-eval-mini/helpers.git",
                "true",
                "gitdir: ../.git/modules/helpers",
                "644",
                gitlink.as_str(),
                &tags.join(" "),
                &tags
                    .iter()
                    .map(|t| format!("refs/tags/{t}"))
                    .collect::<Vec<_>>()
                    .join(" "),
            ],
            "{id}"
        );
        let reachable: BTreeSet<&str> = parts[3].lines().collect();
        let history = git(&helpers, &["rev-list", gitlink]);
        assert_eq!(
            reachable,
            history.lines().collect(),
            "{id}: only the gitlink's history"
        );
        let mut allowed = objects(gitlink);
        allowed.extend(tags.iter().map(|t| git(&helpers, &["rev-parse", t])));
        for o in parts[4].lines() {
            assert!(
                allowed.contains(o),
                "{id}: object {o} is not in the gitlink's history"
            );
        }
        assert_eq!(parts[5].trim(), "0", "{id}: vendored left as it was");
    }

    // s2's history image is a step on s1's (its gitlink moved forward): two layers more.
    let (l1, l2) = (
        layers(&prepared.images[&specs[0].instance_id]),
        layers(&prepared.images[&specs[1].instance_id]),
    );
    assert_eq!(shared(&l1, &l2), layers(&specs[0].env_image_tag).len() + 2);

    // Each history image's build log names the submodule it left out.
    let mut named = 0;
    for entry in walk(&logs) {
        let text = std::fs::read_to_string(&entry).unwrap_or_default();
        if text
            .contains("swe-eval: submodule third/vendored (https://example.invalid/vendored.git)")
        {
            named += 1;
        }
    }
    assert!(
        named >= 1,
        "no build log under {} names vendored",
        logs.display()
    );

    let errors = cleanup(&e, &prepared, CacheLevel::Env).await.errors;
    assert!(errors.is_empty(), "{errors:?}");
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}
