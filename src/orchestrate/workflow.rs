//! A run from loaded inputs to its report: take the run's lock, keep what an earlier run with
//! the same id already decided (resume), hand the rest to a session (which prepares the images
//! beside the jobs), write each verdict into the run's folder as it comes (its log files, then
//! `verdict.json`), and at the end the run summaries. Nothing here prints: every step reports
//! through [`Event`]s, which the caller renders (the CLI draws two progress bars, images and
//! jobs, and prints notices).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};

use crate::engine::Engine;
use crate::images::CacheLevel;
use crate::runner::Setup;
use crate::runner::{
    self, Answer, Category, Decided, Key, Layout, RunConfig, RunError, RunEvent, RunInputs,
    RunReport, Verdict,
};
use crate::session::{Event, PrepTimes, PrepareOptions, Session, SessionOptions};
use swe_eval_core::dataset::Dataset;
use swe_eval_core::grading::Mode;
use swe_eval_core::predictions::Prediction;

/// What to run: the dataset, the predictions, and the instances the run covers.
pub struct Work<'a> {
    /// The dataset.
    pub dataset: &'a Dataset,
    /// The predictions to run.
    pub predictions: Vec<Prediction>,
    /// The instances the run covers (for the summaries' totals).
    pub instance_ids: Vec<String>,
}

/// The run's images: how to prepare them and which to keep afterwards.
pub struct ImagePolicy<'a> {
    /// How images are chosen and built.
    pub prepare: &'a PrepareOptions,
    /// Which images to keep after the run.
    pub keep: CacheLevel,
    /// Setups given ready-made, by instance id (their images are not prepared).
    pub setups: std::collections::HashMap<String, Arc<Setup>>,
}

/// Where a run writes, and what it writes at the end.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// The output folder.
    pub folder: PathBuf,
    /// Write the closing summaries (official summaries, JSONL, CSV, `report.html`).
    pub summaries: bool,
}

/// Runs `work` on `engine` into `output`: takes the run's lock (refused, before anything else,
/// when another live process holds it), keeps the verdicts an earlier run with the same id
/// left for the same patches, and hands the other predictions to a session, which prepares the
/// images they need (held for this run) beside their jobs; each verdict is written into the
/// prediction's folder as it comes (a write that fails stops dispatching: a full disk would
/// fail every job). `interrupts` delivers one message per Ctrl-C: the first stops dispatching
/// and starting builds (running jobs and builds finish), the second kills the jobs and
/// abandons the builds. Returns the run's report and where preparation's time went.
pub async fn execute<E: Engine>(
    engine: Arc<E>,
    work: Work<'_>,
    config: RunConfig,
    output: &RunOutput,
    images: ImagePolicy<'_>,
    mut interrupts: UnboundedReceiver<()>,
    events: UnboundedSender<Event>,
) -> Result<(RunReport, PrepTimes), RunError> {
    let started = Instant::now();
    let layout = Layout::new(&output.folder, &config.run_id);
    let _lock = runner::lock(&layout)?;
    let mut run = Recorder::new(&config, output.summaries, &events);

    // The predictions the dataset cannot run.
    let mut known: Vec<(Prediction, PathBuf)> = Vec::new();
    for p in &work.predictions {
        if work.dataset.get(&p.instance_id).is_none() {
            run.problem(format!(
                "prediction for {} (model {}, sample {}) skipped: instance not in the dataset",
                p.instance_id, p.model_name_or_path, p.sample
            ));
            continue;
        }
        run.planned += 1;
        let dir = layout.prediction_dir(&p.model_name_or_path, &p.instance_id, p.sample);
        known.push((p.clone(), dir));
    }

    let (stx, mut srx) = mpsc::unbounded_channel();
    let opts = SessionOptions {
        run: config.clone(),
        prepare: images.prepare.clone(),
        keep: images.keep,
        setups: images.setups,
    };
    let dataset = Arc::new(work.dataset.clone());
    let session = Session::open(engine, dataset, opts, stx).await?;

    // Resume: each earlier verdict kept, graded again, or run again (see `resume`).
    let (to_run, mut resumed) = resume(&session, known, &mut run).await;
    let submits: Vec<crate::session::Submit> =
        to_run.iter().map(|(p, _)| p.clone().into()).collect();
    let nothing_to_run = submits.is_empty();
    let pending = session.submit(submits);
    let mut answers: FuturesUnordered<_> = to_run
        .into_iter()
        .zip(pending)
        .map(|((p, dir), pending)| async move { (p, dir, pending.await) })
        .collect();
    // The plan is told (with the dispatcher's counts) before any verdict: answers that come
    // first wait for it.
    let mut planned = false;
    let mut early: Vec<(PathBuf, Box<Decided>)> = Vec::new();
    if nothing_to_run {
        run.planned_event(0, 0, 0, resumed.len());
        run.resume(std::mem::take(&mut resumed));
        planned = true;
    }
    let mut interrupts_open = true;
    let mut writes = tokio::task::JoinSet::new();
    let mut stopped = false;
    while !(answers.is_empty() && writes.is_empty() && early.is_empty()) {
        let mut decided: Vec<(PathBuf, Box<Decided>)> = Vec::new();
        tokio::select! {
            biased;
            msg = interrupts.recv(), if interrupts_open => match msg {
                Some(()) => session.interrupt(),
                None => interrupts_open = false,
            },
            ev = srx.recv() => match ev {
                Some(Event::Run(RunEvent::Submitted { jobs, shared, empty, .. })) if !planned => {
                    run.planned_event(jobs, shared, empty, resumed.len());
                    run.resume(std::mem::take(&mut resumed));
                    planned = true;
                    decided = std::mem::take(&mut early);
                }
                Some(Event::Run(RunEvent::Submitted { .. })) => {}
                Some(ev) => {
                    let _ = events.send(ev);
                }
                None => {}
            },
            Some(done) = writes.join_next(), if !writes.is_empty() => {
                let (verdict, written): (Verdict, Result<(), Unsaved>) =
                    done.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
                match written {
                    Ok(()) => run.record(verdict, false),
                    Err(e) => {
                        run.output_failed(e.to_string());
                        if !stopped {
                            stopped = true;
                            session.stop(None);
                        }
                    }
                }
            }
            Some((_, dir, answer)) = answers.next(), if !answers.is_empty() => {
                if let Answer::Decided(d) = answer {
                    if planned {
                        decided.push((dir, d));
                    } else {
                        early.push((dir, d));
                    }
                }
            }
        }
        for (dir, d) in decided {
            let Decided { verdict, logs, .. } = *d;
            writes.spawn_blocking(move || {
                let written = write_prediction(&dir, &verdict, logs.as_deref());
                (verdict, written)
            });
        }
    }
    let closed = session.close().await.unwrap_or_default();
    // What the session said while closing (images removed, holds released, problems).
    while let Ok(ev) = srx.try_recv() {
        let _ = events.send(ev);
    }
    let report = run.finish(&layout, &work, closed.driven, started);
    Ok((report, closed.prep))
}

