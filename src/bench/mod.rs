//! The benchmarks of `swe-eval bench`: each part of swe-eval timed on real or synthetic
//! inputs, one file per target, each taking plain options and returning its figures (the
//! command line parses the arguments and prints the figures, `cli::bench`). A layer beside
//! `orchestrate` and `evaluator`, below the faces: `bench harness` runs the harness through
//! `orchestrate`, `bench engine` and `bench base` the engine directly, and `bench serve` loads
//! a `swe-eval serve` process over loopback with the load generator here.
//!
//! - `reward`: the reward end to end against plain Python, and pathological patches.
//! - `grade`: parsing and grading saved test logs.
//! - `correlate`: the study on synthetic predictions.
//! - `harness`: the harness's overhead per prediction on a real engine (and the official
//!   harness's on the same tasks), and its memory with thousands of predictions queued.
//! - `engine`: the engine's own cost of a job, the floor under the harness's.
//! - `base`: the offline base image bootstrapped from nothing.
//! - `html`: `report.html` written and opened in headless chromium.
//! - `serve`: loads on `swe-eval serve` (similarity, executed, grpo, queue, restart).
//! - `load`: the bounded load generator and its small HTTP/1.1 client.
//! - `shared`: where the shared data the benchmarks read by default lies.
//! - `error`: why a benchmark could not finish.

mod base;
mod correlate;
mod engine;
mod error;
mod grade;
mod harness;
mod html;
mod load;
mod reward;
mod serve;
mod shared;

pub use base::{measure_base, BaseFigures};
pub use correlate::{measure_correlate, CorrelateFigures, CorrelateOptions};
pub use engine::{measure_engine, EngineFigures};
pub use error::BenchError;
pub use grade::{measure_grade, GradeFigures, GradeOptions};
pub use harness::{measure_harness, HarnessEvent, HarnessOptions, Phase};
pub use html::{measure_html, HtmlFigures, HtmlOptions};
pub use load::{run as run_load, Answer, Client, ClientError, Latencies, Load, LoadReport, Sample};
pub use reward::{
    measure_reward, Pathological, PythonBaseline, PythonFigures, RewardFigures, RewardOptions,
    Steps,
};
pub use serve::{
    measure_executed, measure_grpo, measure_queue, measure_restart, measure_similarity,
    GrpoFigures, Pacing, QueueFigures, RestartFigures, ServeFigures, ServeLoad,
};
