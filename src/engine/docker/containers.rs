//! Containers: a job's created with its limits and without the daemon's log files (a leftover
//! of the same name replaced), holds (never started, they keep an image from being removed),
//! listed by label, and removed at once (killed, no stop timeout).

use std::collections::BTreeMap;

use bollard::models::{ContainerCreateBody, HostConfig, HostConfigLogConfig, Mount};
use bollard::query_parameters::{
    CreateContainerOptions, CreateContainerOptionsBuilder, ListContainersOptionsBuilder,
    RemoveContainerOptionsBuilder,
};

use super::engine::DockerEngine;
use super::filters::{label_filters, listing_failed};
use super::status::status_of;
use crate::engine::podman;
use crate::engine::{EngineError, JobSpec, Resource};

/// The log configuration of every container: none, so nothing is written to the daemon's log
/// files (a job's output is read from its attached stream).
fn no_log_files() -> Option<HostConfigLogConfig> {
    Some(HostConfigLogConfig {
        typ: Some("none".into()),
        config: None,
    })
}

impl DockerEngine {
    /// Kills and removes container `id` (or name) at once; one already gone, or being removed
    /// by someone else, is no error.
    pub(super) async fn force_remove(&self, id: &str) -> Result<(), EngineError> {
        let opts = RemoveContainerOptionsBuilder::default()
            .force(true)
            .v(true)
            .build();
        match self.docker.remove_container(id, Some(opts)).await {
            Ok(()) => Ok(()),
            // Already gone (removed by a reaper, or never created): the goal is reached.
            Err(e) if status_of(&e) == Some(404) => Ok(()),
            // Removal already in progress by someone else.
            Err(e) if status_of(&e) == Some(409) && e.to_string().contains("in progress") => Ok(()),
            Err(e) => Err(EngineError::Remove {
                name: id.into(),
                message: e.to_string(),
            }),
        }
    }

    /// Creates `job`'s container (not started), with `mounts` (named volumes) if any; returns
    /// its id. A container of the same name left by an interrupted attempt is replaced.
    pub(super) async fn create(
        &self,
        job: &JobSpec,
        mounts: Option<Vec<Mount>>,
    ) -> Result<String, EngineError> {
        // Only the limits the daemon applies are sent (a rootless Podman service ignores the
        // others; the run has said so at its start).
        let can = self.limit_support();
        let memory = job.limits.memory_bytes.filter(|_| can.memory);
        let host_config = HostConfig {
            mounts,
            nano_cpus: job
                .limits
                .cpus
                .filter(|_| can.cpu)
                .map(|c| (c * 1e9) as i64),
            memory,
            // Swap equal to memory means no swap: the memory limit is the real limit.
            memory_swap: memory,
            pids_limit: job.limits.pids.filter(|_| can.pids),
            ulimits: self.podman.as_ref().and_then(|p| p.ulimits.clone()),
            network_mode: Some(if job.network { "bridge" } else { "none" }.into()),
            cgroup_parent: self.cgroup_parent.clone(),
            auto_remove: Some(false),
            log_config: no_log_files(),
            ..Default::default()
        };
        let body = ContainerCreateBody {
            image: Some(job.image.clone()),
            cmd: Some(job.command.clone()),
            env: Some(job.env.clone()),
            working_dir: job.working_dir.clone(),
            labels: Some(job.labels.clone().into_iter().collect()),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            // No network: `network_mode: none` (a namespace of its own, loopback only) and, on
            // Docker, `network_disabled` as well. Without it the daemon runs a hook of its own
            // at every start (a second copy of itself, about 0.2 s of CPU, most of a container
            // start's cost); with it the daemon writes no `/etc/hosts`, so the job brings
            // the one it would have written (`job.rs`) and `localhost` resolves.
            network_disabled: Some(self.no_network_hook(job)),
            host_config: Some(host_config),
            ..Default::default()
        };
        let create = || {
            let opts = CreateContainerOptionsBuilder::default()
                .name(&job.name)
                .build();
            self.docker.create_container(Some(opts), body.clone())
        };
        let created = match create().await {
            // A container of the same name left by an earlier, interrupted attempt.
            Err(e) if podman::is_name_conflict(status_of(&e), &e.to_string()) => {
                self.force_remove(&job.name).await?;
                create().await
            }
            r => r,
        };
        match created {
            Ok(r) => Ok(r.id),
            Err(e) if status_of(&e) == Some(404) => Err(EngineError::ImageMissing {
                image: job.image.clone(),
            }),
            Err(e) => Err(EngineError::Create {
                name: job.name.clone(),
                message: e.to_string(),
            }),
        }
    }

    /// Creates (never starts) a container from `image` so that the image cannot be removed
    /// while it stands; returns its id. [`EngineError::ImageMissing`] when `image` is absent.
    pub(super) async fn create_hold(
        &self,
        image: &str,
        labels: BTreeMap<String, String>,
    ) -> Result<String, EngineError> {
        let body = ContainerCreateBody {
            image: Some(image.to_string()),
            // Never run; an image without a command still needs one to be created from.
            cmd: Some(vec!["true".into()]),
            labels: Some(labels.into_iter().collect()),
            network_disabled: Some(true),
            host_config: Some(HostConfig {
                network_mode: Some("none".into()),
                log_config: no_log_files(),
                ..Default::default()
            }),
            ..Default::default()
        };
        match self
            .docker
            .create_container(None::<CreateContainerOptions>, body)
            .await
        {
            Ok(r) => Ok(r.id),
            Err(e) if status_of(&e) == Some(404) => Err(EngineError::ImageMissing {
                image: image.into(),
            }),
            Err(e) => Err(EngineError::Create {
                name: format!("hold on {image}"),
                message: e.to_string(),
            }),
        }
    }

    /// Containers carrying all of `labels` (running or not).
    pub(super) async fn list_containers(
        &self,
        labels: BTreeMap<String, String>,
    ) -> Result<Vec<Resource>, EngineError> {
        let filters = label_filters(&labels);
        let opts = ListContainersOptionsBuilder::default()
            .all(true)
            .filters(&filters)
            .build();
        let list = self
            .docker
            .list_containers(Some(opts))
            .await
            .map_err(listing_failed("containers"))?;
        Ok(list
            .into_iter()
            .map(|c| Resource {
                id: c.id.unwrap_or_default(),
                name: c
                    .names
                    .and_then(|n| n.into_iter().next())
                    .map(|n| n.trim_start_matches('/').to_string())
                    .unwrap_or_default(),
                labels: c.labels.unwrap_or_default().into_iter().collect(),
            })
            .collect())
    }

    /// Kills and removes a container at once (no stop timeout).
    pub(super) async fn remove_container(&self, id: &str) -> Result<(), EngineError> {
        self.force_remove(id).await
    }
}
