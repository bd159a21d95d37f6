//! An in-memory `Engine` for unit tests of the runner and the image plan: jobs answer from
//! scripts chosen by image (and optionally by a predicate on the job), images appear when
//! built, imported or pulled, faults can be injected, and every call is recorded.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::bounded::HeadTail;
use super::{
    BuildSettings, Engine, EngineError, EngineInfo, JobOutput, JobSpec, Resource, TarSource,
};

/// One recorded engine call.
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    /// [`Engine::info`].
    Info,
    /// [`Engine::image_exists`] of this image.
    ImageExists(String),
    /// [`Engine::build_image_with`] (or `build_image`).
    BuildImage {
        /// The tag built.
        tag: String,
        /// The labels given.
        labels: BTreeMap<String, String>,
        /// Whether the `RUN` steps had network access.
        network: bool,
    },
    /// [`Engine::import_image`].
    ImportImage {
        /// The tag imported.
        tag: String,
        /// The labels given.
        labels: BTreeMap<String, String>,
    },
    /// [`Engine::tag_image`].
    TagImage {
        /// The existing image.
        image: String,
        /// The name it was given.
        new_name: String,
    },
    /// [`Engine::pull_image`] of this image.
    PullImage(String),
    /// [`Engine::remove_image`] of this image.
    RemoveImage(String),
    /// [`Engine::run_job`].
    RunJob {
        /// The job's image.
        image: String,
        /// The job's container name.
        name: String,
        /// The job's main process.
        command: Vec<String>,
    },
    /// [`Engine::list_containers`] with these labels.
    ListContainers(BTreeMap<String, String>),
    /// [`Engine::remove_container`] of this id.
    RemoveContainer(String),
    /// [`Engine::create_hold`] on this image.
    CreateHold(String),
    /// [`Engine::list_images`] with these labels.
    ListImages(BTreeMap<String, String>),
    /// [`Engine::remove_volume`] of this volume.
    RemoveVolume(String),
}

/// A job script: given the job, what it produced (or which engine error it met).
pub type Script = Arc<dyn Fn(&JobSpec) -> Result<JobOutput, EngineError> + Send + Sync>;

type Matcher = Arc<dyn Fn(&JobSpec) -> bool + Send + Sync>;

struct Rule {
    image: Option<String>,
    matches: Option<Matcher>,
    script: Script,
}

#[derive(Default)]
struct State {
    calls: Vec<Call>,
    jobs: Vec<JobSpec>,
    images: BTreeMap<String, BTreeMap<String, String>>,
    pullable: BTreeSet<String>,
    failing_builds: BTreeMap<String, String>,
    /// (part of a tag, log): builds of tags containing it fail.
    failing_parts: Vec<(String, String)>,
    /// (part of a tag, delay): builds of tags containing it take this long.
    build_delays: Vec<(String, Duration)>,
    rules: Vec<Rule>,
    job_faults: VecDeque<EngineError>,
    containers: Vec<Resource>,
    /// Hold container id -> the image it stands on.
    holds: BTreeMap<String, String>,
    /// Holds created so far: each gets a new id, whatever was removed since.
    holds_made: usize,
    /// Named volumes and their labels.
    volumes: BTreeMap<String, BTreeMap<String, String>>,
    /// Volumes a container uses (their removal is refused).
    volumes_in_use: BTreeSet<String>,
    delay: Duration,
    /// Prepares ahead like the Docker engine: waits at the job's gate before "starting".
    ahead: bool,
    /// The CPUs [`Engine::info`] reports (`None`: it says nothing).
    cpus: Option<usize>,
    /// Jobs between start and end now, and the most at once so far.
    running: usize,
    max_running: usize,
}

/// The fake engine. Cheap to share: clones see the same state.
#[derive(Clone, Default)]
pub struct FakeEngine {
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for FakeEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeEngine").finish_non_exhaustive()
    }
}

/// A successful job's output: exit code and text.
pub fn exited(code: i64, output: &str) -> JobOutput {
    JobOutput {
        exit_code: Some(code),
        output: output.as_bytes().to_vec(),
        ..Default::default()
    }
}

