//! The study's plots, written as SVG by hand (no plotting crate: four simple charts), and
//! rasterized to PNG in-process with resvg using the system's fonts.
//!
//! Every label is a `<text>` element in DejaVu Sans (with generic fallbacks); after parsing, the
//! rasterizer counts text that got no glyphs or a missing-glyph box, so that a machine without
//! the font is reported instead of silently giving plots without words.

use super::{Observation, Score, Summary};
use std::fmt::Write as _;

pub(crate) const W: f64 = 640.0;
pub(crate) const H: f64 = 420.0;
const FONT: &str = "DejaVu Sans, Liberation Sans, Arial, sans-serif";
/// Resolved, unresolved; similarity, reward; reference lines.
pub(crate) const GREEN: &str = "#1b9e77";
pub(crate) const RED: &str = "#d95f02";
pub(crate) const BLUE: &str = "#2166ac";
const PURPLE: &str = "#7570b3";
pub(crate) const GREY: &str = "#888888";

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// An SVG document being written, with one plotting area mapped from data coordinates.
pub(crate) struct Chart {
    pub(crate) out: String,
    /// Plot area in pixels: left, top, right, bottom.
    pub(crate) area: [f64; 4],
    pub(crate) x: [f64; 2],
    pub(crate) y: [f64; 2],
}

impl Chart {
    pub(crate) fn new(title: &str) -> Chart {
        let mut out = String::new();
        let _ = write!(
            out,
            r##"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="{FONT}" font-size="12">
<rect x="0" y="0" width="{W}" height="{H}" fill="#ffffff"/>
<text x="{}" y="24" text-anchor="middle" font-size="15" font-weight="bold" fill="#222222">{}</text>
"##,
            W / 2.0,
            esc(title)
        );
        Chart {
            out,
            area: [64.0, 44.0, W - 24.0, H - 56.0],
            x: [0.0, 1.0],
            y: [0.0, 1.0],
        }
    }

    pub(crate) fn px(&self, x: f64) -> f64 {
        let [l, _, r, _] = self.area;
        l + (x - self.x[0]) / (self.x[1] - self.x[0]) * (r - l)
    }

    pub(crate) fn py(&self, y: f64) -> f64 {
        let [_, t, _, b] = self.area;
        b - (y - self.y[0]) / (self.y[1] - self.y[0]) * (b - t)
    }

    pub(crate) fn text(&mut self, x: f64, y: f64, anchor: &str, extra: &str, s: &str) {
        let _ = writeln!(
            self.out,
            r##"<text x="{x:.1}" y="{y:.1}" text-anchor="{anchor}" fill="#333333" {extra}>{}</text>"##,
            esc(s)
        );
    }

