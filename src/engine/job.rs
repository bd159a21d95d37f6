//! A job as the engine runs it: its [`JobSpec`] (image, command, files, [`Limits`]) and its
//! [`JobOutput`] (exit code, bounded output, timing).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;

/// Resource limits of one job's container.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// CPUs (fractional allowed); `None` = no limit.
    pub cpus: Option<f64>,
    /// Memory in bytes (swap included: no swap beyond it); `None` = no limit.
    pub memory_bytes: Option<i64>,
    /// Most processes the container may have at once; `None` = no limit.
    pub pids: Option<i64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            cpus: Some(1.0),
            memory_bytes: Some(4 << 30),
            pids: Some(1024),
        }
    }
}

/// A file copied into the container before it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct FileIn {
    /// Absolute path inside the container.
    pub path: String,
    /// The file's bytes.
    pub contents: Vec<u8>,
    /// Unix permission bits, e.g. `0o755`.
    pub mode: u32,
}

/// Everything needed to run one job.
#[derive(Debug, Clone)]
pub struct JobSpec {
    /// The image the container runs.
    pub image: String,
    /// Container name (unique per run and job).
    pub name: String,
    /// Labels put on the container (and, on Swarm, its other objects).
    pub labels: BTreeMap<String, String>,
    /// Files copied into the container before it starts.
    pub files: Vec<FileIn>,
    /// The main process, e.g. `["/bin/bash", "/swe-eval/job.sh"]`.
    pub command: Vec<String>,
    /// Environment variables, each `NAME=value`.
    pub env: Vec<String>,
    /// Working directory of the main process; `None` = the image's.
    pub working_dir: Option<String>,
    /// Resource limits of the container.
    pub limits: Limits,
    /// Network access; off by default.
    pub network: bool,
    /// Wall-clock deadline from start; the container is killed when it passes.
    pub timeout: Duration,
    /// At most this many bytes of output are kept (head and tail), however much is printed.
    pub max_output_bytes: usize,
    /// Texts whose first appearance in the output is timed ([`JobOutput::seen`]), where the
    /// engine reads the output as it is printed (Docker); others leave them unseen.
    pub watch: Vec<String>,
    /// Where an engine that prepares ahead waits before starting the container, in the job's
    /// turn; `None` starts it as soon as it is ready. Engines that do not prepare ahead ignore
    /// it.
    pub gate: Option<GatePass>,
}

/// Bounds how many jobs' containers run at once apart from how many are being prepared, and
/// starts them in the order they were dispatched. An engine that prepares ahead
/// ([`crate::engine::Engine::prepares_ahead`]) creates a job's container, copies its files in
/// and attaches to its output, then [`enters`](GatePass::enter) here before starting it, and
/// leaves (drops its [`Place`]) once its main process has ended: the next container starts the
/// moment a running one ends, its preparation done meanwhile. Each job holds a [`Ticket`] from
/// its dispatch on; a place goes to the waiting job with the lowest ticket, and no job passes
/// one with a lower ticket still being prepared, so preparations that finish out of order
/// start in order (longest first stays longest first). Closed when the run stops dispatching:
/// a container still waiting is then never started.
#[derive(Debug, Clone)]
pub struct StartGate {
    state: Arc<Mutex<GateState>>,
    changed: Arc<Notify>,
}

#[derive(Debug)]
struct GateState {
    free: usize,
    closed: bool,
    next: u64,
    /// Tickets given and not yet through the gate (nor given up).
    waiting: BTreeSet<u64>,
}

