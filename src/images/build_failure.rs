//! Why one instance has no image: what a build hands back, and what preparation reports
//! (`build_events`), in a file of its own so both can name it; and what its message says
//! besides the error: where the build's log is, and `--ca-cert` when the log shows a TLS
//! certificate refused (a proxy that intercepts TLS, whose CA the image does not trust).

use std::path::{Path, PathBuf};

use super::Layer;

/// Why one instance has no image.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageFailure {
    /// The image that could not be had.
    pub image: String,
    /// Its layer.
    pub layer: Layer,
    /// Why.
    pub message: String,
    /// The saved build log, if there was one.
    pub log_path: Option<PathBuf>,
    /// Worth retrying (a daemon hiccup), as opposed to a broken recipe.
    pub transient: bool,
    /// Not tried: preparation was stopped before this image's build started.
    pub stopped: bool,
}

/// What in a build log says a TLS certificate was refused: Python's `ssl` (pip), OpenSSL's
/// and curl's words, git's, Go's (a registry pull). Matched without case.
const CERTIFICATE_ERRORS: [&str; 6] = [
    "certificate_verify_failed",
    "ssl: certificate",
    "certificate verify failed",
    "ssl certificate problem",
    "server certificate verification failed",
    "x509: certificate signed by unknown authority",
];

/// What to do when `log` shows a TLS certificate refused.
pub(super) fn certificate_hint(log: &str) -> Option<&'static str> {
    let log = log.to_lowercase();
    CERTIFICATE_ERRORS
        .iter()
        .any(|p| log.contains(p))
        .then_some(
            "the log shows a TLS certificate refused: behind a proxy that intercepts TLS, give \
             its CA bundle with --ca-cert FILE",
        )
}

/// A failure's message: `error`, then where its build log is (`log_path`, when it was
/// written), then the `--ca-cert` hint when the log (`log`) calls for it.
pub(super) fn failure_message(error: &str, log_path: Option<&Path>, log: Option<&str>) -> String {
    let mut message = error.to_string();
    if let Some(p) = log_path {
        message.push_str(&format!("; its build log: {}", p.display()));
    }
    if let Some(hint) = log.and_then(certificate_hint) {
        message.push_str(&format!("; {hint}"));
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_refused_in_the_log_suggests_ca_cert() {
        for log in [
            "Collecting numpy\n  WARNING: Retrying ... SSLError(SSLCertVerificationError(1, \
             '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local \
             issuer certificate (_ssl.c:1006)'))",
            "curl: (60) SSL certificate problem: self-signed certificate in certificate chain",
            "fatal: unable to access 'https://github.com/a/b/': server certificate verification failed. CAfile: none",
            "Get \"https://registry-1.docker.io/v2/\": x509: certificate signed by unknown authority",
        ] {
            assert!(certificate_hint(log).is_some(), "{log}");
        }
        for log in [
            "ERROR: No matching distribution found for numpy==9.9",
            "E: Unable to locate package libfoo",
            "",
        ] {
            assert_eq!(certificate_hint(log), None, "{log}");
        }
    }

    #[test]
    fn the_message_names_the_log_and_the_hint_when_there_is_one() {
        let path = Path::new("/out/logs/build_images/env/e_1/build_image.log");
        let refused = "pip: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed";
        assert_eq!(
            failure_message(
                "image build of e:1 failed: exit 1",
                Some(path),
                Some(refused)
            ),
            "image build of e:1 failed: exit 1; its build log: \
             /out/logs/build_images/env/e_1/build_image.log; the log shows a TLS certificate \
             refused: behind a proxy that intercepts TLS, give its CA bundle with --ca-cert FILE"
        );
        assert_eq!(
            failure_message(
                "image build of e:1 failed: exit 1",
                Some(path),
                Some("no match")
            ),
            "image build of e:1 failed: exit 1; its build log: \
             /out/logs/build_images/env/e_1/build_image.log"
        );
        assert_eq!(failure_message("gone", None, None), "gone");
    }
}
