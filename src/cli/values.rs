//! Value parsers of the numeric flags, one per documented range of `swe_eval_core::bounds`: a value
//! outside its range is refused by the command line (exit code 2) with the range. Every
//! numeric flag of every command takes one of these, and its help states the same range
//! (`bounds::Range::describe`); a test holds both for every command, new ones included.

use clap::builder::{RangedU64ValueParser, TypedValueParser};

use swe_eval_core::bounds::{self, Range};

fn ranged<T>(r: Range<T>) -> RangedU64ValueParser<T>
where
    T: Copy + TryFrom<u64> + Into<u64> + Clone + Send + Sync + 'static,
    <T as TryFrom<u64>>::Error: std::fmt::Display,
{
    RangedU64ValueParser::<T>::new().range(r.min.into()..=r.max.into())
}

fn ranged_usize(r: Range<usize>) -> RangedU64ValueParser<usize> {
    RangedU64ValueParser::<usize>::new().range(r.min as u64..=r.max as u64)
}

/// `-j`: worker threads or containers, [`bounds::WORKERS`].
pub fn workers() -> RangedU64ValueParser<usize> {
    ranged_usize(bounds::WORKERS)
}

/// `--build-jobs`, [`bounds::BUILD_JOBS`].
pub fn build_jobs() -> RangedU64ValueParser<usize> {
    ranged_usize(bounds::BUILD_JOBS)
}

/// `--timeout` in seconds, [`bounds::TIMEOUT_SECS`]: zero is refused.
pub fn timeout_secs() -> RangedU64ValueParser<u64> {
    ranged(bounds::TIMEOUT_SECS)
}

/// `--bootstrap`, [`bounds::BOOTSTRAP`].
pub fn bootstrap() -> RangedU64ValueParser<usize> {
    ranged_usize(bounds::BOOTSTRAP)
}

/// `validate -k`, [`bounds::REPEAT`].
pub fn repeat() -> RangedU64ValueParser<u32> {
    ranged(bounds::REPEAT)
}

/// `--blind-spots`, [`bounds::BLIND_SPOTS`].
pub fn blind_spots() -> RangedU64ValueParser<usize> {
    ranged_usize(bounds::BLIND_SPOTS)
}

/// A count of the benchmarks, in `range`.
pub fn bench(range: Range<usize>) -> RangedU64ValueParser<usize> {
    ranged_usize(range)
}

/// A value of a flag that takes a real number that is not one, or not in the flag's range.
#[derive(Debug, thiserror::Error)]
#[error("`{value}` is not {what} from {min} to {max}{unit}")]
pub struct NotInRange {
    /// The value as given.
    value: String,
    /// What the flag takes (`a number`, `a rate`).
    what: &'static str,
    /// The smallest value taken.
    min: f64,
    /// The largest.
    max: f64,
    /// The unit, as words after the range (or nothing).
    unit: &'static str,
}

/// `s` as a real number from `min` to `max`, or [`NotInRange`].
fn parse_real(
    s: String,
    what: &'static str,
    min: f64,
    max: f64,
    unit: &'static str,
) -> Result<f64, NotInRange> {
    match s.trim().parse::<f64>() {
        Ok(v) if (min..=max).contains(&v) => Ok(v),
        _ => Err(NotInRange {
            value: s,
            what,
            min,
            max,
            unit,
        }),
    }
}

/// A parser of a real number from `min` to `max` (so finite), refusing others with
/// [`NotInRange`].
fn real(
    what: &'static str,
    min: f64,
    max: f64,
    unit: &'static str,
) -> impl TypedValueParser<Value = f64> {
    clap::builder::StringValueParser::new()
        .try_map(move |s: String| parse_real(s, what, min, max, unit))
}

/// A score threshold, [`bounds::THRESHOLD`]: a finite number in the range.
pub fn threshold() -> impl TypedValueParser<Value = f64> {
    let r = bounds::THRESHOLD;
    real("a number", r.min, r.max, "")
}

/// `bench serve --rate`: requests per second, 0 (as fast as answered) to 1,000,000.
pub fn rate() -> impl TypedValueParser<Value = f64> {
    real("a rate", 0.0, 1e6, " (requests per second)")
}

/// `serve`'s counts and sizes, in `range`.
pub fn serve(range: Range<usize>) -> RangedU64ValueParser<usize> {
    ranged_usize(range)
}

/// `serve export --since`, [`bounds::REQUEST_NUMBER`].
pub fn request_number() -> RangedU64ValueParser<u64> {
    ranged(bounds::REQUEST_NUMBER)
}

/// `--flavour`: `official` (alias `conda`) or `debian`, each with its help, as the type's own
/// names say them ([`swe_eval_core::spec::Flavour`]).
pub fn flavour() -> impl TypedValueParser<Value = swe_eval_core::spec::Flavour> {
    use clap::builder::{PossibleValue, PossibleValuesParser};
    use swe_eval_core::spec::Flavour;
    PossibleValuesParser::new([
        PossibleValue::new(Flavour::Official.as_str())
            .alias("conda")
            .help("conda, as the official images"),
        PossibleValue::new(Flavour::Debian.as_str())
            .help("Debian's own Python, offline base image"),
    ])
    .map(|s| {
        s.parse::<Flavour>()
            .expect("the parser accepts only the flavours' names")
    })
}

/// `serve --reward`: `strict` or `official`, each with its help ([`crate::evaluator::GradedBy`]).
pub fn reward() -> impl TypedValueParser<Value = crate::evaluator::GradedBy> {
    use crate::evaluator::GradedBy;
    use clap::builder::{PossibleValue, PossibleValuesParser};
    PossibleValuesParser::new([
        PossibleValue::new(GradedBy::Strict.as_str()).help(
            "the strict grading; the jobs run strict (collection-altering files removed before \
             the tests)",
        ),
        PossibleValue::new(GradedBy::Official.as_str())
            .help("the official harness's grading, holes included; the jobs run as --strict says"),
    ])
    .map(|s| match s.as_str() {
        "official" => GradedBy::Official,
        _ => GradedBy::Strict,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_number_is_taken_only_within_its_range_and_refused_with_it() {
        let rate =
            |s: &str| parse_real(s.to_string(), "a rate", 0.0, 1e6, " (requests per second)");
        assert_eq!(rate("0").unwrap(), 0.0);
        assert_eq!(rate(" 250.5").unwrap(), 250.5);
        assert_eq!(rate("1000000").unwrap(), 1e6);
        for bad in ["-1", "1000001", "fast", "", "NaN", "inf"] {
            assert_eq!(
                rate(bad).unwrap_err().to_string(),
                format!("`{bad}` is not a rate from 0 to 1000000 (requests per second)")
            );
        }
        let r = bounds::THRESHOLD;
        let threshold = |s: &str| parse_real(s.to_string(), "a number", r.min, r.max, "");
        assert_eq!(threshold("-1").unwrap(), -1.0);
        assert_eq!(
            threshold("1.5").unwrap_err().to_string(),
            "`1.5` is not a number from -1 to 1"
        );
    }
}