/// A job killed at its deadline.
pub fn timed_out(output: &str) -> JobOutput {
    JobOutput {
        timed_out: true,
        output: output.as_bytes().to_vec(),
        ..Default::default()
    }
}

impl FakeEngine {
    /// An engine with no images, containers, scripts or faults.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A test that panicked while holding the lock already failed; keep the state readable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes `image` present locally.
    pub fn add_image(&self, image: &str) -> &Self {
        self.lock().images.insert(image.into(), BTreeMap::new());
        self
    }

    /// Makes `image` available to `pull_image` (it is not present until pulled).
    pub fn add_pullable(&self, image: &str) -> &Self {
        self.lock().pullable.insert(image.into());
        self
    }

    /// Makes the build of `tag` fail with `log`.
    pub fn fail_build(&self, tag: &str, log: &str) -> &Self {
        self.lock().failing_builds.insert(tag.into(), log.into());
        self
    }

    /// Makes the build of every tag containing `part` fail with `log`.
    pub fn fail_builds_containing(&self, part: &str, log: &str) -> &Self {
        self.lock().failing_parts.push((part.into(), log.into()));
        self
    }

    /// Builds of tags containing `part` take `delay` (on tokio's clock; the first rule that
    /// matches counts).
    pub fn delay_builds_containing(&self, part: &str, delay: Duration) -> &Self {
        self.lock().build_delays.push((part.into(), delay));
        self
    }

    /// Jobs on `image` answer with `script` (the first matching rule wins, in the order added).
    pub fn on_image(
        &self,
        image: &str,
        script: impl Fn(&JobSpec) -> Result<JobOutput, EngineError> + Send + Sync + 'static,
    ) -> &Self {
        self.lock().rules.push(Rule {
            image: Some(image.into()),
            matches: None,
            script: Arc::new(script),
        });
        self
    }

    /// Jobs for which `matches` holds answer with `script`.
    pub fn on_job(
        &self,
        matches: impl Fn(&JobSpec) -> bool + Send + Sync + 'static,
        script: impl Fn(&JobSpec) -> Result<JobOutput, EngineError> + Send + Sync + 'static,
    ) -> &Self {
        self.lock().rules.push(Rule {
            image: None,
            matches: Some(Arc::new(matches)),
            script: Arc::new(script),
        });
        self
    }

    /// The next `run_job` calls fail with these errors, in order, before any script runs.
    pub fn inject_job_fault(&self, error: EngineError) -> &Self {
        self.lock().job_faults.push_back(error);
        self
    }

    /// Every job takes this long (on tokio's clock, so paused-time tests stay instant).
    pub fn set_job_delay(&self, delay: Duration) -> &Self {
        self.lock().delay = delay;
        self
    }

    /// Makes [`Engine::info`] report `cpus` CPUs, which bound the jobs run at once.
    pub fn set_cpus(&self, cpus: usize) -> &Self {
        self.lock().cpus = Some(cpus);
        self
    }

    /// Makes the engine prepare ahead ([`Engine::prepares_ahead`]): each job waits at its
    /// gate before it "starts" (and is withdrawn when the gate closes first).
    pub fn set_prepares_ahead(&self) -> &Self {
        self.lock().ahead = true;
        self
    }

    /// The most jobs that were running (started, not ended) at once.
    pub fn max_running(&self) -> usize {
        self.lock().max_running
    }

    /// Pretends a container exists (e.g. one left behind by an earlier run) for reap tests.
    pub fn add_container(&self, resource: Resource) -> &Self {
        self.lock().containers.push(resource);
        self
    }

    /// Makes the named volume `name`, labelled `labels`, exist.
    pub fn add_volume(&self, name: &str, labels: BTreeMap<String, String>) -> &Self {
        self.lock().volumes.insert(name.into(), labels);
        self
    }

    /// Pretends a container uses volume `name`: removing it is refused until
    /// [`FakeEngine::release_volume`].
    pub fn use_volume(&self, name: &str) -> &Self {
        self.lock().volumes_in_use.insert(name.into());
        self
    }

