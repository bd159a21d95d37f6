//! Pins too old for the Python a frozen environment gets here.
//!
//! A frozen environment whose Python no Debian release ships runs on a newer one (astropy's
//! oldest froze 3.6 and get bullseye's 3.9). Most pins still work there, or have no wheel for
//! it and are replaced by [`super::frozen_wheels`]; a few pure-Python releases install but do
//! not run. `too_old.json` (facts measured here, each with why) names them: a pin of a listed
//! package older than the first release that runs on the image's Python is replaced by that
//! release, named in the spec's warnings and the build log; the freeze comparison still
//! measures against the frozen version (a replaced pin counts as different).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use super::frozen_wheels::{cmp_release, release};
use super::pkgname::normalize_name;
use super::table_error::TableError;

const TOO_OLD_JSON: &str = include_str!("too_old.json");

/// From which Python on a package's older releases do not run.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct TooOld {
    /// The first Python (`major.minor`) they do not run on.
    pub python: String,
    /// The first release that runs there.
    pub first: String,
    /// What fails, and where it was measured.
    pub why: String,
}

/// The packages `too_old.json` lists, by normalized name.
#[derive(Debug, Default)]
pub struct TooOldTable {
    packages: BTreeMap<String, TooOld>,
}

#[derive(Deserialize)]
struct TooOldFile {
    packages: BTreeMap<String, TooOld>,
}

impl TooOldTable {
    /// Parses `too_old.json`; every `python` and `first` must be a version.
    pub fn parse(text: &str) -> Result<TooOldTable, TableError> {
        let f: TooOldFile = serde_json::from_str(text).map_err(|source| TableError::Json {
            file: "too_old.json",
            source,
        })?;
        let mut packages = BTreeMap::new();
        for (name, t) in f.packages {
            if release(&t.python).is_none() || release(&t.first).is_none() {
                return Err(TableError::NotVersions {
                    name,
                    python: t.python,
                    first: t.first,
                });
            }
            packages.insert(normalize_name(&name), t);
        }
        Ok(TooOldTable { packages })
    }

    /// The release to install instead of `name==version` on Python `python` (`major.minor`):
    /// the first one that runs there, when the pin is older; `None` otherwise.
    pub fn replacement(&self, name: &str, version: &str, python: &str) -> Option<String> {
        let t = self.packages.get(&normalize_name(name))?;
        let (py, since) = (release(python)?, release(&t.python)?);
        if cmp_release(&py, &since).is_lt()
            || !cmp_release(&release(version)?, &release(&t.first)?).is_lt()
        {
            return None;
        }
        Some(t.first.clone())
    }
}

/// The table the binary carries.
pub fn too_old_table() -> &'static TooOldTable {
    static TABLE: OnceLock<TooOldTable> = OnceLock::new();
    TABLE.get_or_init(|| TooOldTable::parse(TOO_OLD_JSON).unwrap_or_else(|e| panic!("{e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pin_older_than_the_first_release_that_runs_is_replaced_from_that_python_on() {
        let t = too_old_table();
        assert_eq!(
            t.replacement("Hypothesis", "3.44.2", "3.9").as_deref(),
            Some("4.19.0")
        );
        assert_eq!(
            t.replacement("hypothesis", "4.18.0", "3.8").as_deref(),
            Some("4.19.0")
        );
        assert_eq!(
            t.replacement("hypothesis", "3.44.2", "3.7"),
            None,
            "runs there"
        );
        assert_eq!(
            t.replacement("hypothesis", "4.19", "3.11"),
            None,
            "4.19 is 4.19.0"
        );
        assert_eq!(t.replacement("hypothesis", "6.82.6", "3.11"), None);
        assert_eq!(t.replacement("pytest", "3.3.1", "3.9"), None, "not listed");
        assert_eq!(
            t.replacement("hypothesis", "dev", "3.9"),
            None,
            "not a release"
        );
    }

    #[test]
    fn a_bad_entry_is_refused_by_name() {
        let e = TooOldTable::parse(
            r#"{"packages": {"x": {"python": "3.8", "first": "latest", "why": "w"}}}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("`x`") && e.contains("latest"), "{e}");
        assert!(TooOldTable::parse("{}").is_err());
    }
}
