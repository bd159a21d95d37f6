//! The progress bar of a run (indicatif), fed by the runner's events. Hidden when stderr is
//! not a terminal, so logs and CI output stay clean; the notices it would print above itself
//! (resume counts, interrupts, the deadline, problems, reaped leftovers) are then written as
//! plain lines instead, so they still reach the log. The runner itself never prints: this is
//! the command line's face, drawn only by `cli::render` while a plan executes.

use std::io::Write;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::sync::mpsc;

use crate::runner::{Category, RunEvent};

/// Counts shown on the bar.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Resolved verdicts.
    pub resolved: usize,
    /// Unresolved verdicts.
    pub unresolved: usize,
    /// Error verdicts.
    pub error: usize,
    /// Empty patches.
    pub empty: usize,
    /// Infrastructure errors.
    pub infra: usize,
    /// Verdicts found from an earlier run.
    pub resumed: usize,
}

impl Tally {
    /// Counts one verdict of category `c`.
    pub fn add(&mut self, c: Category) {
        match c {
            Category::Resolved => self.resolved += 1,
            Category::Unresolved => self.unresolved += 1,
            Category::Error => self.error += 1,
            Category::EmptyPatch => self.empty += 1,
            Category::InfraError => self.infra += 1,
        }
    }

    fn message(&self) -> String {
        let mut m = format!(
            "resolved {} · unresolved {} · error {}",
            self.resolved, self.unresolved, self.error
        );
        if self.empty > 0 {
            m.push_str(&format!(" · empty {}", self.empty));
        }
        if self.infra > 0 {
            m.push_str(&format!(" · infra {}", self.infra));
        }
        m
    }
}

/// Draws the bar on stderr until the event channel closes; returns the final counts. With
/// `visible = false` (stderr is not a terminal) the bar is hidden and its notices go to stderr
/// as plain lines.
pub async fn show(events: mpsc::UnboundedReceiver<RunEvent>, visible: bool) -> Tally {
    let plain = (!visible).then(|| Box::new(std::io::stderr()) as Box<dyn Write + Send>);
    show_to(events, plain).await
}

/// [`show`], with the bar hidden and its notices written to `plain` when it is given.
pub async fn show_to(
    mut events: mpsc::UnboundedReceiver<RunEvent>,
    mut plain: Option<Box<dyn Write + Send>>,
) -> Tally {
    let target = if plain.is_none() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(None, target);
    let mut notice = |line: String| match &mut plain {
        // A log that cannot be written to has nowhere to report it either.
        Some(w) => {
            let _ = writeln!(w, "{line}");
            let _ = w.flush();
        }
        None => bar.println(line),
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} ETA {eta} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.enable_steady_tick(Duration::from_millis(250));
    let mut tally = Tally::default();
    while let Some(ev) = events.recv().await {
        match ev {
            RunEvent::Planned {
                predictions,
                resumed,
                ..
            } => {
                bar.set_length(predictions as u64);
                // Resumed verdicts arrive first; ETA should not count them as fast work.
                bar.set_position(0);
                tally.resumed = resumed;
                if resumed > 0 {
                    notice(format!("resuming: {resumed} predictions already done"));
                }
            }
            RunEvent::Verdict { verdict, resumed } => {
                tally.add(verdict.category);
                bar.inc(1);
                if resumed {
                    bar.reset_eta();
                }
                bar.set_message(tally.message());
            }
            RunEvent::Interrupted { count: 1 } => notice(
                "interrupted: finishing running jobs (Ctrl-C or SIGTERM again to kill them)".into(),
            ),
            RunEvent::Interrupted { .. } => notice("killing this run's containers".into()),
            RunEvent::DeadlinePassed => notice("deadline passed: finishing running jobs".into()),
            RunEvent::Problem { message } => notice(format!("warning: {message}")),
            RunEvent::Reaped {
                count,
                at_start: true,
            } if count > 0 => notice(format!(
                "removed {count} leftover containers of earlier runs"
            )),
            RunEvent::JobStarted { .. } | RunEvent::Reaped { .. } => {}
        }
    }
    bar.finish_and_clear();
    tally
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_shows_the_counts_that_matter() {
        let mut t = Tally::default();
        t.add(Category::Resolved);
        t.add(Category::Error);
        assert_eq!(t.message(), "resolved 1 · unresolved 0 · error 1");
        t.add(Category::InfraError);
        assert!(t.message().ends_with("infra 1"));
    }

    /// A `Write` whose bytes the test can read after the writer is moved away.
    #[derive(Clone, Default)]
    struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn with_the_bar_hidden_its_notices_are_plain_lines() {
        let (tx, rx) = mpsc::unbounded_channel();
        let log = Shared::default();
        let shown = tokio::spawn(show_to(rx, Some(Box::new(log.clone()))));
        let events = [
            RunEvent::Reaped {
                count: 2,
                at_start: true,
            },
            RunEvent::Planned {
                predictions: 5,
                resumed: 3,
                empty: 0,
                jobs: 2,
                shared: 0,
            },
            RunEvent::JobStarted {
                instance_id: "a".into(),
            },
            RunEvent::Interrupted { count: 1 },
            RunEvent::DeadlinePassed,
            RunEvent::Problem {
                message: "verdict of a not written".into(),
            },
            RunEvent::Interrupted { count: 2 },
        ];
        for e in events {
            tx.send(e).unwrap();
        }
        drop(tx);
        assert_eq!(shown.await.unwrap().resumed, 3);
        let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text.lines().collect::<Vec<_>>(),
            [
                "removed 2 leftover containers of earlier runs",
                "resuming: 3 predictions already done",
                "interrupted: finishing running jobs (Ctrl-C or SIGTERM again to kill them)",
                "deadline passed: finishing running jobs",
                "warning: verdict of a not written",
                "killing this run's containers",
            ]
        );
    }
}