    /// The container that used volume `name` is gone.
    pub fn release_volume(&self, name: &str) -> &Self {
        self.lock().volumes_in_use.remove(name);
        self
    }

    /// Named volumes present now.
    pub fn volumes(&self) -> Vec<String> {
        self.lock().volumes.keys().cloned().collect()
    }

    /// Every call made so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.lock().calls.clone()
    }

    /// The jobs run so far, in call order.
    pub fn jobs(&self) -> Vec<JobSpec> {
        self.lock().jobs.clone()
    }

    /// Images present now.
    pub fn images(&self) -> Vec<String> {
        self.lock().images.keys().cloned().collect()
    }

    fn record(&self, call: Call) {
        self.lock().calls.push(call);
    }
}

fn has_labels(have: &BTreeMap<String, String>, want: &BTreeMap<String, String>) -> bool {
    want.iter()
        .all(|(k, v)| have.get(k).is_some_and(|h| v.is_empty() || h == v))
}

/// The objects of `all` (name -> labels) carrying `want`, as resources named and known by
/// their name.
fn labelled(
    all: &BTreeMap<String, BTreeMap<String, String>>,
    want: &BTreeMap<String, String>,
) -> Vec<Resource> {
    all.iter()
        .filter(|(_, l)| has_labels(l, want))
        .map(|(name, l)| Resource {
            id: name.clone(),
            name: name.clone(),
            labels: l.clone(),
        })
        .collect()
}

impl Engine for FakeEngine {
    async fn info(&self) -> Result<EngineInfo, EngineError> {
        self.record(Call::Info);
        Ok(EngineInfo {
            api_version: "1.41".into(),
            server_version: "fake".into(),
            product: "fake".into(),
            limitations: Vec::new(),
            cpus: self.lock().cpus,
        })
    }

    fn prepares_ahead(&self) -> bool {
        self.lock().ahead
    }

    fn jobs_running(&self) -> Option<usize> {
        Some(self.lock().running)
    }

    async fn image_exists(&self, image: &str) -> Result<bool, EngineError> {
        self.record(Call::ImageExists(image.into()));
        Ok(self.lock().images.contains_key(image))
    }

    async fn build_image_with(
        &self,
        tag: &str,
        _context_tar: impl Into<TarSource> + Send,
        labels: BTreeMap<String, String>,
        settings: BuildSettings,
    ) -> Result<String, EngineError> {
        let delay = {
            let mut s = self.lock();
            s.calls.push(Call::BuildImage {
                tag: tag.into(),
                labels: labels.clone(),
                network: settings.network,
            });
            s.build_delays
                .iter()
                .find(|(part, _)| tag.contains(part.as_str()))
                .map(|(_, d)| *d)
        };
        if let Some(d) = delay {
            tokio::time::sleep(d).await;
        }
        let mut s = self.lock();
        let failing = s
            .failing_parts
            .iter()
            .find(|(part, _)| tag.contains(part.as_str()))
            .map(|(_, log)| log.clone());
        if let Some(log) = s.failing_builds.get(tag).cloned().or(failing) {
            return Err(EngineError::Build {
                tag: tag.into(),
                message: "scripted failure".into(),
                log,
            });
        }
        s.images.insert(tag.into(), labels);
        Ok(format!("built {tag}\n"))
    }

    async fn import_image(
        &self,
        tag: &str,
        _rootfs_tar: impl Into<TarSource> + Send,
        labels: BTreeMap<String, String>,
    ) -> Result<(), EngineError> {
        let mut s = self.lock();
        s.calls.push(Call::ImportImage {
            tag: tag.into(),
            labels: labels.clone(),
        });
        s.images.insert(tag.into(), labels);
        Ok(())
    }

    async fn tag_image(&self, image: &str, new_name: &str) -> Result<(), EngineError> {
        let mut s = self.lock();
        s.calls.push(Call::TagImage {
            image: image.into(),
            new_name: new_name.into(),
        });
        let Some(labels) = s.images.get(image).cloned() else {
            return Err(EngineError::ImageMissing {
                image: image.into(),
            });
        };
        s.images.insert(new_name.into(), labels);
        Ok(())
    }

