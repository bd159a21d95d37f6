//! The statistics of a score (similarity or reward) against a binary outcome (resolved or not):
//! AUROC with a bootstrap interval, correlations, precision and recall, calibration, the ROC
//! curve. Pure functions over slices; each one is checked against SciPy or scikit-learn on the
//! fixtures in `tests/fixtures/correlate/` (made by `scripts/stats_fixtures.py`).
//!
//! Scores must be finite (the input loaders reject the rest). A statistic that is undefined on
//! its input (one class only, zero variance) is `None`, never NaN.

use std::cmp::Ordering;

use rayon::prelude::*;

/// Sorts `0..n` by `x` (ties keep index order, so results are deterministic).
fn order_by(x: &[f64]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..x.len()).collect();
    idx.sort_by(|&a, &b| x[a].total_cmp(&x[b]));
    idx
}

/// Ranks 1..=n, ties sharing their average rank (SciPy's `rankdata(method="average")`).
pub fn average_ranks(x: &[f64]) -> Vec<f64> {
    let idx = order_by(x);
    let mut ranks = vec![0.0; x.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i + 1;
        while j < idx.len() && x[idx[j]] == x[idx[i]] {
            j += 1;
        }
        // Positions i..j (0-based) hold ranks i+1..=j; their mean is (i + 1 + j) / 2.
        let r = (i + 1 + j) as f64 / 2.0;
        for &k in &idx[i..j] {
            ranks[k] = r;
        }
        i = j;
    }
    ranks
}

/// Tie-group id of each value: 0 for the smallest distinct value, 1 for the next, ...
/// Returns the ids and the number of groups.
fn tie_groups(x: &[f64]) -> (Vec<u32>, usize) {
    let idx = order_by(x);
    let mut gid = vec![0u32; x.len()];
    let mut g = 0u32;
    for w in 0..idx.len() {
        if w > 0 && x[idx[w]] != x[idx[w - 1]] {
            g += 1;
        }
        gid[idx[w]] = g;
    }
    let groups = if x.is_empty() { 0 } else { g as usize + 1 };
    (gid, groups)
}

/// Area under the ROC curve: the probability that a resolved prediction scores above an
/// unresolved one, ties counting one half (the Mann-Whitney U statistic over n_pos * n_neg).
pub fn auroc(scores: &[f64], resolved: &[bool]) -> Option<f64> {
    auc_from_group_counts(&outcome_counts(scores, resolved))
}

/// Per tie group of `scores` (ascending), the unresolved and resolved counts, laid out as
/// `[neg_0, pos_0, neg_1, pos_1, ...]`.
fn outcome_counts(scores: &[f64], resolved: &[bool]) -> Vec<u64> {
    let (gid, groups) = tie_groups(scores);
    let mut counts = vec![0u64; 2 * groups];
    for (g, &r) in gid.iter().zip(resolved) {
        counts[2 * *g as usize + r as usize] += 1;
    }
    counts
}

/// The share of (resolved, unresolved) pairs whose two scores are equal: the pairs the AUROC
/// counts one half because the score cannot order them. `None` without a pair (one outcome
/// only). 1.0 means the score ranks nothing (every prediction of both outcomes scores alike).
pub fn tied_pairs(scores: &[f64], resolved: &[bool]) -> Option<f64> {
    let counts = outcome_counts(scores, resolved);
    let (mut tied, mut pos, mut neg) = (0u128, 0u64, 0u64);
    for pair in counts.chunks_exact(2) {
        tied += pair[0] as u128 * pair[1] as u128;
        neg += pair[0];
        pos += pair[1];
    }
    (pos > 0 && neg > 0).then(|| tied as f64 / (pos as f64 * neg as f64))
}

