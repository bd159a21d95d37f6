//! The Docker implementation of `Engine`, for a Docker daemon or a Podman service behind its
//! Docker-compatible API; with `swarm/`, the only code in the crate that imports bollard. One
//! file per concern: connecting and what the daemon says about itself (`connect.rs`, Podman's
//! side in `podman_side.rs`), the containers' CPU weight (`cpu_weight.rs`), containers
//! (`containers.rs`), a job from create to remove (`job.rs`), builds (`build.rs`), images
//! (`images.rs`) and their archives (`archive.rs`), volumes (`volumes.rs`); the type and its
//! `Engine` implementation in `engine.rs`, and what several share in `filters.rs`
//! (label filters), `status.rs` (an error's HTTP status) and `tar_stream.rs` (a tar as a
//! request body).

mod archive;
mod build;
mod connect;
mod containers;
mod cpu_weight;
mod engine;
mod filters;
mod images;
mod job;
mod podman_side;
mod status;
mod tar_stream;
mod volumes;

pub use connect::Daemon;
pub use cpu_weight::CpuWeightError;
pub use engine::DockerEngine;
pub(super) use filters::label_filters;
pub(super) use images::split_tag;
pub(super) use status::status_of;
