//! The two hand-read files of a submission: `metadata.yaml` (what the leaderboard shows) and
//! `README.md` (the analysis summary and the checklist the PR description repeats).
//!
//! `metadata.yaml` follows the layout current submissions use: `info` (name, site, report,
//! authors, logo) and `tags` (checked, model, org, os_model, os_system, system/attempts).
//! Strings are written as double-quoted YAML scalars (JSON string syntax, which YAML accepts),
//! so no value can break the file.

use super::results::Results;

/// What the submitter tells about the system (all optional; missing ones are warned about).
#[derive(Debug, Clone, Default)]
pub struct Metadata {
    /// Leaderboard entry name [default: the model name].
    pub name: Option<String>,
    /// URL of the system's site.
    pub site: Option<String>,
    /// Technical report, paper or blog post.
    pub report: Option<String>,
    /// The people involved (the first author's website or profile too).
    pub authors: Option<String>,
    /// URL of a logo.
    pub logo: Option<String>,
    /// Organisations.
    pub orgs: Vec<String>,
    /// Models the system uses [default: the predictions' model name].
    pub models: Vec<String>,
    /// The model's weights are open.
    pub os_model: bool,
    /// The system's code is open.
    pub os_system: bool,
    /// `1` (single attempt / pass@1) or `2+` (best@k: a module picks one of several attempts
    /// without the SWE-bench tests).
    pub attempts: String,
    /// Checklist items the submitter confirms (see [`DECLARATIONS`]).
    pub declared: Vec<String>,
}

/// The checklist items only the submitter can confirm: (flag value, checklist wording).
pub const DECLARATIONS: [(&str, &str); 3] = [
    (
        "no-test-knowledge",
        "Does not use SWE-bench test knowledge (`PASS_TO_PASS`, `FAIL_TO_PASS`)",
    ),
    ("no-hints", "Does not use the `hints` field in SWE-bench"),
    (
        "no-web-browsing",
        "Does not have web-browsing OR has taken steps to prevent lookup of SWE-bench solutions via web-browsing",
    ),
];

fn q(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// `metadata.yaml`.
pub fn metadata_yaml(m: &Metadata, name: &str) -> String {
    let mut y = String::from("info:\n");
    y += &format!("  name: {}\n", q(name));
    for (key, v) in [
        ("site", &m.site),
        ("report", &m.report),
        ("authors", &m.authors),
        ("logo", &m.logo),
    ] {
        match v {
            Some(v) => y += &format!("  {key}: {}\n", q(v)),
            None => y += &format!("  {key}: \"\"  # to fill in\n"),
        }
    }
    y += "tags:\n  checked: false\n";
    for (key, list) in [("model", &m.models), ("org", &m.orgs)] {
        if list.is_empty() {
            y += &format!("  {key}: []  # to fill in\n");
        } else {
            y += &format!("  {key}:\n");
            for v in list {
                y += &format!("    - {}\n", q(v));
            }
        }
    }
    y += &format!("  os_model: {}\n  os_system: {}\n", m.os_model, m.os_system);
    let attempts = if m.attempts == "1" {
        "1".to_string()
    } else {
        q(&m.attempts)
    };
    y += &format!("  system:\n    attempts: {attempts}\n");
    y
}

/// `README.md`: who and what, the analysis summary, the checklist.
pub fn readme(m: &Metadata, name: &str, split: &str, results: &Results, pass_at_1: bool) -> String {
    let mut r = format!("# {name}\n\n");
    match &m.report {
        Some(link) => r += &format!("Technical report: {link}\n\n"),
        None => r += "Technical report: (to fill in: a paper, report or blog post describing the system)\n\n",
    }
    match &m.authors {
        Some(a) => r += &format!("Authors: {a}\n\n"),
        None => {
            r += "Authors: (to fill in: the people involved, and the first author's website)\n\n"
        }
    }
    if let Some(site) = &m.site {
        r += &format!("Site: {site}\n\n");
    }
    r += "## Results\n\nGraded again from `logs/` (each `patch.diff` with its `test_output.txt`) by \
          swe-eval, counted as `analysis/get_results.py` counts:\n\n```\n";
    r += &results.summary_text(name, split);
    r += "```\n\n## Checklist\n\n";
    let mark = |b: bool| if b { "x" } else { " " };
    r += &format!(
        "- [{}] Is a pass@1 submission (does not attempt the same task instance more than once)\n",
        mark(pass_at_1)
    );
    for (flag, text) in DECLARATIONS {
        r += &format!(
            "- [{}] {text}\n",
            mark(m.declared.iter().any(|d| d == flag))
        );
    }
    r += "\n## Contents\n\n- `all_preds.jsonl`: the predictions, one per instance\n\
          - `logs/<instance_id>/`: `patch.diff`, `report.json`, `test_output.txt`\n\
          - `trajs/`: one reasoning trace per instance\n\
          - `results/`: `results.json`, `resolved_by_repo.json`, `resolved_by_time.json`\n\
          - `metadata.yaml`: how the entry is shown on the leaderboard\n";
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_quotes_every_string_and_marks_gaps() {
        let m = Metadata {
            report: Some("https://x.org/a\"b".into()),
            models: vec!["m: 1".into()],
            attempts: "2+".into(),
            ..Metadata::default()
        };
        let y = metadata_yaml(&m, "N #1");
        assert!(y.contains("  name: \"N #1\"\n"), "{y}");
        assert!(y.contains("  report: \"https://x.org/a\\\"b\"\n"), "{y}");
        assert!(y.contains("  site: \"\"  # to fill in\n"), "{y}");
        assert!(y.contains("  model:\n    - \"m: 1\"\n"), "{y}");
        assert!(y.contains("  org: []  # to fill in\n"), "{y}");
        assert!(y.contains("    attempts: \"2+\"\n"), "{y}");
    }
}