/// AUROC from per-tie-group counts laid out as `[neg_0, pos_0, neg_1, pos_1, ...]`, groups in
/// ascending score order. O(groups).
fn auc_from_group_counts<T: Copy + Into<u64>>(counts: &[T]) -> Option<f64> {
    let mut neg_below = 0u64;
    // Twice the U statistic, kept integral to avoid rounding until the end.
    let mut twice_u = 0u128;
    let mut pos_total = 0u64;
    for pair in counts.chunks_exact(2) {
        let (neg, pos) = (pair[0].into(), pair[1].into());
        twice_u += pos as u128 * (2 * neg_below + neg) as u128;
        neg_below += neg;
        pos_total += pos;
    }
    if pos_total == 0 || neg_below == 0 {
        return None;
    }
    Some(twice_u as f64 / 2.0 / (pos_total as f64 * neg_below as f64))
}

/// Pearson's r; `None` when either side has no variance.
pub fn pearson(a: &[f64], b: &[f64]) -> Option<f64> {
    let n = a.len();
    if n < 2 || b.len() != n {
        return None;
    }
    let ma = a.iter().sum::<f64>() / n as f64;
    let mb = b.iter().sum::<f64>() / n as f64;
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (x, y) in a.iter().zip(b) {
        let (dx, dy) = (x - ma, y - mb);
        sab += dx * dy;
        saa += dx * dx;
        sbb += dy * dy;
    }
    if saa == 0.0 || sbb == 0.0 {
        return None;
    }
    Some((sab / (saa.sqrt() * sbb.sqrt())).clamp(-1.0, 1.0))
}

fn as_f64(resolved: &[bool]) -> Vec<f64> {
    resolved
        .iter()
        .map(|&r| if r { 1.0 } else { 0.0 })
        .collect()
}

/// Point-biserial correlation: Pearson's r between the score and the 0/1 outcome.
pub fn point_biserial(scores: &[f64], resolved: &[bool]) -> Option<f64> {
    pearson(scores, &as_f64(resolved))
}

/// Spearman's rho: Pearson's r between average ranks.
pub fn spearman(scores: &[f64], resolved: &[bool]) -> Option<f64> {
    // The outcome has two values: its average ranks need no sort.
    let n0 = resolved.iter().filter(|&&r| !r).count() as f64;
    let n1 = resolved.len() as f64 - n0;
    let (r0, r1) = ((n0 + 1.0) / 2.0, n0 + (n1 + 1.0) / 2.0);
    let ry: Vec<f64> = resolved.iter().map(|&r| if r { r1 } else { r0 }).collect();
    pearson(&average_ranks(scores), &ry)
}

/// Kendall's tau-b in O(n log n) (Knight's algorithm: sort by x then y, count the swaps a
/// merge sort by y needs, correct for ties in x, in y and in both).
pub fn kendall_tau_b(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len();
    if n < 2 || y.len() != n {
        return None;
    }
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_by(|&a, &b| x[a].total_cmp(&x[b]).then(y[a].total_cmp(&y[b])));
    let pairs = |t: u64| t * t.saturating_sub(1) / 2;
    let n0 = pairs(n as u64);
    let (mut n1, mut n3) = (0u64, 0u64);
    let (mut tx, mut txy) = (1u64, 1u64);
    for w in 1..=n {
        let same_x = w < n && x[idx[w]] == x[idx[w - 1]];
        let same_xy = same_x && y[idx[w]] == y[idx[w - 1]];
        if same_x {
            tx += 1;
        } else {
            n1 += pairs(tx);
            tx = 1;
        }
        if same_xy {
            txy += 1;
        } else {
            n3 += pairs(txy);
            txy = 1;
        }
    }
    let mut ys: Vec<f64> = idx.iter().map(|&i| y[i]).collect();
    let swaps = merge_sort_count(&mut ys);
    let mut n2 = 0u64;
    let mut ty = 1u64;
    for w in 1..=n {
        if w < n && ys[w] == ys[w - 1] {
            ty += 1;
        } else {
            n2 += pairs(ty);
            ty = 1;
        }
    }
    let denom = ((n0 - n1) as f64) * ((n0 - n2) as f64);
    if denom <= 0.0 {
        return None;
    }
    let num = n0 as i128 - n1 as i128 - n2 as i128 + n3 as i128 - 2 * swaps as i128;
    Some((num as f64 / denom.sqrt()).clamp(-1.0, 1.0))
}

