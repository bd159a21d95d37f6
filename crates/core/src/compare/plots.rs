//! The forest plot of a pair's differences: one row per repository (the largest first) under
//! the overall difference, each a dot at the difference in resolve rate (B - A, points) with
//! its bootstrap 95% interval, against a line at zero. Drawn with the study's SVG chart.

use crate::study::{Chart, BLUE, GREEN, GREY, RED};

use std::fmt::Write as _;

use super::{Diff, PairStats};

/// At most this many repositories get a row (the largest by instances); the rest are named in
/// a note under the plot.
pub const FOREST_ROWS: usize = 16;

/// A tick step that gives at most about eight ticks over `span`.
fn tick_step(span: f64) -> f64 {
    for s in [0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0] {
        if span / s <= 8.0 {
            return s;
        }
    }
    1.0
}

/// The forest plot of `p` as SVG.
pub fn forest(p: &PairStats) -> String {
    let mut groups: Vec<(&String, &Diff)> = p.per_repo.iter().collect();
    groups.sort_by(|x, y| y.1.n.cmp(&x.1.n).then(x.0.cmp(y.0)));
    let hidden = groups.len().saturating_sub(FOREST_ROWS);
    groups.truncate(FOREST_ROWS);
    let overall = "all instances".to_string();
    let mut rows: Vec<(&String, &Diff)> = vec![(&overall, &p.overall)];
    rows.extend(groups);

    let mut c = Chart::new(&format!(
        "{} minus {}: resolve rate by repository",
        p.b, p.a
    ));
    c.area[0] = 236.0;
    c.area[2] -= 12.0;
    let (mut lo, mut hi) = (0.0f64, 0.0f64);
    for (_, d) in &rows {
        let [l, h] = d.ci95.unwrap_or([d.difference, d.difference]);
        lo = lo.min(l);
        hi = hi.max(h);
    }
    let pad = ((hi - lo) * 0.06).max(0.01);
    let step = tick_step(hi - lo + 2.0 * pad);
    c.x = [
        ((lo - pad) / step).floor() * step,
        ((hi + pad) / step).ceil() * step,
    ];
    let n = rows.len() as f64;
    c.y = [0.0, n];
    let ypos = |i: usize| n - i as f64 - 0.5;
    let mut xt = Vec::new();
    let mut t = c.x[0];
    while t <= c.x[1] + 1e-9 {
        let v = if t.abs() < 1e-12 { 0.0 } else { t };
        xt.push((v, format!("{:+.0}", v * 100.0).replace("+0", "0")));
        t += step;
    }
    let yt: Vec<(f64, String)> = rows
        .iter()
        .enumerate()
        .map(|(i, (name, d))| (ypos(i), format!("{name} ({})", d.n)))
        .collect();
    c.axes(
        &xt,
        &yt,
        &format!(
            "difference in resolve rate, points ({} minus {}), 95% CI",
            p.b, p.a
        ),
        "repository (instances)",
    );
    let zero = c.px(0.0);
    let [_, top, _, bottom] = c.area;
    let _ = writeln!(
        c.out,
        r##"<line x1="{zero:.1}" y1="{top}" x2="{zero:.1}" y2="{bottom}" stroke="{GREY}" stroke-dasharray="4,3"/>"##
    );
    for (i, (_, d)) in rows.iter().enumerate() {
        let y = ypos(i);
        let color = if i == 0 {
            BLUE
        } else if d.difference > 0.0 {
            GREEN
        } else if d.difference < 0.0 {
            RED
        } else {
            GREY
        };
        if let Some([l, h]) = d.ci95 {
            c.polyline(
                &[(l, y), (h, y)],
                color,
                if i == 0 { 3.0 } else { 2.0 },
                None,
            );
        }
        let r = if i == 0 {
            5.5
        } else {
            2.5 + (d.n as f64).sqrt().min(9.0) * 0.35
        };
        let _ = writeln!(
            c.out,
            r#"<circle cx="{:.1}" cy="{:.1}" r="{r:.1}" fill="{color}"/>"#,
            c.px(d.difference),
            c.py(y)
        );
    }
    if hidden > 0 {
        let [_, t, r, _] = c.area;
        c.text(
            r,
            t - 6.0,
            "end",
            r#"font-size="11""#,
            &format!("{hidden} smaller repositories not shown (see the report's table)"),
        );
    }
    c.finish()
}
