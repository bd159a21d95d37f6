//! A frozen-style environment built on the real daemon, offline except PyPI: a couple of tiny
//! pure-Python pins (from the pip list and from the conda list), the Debian flavour's
//! environment image built from them in one resolver run, and its `pip freeze` compared with
//! the frozen packages (`swe-eval spec --check-env` does the same for SWE-bench's files).

use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use swe_eval::dataset::Instance;
use swe_eval::engine::Engine;
use swe_eval::orchestrate::check_env::{check_spec, CheckEnvOptions};
use swe_eval::spec::frozen::FrozenEnv;
use swe_eval::spec::{DebianRelease, Flavour, SpecOptions, TestSpec};

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

#[tokio::test]
async fn a_frozen_style_environment_builds_from_pypi_and_its_freeze_matches() {
    let Some(e) = engine().await else { return };
    if prerequisite("PyPI (https://pypi.org)", pypi()).is_none() {
        return;
    }
    base_image().await;
    let env = frozen_style();
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
        frozen_env: Some(&env),
        ca_cert: ca.is_some(),
        ..SpecOptions::new(Flavour::Debian)
    };
    let spec = TestSpec::with_options(&inst, &opts).unwrap();
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

    let logs = tempfile::tempdir().unwrap();
    let opts = CheckEnvOptions {
        ca_cert: ca,
        build_logs: logs.path().to_path_buf(),
        freeze_timeout: Duration::from_secs(120),
    };
    let report = check_spec(&e, &spec, vec![inst.instance_id.clone()], &opts).await;
    // The tag is a content hash: remove what this test made, so the next run builds again.
    let removed = e.remove_image(&spec.env_image_tag).await;
    assert!(
        report.error.is_none(),
        "{:?} (log: {:?})",
        report.error,
        report.build_log
    );
    let check = report.check.expect("checked");
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
    assert_eq!(report.frozen_python, "3.11.10");
    assert_eq!(report.debian_python, "3.11");
    removed.unwrap();
}
