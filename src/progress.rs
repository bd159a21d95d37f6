//! The progress bar of a run (indicatif), fed by the runner's events. Hidden when stderr is
//! not a terminal, so logs and CI output stay clean; the runner itself never prints.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::sync::mpsc;

use crate::runner::{Category, RunEvent};

/// Counts shown on the bar.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub resolved: usize,
    pub unresolved: usize,
    pub error: usize,
    pub empty: usize,
    pub infra: usize,
    pub resumed: usize,
}

impl Tally {
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

/// Draws the bar until the event channel closes; returns the final counts. `visible = false`
/// (or stderr not being a terminal) hides it.
pub async fn show(mut events: mpsc::UnboundedReceiver<RunEvent>, visible: bool) -> Tally {
    let target = if visible {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(None, target);
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
                    bar.println(format!("resuming: {resumed} predictions already done"));
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
            RunEvent::Interrupted { count: 1 } => {
                bar.println("interrupted: finishing running jobs (Ctrl-C again to kill them)")
            }
            RunEvent::Interrupted { .. } => bar.println("killing this run's containers"),
            RunEvent::DeadlinePassed => bar.println("deadline passed: finishing running jobs"),
            RunEvent::Problem { message } => bar.println(format!("warning: {message}")),
            RunEvent::Reaped {
                count,
                at_start: true,
            } if count > 0 => bar.println(format!(
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
}
