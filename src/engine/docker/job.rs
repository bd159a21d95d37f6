//! A job on the daemon: its container created, given its files and attached to before it may
//! start (so no output is missed, and the next jobs are ready while others run), started when
//! its gate lets it, its output read into a bounded head/tail buffer while it runs, waited for
//! under the job's deadline (killed with SIGKILL when it passes), inspected for its exit code
//! and OOM kill, then force-removed. Nothing waits for a stop timeout.

use std::pin::Pin;
use std::time::{Duration, Instant};

use bollard::container::LogOutput;
use bollard::errors::Error as DockerError;
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, InspectContainerOptions, KillContainerOptionsBuilder,
    StartContainerOptions, UploadToContainerOptionsBuilder, WaitContainerOptionsBuilder,
};
use futures_util::{FutureExt, Stream, StreamExt};
use tokio::task::JoinHandle;

use super::engine::DockerEngine;
use super::status::status_of;
use crate::engine::bounded::{HeadTail, Watch};
use crate::engine::podman;
use crate::engine::{tarball, EngineError, FileIn, JobOutput, JobSpec, Place};

/// How long the output stream may take to close after the main process ended or was killed.
const DRAIN_GRACE: Duration = Duration::from_secs(5);

/// How long a container may take to stop after SIGKILL before the job is an engine failure.
const KILL_GRACE: Duration = Duration::from_secs(30);

/// How many times the state of a job that may have been OOM-killed is read (see
/// [`DockerEngine::read_exit`]), and the pause between two reads.
const OOM_READS: usize = 4;
const OOM_PAUSE: Duration = Duration::from_millis(100);

/// The `/etc/hosts` Docker writes into a container with `network_mode: none`: a job without
/// network brings it itself when the daemon is told to set up no network at all.
const NO_NETWORK_HOSTS: &str = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n\
fe00::0\tip6-localnet\nff00::0\tip6-mcastprefix\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n";

/// A container's attached output, as bollard gives it.
type OutputStream = Pin<Box<dyn Stream<Item = Result<LogOutput, DockerError>> + Send>>;

/// A job's output as it is read: the attached stream, kept bounded (head and tail), watched
/// for the job's texts, and the error that cut it off, if any.
struct Reading {
    stream: OutputStream,
    /// The other half of the attachment, held as long as the stream is read.
    _input: Pin<Box<dyn tokio::io::AsyncWrite + Send>>,
    open: bool,
    kept: HeadTail,
    watch: Watch,
    /// When the main process started: the watched texts are timed from it.
    started: Instant,
    error: Option<String>,
}

impl Reading {
    /// Takes what the stream gave: output, an error (the stream is then over) or its end.
    fn take(&mut self, item: Option<Result<LogOutput, DockerError>>) {
        match item {
            Some(Ok(o)) => {
                let bytes = o.into_bytes();
                self.watch.feed(&bytes, self.started.elapsed());
                self.kept.push(&bytes);
            }
            Some(Err(e)) => {
                self.error = Some(e.to_string());
                self.open = false;
            }
            None => self.open = false,
        }
    }

    /// Reads what is left once the main process has ended: the stream closes when the
    /// container's processes are gone (at most [`DRAIN_GRACE`]).
    async fn drain(&mut self) {
        if !self.open {
            return;
        }
        let rest = async {
            while self.open {
                let item = self.stream.next().await;
                self.take(item);
            }
        };
        let _ = tokio::time::timeout(DRAIN_GRACE, rest).await;
    }

    /// Puts the output and the watched texts' times in `out`; returns the error that cut the
    /// stream off, if any.
    fn finish(self, out: &mut JobOutput) -> Option<String> {
        out.seen = self.watch.finish();
        let (output, dropped) = self.kept.finish();
        out.output = output;
        out.truncated_bytes = dropped;
        self.error
    }
}

/// How waiting for a job's main process ended.
type Exit = Result<(), EngineError>;

impl DockerEngine {
    /// The Docker engine prepares a job (create, files, attach) before it may start.
    pub(super) fn prepares_ahead(&self) -> bool {
        true
    }

    /// Jobs whose container has started and whose main process has not ended.
    pub(super) fn jobs_running(&self) -> Option<usize> {
        Some(self.running.get())
    }