/// Predictions whose instances' setups are given ready-made (their images are there), with the
/// instances the run covers: nothing is prepared (the trivial tasks of `bench harness` and of
/// the runner's real-engine tests).
#[derive(Debug, Clone, Default)]
pub struct Ready {
    /// Each instance's setup, by instance id.
    pub setups: std::collections::HashMap<String, Arc<Setup>>,
    /// The predictions.
    pub predictions: Vec<Prediction>,
    /// The instances the run covers (for the summaries' totals).
    pub instance_ids: Vec<String>,
}

/// [`execute`] on predictions whose setups are given (`ready`), writing into `folder` with the
/// closing summaries; returns the run's report.
pub async fn execute_ready<E: Engine>(
    engine: Arc<E>,
    ready: Ready,
    config: RunConfig,
    folder: &Path,
    interrupts: UnboundedReceiver<()>,
    events: UnboundedSender<Event>,
) -> Result<RunReport, RunError> {
    let dataset = Dataset::new(ready.setups.values().map(|s| s.instance.clone()).collect());
    let prepare = PrepareOptions {
        flavour: swe_eval_core::spec::Flavour::Debian,
        namespace: None,
        ca_cert: None,
        repos: Default::default(),
        repo_cache: folder.join("repos"),
        base_cache: None,
        build_logs: folder.join("logs").join("build_images"),
        parallel: 1,
    };
    let work = Work {
        dataset: &dataset,
        predictions: ready.predictions,
        instance_ids: ready.instance_ids,
    };
    let images = ImagePolicy {
        prepare: &prepare,
        keep: CacheLevel::Instance,
        setups: ready.setups,
    };
    let output = RunOutput {
        folder: folder.to_path_buf(),
        summaries: true,
    };
    let (report, _) = execute(engine, work, config, &output, images, interrupts, events).await?;
    Ok(report)
}

