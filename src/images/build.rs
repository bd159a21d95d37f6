//! Making the plan's images present: prebuilt ones used or pulled, the rest built, each
//! base and environment once; a failure fails only the instances that need that image. Each
//! instance's image is reported through the options' hooks as soon as it is ready or failed
//! (`build_events`), so a caller can start using it while the others build.

use std::collections::{BTreeMap, BTreeSet};

use futures_util::StreamExt;

use super::build_one::{
    build_env, build_one, compiler_cache_volume, created, ensure_base_recipe, failure, OneImage,
};
use super::{
    history, BuildChain, BuildEvent, BuildOptions, ImageError, ImageFailure, ImagePlan,
    InstanceImages, Layer, Prepared,
};
use crate::engine::Engine;

/// Makes every image of `plan` present: prebuilt ones used or pulled, the rest built (each
/// base and environment once; each environment's images in a pipeline of their own, so an
/// instance's image is ready once its own environment and history are). A failure fails only
/// the instances that need that image.
pub async fn ensure<E: Engine>(engine: &E, plan: &ImagePlan, opts: &BuildOptions) -> Prepared {
    let mut out = Prepared::default();
    let mut to_build = Vec::new();
    let hooks = &opts.hooks;
    let report = |id: &str, result: &Result<String, ImageFailure>| {
        hooks.send(BuildEvent::Instance {
            instance_id: id.to_string(),
            result: result.clone(),
        })
    };
    for inst in &plan.instances {
        match resolve_prebuilt(engine, inst, opts, &mut out).await {
            Ok(Some(image)) => {
                report(&inst.instance_id, &Ok(image.clone()));
                out.images.insert(inst.instance_id.clone(), image);
            }
            Ok(None) => to_build.push(inst),
            Err(f) => {
                report(&inst.instance_id, &Err(f.clone()));
                out.failed.insert(inst.instance_id.clone(), f);
            }
        }
    }

    // Bases, each once, in order (few, and usually there already).
    let mut base_failures: BTreeMap<String, ImageFailure> = BTreeMap::new();
    let mut done: BTreeSet<String> = BTreeSet::new();
    for inst in &to_build {
        let Some(chain) = &inst.build else { continue };
        let base_name = chain.base.image().to_string();
        if !done.contains(&base_name) && !base_failures.contains_key(&base_name) {
            match ensure_base_recipe(engine, &chain.base, opts, &mut out).await {
                Ok(()) => {
                    done.insert(base_name.clone());
                }
                Err(f) => {
                    base_failures.insert(base_name.clone(), f);
                }
            }
        }
    }

    // Then one pipeline per environment: its image, its histories, its instance images. A
    // few pipelines at a time, so the first instances are ready after their own environment,
    // not after every environment; one bound for every build.
    let mut groups: Vec<(&str, Vec<&InstanceImages>)> = Vec::new();
    for inst in to_build {
        let Some(chain) = &inst.build else { continue };
        match groups.iter_mut().find(|(env, _)| *env == chain.env.tag) {
            Some((_, members)) => members.push(inst),
            None => groups.push((&chain.env.tag, vec![inst])),
        }
    }
    let parallel = opts.parallel.max(1);
    let permits = tokio::sync::Semaphore::new(parallel);
    let created = std::sync::Mutex::new(Vec::new());
    let shared = Pipeline {
        engine,
        opts,
        permits: &permits,
        created: &created,
        report: &report,
    };
    // Collected first: a stream over the mapping closure itself would make this future's
    // `Send` depend on a closure generic over lifetimes, which a spawned task (the evaluator's
    // preparer) cannot prove.
    let pipelines: Vec<_> = groups
        .into_iter()
        .map(|(_, members)| {
            let base = members
                .first()
                .and_then(|i| i.build.as_ref())
                .and_then(|c| base_failures.get(c.base.image()).cloned());
            environment_pipeline(&shared, members, base)
        })
        .collect();
    let results: Vec<_> = futures_util::stream::iter(pipelines)
        .buffer_unordered(parallel)
        .collect()
        .await;
    out.created.extend(std::mem::take(
        &mut *created.lock().unwrap_or_else(|p| p.into_inner()),
    ));
    for (inst, r) in results.into_iter().flatten() {
        match r {
            Ok(image) => {
                out.images.insert(inst.instance_id.clone(), image);
            }
            Err(f) => {
                out.failed.insert(inst.instance_id.clone(), f);
            }
        }
    }
    out
}

