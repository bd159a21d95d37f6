//! All integration tests, in one binary (one link, shared helpers). Each module is one area.

mod common;
mod spec;
mod correlate;
mod mini;
mod engine;
mod reward;
mod images;
mod grading;
mod fuzz;
mod faults;
mod runner;
