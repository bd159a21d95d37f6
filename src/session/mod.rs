//! One evaluation session below both faces: given an engine, a dataset and options, it
//! prepares and holds the images its predictions need, dispatches their jobs (the runner's
//! one dispatcher), removes what dead runs left and its own containers, and hands each verdict
//! back in memory as it is decided, through one call a Rust program can make
//! ([`Session::submit`], then await the [`Pending`]) with no state folder required.
//!
//! `run` is reading the inputs, a session, and writing the verdicts into the run's folder
//! (`orchestrate`); `serve` is HTTP, the content cache and the database over a session
//! (`evaluator`). Empty patches, identical patches and deadlines are decided once, in the
//! runner: an empty patch by `runner::decided_by_patch` (the dispatcher's, and
//! [`Session::decided_by_patch`] for `serve`'s answer in its acceptance), the rest in the
//! dispatcher.
//!
//! - `handle`: [`Session`] (open, submit, prepare, stop, interrupt, close).
//! - `options`: [`SessionOptions`]; `choices`: the user's choices of any face that executes
//!   ([`RunOptions`]), every default filled in in one place; `image_choices`: where images and
//!   repositories come from ([`ImageChoices`] to [`PrepareOptions`]).
//! - `prepare`: test specs, setups and image builds for instances ([`PrepareOptions`]).
//! - `images`: the preparation on demand, holds released and images removed at the end.
//! - `prep_times`: where image preparation's time went.
//! - `events`: what a session tells its listener ([`Event`]).

mod choices;
mod events;
mod handle;
mod image_choices;
mod images;
mod options;
mod prep_times;
mod prepare;

pub use choices::{time_run_id, RunOptions, DEFAULT_TIMEOUT, MINI_RUN_ID, MINI_TIMEOUT};
pub use events::{notice, Event, Level, Notice};
pub use handle::{Closed, Pending, RecipeError, Session, SessionError, Submit};
pub use image_choices::{
    absolute, absolute_repo_flag, default_build_jobs, durations_file, prepare_options,
    ImageChoices, OptionsError,
};
pub use images::{
    prepare_streaming, reap_dead_images, release_and_clean, ImageCounts, ImageState, Preparing,
};
pub use options::SessionOptions;
pub use prep_times::{log_line, PrepTimes, StageTimes};
pub use prepare::{build, no_spec_setup, setup, specs, unavailable, PrepareOptions, Specs};