/// Sorts `v` ascending (stable) and returns the number of pairs i < j with v[i] > v[j].
fn merge_sort_count(v: &mut [f64]) -> u64 {
    let n = v.len();
    let mut buf = v.to_vec();
    let mut swaps = 0u64;
    let mut width = 1;
    // Bottom-up, alternating between `v` and `buf` would save copies; n log n copies is cheap.
    while width < n {
        let mut lo = 0;
        while lo < n {
            let mid = (lo + width).min(n);
            let hi = (lo + 2 * width).min(n);
            let (mut i, mut j, mut k) = (lo, mid, lo);
            while i < mid && j < hi {
                if v[j] < v[i] {
                    buf[k] = v[j];
                    swaps += (mid - i) as u64;
                    j += 1;
                } else {
                    buf[k] = v[i];
                    i += 1;
                }
                k += 1;
            }
            buf[k..k + (mid - i)].copy_from_slice(&v[i..mid]);
            k += mid - i;
            buf[k..k + (hi - j)].copy_from_slice(&v[j..hi]);
            lo = hi;
        }
        v.copy_from_slice(&buf);
        width *= 2;
    }
    swaps
}

/// The mean, `None` for no values.
pub fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Median (mean of the two middle values for an even count, as NumPy).
pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    Some(if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    })
}

/// Linear-interpolated percentile of sorted values (NumPy's default method), `q` in [0, 1].
pub fn percentile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64))
}

/// Precision and recall when "score >= threshold" is read as "predicted resolved".
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PrecisionRecall {
    /// The score at or above which a prediction counts as selected.
    pub threshold: f64,
    /// How many predictions reach the threshold.
    pub n_selected: usize,
    /// Of those, the share resolved; `None` when none reach it.
    pub precision: Option<f64>,
    /// Of the resolved ones, the share reaching the threshold; `None` when none are resolved.
    pub recall: Option<f64>,
}

/// Precision and recall of "score >= threshold" for predicting resolved.
pub fn precision_recall(scores: &[f64], resolved: &[bool], threshold: f64) -> PrecisionRecall {
    let (mut tp, mut sel, mut pos) = (0usize, 0usize, 0usize);
    for (&s, &r) in scores.iter().zip(resolved) {
        let hit = s >= threshold;
        sel += hit as usize;
        pos += r as usize;
        tp += (hit && r) as usize;
    }
    PrecisionRecall {
        threshold,
        n_selected: sel,
        precision: (sel > 0).then(|| tp as f64 / sel as f64),
        recall: (pos > 0).then(|| tp as f64 / pos as f64),
    }
}

/// One bin of the calibration table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CalibrationBin {
    /// Human label, e.g. `(0.1, 0.2]`, or `< 0` for scores below the range (format errors).
    pub label: String,
    /// Lower edge of the bin.
    pub lo: f64,
    /// Upper edge of the bin.
    pub hi: f64,
    /// Predictions in the bin.
    pub n: usize,
    /// Of them resolved.
    pub n_resolved: usize,
    /// `n_resolved / n`.
    pub resolve_rate: f64,
    /// Mean score in the bin.
    pub mean_score: f64,
}

