//! The progress bars of a run (indicatif): the images' (ready, building, failed, ETA), fed by
//! image preparation's events, above the jobs' (verdict counts, ETA), fed by the runner's;
//! preparation runs beside the jobs, so both move at once. Hidden when stderr is not a
//! terminal, so logs and CI output stay clean; the notices they would print above themselves
//! (resume counts, interrupts, the deadline, problems, reaped leftovers, images all prepared)
//! are then written as plain lines instead, so they still reach the log. Neither the runner
//! nor the workflow prints: this is the command line's face, drawn only by `cli::render`
//! while a plan executes.

use std::io::Write;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::sync::mpsc;

use crate::images::{BuildEvent, Phase};
use crate::runner::{Category, RunEvent};

/// What the bars are fed.
#[derive(Debug, Clone)]
pub enum Feed {
    /// One of the runner's events (the jobs' bar).
    Run(RunEvent),
    /// A build started or a phase of one ended (the images' bar counts the builds running).
    Build(BuildEvent),
    /// An instance's image is ready (`ok`) or failed for good.
    ImageDone {
        /// The image is there.
        ok: bool,
    },
    /// Preparation starts for this many more instance images (the images' bar grows, or
    /// appears).
    Images(usize),
}

/// Counts shown on the images' bar.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Images {
    /// Instances whose image is ready.
    pub ready: usize,
    /// Builds running now (any kind of image).
    pub building: usize,
    /// Instances whose image failed.
    pub failed: usize,
}

impl Images {
    /// Counts one event; true when it changed what the bar shows.
    fn add(&mut self, feed: &Feed) -> bool {
        match feed {
            Feed::ImageDone { ok: true } => self.ready += 1,
            Feed::ImageDone { ok: false } => self.failed += 1,
            Feed::Build(BuildEvent::Started { .. }) => self.building += 1,
            Feed::Build(BuildEvent::Timed {
                phase: Phase::Build,
                ..
            }) => self.building = self.building.saturating_sub(1),
            _ => return false,
        }
        true
    }

    fn message(&self) -> String {
        let mut m = format!("ready {} · building {}", self.ready, self.building);
        if self.failed > 0 {
            m.push_str(&format!(" · failed {}", self.failed));
        }
        m
    }
}

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

/// Draws the bars on stderr until the feed closes; returns the final counts. `images` is the
/// number of instance images being prepared (no images' bar when 0). With `visible = false`
/// (stderr is not a terminal) the bars are hidden and their notices go to stderr as plain
/// lines.
pub async fn show(events: mpsc::UnboundedReceiver<Feed>, images: usize, visible: bool) -> Tally {
    let plain = (!visible).then(|| Box::new(std::io::stderr()) as Box<dyn Write + Send>);
    show_to(events, images, plain).await
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar())
}

