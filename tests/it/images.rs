//! The image plan on the real daemon: the offline base image, environment and instance images
//! built from a local git repository (history after the base commit removed), a failed build
//! failing only its instances with the log saved, cache-level cleanup, and a prebuilt official
//! image pulled from a local registry (Debian's `docker-registry` on loopback) through a
//! namespace override.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use swe_eval::engine::TarEntry;
use swe_eval::engine::{DockerEngine, Engine, LABEL_TOOL};
use swe_eval::images::{
    base_image_name, cleanup, ensure, BaseOptions, BaseRecipe, BuildChain, BuildOptions,
    CacheLevel, EnvRecipe, ImagePlan, InstanceImages, InstanceRecipe, Layer, RepoCache,
    RepoSources, LABEL_LAYER,
};
use swe_eval_core::spec::DebianRelease;

use crate::common::git;
use crate::engine::{base_image, engine, job, run_id};

/// A repository with two commits; returns (folder, first commit, second commit).
fn make_repo(root: &Path) -> (std::path::PathBuf, String, String) {
    let dir = root.join("upstream");
    std::fs::create_dir_all(dir.join("pkg")).unwrap();
    git(&dir, &["init", "-q", "-b", "main"]);
    std::fs::write(
        dir.join("pkg/calc.py"),
        "def add(a, b):\n    return a + b\n",
    )
    .unwrap();
    git(&dir, &["add", "."]);
    git(&dir, &["commit", "-q", "-m", "first"]);
    let first = git(&dir, &["rev-parse", "HEAD"]);
    std::fs::write(
        dir.join("pkg/calc.py"),
        "def add(a, b):\n    return b + a  # later\n",
    )
    .unwrap();
    git(&dir, &["commit", "-q", "-am", "second"]);
    let second = git(&dir, &["rev-parse", "HEAD"]);
    (dir, first, second)
}

/// A minimal Debian-flavour chain, rendered here (the spec module renders the real ones).
fn chain(release_alias: &str, env_tag: &str, env_run: &str, inst_tag: &str) -> BuildChain {
    BuildChain {
        base: BaseRecipe::Debian {
            release: DebianRelease::Bookworm,
            alias: release_alias.to_string(),
        },
        env: EnvRecipe {
            tag: env_tag.to_string(),
            dockerfile: format!("FROM {release_alias}\nCOPY setup_env.sh /root/\nRUN {env_run}\n"),
            files: vec![TarEntry {
                path: "setup_env.sh".into(),
                contents: b"echo env-ready\n".to_vec(),
                mode: 0o755,
            }],
        },
        instance: InstanceRecipe {
            tag: inst_tag.to_string(),
            dockerfile: format!("FROM {env_tag}\nWORKDIR /testbed/\n"),
            files: vec![],
            needs_repo: true,
            network: false,
            compiler_cache: false,
        },
    }
}

#[tokio::test]
async fn base_image_is_cached_by_recipe_and_labelled() {
    let Some(e) = engine().await else { return };
    let img = base_image().await;
    assert_eq!(img, base_image_name(DebianRelease::Bookworm));
    assert!(e.image_exists(&img).await.unwrap());
    let listed = e
        .list_images(BTreeMap::from([(
            LABEL_LAYER.to_string(),
            "base".to_string(),
        )]))
        .await
        .unwrap();
    assert!(listed.iter().any(|r| r.name == img), "{listed:?}");
    // A second ensure finds the tag and does nothing.
    let again =
        swe_eval::images::ensure_base(&e, DebianRelease::Bookworm, &[], &BaseOptions::default())
            .await
            .unwrap();
    assert!(!again.built);
    // Python, pytest, git and patch are there, pip may install system-wide.
    let out = e
        .run_job(job(&img, &run_id("basetools"), "python3 -c 'import pytest, sys; print(sys.version_info[:2])'; git --version >/dev/null && patch --version >/dev/null && echo tools-ok; test ! -e /usr/lib/python3.11/EXTERNALLY-MANAGED && echo pip-ok"))
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.output),
        "(3, 11)\ntools-ok\npip-ok\n"
    );
}