    /// Axes, grid, ticks (`xt`, `yt` as (value, label)) and axis titles.
    pub(crate) fn axes(
        &mut self,
        xt: &[(f64, String)],
        yt: &[(f64, String)],
        xlabel: &str,
        ylabel: &str,
    ) {
        let [l, t, r, b] = self.area;
        for (v, label) in yt {
            let y = self.py(*v);
            let _ = writeln!(
                self.out,
                r##"<line x1="{l}" y1="{y:.1}" x2="{r}" y2="{y:.1}" stroke="#e5e5e5"/>"##
            );
            self.text(l - 6.0, y + 4.0, "end", "", label);
        }
        for (v, label) in xt {
            let x = self.px(*v);
            let _ = writeln!(
                self.out,
                r##"<line x1="{x:.1}" y1="{b}" x2="{x:.1}" y2="{}" stroke="#333333"/>"##,
                b + 4.0
            );
            self.text(x, b + 17.0, "middle", "", label);
        }
        let _ = writeln!(
            self.out,
            r##"<rect x="{l}" y="{t}" width="{}" height="{}" fill="none" stroke="#333333"/>"##,
            r - l,
            b - t
        );
        self.text((l + r) / 2.0, H - 14.0, "middle", "", xlabel);
        let (cx, cy) = (16.0, (t + b) / 2.0);
        self.text(
            cx,
            cy,
            "middle",
            &format!(r#"transform="rotate(-90 {cx} {cy})""#),
            ylabel,
        );
    }

    pub(crate) fn polyline(
        &mut self,
        pts: &[(f64, f64)],
        color: &str,
        width: f64,
        dash: Option<&str>,
    ) {
        let d: Vec<String> = pts
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", self.px(x), self.py(y)))
            .collect();
        let dash = dash
            .map(|d| format!(r#" stroke-dasharray="{d}""#))
            .unwrap_or_default();
        let _ = writeln!(
            self.out,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="{width}"{dash}/>"#,
            d.join(" ")
        );
    }

    pub(crate) fn dots(&mut self, pts: &[(f64, f64)], color: &str) {
        for &(x, y) in pts {
            let _ = writeln!(
                self.out,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{color}"/>"#,
                self.px(x),
                self.py(y)
            );
        }
    }

    pub(crate) fn rect(&mut self, x0: f64, x1: f64, y0: f64, y1: f64, color: &str, opacity: f64) {
        let (a, b) = (self.px(x0), self.px(x1));
        let (c, d) = (self.py(y1), self.py(y0));
        let _ = writeln!(
            self.out,
            r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{color}" fill-opacity="{opacity}"/>"#,
            a.min(b),
            c.min(d),
            (b - a).abs(),
            (d - c).abs()
        );
    }

    /// A legend box in the plot's top-left (or bottom-right) corner.
    pub(crate) fn legend(&mut self, items: &[(&str, String)], place: Place) {
        let [l, t, r, b] = self.area;
        let w = 12.0
            + 7.0
                * items
                    .iter()
                    .map(|(_, s)| s.chars().count())
                    .max()
                    .unwrap_or(0) as f64;
        let h = 8.0 + 18.0 * items.len() as f64;
        let (x, y) = match place {
            Place::TopLeft => (l + 8.0, t + 8.0),
            Place::BottomRight => (r - w - 8.0, b - h - 8.0),
            Place::Right => (r + 10.0, t),
        };
        let _ = writeln!(
            self.out,
            r##"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="#ffffff" fill-opacity="0.9" stroke="#cccccc"/>"##
        );
        for (i, (color, label)) in items.iter().enumerate() {
            let yy = y + 17.0 + 18.0 * i as f64;
            let _ = writeln!(
                self.out,
                r#"<rect x="{:.1}" y="{:.1}" width="12" height="10" fill="{color}"/>"#,
                x + 6.0,
                yy - 9.0
            );
            self.text(x + 24.0, yy, "start", "", label);
        }
    }

    pub(crate) fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

/// Where a legend goes: inside the plot area, or right of it (the area must leave room).
#[derive(Clone, Copy)]
pub(crate) enum Place {
    TopLeft,
    BottomRight,
    Right,
}

fn ticks01(step: f64) -> Vec<(f64, String)> {
    let k = (1.0 / step).round() as usize;
    (0..=k)
        .map(|i| (i as f64 * step, format!("{:.1}", i as f64 * step)))
        .collect()
}

fn pct_ticks(lo: f64, hi: f64) -> Vec<(f64, String)> {
    let span = hi - lo;
    let step = if span > 0.5 {
        0.2
    } else if span > 0.25 {
        0.1
    } else {
        0.05
    };
    let mut v = Vec::new();
    let mut t = (lo / step).ceil() * step;
    while t <= hi + 1e-9 {
        v.push((t, format!("{:.0}%", t * 100.0)));
        t += step;
    }
    v
}

/// Histogram of one score by outcome, as the share of each outcome's predictions per bin
/// (20 bins over [0, 1]; scores below 0 in one extra bar at the left).
pub fn distribution(obs: &[Observation], score: Score) -> String {
    const BINS: usize = 20;
    let mut c = Chart::new(&format!("{} by outcome", cap(score.name())));
    let has_neg = obs.iter().any(|o| score.of(o) < 0.0);
    let x0 = if has_neg { -0.15 } else { 0.0 };
    c.x = [x0, 1.0];
    let mut h = [[0usize; BINS + 1]; 2];
    let mut tot = [0usize; 2];
    for o in obs {
        let s = score.of(o);
        let cls = o.outcome.resolved() as usize;
        let slot = if s < 0.0 {
            BINS
        } else {
            ((s * BINS as f64) as usize).min(BINS - 1)
        };
        h[cls][slot] += 1;
        tot[cls] += 1;
    }
    let share = |cls: usize, slot: usize| h[cls][slot] as f64 / tot[cls].max(1) as f64;
    let ymax = (0..2)
        .flat_map(|cls| (0..=BINS).map(move |s| (cls, s)))
        .map(|(cls, s)| share(cls, s))
        .fold(0.05f64, f64::max);
    c.y = [0.0, (ymax * 1.3).min(1.0)];
    let mut xt = ticks01(0.2);
    if has_neg {
        xt.insert(0, (-0.1, "-1".into()));
    }
    let yt = pct_ticks(0.0, c.y[1]);
    c.axes(
        &xt,
        &yt,
        &if has_neg {
            format!("{} (bar at -1: malformed or empty patch)", score.name())
        } else {
            score.name().to_string()
        },
        "share of outcome",
    );
    let bw = 1.0 / BINS as f64;
    for slot in 0..=BINS {
        let (lo, hi) = if slot == BINS {
            (-0.1 - bw / 2.0, -0.1 + bw / 2.0)
        } else {
            (slot as f64 * bw, (slot + 1) as f64 * bw)
        };
        if slot == BINS && !has_neg {
            continue;
        }
        let mid = (lo + hi) / 2.0;
        c.rect(lo + bw * 0.05, mid, 0.0, share(0, slot), RED, 0.85);
        c.rect(mid, hi - bw * 0.05, 0.0, share(1, slot), GREEN, 0.85);
    }
    c.legend(
        &[
            (GREEN, format!("resolved (n={})", tot[1])),
            (RED, format!("not resolved (n={})", tot[0])),
        ],
        Place::TopLeft,
    );
    c.finish()
}

fn cap(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn auroc_label(name: &str, a: Option<f64>) -> String {
    a.map_or_else(
        || format!("{name}: AUROC n/a"),
        |a| format!("{name}: AUROC {a:.3}"),
    )
}

/// ROC curves of similarity and reward.
pub fn roc(s: &Summary) -> String {
    let mut c = Chart::new("ROC: does a higher score pick out resolved predictions?");
    c.axes(
        &ticks01(0.2),
        &ticks01(0.2),
        "false positive rate (unresolved above threshold)",
        "true positive rate",
    );
    c.polyline(&[(0.0, 0.0), (1.0, 1.0)], GREY, 1.0, Some("5,4"));
    for (st, color, dash) in [
        (&s.similarity, BLUE, None),
        (&s.reward, PURPLE, Some("7,4")),
    ] {
        let mut pts = vec![(0.0, 0.0)];
        pts.extend(st.roc.iter().map(|p| (p.fpr, p.tpr)));
        c.polyline(&pts, color, 2.2, dash);
    }
    c.legend(
        &[
            (BLUE, auroc_label("similarity", s.similarity.overall.auroc)),
            (PURPLE, auroc_label("reward", s.reward.overall.auroc)),
            (GREY, "chance (0.5)".to_string()),
        ],
        Place::BottomRight,
    );
    c.finish()
}

/// Resolve rate per score decile, both scores (bin centre on x; scores below 0 at -0.1).
pub fn calibration(s: &Summary) -> String {
    let mut c = Chart::new("Calibration: resolve rate per score decile");
    let has_neg = [&s.similarity, &s.reward]
        .iter()
        .any(|st| st.overall.calibration.iter().any(|b| b.hi <= 0.0));
    c.x = [if has_neg { -0.15 } else { 0.0 }, 1.0];
    let mut xt = ticks01(0.2);
    if has_neg {
        xt.insert(0, (-0.1, "-1".into()));
    }
    c.axes(
        &xt,
        &pct_ticks(0.0, 1.0),
        "score decile (point at the bin's mean score)",
        "resolve rate",
    );
    c.polyline(&[(0.0, 0.0), (1.0, 1.0)], GREY, 1.0, Some("5,4"));
    for (st, color) in [(&s.similarity, BLUE), (&s.reward, PURPLE)] {
        let pts: Vec<(f64, f64)> = st
            .overall
            .calibration
            .iter()
            .map(|b| {
                (
                    if b.hi <= 0.0 { -0.1 } else { b.mean_score },
                    b.resolve_rate,
                )
            })
            .collect();
        c.polyline(&pts, color, 2.0, (color == PURPLE).then_some("7,4"));
        c.dots(&pts, color);
    }
    c.legend(
        &[
            (BLUE, "similarity".to_string()),
            (PURPLE, "reward".to_string()),
            (GREY, "score = rate".to_string()),
        ],
        Place::TopLeft,
    );
    c.finish()
}

/// Best of n: resolve rate against n for each way of picking a sample.
pub fn best_of_n(s: &Summary) -> String {
    let mut c = Chart::new("Best of n: resolve rate when picking one of n samples");
    let (r, sim) = (&s.reward.best_of_n, &s.similarity.best_of_n);
    let max_n = r.len().max(1);
    c.x = [0.7, max_n as f64 + 0.3];
    // Room on the right for the legend: the lines fill the whole area.
    c.area[2] = W - 190.0;
    let series: Vec<(&str, &str, Vec<f64>)> = vec![
        (
            "oracle (pass@n)",
            GREEN,
            r.iter().map(|b| b.oracle).collect(),
        ),
        (
            "highest reward",
            PURPLE,
            r.iter().map(|b| b.max_score).collect(),
        ),
        (
            "highest similarity",
            BLUE,
            sim.iter().map(|b| b.max_score).collect(),
        ),
        ("random sample", GREY, r.iter().map(|b| b.random).collect()),
        ("first sample", RED, r.iter().map(|b| b.first).collect()),
    ];
    let all: Vec<f64> = series
        .iter()
        .flat_map(|(_, _, v)| v.iter().copied())
        .collect();
    let lo = all.iter().copied().fold(1.0f64, f64::min);
    let hi = all.iter().copied().fold(0.0f64, f64::max);
    let (lo, hi) = if all.is_empty() {
        (0.0, 1.0)
    } else {
        (
            ((lo - 0.05) * 20.0).floor() / 20.0,
            ((hi + 0.05) * 20.0).ceil() / 20.0,
        )
    };
    c.y = [lo.max(0.0), hi.min(1.0).max(lo.max(0.0) + 0.1)];
    let xt: Vec<(f64, String)> = (1..=max_n).map(|n| (n as f64, n.to_string())).collect();
    let yt = pct_ticks(c.y[0], c.y[1]);
    c.axes(
        &xt,
        &yt,
        "n (first n samples of each instance)",
        "resolve rate",
    );
    if max_n < 2 {
        let (x, y) = ((c.area[0] + c.area[2]) / 2.0, (c.area[1] + c.area[3]) / 2.0);
        c.text(
            x,
            y,
            "middle",
            "",
            "one sample per instance: best of n needs several",
        );
    }
    for (i, (_, color, v)) in series.iter().enumerate() {
        let pts: Vec<(f64, f64)> = v
            .iter()
            .enumerate()
            .map(|(k, &y)| ((k + 1) as f64, y))
            .collect();
        let dash = (i == 2).then_some("6,3");
        c.polyline(&pts, color, 2.0, dash);
        c.dots(&pts, color);
    }
    let legend: Vec<(&str, String)> = series
        .iter()
        .map(|(l, col, _)| (*col, l.to_string()))
        .collect();
    c.legend(&legend, Place::Right);
    c.finish()
}

/// Turns SVG into PNG with the system's fonts, loaded once.
pub struct Rasterizer {
    options: resvg::usvg::Options<'static>,
}

/// An SVG that could not be rasterized, or whose text could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum RasterError {
    /// The SVG could not be parsed.
    #[error("invalid SVG: {0}")]
    Svg(#[from] resvg::usvg::Error),
    /// The image of this width and height could not be allocated.
    #[error("cannot allocate a {0}x{1} image")]
    Size(u32, u32),
    /// The PNG could not be encoded.
    #[error("cannot encode PNG: {0}")]
    Png(String),
    /// This many text elements were drawn without glyphs (no usable font).
    #[error(
        "{0} text element(s) drawn without glyphs: no usable font (install fonts-dejavu-core)"
    )]
    MissingText(usize),
}

impl Default for Rasterizer {
    fn default() -> Self {
        Self::new()
    }
}

impl Rasterizer {
    /// A rasterizer with the system's fonts loaded.
    pub fn new() -> Rasterizer {
        let mut options = resvg::usvg::Options::default();
        let db = options.fontdb_mut();
        db.load_system_fonts();
        // Generic families resolve to what the machine has; DejaVu Sans when present.
        db.set_sans_serif_family("DejaVu Sans");
        options.font_family = "DejaVu Sans".to_string();
        Rasterizer { options }
    }

    /// Rasterizes at `scale` (2.0 gives a sharp image on high-density screens).
    pub fn png(&self, svg: &str, scale: f32) -> Result<Vec<u8>, RasterError> {
        let tree = resvg::usvg::Tree::from_str(svg, &self.options)?;
        let missing = missing_text(tree.root(), 0);
        let expected = svg.matches("<text").count();
        let drawn = count_text(tree.root());
        if missing > 0 || drawn < expected {
            return Err(RasterError::MissingText(
                missing + expected.saturating_sub(drawn),
            ));
        }
        let size = tree.size();
        let (w, h) = (
            (size.width() * scale).ceil() as u32,
            (size.height() * scale).ceil() as u32,
        );
        let mut pixmap = resvg::tiny_skia::Pixmap::new(w, h).ok_or(RasterError::Size(w, h))?;
        resvg::render(
            &tree,
            resvg::tiny_skia::Transform::from_scale(scale, scale),
            &mut pixmap.as_mut(),
        );
        pixmap
            .encode_png()
            .map_err(|e| RasterError::Png(e.to_string()))
    }
}

/// Text nodes that were laid out with at least one glyph.
fn count_text(g: &resvg::usvg::Group) -> usize {
    g.children()
        .iter()
        .map(|n| match n {
            resvg::usvg::Node::Group(g) => count_text(g),
            resvg::usvg::Node::Text(t) => {
                t.layouted().iter().any(|s| !s.positioned_glyphs.is_empty()) as usize
            }
            _ => 0,
        })
        .sum()
}

/// Visible characters drawn as the missing-glyph box (glyph 0).
fn missing_text(g: &resvg::usvg::Group, acc: usize) -> usize {
    g.children().iter().fold(acc, |acc, n| match n {
        resvg::usvg::Node::Group(g) => missing_text(g, acc),
        resvg::usvg::Node::Text(t) => {
            acc + t
                .layouted()
                .iter()
                .flat_map(|s| &s.positioned_glyphs)
                .filter(|g| g.id.0 == 0 && !g.text.trim().is_empty())
                .count()
        }
        _ => acc,
    })
}
