//! Why a table the binary carries cannot be read (`conda_map.json`, `wheels.json`,
//! `too_old.json`: [`TableError`]), and why one entry of the conda mapping is not understood
//! ([`MapError`]). The tables are checked when first used; an error names the file and the
//! entry.

/// Why a mapping entry of `conda_map.json` is not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("conda_map.json: `{name}`: {message}")]
pub struct MapError {
    /// The mapped name.
    pub name: String,
    /// What is wrong with its entry.
    pub message: &'static str,
}

/// Why a carried table cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// The file is not the JSON its reader expects.
    #[error("{file}: {source}")]
    Json {
        /// The table's file name.
        file: &'static str,
        /// What serde found.
        #[source]
        source: serde_json::Error,
    },
    /// An entry of the conda mapping is not understood.
    #[error(transparent)]
    CondaEntry(#[from] MapError),
    /// A release listed in `wheels.json` does not start with a number.
    #[error("wheels.json: `{name}` python {python}: `{release}` is not a release")]
    NotARelease {
        /// The package.
        name: String,
        /// The Python it is listed for.
        python: String,
        /// The release as written.
        release: String,
    },
    /// An entry of `too_old.json` whose Python or first release is not a version.
    #[error("too_old.json: `{name}`: python `{python}` and first `{first}` must be versions")]
    NotVersions {
        /// The package.
        name: String,
        /// Its `python`, as written.
        python: String,
        /// Its `first`, as written.
        first: String,
    },
}
