//! The parsers by their official names: [`parse`] picks one by name (aliases resolved),
//! [`parser_for_repo`] gives the name the official harness uses for a repository.

use super::python;
use super::status::StatusMap;

/// A parser name that is neither a SWE-bench 5 name nor an official per-repository alias.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown log parser `{name}` (known: {})", PARSER_NAMES.join(", "))]
pub struct UnknownParser {
    /// The name that was asked for.
    pub name: String,
}

/// Every parser name [`parse`] accepts: the framework parsers first, then the official
/// per-repository aliases (`parse_log_astropy` is `parse_log_pytest_v2`, and so on).
pub const PARSER_NAMES: &[&str] = &[
    "parse_log_pytest",
    "parse_log_pytest_options",
    "parse_log_pytest_v2",
    "parse_log_django",
    "parse_log_seaborn",
    "parse_log_sympy",
    "parse_log_matplotlib",
    "parse_log_astroid",
    "parse_log_flask",
    "parse_log_marshmallow",
    "parse_log_pvlib",
    "parse_log_pyvista",
    "parse_log_sqlfluff",
    "parse_log_xarray",
    "parse_log_pydicom",
    "parse_log_requests",
    "parse_log_pylint",
    "parse_log_astropy",
    "parse_log_scikit",
    "parse_log_sphinx",
];

/// The framework parser behind a name (aliases resolved), or `None` for an unknown name.
/// Accepts the name with or without the `parse_log_` prefix.
pub fn canonical_parser(name: &str) -> Option<&'static str> {
    let short = name.strip_prefix("parse_log_").unwrap_or(name);
    let canonical = match short {
        "pytest" | "astroid" | "flask" | "marshmallow" | "pvlib" | "pyvista" | "sqlfluff"
        | "xarray" => "parse_log_pytest",
        "pytest_options" | "pydicom" | "requests" | "pylint" => "parse_log_pytest_options",
        "pytest_v2" | "astropy" | "scikit" | "sphinx" => "parse_log_pytest_v2",
        "django" => "parse_log_django",
        "seaborn" => "parse_log_seaborn",
        "sympy" => "parse_log_sympy",
        "matplotlib" => "parse_log_matplotlib",
        _ => return None,
    };
    Some(canonical)
}

/// Parses `log` with the parser named `parser_name` (see [`PARSER_NAMES`]).
///
/// This is the bare parser: it reads whatever text it is given. To read a whole test log as
/// the official harness does (section between the markers, whole log as fallback) use
/// [`super::parse_test_log`].
pub fn parse(parser_name: &str, log: &str) -> Result<StatusMap, UnknownParser> {
    let parser = canonical_parser(parser_name).ok_or_else(|| UnknownParser {
        name: parser_name.to_string(),
    })?;
    Ok(match parser {
        "parse_log_pytest" => python::pytest(log),
        "parse_log_pytest_options" => python::pytest_options(log),
        "parse_log_pytest_v2" => python::pytest_v2(log),
        "parse_log_django" => python::django(log),
        "parse_log_seaborn" => python::seaborn(log),
        "parse_log_sympy" => python::sympy(log),
        "parse_log_matplotlib" => python::matplotlib(log),
        _ => unreachable!("canonical_parser returns only the names matched here"),
    })
}

/// The official parser name for a repository (`owner/name`), or `None` when the official
/// harness has no Python parser for it.
pub fn known_parser_for_repo(repo: &str) -> Option<&'static str> {
    Some(match repo {
        "astropy/astropy" => "parse_log_astropy",
        "django/django" => "parse_log_django",
        "marshmallow-code/marshmallow" => "parse_log_marshmallow",
        "matplotlib/matplotlib" => "parse_log_matplotlib",
        "mwaskom/seaborn" => "parse_log_seaborn",
        "pallets/flask" => "parse_log_flask",
        "psf/requests" => "parse_log_requests",
        "pvlib/pvlib-python" => "parse_log_pvlib",
        "pydata/xarray" => "parse_log_xarray",
        "pydicom/pydicom" => "parse_log_pydicom",
        "pylint-dev/astroid" => "parse_log_astroid",
        "pylint-dev/pylint" => "parse_log_pylint",
        "pytest-dev/pytest" => "parse_log_pytest",
        "pyvista/pyvista" => "parse_log_pyvista",
        "scikit-learn/scikit-learn" => "parse_log_scikit",
        "sqlfluff/sqlfluff" => "parse_log_sqlfluff",
        "sphinx-doc/sphinx" => "parse_log_sphinx",
        "sympy/sympy" => "parse_log_sympy",
        _ => return None,
    })
}

/// The official parser name for a repository; repositories the official harness does not
/// know get the plain pytest parser (most Python projects print `pytest -rA` summaries).
pub fn parser_for_repo(repo: &str) -> &'static str {
    known_parser_for_repo(repo).unwrap_or("parse_log_pytest")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases_resolve() {
        for name in PARSER_NAMES {
            assert!(parse(name, "").is_ok(), "{name} must be accepted");
        }
        assert_eq!(canonical_parser("astropy"), Some("parse_log_pytest_v2"));
        assert!(parse("parse_log_cargo", "").is_err());
        assert_eq!(parser_for_repo("django/django"), "parse_log_django");
        assert_eq!(parser_for_repo("someone/else"), "parse_log_pytest");
    }
}
