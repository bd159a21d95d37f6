//! `conda_map.json`: this project's mapping of every conda name found in the frozen
//! environments to a PyPI distribution (installed at the conda version), Debian packages,
//! `skip` (a conda runtime piece or a native library the PyPI wheels bundle) or `none` (a
//! Python package with no PyPI or Debian source, reported as missing).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use super::table_error::{MapError, TableError};

const CONDA_MAP_JSON: &str = include_str!("conda_map.json");

/// Where a conda package comes from in the Debian flavour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CondaTarget<'a> {
    /// This PyPI distribution, at the conda version.
    Pypi(&'a str),
    /// These Debian packages (the version is Debian's).
    Debian(Vec<&'a str>),
    /// Not a Python package of the environment (a conda runtime piece, a bundled library).
    Skip(&'a str),
    /// A Python package with no PyPI or Debian source: missing, and reported.
    Unavailable(&'a str),
}

/// The conda-name mapping (`conda_map.json`).
#[derive(Debug, Deserialize)]
pub struct CondaMap {
    /// Debian packages that make a C compiler and Python's headers available.
    pub compiler: Vec<String>,
    /// Repositories whose own install builds C extensions.
    pub compiler_repos: Vec<String>,
    map: BTreeMap<String, String>,
}

impl CondaMap {
    /// Parses and checks the mapping (`conda_map.json`).
    pub fn parse(text: &str) -> Result<CondaMap, TableError> {
        let m: CondaMap = serde_json::from_str(text).map_err(|source| TableError::Json {
            file: "conda_map.json",
            source,
        })?;
        for name in m.map.keys() {
            m.target(name).expect("a key of the map")?;
        }
        Ok(m)
    }

    /// The target of a conda name: `None` when the map does not know it.
    pub fn target(&self, conda_name: &str) -> Option<Result<CondaTarget<'_>, MapError>> {
        let value = self.map.get(conda_name)?;
        let err = |message: &'static str| MapError {
            name: conda_name.to_string(),
            message,
        };
        let Some((kind, rest)) = value.split_once(':') else {
            return Some(Err(err("expected `pypi:`, `debian:`, `skip:` or `none:`")));
        };
        let rest = rest.trim();
        if rest.is_empty() {
            return Some(Err(err("nothing after the colon")));
        }
        Some(match kind {
            "pypi" if !rest.contains(char::is_whitespace) => Ok(CondaTarget::Pypi(rest)),
            "pypi" => Err(err("a PyPI name has no spaces")),
            "debian" => Ok(CondaTarget::Debian(rest.split_whitespace().collect())),
            "skip" => Ok(CondaTarget::Skip(rest)),
            "none" => Ok(CondaTarget::Unavailable(rest)),
            _ => Err(err("expected `pypi:`, `debian:`, `skip:` or `none:`")),
        })
    }

    /// Number of conda names mapped.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True for an empty mapping.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// The mapping the binary carries.
pub fn conda_map() -> &'static CondaMap {
    static MAP: OnceLock<CondaMap> = OnceLock::new();
    MAP.get_or_init(|| CondaMap::parse(CONDA_MAP_JSON).unwrap_or_else(|e| panic!("{e}")))
}

/// A mapping of `entries` (the members of its `map` object) with one compiler repository,
/// `a/ext`: for tests.
#[cfg(test)]
pub(super) fn test_map(entries: &str) -> CondaMap {
    CondaMap::parse(&format!(
        r#"{{"compiler": ["build-essential", "python3-dev"], "compiler_repos": ["a/ext"], "map": {{{entries}}}}}"#
    ))
    .unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_values_parse_or_are_refused_by_name() {
        let m = test_map(
            r#""a": "pypi:A-b", "z": "debian:zlib1g-dev libz", "s": "skip: runtime", "n": "none: conda only""#,
        );
        assert_eq!(m.target("a"), Some(Ok(CondaTarget::Pypi("A-b"))));
        assert_eq!(
            m.target("z"),
            Some(Ok(CondaTarget::Debian(vec!["zlib1g-dev", "libz"])))
        );
        assert_eq!(m.target("s"), Some(Ok(CondaTarget::Skip("runtime"))));
        assert_eq!(
            m.target("n"),
            Some(Ok(CondaTarget::Unavailable("conda only")))
        );
        assert_eq!(m.target("unknown"), None);
        for bad in [
            r#""x": "pip:x""#,
            r#""x": "pypi:""#,
            r#""x": "pypi:a b""#,
            r#""x": "x""#,
        ] {
            let e = CondaMap::parse(&format!(
                r#"{{"compiler": [], "compiler_repos": [], "map": {{{bad}}}}}"#
            ))
            .unwrap_err()
            .to_string();
            assert!(e.contains("`x`"), "{e}");
        }
    }
}
