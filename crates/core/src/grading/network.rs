//! Tests that failed for want of the network.
//!
//! Some SWE-bench tests talk to the internet (`httpbin.org`, a DNS lookup, a connection that
//! must time out rather than be refused). Run without the network they fail whatever the
//! patch does, so an "unresolved" verdict says nothing about the patch. [`needs_network`]
//! reads the test output and tells whether every failing required test failed with a network
//! error in its own output (name resolution, connection refused or reset, unreachable
//! network, retries exhausted, ...). Pure text: it knows nothing of how the tests ran.
//!
//! A test's own output is its failure block (pytest's `____ Class.test_x ____` or
//! `____ ERROR at setup of test_x ____`, Django's `ERROR: test_x (module.Class)`, sympy's
//! `____ path.py:test_x ____`, each up to the next block or `====` line) and its line of
//! pytest's short summary (`FAILED path::test_x - ConnectionError: ...`).
//!
//! The other way the network fails a test: the eval script's reinstall of the repository
//! (`pip install -e .`, before the tests) needs a requirement the environment lacks, such as
//! one the patch adds to `setup.cfg`, and cannot reach the package index for it; the tests then
//! fail on the missing import. [`install_needs_network`] reads that part of the log.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

/// Text that shows a network failure: resolver, socket and HTTP-client errors as Python's
/// standard library, `urllib3`, `requests`, `httpx` and `curl` print them.
pub const NETWORK_ERRORS: [&str; 17] = [
    "Name or service not known",
    "Temporary failure in name resolution",
    "nodename nor servname provided",
    "No address associated with hostname",
    "getaddrinfo failed",
    "socket.gaierror",
    "NameResolutionError",
    "Failed to resolve",
    "Could not resolve host",
    "Network is unreachable",
    "No route to host",
    "Connection refused",
    "Connection reset by peer",
    "Max retries exceeded",
    "Failed to establish a new connection",
    "urlopen error",
    "RemoteDisconnected",
];

/// Why a verdict may be the network's doing rather than the patch's.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NetworkEvidence {
    /// The failing required tests whose own output shows a network error.
    pub tests: Vec<String>,
    /// Failing required tests with no output of their own (missing from the log: they did
    /// not run). Not counted as the network's: they failed otherwise, as far as the log shows
    /// (after an install that could not reach the package index, every failing test is here).
    pub unattributed: Vec<String>,
    /// The first line that shows it, trimmed (at most 200 characters).
    pub error: String,
}

impl NetworkEvidence {
    /// True when the network explains every failing required test: each failed with a
    /// network error in its own output, or the install before the tests could not reach the
    /// package index. Only then does the verdict carry the `needs network` label (and the
    /// advice to run again with the network).
    pub fn explains_all(&self) -> bool {
        self.unattributed.is_empty() || self.tests.is_empty()
    }

    /// One line for a verdict's reason: how many tests failed with a network error in their
    /// own output, one example, the error, and how many failed otherwise.
    pub fn summary(&self) -> String {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        if self.tests.is_empty() {
            let n = self.unattributed.len();
            return format!("{n} required test{} did not run: {}", plural(n), self.error);
        }
        let n = self.tests.len();
        let mut line = format!(
            "{n} required test{} failed with a network error (e.g. {}: {})",
            plural(n),
            self.tests[0],
            self.error
        );
        if !self.unattributed.is_empty() {
            let m = self.unattributed.len();
            line.push_str(&format!(
                "; {m} other{} failed otherwise (no output of {} own: not run), so the network \
                 alone does not explain this verdict",
                plural(m),
                if m == 1 { "its" } else { "their" }
            ));
        }
        line
    }
}

