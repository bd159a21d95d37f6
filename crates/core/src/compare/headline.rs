//! The sentences a comparison's report leads with: each pair's difference and how sure it is,
//! each group's spread, and the overall headline.

use super::summary::{PairStats, RepeatStats, RunStats};

/// A p-value for prose: three significant digits, or "< 0.001".
pub fn p_text(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else {
        format!("p = {}", trim_sig(p))
    }
}

fn trim_sig(p: f64) -> String {
    if p >= 0.995 {
        return "1".into();
    }
    let digits = (2 - p.log10().floor() as i32).max(0) as usize;
    format!("{p:.digits$}")
}

pub(super) fn pair_headline(p: &PairStats, any_repeats: bool) -> String {
    let o = &p.overall;
    let mut s = if (o.difference * 100.0).abs() < 0.05 {
        format!(
            "{} resolves as many instances as {} ({:.1}% each",
            p.b,
            p.a,
            o.rate_a * 100.0
        )
    } else {
        format!(
            "{} resolves {} than {} ({:.1}% vs {:.1}%",
            p.b,
            points(o.difference),
            p.a,
            o.rate_b * 100.0,
            o.rate_a * 100.0
        )
    };
    if p.n_only_a + p.n_only_b == 0 {
        let _ = std::fmt::Write::write_fmt(&mut s, format_args!(", n = {})", o.n));
    } else {
        // The truth in the headline: the pair covers fewer instances than the runs hold.
        let mut left = Vec::new();
        if p.n_only_a > 0 {
            left.push(format!("{} of {}'s {}", p.n_only_a, p.a, p.n_only_a + o.n));
        }
        if p.n_only_b > 0 {
            left.push(format!("{} of {}'s {}", p.n_only_b, p.b, p.n_only_b + o.n));
        }
        let _ = std::fmt::Write::write_fmt(
            &mut s,
            format_args!(
                ", paired n = {}; left out: {} instances)",
                o.n,
                left.join(" and ")
            ),
        );
    }
    if let Some([lo, hi]) = o.ci95 {
        s.push_str(&format!(", 95% CI {:.1} to {:.1}", lo * 100.0, hi * 100.0));
    }
    if let Some(pv) = o.mcnemar_p {
        s.push_str(&format!(", McNemar {}", p_text(pv)));
    }
    let (up, down) = (o.n_to_resolved, o.n_to_unresolved);
    if p.single_sample {
        s.push_str(&format!(
            "; {up} instance{} flipped to resolved, {down} to unresolved.",
            if up == 1 { "" } else { "s" }
        ));
    } else {
        s.push_str(&format!(
            "; {up} instance{} resolved more often, {down} less often.",
            if up == 1 { "" } else { "s" }
        ));
    }
    if any_repeats && up + down > 0 {
        let u = p.n_to_resolved_unstable + p.n_to_unresolved_unstable;
        let share = if u == up + down {
            format!("All {u} are")
        } else {
            format!("{u} of these {} are", up + down)
        };
        s.push_str(&format!(
            " {share} unstable across repeated runs of one system; they account for \
             {:+.1} of the {:+.1} points (the stable instances alone: {:+.1}).",
            p.difference_unstable * 100.0,
            o.difference * 100.0,
            p.difference_stable * 100.0
        ));
    }
    s
}

fn repeat_sentence(g: &RepeatStats) -> String {
    format!(
        "The {} repeated runs of {} resolve {:.1}% to {:.1}% (mean {:.1}%, sd {:.2} points, range \
         {:.1}); of {} instances {} are always resolved, {} never, {} unstable.",
        g.runs.len(),
        g.name,
        g.min * 100.0,
        g.max * 100.0,
        g.mean * 100.0,
        g.sd.unwrap_or(0.0) * 100.0,
        g.range * 100.0,
        g.n_instances,
        g.n_always,
        g.n_never,
        g.n_unstable
    )
}

pub(super) fn overall_headline(
    runs: &[RunStats],
    repeats: &[RepeatStats],
    pairs: &[PairStats],
    pairs_chosen: bool,
) -> String {
    let mut parts = Vec::new();
    if pairs.len() == 1 || pairs_chosen {
        parts.extend(pairs.iter().map(|p| p.headline.clone()));
    } else {
        let rate = |r: &RunStats| r.resolve_rate.unwrap_or(0.0);
        if let (Some(lo), Some(hi)) = (
            runs.iter().min_by(|x, y| rate(x).total_cmp(&rate(y))),
            runs.iter().max_by(|x, y| rate(x).total_cmp(&rate(y))),
        ) {
            parts.push(format!(
                "Across {} runs the resolve rate ranges from {:.1}% ({}) to {:.1}% ({}).",
                runs.len(),
                rate(lo) * 100.0,
                lo.name,
                rate(hi) * 100.0,
                hi.name
            ));
        }
        let significant = pairs
            .iter()
            .filter(|p| p.overall.mcnemar_p.is_some_and(|x| x < 0.05))
            .count();
        if let Some(big) = pairs.iter().max_by(|x, y| {
            x.overall
                .difference
                .abs()
                .total_cmp(&y.overall.difference.abs())
        }) {
            let sig = match significant {
                0 => "none".to_string(),
                n => format!("{n}"),
            };
            parts.push(format!(
                "Largest of {} pairwise differences ({sig} at McNemar p < 0.05, uncorrected): {}",
                pairs.len(),
                big.headline
            ));
        }
    }
    parts.extend(repeats.iter().map(repeat_sentence));
    parts.join(" ")
}

/// Points with one decimal and a sign word: "4.2 points more".
fn points(d: f64) -> String {
    let p = (d * 100.0).abs();
    if p < 0.05 {
        "as many".into()
    } else {
        format!(
            "{p:.1} point{} {}",
            if (p - 1.0).abs() < 0.05 { "" } else { "s" },
            if d > 0.0 { "more" } else { "fewer" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p_values_read_well() {
        assert_eq!(p_text(0.7265625), "p = 0.727");
        assert_eq!(p_text(0.0081), "p = 0.00810");
        assert_eq!(p_text(0.0004), "p < 0.001");
        assert_eq!(p_text(1.0), "p = 1");
        assert_eq!(p_text(0.05), "p = 0.0500");
    }
}
