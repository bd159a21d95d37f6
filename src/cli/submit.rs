//! `swe-eval submit`: package a finished run as a SWE-bench leaderboard submission, or check a
//! package (`--verify`). The work is in `swe_eval::submit`.

use std::path::PathBuf;

use super::{failed, CliResult, Ending};
use crate::submit::{self, Logs, Metadata, Options, Source};
use swe_eval_core::dataset;
use swe_eval_core::predictions;
use swe_eval_core::report::SavedLogs;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  swe-eval submit results/ -d datasets/mini/dataset.jsonl --model mini-demo -o pkg/
  swe-eval submit graded/ -d verified.jsonl -p all_preds.jsonl --logs test_outputs.jsonl \\
      --trajs trajs/ --report https://example.org/report --authors 'A. B.' -o 20260101_system/
  swe-eval submit --verify 20260101_system/ -d verified.jsonl

RUN is a run's output folder: a swe-eval run or the official harness's (its
logs/run_evaluation/<run_id>/<model>/<id>/ tree gives the patches and test outputs), or a
`swe-eval grade` output together with --predictions and --logs.

The package (the folder to add under evaluation/<split>/ of SWE-bench/experiments):
all_preds.jsonl, logs/<instance_id>/{patch.diff,report.json,test_output.txt}, trajs/,
results/{results.json,resolved_by_repo.json,resolved_by_time.json}, metadata.yaml, README.md.
results/ is graded from the package's own logs as the repository's analysis script does.
Every checklist requirement the inputs do not meet is a warning naming the rule.

The package is written into a folder beside OUTPUT and renamed to it once it verifies: a
failure leaves no output. Each prediction is packaged from its own log only: a log that ran
another patch (its folder's patch.diff or verdict.json, or its test output's git status and
git diff) is named and the prediction left out; --sample K packages sample K of every
instance, and an instance without it is left out, never given another sample.

--verify grades a package again from its own logs and checks every number of results/, each
report.json, all_preds.jsonl and the README's summary line, each patch.diff against what its
test_output.txt shows ran (files and lines of git status and git diff, and the base commit),
and each eval.sh against the eval script rendered for the dataset row; any difference fails
(exit 1). Checklist warnings make the exit code 3.")]
/// `swe-eval submit`: the run to package (or the package to verify) and what to say of it.
pub struct Args {
    /// The run's output folder (see below).
    #[arg(required_unless_present = "verify", conflicts_with = "verify")]
    pub run: Option<PathBuf>,
    /// Dataset rows (JSON, JSON Lines or Parquet, or a Hugging Face dataset name) with
    /// FAIL_TO_PASS, PASS_TO_PASS and created_at, as the leaderboard grades them.
    #[arg(long, short = 'd', visible_alias = "dataset_name")]
    pub dataset: PathBuf,
    /// The package folder to write (new or empty, apart from every input).
    #[arg(long, short = 'o', required_unless_present = "verify")]
    pub output: Option<PathBuf>,
    /// Check an existing package instead of writing one.
    #[arg(long, value_name = "PACKAGE")]
    pub verify: Option<PathBuf>,
    /// Predictions, when RUN has no patch.diff files (a `grade` output) [default: RUN's].
    #[arg(long, short = 'p', visible_alias = "predictions_path")]
    pub predictions: Option<String>,
    /// Test outputs, when RUN has none: a folder or a JSONL of {instance_id, test_output}
    /// [default: RUN].
    #[arg(long)]
    pub logs: Option<PathBuf>,
    /// The run to package when RUN holds several.
    #[arg(long, visible_alias = "run_id")]
    pub run_id: Option<String>,
    /// The model to package when the run has several.
    #[arg(long)]
    pub model: Option<String>,
    /// The sample to package for every instance; an instance without it is left out (named),
    /// never given another sample [allowed: 0 to 100000].
    #[arg(long, default_value_t = 0, value_name = "K", value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub sample: u32,
    /// Folder of reasoning traces, one per instance, the instance id in each name.
    #[arg(long)]
    pub trajs: Option<PathBuf>,
    /// Benchmark split (the evaluation/<split>/ folder).
    #[arg(long, default_value = "verified")]
    pub split: String,
    /// Leaderboard entry name [default: the model name].
    #[arg(long)]
    pub name: Option<String>,
    /// URL of the system's site.
    #[arg(long)]
    pub site: Option<String>,
    /// URL of the technical report, paper or blog post (required by the leaderboard).
    #[arg(long)]
    pub report: Option<String>,
    /// The people involved (the first author's website or profile too).
    #[arg(long)]
    pub authors: Option<String>,
    /// URL of a logo.
    #[arg(long)]
    pub logo: Option<String>,
    /// Organisation (repeatable).
    #[arg(long = "org")]
    pub orgs: Vec<String>,
    /// Model the system uses (repeatable) [default: the predictions' model name].
    #[arg(long = "uses-model")]
    pub models: Vec<String>,
    /// The model's weights are open.
    #[arg(long)]
    pub os_model: bool,
    /// The system's code is open.
    #[arg(long)]
    pub os_system: bool,
    /// `1` (one attempt per instance) or `2+` (best@k: the system chose among attempts without
    /// the SWE-bench tests).
    #[arg(long, default_value = "1", value_parser = ["1", "2+"])]
    pub attempts: String,
    /// Confirm a checklist item only you can: no-test-knowledge, no-hints, no-web-browsing
    /// (repeatable).
    #[arg(long, value_parser = ["no-test-knowledge", "no-hints", "no-web-browsing"])]
    pub declare: Vec<String>,
}

