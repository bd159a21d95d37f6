//! swe-eval on Podman instead of Docker, rootful and rootless, through Podman's
//! Docker-compatible API. The tests install and start Podman themselves
//! (`scripts/ensure-podman.sh`: Debian's podman, uidmap, slirp4netns, fuse-overlayfs, crun; a
//! rootful `podman system service`, and an ordinary user with subordinate ids and a service
//! of its own), so CI runs them; they need root for that, and skip without it (fail under
//! `SWE_EVAL_REQUIRE_ALL=1`).
//!
//! The offline base image is not bootstrapped again: the Docker one (the engine tests'
//! fixture) is exported and imported into each Podman store through the adapter's import,
//! the step that left Podman's copy under another name (0/22 on the mini benchmark before).
//!
//! On each mode: the engine's behaviours (exit codes and output through attach, files copied
//! in, a timeout that kills, no network, labels and reaping, holds, a missing image; rootful:
//! CPU, memory and pids limits and the OOM kill; rootless on cgroups v1: no limit applies, and
//! the engine says so), and `swe-eval run --engine podman` on a mini benchmark task (base,
//! environment, history and instance images built on Podman; a job killed at its timeout; the
//! verdicts official and strict) whose first run is SIGKILLed after building: the next run
//! removes what it left, and runs as an ordinary user on the rootless service.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use swe_eval::engine::{DockerEngine, Engine, EngineError, LABEL_RUN_ID};
use swe_eval::images::{base_image_name, labels_for, Layer};
use swe_eval_core::spec::DebianRelease;

use crate::common::{place_bin, prerequisite, spawn_unless_busy};
use crate::engine as checks;

/// The user the rootless tests run as (`scripts/ensure-podman.sh` creates it).
const ROOTLESS_USER: &str = "swe-eval-podman";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Rootful,
    Rootless,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Rootful => "rootful",
            Mode::Rootless => "rootless",
        }
    }
}

/// One test at a time per Podman mode: the services and their stores are shared.
static ROOTFUL: Mutex<()> = Mutex::new(());
static ROOTLESS: Mutex<()> = Mutex::new(());

fn turn(mode: Mode) -> std::sync::MutexGuard<'static, ()> {
    let m = match mode {
        Mode::Rootful => &ROOTFUL,
        Mode::Rootless => &ROOTLESS,
    };
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The service's socket, started (and Podman installed) by `scripts/ensure-podman.sh`, or
/// `None` through [`prerequisite`].
fn service(mode: Mode) -> Option<PathBuf> {
    let what = format!("a {} Podman service", mode.name());
    let found = (|| {
        if swe_eval_uid() != 0 {
            return Err("the tests install and start Podman as root".to_string());
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ensure-podman.sh");
        let o = Command::new("bash")
            .arg(&script)
            .arg(mode.name())
            .output()
            .map_err(|e| format!("{}: {e}", script.display()))?;
        let out = String::from_utf8_lossy(&o.stdout);
        if !o.status.success() {
            return Err(format!(
                "{} {} failed: {}{}",
                script.display(),
                mode.name(),
                out,
                String::from_utf8_lossy(&o.stderr)
            ));
        }
        Ok(PathBuf::from(out.lines().last().unwrap_or_default().trim()))
    })();
    prerequisite(&what, found)
}

fn swe_eval_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").map_or(u32::MAX, |m| m.uid())
}

/// The engine on `mode`'s service, with the offline base image in its store.
async fn engine(mode: Mode) -> Option<(DockerEngine, String)> {
    let sock = service(mode)?;
    let e = DockerEngine::connect_at(&format!("unix://{}", sock.display()))
        .await
        .unwrap_or_else(|err| panic!("{err}"));
    assert!(e.is_podman(), "{} answers as Docker", sock.display());
    let host = e.podman().expect("libpod info read").clone();
    assert_eq!(host.rootless, mode == Mode::Rootless, "{host:?}");
    let base = base_image_name(DebianRelease::Bookworm);
    if !e.image_exists(&base).await.unwrap() {
        import_base_from_docker(&e, &base).await;
    }
    // Read back under the name asked for, as Docker names it (Podman stores docker.io/...).
    let listed = e.list_images(labels_for(Layer::Base, None)).await.unwrap();
    assert!(
        listed.iter().any(|r| r.name == base),
        "{base} not listed under its name: {:?}",
        listed.iter().map(|r| &r.name).collect::<Vec<_>>()
    );
    Some((e, base))
}

