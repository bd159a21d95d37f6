//! The statistics of `swe-eval compare`, pure functions over counts and slices: the Wilson
//! score interval of a resolve rate, the unbiased pass@k estimator, McNemar's exact test, a
//! seeded percentile bootstrap of a mean (paired differences are the mean of per-instance
//! differences), and the standard deviation. Each one is checked against SciPy / statsmodels on
//! the fixtures in `tests/fixtures/compare/` (made by `scripts/compare_fixtures.py`); the
//! bootstrap against a same-seed Python reimplementation, exactly.

use rayon::prelude::*;

use crate::study::{percentile_sorted, stream_seed, SplitMix};

/// The 0.975 quantile of the standard normal distribution (SciPy's `norm.ppf(0.975)`).
pub const Z_975: f64 = 1.959_963_984_540_054;

/// The Wilson score 95% interval of `k` successes in `n` trials (statsmodels'
/// `proportion_confint(method="wilson")`); `None` when `n` is 0.
pub fn wilson(k: usize, n: usize) -> Option<[f64; 2]> {
    if n == 0 || k > n {
        return None;
    }
    let (nf, p, z2) = (n as f64, k as f64 / n as f64, Z_975 * Z_975);
    let denom = 1.0 + z2 / nf;
    let center = (p + z2 / (2.0 * nf)) / denom;
    let half = Z_975 / denom * (p * (1.0 - p) / nf + z2 / (4.0 * nf * nf)).sqrt();
    Some([(center - half).max(0.0), (center + half).min(1.0)])
}

/// The unbiased estimator of pass@k from `n` samples of which `c` pass (Chen et al., 2021):
/// `1 - C(n-c, k) / C(n, k)`, computed as a product so that it never overflows. `None` when
/// `k` is 0 or above `n`.
pub fn pass_at_k(n: usize, c: usize, k: usize) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    if n - c < k {
        return Some(1.0);
    }
    // C(n-c, k) / C(n, k) = prod_{i = n-c+1}^{n} (1 - k / i)
    let ratio: f64 = (n - c + 1..=n).map(|i| 1.0 - k as f64 / i as f64).product();
    Some(1.0 - ratio)
}

/// McNemar's exact test: the two-sided binomial test of `b` against `b + c` discordant pairs
/// at one half (statsmodels' `mcnemar(exact=True)`, SciPy's `binomtest(min(b, c), b + c)`).
/// 1 when there are no discordant pairs.
pub fn mcnemar_exact(b: usize, c: usize) -> f64 {
    let n = b + c;
    let m = b.min(c);
    if n == 0 || 2 * m == n {
        return 1.0;
    }
    // P(X <= m) for X ~ Binomial(n, 1/2): the largest term t_m = C(n, m) / 2^n in logs, then
    // the smaller ones by the ratio t_{i-1} = t_i * i / (n - i + 1), summed smallest first.
    let ln_c: f64 = (1..=m)
        .map(|i| ((n - m + i) as f64).ln() - (i as f64).ln())
        .sum();
    let mut t = (ln_c - n as f64 * std::f64::consts::LN_2).exp();
    let mut terms = Vec::with_capacity(m + 1);
    for i in (0..=m).rev() {
        terms.push(t);
        if i > 0 {
            t *= i as f64 / (n - i + 1) as f64;
        }
    }
    let cdf: f64 = terms.iter().rev().sum();
    (2.0 * cdf).min(1.0)
}

/// The mean of `v` (`None` when empty), summed in order.
pub fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The standard deviation with `ddof` degrees of freedom removed (NumPy's `std(ddof=...)`):
/// 1 for the sample estimate, 0 for the population one. `None` when `len <= ddof`.
pub fn sd(v: &[f64], ddof: usize) -> Option<f64> {
    if v.len() <= ddof {
        return None;
    }
    let m = mean(v)?;
    let ss: f64 = v.iter().map(|x| (x - m) * (x - m)).sum();
    Some((ss / (v.len() - ddof) as f64).sqrt())
}

/// Percentile bootstrap 95% interval of the mean of `v`: `resamples` resamples of `v.len()`
/// values drawn with replacement; resample b draws from the SplitMix64 stream
/// `stream_seed(seed, b)` (so the result does not depend on the number of threads), its mean is
/// the in-order sum over the count; the interval is the 2.5th and 97.5th percentile of the
/// means (NumPy's linear interpolation). For a paired difference, `v` holds the per-instance
/// differences. `None` with fewer than 2 values or no resamples.
pub fn bootstrap_mean_ci(v: &[f64], resamples: usize, seed: u64) -> Option<[f64; 2]> {
    let n = v.len();
    if n < 2 || resamples == 0 {
        return None;
    }
    let mut means: Vec<f64> = (0..resamples)
        .into_par_iter()
        .map(|b| {
            let mut rng = SplitMix(stream_seed(seed, b as u64));
            let mut sum = 0.0;
            for _ in 0..n {
                sum += v[rng.below(n)];
            }
            sum / n as f64
        })
        .collect();
    means.sort_by(f64::total_cmp);
    Some([
        percentile_sorted(&means, 0.025)?,
        percentile_sorted(&means, 0.975)?,
    ])
}

/// The seed of a named subgroup's bootstrap (a repository, a difficulty): the FNV-1a hash of
/// its label mixed into the run's seed, so a group's interval does not depend on which other
/// groups exist.
pub fn group_seed(seed: u64, label: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in label.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    stream_seed(seed, h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_at_k_edges() {
        assert_eq!(pass_at_k(5, 0, 1), Some(0.0));
        assert_eq!(pass_at_k(5, 5, 3), Some(1.0));
        assert_eq!(pass_at_k(5, 2, 4), Some(1.0), "fewer failures than k");
        assert_eq!(pass_at_k(5, 2, 6), None);
        assert_eq!(pass_at_k(5, 2, 0), None);
        // pass@1 is c / n.
        assert!((pass_at_k(7, 3, 1).unwrap() - 3.0 / 7.0).abs() < 1e-15);
    }

    #[test]
    fn mcnemar_small_cases_by_hand() {
        // b = 0, c = 3: 2 * (1/8).
        assert!((mcnemar_exact(0, 3) - 0.25).abs() < 1e-15);
        // b = 5, c = 3: 2 * (1 + 8 + 28 + 56) / 256.
        assert!((mcnemar_exact(5, 3) - 186.0 / 256.0).abs() < 1e-15);
        assert_eq!(mcnemar_exact(4, 4), 1.0);
        assert_eq!(mcnemar_exact(0, 0), 1.0);
    }

    #[test]
    fn bootstrap_is_seeded_and_brackets_the_mean() {
        let v: Vec<f64> = (0..120).map(|i| ((i * 7) % 3) as f64 - 1.0).collect();
        let a = bootstrap_mean_ci(&v, 500, 3).unwrap();
        assert_eq!(Some(a), bootstrap_mean_ci(&v, 500, 3));
        assert_ne!(Some(a), bootstrap_mean_ci(&v, 500, 4));
        let m = mean(&v).unwrap();
        assert!(a[0] < m && m < a[1], "{a:?} around {m}");
        assert_eq!(bootstrap_mean_ci(&[1.0], 100, 0), None);
    }
}
