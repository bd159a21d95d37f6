//! `swe-eval compare`: is the difference between runs real? Parses the run arguments and
//! options, calls `swe_eval_core::compare` to load, analyze and write, and prints the headline.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::args::DatasetArgs;
use super::CliResult;
use crate::orchestrate::{ending, Troubles};
use swe_eval_core::compare::{self, Options, RunSpec};

const AFTER_HELP: &str = "\
Each RUN is [NAME=]PATH[#RUN_ID]:
  a swe-eval output folder (its <run_id>.predictions.jsonl; #RUN_ID picks one when it holds several),
  an official logs/run_evaluation/<run_id>/<model>/ folder (report.json per instance),
  an official run summary <model>.<run_id>.json,
  a JSON Lines of {instance_id, sample, resolved},
  or mini-swe-agent's per_run_results.json (#KEY picks a run; without it, every run in the file).

Examples:
  swe-eval compare base=results#try1 new=results#try2 --dataset verified.jsonl
  swe-eval compare per_run_results.json --repeat i0=i0_run1,i0_run2,i0_run3 --pair i0_run1,i1c

Writes summary.json, per_prediction.csv, per_instance.csv, flips.csv, a forest plot per pair
(forest_*.svg/png), report.md and report.html into --output.";

/// `swe-eval compare`: the runs and how to compare them.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
#[command(mut_arg("dataset", |a| a.help("The dataset: repository and difficulty per instance (else the repository from the instance id and difficulty `unknown`); a file or a Hugging Face dataset name")))]
pub struct Args {
    /// The runs to compare (at least two in all; see below for the forms).
    #[arg(required = true, value_name = "RUN")]
    pub runs: Vec<String>,
    /// Repeated runs of one system, as GROUP=RUN,RUN,...: their spread is reported, and the
    /// instances they disagree on are marked unstable in every pair. Repeatable.
    #[arg(long, value_name = "GROUP=RUN,RUN,...", value_parser = parse_repeat)]
    pub repeat: Vec<(String, Vec<String>)>,
    /// Compare only these pairs, as A,B (B minus A). Repeatable. Default: every pair of runs,
    /// the later argument as B.
    #[arg(long, value_name = "A,B", value_parser = parse_pair)]
    pub pair: Vec<(String, String)>,
    /// The similarity rewards of a run (from `swe-eval reward`), as RUN=FILE. Repeatable.
    #[arg(long, value_name = "RUN=FILE", value_parser = parse_rewards)]
    pub rewards: Vec<(String, PathBuf)>,
    /// The dataset rows.
    #[command(flatten)]
    pub dataset: DatasetArgs,
    /// Output folder (not one of the inputs).
    #[arg(
        long,
        short = 'o',
        default_value = "results/compare",
        value_name = "DIR"
    )]
    pub output: PathBuf,
    /// Bootstrap resamples for the intervals of differences (0: none) [allowed: 0 to 100000].
    #[arg(long, default_value_t = 5000, value_name = "N", value_parser = super::values::bootstrap())]
    pub bootstrap: usize,
    /// Seed of the bootstrap.
    #[arg(long, default_value_t = 0, value_name = "S")]
    pub seed: u64,
    /// Compare each pair over the instances both runs have. Without it, runs that do not
    /// cover the same instances are a problem (exit code 3: a comparison of fewer instances
    /// than the runs hold is not a comparison of the runs); with it, the instances left out
    /// are still stated in the headline and on stderr. Runs that share no instance are an
    /// error either way.
    #[arg(long)]
    pub intersection: bool,
    /// A flaky map from `swe-eval validate -k N` (its flaky.<run_id>.jsonl): the headline and
    /// summary.json say how many of the compared instances it calls flaky, per_instance.csv
    /// marks them (column `flaky`). A bad row refuses the file, naming its line and field.
    #[arg(long, value_name = "FILE")]
    pub flaky: Option<PathBuf>,
    /// Leave the instances the --flaky map calls flaky out of every statistic (they stay in
    /// per_instance.csv, marked).
    #[arg(long, requires = "flaky")]
    pub exclude_flaky: bool,
}

/// A value of `--repeat`, `--pair` or `--rewards` not in the shape the flag takes.
#[derive(Debug, thiserror::Error)]
#[error("expected {expected}, found `{found}`")]
pub struct ShapeError {
    /// The shape the flag takes.
    expected: &'static str,
    /// The value given.
    found: String,
}

fn shape_error(expected: &'static str, s: &str) -> ShapeError {
    ShapeError {
        expected,
        found: s.to_string(),
    }
}

