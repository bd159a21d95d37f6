//! The compiler cache of instance builds that compile, on the real daemon: two instances of
//! a mini repository with a C source, on an environment with gcc and ccache, each built in a
//! container with the repository's ccache volume mounted and committed; the second build's
//! compilation is a cache hit, and the images hold neither the cache nor ccache on `PATH`.

use std::path::Path;
use std::process::Command;

use swe_eval::engine::{Engine, TarEntry};
use swe_eval::images::{
    compiler_cache_volume, ensure, BaseRecipe, BuildChain, EnvRecipe, InstanceRecipe,
    COMPILER_CACHE_DIR, MAX_CHAIN,
};
use swe_eval_core::spec::DebianRelease;

use crate::common::git;
use crate::engine::{base_image, engine, job, run_id};
use crate::history::local_plan;

fn commit(dir: &Path, name: &str) -> String {
    std::fs::write(dir.join(format!("{name}.txt")), name).unwrap();
    git(dir, &["add", "."]);
    git(
        dir,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "-m",
            name,
        ],
    );
    git(dir, &["rev-parse", "HEAD"])
}

/// ccache's counters in the volume: (hits, misses).
fn counters(env: &str, volume: &str) -> (u64, u64) {
    let out = Command::new("docker")
        .args(["run", "--rm", "--network", "none", "-v"])
        .arg(format!("{volume}:{COMPILER_CACHE_DIR}"))
        .args(["-e", &format!("CCACHE_DIR={COMPILER_CACHE_DIR}"), env])
        .args(["ccache", "--print-stats"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{out:?}");
    let count = |keys: &[&str]| -> u64 {
        text.lines()
            .filter_map(|l| l.split_once('\t'))
            .filter(|(k, _)| keys.contains(k))
            .map(|(_, v)| v.trim().parse::<u64>().unwrap())
            .sum()
    };
    (
        count(&["direct_cache_hit", "preprocessed_cache_hit"]),
        count(&["cache_miss"]),
    )
}

#[tokio::test]
async fn builds_that_compile_share_the_repositorys_compiler_cache_and_keep_it_out_of_the_image() {
    let Some(e) = engine().await else { return };
    base_image().await;
    let tmp = tempfile::tempdir().unwrap();
    let up = tmp.path().join("upstream");
    std::fs::create_dir_all(&up).unwrap();
    git(&up, &["init", "-q", "-b", "main"]);
    std::fs::write(
        up.join("ext.c"),
        "#include <stdio.h>\nint twice(int x) { return 2 * x; }\n\
         int main(void) { printf(\"%d\\n\", twice(21)); return 0; }\n",
    )
    .unwrap();
    let c1 = commit(&up, "c1");
    let c2 = commit(&up, "c2");

    let alias = "swe-eval-it/base:bookworm".to_string();
    let env = "swe-eval-it/env.ccache:it".to_string();
    let leaf = |id: &str| format!("swe-eval-it/ccache.{id}:it");
    let volume = compiler_cache_volume("local/ccache", &env);
    // Leftovers of a run that died before its cleanup.
    let _ = e.remove_volume(&volume).await;
    let chain = |id: &str| {
        BuildChain {
        base: BaseRecipe::Debian {
            release: DebianRelease::Bookworm,
            alias: alias.clone(),
        },
        env: EnvRecipe {
            tag: env.clone(),
            // As the compiler environments install it (src/spec/conda_map.json), smaller.
            dockerfile: format!(
                "FROM {alias}\nRUN apt-get update && apt-get install -y --no-install-recommends \
                 gcc libc6-dev ccache && rm -rf /var/lib/apt/lists/*\n"
            ),
            files: vec![],
        },
        instance: InstanceRecipe {
            tag: leaf(id),
            dockerfile: format!(
                "FROM {env}\nCOPY ./setup_repo.sh /root/\nRUN sed -i -e 's/\\r$//' /root/setup_repo.sh\n\
                 RUN /bin/bash /root/setup_repo.sh\nWORKDIR /testbed/\n"
            ),
            files: vec![TarEntry {
                path: "setup_repo.sh".into(),
                // `cc` (compile and link: not cacheable) and `gcc -c` (cached), as installs call them.
                contents: b"set -e\ncd /testbed\ncc -O2 -o /root/ext ext.c && gcc -O2 -c -o /root/ext.o ext.c\n/root/ext\n".to_vec(),
                mode: 0o755,
            }],
            needs_repo: true,
            network: false,
            compiler_cache: true,
        },
    }
    };
    // One build at a time: the second compiles after the first has filled the cache.
    let bases = [("a", c1), ("b", c2)];
    let (plan, opts) = local_plan(tmp.path(), "local/ccache", &up, &bases, chain, 1, MAX_CHAIN);
    let prepared = ensure(&e, &plan, &opts).await;
    let cleanup = || async {
        for (image, _) in &prepared.created {
            if image != &env {
                let _ = e.remove_image(image).await;
            }
        }
        let _ = e.remove_volume(&volume).await;
    };
    if !prepared.failed.is_empty() {
        cleanup().await;
        panic!("{:?}", prepared.failed);
    }
    let (hits, misses) = counters(&env, &volume);
    let mut seen = Vec::new();
    for id in ["a", "b"] {
        let image = &prepared.images[id];
        let out = e
            .run_job(job(
                image,
                &run_id(&format!("ccache-{id}")),
                "/root/ext && pwd && echo \"$PATH\" && ls -A /var/cache/swe-eval-ccache | wc -l \
                 && ls /tmp | wc -l",
            ))
            .await
            .unwrap();
        seen.push(String::from_utf8_lossy(&out.output).into_owned());
        // The build's container is committed: the image keeps its environment's /etc/hosts
        // (jobs bring their own, which must never land in an image).
        seen.push(image_file(image, "/etc/hosts"));
        seen.push(
            String::from_utf8_lossy(
                &Command::new("docker")
                    .args(["image", "inspect", "-f"])
                    .arg("{{index .Config.Labels \"swe-eval.layer\"}} {{index .Config.Labels \"swe-eval.instance-id\"}}")
                    .arg(image)
                    .output()
                    .unwrap()
                    .stdout,
            )
            .trim()
            .to_string(),
        );
    }
    let env_hosts = image_file(&env, "/etc/hosts");
    let logs: Vec<String> = walk(&opts.logs_dir)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("ccache.") && p.ends_with("build_image.log"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    cleanup().await;
    assert_eq!(
        (hits, misses),
        (1, 1),
        "the second compilation hit: {seen:?}"
    );
    for (i, id) in ["a", "b"].iter().enumerate() {
        let lines: Vec<&str> = seen[3 * i].lines().collect();
        assert_eq!(lines[0], "42", "{id}: the program was built: {seen:?}");
        assert_eq!(lines[1], "/testbed", "{id}: WORKDIR kept: {seen:?}");
        assert!(
            !lines[2].contains("ccache"),
            "{id}: PATH as the environment's: {seen:?}"
        );
        assert_eq!(
            lines[3], "0",
            "{id}: the cache is not in the image: {seen:?}"
        );
        assert_eq!(lines[4], "0", "{id}: nothing left in /tmp: {seen:?}");
        assert_eq!(
            seen[3 * i + 1],
            env_hosts,
            "{id}: /etc/hosts as the environment's: {seen:?}"
        );
        assert_eq!(
            seen[3 * i + 2],
            format!("instance {id}"),
            "labels: {seen:?}"
        );
    }
    assert_eq!(logs.len(), 2, "a build log per instance image: {logs:?}");
    for log in &logs {
        assert!(
            log.contains("swe-eval: compiler cache /var/cache/swe-eval-ccache"),
            "{log}"
        );
    }
}

/// The bytes of `path` in `image` as text (read from a container created and never started, so
/// no file the daemon mounts at a start hides it).
fn image_file(image: &str, path: &str) -> String {
    let created = Command::new("docker")
        .args(["create", "--network", "none", image, "true"])
        .output()
        .unwrap();
    assert!(created.status.success(), "{created:?}");
    let id = String::from_utf8_lossy(&created.stdout).trim().to_string();
    let copied = Command::new("docker")
        .args(["cp", &format!("{id}:{path}"), "-"])
        .output()
        .unwrap();
    let _ = Command::new("docker").args(["rm", &id]).output();
    assert!(copied.status.success(), "{copied:?}");
    let mut archive = tar::Archive::new(copied.stdout.as_slice());
    let mut entry = archive.entries().unwrap().next().unwrap().unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut entry, &mut text).unwrap();
    text
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