impl StartGate {
    /// A gate letting `running` containers run at once (at least one).
    pub fn new(running: usize) -> Self {
        StartGate {
            state: Arc::new(Mutex::new(GateState {
                free: running.max(1),
                closed: false,
                next: 0,
                waiting: BTreeSet::new(),
            })),
            changed: Arc::new(Notify::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The next ticket, in dispatch order. Held by the job for as long as it may still start;
    /// dropping it gives its turn up.
    pub fn ticket(&self) -> Ticket {
        let mut st = self.lock();
        let n = st.next;
        st.next += 1;
        st.waiting.insert(n);
        Ticket {
            pass: GatePass {
                gate: self.clone(),
                n,
            },
        }
    }

    /// Closes the gate: jobs waiting and jobs to come get no place. Places held stay held.
    pub fn close(&self) {
        self.lock().closed = true;
        self.changed.notify_waiters();
    }
}

/// A job's turn at the [`StartGate`], from its dispatch until it has started or is over.
#[derive(Debug)]
pub struct Ticket {
    pass: GatePass,
}

impl Ticket {
    /// What the job's [`JobSpec`] carries to the engine (each attempt of the job the same).
    pub fn pass(&self) -> GatePass {
        self.pass.clone()
    }
}

impl Ticket {
    /// Gives the ticket's turn up while the job is not ready to start (a retry waiting out its
    /// backoff): later jobs may start meanwhile. Its pass still enters, as soon as a place is
    /// free and no lower ticket waits.
    pub fn step_aside(&self) {
        let gate = &self.pass.gate;
        if gate.lock().waiting.remove(&self.pass.n) {
            gate.changed.notify_waiters();
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.step_aside();
    }
}

/// The engine's side of a [`Ticket`]: enters the gate in the ticket's turn.
#[derive(Debug, Clone)]
pub struct GatePass {
    gate: StartGate,
    n: u64,
}

impl GatePass {
    /// Waits for a free place and the turn of this pass's ticket (no lower ticket still
    /// waiting); `None` once the gate is closed (the job must not start). The place is held
    /// until the [`Place`] is dropped. A retried job enters again with the same pass.
    pub async fn enter(&self) -> Option<Place> {
        let gate = &self.gate;
        loop {
            let changed = gate.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let mut st = gate.lock();
                if st.closed {
                    st.waiting.remove(&self.n);
                    return None;
                }
                let turn = st.waiting.range(..self.n).next().is_none();
                if turn && st.free > 0 {
                    st.free -= 1;
                    st.waiting.remove(&self.n);
                    drop(st);
                    // Removing this ticket may give the next one its turn.
                    gate.changed.notify_waiters();
                    return Some(Place { gate: gate.clone() });
                }
            }
            changed.await;
        }
    }
}

/// A place among the running, held from start until the job's main process has ended.
#[derive(Debug)]
pub struct Place {
    gate: StartGate,
}

impl Drop for Place {
    fn drop(&mut self) {
        self.gate.lock().free += 1;
        self.gate.changed.notify_waiters();
    }
}

/// How many jobs' containers run: each one counted from its start until its main process has
/// ended, the span a [`Place`] is held (shared by the clones of an engine).
#[derive(Debug, Clone, Default)]
pub struct RunningCount(Arc<std::sync::atomic::AtomicUsize>);

impl RunningCount {
    /// Counts one more container running until the returned guard is dropped.
    pub fn enter(&self) -> Running {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Running(self.0.clone())
    }

    /// Containers running now.
    pub fn get(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// One container counted as running by a [`RunningCount`], until dropped.
#[derive(Debug)]
pub struct Running(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// What a job produced.
#[derive(Debug, Clone, Default)]
pub struct JobOutput {
    /// Exit code of the main process; `None` when it was killed at the deadline.
    pub exit_code: Option<i64>,
    /// Combined stdout and stderr, possibly cut in the middle (see `truncated_bytes`).
    pub output: Vec<u8>,
    /// Bytes of output dropped from the middle to keep within `max_output_bytes`.
    pub truncated_bytes: u64,
    /// The job was killed at its deadline.
    pub timed_out: bool,
    /// Killed by the kernel's OOM killer.
    pub oom_killed: bool,
    /// Time spent creating and starting the container (its wait at the [`StartGate`] apart).
    pub setup: Duration,
    /// Time the prepared container waited at the [`StartGate`] for a running one to end.
    pub queued: Duration,
    /// Time from start until the main process ended or the deadline passed.
    pub run: Duration,
    /// Time after the run until the container was removed.
    pub teardown: Duration,
    /// The cluster node that ran the job (Swarm); `None` on a single daemon.
    pub node: Option<String>,
    /// For each of [`JobSpec::watch`], when it first arrived, from the start of the run; empty
    /// or `None` where the engine did not see it as it was printed.
    pub seen: Vec<Option<Duration>>,
}

impl JobOutput {
    /// Splits the time since `t0` (the job's beginning) once the job is over: all of it is
    /// setup when the job never started, else what follows setup and run is teardown.
    pub fn close_timing(&mut self, t0: std::time::Instant) {
        if self.setup.is_zero() {
            self.setup = t0.elapsed();
        } else {
            self.teardown = t0
                .elapsed()
                .saturating_sub(self.setup + self.queued + self.run);
        }
    }
}

#[cfg(test)]
mod gate_tests {
    use super::*;

    /// Whether `pass` gets a place within a moment (paused time: "a moment" is exact).
    async fn enters_now(pass: &GatePass) -> Option<Place> {
        tokio::time::timeout(Duration::from_millis(10), pass.enter())
            .await
            .ok()
            .flatten()
    }

    #[tokio::test(start_paused = true)]
    async fn places_go_in_ticket_order_and_never_beyond_the_bound() {
        let gate = StartGate::new(1);
        let (t0, t1, t2) = (gate.ticket(), gate.ticket(), gate.ticket());
        // 1 and 2 are prepared first, 0 is still preparing: neither may pass it.
        assert!(enters_now(&t2.pass()).await.is_none());
        assert!(enters_now(&t1.pass()).await.is_none());
        let first = enters_now(&t0.pass())
            .await
            .expect("0's turn, a place free");
        // The one place is taken: 1 waits, whatever its turn.
        let (waiting1, waiting2) = (t1.pass(), t2.pass());
        let one = tokio::spawn(async move { waiting1.enter().await });
        let two = tokio::spawn(async move { waiting2.enter().await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!one.is_finished() && !two.is_finished());
        drop(first);
        let second = one.await.unwrap().expect("1 next");
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!two.is_finished(), "2 waits for 1's place");
        drop(second);
        assert!(two.await.unwrap().is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn a_ticket_given_up_passes_its_turn_and_closing_withdraws_the_waiting() {
        let gate = StartGate::new(2);
        let (t0, t1, t2) = (gate.ticket(), gate.ticket(), gate.ticket());
        let p1 = t1.pass();
        let waiting = tokio::spawn(async move { p1.enter().await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!waiting.is_finished(), "0 has not entered nor given up");
        drop(t0); // e.g. its container could not be created
        let _running = waiting.await.unwrap().expect("1 passes once 0 gave up");
        // A retry of 1 enters again with the same pass (its ticket already through).
        let _retry = enters_now(&t1.pass()).await.expect("second place");
        let p2 = t2.pass();
        let last = tokio::spawn(async move { p2.enter().await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        gate.close();
        assert!(last.await.unwrap().is_none(), "closed: never started");
        assert!(gate.ticket().pass().enter().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_ticket_stepping_aside_lets_later_ones_pass_and_still_enters() {
        let gate = StartGate::new(1);
        let (t0, t1) = (gate.ticket(), gate.ticket());
        assert!(enters_now(&t1.pass()).await.is_none(), "0's turn first");
        t0.step_aside(); // e.g. 0 backs off before a retry
        let running = enters_now(&t1.pass()).await.expect("1 passes");
        let p0 = t0.pass();
        let retry = tokio::spawn(async move { p0.enter().await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!retry.is_finished(), "no place free");
        drop(running);
        assert!(
            retry.await.unwrap().is_some(),
            "0's retry enters once a place frees"
        );
    }
}
