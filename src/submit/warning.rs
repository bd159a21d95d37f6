//! A checklist requirement a package does not meet ([`Warning`]).

/// A checklist requirement the package does not meet, or something the submitter must check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The rule, as the checklist or the submission guide names it.
    pub rule: &'static str,
    /// What is wrong, and where.
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] {}", self.rule, self.message)
    }
}

pub(super) fn warn(list: &mut Vec<Warning>, rule: &'static str, message: impl Into<String>) {
    list.push(Warning {
        rule,
        message: message.into(),
    });
}
