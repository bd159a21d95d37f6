//! `--cpu-weight`: every container the engine creates from then on goes under the harness's
//! own cgroup, whose weight is written on this machine (see `engine/cgroup.rs`), and why that
//! cannot be done with a given daemon ([`CpuWeightError`]).

use std::path::{Path, PathBuf};

use bollard::models::{
    SystemInfoCgroupDriverEnum as Driver, SystemInfoCgroupVersionEnum as Version,
};

use super::engine::DockerEngine;
use crate::engine::cgroup::{self, CgroupError, Layout};

/// Why the containers cannot be given a CPU weight with this daemon.
#[derive(Debug, thiserror::Error)]
pub enum CpuWeightError {
    /// The daemon is Podman.
    #[error("--cpu-weight is for --engine docker (not Podman)")]
    Podman,
    /// The daemon is not on this machine, where the weight is written.
    #[error(
        "--cpu-weight writes the weight on this machine, and the daemon at {endpoint} is not on it"
    )]
    NotLocal {
        /// The daemon's address.
        endpoint: String,
    },
    /// The daemon did not say how it manages cgroups.
    #[error("cannot ask the daemon at {endpoint} how it manages cgroups: {message}")]
    Ask {
        /// The daemon's address.
        endpoint: String,
        /// The client's error.
        message: String,
    },
    /// The daemon leaves cgroups to systemd (or another driver), which ignores the parent.
    #[error("--cpu-weight needs the daemon's cgroupfs driver; this daemon's is {driver} (give the daemon's own parent cgroup a weight instead)")]
    Driver {
        /// The daemon's cgroup driver.
        driver: String,
    },
    /// The daemon names no cgroup version.
    #[error("the daemon names no cgroup version it runs on ({reported})")]
    Version {
        /// What it said.
        reported: String,
    },
    /// The cgroup could not be made or weighed.
    #[error(transparent)]
    Cgroup(#[from] CgroupError),
}

impl swe_eval_core::failure::Classify for CpuWeightError {
    // Each case is the machine or the daemon not being what `--cpu-weight` needs: the user
    // changes the command or the set-up.
    fn kind(&self) -> swe_eval_core::failure::ErrorKind {
        swe_eval_core::failure::ErrorKind::Usage
    }
}

impl DockerEngine {
    /// Puts every container this engine creates from now on (jobs and builds) under the
    /// harness's cgroup, with CPU `weight` on cgroup v2's scale (100 is a process's default;
    /// see `cgroup.rs`). Needs Docker on this machine (a Unix socket) managing cgroups itself
    /// (its `cgroupfs` driver) and the right to write the cgroup file system (root). Returns
    /// the file the weight was written to.
    pub async fn weigh_containers(&mut self, weight: u32) -> Result<PathBuf, CpuWeightError> {
        if self.podman.is_some() {
            return Err(CpuWeightError::Podman);
        }
        if !cgroup::is_local(&self.endpoint) {
            return Err(CpuWeightError::NotLocal {
                endpoint: self.endpoint.clone(),
            });
        }
        let info = self.docker.info().await.map_err(|e| CpuWeightError::Ask {
            endpoint: self.endpoint.clone(),
            message: e.to_string(),
        })?;
        if info.cgroup_driver != Some(Driver::CGROUPFS) {
            let driver = info
                .cgroup_driver
                .map_or_else(|| "unknown".to_string(), |d| d.to_string());
            return Err(CpuWeightError::Driver { driver });
        }
        let layout = match info.cgroup_version {
            Some(Version::_1) => Layout::V1,
            Some(Version::_2) => Layout::V2,
            other => {
                return Err(CpuWeightError::Version {
                    reported: format!("{other:?}"),
                })
            }
        };
        let path = cgroup::prepare(Path::new("/sys/fs/cgroup"), layout, weight)?;
        self.cgroup_parent = Some(format!("/{}", cgroup::PARENT));
        Ok(path)
    }
}