    /// Runs one job to completion or deadline and removes its container.
    pub(super) async fn run_job(&self, job: JobSpec) -> Result<JobOutput, EngineError> {
        let t0 = Instant::now();
        let id = self.create(&job, None).await?;
        let mut out = JobOutput::default();
        let result = self.drive(&id, &job, t0, &mut out).await;
        let removed = self.force_remove(&id).await;
        // Teardown: reading the rest of the output, inspecting and removing.
        out.close_timing(t0);
        result?;
        removed?;
        Ok(out)
    }

    /// Everything between create and remove; the caller removes the container whatever happens.
    pub(super) async fn drive(
        &self,
        id: &str,
        job: &JobSpec,
        t0: Instant,
        out: &mut JobOutput,
    ) -> Result<(), EngineError> {
        let name = job.name.as_str();
        self.copy_files(id, job).await?;
        let attached = self.attach(id, name).await?;
        let place = take_place(job, t0, out).await?;
        self.docker
            .start_container(id, None::<StartContainerOptions>)
            .await
            .map_err(|e| start_error(name, e))?;
        let running = self.running.enter();
        let started = Instant::now();
        out.setup = started.duration_since(t0).saturating_sub(out.queued);
        let mut reading = Reading {
            stream: attached.output,
            _input: attached.input,
            open: true,
            kept: HeadTail::new(job.max_output_bytes),
            watch: Watch::new(&job.watch),
            started,
            error: None,
        };
        let exited = self.wait_for_exit(id, job, &mut reading, out).await;
        out.run = started.elapsed();
        exited?;
        reading.drain().await;
        // The main process has ended: the next prepared container may start.
        drop((place, running));
        let cut_off = reading.finish(out);
        self.read_exit(id, job, out).await?;
        // An output stream cut off while the job ran normally means the output is incomplete:
        // an infrastructure failure (e.g. a daemon restart), not a result.
        match (cut_off, out.timed_out) {
            (Some(message), false) => Err(EngineError::Logs {
                name: name.into(),
                message,
            }),
            _ => Ok(()),
        }
    }

    /// Copies the job's files into its container, with `/etc/hosts` for a job whose network
    /// the daemon does not set up ([`NO_NETWORK_HOSTS`]).
    async fn copy_files(&self, id: &str, job: &JobSpec) -> Result<(), EngineError> {
        let hosts = self.no_network_hook(job).then(|| FileIn {
            path: "/etc/hosts".into(),
            contents: NO_NETWORK_HOSTS.as_bytes().to_vec(),
            mode: 0o644,
        });
        if job.files.is_empty() && hosts.is_none() {
            return Ok(());
        }
        let copy_err = |message: String| EngineError::Copy {
            name: job.name.clone(),
            message,
        };
        let files = job.files.iter().chain(&hosts);
        let tar = tarball::files_archive(files).map_err(|e| copy_err(e.to_string()))?;
        let opts = UploadToContainerOptionsBuilder::default().path("/").build();
        self.docker
            .upload_to_container(id, Some(opts), bollard::body_full(tar.into()))
            .await
            .map_err(|e| copy_err(e.to_string()))
    }

    /// Attaches to the container's output before it starts, so that none is missed.
    async fn attach(
        &self,
        id: &str,
        name: &str,
    ) -> Result<bollard::container::AttachContainerResults, EngineError> {
        let opts = AttachContainerOptionsBuilder::default()
            .stdout(true)
            .stderr(true)
            .stream(true)
            .logs(false)
            .build();
        self.docker
            .attach_container(id, Some(opts))
            .await
            .map_err(|e| EngineError::Logs {
                name: name.into(),
                message: e.to_string(),
            })
    }

    /// Reads the output and waits for the main process together, until it exits or the
    /// deadline passes; at the deadline the container is killed and the job marked timed out,
    /// and a container still running [`KILL_GRACE`] later is an engine failure.
    async fn wait_for_exit(
        &self,
        id: &str,
        job: &JobSpec,
        reading: &mut Reading,
        out: &mut JobOutput,
    ) -> Exit {
        let name = job.name.as_str();
        let opts = WaitContainerOptionsBuilder::default()
            .condition("not-running")
            .build();
        let mut wait = Box::pin(self.docker.wait_container(id, Some(opts)));
        let deadline = tokio::time::sleep(job.timeout);
        tokio::pin!(deadline);
        let mut kill: Option<JoinHandle<Result<(), DockerError>>> = None;
        loop {
            tokio::select! {
                // Exit, then deadline, then output: a job that prints without pause must not
                // starve the deadline (the output branch is always ready).
                biased;
                w = wait.next() => return exit_of(name, w),
                _ = &mut deadline => {
                    if let Some(kill) = kill.take() {
                        return Err(still_running(name, kill));
                    }
                    out.timed_out = true;
                    // The kill runs on its own while this loop keeps reading: a job blocked on
                    // a full output pipe must be drained to die, and the wait says when it has.
                    kill = Some(self.spawn_kill(id));
                    deadline.as_mut().reset(tokio::time::Instant::now() + KILL_GRACE);
                }
                item = reading.stream.next(), if reading.open => reading.take(item),
            }
        }
    }

