//! swe-eval's pure core: everything of the harness that reads, computes and writes files
//! without running a container, an async runtime or an HTTP client.
//!
//! - Inputs: dataset rows (`dataset`: JSON, JSON Lines, Parquet) and predictions
//!   (`predictions`), with every problem named by file, line and field.
//! - Unified diffs (`unidiff`, a port of the Python `unidiff` package) and the Python string
//!   behaviours they and the reward reproduce (`pystr`).
//! - The test spec of an instance (`spec`): its eval script, Dockerfiles and log parser, as
//!   the official harness renders them, and the Debian flavour's frozen environments.
//! - The official log parsers (`logparse`) and grading (`grading`: the official verdict and
//!   the strict one); what produced a verdict and whether it may stand for another run
//!   (`identity`: `run`'s resume and `serve`'s cache both decide by it).
//! - The SWE-RL similarity reward (`reward`).
//! - The official report files and the run's own reports (`report`), the bundled mini
//!   benchmark (`mini`), the study of how execution and the reward agree (`study`) and the
//!   comparison of two runs (`compare`).
//! - Leaves every layer uses: safe writes (`fsutil`), safe names and outputs that are not
//!   inputs (`paths`), what kind of failure an error is (`failure`), documented ranges of
//!   counts (`bounds`), where a repository comes from and running git (`repos`), and the
//!   versions of swe-eval's own formats (`wire`).
//!
//! A training framework can link this crate for the reward and the grading alone; the
//! `swe-eval` crate (engine, images, runner, session, the command line and the server)
//! depends on it. The compiler holds the rule that the core runs no container: none of the
//! crates that could (bollard, tokio, hyper) is among its dependencies.

pub mod bounds;
pub mod compare;
pub mod dataset;
pub mod failure;
pub mod fsutil;
pub mod grading;
pub mod identity;
pub mod logparse;
pub mod mini;
pub mod paths;
pub mod predictions;
pub mod pystr;
pub mod report;
pub mod repos;
pub mod reward;
pub mod spec;
pub mod study;
pub mod unidiff;
pub mod wire;
