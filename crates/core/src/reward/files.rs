//! [`Files`]: the files of a repository by path, as the search/replace variant reads and edits
//! them.

/// Path -> text of a set of files.
pub type Files = std::collections::BTreeMap<String, String>;
