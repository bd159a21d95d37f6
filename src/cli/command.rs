//! The command line itself ([`Cli`], one [`Command`] per subcommand) and [`dispatch`], which
//! hands each subcommand's arguments to its `run`.

use clap::{Parser, Subcommand};

use super::bench;
use super::compare;
use super::correlate;
use super::exit::CliResult;
use super::grade;
use super::images;
use super::reward;
use super::run;
use super::serve;
use super::spec;
use super::submit;
use super::validate;

/// Evaluate SWE-bench predictions: execute them in Docker and grade them as the official
/// harness does, score them with the SWE-RL similarity reward, and study how the two agree.
///
/// Run `swe-eval run` with no arguments to evaluate the bundled mini benchmark.
#[derive(Debug, Parser)]
#[command(name = "swe-eval", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// The subcommand to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands, one file each under `src/cli`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Apply each prediction in its own container, run the hidden tests, grade, and report.
    Run(run::Args),
    /// Compute the SWE-RL similarity reward of each prediction without executing anything.
    Reward(reward::Args),
    /// Correlate executed outcomes with the reward: AUROC, calibration, best of n, blind spots.
    Correlate(correlate::Args),
    /// Compare runs paired by instance: differences with intervals, McNemar, flips, noise.
    Compare(compare::Args),
    /// Write the eval script and Dockerfiles of each dataset instance.
    Spec(spec::Args),
    /// Grade again from saved test logs, as the official harness grades them.
    Grade(grade::Args),
    /// Run gold and empty patches k times and flag instances whose verdicts are not stable.
    Validate(validate::Args),
    /// Package a finished run as a SWE-bench leaderboard submission, or check one (--verify).
    Submit(submit::Args),
    /// Prepare, list, prune, export and import the images of a dataset's instances.
    Images(images::Args),
    /// Evaluate predictions over HTTP for training loops (cached, deadlines, restart-safe).
    Serve(serve::Args),
    /// Measure the speed of the reward, grading, correlation and harness overhead.
    Bench(bench::Args),
}

impl Command {
    /// What the command reads and writes, for the clobber check.
    pub fn io(&self) -> swe_eval_core::paths::IoPlan {
        use swe_eval_core::paths::{IoPlan, Output};
        match self {
            Command::Run(a) => a.io(),
            Command::Reward(a) => a.io(),
            Command::Correlate(a) => a.io(),
            Command::Spec(a) => a.io(),
            Command::Grade(a) => a.io(),
            Command::Validate(a) => a.io(),
            Command::Bench(a) => a.io(),
            Command::Images(a) => a.io(),
            Command::Serve(a) => a.io(),
            Command::Compare(a) => {
                let mut plan = IoPlan::new().output(Output::Folder(a.output.clone()));
                let runs = a.runs.iter().chain(a.repeat.iter().flat_map(|(_, r)| r));
                for run in runs {
                    // A run may be `NAME=PATH`.
                    let path = run.split_once('=').map_or(run.as_str(), |(_, p)| p);
                    plan = plan.input("RUN", path);
                }
                for (_, file) in &a.rewards {
                    plan = plan.input("--rewards", file);
                }
                match &a.dataset.dataset {
                    Some(d) => plan.input("--dataset", d),
                    None => plan,
                }
            }
            Command::Submit(a) => {
                let mut plan = IoPlan::new().input("--dataset", &a.dataset);
                if let Some(o) = &a.output {
                    plan = plan.output(Output::Folder(o.clone()));
                }
                for (flag, p) in [
                    ("RUN", &a.run),
                    ("--logs", &a.logs),
                    ("--trajs", &a.trajs),
                    ("--verify", &a.verify),
                ] {
                    if let Some(p) = p {
                        plan = plan.input(flag, p);
                    }
                }
                if let Some(p) = &a.predictions {
                    plan = plan.input_spec("--predictions", p);
                }
                plan
            }
        }
    }
}

/// Runs the command, after refusing outputs that are inputs and protecting the inputs from
/// every write of this process (see `swe_eval_core::paths`). A command that does not end clean leaves
/// none of the folders it created empty (a full disk, an input refused after the output
/// folder was made): [`swe_eval_core::fsutil::remove_empty_folders`] on each.
pub fn dispatch(cli: Cli) -> CliResult {
    use crate::orchestrate::Ending;
    use swe_eval_core::paths::Output;
    let plan = cli.command.io();
    plan.check()?;
    plan.protect();
    let fresh: Vec<std::path::PathBuf> = plan
        .outputs
        .iter()
        .filter_map(|o| match o {
            Output::Folder(dir) => swe_eval_core::fsutil::first_missing(dir),
            Output::File(file) => file.parent().and_then(swe_eval_core::fsutil::first_missing),
            Output::Stdout => None,
        })
        .collect();
    let result = run_command(cli.command);
    if !matches!(result, Ok(Ending::Clean)) {
        for dir in &fresh {
            swe_eval_core::fsutil::remove_empty_folders(dir);
        }
    }
    result
}

