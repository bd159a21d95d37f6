//! What produced a verdict, and whether it may stand for another run: one function computes a
//! verdict's identity from everything that decides it, and one compares a recorded identity
//! with the one a run would use. `run`'s resume and `serve`'s cache both go through here.
//!
//! The parts, each hashed on its own so that a later run can say which one changed:
//!
//! | part | what | if it changed |
//! | --- | --- | --- |
//! | `patch` | the prediction's patch ([`crate::predictions::Prediction::patch_hash`]) | run again |
//! | `eval_script` | the eval script's bytes | run again |
//! | `test_patch` | the instance's test patch | run again |
//! | `image` | the image's content identity: the recipe it is built from (Dockerfiles, scripts, base commit), or the image a row or `--namespace` names | run again |
//! | `strict` | strict runs remove files the patch adds that change test collection | run again |
//! | `timeout_secs`, `memory_bytes` | the job's limits | run again when the limit decided the verdict (timed out, killed for memory), or a shorter timeout than the job took; else kept |
//! | `cpus_milli` | the CPUs a job is given | run again (some suites skip tests with fewer than two) |
//! | `network` | the job's network | run again when it needed the network and now has it, or had it and now has not; else kept |
//! | `tests` | FAIL_TO_PASS, PASS_TO_PASS and the log parser | grade the saved log again, no container |
//! | `rules` | the grading rules' version ([`RULES_VERSION`]) | grade the saved log again |
//!
//! The identity's `key` hashes every part and the instance's id: two verdicts with one key are
//! of one instance and were produced by the same inputs under the same limits (`serve`'s cache answers a request from a verdict of its key).

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The grading rules' version: raised whenever grading would decide a log differently, so a
/// verdict graded by older rules is graded again from its saved log.
pub const RULES_VERSION: u32 = 1;

/// The limits a verdict ran under that can decide it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// The job's timeout, seconds.
    pub timeout_secs: u64,
    /// The job's memory limit, bytes (`None`: none).
    pub memory_bytes: Option<i64>,
    /// The job's CPUs, in thousandths (`None`: no limit); some suites skip tests below two.
    pub cpus_milli: Option<u64>,
    /// The job's container had the network.
    pub network: bool,
    /// Strict mode: collection-altering files the patch adds were removed before the tests.
    pub strict: bool,
}

/// Everything that decides a verdict but the patch: the same for every prediction of an
/// instance in one run, so it is made once per instance ([`Recipe::of`]).
#[derive(Debug, Clone, Copy)]
pub struct Instance<'a> {
    /// The instance's id: a verdict stands for its own instance only (two instances with the
    /// same inputs still have two verdicts).
    pub instance_id: &'a str,
    /// The eval script.
    pub eval_script: &'a str,
    /// The instance's test patch.
    pub test_patch: &'a str,
    /// The image's content identity (see the module docs).
    pub image: &'a str,
    /// FAIL_TO_PASS.
    pub fail_to_pass: &'a [String],
    /// PASS_TO_PASS.
    pub pass_to_pass: &'a [String],
    /// The log parser's name.
    pub log_parser: &'a str,
}

/// The hashed parts of an instance's inputs and the run's limits: what every identity of the
/// instance in this run shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recipe {
    instance_id: String,
    eval_script: String,
    test_patch: String,
    image: String,
    tests: String,
    limits: Limits,
}

/// A verdict's identity: each part's hash (see the module docs) and the key over all of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// SHA-256 (hex) over every part below: the content key.
    pub key: String,
    /// SHA-256 of the patch.
    pub patch: String,
    /// SHA-256 of the eval script.
    pub eval_script: String,
    /// SHA-256 of the test patch.
    pub test_patch: String,
    /// SHA-256 of the image's content identity.
    pub image: String,
    /// SHA-256 of FAIL_TO_PASS, PASS_TO_PASS and the log parser.
    pub tests: String,
    /// The grading rules' version.
    pub rules: u32,
    /// The limits.
    #[serde(flatten)]
    pub limits: Limits,
}

/// How a recorded verdict ended, as far as its reuse is concerned.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Ended {
    /// It hit its timeout.
    pub timed_out: bool,
    /// It was killed for memory.
    pub oom_killed: bool,
    /// Unresolved only because required tests failed with network errors.
    pub needs_network: bool,
    /// Seconds its container ran.
    pub run_secs: f64,
    /// An empty patch: nothing ran, so nothing but the patch decides it.
    pub empty_patch: bool,
}

/// One part of an identity that differs, and so why a verdict is run or graded again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Change {
    /// The patch.
    Patch,
    /// The eval script.
    EvalScript,
    /// The test patch.
    TestPatch,
    /// The image's recipe or name.
    Image,
    /// Strict mode on or off.
    Strict,
    /// The timeout, which decided the verdict (or is now shorter than the job took).
    Timeout,
    /// The memory limit, which decided the verdict.
    Memory,
    /// The CPUs a job is given (some suites skip tests with fewer than two).
    Cpus,
    /// The network, which the verdict needed (or had, and now has not).
    Network,
    /// FAIL_TO_PASS, PASS_TO_PASS or the log parser.
    Tests,
    /// The grading rules.
    Rules,
    /// No identity recorded (a verdict written by an older swe-eval): its inputs are unknown.
    Unknown,
}

