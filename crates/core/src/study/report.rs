//! Writes the study: summary.json, per_prediction.csv, the plots (SVG and PNG), report.md and a
//! self-contained report.html (SVG inline) that answers the question at a glance.
//!
//! Tables are built once as rows of cells and rendered to Markdown or HTML, so the two reports
//! always say the same thing.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::plots::{self, Rasterizer};
use super::{auroc_words, Observation, Reading, Score, ScoreStudy, Stats, Summary};
use crate::fsutil::{write_atomic, write_json_atomic, WriteError};

/// Patch texts for the blind spots: predicted by (instance, sample), gold by instance.
#[derive(Debug, Clone, Default)]
pub struct Patches {
    /// The predicted patch by (instance, sample).
    pub predicted: HashMap<(String, u32), String>,
    /// The gold patch by instance.
    pub gold: HashMap<String, String>,
}

/// Why a report (the study's, or a comparison's) could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteReportError {
    /// The output folder could not be created.
    #[error("cannot create output folder {path}: {source}")]
    Dir {
        /// The folder.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A file could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// A CSV file could not be built.
    #[error("cannot write {file}: {message}")]
    Csv {
        /// The file's name.
        file: &'static str,
        /// What went wrong.
        message: String,
    },
}

impl crate::failure::Classify for WriteReportError {
    fn kind(&self) -> crate::failure::ErrorKind {
        match self {
            WriteReportError::Write(e) => crate::failure::Classify::kind(e),
            _ => crate::failure::ErrorKind::Failed,
        }
    }
}

/// What was written, and plots that could not be rasterized (their SVG is still there).
#[derive(Debug, Clone, Default)]
pub struct Written {
    /// The files written.
    pub files: Vec<PathBuf>,
    /// Plots left as SVG only, and why.
    pub png_problems: Vec<String>,
}

/// The plots: file stem, title for the reports, and SVG.
fn plot_set(summary: &Summary, obs: &[Observation]) -> Vec<(&'static str, &'static str, String)> {
    vec![
        ("roc", "ROC curve", plots::roc(summary)),
        (
            "distribution_similarity",
            "Similarity by outcome",
            plots::distribution(obs, Score::Similarity),
        ),
        (
            "distribution_reward",
            "Reward by outcome",
            plots::distribution(obs, Score::Reward),
        ),
        ("calibration", "Calibration", plots::calibration(summary)),
        ("best_of_n", "Best of n", plots::best_of_n(summary)),
    ]
}

/// `summary.json` as written: the study summary wire format, version
/// [`crate::wire::STUDY_SUMMARY_VERSION`] (docs/formats.md), the version first, then the
/// summary's fields.
#[derive(Debug, serde::Serialize)]
pub struct SummaryFile<'a> {
    /// [`crate::wire::STUDY_SUMMARY_VERSION`].
    pub format_version: u32,
    /// The summary's fields, at the top level of the object.
    #[serde(flatten)]
    pub summary: &'a Summary,
}