fn run_command(command: Command) -> CliResult {
    match command {
        Command::Run(a) => run::run(a),
        Command::Reward(a) => reward::run(a),
        Command::Correlate(a) => correlate::run(a),
        Command::Compare(a) => compare::run(a),
        Command::Spec(a) => spec::run(a),
        Command::Grade(a) => grade::run(a),
        Command::Validate(a) => validate::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Serve(a) => serve::run(a),
        Command::Submit(a) => submit::run(a),
        Command::Images(a) => images::run(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// The official harness's spelling, this tool's long name and short flag of each option
    /// that both have.
    const SPELLINGS: &[(&str, &str, Option<char>)] = &[
        ("dataset_name", "dataset", Some('d')),
        ("predictions_path", "predictions", Some('p')),
        ("max_workers", "workers", Some('j')),
        ("run_id", "run-id", None),
        ("instance_ids", "instance-ids", Some('i')),
        ("cache_level", "cache-level", None),
    ];

    /// Every subcommand and bench target, by path.
    fn commands() -> Vec<(String, clap::Command)> {
        let mut out = Vec::new();
        let mut stack = vec![(String::new(), Cli::command())];
        while let Some((path, cmd)) = stack.pop() {
            for sub in cmd.get_subcommands() {
                stack.push((format!("{path} {}", sub.get_name()), sub.clone()));
            }
            out.push((path, cmd));
        }
        out
    }

    #[test]
    fn every_command_takes_the_same_short_flags_and_the_official_spellings() {
        let mut checked = 0;
        for (path, cmd) in commands() {
            for arg in cmd.get_arguments() {
                let Some(long) = arg.get_long() else { continue };
                if long == "output" {
                    assert_eq!(arg.get_short(), Some('o'), "{path} --output");
                }
                // `bench harness --predictions` is a count, not a file.
                if long == "predictions" && path.ends_with("harness") {
                    continue;
                }
                for (official, ours, short) in SPELLINGS {
                    if long != *ours {
                        continue;
                    }
                    checked += 1;
                    assert_eq!(arg.get_short(), *short, "{path} --{long}: short flag");
                    // The bench commands are ours alone; everything else takes the official name.
                    if !path.starts_with(" bench") {
                        let aliases = arg.get_visible_aliases().unwrap_or_default();
                        assert!(
                            aliases.contains(official),
                            "{path} --{long} lacks the alias --{official}: {aliases:?}"
                        );
                    }
                }
            }
        }
        assert!(checked >= 15, "only {checked} options checked");
    }

    #[test]
    fn the_official_command_line_parses_as_run() {
        let cli = Cli::try_parse_from([
            "swe-eval",
            "run",
            "--dataset_name",
            "data.jsonl",
            "--predictions_path",
            "preds.jsonl",
            "--max_workers",
            "8",
            "--run_id",
            "R",
            "--instance_ids",
            "a__b-1",
            "c__d-2",
            "--report_dir",
            "out",
            "--timeout",
            "900",
            "--cache_level",
            "instance",
            "--namespace",
            "",
        ])
        .unwrap();
        let Command::Run(a) = cli.command else {
            panic!("not run")
        };
        assert_eq!(
            a.dataset.dataset.as_deref(),
            Some(std::path::Path::new("data.jsonl"))
        );
        assert_eq!(a.predictions.as_deref(), Some("preds.jsonl"));
        assert_eq!(a.exec.workers, Some(8));
        assert_eq!(a.run_id.as_deref(), Some("R"));
        assert_eq!(a.exec.instance_ids, ["a__b-1", "c__d-2"]);
        assert_eq!(a.exec.output, std::path::Path::new("out"));
        assert_eq!(a.exec.timeout, Some(900));
        assert_eq!(
            a.exec.images.cache_level,
            crate::images::CacheLevel::Instance
        );
        assert_eq!(a.exec.images.sources.namespace.as_deref(), Some(""));
    }

    #[test]
    fn reward_takes_workers_and_its_old_spelling() {
        for flag in ["--workers", "--jobs", "-j", "--max_workers"] {
            let cli = Cli::try_parse_from([
                "swe-eval", "reward", "-d", "d.jsonl", "-p", "gold", "-o", "r.jsonl", flag, "3",
            ])
            .unwrap();
            let Command::Reward(a) = cli.command else {
                panic!("not reward")
            };
            assert_eq!(a.workers, Some(3), "{flag}");
        }
    }
}