    async fn pull_image(&self, image: &str) -> Result<(), EngineError> {
        let mut s = self.lock();
        s.calls.push(Call::PullImage(image.into()));
        if !s.pullable.contains(image) {
            return Err(EngineError::Pull {
                image: image.into(),
                message: "not found in the fake registry".into(),
            });
        }
        s.images.insert(image.into(), BTreeMap::new());
        Ok(())
    }

    async fn remove_image(&self, image: &str) -> Result<(), EngineError> {
        let mut s = self.lock();
        s.calls.push(Call::RemoveImage(image.into()));
        if let Some(id) = s.holds.iter().find(|(_, i)| *i == image).map(|(id, _)| id) {
            return Err(EngineError::ImageInUse {
                image: image.into(),
                message: format!("held by container {id}"),
            });
        }
        s.images.remove(image);
        Ok(())
    }

    async fn create_hold(
        &self,
        image: &str,
        labels: BTreeMap<String, String>,
    ) -> Result<String, EngineError> {
        let mut s = self.lock();
        s.calls.push(Call::CreateHold(image.into()));
        if !s.images.contains_key(image) {
            return Err(EngineError::ImageMissing {
                image: image.into(),
            });
        }
        // Never derived from what is left: after removals that would give a live hold's id.
        let id = format!("hold-{}", s.holds_made);
        s.holds_made += 1;
        s.holds.insert(id.clone(), image.into());
        s.containers.push(Resource {
            id: id.clone(),
            name: id.clone(),
            labels,
        });
        Ok(id)
    }

    async fn run_job(&self, job: JobSpec) -> Result<JobOutput, EngineError> {
        let (script, delay) = {
            let mut s = self.lock();
            s.calls.push(Call::RunJob {
                image: job.image.clone(),
                name: job.name.clone(),
                command: job.command.clone(),
            });
            s.jobs.push(job.clone());
            if let Some(e) = s.job_faults.pop_front() {
                return Err(e);
            }
            if !s.images.contains_key(&job.image) {
                return Err(EngineError::ImageMissing {
                    image: job.image.clone(),
                });
            }
            let script = s
                .rules
                .iter()
                .find(|r| {
                    r.image.as_ref().is_none_or(|i| *i == job.image)
                        && r.matches.as_ref().is_none_or(|m| m(&job))
                })
                .map(|r| r.script.clone());
            (script, s.delay)
        };
        let ahead = self.lock().ahead;
        let place = match (&job.gate, ahead) {
            (Some(gate), true) => match gate.enter().await {
                Some(place) => Some(place),
                None => return Err(EngineError::Withdrawn { name: job.name }),
            },
            _ => None,
        };
        {
            let mut s = self.lock();
            s.running += 1;
            s.max_running = s.max_running.max(s.running);
        }
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        self.lock().running -= 1;
        drop(place);
        let mut out = match script {
            Some(script) => script(&job)?,
            None => exited(0, ""),
        };
        // The same bound as the real engine, so runner tests see truncation as they would.
        let mut buf = HeadTail::new(job.max_output_bytes);
        buf.push(&out.output);
        let (output, dropped) = buf.finish();
        out.output = output;
        out.truncated_bytes += dropped;
        if out.timed_out {
            out.exit_code = None;
        }
        Ok(out)
    }

    async fn list_containers(
        &self,
        labels: BTreeMap<String, String>,
    ) -> Result<Vec<Resource>, EngineError> {
        let mut s = self.lock();
        s.calls.push(Call::ListContainers(labels.clone()));
        Ok(s.containers
            .iter()
            .filter(|c| has_labels(&c.labels, &labels))
            .cloned()
            .collect())
    }

    async fn remove_container(&self, id: &str) -> Result<(), EngineError> {
        let mut s = self.lock();
        s.calls.push(Call::RemoveContainer(id.into()));
        s.containers.retain(|c| c.id != id && c.name != id);
        s.holds.remove(id);
        Ok(())
    }