/// A terminal colour or style sequence (`ESC [ ... m`): pytest run with `--color=yes` (sphinx's
/// own configuration does so) wraps block headers, short-summary words and test names in them.
static ANSI_SEQUENCE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\x1b\[[0-9;?]*[A-Za-z]").expect("static regex"));

/// `text` without terminal colour sequences, borrowed when it has none.
fn without_colours(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\x1b') {
        ANSI_SEQUENCE.replace_all(text, "")
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

static PYTEST_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^_{2,} (?:ERROR (?:at (?:setup|teardown) of|collecting) )?(.+?) _{2,}\s*$")
        .expect("static regex")
});
static DJANGO_HEADER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:ERROR|FAIL): (\S+ \(.+\))\s*$").expect("static regex"));
static SUMMARY_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:FAILED|ERROR) (\S+)(?: - |\s*$)").expect("static regex"));

/// The first line of `text` that carries a network error, trimmed.
/// pytest's `E   ...` lines (the exception) come first.
fn network_line(text: &str) -> Option<String> {
    let hit = |l: &&str| NETWORK_ERRORS.iter().any(|e| l.contains(e));
    let exception = text.lines().filter(|l| l.starts_with("E ")).find(hit);
    exception.or_else(|| text.lines().find(hit)).map(|l| {
        let l = l.trim();
        match l.char_indices().nth(200) {
            Some((i, _)) => format!("{}...", &l[..i]),
            None => l.to_string(),
        }
    })
}

/// Each block's text by the name in its header, plus short-summary lines by test id.
fn blocks(section: &str) -> HashMap<&str, String> {
    let mut out: HashMap<&str, String> = HashMap::new();
    let mut current: Option<&str> = None;
    for line in section.lines() {
        if let Some(c) = PYTEST_HEADER
            .captures(line)
            .or_else(|| DJANGO_HEADER.captures(line))
        {
            current = c.get(1).map(|m| m.as_str());
            continue;
        }
        if line.starts_with("====") {
            current = None;
        }
        if let Some(c) = SUMMARY_LINE.captures(line) {
            let id = c.get(1).map_or("", |m| m.as_str());
            let text = out.entry(id).or_default();
            text.push_str(line);
            text.push('\n');
            continue;
        }
        if let Some(name) = current {
            let text = out.entry(name).or_default();
            text.push_str(line);
            text.push('\n');
        }
    }
    out
}

/// The names a block header may give test `id`: the id itself, pytest's `Class.test_x[p]`
/// (the id without its file, `::` as `.`), the bare function, and the test's file (a
/// collection error).
fn header_names(id: &str) -> Vec<String> {
    let mut names = vec![id.to_string()];
    let parts: Vec<&str> = id.split("::").collect();
    if parts.len() > 1 {
        names.push(parts[1..].join("."));
        names.push(parts[parts.len() - 1].to_string());
        names.push(parts[0].to_string());
    }
    names
}

/// The output that belongs to test `id`, if any.
fn own_output(blocks: &HashMap<&str, String>, id: &str) -> Option<String> {
    let names = header_names(id);
    let mut text = String::new();
    for (name, block) in blocks {
        // sympy's header is `path.py:test_x`.
        let sympy = name
            .rsplit_once(':')
            .is_some_and(|(path, t)| path.ends_with(".py") && t == id);
        if sympy || names.iter().any(|n| n == name) {
            text.push_str(block);
        }
    }
    (!text.is_empty()).then_some(text)
}

/// Tells whether every test of `failing` (required tests that did not pass) failed with a
/// network error. `section` is the test output (between the official markers).
///
/// A test whose own output shows a network error counts; one whose own output shows none
/// means the failure is something else, and the answer is `None`. Tests with no output of
/// their own (missing from the log) never count: they are listed as failing otherwise
/// ([`NetworkEvidence::unattributed`]). `None` when `failing` is empty or no test's own output
/// shows a network error.
pub fn needs_network(section: &str, failing: &[String]) -> Option<NetworkEvidence> {
    if failing.is_empty() {
        return None;
    }
    let section = without_colours(section);
    let blocks = blocks(&section);
    let mut evidence = NetworkEvidence {
        tests: Vec::new(),
        unattributed: Vec::new(),
        error: String::new(),
    };
    for test in failing {
        match own_output(&blocks, test) {
            Some(text) => {
                let line = network_line(&text)?;
                if evidence.error.is_empty() {
                    evidence.error = line;
                }
                evidence.tests.push(test.clone());
            }
            None => evidence.unattributed.push(test.clone()),
        }
    }
    if evidence.tests.is_empty() {
        return None;
    }
    Some(evidence)
}

