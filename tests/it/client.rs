//! The Python client (clients/python) without Docker and without a `swe-eval serve`: its own
//! tests against a fake server that misbehaves every way the retry rules name (refused, dropped,
//! an empty or garbled status line, a cut answer, a slow attempt, 5xx, 429 with and without
//! Retry-After, 4xx, going away and coming back with its ids), for the sync and the asyncio
//! client, with the verl-style reward functions on canned answers; and `pip install` of the
//! package offline into a folder it is imported from. The live tests against the real server
//! are in `serve::the_api_and_the_python_client_on_the_real_engine_with_the_mini_benchmark`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{prerequisite, require_program};

fn client_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("clients")
        .join("python")
}

/// Runs the unittest `modules` of clients/python/tests with python3; their output, after
/// checking they all passed (and that `at_least` tests ran).
fn python_tests(modules: &[&str], at_least: usize) -> String {
    let dir = client_dir();
    let out = Command::new("python3")
        .args(["-m", "unittest", "-v"])
        .args(modules)
        .current_dir(&dir)
        .env("PYTHONPATH", dir.join("tests"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("SWE_EVAL_URL")
        .env_remove("SWE_EVAL_TOKEN")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    assert!(out.status.success(), "python client tests failed:\n{text}");
    let ran = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("Ran ")?
                .split(' ')
                .next()?
                .parse::<usize>()
                .ok()
        })
        .unwrap_or_else(|| panic!("no `Ran N tests` line:\n{text}"));
    assert!(
        ran >= at_least,
        "{ran} tests ran, expected {at_least}:\n{text}"
    );
    text
}

#[test]
fn the_python_client_retries_what_it_should_and_scores_against_a_fake_server() {
    if !require_program("python3") {
        return;
    }
    let t0 = std::time::Instant::now();
    let text = python_tests(&["test_retries", "test_score"], 57);
    for case in [
        "test_a_connection_closed_with_no_answer_is_retried (test_retries.Async",
        "test_a_wait_survives_the_server_going_away_and_coming_back (test_retries.Sync",
        "test_4xx_other_than_429_are_not_retried (test_retries.Async",
        "test_an_older_server_without_score_falls_back_to_resolved",
    ] {
        assert!(text.contains(case), "{case} ran:\n{text}");
    }
    eprintln!("python client tests took {:.1?}", t0.elapsed());
}

#[test]
fn the_python_client_installs_offline_with_pip_and_imports_from_there() {
    if !require_program("python3") {
        return;
    }
    let pip = Command::new("python3")
        .args(["-m", "pip", "--version"])
        .output()
        .map_err(|e| e.to_string())
        .and_then(|o| {
            if o.status.success() {
                Ok(())
            } else {
                Err(String::from_utf8_lossy(&o.stderr).into_owned())
            }
        });
    if prerequisite("pip for python3", pip).is_none() {
        return;
    }
    let text = python_tests(&["test_package"], 7);
    assert!(
        text.contains("test_pip_installs_it_offline_as_a_user_does") && text.contains("OK"),
        "{text}"
    );
}