/// Resolve rate per score decile: ten equal-width bins over [0, 1] placed as scikit-learn's
/// `calibration_curve(strategy="uniform")` places them (edges `i * 0.1`; a value on an inner
/// edge belongs to the bin below, so the first bin is `[0, 0.1]` and the others `(lo, hi]`).
/// Scores below 0 (the reward of a malformed patch, -1) get a bin of their own in front, and
/// scores above 1 one at the end; empty bins are left out.
pub fn calibration(scores: &[f64], resolved: &[bool]) -> Vec<CalibrationBin> {
    const BINS: usize = 10;
    let step = 1.0 / BINS as f64;
    // [below, 0..10, above]
    let mut n = [0usize; BINS + 2];
    let mut hits = [0usize; BINS + 2];
    let mut sum = [0.0f64; BINS + 2];
    for (&s, &r) in scores.iter().zip(resolved) {
        let slot = if s < 0.0 {
            0
        } else if s > 1.0 {
            BINS + 1
        } else {
            // Number of inner edges strictly below s (NumPy's searchsorted, side="left").
            1 + (1..BINS).filter(|&i| (i as f64 * step) < s).count()
        };
        n[slot] += 1;
        hits[slot] += r as usize;
        sum[slot] += s;
    }
    let mut out = Vec::new();
    for slot in 0..BINS + 2 {
        if n[slot] == 0 {
            continue;
        }
        let (lo, hi, label) = match slot {
            0 => (f64::NEG_INFINITY, 0.0, "< 0".to_string()),
            s if s == BINS + 1 => (1.0, f64::INFINITY, "> 1".to_string()),
            s => {
                let (lo, hi) = ((s - 1) as f64 * step, s as f64 * step);
                let open = if s == 1 { '[' } else { '(' };
                (lo, hi, format!("{open}{lo:.1}, {hi:.1}]"))
            }
        };
        out.push(CalibrationBin {
            label,
            lo,
            hi,
            n: n[slot],
            n_resolved: hits[slot],
            resolve_rate: hits[slot] as f64 / n[slot] as f64,
            mean_score: sum[slot] / n[slot] as f64,
        });
    }
    out
}

/// A point of the ROC curve: predicting "resolved" for scores >= `threshold`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct RocPoint {
    /// Scores at or above it count as predicted resolved.
    pub threshold: f64,
    /// False positive rate at the threshold.
    pub fpr: f64,
    /// True positive rate at the threshold.
    pub tpr: f64,
}

/// The ROC curve at every distinct score, highest first (scikit-learn's `roc_curve` with
/// `drop_intermediate=False`, without its leading point at an infinite threshold).
pub fn roc_curve(scores: &[f64], resolved: &[bool]) -> Vec<RocPoint> {
    let pos = resolved.iter().filter(|&&r| r).count() as f64;
    let neg = resolved.len() as f64 - pos;
    if pos == 0.0 || neg == 0.0 {
        return Vec::new();
    }
    let mut idx = order_by(scores);
    idx.reverse();
    let (mut tp, mut fp) = (0.0, 0.0);
    let mut out = Vec::new();
    for w in 0..idx.len() {
        if resolved[idx[w]] {
            tp += 1.0;
        } else {
            fp += 1.0;
        }
        if w + 1 == idx.len() || scores[idx[w + 1]] != scores[idx[w]] {
            out.push(RocPoint {
                threshold: scores[idx[w]],
                fpr: fp / neg,
                tpr: tp / pos,
            });
        }
    }
    out
}

/// A small, fast, seedable generator (SplitMix64): each bootstrap resample gets its own stream,
/// so the interval does not depend on the number of threads. Also used by `compare`.
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next number of the stream.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in 0..n (Lemire's multiply-shift; the bias is below 2^-32 for any n here).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }
}

/// Mixes a seed and a stream number into a stream seed.
pub fn stream_seed(seed: u64, stream: u64) -> u64 {
    let mut s = SplitMix(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03));
    s.next_u64()
}

/// Percentile bootstrap 95% intervals of the AUROC of several scores over the same outcomes,
/// all from the same resamples (so the intervals of similarity and reward are comparable).
/// One group, one stratum: plain resampling of all n predictions with replacement.
pub fn bootstrap_auroc_ci(
    scores: &[&[f64]],
    resolved: &[bool],
    resamples: usize,
    seed: u64,
) -> Vec<Option<[f64; 2]>> {
    let zeros = vec![0u32; resolved.len()];
    let series: Vec<Series<'_>> = scores
        .iter()
        .map(|s| Series {
            scores: s,
            groups: &zeros,
            n_groups: 1,
        })
        .collect();
    bootstrap_auroc_ci_grouped(&series, resolved, &zeros, resamples, seed)
        .into_iter()
        .map(|mut v| v.pop().flatten())
        .collect()
}