/// Writes every output file into `dir` (created if needed).
pub fn write_study(
    dir: &Path,
    summary: &Summary,
    obs: &[Observation],
    patches: &Patches,
) -> Result<Written, WriteReportError> {
    std::fs::create_dir_all(dir).map_err(|source| WriteReportError::Dir {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut w = Written::default();
    let put = |name: &str, bytes: &[u8], w: &mut Written| -> Result<(), WriteReportError> {
        let p = dir.join(name);
        write_atomic(&p, bytes)?;
        w.files.push(p);
        Ok(())
    };
    let file = SummaryFile {
        format_version: crate::wire::STUDY_SUMMARY_VERSION,
        summary,
    };
    write_json_atomic(&dir.join("summary.json"), &file)?;
    w.files.push(dir.join("summary.json"));
    put("per_prediction.csv", &per_prediction_csv(obs)?, &mut w)?;
    let plots = plot_set(summary, obs);
    let raster = Rasterizer::new();
    for (stem, _, svg) in &plots {
        put(&format!("{stem}.svg"), svg.as_bytes(), &mut w)?;
        match raster.png(svg, 2.0) {
            Ok(png) => put(&format!("{stem}.png"), &png, &mut w)?,
            Err(e) => w.png_problems.push(format!("{stem}.png: {e}")),
        }
    }
    put(
        "report.md",
        markdown(summary, &plots, patches).as_bytes(),
        &mut w,
    )?;
    put(
        "report.html",
        html(summary, &plots, patches).as_bytes(),
        &mut w,
    )?;
    Ok(w)
}

/// One row of `per_prediction.csv` as written: the study's per-prediction wire format,
/// version [`crate::wire::STUDY_ROWS_VERSION`] (docs/formats.md), `format_version` last.
#[derive(Debug, serde::Serialize)]
pub struct PredictionCsvRow<'a> {
    /// The instance.
    pub instance_id: &'a str,
    /// The sample number.
    pub sample: u32,
    /// `owner/name`.
    pub repo: &'a str,
    /// The dataset's difficulty (empty when unknown).
    pub difficulty: &'a str,
    /// The similarity, as Rust prints an `f64` (`1`, `0.25`).
    pub similarity: String,
    /// The reward, printed the same way.
    pub reward: String,
    /// The reward's format verdict (empty when the input had none).
    pub format: &'a str,
    /// `true` only for a resolved prediction.
    pub resolved: bool,
    /// `resolved`, `unresolved`, or why there is no test verdict ([`crate::study::Outcome`]).
    pub verdict: &'a str,
    /// [`crate::wire::STUDY_ROWS_VERSION`].
    pub format_version: u32,
}

impl<'a> PredictionCsvRow<'a> {
    /// The row of one observation.
    pub fn of(o: &'a Observation) -> PredictionCsvRow<'a> {
        PredictionCsvRow {
            instance_id: &o.instance_id,
            sample: o.sample,
            repo: &o.repo,
            difficulty: o.difficulty.as_deref().unwrap_or(""),
            similarity: o.similarity.to_string(),
            reward: o.reward.to_string(),
            format: o.format.as_deref().unwrap_or(""),
            resolved: o.outcome.resolved(),
            verdict: o.outcome.label(),
            format_version: crate::wire::STUDY_ROWS_VERSION,
        }
    }
}

fn per_prediction_csv(obs: &[Observation]) -> Result<Vec<u8>, WriteReportError> {
    let err = |e: csv::Error| WriteReportError::Csv {
        file: "per_prediction.csv",
        message: e.to_string(),
    };
    let mut wr = csv::Writer::from_writer(Vec::new());
    for o in obs {
        wr.serialize(PredictionCsvRow::of(o)).map_err(err)?;
    }
    if obs.is_empty() {
        // The header comes with the first row; an empty study still names its columns.
        wr.write_record(CSV_COLUMNS).map_err(err)?;
    }
    wr.into_inner().map_err(|e| WriteReportError::Csv {
        file: "per_prediction.csv",
        message: e.to_string(),
    })
}

/// The columns of [`PredictionCsvRow`], in order (a test holds them equal).
const CSV_COLUMNS: [&str; 10] = [
    "instance_id",
    "sample",
    "repo",
    "difficulty",
    "similarity",
    "reward",
    "format",
    "resolved",
    "verdict",
    "format_version",
];

// ---- tables shared by both reports ----

pub(crate) struct Table {
    pub(crate) header: Vec<String>,
    pub(crate) rows: Vec<Vec<String>>,
}

fn f3(x: Option<f64>) -> String {
    x.map_or_else(|| "n/a".into(), |v| format!("{v:.3}"))
}

fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "n/a".into(), |v| format!("{:.1}%", v * 100.0))
}

fn auroc_cell(s: &Stats) -> String {
    match (s.reading(), s.auroc_ci95) {
        (Reading::Read(a), Some([lo, hi])) => format!("{a:.3} [{lo:.3}, {hi:.3}]"),
        (Reading::Read(a), None) => format!("{a:.3}"),
        (Reading::SmallSample(a), _) => format!("{a:.3} (small sample)"),
        (Reading::AllTied, _) => format!("{} (all tied)", f3(s.auroc)),
        (Reading::NoPairs, _) => f3(None),
    }
}