/// pip's lines when it found no distribution of a requirement.
const PIP_NOT_FOUND: [&str; 2] = [
    "No matching distribution found for",
    "Could not find a version that satisfies the requirement",
];

/// Tells whether the eval script's install step (`before_tests`: the log before the test
/// output) failed to fetch a requirement for want of the network: pip found no distribution
/// of it and its attempts to reach the index failed with a network error. Every test of
/// `failing` then counts as unattributed. `None` when `failing` is empty or the install shows
/// no such failure.
pub fn install_needs_network(before_tests: &str, failing: &[String]) -> Option<NetworkEvidence> {
    if failing.is_empty() {
        return None;
    }
    let before_tests = without_colours(before_tests);
    let before_tests = before_tests.as_ref();
    let not_found = before_tests
        .lines()
        .find(|l| PIP_NOT_FOUND.iter().any(|p| l.contains(p)))?;
    network_line(before_tests)?;
    let line = not_found.trim();
    let line = match line.char_indices().nth(200) {
        Some((i, _)) => format!("{}...", &line[..i]),
        None => line.to_string(),
    };
    Some(NetworkEvidence {
        tests: Vec::new(),
        unattributed: failing.to_vec(),
        error: format!("the eval-time install could not reach the package index: {line}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// pylint-4661's gold patch adds `appdirs` to `setup.cfg`; the eval script's offline
    /// `pip install -e .` cannot fetch it and the tests fail at import.
    const INSTALL_LOG: &str = "\
+ python -m pip install --no-build-isolation -e .
Obtaining file:///testbed
WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by 'NewConnectionError('<HTTPSConnection object>: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')': /simple/appdirs/
ERROR: Could not find a version that satisfies the requirement appdirs>=1.4.0 (from pylint) (from versions: none)
ERROR: No matching distribution found for appdirs>=1.4.0
+ git apply -v -
";

    #[test]
    fn install_that_could_not_reach_the_index_needs_network() {
        let failing = ids(&["tests/lint/unittest_lint.py::test_pylint_home"]);
        let e = install_needs_network(INSTALL_LOG, &failing).expect("flagged");
        assert_eq!(e.unattributed, failing);
        assert!(e.tests.is_empty());
        assert!(e.error.contains("appdirs>=1.4.0"), "{}", e.error);
        assert!(e
            .summary()
            .starts_with("1 required test did not run: the eval-time install"));
        // Nothing failing, or an install that fetched nothing: no flag.
        assert_eq!(install_needs_network(INSTALL_LOG, &[]), None);
        let quiet = "+ python -m pip install -e .\nSuccessfully installed pylint-2.9.0\n";
        assert_eq!(install_needs_network(quiet, &failing), None);
        // A requirement that does not exist at all (no network error): the patch's doing.
        let missing = "ERROR: No matching distribution found for nosuchpkg\n";
        assert_eq!(install_needs_network(missing, &failing), None);
    }

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// A pytest log: one test fails resolving a host, one setup error is unreachable network,
    /// one test fails on an assertion.
    const PYTEST_LOG: &str = "\
============================= test session starts ==============================
collected 4 items

test_requests.py .FEF                                                   [100%]

=================================== FAILURES ===================================
____________________ RequestsTestCase.test_HTTP_200_OK_GET _____________________

    def test_HTTP_200_OK_GET(self):
>       r = requests.get(httpbin('get'))
E       requests.exceptions.ConnectionError: HTTPConnectionPool(host='httpbin.org', port=80): Max retries exceeded with url: /get (Caused by <class 'socket.gaierror'>: [Errno -2] Name or service not known)

test_requests.py:100: ConnectionError
_____________________ RequestsTestCase.test_prepared_body ______________________

    def test_prepared_body(self):
>       assert p.body == b'x'
E       AssertionError: assert b'y' == b'x'

test_requests.py:200: AssertionError
==================================== ERRORS ====================================
____________ ERROR at setup of TestTimeout.test_connect_timeout[t0] ____________

>       sock.connect(sa)
E       OSError: [Errno 101] Network is unreachable

connection.py:81: OSError
=========================== short test summary info ============================
PASSED test_requests.py::RequestsTestCase::test_ok
FAILED test_requests.py::RequestsTestCase::test_HTTP_200_OK_GET
FAILED test_requests.py::RequestsTestCase::test_prepared_body - AssertionError: assert b'y' == b'x'
ERROR test_requests.py::TestTimeout::test_connect_timeout[t0]
=================== 2 failed, 1 passed, 1 error in 0.52s =======================
";

    #[test]
    fn every_failing_test_with_a_network_error_in_its_own_block() {
        let failing = ids(&[
            "test_requests.py::RequestsTestCase::test_HTTP_200_OK_GET",
            "test_requests.py::TestTimeout::test_connect_timeout[t0]",
        ]);
        let e = needs_network(PYTEST_LOG, &failing).expect("network");
        assert_eq!(e.tests, failing);
        assert!(e.unattributed.is_empty());
        assert!(e.error.contains("Max retries exceeded"), "{}", e.error);
        assert!(e.summary().starts_with("2 required tests failed with a network error (e.g. test_requests.py::RequestsTestCase::test_HTTP_200_OK_GET: "), "{}", e.summary());
    }

    #[test]
    fn one_failure_of_another_kind_means_no() {
        let failing = ids(&[
            "test_requests.py::RequestsTestCase::test_HTTP_200_OK_GET",
            "test_requests.py::RequestsTestCase::test_prepared_body",
        ]);
        assert_eq!(needs_network(PYTEST_LOG, &failing), None);
        let alone = ids(&["test_requests.py::RequestsTestCase::test_prepared_body"]);
        assert_eq!(needs_network(PYTEST_LOG, &alone), None);
    }

    #[test]
    fn coloured_output_is_read_as_plain() {
        // sphinx's linkcheck tests as pytest prints them with `--color=yes`: the headers, the
        // summary words and the test names in colour sequences; the error inside an assertion.
        let log = "\
\x1b[31m\x1b[1m________________________________ test_defaults _________________________________\x1b[0m

\x1b[1m\x1b[31mE       assert \"Anchor 'top' not found\" in 'links.txt:11: [broken] https://www.google.com/#top: HTTPSConnectionPool(host=\\'www.google.com\\', port=443): Max retries exceeded'\x1b[0m
\x1b[31m\x1b[1m______________________________ test_latex_images _______________________________\x1b[0m

\x1b[1m\x1b[31mE       AssertionError: assert '{python-logo}.png' in 'x'\x1b[0m
\x1b[91mWARNING: Could not fetch remote image: https://www.python.org/static/img/python-logo.png [Failed to resolve 'www.python.org']\x1b[39;49;00m
\x1b[31m\x1b[1m_________________________________ test_other __________________________________\x1b[0m

\x1b[1m\x1b[31mE       AssertionError: assert 1 == 2\x1b[0m
\x1b[36m\x1b[1m=========================== short test summary info ============================\x1b[0m
\x1b[31mFAILED\x1b[0m tests/test_build_linkcheck.py::\x1b[1mtest_defaults\x1b[0m - assert \"Anchor 'top' not found\"
";
        let linkcheck = ids(&[
            "tests/test_build_linkcheck.py::test_defaults",
            "tests/test_build_latex.py::test_latex_images",
        ]);
        let e = needs_network(log, &linkcheck).expect("network");
        assert_eq!(e.tests, linkcheck);
        assert!(e.unattributed.is_empty(), "{:?}", e.unattributed);
        assert!(!e.error.contains('\x1b'), "{}", e.error);
        assert!(e.error.contains("Max retries exceeded"), "{}", e.error);
        // A coloured block that shows no network error still says no.
        let mut with_other = linkcheck.clone();
        with_other.push("tests/test_x.py::test_other".into());
        assert_eq!(needs_network(log, &with_other), None);
    }

    #[test]
    fn the_short_summary_line_is_a_tests_own_output() {
        // No failure block (`--tb=no`): the summary's message carries the error.
        let log = "\
FAILED tests/test_net.py::test_fetch - requests.exceptions.ConnectionError: Failed to establish a new connection: [Errno 111] Connection refused
FAILED tests/test_net.py::test_parse - ValueError: bad
========================= 2 failed in 0.10s =========================
";
        let e = needs_network(log, &ids(&["tests/test_net.py::test_fetch"])).expect("network");
        assert_eq!(e.tests, ids(&["tests/test_net.py::test_fetch"]));
        assert!(e.error.contains("Connection refused"));
        assert_eq!(
            needs_network(log, &ids(&["tests/test_net.py::test_parse"])),
            None
        );
    }

    #[test]
    fn missing_tests_never_count_as_the_networks_and_are_said_to_fail_otherwise() {
        let collection = "\
==================================== ERRORS ====================================
____________________ ERROR collecting tests/test_remote.py _____________________
tests/test_remote.py:3: in <module>
    DATA = urlopen('https://example.org/data.json').read()
E   urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>
=========================== 1 error in 0.20s ==========================
";
        // The test's file failed to collect: its block is the file's.
        let e = needs_network(collection, &ids(&["tests/test_remote.py::test_a"])).expect("file");
        assert_eq!(e.tests, ids(&["tests/test_remote.py::test_a"]));
        assert!(e.explains_all());
        // A test of another file, absent from the log, alone: not the network's.
        assert_eq!(
            needs_network(collection, &ids(&["tests/test_other.py::test_b"])),
            None
        );
        // With one that failed on the network: counted apart, and the label does not hold.
        let both = ids(&[
            "tests/test_remote.py::test_a",
            "tests/test_other.py::test_b",
        ]);
        let e = needs_network(collection, &both).expect("one of them");
        assert_eq!(e.tests, ids(&["tests/test_remote.py::test_a"]));
        assert_eq!(e.unattributed, ids(&["tests/test_other.py::test_b"]));
        assert!(!e.explains_all());
        assert!(
            e.summary()
                .starts_with("1 required test failed with a network error")
                && e.summary().contains("; 1 other failed otherwise"),
            "{}",
            e.summary()
        );
        // Without any network error in the output, a missing test is not the network's.
        let plain = "=========================== 1 failed in 0.20s ==========================\n";
        assert_eq!(
            needs_network(plain, &ids(&["tests/test_other.py::test_b"])),
            None
        );
        assert_eq!(needs_network(PYTEST_LOG, &[]), None);
    }

    #[test]
    fn django_and_sympy_blocks() {
        let django = "\
======================================================================
ERROR: test_urlfield_remote (forms_tests.tests.FieldTests)
----------------------------------------------------------------------
Traceback (most recent call last):
socket.gaierror: [Errno -3] Temporary failure in name resolution
======================================================================
FAIL: test_local (forms_tests.tests.FieldTests)
----------------------------------------------------------------------
AssertionError: 1 != 2
----------------------------------------------------------------------
Ran 2 tests in 0.01s
";
        let remote = ids(&["test_urlfield_remote (forms_tests.tests.FieldTests)"]);
        assert_eq!(
            needs_network(django, &remote).expect("django").tests,
            remote
        );
        assert_eq!(
            needs_network(django, &ids(&["test_local (forms_tests.tests.FieldTests)"])),
            None
        );
        let sympy = "\
________________________________________________________________________________
______ sympy/utilities/tests/test_net.py:test_download _______
  File \"sympy/utilities/tests/test_net.py\", line 9, in test_download
urllib.error.URLError: <urlopen error [Errno 113] No route to host>
============= tests finished: 3 passed, 1 exceptions, in 0.5 seconds =============
";
        let e = needs_network(sympy, &ids(&["test_download"])).expect("sympy");
        assert_eq!(e.tests, ids(&["test_download"]));
        assert!(e.error.contains("No route to host"));
    }
}
