//! Pins with no wheel for the Python a frozen environment gets here.
//!
//! A frozen environment keeps its exact pins, but the Debian release's `python3` is not always
//! the frozen one (xarray froze 3.10 and gets bookworm's 3.11; astropy's oldest froze 3.6 and
//! get bullseye's 3.9), and an old pin of a compiled package may have no wheel for it. pip then
//! compiles it from source: numpy 1.23.0 on 3.11 took about an hour on this machine under load,
//! numpy 1.16.0 on 3.9 does not build at all.
//!
//! The rule, driven by `wheels.json` (facts from PyPI, written by `scripts/wheels_dump.py`: per
//! package and Debian CPython minor, the final releases with a compiled Linux x86_64 wheel):
//! a pin of a listed package whose version has no such wheel for the image's Python is
//! replaced by the nearest release that has one, one of the same `major.minor` first (the
//! closest, a newer one on a tie), else the nearest newer release, else the newest older one.
//! Every replacement is named in the spec's warnings and the build log, and the freeze
//! comparison still measures against the frozen version (a replaced pin counts as different).

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use super::pkgname::normalize_name;
use super::table_error::TableError;

const WHEELS_JSON: &str = include_str!("wheels.json");

/// Which releases of a few packages have a compiled wheel, per CPython `major.minor`.
#[derive(Debug, Default)]
pub struct WheelTable {
    /// Normalized package name -> Python `major.minor` -> releases, oldest first.
    packages: BTreeMap<String, BTreeMap<String, Vec<String>>>,
}

#[derive(Deserialize)]
struct WheelFile {
    packages: BTreeMap<String, BTreeMap<String, Vec<String>>>,
}

/// A pin replaced for want of a wheel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Substitution {
    /// The package, as the frozen file spells it.
    pub name: String,
    /// The frozen version.
    pub frozen: String,
    /// The release installed instead.
    pub chosen: String,
    /// The Python (`major.minor`) the wheel is for.
    pub python: String,
    /// The frozen release does not run on that Python (`too_old.json`, see
    /// [`super::frozen_too_old`]), rather than having no wheel for it.
    pub too_old: bool,
}

impl std::fmt::Display for Substitution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} -> {}", self.name, self.frozen, self.chosen)
    }
}

/// The numeric release parts of a version (`1.23.0rc1` is `[1, 23, 0]`); `None` when it does
/// not start with a number.
pub(super) fn release(v: &str) -> Option<Vec<u64>> {
    let parts: Vec<u64> = v
        .split('.')
        .map_while(|p| {
            let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect();
    (!parts.is_empty()).then_some(parts)
}

/// Compares release parts with missing trailing parts as zero (`1.0` == `1.0.0`).
pub(super) fn cmp_release(a: &[u64], b: &[u64]) -> Ordering {
    let n = a.len().max(b.len());
    (0..n)
        .map(|i| a.get(i).unwrap_or(&0).cmp(b.get(i).unwrap_or(&0)))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

impl WheelTable {
    /// Parses `wheels.json`; every release must start with a number.
    pub fn parse(text: &str) -> Result<WheelTable, TableError> {
        let f: WheelFile = serde_json::from_str(text).map_err(|source| TableError::Json {
            file: "wheels.json",
            source,
        })?;
        let mut packages = BTreeMap::new();
        for (name, pythons) in f.packages {
            for (python, versions) in &pythons {
                if let Some(bad) = versions.iter().find(|v| release(v).is_none()) {
                    return Err(TableError::NotARelease {
                        name,
                        python: python.clone(),
                        release: bad.clone(),
                    });
                }
            }
            packages.insert(normalize_name(&name), pythons);
        }
        Ok(WheelTable { packages })
    }

    /// The release to install instead of `name==version` on Python `python` (`major.minor`):
    /// `None` when the table does not list the package or that Python, or when the pinned
    /// release has a wheel there.
    pub fn replacement(&self, name: &str, version: &str, python: &str) -> Option<String> {
        let have = self.packages.get(&normalize_name(name))?.get(python)?;
        let pin = release(version)?;
        let parsed: Vec<Release<'_>> = have.iter().filter_map(|v| Some((release(v)?, v))).collect();
        if parsed.iter().any(|(r, _)| cmp_release(r, &pin).is_eq()) {
            return None;
        }
        let same_minor = |r: &[u64]| pin.len() >= 2 && r.get(..2) == pin.get(..2);
        let minor: Vec<&Release<'_>> = parsed.iter().filter(|(r, _)| same_minor(r)).collect();
        let all: Vec<&Release<'_>> = parsed.iter().collect();
        let chosen = match (nearest_newer(&minor, &pin), newest_older(&minor, &pin)) {
            // Both sides within the `major.minor`: the closer one, the newer on a tie.
            (Some(up), Some(down)) => {
                if closer(&down.0, &up.0, &pin) {
                    down
                } else {
                    up
                }
            }
            (Some(one), None) | (None, Some(one)) => one,
            (None, None) => nearest_newer(&all, &pin).or_else(|| newest_older(&all, &pin))?,
        };
        Some(chosen.1.clone())
    }

    /// Packages listed.
    pub fn len(&self) -> usize {
        self.packages.len()
    }

    /// True when nothing is listed.
    pub fn is_empty(&self) -> bool {
        self.packages.is_empty()
    }
}

type Release<'a> = (Vec<u64>, &'a String);

/// The oldest release in `set` newer than `pin`.
fn nearest_newer<'a>(set: &[&'a Release<'a>], pin: &[u64]) -> Option<&'a Release<'a>> {
    set.iter()
        .copied()
        .filter(|r| cmp_release(&r.0, pin).is_gt())
        .min_by(|a, b| cmp_release(&a.0, &b.0))
}

/// The newest release in `set` older than `pin`.
fn newest_older<'a>(set: &[&'a Release<'a>], pin: &[u64]) -> Option<&'a Release<'a>> {
    set.iter()
        .copied()
        .filter(|r| cmp_release(&r.0, pin).is_lt())
        .max_by(|a, b| cmp_release(&a.0, &b.0))
}