fn headline_table(s: &Summary) -> Table {
    let (a, b) = (&s.similarity.overall, &s.reward.overall);
    let row = |name: &str, f: &dyn Fn(&Stats) -> String| vec![name.to_string(), f(a), f(b)];
    let mut rows = vec![
        row("AUROC [95% CI]", &auroc_cell),
        row("resolved-unresolved pairs tied", &|x| pct(x.tied_pairs)),
        vec![
            format!(
                "AUROC without the {} harness errors (n = {})",
                s.n_harness_errors, s.n_without_harness_errors
            ),
            f3(s.similarity_auroc_without_harness_errors),
            f3(s.reward_auroc_without_harness_errors),
        ],
        row("point-biserial r", &|x| f3(x.point_biserial)),
        row("Spearman rho", &|x| f3(x.spearman)),
        row("Kendall tau-b", &|x| f3(x.kendall_tau_b)),
        row("mean: resolved / not", &|x| {
            format!("{} / {}", f3(x.mean_resolved), f3(x.mean_unresolved))
        }),
        row("median: resolved / not", &|x| {
            format!("{} / {}", f3(x.median_resolved), f3(x.median_unresolved))
        }),
    ];
    for (i, t) in s.settings.thresholds.iter().enumerate() {
        rows.push(row(
            &format!("score >= {t}: precision / recall (n)"),
            &|x| {
                let pr = &x.precision_recall[i];
                format!(
                    "{} / {} ({})",
                    pct(pr.precision),
                    pct(pr.recall),
                    pr.n_selected
                )
            },
        ));
    }
    Table {
        header: vec!["".into(), "similarity".into(), "reward".into()],
        rows,
    }
}

fn counts_table(s: &Summary) -> Table {
    let mut rows = vec![
        vec!["predictions joined".into(), s.n.to_string()],
        vec![
            "resolved".into(),
            format!("{} ({})", s.n_resolved, pct(s.resolve_rate)),
        ],
        vec!["unresolved (tests ran)".into(), s.n_unresolved.to_string()],
        vec![
            "no verdict, counted unresolved".into(),
            s.n_no_verdict.to_string(),
        ],
    ];
    for (why, n) in &s.no_verdict_by_reason {
        rows.push(vec![format!("  of which {why}"), n.to_string()]);
    }
    rows.push(vec![
        "unmatched (left out)".into(),
        format!(
            "{} ({} rewards without outcome, {} outcomes without reward)",
            s.n_unmatched, s.n_unmatched_rewards, s.n_unmatched_outcomes
        ),
    ]);
    if let Some([r, o]) = &s.models_differ {
        rows.push(vec![
            "  of which different models".into(),
            format!("{} (rewards of {r}, outcomes of {o})", s.n_model_mismatch),
        ]);
    }
    rows.push(vec![
        "instances / max samples".into(),
        format!("{} / {}", s.n_instances, s.max_samples),
    ]);
    Table {
        header: vec!["count".into(), "value".into()],
        rows,
    }
}