/// What every environment's pipeline shares: the engine, the options, the one bound on
/// builds, the images made, and where each instance is reported.
struct Pipeline<'a, E, R> {
    engine: &'a E,
    opts: &'a BuildOptions,
    permits: &'a tokio::sync::Semaphore,
    created: &'a std::sync::Mutex<Vec<(String, Layer)>>,
    report: &'a R,
}

/// The images of `members` (instances on one environment image): the environment, then the
/// repository histories they stand on (once per commit, chain by chain), then each instance
/// image once its history image is there, each reported as soon as it is ready or failed.
/// `base` is the failure of their base image, if it failed.
async fn environment_pipeline<'a, E: Engine, R: Fn(&str, &Result<String, ImageFailure>)>(
    sh: &Pipeline<'a, E, R>,
    members: Vec<&'a InstanceImages>,
    base: Option<ImageFailure>,
) -> Vec<(&'a InstanceImages, Result<String, ImageFailure>)> {
    let (engine, opts) = (sh.engine, sh.opts);
    let fail_all = |f: ImageFailure| {
        members
            .iter()
            .map(|inst| {
                (sh.report)(&inst.instance_id, &Err(f.clone()));
                (*inst, Err(f.clone()))
            })
            .collect::<Vec<_>>()
    };
    if let Some(f) = base {
        return fail_all(f);
    }
    let Some((env, repo)) = members
        .first()
        .and_then(|i| Some((&i.build.as_ref()?.env, &i.repo)))
    else {
        return Vec::new();
    };
    let built = {
        let _permit = sh.permits.acquire().await.expect("never closed");
        let mut local = Prepared::default();
        let r = build_env(engine, env, repo, opts, &mut local).await;
        lock(sh.created).extend(local.created);
        r
    };
    if let Err(f) = built {
        return fail_all(f);
    }

    let wanted: Vec<history::Wanted> = members
        .iter()
        .filter_map(|inst| {
            let chain = inst.build.as_ref()?;
            chain.instance.needs_repo.then(|| {
                (
                    inst.instance_id.clone(),
                    chain.env.tag.clone(),
                    inst.repo.clone(),
                    inst.base_commit.clone(),
                )
            })
        })
        .collect();
    let mut histories = history::plan_builds(engine, &wanted, opts, sh.permits, sh.created).await;

    // Instance images: each once its history image is there, a few at a time.
    let jobs = members.into_iter().filter_map(|inst| {
        let chain = inst.build.as_ref()?;
        let history = histories.remove(&inst.instance_id);
        let job = async move {
            let from = match history {
                Some((content, pending)) => {
                    // Built by an earlier run on the same history: nothing to wait for.
                    if let Some(content) = &content {
                        let tag = history::on_history(&chain.instance.tag, content);
                        match engine.image_exists(&tag).await {
                            Ok(true) => return (inst, Ok(tag)),
                            Ok(false) => {}
                            Err(e) => {
                                return (inst, Err(failure(Layer::Instance, &tag, &e.into(), None)))
                            }
                        }
                    }
                    match (pending.await, content) {
                        (Ok(image), Some(content)) => Some((image, content)),
                        (Err(f), _) => return (inst, Err(f)),
                        (Ok(image), None) => {
                            let e = ImageError::Context {
                                image,
                                message: "built, but its content was never planned".into(),
                            };
                            return (
                                inst,
                                Err(failure(Layer::Instance, &inst.instance_id, &e, None)),
                            );
                        }
                    }
                }
                None => None,
            };
            let _permit = sh.permits.acquire().await.expect("never closed");
            let mut local = Prepared::default();
            let from = from.as_ref().map(|(i, c)| (i.as_str(), c.as_str()));
            let r = build_instance(engine, inst, chain, from, opts, &mut local).await;
            lock(sh.created).extend(local.created);
            (inst, r)
        };
        // Each instance is reported as soon as its image is ready or failed.
        Some(async move {
            let (inst, r) = job.await;
            (sh.report)(&inst.instance_id, &r);
            (inst, r)
        })
    });
    let results = futures_util::future::join_all(jobs).await;
    drop(histories);
    results
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A prebuilt image present or pulled: `Ok(Some)`; none to be had but a chain to build:
/// `Ok(None)`; neither: the failure.
async fn resolve_prebuilt<E: Engine>(
    engine: &E,
    inst: &InstanceImages,
    opts: &BuildOptions,
    out: &mut Prepared,
) -> Result<Option<String>, ImageFailure> {
    // An instance image built by an earlier run is as good as a pulled one. (One that stands
    // on a history image is named after it too: looked for once the history is planned.)
    if let Some(chain) = inst.build.as_ref().filter(|c| !c.instance.needs_repo) {
        match engine.image_exists(&chain.instance.tag).await {
            Ok(true) => return Ok(Some(chain.instance.tag.clone())),
            Ok(false) => {}
            Err(e) => {
                return Err(failure(
                    Layer::Instance,
                    &chain.instance.tag,
                    &e.into(),
                    None,
                ))
            }
        }
    }
    let Some(image) = &inst.prebuilt else {
        return Ok(None);
    };
    let pulled = match engine.image_exists(image).await {
        Ok(true) => return Ok(Some(image.clone())),
        Ok(false) => engine.pull_image(image).await,
        Err(e) => Err(e),
    };
    match pulled {
        Ok(()) => {
            created(&opts.hooks, out, image, Layer::Instance);
            Ok(Some(image.clone()))
        }
        Err(_) if inst.build.is_some() => Ok(None),
        Err(e) => Err(failure(Layer::Instance, image, &e.into(), None)),
    }
}

/// Builds `inst`'s instance image and returns its name; `history` is the history image it
/// stands on and what it holds (its Dockerfile's `FROM <environment>` names the image
/// instead, and its name hashes what it holds: [`history::on_history`]), `None` when it needs
/// no repository.
async fn build_instance<E: Engine>(
    engine: &E,
    inst: &InstanceImages,
    chain: &BuildChain,
    history: Option<(&str, &str)>,
    opts: &BuildOptions,
    out: &mut Prepared,
) -> Result<String, ImageFailure> {
    let ir = &chain.instance;
    let tag = history.map_or_else(|| ir.tag.clone(), |(_, c)| history::on_history(&ir.tag, c));
    let dockerfile = match history {
        None => ir.dockerfile.clone(),
        Some((image, _)) => {
            let from = format!("FROM {}\n", chain.env.tag);
            if !ir.dockerfile.contains(&from) {
                let e = ImageError::Context {
                    image: tag.clone(),
                    message: format!("the Dockerfile has no `{}` line to stand on the repository's history image", from.trim_end()),
                };
                return Err(failure(Layer::Instance, &tag, &e, None));
            }
            ir.dockerfile.replacen(&from, &format!("FROM {image}\n"), 1)
        }
    };
    // An install that compiles, on the repository's history: the objects of the instances
    // built before on the same environment are reused.
    let cache = (ir.compiler_cache && history.is_some())
        .then(|| compiler_cache_volume(&inst.repo, &chain.env.tag));
    let image = OneImage {
        layer: Layer::Instance,
        tag: &tag,
        dockerfile: &dockerfile,
        files: &ir.files,
        folder: None,
        // Official: the build clones from GitHub. Debian: the repository is in the history
        // image; only an install step that fetches from PyPI needs the network.
        network: !ir.needs_repo || ir.network,
        instance_id: Some(&inst.instance_id),
        compiler_cache: cache.as_deref(),
    };
    build_one(engine, &image, opts, out).await?;
    Ok(tag)
}

#[cfg(test)]
mod plan_tests {
    use super::*;
    use std::path::Path;

    use crate::engine::{Call, FakeEngine};
    use crate::images::{base_image_name, build_log_path, BaseOptions, BaseRecipe, RepoCache};
    use crate::images::{cleanup, CacheLevel, EnvRecipe, InstanceRecipe};
    use swe_eval_core::repos::RepoSources;
    use swe_eval_core::spec::DebianRelease;

    fn chain(env: &str, inst: &str, needs_repo: bool) -> BuildChain {
        BuildChain {
            base: BaseRecipe::Debian {
                release: DebianRelease::Bookworm,
                alias: "swe-eval/base:bookworm".into(),
            },
            env: EnvRecipe {
                tag: env.into(),
                dockerfile: "FROM swe-eval/base:bookworm\n".into(),
                files: vec![],
            },
            instance: InstanceRecipe {
                tag: inst.into(),
                dockerfile: format!("FROM {env}\n"),
                files: vec![],
                needs_repo,
                network: false,
                compiler_cache: false,
            },
        }
    }

    fn inst(id: &str, prebuilt: Option<&str>, build: Option<BuildChain>) -> InstanceImages {
        InstanceImages {
            instance_id: id.into(),
            repo: "o/n".into(),
            base_commit: "c".into(),
            prebuilt: prebuilt.map(str::to_string),
            build,
        }
    }

    fn opts(dir: &Path) -> BuildOptions {
        BuildOptions {
            logs_dir: dir.join("logs"),
            repos: RepoCache::new(dir.join("repos"), RepoSources::default()),
            base: BaseOptions::default(),
            parallel: 2,
            history_chain: super::history::MAX_CHAIN,
            hooks: Default::default(),
        }
    }

    /// An environment build that fails names its log under `logs/build_images/` in every
    /// instance's failure; one whose log shows a certificate refused also suggests --ca-cert,
    /// and an instance build that fails otherwise does not.
    #[tokio::test]
    async fn a_failed_build_names_its_log_and_a_certificate_refused_suggests_ca_cert() {
        let tmp = tempfile::tempdir().unwrap();
        let e = FakeEngine::new();
        e.add_image(&base_image_name(DebianRelease::Bookworm));
        e.fail_build(
            "env-tls",
            "Collecting numpy\nCould not fetch URL https://pypi.org/simple/numpy/: \
             [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed \
             certificate in certificate chain (_ssl.c:1006)\n",
        );
        e.fail_build(
            "inst-x",
            "ERROR: No matching distribution found for numpy==9.9\n",
        );
        let plan = ImagePlan {
            instances: vec![
                inst("a", None, Some(chain("env-tls", "inst-a", false))),
                inst("b", None, Some(chain("env-tls", "inst-b", false))),
                inst("x", None, Some(chain("env-1", "inst-x", false))),
            ],
        };
        let opts = opts(tmp.path());
        let got = ensure(&e, &plan, &opts).await;
        let env_log = build_log_path(&opts.logs_dir, Layer::Env, "env-tls");
        assert!(env_log.starts_with(tmp.path().join("logs")), "{env_log:?}");
        for id in ["a", "b"] {
            let f = &got.failed[id];
            assert_eq!(f.log_path.as_deref(), Some(env_log.as_path()));
            assert!(
                f.message
                    .contains(&format!("its build log: {}", env_log.display()))
                    && f.message
                        .ends_with("give its CA bundle with --ca-cert FILE"),
                "{}",
                f.message
            );
        }
        let x = &got.failed["x"];
        let inst_log = build_log_path(&opts.logs_dir, Layer::Instance, "inst-x");
        assert!(
            x.message
                .ends_with(&format!("its build log: {}", inst_log.display())),
            "{}",
            x.message
        );
        assert!(std::fs::read_to_string(&inst_log)
            .unwrap()
            .contains("No matching distribution"));
    }

    #[tokio::test]
    async fn shared_env_once_failures_isolated_prebuilt_pulled_or_built() {
        let tmp = tempfile::tempdir().unwrap();
        let e = FakeEngine::new();
        e.add_image(&base_image_name(DebianRelease::Bookworm));
        e.add_pullable("reg/sweb.eval.x86_64.p:latest");
        e.fail_build("env-bad", "E: no such package");
        let plan = ImagePlan {
            instances: vec![
                inst("a", None, Some(chain("env-1", "inst-a", false))),
                inst("b", None, Some(chain("env-1", "inst-b", false))),
                inst("c", None, Some(chain("env-bad", "inst-c", false))),
                inst("p", Some("reg/sweb.eval.x86_64.p:latest"), None),
                inst(
                    "q",
                    Some("reg/sweb.eval.x86_64.q:latest"),
                    Some(chain("env-1", "inst-q", false)),
                ),
                inst("r", Some("reg/sweb.eval.x86_64.r:latest"), None),
            ],
        };
        let got = ensure(&e, &plan, &opts(tmp.path())).await;
        let images: Vec<(&str, &str)> = got
            .images
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            images,
            [
                ("a", "inst-a"),
                ("b", "inst-b"),
                ("p", "reg/sweb.eval.x86_64.p:latest"),
                ("q", "inst-q")
            ],
            "q's pull failed, so it was built"
        );
        let c = &got.failed["c"];
        assert_eq!(
            (c.layer, c.image.as_str(), c.transient),
            (Layer::Env, "env-bad", false)
        );
        let log = std::fs::read_to_string(c.log_path.as_ref().unwrap()).unwrap();
        assert_eq!(log, "E: no such package");
        assert!(
            got.failed["r"].message.contains("pull"),
            "nothing to build: a pull failure"
        );
        let env1_builds = e
            .calls()
            .iter()
            .filter(|c| matches!(c, Call::BuildImage { tag, .. } if tag == "env-1"))
            .count();
        assert_eq!(env1_builds, 1, "the shared environment is built once");
        assert!(e.calls().contains(&Call::TagImage {
            image: base_image_name(DebianRelease::Bookworm),
            new_name: "swe-eval/base:bookworm".into()
        }));

        // Cache level env: instance images (built and pulled) go, environments stay.
        assert!(cleanup(&e, &got, CacheLevel::Env).await.errors.is_empty());
        let left = e.images();
        for gone in [
            "inst-a",
            "inst-b",
            "inst-q",
            "reg/sweb.eval.x86_64.p:latest",
        ] {
            assert!(!left.contains(&gone.to_string()), "{gone} removed");
        }
        assert!(left.contains(&"env-1".to_string()));

        // A second run finds nothing to do for a and b but their instance images again.
        let again = ensure(&e, &plan, &opts(tmp.path())).await;
        assert!(
            !again.created.iter().any(|(n, _)| n == "env-1"),
            "env-1 cached"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_instance_is_ready_after_its_own_environment_not_after_every_one() {
        let tmp = tempfile::tempdir().unwrap();
        let e = FakeEngine::new();
        e.add_image(&base_image_name(DebianRelease::Bookworm));
        e.delay_builds_containing("env-", std::time::Duration::from_secs(600));
        let plan = ImagePlan {
            instances: vec![
                inst("a", None, Some(chain("env-1", "inst-a", false))),
                inst("b", None, Some(chain("env-2", "inst-b", false))),
                inst("c", None, Some(chain("env-1", "inst-c", false))),
            ],
        };
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut o = opts(tmp.path());
        o.parallel = 1;
        o.hooks = crate::images::BuildHooks::new(tx, Default::default());
        let got = ensure(&e, &plan, &o).await;
        assert_eq!(got.images.len(), 3);
        drop(o);
        let mut order = Vec::new();
        while let Some(ev) = rx.recv().await {
            match ev {
                BuildEvent::Started { image, .. } => order.push(format!("build {image}")),
                BuildEvent::Instance { instance_id, .. } => {
                    order.push(format!("ready {instance_id}"))
                }
                _ => {}
            }
        }
        assert_eq!(
            order,
            [
                "build env-1",
                "build inst-a",
                "ready a",
                "build inst-c",
                "ready c",
                "build env-2",
                "build inst-b",
                "ready b"
            ],
            "one build at a time, env-1's instances before env-2 is built"
        );
    }

    /// (One that stands on a history image is named after it, and found once the history is
    /// planned: `history::tests`.)
    #[tokio::test]
    async fn an_existing_instance_image_is_used_without_pulling_or_building() {
        let tmp = tempfile::tempdir().unwrap();
        let e = FakeEngine::new();
        e.add_image("inst-a");
        let plan = ImagePlan {
            instances: vec![inst(
                "a",
                Some("reg/sweb.eval.x86_64.a:latest"),
                Some(chain("env-1", "inst-a", false)),
            )],
        };
        let got = ensure(&e, &plan, &opts(tmp.path())).await;
        assert_eq!(got.images["a"], "inst-a");
        assert!(got.created.is_empty());
        assert!(!e
            .calls()
            .iter()
            .any(|c| matches!(c, Call::PullImage(_) | Call::BuildImage { .. })));
    }
}
