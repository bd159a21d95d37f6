//! Writes a comparison: summary.json (with `format_version`), per_prediction.csv,
//! per_instance.csv, flips.csv, a forest plot per pair (SVG and PNG), report.md and a
//! self-contained report.html, the headline first. Tables are built once and rendered to both
//! reports with the study's table code, so the two say the same thing.

use std::collections::BTreeSet;
use std::path::Path;

use super::{labels, plots, Diff, PairStats, PassAtK, Run, Summary};

use crate::dataset::Dataset;
use crate::fsutil::{write_atomic, write_json_atomic};
use crate::study::{esc, html_table, md_table, Table, CSS};
use crate::study::{Rasterizer, WriteReportError, Written};

/// A run name as a file-name part.
fn file_part(s: &str) -> String {
    s.chars()
        .take(60)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The forest plot's file stem of pair `k` (0-based).
pub fn forest_stem(k: usize, p: &PairStats) -> String {
    format!(
        "forest_{}_{}_vs_{}",
        k + 1,
        file_part(&p.b),
        file_part(&p.a)
    )
}

/// Writes every output file into `dir` (created if needed).
pub fn write_compare(
    dir: &Path,
    summary: &Summary,
    runs: &[Run],
    dataset: Option<&Dataset>,
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
    write_json_atomic(&dir.join("summary.json"), summary)?;
    w.files.push(dir.join("summary.json"));
    let unstable: BTreeSet<&str> = summary.unstable.iter().map(String::as_str).collect();
    put(
        "per_prediction.csv",
        &per_prediction_csv(runs, dataset, &unstable)?,
        &mut w,
    )?;
    put(
        "per_instance.csv",
        &per_instance_csv(runs, dataset, &unstable, summary)?,
        &mut w,
    )?;
    put(
        "flips.csv",
        &flips_csv(summary, dataset, &unstable)?,
        &mut w,
    )?;
    let raster = Rasterizer::new();
    let mut forests = Vec::new();
    for (k, p) in summary.pairs.iter().enumerate() {
        let stem = forest_stem(k, p);
        let svg = plots::forest(p);
        put(&format!("{stem}.svg"), svg.as_bytes(), &mut w)?;
        match raster.png(&svg, 2.0) {
            Ok(png) => put(&format!("{stem}.png"), &png, &mut w)?,
            Err(e) => w.png_problems.push(format!("{stem}.png: {e}")),
        }
        forests.push((stem, svg));
    }
    put("report.md", markdown(summary, &forests).as_bytes(), &mut w)?;
    put("report.html", html(summary, &forests).as_bytes(), &mut w)?;
    Ok(w)
}

fn csv_bytes(
    file: &'static str,
    header: &[String],
    rows: impl Iterator<Item = Vec<String>>,
) -> Result<Vec<u8>, WriteReportError> {
    let err = |e: &dyn std::fmt::Display| WriteReportError::Csv {
        file,
        message: e.to_string(),
    };
    let mut wr = csv::Writer::from_writer(Vec::new());
    wr.write_record(header).map_err(|e| err(&e))?;
    for r in rows {
        wr.write_record(&r).map_err(|e| err(&e))?;
    }
    wr.into_inner().map_err(|e| err(&e))
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn per_prediction_csv(
    runs: &[Run],
    dataset: Option<&Dataset>,
    unstable: &BTreeSet<&str>,
) -> Result<Vec<u8>, WriteReportError> {
    let header = strings(&[
        "run",
        "instance_id",
        "sample",
        "repo",
        "difficulty",
        "resolved",
        "verdict",
        "similarity",
        "unstable",
    ]);
    let rows = runs.iter().flat_map(|run| {
        run.outcomes.iter().flat_map(move |(id, v)| {
            let (repo, diff) = labels(id, dataset);
            v.iter().map(move |(s, verdict)| {
                let sim = run
                    .similarity
                    .as_ref()
                    .and_then(|m| m.get(&(id.clone(), *s)))
                    .map_or_else(String::new, |x| x.to_string());
                vec![
                    run.name.clone(),
                    id.clone(),
                    s.to_string(),
                    repo.clone(),
                    diff.clone(),
                    verdict.resolved().to_string(),
                    verdict.label().to_string(),
                    sim,
                    unstable.contains(id.as_str()).to_string(),
                ]
            })
        })
    });
    csv_bytes("per_prediction.csv", &header, rows)
}

fn per_instance_csv(
    runs: &[Run],
    dataset: Option<&Dataset>,
    unstable: &BTreeSet<&str>,
    summary: &Summary,
) -> Result<Vec<u8>, WriteReportError> {
    // `flaky`: empty without a flaky map; true/false with one.
    let flaky: Option<BTreeSet<&str>> = summary
        .flaky
        .as_ref()
        .map(|f| f.instances.iter().map(String::as_str).collect());
    let mut header = strings(&["instance_id", "repo", "difficulty", "unstable", "flaky"]);
    header.extend(runs.iter().map(|r| r.name.clone()));
    let ids: BTreeSet<&String> = runs.iter().flat_map(|r| r.outcomes.keys()).collect();
    let rows = ids.into_iter().map(|id| {
        let (repo, diff) = labels(id, dataset);
        let mut row = vec![
            id.clone(),
            repo,
            diff,
            unstable.contains(id.as_str()).to_string(),
            flaky
                .as_ref()
                .map_or_else(String::new, |f| f.contains(id.as_str()).to_string()),
        ];
        row.extend(runs.iter().map(|r| {
            r.outcomes.get(id).map_or_else(String::new, |v| {
                let c = v.iter().filter(|(_, x)| x.resolved()).count();
                (c as f64 / v.len() as f64).to_string()
            })
        }));
        row
    });
    csv_bytes("per_instance.csv", &header, rows)
}

fn flips_csv(
    s: &Summary,
    dataset: Option<&Dataset>,
    unstable: &BTreeSet<&str>,
) -> Result<Vec<u8>, WriteReportError> {
    let header = strings(&[
        "a",
        "b",
        "instance_id",
        "repo",
        "difficulty",
        "direction",
        "unstable",
    ]);
    let rows = s.pairs.iter().flat_map(|p| {
        let tagged = p
            .to_resolved
            .iter()
            .map(|i| (i, "to_resolved"))
            .chain(p.to_unresolved.iter().map(|i| (i, "to_unresolved")));
        tagged.map(move |(id, dir)| {
            let (repo, diff) = labels(id, dataset);
            vec![
                p.a.clone(),
                p.b.clone(),
                id.clone(),
                repo,
                diff,
                dir.to_string(),
                unstable.contains(id.as_str()).to_string(),
            ]
        })
    });
    csv_bytes("flips.csv", &header, rows)
}

// ---- tables shared by both reports ----

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn ci_pts(ci: Option<[f64; 2]>) -> String {
    ci.map_or_else(
        || "n/a".into(),
        |[l, h]| format!("[{:+.1}, {:+.1}]", l * 100.0, h * 100.0),
    )
}

fn p_cell(p: Option<f64>) -> String {
    p.map_or_else(|| "n/a".into(), |p| format!("{p:.4}"))
}

/// `@k value` for k >= `from`, comma-separated.
fn passk_text(v: &[PassAtK], from: usize) -> String {
    v.iter()
        .filter(|p| p.k >= from)
        .map(|p| format!("@{} {}", p.k, pct(p.value)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The cells of a difference: n, A, B, difference, CI, McNemar p, flips each way.
fn diff_cells(d: &Diff) -> Vec<String> {
    vec![
        d.n.to_string(),
        pct(d.rate_a),
        pct(d.rate_b),
        format!("{:+.1}", d.difference * 100.0),
        ci_pts(d.ci95),
        p_cell(d.mcnemar_p),
        d.n_to_resolved.to_string(),
        d.n_to_unresolved.to_string(),
    ]
}

const DIFF_HEADER: [&str; 8] = [
    "n",
    "A",
    "B",
    "difference (pts)",
    "95% CI",
    "McNemar p",
    "to resolved",
    "to unresolved",
];

fn runs_table(s: &Summary) -> Table {
    let rows = s
        .runs
        .iter()
        .map(|r| {
            let rate = r.resolve_rate.map_or_else(
                || "n/a".into(),
                |x| match r.ci95 {
                    Some([l, h]) => format!("{} [{}, {}]", pct(x), pct(l), pct(h)),
                    None => pct(x),
                },
            );
            let passk = passk_text(&r.pass_at_k, 2);
            vec![
                r.name.clone(),
                r.source.clone(),
                r.n_instances.to_string(),
                format!("{}-{}", r.min_samples, r.max_samples),
                r.n_resolved.to_string(),
                rate,
                if passk.is_empty() { "-".into() } else { passk },
                r.n_no_verdict.to_string(),
                r.mean_similarity
                    .map_or_else(|| "-".into(), |m| format!("{m:.3}")),
            ]
        })
        .collect();
    Table {
        header: strings(&[
            "run",
            "source",
            "instances",
            "samples",
            "resolved",
            "rate (pass@1) [95% CI]",
            "pass@k",
            "no verdict",
            "mean similarity",
        ]),
        rows,
    }
}

fn repeats_table(s: &Summary) -> Table {
    let rows = s
        .repeats
        .iter()
        .map(|g| {
            vec![
                g.name.clone(),
                g.runs
                    .iter()
                    .zip(&g.rates)
                    .map(|(n, r)| format!("{n} {}", pct(*r)))
                    .collect::<Vec<_>>()
                    .join(", "),
                pct(g.mean),
                g.sd.map_or_else(|| "n/a".into(), |x| format!("{:.2}", x * 100.0)),
                format!("{:.1}", g.range * 100.0),
                g.n_instances.to_string(),
                format!("{} / {} / {}", g.n_always, g.n_never, g.n_unstable),
                passk_text(&g.pass_at_k, 1),
            ]
        })
        .collect();
    Table {
        header: strings(&[
            "group",
            "runs",
            "mean",
            "sd (points)",
            "range (points)",
            "instances",
            "always / never / unstable",
            "pass@k (runs as samples)",
        ]),
        rows,
    }
}

/// A table of differences: a label column, the difference cells, and `extra` columns.
fn diff_table<'a, T: 'a>(
    label: &str,
    items: impl Iterator<Item = (String, &'a Diff, T)>,
    extra: &[&str],
    extra_cells: impl Fn(T) -> Vec<String>,
) -> Table {
    let rows = items
        .map(|(name, d, x)| {
            let mut row = vec![name];
            row.extend(diff_cells(d));
            row.extend(extra_cells(x));
            row
        })
        .collect();
    let mut header = vec![label.to_string()];
    header.extend(strings(&DIFF_HEADER));
    header.extend(strings(extra));
    Table { header, rows }
}

fn pairs_table(s: &Summary) -> Table {
    diff_table(
        "B - A",
        s.pairs
            .iter()
            .map(|p| (format!("{} - {}", p.b, p.a), &p.overall, p)),
        &["unstable flips (their part)"],
        |p| {
            vec![format!(
                "{} ({:+.1} pts)",
                p.n_to_resolved_unstable + p.n_to_unresolved_unstable,
                p.difference_unstable * 100.0
            )]
        },
    )
}

fn groups_table(label: &str, groups: &std::collections::BTreeMap<String, Diff>) -> Table {
    diff_table(
        label,
        groups.iter().map(|(name, d)| (name.clone(), d, ())),
        &[],
        |()| Vec::new(),
    )
}

fn similarity_text(p: &PairStats) -> String {
    match &p.similarity {
        None => "Not computed (give --rewards NAME=FILE for both runs).".into(),
        Some(c) => {
            let opt = |x: Option<f64>| x.map_or_else(|| "n/a".into(), |v| format!("{v:+.3}"));
            format!(
                "Over {} instances with a similarity in both runs: mean {:.3} in {} and {:.3} in \
                 {}, a paired difference of {:+.3} (95% CI {}); it changed on {} instances. On \
                 the instances that flipped to resolved it moved {}, on those that flipped to \
                 unresolved {}.",
                c.n,
                c.mean_a,
                p.a,
                c.mean_b,
                p.b,
                c.mean_difference,
                c.ci95
                    .map_or_else(|| "n/a".into(), |[l, h]| format!("{l:+.3} to {h:+.3}")),
                c.n_changed,
                opt(c.mean_difference_to_resolved),
                opt(c.mean_difference_to_unresolved)
            )
        }
    }
}

fn flip_list(ids: &[String], unstable: &BTreeSet<&str>) -> String {
    if ids.is_empty() {
        return "none".into();
    }
    ids.iter()
        .map(|i| {
            if unstable.contains(i.as_str()) {
                format!("{i}*")
            } else {
                i.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The per-pair part of both reports: (title, headline, text blocks, tables).
struct PairPart {
    title: String,
    headline: String,
    flips: Vec<(String, String)>,
    similarity: String,
    tables: Vec<(&'static str, Table)>,
}

fn pair_parts(s: &Summary) -> Vec<PairPart> {
    let unstable: BTreeSet<&str> = s.unstable.iter().map(String::as_str).collect();
    s.pairs
        .iter()
        .map(|p| {
            let (up, down) = if p.single_sample {
                ("Flipped to resolved", "Flipped to unresolved")
            } else {
                ("Resolved more often", "Resolved less often")
            };
            PairPart {
                title: format!("{} against {}", p.b, p.a),
                headline: p.headline.clone(),
                flips: vec![
                    (
                        format!("{up} ({})", p.to_resolved.len()),
                        flip_list(&p.to_resolved, &unstable),
                    ),
                    (
                        format!("{down} ({})", p.to_unresolved.len()),
                        flip_list(&p.to_unresolved, &unstable),
                    ),
                ],
                similarity: similarity_text(p),
                tables: vec![
                    ("Per repository", groups_table("repository", &p.per_repo)),
                    (
                        "Per difficulty",
                        groups_table("difficulty", &p.per_difficulty),
                    ),
                ],
            }
        })
        .collect()
}

const UNSTABLE_NOTE: &str = "Instances marked * are unstable: the repeated runs of one system \
                             (--repeat) disagree on them.";

fn method_text(s: &Summary) -> String {
    let m = &s.methods;
    format!(
        "Rate interval: {}. pass@k: {}. Difference interval: {} ({} resamples, seed {}). \
         McNemar: {}. Unstable: {}. {}.",
        m.rate_interval,
        m.pass_at_k,
        m.difference_interval,
        s.settings.bootstrap,
        s.settings.seed,
        m.mcnemar,
        m.unstable,
        m.no_verdict
    )
}

fn markdown(s: &Summary, forests: &[(String, String)]) -> String {
    use std::fmt::Write as _;
    let mut out = String::from("# Comparison of runs\n\n");
    let _ = writeln!(out, "**{}**\n", s.headline);
    let _ = writeln!(out, "## Runs\n\n{}", md_table(&runs_table(s)));
    if !s.repeats.is_empty() {
        let _ = writeln!(
            out,
            "## Repeated runs\n\n{}\nUnstable instances ({}): {}\n",
            md_table(&repeats_table(s)),
            s.unstable.len(),
            if s.unstable.is_empty() {
                "none".into()
            } else {
                s.unstable.join(", ")
            }
        );
    }
    let _ = writeln!(
        out,
        "## Pairs\n\nDifferences are B minus A in percentage points.\n\n{}",
        md_table(&pairs_table(s))
    );
    for (part, (stem, _)) in pair_parts(s).iter().zip(forests) {
        let _ = writeln!(out, "## {}\n\n**{}**\n", part.title, part.headline);
        let _ = writeln!(out, "![Forest plot]({stem}.png)\n");
        for (label, list) in &part.flips {
            let _ = writeln!(out, "{label}: {list}\n");
        }
        if !s.repeats.is_empty() {
            let _ = writeln!(out, "{UNSTABLE_NOTE}\n");
        }
        let _ = writeln!(out, "Similarity: {}\n", part.similarity);
        for (title, t) in &part.tables {
            let _ = writeln!(out, "### {title}\n\n{}", md_table(t));
        }
    }
    let _ = writeln!(out, "## Method\n\n{}", method_text(s));
    out
}

fn html(s: &Summary, forests: &[(String, String)]) -> String {
    use std::fmt::Write as _;
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>swe-eval compare</title><style>{CSS}</style></head><body>\n\
         <h1>Comparison of runs</h1>\n"
    );
    let big = s.pairs.first().map_or_else(String::new, |p| {
        format!(
            "<div class=\"big\">{:+.1}<small>points, {} - {}</small></div>",
            p.overall.difference * 100.0,
            esc(&p.b),
            esc(&p.a)
        )
    });
    let _ = writeln!(
        out,
        "<div class=\"headline\">{big}<p>{}</p></div>",
        esc(&s.headline)
    );
    let _ = writeln!(out, "<h2>Runs</h2>\n{}", html_table(&runs_table(s)));
    if !s.repeats.is_empty() {
        let _ = writeln!(
            out,
            "<h2>Repeated runs</h2>\n{}<p>Unstable instances ({}): {}</p>",
            html_table(&repeats_table(s)),
            s.unstable.len(),
            esc(&if s.unstable.is_empty() {
                "none".into()
            } else {
                s.unstable.join(", ")
            })
        );
    }
    let _ = writeln!(
        out,
        "<h2>Pairs</h2>\n<p class=\"note\">Differences are B minus A in percentage points.</p>\n{}",
        html_table(&pairs_table(s))
    );
    for (part, (_, svg)) in pair_parts(s).iter().zip(forests) {
        let _ = writeln!(
            out,
            "<h2>{}</h2>\n<p><b>{}</b></p>\n<figure aria-label=\"Forest plot\" style=\"max-width:760px;margin:0\">{svg}</figure>",
            esc(&part.title),
            esc(&part.headline)
        );
        for (label, list) in &part.flips {
            let _ = writeln!(out, "<p><b>{}</b>: {}</p>", esc(label), esc(list));
        }
        if !s.repeats.is_empty() {
            let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(UNSTABLE_NOTE));
        }
        let _ = writeln!(out, "<p><b>Similarity</b>: {}</p>", esc(&part.similarity));
        for (title, t) in &part.tables {
            let _ = writeln!(out, "<h3>{title}</h3>\n{}", html_table(t));
        }
    }
    let _ = writeln!(
        out,
        "<h2>Method</h2><p class=\"note\">{}</p></body></html>",
        esc(&method_text(s))
    );
    out
}
