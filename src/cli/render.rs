//! The terminal side of a run: the workflow's events rendered (notices on stderr, the
//! progress bars of images and jobs while the plan executes), Ctrl-C and SIGTERM wired to the runner while it executes, and
//! the run's closing lines.

use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;

use super::progress::Feed;
use crate::runner::{Category, RunReport, TimeSpent};
use crate::session::{Event, Level, Notice, PrepTimes};

/// Renders `events` until the channel closes. While the plan executes, the progress bar is
/// drawn and each Ctrl-C or SIGTERM is sent to `interrupts`; outside it, both keep their
/// default (the process ends; the next run reaps what it leaves).
pub async fn render(mut events: UnboundedReceiver<Event>, interrupts: UnboundedSender<()>) {
    let visible = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut executing: Option<Executing> = None;
    let mut images = 0;
    let mut warnings = super::problems::Bounded::default();
    while let Some(ev) = events.recv().await {
        let feed = match ev {
            Event::Preparing { instances, flavour } => {
                eprintln!(
                    "preparing images for {instances} instances ({flavour} flavour); \
                     each one's jobs start as soon as its image is ready"
                );
                match &executing {
                    Some(_) => Some(Feed::Images(instances)),
                    None => {
                        images += instances;
                        None
                    }
                }
            }
            Event::Notice(n) => {
                match n.level {
                    Level::Warning => warnings.line(&notice_line(&n)),
                    Level::Note => eprintln!("{}", notice_line(&n)),
                }
                None
            }
            Event::Executing => {
                executing = Some(Executing::start(visible, images, interrupts.clone()));
                None
            }
            Event::Run(e) => Some(Feed::Run(e)),
            Event::Build(e) => Some(Feed::Build(e)),
            Event::ImageDone { ok, .. } => Some(Feed::ImageDone { ok }),
            Event::Executed => {
                if let Some(x) = executing.take() {
                    x.end().await;
                }
                None
            }
            Event::ImagesRemoved { count } => {
                eprintln!("removed {count} image(s) the cache level does not keep");
                None
            }
        };
        if let (Some(feed), Some(x)) = (feed, &executing) {
            let _ = x.bar.send(feed);
        }
    }
    if let Some(x) = executing.take() {
        x.end().await;
    }
    warnings.finish("warnings");
}

/// The progress bars and the Ctrl-C listener of an executing plan.
struct Executing {
    bar: UnboundedSender<Feed>,
    drawn: JoinHandle<super::progress::Tally>,
    signals: JoinHandle<()>,
}

impl Executing {
    fn start(visible: bool, images: usize, interrupts: UnboundedSender<()>) -> Executing {
        let signals = tokio::spawn(forward_interrupts(interrupts));
        let (bar, rx) = mpsc::unbounded_channel();
        let drawn = tokio::spawn(super::progress::show(rx, images, visible));
        Executing {
            bar,
            drawn,
            signals,
        }
    }

    async fn end(self) {
        self.signals.abort();
        drop(self.bar);
        let _ = self.drawn.await;
    }
}

/// Sends one message per Ctrl-C (SIGINT) or SIGTERM until the receiver is gone. SIGTERM is
/// what a cancelled CI job or `docker stop`/`kill` sends: it drains like the first Ctrl-C, and
/// a second signal of either kind kills this run's containers.
pub(super) async fn forward_interrupts(tx: UnboundedSender<()>) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        // No signal handling (never on Linux): the default dispositions stay, killing the run.
        return;
    };
    loop {
        tokio::select! {
            Some(()) = int.recv() => {}
            Some(()) = term.recv() => {}
            else => return,
        }
        if tx.send(()).is_err() {
            return;
        }
    }
}

/// `note: ...` or `warning: ...`.
fn notice_line(n: &Notice) -> String {
    let level = match n.level {
        Level::Note => "note",
        Level::Warning => "warning",
    };
    format!("{level}: {}", n.message)
}

/// The closing lines of a run.
pub fn print_report(r: &RunReport) {
    let c = |cat| r.count(cat);
    println!(
        "run {}: {} predictions, {} resumed, {} containers run, {:.1} s",
        r.run_id,
        r.predictions,
        r.resumed,
        r.jobs_run,
        r.wall.as_secs_f64()
    );
    let resume = &r.resume;
    if resume.reused + resume.regraded_count() + resume.rerun_count() > 0 {
        let mut parts = vec![format!("{} kept as they were", resume.reused)];
        if resume.regraded_count() > 0 {
            parts.push(format!(
                "{} graded again from their saved logs ({})",
                resume.regraded_count(),
                crate::runner::Resumption::causes(&resume.regraded)
            ));
        }
        if resume.rerun_count() > 0 {
            parts.push(format!(
                "{} run again ({})",
                resume.rerun_count(),
                crate::runner::Resumption::causes(&resume.rerun)
            ));
        }
        println!("  resumed from the earlier verdicts: {}", parts.join("; "));
    }
    println!(
        "  resolved {} · unresolved {} · error {} · empty patch {} · infrastructure error {}",
        c(Category::Resolved),
        c(Category::Unresolved),
        c(Category::Error),
        c(Category::EmptyPatch),
        c(Category::InfraError)
    );
    let s = |cat| r.strict_counts.get(&cat).copied().unwrap_or(0);
    println!(
        "  strict grading: resolved {} · unresolved {} · error {}",
        s(Category::Resolved),
        s(Category::Unresolved),
        s(Category::Error)
    );
    if r.needs_network > 0 {
        println!(
            "  needs network: {} unresolved only because their failing tests failed with network errors ({})",
            r.needs_network,
            if r.network {
                "the network given did not reach"
            } else {
                "run them again with --network"
            }
        );
    }
    if r.infra_retries > 0 {
        println!("  engine retries: {}", r.infra_retries);
    }
    if let Some(line) = time_line(&r.time) {
        println!("{line}");
    }
    if r.interrupted {
        println!(
            "  interrupted{}: {} predictions not run; run again with --run-id {} to finish",
            if r.killed { " (containers killed)" } else { "" },
            r.not_run,
            r.run_id
        );
    } else if r.not_run > 0 {
        println!("  {} predictions not run", r.not_run);
    }
    super::print_problems("warning: ", &r.problems);
    if r.output_failures > 0 {
        eprintln!(
            "error: {} result(s) could not be written to the output folder; free space (or fix \
             its permissions) and run again with --run-id {} to finish",
            r.output_failures, r.run_id
        );
    }
    for f in &r.files {
        println!("  wrote {}", f.display());
    }
}

