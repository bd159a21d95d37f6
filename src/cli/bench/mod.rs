//! `swe-eval bench`: measure the speed of each part on real or synthetic inputs. One file per
//! target, each its arguments and the rendering of its figures: the measuring is
//! [`crate::bench`]'s. Each prints its figures and writes them as JSON when `--json` is given.

mod args;
mod base;
mod correlate;
mod engine;
mod grade;
mod harness;
mod html;
mod reward;
mod serve;

pub use args::{run, Args};
