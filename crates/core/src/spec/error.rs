//! Why an instance has no spec ([`SpecError`]).

/// Why an instance has no test spec.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// The row has no `version`.
    #[error("{instance_id}: no `version` field, so no spec can be chosen")]
    MissingVersion {
        /// The row's instance.
        instance_id: String,
    },
    /// The row has neither `test_patch` nor its own eval script.
    #[error("{instance_id}: no `test_patch` field (and no `eval_script`)")]
    MissingTestPatch {
        /// The row's instance.
        instance_id: String,
    },
    /// The row has no `base_commit`.
    #[error("{instance_id}: no `base_commit` field")]
    MissingBaseCommit {
        /// The row's instance.
        instance_id: String,
    },
    /// No specification covers the row's repository.
    #[error("{instance_id}: no spec for repo `{repo}` (known repos have specs; see src/spec/specs.json)")]
    UnknownRepo {
        /// The row's instance.
        instance_id: String,
        /// The row's repository.
        repo: String,
    },
    /// No specification covers the row's version of its repository.
    #[error("{instance_id}: no spec for `{repo}` version `{version}` (known: {known})")]
    UnknownVersion {
        /// The row's instance.
        instance_id: String,
        /// The row's repository.
        repo: String,
        /// The row's version.
        version: String,
        /// The versions that have a specification.
        known: String,
    },
    /// A flavour name that is neither `official` nor `debian`.
    #[error("unknown image flavour `{0}` (expected `official` or `debian`)")]
    UnknownFlavour(String),
}
