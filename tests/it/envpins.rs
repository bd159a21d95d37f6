//! A frozen-style environment built on the real daemon, offline except PyPI: a couple of tiny
//! pure-Python pins (from the pip list and from the conda list), the Debian flavour's
//! environment image built from them in one resolver run, and its `pip freeze` compared with
//! the frozen packages (`swe-eval spec --check-env` does the same for SWE-bench's files).

use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use swe_eval::engine::{DockerEngine, Engine};
use swe_eval::orchestrate::{check_spec, CheckEnvOptions};
use swe_eval_core::dataset::Instance;
use swe_eval_core::spec::{DebianRelease, Flavour, SpecOptions, TestSpec};
use swe_eval_core::spec::{EnvCheck, FrozenEnv};

use crate::common::prerequisite;
use crate::engine::{base_image, engine};

/// PyPI answers on its HTTPS port (the only network the build may use).
fn pypi() -> Result<(), String> {
    let addr = ("pypi.org", 443)
        .to_socket_addrs()
        .map_err(|e| e.to_string())?
        .next()
        .ok_or("no address for pypi.org")?;
    TcpStream::connect_timeout(&addr, Duration::from_secs(10))
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The host's trust bundle, for builds behind a TLS-inspecting proxy (as `--ca-cert`).
fn host_ca_bundle() -> Option<Vec<u8>> {
    let path = std::env::var_os("PIP_CERT")
        .or_else(|| std::env::var_os("SSL_CERT_FILE"))
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "/etc/ssl/certs/ca-certificates.crt".into());
    std::fs::read(path).ok()
}

fn frozen_style() -> FrozenEnv {
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
    FrozenEnv {
        python: "3.11.10".to_string(),
        // Conda runtime pieces are skipped; iniconfig, setuptools and wheel come from PyPI.
        conda: strings(&[
            "_libgcc_mutex=0.1",
            "ca-certificates=2024.9.24",
            "iniconfig=2.0.0",
            "libgcc-ng=11.2.0",
            "openssl=3.0.15",
            "pip=24.2",
            "python=3.11.10",
            "setuptools=75.1.0",
            "wheel=0.44.0",
        ]),
        pip: strings(&["packaging==24.1", "six==1.16.0"]),
    }
}

/// The engine, once Docker and PyPI answer and the base image is there.
async fn docker_and_pypi() -> Option<DockerEngine> {
    let e = engine().await?;
    prerequisite("PyPI (https://pypi.org)", pypi())?;
    base_image().await;
    Some(e)
}

/// The Debian-flavour spec of a made-up instance with frozen environment `env`, with the
/// host's trust bundle when there is one.
fn frozen_spec(env: &FrozenEnv) -> (TestSpec, Instance, Option<Vec<u8>>) {
    let inst: Instance = serde_json::from_value(serde_json::json!({
        "instance_id": "swe-eval-mini__frozen-1",
        "repo": "swe-eval-mini/frozen",
        "version": "0.1",
        "base_commit": "0123456789abcdef0123456789abcdef01234567",
        "test_patch": "",
    }))
    .unwrap();
    let ca = host_ca_bundle();
    let opts = SpecOptions {
        frozen_env: Some(env),
        ca_cert: ca.is_some(),
        ..SpecOptions::new(Flavour::Debian)
    };
    let spec = TestSpec::with_options(&inst, &opts).unwrap();
    (spec, inst, ca)
}

/// Builds the environment image of `spec`, compares its freeze, removes the image (the tag
/// is a content hash: the next run builds again) and gives the check with the build log.
async fn build_and_check(
    e: &impl Engine,
    spec: &TestSpec,
    inst: &Instance,
    ca: Option<Vec<u8>>,
) -> (EnvCheck, String) {
    let logs = tempfile::tempdir().unwrap();
    let opts = CheckEnvOptions {
        ca_cert: ca,
        build_logs: logs.path().to_path_buf(),
        freeze_timeout: Duration::from_secs(120),
    };
    let report = check_spec(e, spec, vec![inst.instance_id.clone()], &opts).await;
    let removed = e.remove_image(&spec.env_image_tag).await;
    let log = report
        .build_log
        .as_ref()
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .unwrap_or_default();
    assert!(report.error.is_none(), "{:?}\n{log}", report.error);
    assert_eq!(report.frozen_python, "3.11.10");
    assert_eq!(report.debian_python, "3.11");
    removed.unwrap();
    (report.check.expect("checked"), log)
}

