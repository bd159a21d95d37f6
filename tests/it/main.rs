//! All integration tests, in one binary (one link, shared helpers). Each module is one area.

mod apply;
mod common;

mod careless;
mod client;
mod compare;
mod compiler_cache;
mod correlate;
mod daemons;
mod engine;
mod envpins;
mod faults_daemon;
mod faults_disk;
mod faults_run;
mod fuzz;
mod grading;
mod help;
mod history;
mod hostile;
mod hub;
mod image_set;
mod images;
mod layers;
mod mini;
mod podman;
mod report_html;
mod reward;
mod run_e2e;
mod runner;
mod safeio;
mod serve;
mod spec;
mod submit;
mod swarm;
mod swarm_restart;
mod tasks;