/// Whether `down` (below `pin`) is strictly closer to it than `up` (above), comparing the
/// distance part by part from the left.
fn closer(down: &[u64], up: &[u64], pin: &[u64]) -> bool {
    let n = down.len().max(up.len()).max(pin.len());
    let at = |v: &[u64], i: usize| *v.get(i).unwrap_or(&0);
    for i in 0..n {
        let d = at(pin, i).abs_diff(at(down, i));
        let u = at(up, i).abs_diff(at(pin, i));
        if d != u {
            return d < u;
        }
    }
    false
}

/// The table the binary carries.
pub fn wheel_table() -> &'static WheelTable {
    static TABLE: OnceLock<WheelTable> = OnceLock::new();
    TABLE.get_or_init(|| WheelTable::parse(WHEELS_JSON).unwrap_or_else(|e| panic!("{e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> WheelTable {
        WheelTable::parse(
            r#"{"packages": {"NumPy": {"3.11": ["1.23.2", "1.23.3", "1.24.0"], "3.9": ["1.19.3", "1.20.0"]},
                "pkg": {"3.9": ["2.0.1", "2.0.5", "2.1.0", "3.0.0"]}}}"#,
        )
        .unwrap()
    }

    #[test]
    fn a_pin_with_a_wheel_stays_and_unlisted_ones_are_left_alone() {
        let t = table();
        assert_eq!(t.replacement("numpy", "1.23.3", "3.11"), None);
        assert_eq!(
            t.replacement("numpy", "1.20", "3.9"),
            None,
            "1.20 is 1.20.0"
        );
        assert_eq!(t.replacement("scipy", "1.0.0", "3.11"), None, "not listed");
        assert_eq!(
            t.replacement("numpy", "1.23.0", "3.13"),
            None,
            "no such Python"
        );
        assert_eq!(t.replacement("numpy", "dev", "3.11"), None, "not a release");
    }

    #[test]
    fn same_major_minor_first_then_the_nearest_newer_then_the_newest_older() {
        let t = table();
        assert_eq!(
            t.replacement("NUMPY", "1.23.0", "3.11").as_deref(),
            Some("1.23.2")
        );
        assert_eq!(
            t.replacement("numpy", "1.23.9", "3.11").as_deref(),
            Some("1.23.3")
        );
        assert_eq!(
            t.replacement("numpy", "1.16.0", "3.9").as_deref(),
            Some("1.19.3")
        );
        assert_eq!(
            t.replacement("numpy", "1.22.4", "3.9").as_deref(),
            Some("1.20.0")
        );
        // Within 2.0: 2.0.3 is as near 2.0.1 as 2.0.5, and a tie goes to the newer.
        assert_eq!(
            t.replacement("pkg", "2.0.3", "3.9").as_deref(),
            Some("2.0.5")
        );
        assert_eq!(
            t.replacement("pkg", "2.0.2", "3.9").as_deref(),
            Some("2.0.1")
        );
        // 2.2 has none: the nearest newer release, 3.0.0, not the older 2.1.0.
        assert_eq!(
            t.replacement("pkg", "2.2.0", "3.9").as_deref(),
            Some("3.0.0")
        );
        assert_eq!(
            t.replacement("pkg", "1.0.0rc1", "3.9").as_deref(),
            Some("2.0.1")
        );
    }

    #[test]
    fn a_bad_release_is_refused_by_name() {
        let e = WheelTable::parse(r#"{"packages": {"x": {"3.9": ["1.0", "latest"]}}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`x`") && e.contains("latest"), "{e}");
        assert!(WheelTable::parse("{}").is_err());
    }

    #[test]
    fn the_carried_table_knows_numpy_on_every_debian_python() {
        let t = wheel_table();
        assert!(t.len() >= 3);
        // Facts from PyPI: numpy's first wheels for 3.9 came with 1.19.3, for 3.11 with 1.23.2.
        assert_eq!(
            t.replacement("numpy", "1.16.0", "3.9").as_deref(),
            Some("1.19.3")
        );
        assert_eq!(
            t.replacement("numpy", "1.23.0", "3.11").as_deref(),
            Some("1.23.2")
        );
        assert_eq!(t.replacement("numpy", "1.25.2", "3.11"), None);
        assert_eq!(t.replacement("numpy", "1.21.6", "3.9"), None);
    }
}
