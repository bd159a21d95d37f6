//! swe-eval: an evaluation harness for SWE-bench Verified.
//!
//! Three jobs share this library: executing predictions in Docker and grading them as the
//! official harness does (`orchestrate` drives `runner`, `engine`, `images`, `spec`,
//! `logparse`, `grading`, `report`), scoring them without execution with the SWE-RL
//! similarity reward (`reward`), and studying how the two agree (`study`); `compare` says
//! whether runs differ beyond noise. Data flows one way between modules; each takes plain
//! values from the one before it. ARCHITECTURE.md at the repository root draws the layers and
//! says what each module may import.

pub mod bounds;
// The command line is the binary's (src/main.rs): public for it, not part of the library's API.
#[doc(hidden)]
pub mod cli;
pub mod compare;
pub mod dataset;
pub mod engine;
pub mod evaluator;
pub mod failure;
pub mod fsutil;
pub mod grading;
pub mod images;
pub mod logparse;
pub mod mini;
pub mod orchestrate;
pub mod owner;
pub mod paths;
pub mod predictions;
pub mod priority;
pub mod pystr;
pub mod report;
pub mod repos;
pub mod reward;
pub mod runner;
pub mod serve;
pub mod spec;
pub mod study;
pub mod submit;
pub mod trivial;
pub mod unidiff;
pub mod wire;
