//! How close a built environment is to its frozen one: its `pip freeze` against the frozen
//! Python packages, each matched, at a different version, missing or extra (versions compared
//! as PEP 440 normalizes them, names as PEP 503 does).

use std::collections::{BTreeMap, BTreeSet};

use super::frozen::Pin;
use super::pkgname::normalize_name;

/// A version in a comparable form: lowercase, `-`/`_` as `.`, a dot before `post`/`dev`
/// (`2.9.0post0` is `2.9.0.post0`), a leading `v` dropped, trailing `.0` release parts dropped
/// (`1.0` is `1`), and a local part (`+cpu`) dropped.
pub fn normalize_version(v: &str) -> String {
    let v = v.trim().to_lowercase();
    let v = v.strip_prefix('v').unwrap_or(&v);
    let v = v.split('+').next().unwrap_or("");
    let v = v.replace(['-', '_'], ".");
    let mut s = String::with_capacity(v.len() + 2);
    for (i, c) in v.char_indices() {
        let rest = &v[i..];
        if (rest.starts_with("post") || rest.starts_with("dev")) && i > 0 && !s.ends_with('.') {
            s.push('.');
        }
        s.push(c);
    }
    // The release is the leading run of dotted numbers.
    let split = s
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_digit() || c == '.'))
        .map_or(s.len(), |(i, _)| i);
    let (release, rest) = s.split_at(split);
    let mut parts: Vec<String> = release
        .split('.')
        .filter(|p| !p.is_empty())
        .map(|p| p.trim_start_matches('0').to_string())
        .map(|p| if p.is_empty() { "0".to_string() } else { p })
        .collect();
    while parts.len() > 1 && parts.last().is_some_and(|p| p == "0") {
        parts.pop();
    }
    let rest = rest.trim_start_matches('.');
    if rest.is_empty() {
        parts.join(".")
    } else {
        format!("{}.{rest}", parts.join("."))
    }
}

/// A `pip freeze` line that names a package at a version.
fn parse_freeze_line(line: &str) -> Option<(String, String)> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') || line.starts_with('-') {
        return None;
    }
    let (name, version) = line.split_once("==")?;
    Some((name.trim().to_string(), version.trim().to_string()))
}

/// One environment's `pip freeze` against its frozen Python packages.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct EnvCheck {
    /// Names present at the frozen version.
    pub matched: Vec<String>,
    /// `(name, frozen version, installed version)`.
    pub different: Vec<(String, String, String)>,
    /// `(name, frozen version)` not installed at all.
    pub missing: Vec<(String, String)>,
    /// `(name, version)` installed but not in the frozen file.
    pub extra: Vec<(String, String)>,
    /// Freeze lines that name no version (editable or URL installs: the repository itself).
    pub not_compared: Vec<String>,
}

impl EnvCheck {
    /// How many frozen Python packages there are.
    pub fn expected(&self) -> usize {
        self.matched.len() + self.different.len() + self.missing.len()
    }

    /// Matched packages as a percentage of the frozen ones (100 for an empty list).
    pub fn match_percent(&self) -> f64 {
        match self.expected() {
            0 => 100.0,
            n => 100.0 * self.matched.len() as f64 / n as f64,
        }
    }
}

/// Compares `pip freeze --all` output with the frozen packages. `pip` itself is left out on
/// both sides (the harness pins its own installer), and so is the `pkg_resources==0.0.0`
/// record of Debian's venv.
pub fn compare_freeze(expected: &[Pin], freeze: &str) -> EnvCheck {
    let mut installed: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut out = EnvCheck::default();
    for line in freeze.lines() {
        match parse_freeze_line(line) {
            Some((name, version)) => {
                installed.insert(normalize_name(&name), (name, version));
            }
            None => {
                let t = line.trim();
                if !t.is_empty() && !t.starts_with('#') {
                    out.not_compared.push(t.to_string());
                }
            }
        }
    }
    installed.remove("pip");
    // Debian's venv leaves an empty `pkg_resources-0.0.0` record: not a package.
    if installed
        .get("pkg-resources")
        .is_some_and(|(_, v)| v == "0.0.0")
    {
        installed.remove("pkg-resources");
    }
    let mut seen = BTreeSet::new();
    for pin in expected {
        let key = normalize_name(&pin.name);
        if key == "pip" || !seen.insert(key.clone()) {
            continue;
        }
        match installed.get(&key) {
            None => out.missing.push((pin.name.clone(), pin.version.clone())),
            Some((_, got)) if normalize_version(got) == normalize_version(&pin.version) => {
                out.matched.push(pin.name.clone())
            }
            Some((_, got)) => {
                out.different
                    .push((pin.name.clone(), pin.version.clone(), got.clone()))
            }
        }
    }
    out.extra = installed
        .into_iter()
        .filter(|(k, _)| !seen.contains(k))
        .map(|(_, nv)| nv)
        .collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_versions_normalize() {
        assert_eq!(normalize_name("Jupyter_Core"), "jupyter-core");
        assert_eq!(normalize_name("zope.interface"), "zope-interface");
        assert_eq!(normalize_name("a--_b"), "a-b");
        assert_eq!(
            normalize_version("2.9.0post0"),
            normalize_version("2.9.0.post0")
        );
        assert_eq!(normalize_version("1.0"), normalize_version("1.0.0"));
        assert_eq!(normalize_version("1.0"), "1");
        assert_eq!(
            normalize_version("2.0.0.dev0"),
            normalize_version("2.0.0dev0")
        );
        assert_eq!(normalize_version("1.2+cpu"), "1.2");
        assert_ne!(normalize_version("1.10"), normalize_version("1.1"));
        assert_ne!(normalize_version("1.0rc1"), normalize_version("1.0"));
        assert_eq!(normalize_version("2024.01"), "2024.1");
    }

    #[test]
    fn freeze_comparison_sorts_every_package() {
        let expected = vec![
            Pin {
                name: "numpy".into(),
                version: "1.25.2".into(),
                origin: "conda numpy".into(),
            },
            Pin {
                name: "python-dateutil".into(),
                version: "2.9.0post0".into(),
                origin: "pip".into(),
            },
            Pin {
                name: "six".into(),
                version: "1.16.0".into(),
                origin: "pip".into(),
            },
            Pin {
                name: "cdms2".into(),
                version: "3.1.5".into(),
                origin: "conda cdms2".into(),
            },
            Pin {
                name: "pip".into(),
                version: "24.2".into(),
                origin: "conda pip".into(),
            },
        ];
        let freeze = "# comment\nNumPy==1.26.0\npython_dateutil==2.9.0.post0\nsix==1.16\npip==24.0\n-e git+https://x/y@abc#egg=y\ny @ file:///testbed\nextra-thing==0.1\npkg_resources==0.0.0\n";
        let c = compare_freeze(&expected, freeze);
        assert_eq!(c.matched, ["python-dateutil", "six"]);
        assert_eq!(
            c.different,
            [(
                "numpy".to_string(),
                "1.25.2".to_string(),
                "1.26.0".to_string()
            )]
        );
        assert_eq!(c.missing, [("cdms2".to_string(), "3.1.5".to_string())]);
        assert_eq!(c.extra, [("extra-thing".to_string(), "0.1".to_string())]);
        assert_eq!(
            c.not_compared,
            ["-e git+https://x/y@abc#egg=y", "y @ file:///testbed"]
        );
        assert_eq!(c.expected(), 4, "pip is left out");
        assert!((c.match_percent() - 50.0).abs() < 1e-9);
        assert_eq!(compare_freeze(&[], "").match_percent(), 100.0);
    }
}
