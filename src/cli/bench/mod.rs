//! `swe-eval bench`: measure the speed of each part on real or synthetic inputs. One file per
//! target; each prints its figures and writes them as JSON when `--json` is given.

mod args;
pub mod correlate;
pub mod grade;
pub mod harness;
pub mod html;
pub mod reward;

pub use args::{run, Args, Target};