    /// Kills the container with SIGKILL, on a task of its own.
    fn spawn_kill(&self, id: &str) -> JoinHandle<Result<(), DockerError>> {
        let docker = self.docker.clone();
        let target = id.to_string();
        tokio::spawn(async move {
            let opts = KillContainerOptionsBuilder::default()
                .signal("SIGKILL")
                .build();
            match docker.kill_container(&target, Some(opts)).await {
                // 409: it stopped between the deadline and the kill.
                Err(e) if status_of(&e) == Some(409) => Ok(()),
                r => r,
            }
        })
    }

    /// Reads the ended container's exit code (kept unset for a job that timed out) and whether
    /// it was OOM-killed. The daemon records an OOM kill from an event that can land just
    /// after the exit: a SIGKILL exit (137) under a memory limit is read again a few times.
    async fn read_exit(
        &self,
        id: &str,
        job: &JobSpec,
        out: &mut JobOutput,
    ) -> Result<(), EngineError> {
        for attempt in 1..=OOM_READS {
            let info = self
                .docker
                .inspect_container(id, None::<InspectContainerOptions>)
                .await
                .map_err(|e| EngineError::Wait {
                    name: job.name.clone(),
                    message: format!("inspect: {e}"),
                })?;
            if let Some(state) = info.state {
                out.oom_killed = state.oom_killed.unwrap_or(false);
                if !out.timed_out {
                    out.exit_code = state.exit_code;
                }
            }
            let maybe_oom = out.exit_code == Some(137) && job.limits.memory_bytes.is_some();
            if out.oom_killed || !maybe_oom || attempt == OOM_READS {
                break;
            }
            tokio::time::sleep(OOM_PAUSE).await;
        }
        Ok(())
    }
}

/// Prepared: waits for a place among the running jobs at the job's gate (held until its main
/// process ends); [`EngineError::Withdrawn`] when the gate closes first. Times the wait.
async fn take_place(
    job: &JobSpec,
    t0: Instant,
    out: &mut JobOutput,
) -> Result<Option<Place>, EngineError> {
    let waiting = Instant::now();
    let place = match &job.gate {
        Some(gate) => match gate.enter().await {
            Some(place) => Some(place),
            None => {
                out.setup = waiting.duration_since(t0);
                return Err(EngineError::Withdrawn {
                    name: job.name.clone(),
                });
            }
        },
        None => None,
    };
    out.queued = waiting.elapsed();
    Ok(place)
}

/// What the wait's answer says: the main process ended (bollard reports a non-zero exit as an
/// error, and the inspection gives the code), or the wait itself failed.
fn exit_of(name: &str, waited: Option<Result<impl Sized, DockerError>>) -> Exit {
    match waited {
        None | Some(Ok(_)) => Ok(()),
        Some(Err(DockerError::DockerContainerWaitError { .. })) => Ok(()),
        Some(Err(e)) => Err(EngineError::Wait {
            name: name.into(),
            message: e.to_string(),
        }),
    }
}

/// A container still running [`KILL_GRACE`] after SIGKILL: why, if the kill failed.
fn still_running(name: &str, kill: JoinHandle<Result<(), DockerError>>) -> EngineError {
    let why = match kill.now_or_never() {
        Some(Ok(Err(e))) => format!("kill at deadline: {e}"),
        _ => format!("still running {KILL_GRACE:?} after SIGKILL"),
    };
    EngineError::Wait {
        name: name.into(),
        message: why,
    }
}

/// A failed start: the daemon's message, or, where the service's setup is at fault (which a
/// retry cannot fix), what to change.
fn start_error(name: &str, e: DockerError) -> EngineError {
    let message = e.to_string();
    match podman::start_advice(&message) {
        Some(advice) => EngineError::Setup {
            name: name.into(),
            message: format!("{message}\n  {advice}"),
        },
        None => EngineError::Start {
            name: name.into(),
            message,
        },
    }
}