impl Change {
    /// What changed, for a person.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Patch => "patch changed",
            Change::EvalScript => "eval script changed",
            Change::TestPatch => "test patch changed",
            Change::Image => "image changed",
            Change::Strict => "strict mode changed",
            Change::Timeout => "timeout changed",
            Change::Memory => "memory limit changed",
            Change::Cpus => "CPU limit changed",
            Change::Network => "network changed",
            Change::Tests => "test lists changed",
            Change::Rules => "grading rules changed",
            Change::Unknown => "inputs not recorded",
        }
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What becomes of a recorded verdict in a run that would use another identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reuse {
    /// It stands as it is.
    Keep,
    /// Only what grades it changed: grade its saved log again, no container.
    Regrade(Vec<Change>),
    /// What runs changed: run it again.
    Rerun(Vec<Change>),
}

fn sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Hashes named, length-prefixed parts, so no two different inputs hash the same bytes.
fn parts<'a>(parts: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> String {
    let mut h = Sha256::new();
    for (name, bytes) in parts {
        h.update(name.as_bytes());
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    }
    hex::encode(h.finalize())
}

impl Recipe {
    /// The recipe of `instance`'s inputs under `limits`.
    pub fn of(instance: &Instance<'_>, limits: Limits) -> Recipe {
        let tests = parts([
            ("fail_to_pass", instance.fail_to_pass.join("\n").as_bytes()),
            ("pass_to_pass", instance.pass_to_pass.join("\n").as_bytes()),
            ("log_parser", instance.log_parser.as_bytes()),
        ]);
        Recipe {
            instance_id: instance.instance_id.to_string(),
            eval_script: sha(instance.eval_script.as_bytes()),
            test_patch: sha(instance.test_patch.as_bytes()),
            image: sha(instance.image.as_bytes()),
            tests,
            limits,
        }
    }

    /// The identity of a verdict on `patch_hash` (the patch's SHA-256, as predictions hash it)
    /// with this recipe.
    pub fn identity(&self, patch_hash: &str) -> Identity {
        let l = &self.limits;
        let limits = format!(
            "{} {:?} {:?} {} {}",
            l.timeout_secs, l.memory_bytes, l.cpus_milli, l.network, l.strict
        );
        let key = parts([
            ("instance_id", self.instance_id.as_bytes()),
            ("patch", patch_hash.as_bytes()),
            ("eval_script", self.eval_script.as_bytes()),
            ("test_patch", self.test_patch.as_bytes()),
            ("image", self.image.as_bytes()),
            ("tests", self.tests.as_bytes()),
            ("rules", &RULES_VERSION.to_le_bytes()[..]),
            ("limits", limits.as_bytes()),
        ]);
        Identity {
            key,
            patch: patch_hash.to_string(),
            eval_script: self.eval_script.clone(),
            test_patch: self.test_patch.clone(),
            image: self.image.clone(),
            tests: self.tests.clone(),
            rules: RULES_VERSION,
            limits: self.limits,
        }
    }
}

