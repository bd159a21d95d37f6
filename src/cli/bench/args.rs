//! `swe-eval bench`'s arguments ([`Args`], one [`Target`] per benchmark) and [`run`], which
//! hands each target to its file.

use crate::cli::CliResult;

use super::base;
use super::correlate;
use super::engine;
use super::grade;
use super::harness;
use super::html;
use super::reward;
use super::serve;

/// `swe-eval bench`: which part to measure.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The part measured.
    #[command(subcommand)]
    pub target: Target,
}

/// What `swe-eval bench` can measure, one file each.
#[derive(Debug, clap::Subcommand)]
pub enum Target {
    /// The whole `reward` computation on a predictions file, against plain Python.
    Reward(reward::Args),
    /// Log parsing and grading of saved test logs.
    Grade(grade::Args),
    /// `correlate` on synthetic predictions.
    Correlate(correlate::Args),
    /// Harness overhead per prediction (everything but the test command) on a real engine.
    Harness(harness::Args),
    /// The engine's own cost of a job (create, start, run `true`, remove), no harness.
    Engine(engine::Args),
    /// The offline base image bootstrapped and imported from nothing (under a throwaway name).
    Base(base::Args),
    /// Writing a run's report.html and opening it in headless chromium.
    Html(html::Args),
    /// Loads on `swe-eval serve` over loopback: similarity, executed, grpo, queue, restart.
    Serve(serve::Args),
}

impl Args {
    /// What the chosen benchmark reads and writes, for the clobber check.
    pub fn io(&self) -> swe_eval_core::paths::IoPlan {
        use swe_eval_core::paths::{IoPlan, Output};
        match &self.target {
            Target::Reward(a) => {
                let mut plan = IoPlan::new().output_file(a.json.as_deref());
                if let Some(d) = &a.dataset {
                    plan = plan.input("--dataset", d);
                }
                if let Some(p) = &a.predictions {
                    plan = plan.input("--predictions", p);
                }
                plan
            }
            Target::Grade(a) => {
                let mut plan = IoPlan::new().output_file(a.json.as_deref());
                if let Some(d) = &a.dataset {
                    plan = plan.input("--dataset", d);
                }
                if let Some(p) = &a.predictions {
                    plan = plan.input_spec("--predictions", p);
                }
                if let Some(l) = &a.logs {
                    plan = plan.input("--logs", l);
                }
                plan
            }
            Target::Correlate(a) => {
                let plan = IoPlan::new().output_file(a.json.as_deref());
                match &a.write {
                    Some(w) => plan.output(Output::Folder(w.clone())),
                    None => plan,
                }
            }
            Target::Harness(a) => IoPlan::new().output_file(a.json.as_deref()),
            Target::Engine(a) => IoPlan::new().output_file(a.json.as_deref()),
            Target::Base(_) => IoPlan::new(),
            Target::Serve(a) => {
                let plan = IoPlan::new().output_file(a.json.as_deref());
                if a.mode == serve::Mode::Restart {
                    plan.output(Output::Folder(a.output.clone()))
                } else {
                    plan
                }
            }
            Target::Html(a) => match &a.output {
                Some(o) => IoPlan::new().output(Output::Folder(o.clone())),
                None => IoPlan::new(),
            },
        }
    }
}

/// Runs the chosen benchmark.
pub fn run(args: Args) -> CliResult {
    match args.target {
        Target::Reward(a) => reward::run(a),
        Target::Grade(a) => grade::run(a),
        Target::Correlate(a) => correlate::run(a),
        Target::Harness(a) => harness::run(a),
        Target::Engine(a) => engine::run(a),
        Target::Base(a) => base::run(a),
        Target::Html(a) => html::run(a),
        Target::Serve(a) => serve::run(a),
    }
}
