//! A prediction's [`Outcome`] as any source says it, and an [`Observation`]: one prediction
//! with its outcome and scores.

use crate::grading::Category;

/// What a study knows of one prediction's execution: resolved, unresolved, or no test verdict
/// with the source's reason for it.
///
/// Not [`Category`], on purpose: the study (and `compare`) read outcomes from sources that
/// grade with other words or not at all: an official run summary (a submitted prediction that
/// never completed is `incomplete`), mini-swe-agent's `per_run_results.json` (0/1, or absent
/// from a run: `missing_from_run`), other tools' rows (their own `timeout`, `skipped`,
/// `not_run`, ...). What the study measures is binary (resolved against not, as the official
/// resolve rate counts), and what it reports of the rest is how many lack a verdict and why, in
/// the source's words (`summary.json`'s `no_verdict_by_reason`). A swe-eval verdict's category
/// maps onto it with `From<Category>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every required test passed.
    Resolved,
    /// The tests ran and some required test did not pass.
    Unresolved,
    /// No test verdict (harness error, empty patch, not run): counted as unresolved, as the
    /// official resolve rate counts it. The string says why (`error`, `empty_patch`, ...).
    NoVerdict(String),
}

impl Outcome {
    /// [`Outcome::Resolved`] or [`Outcome::Unresolved`]: a source that only says whether the
    /// prediction resolved.
    pub fn of_resolved(resolved: bool) -> Outcome {
        if resolved {
            Outcome::Resolved
        } else {
            Outcome::Unresolved
        }
    }

    /// True only for [`Outcome::Resolved`].
    pub fn resolved(&self) -> bool {
        matches!(self, Outcome::Resolved)
    }

    /// `resolved`, `unresolved`, or why there is no verdict.
    pub fn label(&self) -> &str {
        match self {
            Outcome::Resolved => "resolved",
            Outcome::Unresolved => "unresolved",
            Outcome::NoVerdict(why) => why,
        }
    }
}

impl From<Category> for Outcome {
    /// Resolved and unresolved as they are; every other category is no test verdict, named by
    /// the category (`error`, `empty_patch`, `infra_error`).
    fn from(category: Category) -> Outcome {
        match category {
            Category::Resolved => Outcome::Resolved,
            Category::Unresolved => Outcome::Unresolved,
            other => Outcome::NoVerdict(other.as_str().to_string()),
        }
    }
}

/// One prediction with its scores and its executed outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// The instance.
    pub instance_id: String,
    /// The sample number.
    pub sample: u32,
    /// `owner/name`, from the dataset or else from the instance id.
    pub repo: String,
    /// The dataset's `difficulty`, when known.
    pub difficulty: Option<String>,
    /// The reference similarity, 0..1.
    pub similarity: f64,
    /// The reward, -1..1.
    pub reward: f64,
    /// The reward's format verdict (`ok`, `empty`, `unparsable`, ...), when the input had one.
    pub format: Option<String>,
    /// What the execution said.
    pub outcome: Outcome,
}

/// The repository of an instance id such as `astropy__astropy-12907` (`astropy/astropy`), for
/// when no dataset is given.
pub fn repo_from_instance_id(id: &str) -> String {
    let base = match id.rsplit_once('-') {
        Some((head, tail)) if !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) => head,
        _ => id,
    };
    base.replacen("__", "/", 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_category_becomes_an_outcome_named_by_it() {
        let table = [
            (Category::Resolved, Outcome::Resolved),
            (Category::Unresolved, Outcome::Unresolved),
            (Category::Error, Outcome::NoVerdict("error".into())),
            (
                Category::EmptyPatch,
                Outcome::NoVerdict("empty_patch".into()),
            ),
            (
                Category::InfraError,
                Outcome::NoVerdict("infra_error".into()),
            ),
        ];
        for (category, outcome) in table {
            assert_eq!(Outcome::from(category), outcome);
            assert_eq!(outcome.label(), category.as_str());
            assert_eq!(outcome.resolved(), category.is_resolved());
        }
        assert_eq!(Outcome::of_resolved(true), Outcome::Resolved);
        assert_eq!(Outcome::of_resolved(false), Outcome::Unresolved);
    }

    #[test]
    fn repo_from_ids() {
        let cases = [
            (
                "astropy__astropy-12907",
                "astropy/astropy",
                "the usual shape",
            ),
            (
                "scikit-learn__scikit-learn-10297",
                "scikit-learn/scikit-learn",
                "dash in name",
            ),
            ("psf__requests-1142", "psf/requests", "owner differs"),
            ("weird", "weird", "no number"),
        ];
        for (id, want, why) in cases {
            assert_eq!(repo_from_instance_id(id), want, "{why}");
        }
    }
}