impl Identity {
    /// Whether a verdict with this identity, which ended as `ended`, stands for a run that
    /// would give it `want` (see the module docs' table): kept, graded again, or run again,
    /// with every change that calls for it.
    pub fn reuse(&self, want: &Identity, ended: &Ended) -> Reuse {
        if self.patch != want.patch {
            return Reuse::Rerun(vec![Change::Patch]);
        }
        if ended.empty_patch {
            // Nothing ran: nothing but the patch decides an empty patch's verdict.
            return Reuse::Keep;
        }
        let (mine, theirs) = (&self.limits, &want.limits);
        let mut rerun = Vec::new();
        if self.eval_script != want.eval_script {
            rerun.push(Change::EvalScript);
        }
        if self.test_patch != want.test_patch {
            rerun.push(Change::TestPatch);
        }
        if self.image != want.image {
            rerun.push(Change::Image);
        }
        if mine.strict != theirs.strict {
            rerun.push(Change::Strict);
        }
        if mine.cpus_milli != theirs.cpus_milli {
            rerun.push(Change::Cpus);
        }
        if mine.timeout_secs != theirs.timeout_secs
            && (ended.timed_out || ended.run_secs >= theirs.timeout_secs as f64)
        {
            rerun.push(Change::Timeout);
        }
        if mine.memory_bytes != theirs.memory_bytes && ended.oom_killed {
            rerun.push(Change::Memory);
        }
        if mine.network != theirs.network && (mine.network || ended.needs_network) {
            rerun.push(Change::Network);
        }
        if !rerun.is_empty() {
            return Reuse::Rerun(rerun);
        }
        let mut regrade = Vec::new();
        if self.tests != want.tests {
            regrade.push(Change::Tests);
        }
        if self.rules != want.rules {
            regrade.push(Change::Rules);
        }
        if regrade.is_empty() {
            Reuse::Keep
        } else {
            Reuse::Regrade(regrade)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inst<'a>(eval: &'a str, f2p: &'a [String]) -> Instance<'a> {
        Instance {
            instance_id: "a__b-1",
            eval_script: eval,
            test_patch: "tp",
            image: "recipe",
            fail_to_pass: f2p,
            pass_to_pass: &[],
            log_parser: "parse_log_pytest",
        }
    }

    const LIMITS: Limits = Limits {
        timeout_secs: 60,
        memory_bytes: None,
        cpus_milli: None,
        network: false,
        strict: false,
    };

    fn ran(secs: f64) -> Ended {
        Ended {
            run_secs: secs,
            ..Default::default()
        }
    }

    #[test]
    fn each_part_changes_the_key_and_is_named_as_its_change() {
        let f2p = ["t::a".to_string()];
        let base = Recipe::of(&inst("eval", &f2p), LIMITS).identity("p");
        assert_eq!(base, Recipe::of(&inst("eval", &f2p), LIMITS).identity("p"));
        let other_tests = ["t::b".to_string()];
        let cases: Vec<(Identity, Reuse)> = vec![
            (
                Recipe::of(&inst("eval", &f2p), LIMITS).identity("q"),
                Reuse::Rerun(vec![Change::Patch]),
            ),
            (
                Recipe::of(&inst("eval2", &f2p), LIMITS).identity("p"),
                Reuse::Rerun(vec![Change::EvalScript]),
            ),
            (
                Recipe::of(
                    &Instance {
                        test_patch: "tp2",
                        ..inst("eval", &f2p)
                    },
                    LIMITS,
                )
                .identity("p"),
                Reuse::Rerun(vec![Change::TestPatch]),
            ),
            (
                Recipe::of(
                    &Instance {
                        image: "other",
                        ..inst("eval", &f2p)
                    },
                    LIMITS,
                )
                .identity("p"),
                Reuse::Rerun(vec![Change::Image]),
            ),
            (
                Recipe::of(
                    &inst("eval", &f2p),
                    Limits {
                        strict: true,
                        ..LIMITS
                    },
                )
                .identity("p"),
                Reuse::Rerun(vec![Change::Strict]),
            ),
            (
                Recipe::of(&inst("eval", &other_tests), LIMITS).identity("p"),
                Reuse::Regrade(vec![Change::Tests]),
            ),
        ];
        for (want, reuse) in cases {
            assert_ne!(want.key, base.key);
            assert_eq!(base.reuse(&want, &ran(5.0)), reuse);
        }
        assert_eq!(base.reuse(&base, &ran(5.0)), Reuse::Keep);
        // Another instance with the very same inputs: another key (its own verdict).
        let other = Instance {
            instance_id: "a__b-2",
            ..inst("eval", &f2p)
        };
        assert_ne!(Recipe::of(&other, LIMITS).identity("p").key, base.key);
    }

    #[test]
    fn a_limit_reruns_only_the_verdicts_it_decided_or_would_decide() {
        let f2p = ["t::a".to_string()];
        let at = |timeout_secs, network| {
            Recipe::of(
                &inst("eval", &f2p),
                Limits {
                    timeout_secs,
                    network,
                    ..LIMITS
                },
            )
            .identity("p")
        };
        let v = at(60, false);
        // A longer timeout: a verdict that finished in 5 s is kept; one that timed out runs.
        assert_eq!(v.reuse(&at(600, false), &ran(5.0)), Reuse::Keep);
        let timed_out = Ended {
            timed_out: true,
            ..ran(60.0)
        };
        assert_eq!(
            v.reuse(&at(600, false), &timed_out),
            Reuse::Rerun(vec![Change::Timeout])
        );
        // A shorter timeout than the job took: a fresh run would time out.
        assert_eq!(
            v.reuse(&at(10, false), &ran(30.0)),
            Reuse::Rerun(vec![Change::Timeout])
        );
        // The network: needed and now given, or given and now taken away, runs again.
        let needed = Ended {
            needs_network: true,
            ..ran(5.0)
        };
        assert_eq!(v.reuse(&at(60, true), &ran(5.0)), Reuse::Keep);
        assert_eq!(
            v.reuse(&at(60, true), &needed),
            Reuse::Rerun(vec![Change::Network])
        );
        assert_eq!(
            at(60, true).reuse(&at(60, false), &ran(5.0)),
            Reuse::Rerun(vec![Change::Network])
        );
        // An empty patch: only the patch decides it.
        let empty = Ended {
            empty_patch: true,
            ..Default::default()
        };
        assert_eq!(v.reuse(&at(5, true), &empty), Reuse::Keep);
    }

    #[test]
    fn every_change_says_what_it_is() {
        for c in [
            Change::Patch,
            Change::EvalScript,
            Change::TestPatch,
            Change::Image,
            Change::Strict,
            Change::Timeout,
            Change::Memory,
            Change::Cpus,
            Change::Network,
            Change::Tests,
            Change::Rules,
            Change::Unknown,
        ] {
            assert!(c.to_string().contains(' '), "{c:?}");
        }
    }
}
