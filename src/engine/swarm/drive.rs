//! Driving a job's service from creation to end: polling its task, following its output,
//! the deadline and the faults.

use std::time::{Duration, Instant};

use bollard::query_parameters::LogsOptionsBuilder;
use futures_util::StreamExt;

use super::inputs;
use super::logs;
use super::*;
use crate::engine::{EngineError, JobOutput, JobSpec};

/// Task polling: fast until the task starts (short jobs end within a second or two), then
/// slower.
const POLL_STARTING: Duration = Duration::from_millis(100);
const POLL_RUNNING: Duration = Duration::from_millis(400);
/// Bound on the read that completes a task's output (a node that vanished never answers).
const LOG_READ_TIMEOUT: Duration = Duration::from_secs(60);

/// Why the rest of a task's output could not be read.
#[derive(Debug, thiserror::Error)]
pub(super) enum OutputReadError {
    /// The daemon's log stream failed.
    #[error("{0}")]
    Daemon(bollard::errors::Error),
    /// The stream did not end in time (a node that vanished never answers).
    #[error("no end of the task's output within {timeout:?}")]
    NoEnd {
        /// How long it was waited for.
        timeout: Duration,
    },
}

impl SwarmEngine {
    /// Reads the output the followed stream has not given yet (non-following, from its last
    /// timestamp).
    pub(super) async fn complete_output(
        &self,
        id: &str,
        reader: &mut logs::Reader,
    ) -> Result<(), OutputReadError> {
        let opts = LogsOptionsBuilder::default()
            .follow(false)
            .stdout(true)
            .stderr(true)
            .timestamps(true)
            .since(reader.since())
            .build();
        let mut skip = reader.resume();
        let mut stream = self.docker().service_logs(id, Some(opts));
        let read = async {
            while let Some(item) = stream.next().await {
                let bytes = item.map_err(OutputReadError::Daemon)?.into_bytes();
                if skip.is_new(&bytes) {
                    reader.push(&bytes);
                }
            }
            Ok(())
        };
        tokio::time::timeout(LOG_READ_TIMEOUT, read)
            .await
            .map_err(|_| OutputReadError::NoEnd {
                timeout: LOG_READ_TIMEOUT,
            })?
    }

    /// Everything between the service's creation and its removal.
    pub(super) async fn drive(
        &self,
        id: &str,
        job: &JobSpec,
        image: &str,
        t0: Instant,
        out: &mut JobOutput,
        node_of_job: &mut Option<String>,
    ) -> Result<(), EngineError> {
        let name = job.name.as_str();
        let mut reader = logs::Reader::new(job.max_output_bytes);
        type LogStream<'a> = futures_util::stream::BoxStream<
            'a,
            Result<bollard::container::LogOutput, bollard::errors::Error>,
        >;
        let mut follow: Option<LogStream<'_>> = None;
        let mut started: Option<Instant> = None;
        let mut log_error: Option<String> = None;
        let exit: Option<i64> = loop {
            let now = Instant::now();
            let poll = if started.is_some() {
                POLL_RUNNING
            } else {
                POLL_STARTING
            };
            let wake = match started {
                Some(s) => (s + job.timeout).min(now + poll),
                None => now + poll,
            };
            let tick = tokio::time::sleep_until(wake.into());
            tokio::pin!(tick);
            let polled = loop {
                tokio::select! {
                    biased;
                    _ = &mut tick => break true,
                    chunk = async { follow.as_mut().unwrap().next().await }, if follow.is_some() => match chunk {
                        Some(Ok(o)) => reader.push(&o.into_bytes()),
                        Some(Err(e)) => { log_error = Some(e.to_string()); follow = None; }
                        None => follow = None,
                    },
                }
            };
            debug_assert!(polled);
            if let Some(s) = started {
                if s.elapsed() >= job.timeout {
                    out.timed_out = true;
                    break None;
                }
            }
            let Some(task) = self.task_of(id).await? else {
                if t0.elapsed() > self.opts.start_timeout {
                    return Err(EngineError::Start {
                        name: name.into(),
                        message: format!("no task within {:?}", self.opts.start_timeout),
                    });
                }
                continue;
            };
            let status = task.status.clone().unwrap_or_default();
            let last_status = format!(
                "{} {}",
                status.state.map(|s| s.to_string()).unwrap_or_default(),
                status.message.unwrap_or_default()
            );
            if node_of_job.is_none() {
                if let Some(node) = task.node_id.clone().filter(|n| !n.is_empty()) {
                    self.place().started(image, &node);
                    *node_of_job = Some(node);
                }
            }
            if let Some(node) = node_of_job.as_deref() {
                let nodes = self.nodes().await?;
                let view = nodes.iter().find(|n| n.id == node);
                if out.node.is_none() {
                    // Nodes may share a host name: the id tells them apart.
                    out.node = Some(match view {
                        Some(n) => format!("{} ({node})", n.hostname),
                        None => node.to_string(),
                    });
                }
                if !view.is_some_and(|n| n.ready) {
                    self.place().forget(node);
                    return Err(EngineError::Wait {
                        name: name.into(),
                        message: format!(
                            "node {} is down or gone",
                            view.map_or(node, |n| n.hostname.as_str())
                        ),
                    });
                }
            }
            let begin = |started: &mut Option<Instant>, out: &mut JobOutput| {
                if started.is_none() {
                    *started = Some(Instant::now());
                    out.setup = t0.elapsed();
                }
            };
            match phase(&task) {
                TaskPhase::Waiting => {
                    if t0.elapsed() > self.opts.start_timeout {
                        return Err(EngineError::Start {
                            name: name.into(),
                            message: format!(
                                "task not started within {:?} ({last_status})",
                                self.opts.start_timeout
                            ),
                        });
                    }
                }
                TaskPhase::Running => {
                    if started.is_none() {
                        begin(&mut started, out);
                        let opts = LogsOptionsBuilder::default()
                            .follow(true)
                            .stdout(true)
                            .stderr(true)
                            .timestamps(true)
                            .build();
                        follow = Some(self.docker().service_logs(id, Some(opts)).boxed());
                    }
                }
                TaskPhase::Exited(code) => {
                    begin(&mut started, out);
                    break Some(code);
                }
                TaskPhase::Rejected(why) => {
                    if why.contains("No such image") || why.contains("not found") {
                        return Err(EngineError::ImageMissing {
                            image: image.into(),
                        });
                    }
                    return Err(EngineError::Start {
                        name: name.into(),
                        message: why,
                    });
                }
                TaskPhase::Lost(why) => {
                    return Err(EngineError::Wait {
                        name: name.into(),
                        message: why,
                    })
                }
            }
        };
        drop(follow);
        out.run = started.map_or(Duration::ZERO, |s| s.elapsed());
        // The rest of the output (for a timed-out task: up to now, before it is killed).
        if let Err(e) = self.complete_output(id, &mut reader).await {
            log_error.get_or_insert(e.to_string());
        }
        out.exit_code = exit;
        let (output, dropped) = reader.buf.finish();
        out.output = output;
        out.truncated_bytes = dropped;
        if exit == Some(inputs::BOOTSTRAP_EXIT)
            && out.output.starts_with(inputs::BOOTSTRAP_FAILED.as_bytes())
        {
            return Err(EngineError::Copy {
                name: name.into(),
                message: String::from_utf8_lossy(&out.output).trim().to_string(),
            });
        }
        // Output cut off while the job ran normally: incomplete, an infrastructure failure.
        if let (Some(message), false) = (log_error, out.timed_out) {
            return Err(EngineError::Logs {
                name: name.into(),
                message,
            });
        }
        Ok(())
    }
}