/// The Docker base (bootstrapped once by the engine tests' fixture) exported as a root file
/// system and imported through the adapter, as `ensure_base` imports a fresh bootstrap.
async fn import_base_from_docker(e: &DockerEngine, base: &str) {
    let docker_base = checks::base_image().await;
    assert_eq!(docker_base, base, "one recipe, one name");
    let dir = tempfile::tempdir().unwrap();
    let tar = dir.path().join("rootfs.tar");
    // Rootful and rootless import at once on a machine with neither's base: a name of each.
    static EXPORTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = EXPORTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!("swe-eval-podman-export-{}-{n}", std::process::id());
    let docker = |args: &[&str]| {
        let o = Command::new("docker").args(args).output().expect("docker");
        assert!(
            o.status.success(),
            "docker {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    docker(&["create", "--name", &name, base, "true"]);
    docker(&["export", "-o", &tar.to_string_lossy(), &name]);
    docker(&["rm", &name]);
    let t0 = Instant::now();
    e.import_image(base, tar, labels_for(Layer::Base, None))
        .await
        .unwrap_or_else(|err| panic!("import of {base}: {err}"));
    eprintln!("imported {base} into Podman in {:.1?}", t0.elapsed());
    assert!(e.image_exists(base).await.unwrap(), "{base} after import");
}

/// The engine's behaviours on `mode`.
async fn engine_behaviours(mode: Mode) {
    let Some((e, img)) = engine(mode).await else {
        return;
    };
    let info = e.info().await.unwrap();
    eprintln!("{}: {}", mode.name(), info.product);
    // The import's instructions all applied (labels: listed above; `ENV`), not only the first.
    let out = e
        .run_job(checks::job(&img, &checks::run_id("env"), "echo \"$LANG\""))
        .await
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.output), "C.UTF-8\n");
    checks::check_exit_code_output_and_files(&e, &img).await;
    checks::check_deadline_kills_fast_and_removes(&e, &img).await;
    checks::check_full_speed_output_is_killed_at_the_deadline(&e, &img).await;
    checks::check_network_is_off(&e, &img).await;
    checks::check_labels_list_and_reap(&e, &img).await;
    checks::check_a_missing_image_is_its_own_error(&e).await;
    holds_keep_an_image(&e, &img).await;
    let support = e.podman().unwrap().limit_support();
    if support == swe_eval::engine::LimitSupport::ALL {
        assert!(info.limitations.is_empty(), "{:?}", info.limitations);
        checks::check_limits_are_applied(&e, &img).await;
        checks::check_oom_kill_and_pids_limit(&e, &img).await;
    } else {
        // Rootless on cgroups v1 (this machine): no limit applies, and the run is told.
        assert_eq!(mode, Mode::Rootless);
        assert!(
            info.limitations
                .iter()
                .any(|l| l.contains("jobs run without their") && l.contains("rootless")),
            "{:?}",
            info.limitations
        );
        limits_not_applied_are_not_pretended(&e, &img).await;
    }
}

/// A built image (one name) is held by a created container: its removal is refused (409,
/// `ImageInUse`); released, the image goes.
async fn holds_keep_an_image(e: &DockerEngine, base: &str) {
    let tag = format!("swe-eval/podman-hold-test:{}", std::process::id());
    let dockerfile = format!("FROM {base}\nRUN echo held > /held\n");
    let ctx = swe_eval::images::context_tar(&dockerfile, &[], None).unwrap();
    let log = e
        .build_image(&tag, ctx, checks::labels(&checks::run_id("hold-image")))
        .await
        .unwrap_or_else(|err| panic!("build on {base}: {err}"));
    assert!(e.image_exists(&tag).await.unwrap(), "{log}");
    let run = checks::run_id("hold");
    let hold = e.create_hold(&tag, checks::labels(&run)).await.unwrap();
    match e.remove_image(&tag).await {
        Err(EngineError::ImageInUse { .. }) => {}
        other => panic!("removal of a held image: {other:?}"),
    }
    assert!(e.image_exists(&tag).await.unwrap());
    e.remove_container(&hold).await.unwrap();
    e.remove_image(&tag).await.unwrap();
    assert!(!e.image_exists(&tag).await.unwrap());
}