    async fn list_images(
        &self,
        labels: BTreeMap<String, String>,
    ) -> Result<Vec<Resource>, EngineError> {
        let mut s = self.lock();
        s.calls.push(Call::ListImages(labels.clone()));
        Ok(labelled(&s.images, &labels))
    }

    async fn remove_volume(&self, name: &str) -> Result<(), EngineError> {
        let mut s = self.lock();
        s.calls.push(Call::RemoveVolume(name.into()));
        if s.volumes_in_use.contains(name) {
            return Err(EngineError::VolumeInUse {
                name: name.into(),
                message: "volume is in use".into(),
            });
        }
        s.volumes.remove(name);
        Ok(())
    }

    async fn list_volumes(
        &self,
        labels: BTreeMap<String, String>,
    ) -> Result<Vec<Resource>, EngineError> {
        Ok(labelled(&self.lock().volumes, &labels))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Limits;

    fn job(image: &str, cmd: &str) -> JobSpec {
        JobSpec {
            image: image.into(),
            name: format!("job-{cmd}"),
            labels: BTreeMap::new(),
            files: vec![],
            command: vec![cmd.into()],
            env: vec![],
            working_dir: None,
            limits: Limits::default(),
            network: false,
            timeout: Duration::from_secs(1),
            max_output_bytes: 8,
            watch: Vec::new(),
            gate: None,
        }
    }

    #[tokio::test]
    async fn scripts_answer_by_image_and_predicate_and_calls_are_recorded() {
        let e = FakeEngine::new();
        e.add_image("a").add_image("b");
        e.on_job(|j| j.command[0] == "loop", |_| Ok(timed_out("zzz")));
        e.on_image("a", |_| Ok(exited(3, "0123456789")));
        let out = e.run_job(job("a", "x")).await.unwrap();
        assert_eq!(out.exit_code, Some(3));
        assert_eq!(out.output.len(), 8);
        assert_eq!(out.truncated_bytes, 2);
        let out = e.run_job(job("b", "loop")).await.unwrap();
        assert!(out.timed_out && out.exit_code.is_none());
        assert_eq!(e.run_job(job("b", "y")).await.unwrap().exit_code, Some(0));
        assert!(matches!(
            e.run_job(job("c", "y")).await,
            Err(EngineError::ImageMissing { .. })
        ));
        assert_eq!(e.jobs().len(), 4);
        assert_eq!(
            e.calls()[0],
            Call::RunJob {
                image: "a".into(),
                name: "job-x".into(),
                command: vec!["x".into()]
            }
        );
    }

    #[tokio::test]
    async fn faults_come_first_then_scripts() {
        let e = FakeEngine::new();
        e.add_image("a");
        e.inject_job_fault(EngineError::Start {
            name: "n".into(),
            message: "daemon restarting".into(),
        });
        let first = e.run_job(job("a", "x")).await.unwrap_err();
        assert!(first.is_transient());
        assert!(e.run_job(job("a", "x")).await.is_ok());
    }

    #[tokio::test]
    async fn images_builds_pulls_and_label_listing() {
        let e = FakeEngine::new();
        e.fail_build("bad", "step 3 failed");
        e.add_pullable("reg/x:latest");
        let labels = BTreeMap::from([("swe-eval".to_string(), "1".to_string())]);
        assert!(e.build_image("good", vec![], labels.clone()).await.is_ok());
        match e.build_image("bad", vec![], labels.clone()).await {
            Err(EngineError::Build { log, .. }) => assert_eq!(log, "step 3 failed"),
            other => panic!("unexpected {other:?}"),
        }
        assert!(e.pull_image("reg/y:latest").await.is_err());
        e.pull_image("reg/x:latest").await.unwrap();
        assert!(e.image_exists("reg/x:latest").await.unwrap());
        let listed = e.list_images(labels).await.unwrap();
        assert_eq!(
            listed.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
            vec!["good"]
        );
    }
}
