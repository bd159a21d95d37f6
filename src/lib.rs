//! swe-eval: an evaluation harness for SWE-bench Verified.
//!
//! Three jobs share this library and the pure core beneath it (`swe_eval_core`: readers,
//! diffs, log parsers, grading, eval scripts, the reward, the study and the comparison):
//! executing predictions in Docker and grading them as the official harness does
//! (`orchestrate` drives `runner`, `engine`, `images`), scoring them without execution with
//! the SWE-RL similarity reward, and studying how the two agree. Data flows one way between
//! modules; each takes plain values from the one before it. ARCHITECTURE.md at the repository
//! root draws the layers and says what each module may import.

pub mod bench;
// The command line is the binary's (src/main.rs): public for it, not part of the library's API.
#[doc(hidden)]
pub mod cli;
pub mod engine;
pub mod evaluator;
pub mod hub;
pub mod images;
pub mod memory;
pub mod orchestrate;
pub mod owner;
pub mod priority;
pub mod runner;
pub mod serve;
pub mod session;
pub mod submit;
pub mod trivial;