/// [`show`], with the bars hidden and their notices written to `plain` when it is given.
pub async fn show_to(
    mut events: mpsc::UnboundedReceiver<Feed>,
    images: usize,
    mut plain: Option<Box<dyn Write + Send>>,
) -> Tally {
    let target = if plain.is_none() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bars = MultiProgress::with_draw_target(target);
    let bar = bars.add(ProgressBar::new(0));
    let new_image_bar = |len: usize| {
        let b = bars.insert_before(&bar, ProgressBar::new(len as u64));
        b.set_style(style(
            "{spinner} images [{elapsed_precise}] {wide_bar} {pos}/{len} ETA {eta} {msg}",
        ));
        b.enable_steady_tick(Duration::from_millis(250));
        b
    };
    let mut images = images;
    let mut image_bar = (images > 0).then(|| new_image_bar(images));
    let mut notice = |line: String| match &mut plain {
        // A log that cannot be written to has nowhere to report it either.
        Some(w) => {
            let _ = writeln!(w, "{line}");
            let _ = w.flush();
        }
        None => {
            let _ = bars.println(line);
        }
    };
    bar.set_style(style(
        "{spinner} jobs   [{elapsed_precise}] {wide_bar} {pos}/{len} ETA {eta} {msg}",
    ));
    bar.enable_steady_tick(Duration::from_millis(250));
    let mut tally = Tally::default();
    let mut counts = Images::default();
    while let Some(feed) = events.recv().await {
        if let Feed::Images(more) = feed {
            images += more;
            match &image_bar {
                Some(b) => b.set_length(images as u64),
                None => image_bar = Some(new_image_bar(images)),
            }
            continue;
        }
        if counts.add(&feed) {
            if let Some(b) = &image_bar {
                if matches!(feed, Feed::ImageDone { .. }) {
                    b.inc(1);
                }
                b.set_message(counts.message());
                if counts.ready + counts.failed == images {
                    let secs = b.elapsed().as_secs_f64();
                    b.finish_with_message(counts.message());
                    notice(format!(
                        "images: {} ready, {} failed, in {secs:.1} s",
                        counts.ready, counts.failed
                    ));
                }
            }
        }
        let Feed::Run(ev) = feed else { continue };
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
                "interrupted: finishing running jobs and builds, starting no new ones (Ctrl-C or SIGTERM again to kill them)".into(),
            ),
            RunEvent::Interrupted { .. } => {
                notice("killing this run's containers and abandoning its builds".into())
            }
            RunEvent::DeadlinePassed => notice("deadline passed: finishing running jobs".into()),
            RunEvent::Problem { message } => notice(format!("warning: {message}")),
            RunEvent::Note { message } => notice(format!("note: {message}")),
            RunEvent::Reaped {
                count,
                at_start: true,
            } if count > 0 => notice(format!(
                "removed {count} leftover containers of earlier runs"
            )),
            RunEvent::JobStarted { .. }
            | RunEvent::JobEnded { .. }
            | RunEvent::Submitted { .. }
            | RunEvent::Reaped { .. } => {}
        }
    }
    if let Some(b) = image_bar {
        b.finish_and_clear();
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
        let shown = tokio::spawn(show_to(rx, 0, Some(Box::new(log.clone()))));
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
            tx.send(Feed::Run(e)).unwrap();
        }
        drop(tx);
        assert_eq!(shown.await.unwrap().resumed, 3);
        let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text.lines().collect::<Vec<_>>(),
            [
                "removed 2 leftover containers of earlier runs",
                "resuming: 3 predictions already done",
                "interrupted: finishing running jobs and builds, starting no new ones (Ctrl-C or SIGTERM again to kill them)",
                "deadline passed: finishing running jobs",
                "warning: verdict of a not written",
                "killing this run's containers and abandoning its builds",
            ]
        );
    }

    #[test]
    fn the_images_bar_counts_ready_failed_and_builds_running() {
        let mut c = Images::default();
        let started = Feed::Build(BuildEvent::Started {
            stage: crate::images::Stage::Instance,
            image: "i".into(),
        });
        let timed = |phase| {
            Feed::Build(BuildEvent::Timed {
                stage: crate::images::Stage::History,
                image: "h".into(),
                phase,
                took: Duration::from_secs(1),
                ok: true,
            })
        };
        assert!(c.add(&started));
        assert!(c.add(&started));
        assert!(
            !c.add(&timed(Phase::Snapshot)),
            "a snapshot is not a build ending"
        );
        assert!(c.add(&timed(Phase::Build)));
        assert!(c.add(&Feed::ImageDone { ok: true }));
        assert!(c.add(&Feed::ImageDone { ok: false }));
        assert_eq!(
            c,
            Images {
                ready: 1,
                building: 1,
                failed: 1
            }
        );
        assert_eq!(c.message(), "ready 1 · building 1 · failed 1");
    }

    #[tokio::test]
    async fn with_the_bars_hidden_the_end_of_preparation_is_a_plain_line() {
        let (tx, rx) = mpsc::unbounded_channel();
        let log = Shared::default();
        let shown = tokio::spawn(show_to(rx, 2, Some(Box::new(log.clone()))));
        tx.send(Feed::ImageDone { ok: true }).unwrap();
        tx.send(Feed::ImageDone { ok: false }).unwrap();
        drop(tx);
        shown.await.unwrap();
        let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
        assert!(text.starts_with("images: 1 ready, 1 failed, in "), "{text}");
    }
}