/// Builds the package (or verifies one) and prints the results and warnings.
pub fn run(args: Args) -> CliResult {
    // A Hugging Face dataset name loads its `test` split, the one the leaderboard grades.
    let (ds, ds_problems) = crate::hub::load_dataset_split(&args.dataset, "test")?;
    super::print_problems("warning: skipped dataset row: ", &ds_problems);
    if let Some(pkg) = &args.verify {
        return verify(&ds, pkg);
    }
    let (Some(run), Some(output)) = (args.run.clone(), args.output.clone()) else {
        return Err(failed("RUN and --output are needed (or --verify PACKAGE)"));
    };
    let mut inputs: Vec<PathBuf> = vec![run.clone(), args.dataset.clone()];
    inputs.extend(args.logs.clone());
    inputs.extend(args.trajs.clone());
    if let Some(p) = &args.predictions {
        if p != "gold" {
            inputs.push(PathBuf::from(p));
        }
    }
    let refs: Vec<&std::path::Path> = inputs.iter().map(PathBuf::as_path).collect();
    submit::check_output(&output, &refs)?;

    // Predictions and logs from the files given, else from the run's own log folders.
    let (predictions, tree_logs) = match &args.predictions {
        Some(spec) => {
            let loaded = predictions::load(spec, Some(&ds))?;
            super::print_problems("warning: skipped prediction: ", &loaded.problems);
            (loaded.items, None)
        }
        None => {
            let (p, logs) = submit::predictions_from_tree(&run, args.run_id.as_deref())?;
            (p, Some(logs))
        }
    };
    if predictions.is_empty() {
        return Err(failed(format!(
            "no predictions: {} has no patch.diff files; pass --predictions",
            run.display()
        )));
    }
    let logs = match (&args.logs, tree_logs) {
        (None, Some(tree)) => tree,
        (given, _) => {
            let saved = SavedLogs::open(given.as_deref().unwrap_or(&run))?;
            super::print_problems("warning: skipped log row: ", saved.problems());
            Logs::Saved(saved)
        }
    };
    let source = Source {
        predictions,
        predictions_path: args.predictions.clone(),
        logs,
        run_id: args.run_id.clone(),
        summaries: submit::summaries_in(&run),
    };
    let opts = Options {
        output: output.clone(),
        model: args.model.clone(),
        trajs: args.trajs.clone(),
        split: args.split.clone(),
        sample: args.sample,
        metadata: Metadata {
            name: args.name,
            site: args.site,
            report: args.report,
            authors: args.authors,
            logo: args.logo,
            orgs: args.orgs,
            models: args.models,
            os_model: args.os_model,
            os_system: args.os_system,
            attempts: args.attempts,
            declared: args.declare,
        },
    };
    let pkg = match submit::build(&ds, &source, &opts) {
        Ok(pkg) => pkg,
        Err(submit::SubmitError::Unverified(mismatches)) => {
            super::print_problems("mismatch: ", &mismatches);
            return Err(failed(format!(
                "the package for {} does not verify ({} difference(s)); nothing written",
                output.display(),
                mismatches.len()
            )));
        }
        Err(submit::SubmitError::NothingToPackage {
            model,
            sample,
            warnings,
        }) => {
            super::print_problems("warning: ", &warnings);
            return Err(submit::SubmitError::NothingToPackage {
                model,
                sample,
                warnings: Vec::new(),
            }
            .into());
        }
        Err(e) => return Err(e.into()),
    };
    super::print_problems("warning: ", &pkg.warnings);
    print!("{}", pkg.results.summary_text(&pkg.name, &args.split));
    println!(
        "packaged {} prediction(s) of {} ({} with a reasoning trace) into {}; it verifies",
        pkg.predictions,
        pkg.model,
        pkg.trajs,
        output.display()
    );
    Ok(if pkg.warnings.is_empty() {
        Ending::Clean
    } else {
        Ending::WithProblems
    })
}

