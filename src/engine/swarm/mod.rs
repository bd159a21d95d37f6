//! The Docker Swarm implementation of `Engine`: the same jobs, spread over a cluster by Swarm.
//!
//! The engine talks to one manager (`DOCKER_HOST` or the local socket). Images are built,
//! held and removed on the manager's own daemon, exactly as with [`DockerEngine`](crate::engine::DockerEngine) (it is the
//! inner engine); only jobs differ. Each job is a one-shot service: one replica, restart
//! policy `none` (not mode `replicated-job`: Docker 20.10 leaves a job's task containers on
//! the nodes after its service is removed, where only each node's own daemon could remove
//! them; ARCHITECTURE.md has the measurement), the run's labels, the job's CPU, memory and pids limits,
//! no network unless the job has one (the internal network [`network::NO_NETWORK`]: a task given no
//! network would join its node's default bridge), and
//! `SIGKILL` as its stop signal. Its lifetime:
//!
//! 1. **Image.** With a registry (`--registry HOST:PORT`), the image is tagged into it and
//!    pushed once per run (the first job of an image does it; the others wait), and the job
//!    names it by digest, so a node that has it does not ask the registry again. The names this
//!    leaves on the manager are removed by [`Engine::finish_run`](crate::engine::Engine::finish_run). Without a registry, every
//!    node must already have the image (or pull it by name).
//! 2. **Inputs.** Files reach the task inline in its command or through Swarm configs (see
//!    [`inputs`]); a fixed bootstrap writes them, then `exec`s the job.
//! 3. **Placement.** A job is pinned to a node that already ran its image when that node is
//!    not much busier than the others (see [`place`]); otherwise Swarm chooses.
//! 4. **Running.** The task is polled: its start (time from submit to start is the job's
//!    setup), its end and exit code. Output is followed while it runs and completed after (see
//!    [`logs`]), bounded as for a plain container. The deadline counts from the task's start;
//!    when it passes, the service is removed, which kills the task.
//! 5. **Faults.** A task whose node is down or gone, that Swarm shut down, rejected or never
//!    started within the start timeout, is an engine error: transient, so the runner retries it
//!    as a new service, and Swarm places it on a node that is up. A rejected task whose image
//!    is missing is not retried.
//! 6. **Cleanup.** The service, then its configs, are removed whatever happened, except when
//!    its task is on a node that is down: then both are kept until the node is back (removed
//!    now, Swarm would leave the task's container on that node for good; see the `strand` module), and
//!    the run reports them. Services and
//!    configs carry the run's labels: [`Engine::list_containers`](crate::engine::Engine::list_containers) lists them with the
//!    containers (ids prefixed `service:` and `config:`), so the runner's reaps (a dead
//!    owner's at start, its own at the end) cover them.
mod backend;
mod cluster;
mod drive;
mod inputs;
mod logs;
mod network;
mod place;
mod registry;
mod service;
mod spec;
mod strand;

pub use cluster::{SwarmEngine, SwarmOptions};
pub use inputs::{
    plan as plan_inputs, CONFIG_CHUNK as SWARM_CONFIG_CHUNK, INLINE_MAX as SWARM_INLINE_MAX,
};
use network::NO_DNS;
pub use spec::{phase, registry_name, service_name, service_spec, TaskPhase};

use cluster::NodeView;