/// What becomes of each prediction an earlier run with the same id may have decided: its
/// verdict kept when everything that decides it is what this run would use
/// (`swe_eval_core::identity`); graded again from its saved log when only the grading inputs
/// changed (the new verdict and `report.json` written now); run again otherwise, with why.
/// Returns the predictions to run and the verdicts that stand (kept or graded again).
async fn resume<E: Engine>(
    session: &Session<E>,
    known: Vec<(Prediction, PathBuf)>,
    run: &mut Recorder<'_>,
) -> (Vec<(Prediction, PathBuf)>, Vec<Verdict>) {
    use swe_eval_core::identity::{Change, Ended, Reuse};
    let ids: Vec<&str> = known.iter().map(|(p, _)| p.instance_id.as_str()).collect();
    let setups = session.setups(&ids);
    let cfg = session.job_config();
    let mut to_run = Vec::new();
    let mut stands = Vec::new();
    let mut regrade = Vec::new();
    for (p, dir) in known {
        let old = match runner::read_verdict(&dir.join(swe_eval_core::report::VERDICT_FILE)) {
            Ok(v) => v,
            Err(runner::VerdictError::Read { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                to_run.push((p, dir));
                continue;
            }
            Err(_) => {
                run.rerun("its verdict.json cannot be read");
                to_run.push((p, dir));
                continue;
            }
        };
        let Some(setup) = setups.get(&p.instance_id) else {
            to_run.push((p, dir));
            continue;
        };
        let want = runner::recipe(setup, &cfg).identity(&p.patch_hash());
        let reuse = if old.category == Category::InfraError {
            run.rerun("infrastructure error");
            to_run.push((p, dir));
            continue;
        } else if old.patch_hash != want.patch {
            Reuse::Rerun(vec![Change::Patch])
        } else {
            match &old.identity {
                Some(had) => had.reuse(
                    &want,
                    &Ended {
                        timed_out: old.timed_out,
                        oom_killed: old.oom_killed,
                        needs_network: old.needs_network,
                        run_secs: old.run_secs,
                        empty_patch: old.category == Category::EmptyPatch,
                    },
                ),
                None => Reuse::Rerun(vec![Change::Unknown]),
            }
        };
        match reuse {
            Reuse::Keep => {
                run.resume.reused += 1;
                stands.push(old);
            }
            Reuse::Rerun(changes) => {
                run.rerun(&join(&changes));
                to_run.push((p, dir));
            }
            Reuse::Regrade(changes) => regrade.push((p, dir, old, want, changes, setup.clone())),
        }
    }
    // Grading again reads and writes files: on blocking threads, all at once.
    let cfg2 = cfg.clone();
    let graded = tokio::task::spawn_blocking(move || {
        regrade
            .into_iter()
            .map(|(p, dir, old, want, changes, setup)| {
                let done = regrade_saved(&setup, &p, &dir, &old, want, &cfg2);
                (p, dir, changes, done)
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
    for (p, dir, changes, done) in graded {
        match done {
            Ok(v) => {
                *run.resume.regraded.entry(join(&changes)).or_default() += 1;
                stands.push(v);
            }
            Err(why) => {
                run.rerun(&why.to_string());
                to_run.push((p, dir));
            }
        }
    }
    (to_run, stands)
}

/// The changes, as one cause.
fn join(changes: &[swe_eval_core::identity::Change]) -> String {
    changes
        .iter()
        .map(|c| c.as_str())
        .collect::<Vec<_>>()
        .join(" and ")
}

/// Grades `old`'s saved test output again under `setup` (see `runner::regrade`) and writes the
/// new `report.json` (or removes a stale one) and then `verdict.json`; or says why it cannot
/// (the log is gone, a write failed): then the prediction runs again.
fn regrade_saved(
    setup: &Setup,
    p: &Prediction,
    dir: &Path,
    old: &Verdict,
    want: swe_eval_core::identity::Identity,
    cfg: &runner::JobConfig,
) -> Result<Verdict, Unsaved> {
    let log = std::fs::read_to_string(dir.join(swe_eval_core::report::TEST_OUTPUT_FILE))
        .map_err(|_| Unsaved::LogGone)?;
    let mode = if p.is_empty_patch() {
        runner::PatchMode::None
    } else {
        runner::PatchMode::Apply
    };
    let (mut v, report) = runner::regrade(setup, p.patch(), mode, old, &log, cfg);
    v.identity = Some(want);
    v.run_id = cfg.run_id.clone();
    let report_path = dir.join(swe_eval_core::report::REPORT_FILE);
    match report {
        Some(text) => swe_eval_core::fsutil::write_atomic(&report_path, text.as_bytes())
            .map_err(Unsaved::Report)?,
        None => {
            let _ = std::fs::remove_file(&report_path);
        }
    }
    runner::write_verdict(dir, &v).map_err(Unsaved::Verdict)?;
    Ok(v)
}

/// Writes a prediction's log files (when it ran) and then its `verdict.json`.
fn write_prediction(
    dir: &Path,
    verdict: &Verdict,
    logs: Option<&runner::JobLogs>,
) -> Result<(), Unsaved> {
    if let Some(logs) = logs {
        logs.write(dir).map_err(Unsaved::Logs)?;
    }
    runner::write_verdict(dir, verdict).map_err(Unsaved::Verdict)
}

/// Why a prediction's files were not written (or its saved log could not be graded again).
#[derive(Debug, thiserror::Error)]
enum Unsaved {
    /// Grading again needs the saved test output, which is not there.
    #[error("its saved test output is gone")]
    LogGone,
    /// The new `report.json` could not be written.
    #[error("report.json not written: {0}")]
    Report(swe_eval_core::fsutil::WriteError),
    /// The job's log files could not be written; its verdict is not written either.
    #[error("log files not written, verdict dropped: {0}")]
    Logs(swe_eval_core::fsutil::WriteError),
    /// `verdict.json` could not be written.
    #[error("verdict not written: {0}")]
    Verdict(swe_eval_core::fsutil::WriteError),
}

/// The run's record of its verdicts and problems, and the events that report them.
struct Recorder<'a> {
    run_id: String,
    network: bool,
    strict: bool,
    summaries: bool,
    events: &'a UnboundedSender<Event>,
    verdicts: BTreeMap<Key, Verdict>,
    recorded: usize,
    resumed: usize,
    planned: usize,
    problems: Vec<String>,
    output_failures: usize,
    resume: runner::Resumption,
}

impl<'a> Recorder<'a> {
    fn new(config: &RunConfig, summaries: bool, events: &'a UnboundedSender<Event>) -> Self {
        Recorder {
            run_id: config.run_id.clone(),
            network: config.network,
            strict: config.strict,
            summaries,
            events,
            verdicts: BTreeMap::new(),
            recorded: 0,
            resumed: 0,
            planned: 0,
            problems: Vec::new(),
            output_failures: 0,
            resume: Default::default(),
        }
    }

    fn emit(&self, e: RunEvent) {
        let _ = self.events.send(Event::Run(e));
    }

    fn problem(&mut self, message: String) {
        self.emit(RunEvent::Problem {
            message: message.clone(),
        });
        self.problems.push(message);
    }

    /// A prediction an earlier run decided runs again, for `why`.
    fn rerun(&mut self, why: &str) {
        *self.resume.rerun.entry(why.to_string()).or_default() += 1;
    }

    fn output_failed(&mut self, message: String) {
        self.output_failures += 1;
        self.problem(message);
    }

    /// The plan is made: the predictions the run covers, of which `resumed` are kept.
    fn planned_event(&self, jobs: usize, shared: usize, empty: usize, resumed: usize) {
        self.emit(RunEvent::Planned {
            predictions: self.planned,
            resumed,
            empty,
            jobs,
            shared,
        });
    }

    fn resume(&mut self, verdicts: Vec<Verdict>) {
        for v in verdicts {
            self.record(v, true);
        }
    }

    fn record(&mut self, v: Verdict, resumed: bool) {
        self.resumed += usize::from(resumed);
        self.recorded += 1;
        self.emit(RunEvent::Verdict {
            verdict: Box::new(v.clone()),
            resumed,
        });
        if self.summaries {
            self.verdicts
                .insert((v.model.clone(), v.sample, v.instance_id.clone()), v);
        }
    }

    /// The report, after the closing files are written (a summary that cannot be written is
    /// a problem reported with the rest: every verdict is already on disk, and a rerun with
    /// the same id writes the summaries).
    fn finish(
        mut self,
        layout: &Layout,
        work: &Work<'_>,
        driven: runner::Driven,
        started: Instant,
    ) -> RunReport {
        self.problems.extend(driven.problems);
        let mode = if self.strict {
            Mode::Strict
        } else {
            Mode::Official
        };
        let inputs = RunInputs {
            dataset: work.dataset,
            predictions: &work.predictions,
            instance_ids: &work.instance_ids,
        };
        let files = if self.summaries {
            match runner::write_summaries(layout, inputs, &self.verdicts, mode, &driven.unstopped) {
                Ok(files) => files,
                Err(e) => {
                    self.problems.push(format!(
                        "run summaries not written: {e}; the verdicts are saved, run again with --run-id {} to write them",
                        self.run_id
                    ));
                    Vec::new()
                }
            }
        } else {
            Vec::new()
        };
        let tally = driven.tally;
        let mut report = RunReport {
            run_id: self.run_id,
            predictions: self.planned,
            resumed: self.resumed,
            jobs_run: tally.jobs_run,
            infra_retries: tally.infra_retries,
            interrupted: tally.interrupts > 0,
            killed: tally.killed,
            leftover_containers: driven.leftovers,
            unstopped_containers: driven.unstopped,
            files,
            wall: started.elapsed(),
            network: self.network,
            time: tally.time,
            ..Default::default()
        };
        for v in self.verdicts.values() {
            *report.counts.entry(v.category).or_default() += 1;
            *report.strict_counts.entry(v.strict_category).or_default() += 1;
            report.needs_network += usize::from(v.needs_network);
        }
        report.not_run = self.planned.saturating_sub(self.recorded);
        report.problems = self.problems;
        report.output_failures = self.output_failures;
        report.resume = self.resume;
        report
    }
}