fn parse_repeat(s: &str) -> Result<(String, Vec<String>), ShapeError> {
    let (g, runs) = s
        .split_once('=')
        .ok_or_else(|| shape_error("GROUP=RUN,RUN,...", s))?;
    let runs: Vec<String> = runs
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(String::from)
        .collect();
    if g.is_empty() || runs.len() < 2 {
        return Err(shape_error(
            "GROUP=RUN,RUN,... with a name and two runs or more",
            s,
        ));
    }
    Ok((g.to_string(), runs))
}

fn parse_pair(s: &str) -> Result<(String, String), ShapeError> {
    match s.split_once(',') {
        Some((a, b)) if !a.is_empty() && !b.is_empty() && !b.contains(',') => {
            Ok((a.to_string(), b.to_string()))
        }
        _ => Err(shape_error("A,B (two run names)", s)),
    }
}

fn parse_rewards(s: &str) -> Result<(String, PathBuf), ShapeError> {
    match s.split_once('=') {
        Some((n, f)) if !n.is_empty() && !f.is_empty() => Ok((n.to_string(), PathBuf::from(f))),
        _ => Err(shape_error("RUN=FILE", s)),
    }
}

/// Loads the runs, compares them, writes the files and prints the headline.
pub fn run(args: Args) -> CliResult {
    let started = Instant::now();
    let specs = args
        .runs
        .iter()
        .map(|a| RunSpec::parse(a))
        .collect::<Result<Vec<_>, _>>()?;
    let mut inputs_paths: Vec<&Path> = specs.iter().map(|s| s.path.as_path()).collect();
    inputs_paths.extend(args.rewards.iter().map(|(_, f)| f.as_path()));
    inputs_paths.extend(args.dataset.dataset.as_deref());
    inputs_paths.extend(args.flaky.as_deref());
    compare::check_output(&args.output, &inputs_paths)?;

    let mut problems = Vec::new();
    let ds = args.dataset.load()?.map(|(d, probs)| {
        problems.extend(probs);
        d
    });
    let flaky = args
        .flaky
        .as_deref()
        .map(swe_eval_core::report::read_flaky_map)
        .transpose()?;
    let runs = match compare::load_all(&specs, &args.rewards, &mut problems) {
        Ok(runs) => runs,
        Err(e) => {
            // The rows that were skipped on the way often say why.
            super::correlate::report_problems(&problems);
            return Err(e.into());
        }
    };
    let opts = Options {
        bootstrap: args.bootstrap,
        seed: args.seed,
        repeats: args.repeat.clone(),
        pairs: args.pair.clone(),
        intersection: args.intersection,
        flaky,
        exclude_flaky: args.exclude_flaky,
    };
    let summary = compare::analyze(&runs, ds.as_ref(), &opts)?;
    let written = compare::write_compare(&args.output, &summary, &runs, ds.as_ref())?;
    let coverage = summary.coverage_problems();
    let mut lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
    lines.extend(coverage.iter().cloned());
    lines.extend(written.png_problems.iter().cloned());
    super::print_problems("warning: ", &lines);
    if args.intersection {
        super::print_problems("note: ", &summary.left_out());
    }
    for r in &summary.runs {
        eprintln!(
            "{}: {} instances, {} predictions, {} resolved",
            r.name, r.n_instances, r.n_predictions, r.n_resolved
        );
    }
    println!("{}", summary.headline);
    println!(
        "wrote {} files to {} in {:.2} s (open report.html)",
        written.files.len(),
        args.output.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(ending(&Troubles::of_inputs(lines.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shaped_flags_take_their_shape_and_name_it_otherwise() {
        assert_eq!(
            parse_repeat("g=a, b").unwrap(),
            ("g".to_string(), vec!["a".to_string(), "b".to_string()])
        );
        assert_eq!(
            parse_repeat("g").unwrap_err().to_string(),
            "expected GROUP=RUN,RUN,..., found `g`"
        );
        assert_eq!(
            parse_repeat("g=a").unwrap_err().to_string(),
            "expected GROUP=RUN,RUN,... with a name and two runs or more, found `g=a`"
        );
        assert_eq!(parse_pair("a,b").unwrap(), ("a".into(), "b".into()));
        assert_eq!(
            parse_pair("a,b,c").unwrap_err().to_string(),
            "expected A,B (two run names), found `a,b,c`"
        );
        assert_eq!(
            parse_rewards("r=f.jsonl").unwrap(),
            ("r".into(), PathBuf::from("f.jsonl"))
        );
        assert_eq!(
            parse_rewards("=f").unwrap_err().to_string(),
            "expected RUN=FILE, found `=f`"
        );
    }
}
