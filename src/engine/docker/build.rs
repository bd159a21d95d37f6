//! Images built: from a Dockerfile and a build context (`docker build`), or by running a
//! command in a container and committing it (as `docker build` makes a `RUN` step's layer, with
//! named volumes mounted for the command only); each returns the build's log.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use bollard::errors::Error as DockerError;
use bollard::models::{BuildInfo, ContainerConfig, Mount, MountType};
use bollard::query_parameters::{BuildImageOptionsBuilder, CommitContainerOptionsBuilder};
use futures_util::StreamExt;

use super::engine::DockerEngine;
use super::images::split_tag;
use super::status::status_of;
use super::tar_stream::tar_chunks;
use crate::engine::{
    BuildSettings, CommitBuild, EngineError, JobOutput, JobSpec, Limits, TarSource,
};

/// A build in a container ([`DockerEngine::commit_build`]) still running after this long is a
/// failure (an instance build takes minutes; hours mean something hangs).
const COMMIT_BUILD_TIMEOUT_SECS: u64 = 3 * 3600;

/// The most of a build command's output kept as its log (head and tail).
const COMMIT_BUILD_LOG_BYTES: usize = 16 << 20;

/// Appends what one message of a build's stream says to `log`.
fn build_log_line(info: &BuildInfo, log: &mut String) {
    if let Some(s) = &info.stream {
        log.push_str(s);
    } else if let Some(s) = &info.status {
        log.push_str(s);
        log.push('\n');
    }
}

impl DockerEngine {
    /// Builds `tag` from a tar build context holding a `Dockerfile`; returns the build log. A
    /// failed build is [`EngineError::Build`] with the log up to the failure.
    pub(super) async fn build_image_with(
        &self,
        tag: &str,
        context_tar: impl Into<TarSource> + Send,
        labels: BTreeMap<String, String>,
        settings: BuildSettings,
    ) -> Result<String, EngineError> {
        let fail = |message: String, log: String| EngineError::Build {
            tag: tag.into(),
            message,
            log,
        };
        let labels: HashMap<String, String> = labels.into_iter().collect();
        let opts = BuildImageOptionsBuilder::default()
            .dockerfile("Dockerfile")
            .t(tag)
            .rm(true)
            .forcerm(true)
            .labels(&labels)
            .networkmode(if settings.network { "default" } else { "none" })
            .build();
        let context = tar_chunks(context_tar.into())
            .await
            .map_err(|e| fail(e.to_string(), e.to_string()))?;
        let mut stream = self.docker.build_image(
            opts,
            None,
            Some(bollard::body_try_stream(context.map(|r| r.map(Into::into)))),
        );
        let mut log = String::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(info) => build_log_line(&info, &mut log),
                Err(e) => {
                    let message = match &e {
                        DockerError::DockerStreamError { error } => error.clone(),
                        other => other.to_string(),
                    };
                    log.push_str(&message);
                    log.push('\n');
                    return Err(fail(message, log));
                }
            }
        }
        Ok(log)
    }

    /// Makes image `b.tag` by running `b.command` in a container from `b.from` and committing
    /// it; returns the command's output, the build log. A command that fails is
    /// [`EngineError::Build`] with the log.
    pub(super) async fn commit_build(&self, b: CommitBuild) -> Result<String, EngineError> {
        let fail = |message: String, log: String| EngineError::Build {
            tag: b.tag.clone(),
            message,
            log,
        };
        let from = match self.docker.inspect_image(&b.from).await {
            Ok(i) => i,
            Err(e) if status_of(&e) == Some(404) => {
                return Err(EngineError::ImageMissing {
                    image: b.from.clone(),
                })
            }
            Err(e) => {
                return Err(EngineError::Image {
                    image: b.from.clone(),
                    message: e.to_string(),
                })
            }
        };
        for (volume, _) in &b.volumes {
            self.create_volume(volume, &b.volume_labels)
                .await
                .map_err(|e| fail(format!("volume {volume}: {e}"), String::new()))?;
        }
        let mounts = b
            .volumes
            .iter()
            .map(|(volume, target)| Mount {
                typ: Some(MountType::VOLUME),
                source: Some(volume.clone()),
                target: Some(target.clone()),
                ..Default::default()
            })
            .collect();
        let job = build_job(&b);
        let t0 = Instant::now();
        let id = self.create(&job, Some(mounts)).await?;
        let mut out = JobOutput::default();
        let driven = self.drive(&id, &job, t0, &mut out).await;
        let log = String::from_utf8_lossy(&out.output).into_owned();
        let committed = match driven {
            Err(e) => Err(e),
            Ok(()) if out.timed_out => Err(fail(
                format!("still running after {COMMIT_BUILD_TIMEOUT_SECS} s"),
                log.clone(),
            )),
            Ok(()) if out.exit_code != Some(0) => Err(fail(
                format!(
                    "the command exited with {}",
                    out.exit_code
                        .map_or("no code".to_string(), |c| c.to_string())
                ),
                log.clone(),
            )),
            Ok(()) => {
                // The image keeps the starting image's command, not the build's.
                let cmd = from.config.as_ref().and_then(|c| c.cmd.as_ref());
                self.commit(&id, &b, cmd)
                    .await
                    .map_err(|e| fail(format!("commit: {e}"), log.clone()))
            }
        };
        let removed = self.force_remove(&id).await;
        committed?;
        removed?;
        Ok(log)
    }

    /// Commits container `id` as `b.tag`, with `b.changes` and the command `cmd`.
    async fn commit(
        &self,
        id: &str,
        b: &CommitBuild,
        cmd: Option<&Vec<String>>,
    ) -> Result<(), DockerError> {
        let (repo, tag) = split_tag(&b.tag);
        let mut changes = b.changes.clone();
        if let Some(cmd) = cmd {
            changes.push(format!(
                "CMD {}",
                serde_json::to_string(cmd).unwrap_or_else(|_| "[]".into())
            ));
        }
        let opts = CommitContainerOptionsBuilder::default()
            .container(id)
            .repo(repo)
            .tag(tag)
            .pause(false)
            .changes(&changes.join("\n"))
            .build();
        self.docker
            .commit_container(opts, ContainerConfig::default())
            .await
            .map(|_| ())
    }
}

/// The job that runs a build's command: no limits, the build's deadline and log bound.
fn build_job(b: &CommitBuild) -> JobSpec {
    JobSpec {
        image: b.from.clone(),
        name: b.name.clone(),
        labels: b.labels.clone(),
        files: b.files.clone(),
        command: b.command.clone(),
        env: Vec::new(),
        working_dir: None,
        limits: Limits {
            cpus: None,
            memory_bytes: None,
            pids: None,
        },
        network: b.network,
        timeout: Duration::from_secs(COMMIT_BUILD_TIMEOUT_SECS),
        max_output_bytes: COMMIT_BUILD_LOG_BYTES,
        watch: Vec::new(),
        gate: None,
    }
}