#[tokio::test]
async fn env_and_instance_images_from_a_local_repo_and_a_failed_build_fails_only_its_instances() {
    let Some(e) = engine().await else { return };
    base_image().await;
    let tmp = tempfile::tempdir().unwrap();
    let (upstream, first, second) = make_repo(tmp.path());
    // Fixed names, cleared first: a run that died before its cleanup leaves nothing that
    // accumulates, and this run really builds.
    let tag = "it";
    let alias = "swe-eval-it/base:bookworm".to_string();
    for name in ["env.good", "env.bad", "inst.1", "inst.2", "inst.3"] {
        e.remove_image(&format!("swe-eval-it/{name}:{tag}"))
            .await
            .unwrap();
    }
    let good_env = format!("swe-eval-it/env.good:{tag}");
    let bad_env = format!("swe-eval-it/env.bad:{tag}");
    let mut sources = RepoSources::default();
    sources
        .add_override(&format!("local/calc={}", upstream.display()))
        .unwrap();
    let inst = |id: &str, chain: BuildChain| InstanceImages {
        instance_id: id.to_string(),
        repo: "local/calc".into(),
        base_commit: first.clone(),
        prebuilt: None,
        build: Some(chain),
    };
    let plan = ImagePlan {
        instances: vec![
            inst(
                "local__calc-1",
                chain(
                    &alias,
                    &good_env,
                    "/bin/sh /root/setup_env.sh",
                    &format!("swe-eval-it/inst.1:{tag}"),
                ),
            ),
            inst(
                "local__calc-2",
                chain(
                    &alias,
                    &good_env,
                    "/bin/sh /root/setup_env.sh",
                    &format!("swe-eval-it/inst.2:{tag}"),
                ),
            ),
            inst(
                "local__calc-3",
                chain(
                    &alias,
                    &bad_env,
                    "echo about to fail && false",
                    &format!("swe-eval-it/inst.3:{tag}"),
                ),
            ),
        ],
    };
    assert_eq!(
        plan.env_images().get(&good_env),
        Some(&2),
        "shared environment"
    );
    let opts = BuildOptions {
        logs_dir: tmp.path().join("out/logs/build_images"),
        repos: RepoCache::new(tmp.path().join("repo-cache"), sources),
        base: BaseOptions::default(),
        parallel: 2,
        history_chain: swe_eval::images::MAX_CHAIN,
        hooks: Default::default(),
    };
    let prepared = ensure(&e, &plan, &opts).await;

    assert_eq!(prepared.images.len(), 2, "{:?}", prepared.failed);
    let failed = &prepared.failed["local__calc-3"];
    assert_eq!(failed.layer, Layer::Env);
    assert_eq!(failed.image, bad_env);
    let log = std::fs::read_to_string(failed.log_path.as_ref().expect("log saved")).unwrap();
    assert!(log.contains("about to fail"), "{log}");
    assert!(failed
        .log_path
        .as_ref()
        .unwrap()
        .starts_with(tmp.path().join("out/logs/build_images/env")));
    // The good environment was built once for both instances.
    let env_builds = prepared
        .created
        .iter()
        .filter(|(n, _)| n == &good_env)
        .count();
    assert_eq!(env_builds, 1);

    // The instance holds the repository at the base commit with no later history.
    let img1 = &prepared.images["local__calc-1"];
    let out = e
        .run_job(job(img1, &run_id("repo"), "cd /testbed && git log --format=%H && git status --porcelain && cat pkg/calc.py && git rev-parse HEAD"))
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.output);
    assert_eq!(out.exit_code, Some(0), "{text}");
    assert!(!text.contains(&second), "later commit gone: {text}");
    assert_eq!(text.lines().next(), Some(first.as_str()));
    assert!(
        text.contains("return a + b") && !text.contains("later"),
        "{text}"
    );
    assert_eq!(text.lines().last(), Some(first.as_str()), "HEAD exists");
    let labels = e
        .list_images(BTreeMap::from([(
            LABEL_LAYER.to_string(),
            "instance".to_string(),
        )]))
        .await
        .unwrap();
    let mine = labels
        .iter()
        .find(|r| &r.name == img1)
        .expect("labelled instance image");
    assert_eq!(
        mine.labels.get("swe-eval.instance-id").map(String::as_str),
        Some("local__calc-1")
    );
    assert_eq!(mine.labels.get(LABEL_TOOL).map(String::as_str), Some("1"));

    // Cache level `base` keeps the base and removes every env and instance image it built.
    let errors = cleanup(&e, &prepared, CacheLevel::Base).await.errors;
    assert!(errors.is_empty(), "{errors:?}");
    for (name, layer) in &prepared.created {
        assert_eq!(
            e.image_exists(name).await.unwrap(),
            *layer == Layer::Base,
            "{name}"
        );
    }
    assert!(e
        .image_exists(&base_image_name(DebianRelease::Bookworm))
        .await
        .unwrap());
    e.remove_image(&alias).await.unwrap();
}

