//! The terminal side of a run: the workflow's events rendered (notices on stderr, the
//! progress bar while the plan executes), Ctrl-C and SIGTERM wired to the runner while it executes, and
//! the run's closing lines.

use std::sync::Arc;

use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;

use crate::engine::Engine;
use crate::orchestrate::{self, Event, ImagePolicy, Level, Notice, Work};
use crate::runner::{Category, RunConfig, RunError, RunEvent, RunReport};

/// Renders `events` until the channel closes. While the plan executes, the progress bar is
/// drawn and each Ctrl-C or SIGTERM is sent to `interrupts`; outside it, both keep their
/// default (the process ends; the next run reaps what it leaves).
pub async fn render(mut events: UnboundedReceiver<Event>, interrupts: UnboundedSender<()>) {
    let visible = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut executing: Option<Executing> = None;
    while let Some(ev) = events.recv().await {
        match ev {
            Event::Preparing { instances, flavour } => {
                eprintln!("preparing images for {instances} instances ({flavour} flavour)...")
            }
            Event::Notice(n) => print_notice(&n),
            Event::Executing => executing = Some(Executing::start(visible, interrupts.clone())),
            Event::Run(e) => {
                if let Some(x) = &executing {
                    let _ = x.bar.send(e);
                }
            }
            Event::Executed => {
                if let Some(x) = executing.take() {
                    x.end().await;
                }
            }
            Event::ImagesRemoved { count } => {
                eprintln!("removed {count} image(s) the cache level does not keep")
            }
        }
    }
    if let Some(x) = executing.take() {
        x.end().await;
    }
}

/// The progress bar and the Ctrl-C listener of an executing plan.
struct Executing {
    bar: UnboundedSender<RunEvent>,
    drawn: JoinHandle<super::progress::Tally>,
    signals: JoinHandle<()>,
}

impl Executing {
    fn start(visible: bool, interrupts: UnboundedSender<()>) -> Executing {
        let signals = tokio::spawn(forward_interrupts(interrupts));
        let (bar, rx) = mpsc::unbounded_channel();
        let drawn = tokio::spawn(super::progress::show(rx, visible));
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
async fn forward_interrupts(tx: UnboundedSender<()>) {
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

/// `note: ...` or `warning: ...` on stderr.
pub fn print_notice(n: &Notice) {
    let level = match n.level {
        Level::Note => "note",
        Level::Warning => "warning",
    };
    eprintln!("{level}: {}", n.message);
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
    for p in &r.problems {
        eprintln!("warning: {p}");
    }
    for f in &r.files {
        println!("  wrote {}", f.display());
    }
}

/// Runs the workflow with its events rendered and Ctrl-C wired in.
pub async fn execute<E: Engine>(
    engine: Arc<E>,
    work: Work<'_>,
    config: RunConfig,
    images: ImagePolicy<'_>,
) -> Result<RunReport, RunError> {
    let (events, rx) = mpsc::unbounded_channel();
    let (interrupts, irx) = mpsc::unbounded_channel();
    let shown = tokio::spawn(render(rx, interrupts));
    let report = orchestrate::execute(engine, work, config, images, irx, events).await;
    let _ = shown.await;
    report
}
