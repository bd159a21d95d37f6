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

/// A score threshold, [`bounds::THRESHOLD`]: a finite number in the range.
pub fn threshold() -> impl TypedValueParser<Value = f64> {
    clap::builder::StringValueParser::new().try_map(|s: String| {
        let r = bounds::THRESHOLD;
        match s.trim().parse::<f64>() {
            Ok(v) if r.contains(v) => Ok(v),
            _ => Err(format!("`{s}` is not a number from {} to {}", r.min, r.max)),
        }
    })
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