/// A score split into groups (group ids `0..n_groups`, e.g. repositories), for
/// [`bootstrap_auroc_ci_grouped`].
#[derive(Debug, Clone, Copy)]
pub struct Series<'a> {
    /// The scores.
    pub scores: &'a [f64],
    /// Each score's group id.
    pub groups: &'a [u32],
    /// How many groups there are.
    pub n_groups: usize,
}

/// The order in which a resample's AUROCs are summed: the count slots of the points sorted by
/// (group, score, resolved), and the tie runs over them. Within a run the unresolved come
/// first, so a run's negatives and positives are two plain sums of counts, with no per-point
/// test in the hot loop.
struct Plan {
    slots: Vec<u32>,
    /// Per tie run: (end of its unresolved part, end of the run), as indices into `slots`.
    runs: Vec<(u32, u32)>,
    /// (first run, group id) of each non-empty group, in run order.
    segments: Vec<(usize, u32)>,
    n_groups: usize,
}

impl Plan {
    /// `slot_of[i]`: where point i is counted.
    fn new(s: &Series<'_>, resolved: &[bool], slot_of: &[u32]) -> Plan {
        let mut order: Vec<u32> = (0..s.scores.len() as u32).collect();
        order.sort_by(|&a, &b| {
            let (a, b) = (a as usize, b as usize);
            s.groups[a]
                .cmp(&s.groups[b])
                .then(s.scores[a].total_cmp(&s.scores[b]))
                .then(resolved[a].cmp(&resolved[b]))
        });
        let (mut runs, mut segments) = (Vec::new(), Vec::new());
        let mut split = None;
        for (k, &i) in order.iter().enumerate() {
            let i = i as usize;
            if k > 0 {
                let p = order[k - 1] as usize;
                let new_group = s.groups[p] != s.groups[i];
                if new_group || s.scores[p] != s.scores[i] {
                    runs.push((split.unwrap_or(k) as u32, k as u32));
                    split = None;
                }
                if new_group {
                    segments.push((runs.len(), s.groups[i]));
                }
            } else {
                segments.push((0, s.groups[i]));
            }
            if resolved[i] && split.is_none() {
                split = Some(k);
            }
        }
        if !order.is_empty() {
            runs.push((split.unwrap_or(order.len()) as u32, order.len() as u32));
        }
        let slots = order.iter().map(|&i| slot_of[i as usize]).collect();
        Plan {
            slots,
            runs,
            segments,
            n_groups: s.n_groups,
        }
    }

    /// Appends the AUROC of each group for the multiplicities `counts` (NaN where a group
    /// lacks a class). One pass over the points: O(n).
    fn aurocs(&self, counts: &[u16], out: &mut Vec<f64>) {
        let base = out.len();
        out.resize(base + self.n_groups, f64::NAN);
        let sum = |a: u32, b: u32| -> u64 {
            self.slots[a as usize..b as usize]
                .iter()
                .map(|&s| counts[s as usize] as u64)
                .sum()
        };
        for (k, &(first, g)) in self.segments.iter().enumerate() {
            let last = self.segments.get(k + 1).map_or(self.runs.len(), |s| s.0);
            let mut acc = GroupAcc::default();
            let mut start = if first == 0 {
                0
            } else {
                self.runs[first - 1].1
            };
            for &(split, end) in &self.runs[first..last] {
                acc.run = [sum(start, split), sum(split, end)];
                acc.close_run();
                start = end;
            }
            out[base + g as usize] = acc.auroc();
        }
    }
}