fn verify(ds: &dataset::Dataset, pkg: &std::path::Path) -> CliResult {
    let v = submit::verify(ds, pkg)?;
    super::print_problems("warning: ", &v.warnings);
    if !v.mismatches.is_empty() {
        super::print_problems("mismatch: ", &v.mismatches);
        return Err(failed(format!(
            "{} does not verify: {} difference(s) between its files and its own logs graded again",
            pkg.display(),
            v.mismatches.len()
        )));
    }
    super::print_problems("missing: ", &v.missing);
    super::print_problems("not tied to its patch: ", &v.ran.unknown);
    let unchecked = match v.unchecked.len() {
        0 => String::new(),
        n => format!(
            "; {n} other file(s) are the run's own records, held but not checked (e.g. {})",
            v.unchecked[0]
        ),
    };
    println!(
        "{} {}: resolved {} of {} instances ({}%), no_generation {}, no_logs {}; \
         results/results.json, resolved_by_repo.json ({} repositories), resolved_by_time.json \
         ({} years), every report.json, all_preds.jsonl, README.md, metadata.yaml and trajs/ \
         agree with the logs; every patch.diff is the patch its test_output.txt ran ({} shown \
         line by line, {} by file{}), {} test output(s) ran on the dataset's base commit, {} \
         eval.sh equal the dataset's{unchecked}{}",
        if v.missing.is_empty() {
            "verified"
        } else {
            "NOT complete"
        },
        pkg.display(),
        v.results.resolved.len(),
        v.results.total,
        v.results.rate(),
        v.results.no_generation.len(),
        v.results.no_logs.len(),
        v.results.by_repo.len(),
        v.results.by_year.len(),
        v.ran.by_lines,
        v.ran.by_files,
        match v.ran.unknown.len() {
            0 => String::new(),
            n => format!(", {n} not shown (listed above)"),
        },
        v.ran.base_commits,
        v.ran.eval_scripts,
        match v.missing.len() {
            0 => String::new(),
            n => format!("; but {n} file(s) the layout requires are missing (listed above)"),
        }
    );
    Ok(if v.warnings.is_empty() && v.missing.is_empty() {
        Ending::Clean
    } else {
        Ending::WithProblems
    })
}