/// Debian's registry on loopback, stopped when dropped.
struct Registry {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A registry on loopback, or `None` (through the skip helper) when docker-registry is missing.
fn start_registry(port: u16) -> Option<Registry> {
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\n",
        dir.path().join("data").display()
    );
    let cfg = dir.path().join("config.yml");
    std::fs::write(&cfg, config).unwrap();
    let bin = if Path::new("/usr/bin/docker-registry").exists() {
        "/usr/bin/docker-registry"
    } else {
        "docker-registry"
    };
    let child = Command::new(bin)
        .arg("serve")
        .arg(&cfg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{e}; apt-get install docker-registry"));
    let child = crate::common::prerequisite("docker-registry", child)?;
    Some(Registry { child, _dir: dir })
}

fn docker_cli(args: &[&str]) -> String {
    let out = Command::new("docker").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test]
async fn a_prebuilt_row_image_is_pulled_through_a_namespace_override() {
    let Some(e): Option<DockerEngine> = engine().await else {
        return;
    };
    let base = base_image().await;
    let port = 5000 + (std::process::id() % 1000) as u16;
    let Some(_registry) = start_registry(port) else {
        return;
    };
    // Wait (bounded) until the registry answers.
    let ns = format!("127.0.0.1:{port}/swebench");
    let remote = format!("{ns}/sweb.eval.x86_64.x_1776_y:latest");
    docker_cli(&["tag", &base, &remote]);
    let pushed = crate::common::poll_until(Duration::from_secs(10), || {
        Command::new("docker")
            .args(["push", &remote])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    assert!(pushed, "push to the loopback registry");
    docker_cli(&["rmi", &remote]);
    assert!(!e.image_exists(&remote).await.unwrap());

    // A SWE-bench 5 style row names the official image; the namespace override points it at
    // the local registry, and nothing is built.
    let plan_opts = swe_eval::images::PlanOptions {
        namespace: Some(ns.clone()),
        ..Default::default()
    };
    let row_image = swe_eval::images::with_namespace(
        "swebench/sweb.eval.x86_64.x_1776_y:latest",
        plan_opts.namespace.as_deref().unwrap(),
    );
    assert_eq!(row_image, remote);
    let plan = ImagePlan {
        instances: vec![InstanceImages {
            instance_id: "x__y".into(),
            repo: "x/y".into(),
            base_commit: String::new(),
            prebuilt: Some(row_image),
            build: None,
        }],
    };
    let tmp = tempfile::tempdir().unwrap();
    let opts = BuildOptions {
        logs_dir: tmp.path().join("logs"),
        repos: RepoCache::new(tmp.path().join("repos"), RepoSources::default()),
        base: BaseOptions::default(),
        parallel: 1,
        history_chain: swe_eval::images::MAX_CHAIN,
        hooks: Default::default(),
    };
    let prepared = ensure(&e, &plan, &opts).await;
    assert_eq!(
        prepared.images.get("x__y"),
        Some(&remote),
        "{:?}",
        prepared.failed
    );
    assert_eq!(prepared.created, vec![(remote.clone(), Layer::Instance)]);
    assert!(e.image_exists(&remote).await.unwrap());
    let out = e
        .run_job(job(&remote, &run_id("pulled"), "echo in-pulled-image"))
        .await
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.output), "in-pulled-image\n");

    // A missing image with nothing to build fails its instance only, as a pull failure.
    let missing = ImagePlan {
        instances: vec![InstanceImages {
            instance_id: "x__z".into(),
            repo: "x/z".into(),
            base_commit: String::new(),
            prebuilt: Some(format!("{ns}/sweb.eval.x86_64.x_1776_z:latest")),
            build: None,
        }],
    };
    let p2 = ensure(&e, &missing, &opts).await;
    assert!(
        p2.failed["x__z"].message.contains("pull"),
        "{:?}",
        p2.failed
    );

    assert!(cleanup(&e, &prepared, CacheLevel::Env)
        .await
        .errors
        .is_empty());
    assert!(
        !e.image_exists(&remote).await.unwrap(),
        "pulled instance image removed at level env"
    );
}

/// Holds on the real daemon: an image another live run holds survives this run's cleanup, is
/// handed over, and goes at the holder's cleanup. Checked for both ways Docker names images: a
/// second name of the base image (Docker untags such a name whatever uses it, so cleanup's own
/// check is what keeps it) and an image's only name (Docker itself refuses to remove it).
#[tokio::test]
async fn images_held_by_another_run_are_handed_over_and_removed_by_the_holder() {
    use std::sync::Arc;
    use swe_eval::engine::{EngineError, LABEL_HOLD};
    use swe_eval::images::Prepared;
    use swe_eval::images::{hold_labels, release_holds, Holding};

    let Some(e) = engine().await.map(Arc::new) else {
        return;
    };
    let base = base_image().await;
    let pid = std::process::id();
    let alias = format!("swe-eval-it/held-alias:{pid}");
    let single = format!("swe-eval-it/held-single:{pid}");
    e.tag_image(&base, &alias).await.unwrap();
    let ctx = swe_eval::images::context_tar(
        &format!("FROM {base}\nLABEL swe-eval-it.held={pid}\n"),
        &[],
        None,
    )
    .unwrap();
    e.build_image(&single, ctx, BTreeMap::new()).await.unwrap();

    // The other run: on another host sharing the daemon (its owner cannot be proven dead).
    let other = format!("swe-eval-it-elsewhere:{pid}:1");
    let holding = Holding::new(e.clone(), hold_labels(&other, &run_id("held")));
    assert!(holding.image_exists(&alias).await.unwrap());
    assert!(holding.image_exists(&single).await.unwrap());
    assert!(!holding
        .image_exists(&format!("swe-eval-it/never-built:{pid}"))
        .await
        .unwrap());
    let holds = e
        .list_containers(BTreeMap::from([(LABEL_HOLD.to_string(), String::new())]))
        .await
        .unwrap();
    let mine: Vec<_> = holds
        .iter()
        .filter(|c| c.labels.get("swe-eval.owner") == Some(&other))
        .map(|c| c.labels[LABEL_HOLD].clone())
        .collect();
    assert_eq!(mine.len(), 2, "{holds:?}");

    // Docker's own refusal for an only name, unforced.
    let refused = e.remove_image(&single).await;
    assert!(
        matches!(refused, Err(EngineError::ImageInUse { .. })),
        "{refused:?}"
    );

    // This run's cleanup keeps both, marks them, and says who holds them.
    let prepared = Prepared {
        created: vec![
            (alias.clone(), Layer::Base),
            (single.clone(), Layer::Instance),
        ],
        ..Default::default()
    };
    let report = cleanup(&*e, &prepared, CacheLevel::None).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert!(report.removed.is_empty(), "{:?}", report.removed);
    let mut handed: Vec<_> = report.handed_over.clone();
    handed.sort();
    assert_eq!(
        handed,
        [
            (alias.clone(), other.clone()),
            (single.clone(), other.clone())
        ]
    );
    assert!(e.image_exists(&alias).await.unwrap());
    assert!(e.image_exists(&single).await.unwrap());

    // The holder ends: it releases its holds, and a cleanup that built nothing (the holder's)
    // removes both and their markers; the base image keeps its own name.
    assert!(release_holds(&*e, &other).await.is_empty());
    let report = cleanup(&*e, &Prepared::default(), CacheLevel::Env).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    for image in [&alias, &single] {
        assert!(report.removed.contains(image), "{:?}", report.removed);
        assert!(!e.image_exists(image).await.unwrap(), "{image}");
    }
    let markers = e
        .list_containers(BTreeMap::from([(
            swe_eval::engine::LABEL_DOOMED.to_string(),
            String::new(),
        )]))
        .await
        .unwrap();
    assert!(
        !markers
            .iter()
            .any(|m| m.labels.values().any(|v| v == &alias || v == &single)),
        "{markers:?}"
    );
    assert!(e.image_exists(&base).await.unwrap());
}
