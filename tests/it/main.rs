//! All integration tests, in one binary (one link, shared helpers). Each module is one area.

mod common;
mod spec;
mod correlate;
mod grading;
mod mini;
mod engine;
mod images;
mod runner;
mod fuzz;
mod faults;
mod run_e2e;
mod hostile;
