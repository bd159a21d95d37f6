//! Who may use an evaluator over the network: it listens on a loopback address by default;
//! any other address needs a bearer token, and an evaluator that would listen elsewhere
//! without one refuses to start. With a token, every request must carry it.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// The shortest token accepted: a guessable one protects nothing.
pub const MIN_TOKEN_LEN: usize = 16;

/// Why the access settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    /// A non-loopback address without a token.
    #[error("listening on {addr} (not a loopback address) needs a bearer token: give --token-file FILE or set SWE_EVAL_TOKEN (at least {MIN_TOKEN_LEN} characters), or listen on 127.0.0.1")]
    NoToken {
        /// The address.
        addr: IpAddr,
    },
    /// The token file cannot be read.
    #[error("cannot read the token file {path}: {source}")]
    TokenFile {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The token is too short (or empty).
    #[error(
        "the bearer token from {from} has {len} characters; at least {MIN_TOKEN_LEN} are needed"
    )]
    Short {
        /// Where it came from.
        from: String,
        /// Its length.
        len: usize,
    },
}

/// The token from `file` (its content, trimmed), else from the environment variable's value
/// `env`; `None` when neither is given. An empty (or blank) `SWE_EVAL_TOKEN` is no token, as
/// an unset one: a loopback server then needs none, and any other address is refused for
/// want of one. A token file must hold one.
pub fn token_from(file: Option<&Path>, env: Option<String>) -> Result<Option<String>, AccessError> {
    let env = env.filter(|v| !v.trim().is_empty());
    let (token, from) = match (file, env) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path).map_err(|source| AccessError::TokenFile {
                path: path.to_path_buf(),
                source,
            })?;
            (text.trim().to_string(), path.display().to_string())
        }
        (None, Some(v)) => (v.trim().to_string(), "SWE_EVAL_TOKEN".to_string()),
        (None, None) => return Ok(None),
    };
    if token.chars().count() < MIN_TOKEN_LEN {
        return Err(AccessError::Short {
            from,
            len: token.chars().count(),
        });
    }
    Ok(Some(token))
}

/// Whether an evaluator may listen on `addr` with `token`: anywhere with one, only on a
/// loopback address without.
pub fn check_listen(addr: IpAddr, token: Option<&str>) -> Result<(), AccessError> {
    if token.is_some() || addr.is_loopback() {
        Ok(())
    } else {
        Err(AccessError::NoToken { addr })
    }
}

/// Whether a request whose `Authorization` header is `header` may pass: always without a
/// token, else only with `Bearer <token>`. The scheme is matched without regard to case
/// (`bearer`, `BEARER`), as HTTP's authentication schemes are (RFC 9110, 11.1), and may be
/// followed by more than one space; the token is compared exactly, in constant time.
pub fn authorized(token: Option<&str>, header: Option<&[u8]>) -> bool {
    let Some(token) = token else {
        return true;
    };
    let Some(given) = header.and_then(bearer) else {
        return false;
    };
    let want = token.as_bytes();
    let mut diff = (given.len() ^ want.len()) as u8 | u8::from(given.len() != want.len());
    for (i, w) in want.iter().enumerate() {
        diff |= w ^ given.get(i).copied().unwrap_or(0);
    }
    diff == 0
}

/// The credentials of an `Authorization` header of the `Bearer` scheme (any case), if it is
/// one: what follows the scheme and its spaces.
fn bearer(header: &[u8]) -> Option<&[u8]> {
    const SCHEME: &[u8] = b"bearer";
    let scheme = header.get(..SCHEME.len())?;
    let rest = &header[SCHEME.len()..];
    if !scheme.eq_ignore_ascii_case(SCHEME) || rest.first() != Some(&b' ') {
        return None;
    }
    let start = rest.iter().position(|b| *b != b' ')?;
    Some(&rest[start..])
}

impl swe_eval_core::failure::Classify for AccessError {
    fn kind(&self) -> swe_eval_core::failure::ErrorKind {
        // An address that needs a token, a token file that names nothing readable, a short
        // token: the command line has to change.
        swe_eval_core::failure::ErrorKind::Usage
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_needs_no_token_anything_else_does() {
        let token = "0123456789abcdef";
        assert!(check_listen("127.0.0.1".parse().unwrap(), None).is_ok());
        assert!(check_listen("::1".parse().unwrap(), None).is_ok());
        for other in ["0.0.0.0", "10.1.2.3", "::"] {
            let err = check_listen(other.parse().unwrap(), None).unwrap_err();
            assert!(err.to_string().contains("needs a bearer token"), "{err}");
            assert!(check_listen(other.parse().unwrap(), Some(token)).is_ok());
        }
    }

    #[test]
    fn tokens_come_from_a_file_or_the_environment_and_are_checked_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "  s3cret-s3cret-s3cret\n").unwrap();
        assert_eq!(
            token_from(Some(&file), Some("ignored-because-file".into())).unwrap(),
            Some("s3cret-s3cret-s3cret".into())
        );
        assert_eq!(token_from(None, None).unwrap(), None);
        // An empty or blank SWE_EVAL_TOKEN is no token; a short one is still refused.
        assert_eq!(token_from(None, Some(String::new())).unwrap(), None);
        assert_eq!(token_from(None, Some("  \n".into())).unwrap(), None);
        assert!(matches!(
            token_from(None, Some("short".into())),
            Err(AccessError::Short { len: 5, .. })
        ));
        assert!(matches!(
            token_from(Some(&dir.path().join("missing")), None),
            Err(AccessError::TokenFile { .. })
        ));
        let t = Some("s3cret-s3cret-s3cret");
        assert!(authorized(None, None));
        for good in [
            &b"Bearer s3cret-s3cret-s3cret"[..],
            b"bearer s3cret-s3cret-s3cret",
            b"BEARER s3cret-s3cret-s3cret",
            b"bEaReR   s3cret-s3cret-s3cret",
        ] {
            assert!(
                authorized(t, Some(good)),
                "{}",
                String::from_utf8_lossy(good)
            );
        }
        for bad in [
            &b"Bearer s3cret-s3cret-s3cre"[..],
            b"Bearer s3cret-s3cret-s3cret!",
            b"Bearer S3CRET-S3CRET-S3CRET",
            b"Bearers3cret-s3cret-s3cret",
            b"Basic s3cret-s3cret-s3cret",
            b"Bearer ",
            b"Bearer",
            b"s3cret-s3cret-s3cret",
            b"",
        ] {
            assert!(
                !authorized(t, Some(bad)),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        assert!(!authorized(t, None));
    }
}