/// Running sums of one group's AUROC: the current tie run's [negatives, positives], negatives
/// below it, positives so far, and twice the U statistic.
#[derive(Default)]
struct GroupAcc {
    run: [u64; 2],
    neg_below: u64,
    pos: u64,
    twice_u: u64,
}

impl GroupAcc {
    fn close_run(&mut self) {
        let [neg, pos] = self.run;
        self.twice_u += pos * (2 * self.neg_below + neg);
        self.neg_below += neg;
        self.pos += pos;
        self.run = [0, 0];
    }

    fn auroc(&self) -> f64 {
        if self.pos == 0 || self.neg_below == 0 {
            return f64::NAN;
        }
        self.twice_u as f64 / 2.0 / (self.pos as f64 * self.neg_below as f64)
    }
}

/// Percentile bootstrap 95% intervals of the AUROC of each group of each series, all from the
/// same resamples.
///
/// Resampling is stratified: each stratum (e.g. a repository and difficulty cell) is redrawn
/// with replacement to its own size, so that every group made of whole strata keeps its size
/// and its intervals are those of a bootstrap within the group. With one stratum this is the
/// plain bootstrap. A resample in which a group lacks a class is dropped for that group (as one
/// does with scikit-learn). Per resample, the draws only count how often each prediction was
/// picked; each series' AUROCs then take one pass in presorted order, so no resample sorts
/// anything: O(n) per resample. Resamples run in parallel; resample b uses the stream
/// `stream_seed(seed, b)`, so the result does not depend on the number of threads.
pub fn bootstrap_auroc_ci_grouped(
    series: &[Series<'_>],
    resolved: &[bool],
    strata: &[u32],
    resamples: usize,
    seed: u64,
) -> Vec<Vec<Option<[f64; 2]>>> {
    let n = resolved.len();
    let empty = || series.iter().map(|s| vec![None; s.n_groups]).collect();
    // Entries pack a position in 30 bits.
    if n < 2 || resamples == 0 || n >= 1 << 30 {
        return empty();
    }
    // Members of each stratum, contiguous; a point is counted at its position there, so the
    // draws of one stratum touch one stretch of memory. Within a stratum, members follow the
    // first series' score, so that the passes in score order read the counts nearly in order.
    let mut members: Vec<u32> = (0..n as u32).collect();
    let first = series.first().map(|s| s.scores);
    members.sort_by(|&a, &b| {
        let (a, b) = (a as usize, b as usize);
        strata[a]
            .cmp(&strata[b])
            .then_with(|| first.map_or(Ordering::Equal, |s| s[a].total_cmp(&s[b])))
    });
    let mut slot_of = vec![0u32; n];
    let mut cells: Vec<(usize, usize)> = Vec::new();
    for (k, &i) in members.iter().enumerate() {
        slot_of[i as usize] = k as u32;
        if k == 0 || strata[members[k - 1] as usize] != strata[i as usize] {
            cells.push((k, 0));
        }
        if let Some(c) = cells.last_mut() {
            c.1 += 1;
        }
    }
    let plans: Vec<Plan> = series
        .iter()
        .map(|s| Plan::new(s, resolved, &slot_of))
        .collect();
    let width: usize = series.iter().map(|s| s.n_groups).sum();
    let per_resample: Vec<Vec<f64>> = (0..resamples)
        .into_par_iter()
        .map_init(
            || vec![0u16; n],
            |counts, b| {
                counts.fill(0);
                let mut rng = SplitMix(stream_seed(seed, b as u64));
                for &(start, len) in &cells {
                    let cell = &mut counts[start..start + len];
                    for _ in 0..len {
                        {
                            let c = &mut cell[rng.below(len)];
                            // A point drawn 65,535 times in one resample is beyond any real
                            // odds; saturating keeps even that from wrapping.
                            *c = c.saturating_add(1);
                        }
                    }
                }
                let mut out = Vec::with_capacity(width);
                for p in &plans {
                    p.aurocs(counts, &mut out);
                }
                out
            },
        )
        .collect();
    let mut col = 0;
    series
        .iter()
        .map(|s| {
            (0..s.n_groups)
                .map(|_| {
                    let mut v: Vec<f64> = per_resample
                        .iter()
                        .map(|r| r[col])
                        .filter(|x| !x.is_nan())
                        .collect();
                    col += 1;
                    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(Ordering::Equal));
                    Some([percentile_sorted(&v, 0.025)?, percentile_sorted(&v, 0.975)?])
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auroc_table() {
        // (scores, resolved, expected, why)
        type Case<'a> = (&'a [f64], &'a [bool], Option<f64>, &'a str);
        let cases: &[Case<'_>] = &[
            (&[0.1, 0.9], &[false, true], Some(1.0), "perfect separation"),
            (&[0.9, 0.1], &[false, true], Some(0.0), "perfectly wrong"),
            (
                &[0.5, 0.5],
                &[false, true],
                Some(0.5),
                "a tie counts one half",
            ),
            (
                &[0.2, 0.5, 0.5, 0.7],
                &[false, false, true, true],
                Some(0.875),
                "tie across classes",
            ),
            (&[0.2, 0.3], &[true, true], None, "one class only"),
            (&[], &[], None, "empty"),
        ];
        for (s, r, want, why) in cases {
            assert_eq!(auroc(s, r), *want, "{why}");
        }
    }

    #[test]
    fn kendall_matches_brute_force() {
        let x = [0.1, 0.4, 0.4, 0.0, 0.9, 0.4, 0.2, 0.9];
        let y = [0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0];
        let (mut c, mut d, mut tx, mut ty) = (0.0f64, 0.0, 0.0, 0.0);
        for i in 0..x.len() {
            for j in i + 1..x.len() {
                let s = (x[i] - x[j]) * (y[i] - y[j]);
                if s > 0.0 {
                    c += 1.0;
                } else if s < 0.0 {
                    d += 1.0;
                } else if x[i] == x[j] && y[i] != y[j] {
                    tx += 1.0;
                } else if y[i] == y[j] && x[i] != x[j] {
                    ty += 1.0;
                }
            }
        }
        let want = (c - d) / ((c + d + tx) * (c + d + ty)).sqrt();
        let got = kendall_tau_b(&x, &y).unwrap();
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    }

    #[test]
    fn calibration_edges_follow_scikit_learn() {
        // 0.1 sits on an inner edge: it belongs to the first bin; 0.30000000000000004 (3 * 0.1)
        // is the edge, so 0.3 is below it and also lands in (0.2, 0.3].
        let bins = calibration(
            &[0.0, 0.1, 0.3, -1.0, 1.0],
            &[false, true, true, false, true],
        );
        let labels: Vec<&str> = bins.iter().map(|b| b.label.as_str()).collect();
        assert_eq!(labels, ["< 0", "[0.0, 0.1]", "(0.2, 0.3]", "(0.9, 1.0]"]);
        assert_eq!(bins[1].n, 2);
    }

    #[test]
    fn bootstrap_is_seeded_and_brackets_the_estimate() {
        let s: Vec<f64> = (0..200).map(|i| ((i * 37) % 101) as f64 / 100.0).collect();
        let r: Vec<bool> = s
            .iter()
            .enumerate()
            .map(|(i, &v)| v + (i % 7) as f64 * 0.1 > 0.6)
            .collect();
        let a = bootstrap_auroc_ci(&[&s], &r, 300, 9);
        let b = bootstrap_auroc_ci(&[&s], &r, 300, 9);
        let c = bootstrap_auroc_ci(&[&s], &r, 300, 10);
        assert_eq!(a, b, "same seed, same interval");
        assert_ne!(a, c, "another seed, another interval");
        let [lo, hi] = a[0].unwrap();
        let point = auroc(&s, &r).unwrap();
        assert!(lo < point && point < hi, "{lo} < {point} < {hi}");
    }
}