#[tokio::test]
async fn a_frozen_style_environment_builds_from_pypi_and_its_freeze_matches() {
    let Some(e) = docker_and_pypi().await else {
        return;
    };
    let env = frozen_style();
    let (spec, inst, ca) = frozen_spec(&env);
    assert_eq!(spec.debian_release, Some(DebianRelease::Bookworm));
    let plan = spec.frozen_env.as_ref().unwrap();
    assert_eq!(
        plan.requirements(),
        "iniconfig==2.0.0\npackaging==24.1\nsetuptools==75.1.0\nsix==1.16.0\nwheel==0.44.0\n"
    );
    assert!(
        plan.debian.is_empty(),
        "nothing from Debian's mirror: {:?}",
        plan.debian
    );

    let (check, log) = build_and_check(&e, &spec, &inst, ca).await;
    assert_eq!(
        check.matched,
        ["iniconfig", "packaging", "setuptools", "six", "wheel"],
        "{check:?}"
    );
    assert!(
        check.different.is_empty() && check.missing.is_empty(),
        "{check:?}"
    );
    assert!(
        check.extra.is_empty(),
        "the venv holds the pins only: {check:?}"
    );
    assert_eq!(check.match_percent(), 100.0);
    assert!(
        !log.contains("did not install in one resolver run"),
        "one resolver run: {log}"
    );
}

/// A frozen set that pip's resolver refuses (PyPI's pytest 8.3.3 asks for pluggy 1.5 or newer;
/// the set pins 1.4.0, as a conda environment may) and that holds a pin whose source does not
/// build for this Python (backports.zoneinfo 0.2.1, a C extension older than 3.11's API, here
/// with no compiler at all): every other pin is installed at its frozen version, in the
/// fallback that collects wheels, and the one that cannot be is named in the build log.
#[tokio::test]
async fn a_frozen_set_pip_refuses_installs_as_pinned_and_names_what_did_not() {
    let Some(e) = docker_and_pypi().await else {
        return;
    };
    let mut env = frozen_style();
    env.pip = [
        "backports.zoneinfo==0.2.1",
        "pluggy==1.4.0",
        "pytest==8.3.3",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (spec, inst, ca) = frozen_spec(&env);
    assert!(!spec.frozen_env.as_ref().unwrap().compiler);

    let (check, log) = build_and_check(&e, &spec, &inst, ca).await;
    assert!(
        log.contains("did not install in one resolver run"),
        "the resolver refuses the set: {log}"
    );
    assert_eq!(
        check.matched,
        ["iniconfig", "pluggy", "pytest", "setuptools", "wheel"],
        "{check:?}"
    );
    assert_eq!(
        check.missing,
        [("backports.zoneinfo".to_string(), "0.2.1".to_string())],
        "{check:?}"
    );
    assert!(check.different.is_empty(), "{check:?}");
    // pytest 8.3.3 also needs packaging, which the set lacks: installed as pinned, nothing more.
    assert!(check.extra.is_empty(), "{check:?}");
    assert!(
        log.contains("swe-eval: frozen pins not installed: backports.zoneinfo==0.2.1"),
        "{log}"
    );
    // The others came from the collected wheels in one install, not one pip run each.
    let one_by_one: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("+ python -m pip install --no-deps ") && !l.contains("--no-index"))
        .collect();
    assert_eq!(
        one_by_one.len(),
        1,
        "only the pin with no wheel is retried alone: {one_by_one:?}"
    );
    assert!(
        one_by_one[0].contains("backports.zoneinfo==0.2.1"),
        "{one_by_one:?}"
    );
    assert!(
        log.contains("pip check (above) finds the frozen set at odds with PyPI metadata"),
        "{log}"
    );
}