/// On a service that cannot apply limits, none is sent: the container's cgroup files are not
/// the job's limits (they are the host's), which is what the warning says.
async fn limits_not_applied_are_not_pretended(e: &DockerEngine, img: &str) {
    let run = checks::run_id("nolimits");
    let mut j = checks::job(
        img,
        &run,
        "cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max",
    );
    j.limits.memory_bytes = Some(256 << 20);
    let out = e.run_job(j).await.unwrap();
    let text = String::from_utf8_lossy(&out.output);
    assert_ne!(
        text.trim(),
        "268435456",
        "a limit the engine said it could not apply"
    );
}

/// [`engine_behaviours`] in `mode`'s turn (the guard held outside the async code).
fn engine_behaviours_in_turn(mode: Mode) {
    let _turn = turn(mode);
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(engine_behaviours(mode));
}

#[test]
fn engine_behaviours_on_rootful_podman() {
    engine_behaviours_in_turn(Mode::Rootful);
}

#[test]
fn engine_behaviours_on_rootless_podman() {
    engine_behaviours_in_turn(Mode::Rootless);
}

/// Containers of `run_id` on the engine (jobs and holds).
async fn containers(e: &DockerEngine, run_id: &str) -> Vec<String> {
    e.list_containers(std::collections::BTreeMap::from([(
        LABEL_RUN_ID.to_string(),
        run_id.to_string(),
    )]))
    .await
    .unwrap()
    .into_iter()
    .map(|c| c.name)
    .collect()
}

/// A folder the rootless user can read and write (the tests run as root).
fn shared_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