fn groups_table(
    label: &str,
    sim: &ScoreStudy,
    rew: &ScoreStudy,
    pick: fn(&ScoreStudy) -> &std::collections::BTreeMap<String, Stats>,
) -> Table {
    let rows = pick(sim)
        .iter()
        .map(|(name, s)| {
            let r = &pick(rew)[name];
            vec![
                name.clone(),
                s.n.to_string(),
                pct(s.resolve_rate),
                auroc_cell(s),
                auroc_cell(r),
                f3(s.spearman),
                format!("{} / {}", f3(s.mean_resolved), f3(s.mean_unresolved)),
            ]
        })
        .collect();
    Table {
        header: [
            label,
            "n",
            "resolved",
            "similarity AUROC [CI]",
            "reward AUROC [CI]",
            "similarity rho",
            "mean sim.: resolved / not",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

fn calibration_table(s: &Summary) -> Table {
    let mut rows = Vec::new();
    for (name, st) in [("similarity", &s.similarity), ("reward", &s.reward)] {
        for b in &st.overall.calibration {
            rows.push(vec![
                name.to_string(),
                b.label.clone(),
                b.n.to_string(),
                b.n_resolved.to_string(),
                pct(Some(b.resolve_rate)),
                format!("{:.3}", b.mean_score),
            ]);
        }
    }
    Table {
        header: [
            "score",
            "bin",
            "n",
            "resolved",
            "resolve rate",
            "mean score",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

fn best_of_n_table(s: &Summary) -> Table {
    let rows = s
        .reward
        .best_of_n
        .iter()
        .zip(&s.similarity.best_of_n)
        .map(|(r, sim)| {
            vec![
                r.n.to_string(),
                r.instances.to_string(),
                pct(Some(r.max_score)),
                pct(Some(r.max_score_ties_random)),
                pct(Some(sim.max_score)),
                pct(Some(r.random)),
                pct(Some(r.first)),
                pct(Some(r.oracle)),
            ]
        })
        .collect();
    Table {
        header: [
            "n",
            "instances",
            "highest reward",
            "highest reward, random tie",
            "highest similarity",
            "random",
            "first",
            "oracle (pass@n)",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

pub(crate) fn md_table(t: &Table) -> String {
    let cell = |s: &str| s.replace('|', "\\|");
    let mut out = format!(
        "| {} |\n|{}\n",
        t.header
            .iter()
            .map(|h| cell(h))
            .collect::<Vec<_>>()
            .join(" | "),
        "---|".repeat(t.header.len())
    );
    for r in &t.rows {
        let _ = writeln!(
            out,
            "| {} |",
            r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | ")
        );
    }
    out
}

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub(crate) fn html_table(t: &Table) -> String {
    let mut out = String::from("<table>\n<tr>");
    for h in &t.header {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr>\n");
    for r in &t.rows {
        out.push_str("<tr>");
        for c in r {
            let _ = write!(out, "<td>{}</td>", esc(c));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

/// One section of both reports: a title, a paragraph, and a table.
struct Section {
    title: &'static str,
    text: String,
    table: Table,
}

fn sections(s: &Summary) -> Vec<Section> {
    let mut v = vec![
        Section {
            title: "Statistics",
            text: format!(
                "Resolved is the executed verdict. {} A harness error says nothing about the \
                 patch, so the AUROC is also given with harness errors left out. `similarity` \
                 equals the SWE-RL reference's score; `reward` is -1 for empty and unparsable \
                 patches, where the reference gives 0.0. Intervals are seeded \
                 percentile-bootstrap 95% intervals. An AUROC of fewer than {} predictions, or \
                 of fewer than {} of either outcome, is marked `small sample` and has no \
                 interval; tied pairs count one half, and an AUROC whose pairs are all tied \
                 ranks nothing.",
                s.no_verdict_counted,
                super::READING_MIN_N,
                super::READING_MIN_EACH
            ),
            table: headline_table(s),
        },
        Section {
            title: "Counts",
            text: String::new(),
            table: counts_table(s),
        },
        Section {
            title: "Per repository",
            text: "Where resemblance works and where it does not.".into(),
            table: groups_table("repository", &s.similarity, &s.reward, |x| &x.per_repo),
        },
        Section {
            title: "Per difficulty",
            text: "SWE-bench Verified's annotated time to fix (`unknown` without --dataset)."
                .into(),
            table: groups_table("difficulty", &s.similarity, &s.reward, |x| {
                &x.per_difficulty
            }),
        },
        Section {
            title: "Calibration",
            text: "Resolve rate per score decile; bin `< 0` holds malformed patches (reward -1)."
                .into(),
            table: calibration_table(s),
        },
    ];
    if !s.reward.best_of_n.is_empty() {
        v.push(Section {
            title: "Best of n",
            text: format!(
                "Instances with at least n samples, first n by sample number. {}",
                s.settings.best_of_n_rule
            ),
            table: best_of_n_table(s),
        });
    }
    v
}

/// The blind spots with their patches: (title, explanation, list).
fn blind_spot_groups(s: &Summary) -> [(&'static str, &'static str, &Vec<super::BlindSpot>); 2] {
    [
        (
            "Resolved, yet least similar to the human patch",
            "Correct fixes the similarity would punish.",
            &s.blind_spots.resolved_least_similar,
        ),
        (
            "Unresolved, yet most similar to the human patch",
            "Wrong fixes the similarity would reward.",
            &s.blind_spots.unresolved_most_similar,
        ),
    ]
}

fn markdown(s: &Summary, plots: &[(&str, &str, String)], patches: &Patches) -> String {
    let mut out = String::from("# Does resemblance to the human patch track correctness?\n\n");
    let _ = writeln!(out, "**{}**\n", s.headline);
    for (stem, title, _) in plots {
        let _ = writeln!(out, "![{title}]({stem}.png)");
    }
    out.push('\n');
    for sec in sections(s) {
        let _ = writeln!(out, "## {}\n", sec.title);
        if !sec.text.is_empty() {
            let _ = writeln!(out, "{}\n", sec.text);
        }
        out.push_str(&md_table(&sec.table));
        out.push('\n');
    }
    out.push_str("## Blind spots\n\n");
    for (title, why, list) in blind_spot_groups(s) {
        let _ = writeln!(out, "### {title}\n\n{why}\n");
        if list.is_empty() {
            out.push_str("None.\n\n");
        }
        for b in list {
            let _ = writeln!(
                out,
                "#### {} (sample {}): similarity {:.3}, reward {:.3}, {}\n",
                b.instance_id, b.sample, b.similarity, b.reward, b.verdict
            );
            let pred = patches.predicted.get(&(b.instance_id.clone(), b.sample));
            let gold = patches.gold.get(&b.instance_id);
            for (label, p, hint) in [
                ("Predicted", pred, "--predictions"),
                ("Gold", gold, "--dataset"),
            ] {
                match p {
                    Some(p) => {
                        let fence = if p.contains("```") { "~~~~" } else { "```" };
                        let _ =
                            writeln!(out, "{label}:\n\n{fence}diff\n{}\n{fence}\n", p.trim_end());
                    }
                    None => {
                        let _ = writeln!(out, "{label}: not available (give {hint}).\n");
                    }
                }
            }
        }
    }
    out
}

pub(crate) const CSS: &str = r#"
body { font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; margin: 24px auto; max-width: 1240px; color: #222; }
h1 { font-size: 24px; margin-bottom: 8px; }
.headline { display: flex; gap: 24px; align-items: center; background: #f3f6fa; border-left: 6px solid #2166ac; padding: 16px 20px; margin: 12px 0 20px; }
.big { font-size: 44px; font-weight: bold; color: #2166ac; white-space: nowrap; }
.big small { display: block; font-size: 14px; font-weight: normal; color: #555; }
.headline p { font-size: 17px; margin: 0; line-height: 1.45; }
.plots { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 12px; }
.plots figure { margin: 0; border: 1px solid #ddd; }
.plots svg { width: 100%; height: auto; display: block; }
table { border-collapse: collapse; margin: 8px 0 18px; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; }
th { background: #f0f0f0; }
.pair { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 8px; }
.pair pre { background: #fafafa; border: 1px solid #ddd; padding: 6px; font-size: 11px; overflow: auto; max-height: 360px; margin: 0; }
.pair h5 { margin: 4px 0; }
.note { color: #666; font-size: 13px; }
"#;

fn html(s: &Summary, plots: &[(&str, &str, String)], patches: &Patches) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>swe-eval correlate: resemblance vs correctness</title><style>{CSS}</style></head><body>\n\
         <h1>Does resemblance to the human patch track correctness?</h1>\n"
    );
    let o = &s.similarity.overall;
    let big = match o.reading() {
        Reading::Read(a) => format!(
            "{a:.3}<small>similarity AUROC<br>tracks {}</small>",
            auroc_words(a)
        ),
        Reading::SmallSample(a) => {
            format!("{a:.3}<small>similarity AUROC<br>too few to read</small>")
        }
        Reading::AllTied => "0.500<small>similarity AUROC<br>all tied</small>".to_string(),
        Reading::NoPairs => "n/a<small>similarity AUROC</small>".to_string(),
    };
    let _ = writeln!(
        out,
        "<div class=\"headline\"><div class=\"big\">{big}</div><p>{}</p></div>",
        esc(&s.headline)
    );
    out.push_str("<div class=\"plots\">\n");
    for (_, title, svg) in plots {
        let _ = writeln!(out, "<figure aria-label=\"{}\">{svg}</figure>", esc(title));
    }
    out.push_str("</div>\n");
    for sec in sections(s) {
        let _ = writeln!(out, "<h2>{}</h2>", sec.title);
        if !sec.text.is_empty() {
            let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(&sec.text));
        }
        out.push_str(&html_table(&sec.table));
    }
    out.push_str("<h2>Blind spots</h2>\n");
    for (title, why, list) in blind_spot_groups(s) {
        let _ = writeln!(
            out,
            "<h3>{}</h3><p class=\"note\">{}</p>",
            esc(title),
            esc(why)
        );
        if list.is_empty() {
            out.push_str("<p>None.</p>\n");
        }
        for b in list {
            let _ = writeln!(
                out,
                "<h4>{} (sample {}): similarity {:.3}, reward {:.3}, {}</h4>",
                esc(&b.instance_id),
                b.sample,
                b.similarity,
                b.reward,
                esc(&b.verdict)
            );
            let pred = patches.predicted.get(&(b.instance_id.clone(), b.sample));
            let gold = patches.gold.get(&b.instance_id);
            out.push_str("<div class=\"pair\">");
            for (label, p, hint) in [
                ("Predicted", pred, "--predictions"),
                ("Gold", gold, "--dataset"),
            ] {
                let body = p.map_or_else(
                    || format!("not available (give {hint})"),
                    |p| esc(p.trim_end()),
                );
                let _ = write!(out, "<div><h5>{label}</h5><pre>{body}</pre></div>");
            }
            out.push_str("</div>\n");
        }
    }
    let _ = writeln!(
        out,
        "<h2>Method</h2><p class=\"note\">AUROC: {}. Bootstrap: {} resamples, seed {}, {}. \
         Calibration: {}. {}. Small samples: {}. Ties: {}.</p></body></html>",
        esc(s.settings.auroc),
        s.settings.bootstrap,
        s.settings.seed,
        esc(s.settings.bootstrap_method),
        esc(s.settings.calibration_bins),
        esc(s.settings.no_verdict_rule),
        esc(s.settings.small_sample_rule),
        esc(s.settings.ties_rule)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::Outcome;

    #[test]
    fn per_prediction_csv_has_its_columns_and_version_even_when_empty() {
        let o = Observation {
            instance_id: "a__a-1".into(),
            sample: 2,
            repo: "a/a".into(),
            difficulty: None,
            similarity: 1.0,
            reward: -1.0,
            format: Some("unparsable".into()),
            outcome: Outcome::NoVerdict("empty_patch".into()),
        };
        let text = String::from_utf8(per_prediction_csv(&[o]).unwrap()).unwrap();
        assert_eq!(
            text,
            format!(
                "{}\na__a-1,2,a/a,,1,-1,unparsable,false,empty_patch,{}\n",
                CSV_COLUMNS.join(","),
                crate::wire::STUDY_ROWS_VERSION
            )
        );
        let empty = String::from_utf8(per_prediction_csv(&[]).unwrap()).unwrap();
        assert_eq!(empty, format!("{}\n", CSV_COLUMNS.join(",")));
    }
}