/// Where the jobs' time went, in one line (`None` when no job ran).
fn time_line(t: &TimeSpent) -> Option<String> {
    if t.jobs == 0 {
        return None;
    }
    let total = t.start + t.run + t.removal;
    let run = if t.split == t.jobs {
        format!(
            "apply {:.1} s · before the tests {:.1} s · tests {:.1} s · after the tests {:.1} s",
            t.apply, t.before_tests, t.tests, t.after_tests
        )
    } else if t.split > 0 {
        format!(
            "run {:.1} s (of which, in the {} jobs timed part by part: apply {:.1} s · before the tests {:.1} s · tests {:.1} s · after the tests {:.1} s)",
            t.run, t.split, t.apply, t.before_tests, t.tests, t.after_tests
        )
    } else {
        format!("run {:.1} s", t.run)
    };
    let export = if t.exported > 0 {
        format!(
            " (of which image export to the registry: {} image{}, {:.1} s)",
            t.exported,
            if t.exported == 1 { "" } else { "s" },
            t.export
        )
    } else {
        String::new()
    };
    Some(format!(
        "  where the jobs' time went ({} jobs, {total:.1} s in containers): start {:.1} s{export} · {run} · removal {:.1} s",
        t.jobs, t.start, t.removal
    ))
}

/// Where image preparation's time went, after the run's closing lines: the wall time, then
/// each kind of image with its builds and the time of each phase, summed over builds that
/// ran side by side. Nothing when no image was prepared.
pub fn print_preparation(t: &PrepTimes) {
    if t.ready + t.failed == 0 {
        return;
    }
    println!(
        "  image preparation: {} ready, {} failed, {:.1} s (beside the jobs)",
        t.ready,
        t.failed,
        t.wall.as_secs_f64()
    );
    for (stage, s) in &t.stages {
        let phases: Vec<String> = s
            .phases
            .iter()
            .map(|(p, d)| format!("{} {:.1} s", p.as_str(), d.as_secs_f64()))
            .collect();
        let failed = if s.failed > 0 {
            format!(", {} failed", s.failed)
        } else {
            String::new()
        };
        println!(
            "    where the time went: {} images: {} built{failed}; {}",
            stage.as_str(),
            s.built,
            phases.join(" · ")
        );
    }
}

/// Runs `work` (a workflow given the interrupts and events channels) with its events
/// rendered and Ctrl-C wired in; returns what it returns once every event is shown.
pub async fn rendered<T, E, F, Fut>(work: F) -> Result<T, E>
where
    F: FnOnce(UnboundedReceiver<()>, UnboundedSender<Event>) -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let (events, rx) = mpsc::unbounded_channel();
    let (interrupts, irx) = mpsc::unbounded_channel();
    let shown = tokio::spawn(render(rx, interrupts));
    let out = work(irx, events).await;
    let _ = shown.await;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn where_the_time_went_names_the_parts_that_were_timed() {
        assert_eq!(time_line(&TimeSpent::default()), None, "no job ran");
        let mut t = TimeSpent {
            jobs: 2,
            start: 0.3,
            run: 10.0,
            removal: 0.2,
            split: 2,
            apply: 0.4,
            before_tests: 1.6,
            tests: 7.9,
            after_tests: 0.1,
            ..Default::default()
        };
        assert_eq!(
            time_line(&t).unwrap(),
            "  where the jobs' time went (2 jobs, 10.5 s in containers): start 0.3 s · apply 0.4 s · \
             before the tests 1.6 s · tests 7.9 s · after the tests 0.1 s · removal 0.2 s"
        );
        t.split = 0;
        assert_eq!(
            time_line(&t).unwrap(),
            "  where the jobs' time went (2 jobs, 10.5 s in containers): start 0.3 s · run 10.0 s · removal 0.2 s"
        );
        (t.exported, t.export) = (1, 0.3);
        assert_eq!(
            time_line(&t).unwrap(),
            "  where the jobs' time went (2 jobs, 10.5 s in containers): start 0.3 s (of which image \
             export to the registry: 1 image, 0.3 s) · run 10.0 s · removal 0.2 s"
        );
    }
}