/// `swe-eval run --engine podman` on the mini benchmark's `calc-2` (gold, a correct
/// alternative, an endless loop the timeout kills), as the user of `mode`: root for rootful,
/// the ordinary user for rootless (who finds their own socket from XDG_RUNTIME_DIR), with a
/// clean environment. The binary is copied where that user can run it.
fn run_command(mode: Mode, work: &Path, run_id: &str) -> Command {
    let args: Vec<String> = [
        "run",
        "--engine",
        "podman",
        "-i",
        "swe-eval-mini__calc-2",
        "-t",
        "10",
        "-j",
        "2",
        "--cache-level",
        "env",
        "--run-id",
        run_id,
        "-o",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([work.join("out").display().to_string()])
    .collect();
    let exe = work.join("swe-eval");
    if !exe.exists() {
        place_bin(&exe);
    }
    match mode {
        Mode::Rootful => {
            let mut c = Command::new(&exe);
            c.args(&args)
                .env_remove("DOCKER_HOST")
                .env_remove("CONTAINER_HOST");
            c.current_dir(work);
            c
        }
        Mode::Rootless => {
            let uid = String::from_utf8(
                Command::new("id")
                    .args(["-u", ROOTLESS_USER])
                    .output()
                    .unwrap()
                    .stdout,
            )
            .unwrap();
            let home = work.join("home");
            std::fs::create_dir_all(&home).unwrap();
            let _ = Command::new("chown")
                .args([ROOTLESS_USER, &home.display().to_string()])
                .status();
            // setpriv execs (runuser would fork and wait): a SIGKILL reaches swe-eval itself.
            let mut c = Command::new("setpriv");
            c.args([
                "--reuid",
                ROOTLESS_USER,
                "--regid",
                ROOTLESS_USER,
                "--init-groups",
            ])
            .args(["env", "-i"])
            .arg(format!("HOME={}", home.display()))
            .arg(format!("XDG_RUNTIME_DIR=/run/user/{}", uid.trim()))
            .arg("PATH=/usr/local/bin:/usr/bin:/bin")
            .arg(&exe)
            .args(&args);
            c.current_dir(work);
            c
        }
    }
}

/// The first run is SIGKILLed once it has built the instance image; the next run (same run
/// id) removes what the killed one left (holds and the image its cache level would have
/// removed), runs the task and gets the expected verdicts.
fn killed_run_then_next_run(mode: Mode) {
    let _turn = turn(mode);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let Some((e, _)) = rt.block_on(engine(mode)) else {
        return;
    };
    let dir = shared_dir();
    let work = dir.path();
    let run_id = format!("it-podman-{}-{}", mode.name(), std::process::id());

    let mut first = run_command(mode, work, &run_id);
    first.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = spawn_unless_busy(|| first.spawn()).unwrap();
    // Killed once it holds an image it built and would remove (`swe-eval.removes`).
    let t0 = Instant::now();
    let left = crate::common::poll(Duration::from_secs(600), Duration::from_millis(200), || {
        let held = rt.block_on(e.list_containers(std::collections::BTreeMap::from([
            (LABEL_RUN_ID.to_string(), run_id.clone()),
            (swe_eval::images::LABEL_REMOVES.to_string(), String::new()),
        ])));
        let left = held.unwrap();
        (!left.is_empty() || child.try_wait().unwrap().is_some()).then_some(left)
    })
    .unwrap_or_default();
    let _ = child.kill(); // SIGKILL
    let _ = child.wait();
    assert!(
        !left.is_empty(),
        "{}: no instance image built within {:?}",
        mode.name(),
        t0.elapsed()
    );
    let image = left[0]
        .labels
        .get(swe_eval::engine::LABEL_HOLD)
        .cloned()
        .unwrap();
    eprintln!(
        "{}: killed after {:.1?} holding {image}; left {:?}",
        mode.name(),
        t0.elapsed(),
        rt.block_on(containers(&e, &run_id))
    );
    assert!(rt.block_on(e.image_exists(&image)).unwrap(), "{image} left");

    let t1 = Instant::now();
    let mut next = run_command(mode, work, &run_id);
    let o = spawn_unless_busy(|| next.output()).unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    let all = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    eprintln!("{}: next run in {:.1?}\n{all}", mode.name(), t1.elapsed());
    assert_eq!(o.status.code(), Some(0), "{all}");
    assert!(
        stdout.contains("mini benchmark: 3/3 verdicts as expected"),
        "{all}"
    );
    assert!(
        stdout.contains("resolved 2 · unresolved 0 · error 1 ·"),
        "the endless loop killed at its timeout: {all}"
    );
    if mode == Mode::Rootless {
        assert!(
            stderr.contains("jobs run without their"),
            "the run says which limits it cannot apply: {all}"
        );
    }
    assert_eq!(
        rt.block_on(containers(&e, &run_id)),
        Vec::<String>::new(),
        "holds or jobs of either run left"
    );
    assert!(
        !rt.block_on(e.image_exists(&image)).unwrap(),
        "{image} outlived the next run (cache level env)"
    );
}

#[test]
fn three_layers_a_timeout_and_a_killed_run_on_rootful_podman() {
    killed_run_then_next_run(Mode::Rootful);
}

#[test]
fn three_layers_a_timeout_and_a_killed_run_on_rootless_podman() {
    killed_run_then_next_run(Mode::Rootless);
}

#[tokio::test]
async fn a_missing_podman_says_how_to_start_one() {
    if crate::common::is_rerun_child() {
        let err = DockerEngine::connect_to(swe_eval::engine::Daemon::Podman)
            .await
            .unwrap_err();
        println!("CONNECT-ERROR: {err}");
        return;
    }
    let text = crate::common::rerun_alone(
        "podman::a_missing_podman_says_how_to_start_one",
        &[
            ("DOCKER_HOST", None),
            ("CONTAINER_HOST", Some("unix:///nonexistent/podman.sock")),
        ],
    );
    assert!(
        text.contains(
            "CONNECT-ERROR: cannot reach a Podman service (tried unix:///nonexistent/podman.sock (CONTAINER_HOST))"
        ),
        "{text}"
    );
    assert!(text.contains("podman system service"), "{text}");
    assert!(text.contains("podman.socket"), "{text}");
}
