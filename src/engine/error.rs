//! Why an engine call failed ([`EngineError`]), and whether a retry can fix it.

/// An engine failure, one variant per operation so a user reads which step failed.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot reach the Docker daemon at {endpoint}: {message}\n  start one with `sudo scripts/ensure-docker.sh` (installs docker.io when missing and starts dockerd), `sudo dockerd &` or `sudo systemctl start docker`")]
    /// The daemon could not be reached.
    Connect {
        /// The address tried (socket path or URL).
        endpoint: String,
        /// Why the connection failed.
        message: String,
    },
    #[error("the Docker daemon at {endpoint} is not a Swarm manager (its swarm state: {state}): `--engine swarm` runs the jobs as services of a cluster through one of its managers\n  make this daemon one with `docker swarm init` (or join it to a cluster as a manager), or point DOCKER_HOST at a manager")]
    /// `--engine swarm` reached a daemon that is not an active Swarm manager.
    NotSwarmManager {
        /// The daemon's address.
        endpoint: String,
        /// Its swarm state as it reports it (`inactive`, `pending`, `active, a worker`, ...).
        state: String,
    },
    #[error("cannot reach a Podman service (tried {tried}): {message}\n  {advice}")]
    /// `--engine podman` found no service that answers.
    PodmanConnect {
        /// The sockets tried, in order.
        tried: String,
        /// Why each failed.
        message: String,
        /// How to start one, rootless or rootful.
        advice: String,
    },
    #[error("image build of {tag} failed: {message}")]
    /// An image build failed.
    Build {
        /// The tag being built.
        tag: String,
        /// The error the build stopped with.
        message: String,
        /// The build's output up to the failure.
        log: String,
    },
    #[error("image import of {tag} failed: {message}")]
    /// Importing a root file system as an image failed.
    Import {
        /// The tag being imported.
        tag: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
    #[error("pull of {image} failed: {message}")]
    /// Pulling an image failed.
    Pull {
        /// The image being pulled.
        image: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
    #[error("push of {image} failed: {message}")]
    /// Pushing an image failed.
    Push {
        /// The image being pushed.
        image: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
    #[error("image {image} is not present")]
    /// The image is not present.
    ImageMissing {
        /// The image looked for.
        image: String,
    },
    #[error("image inspect/remove of {image} failed: {message}")]
    /// Inspecting or removing an image failed.
    Image {
        /// The image concerned.
        image: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
    /// Removal refused: a container (a job or another run's hold) still uses the image.
    #[error("image {image} is in use by a container (another run may hold it): {message}")]
    ImageInUse {
        /// The image whose removal was refused.
        image: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
    /// Removal refused: a container (a build that mounts it, or any container created with
    /// it, running or not) still uses the volume.
    #[error("volume {name} is in use by a container: {message}")]
    VolumeInUse {
        /// The volume whose removal was refused.
        name: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
    #[error("container create {name} failed: {message}")]
    /// Creating a container (or, on Swarm, a service or config) failed.
    Create {
        /// The object's name (or what it is, e.g. `hold on IMAGE`).
        name: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
    #[error("copy into container {name} failed: {message}")]
    /// Copying the job's files into its container failed.
    Copy {
        /// The container's name.
        name: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
    #[error("container start {name} failed: {message}")]
    /// Starting a container failed.
    Start {
        /// The container's name.
        name: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
    #[error("container start {name} failed: {message}")]
    /// Starting a container failed for the engine's own setup (its runtime refuses this
    /// machine's cgroups, cannot set the job's rlimits): every job would fail the same way,
    /// and a retry cannot help. The message says what to change.
    Setup {
        /// The container's name.
        name: String,
        /// The daemon's message and what to change.
        message: String,
    },
    #[error("container wait {name} failed: {message}")]
    /// Waiting for a container (or task) to end failed.
    Wait {
        /// The container's name.
        name: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
    #[error("container logs {name} failed: {message}")]
    /// Reading a container's output failed.
    Logs {
        /// The container's name.
        name: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
    #[error("container {name} not started: the run stopped dispatching")]
    /// A prepared container that was never started: the run stopped dispatching (an
    /// interrupt, the deadline, a write failure) while it waited at its [`super::StartGate`].
    Withdrawn {
        /// The container's name.
        name: String,
    },
    #[error("container remove {name} failed: {message}")]
    /// Removing a container (or other per-job object) failed.
    Remove {
        /// Its name or id.
        name: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
    #[error("saving images to an archive failed: {message}")]
    /// Writing images to an archive (`docker save`) failed.
    Save {
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
    #[error("loading images from an archive failed: {message}")]
    /// Loading images from an archive (`docker load`) failed.
    Load {
        /// What went wrong, usually the daemon's error message or the archive's.
        message: String,
    },
    #[error("{what} is not supported by this engine")]
    /// The engine cannot do this (an engine for tests, or one without the operation).
    Unsupported {
        /// The operation.
        what: String,
    },
    #[error("listing {what} failed: {message}")]
    /// Listing objects by label failed.
    List {
        /// What was being listed (e.g. containers, images).
        what: String,
        /// What went wrong, usually the daemon's error message.
        message: String,
    },
}

impl swe_eval_core::failure::Classify for EngineError {
    fn kind(&self) -> swe_eval_core::failure::ErrorKind {
        match self {
            // The command asked for a cluster where there is none: the message says what to change.
            EngineError::NotSwarmManager { .. } => swe_eval_core::failure::ErrorKind::Usage,
            _ => swe_eval_core::failure::ErrorKind::Failed,
        }
    }
}

impl EngineError {
    /// True for failures of the infrastructure that are worth retrying (daemon restarts,
    /// transient API errors); false for failures a retry cannot fix.
    pub fn is_transient(&self) -> bool {
        match self {
            EngineError::ImageMissing { .. }
            | EngineError::Build { .. }
            | EngineError::Setup { .. }
            | EngineError::NotSwarmManager { .. }
            | EngineError::Withdrawn { .. }
            | EngineError::Unsupported { .. } => false,
            // A registry that does not have the image, or refuses us, will not change its mind.
            EngineError::Pull { message, .. } => {
                let m = message.to_lowercase();
                ![
                    "not found",
                    "manifest unknown",
                    "does not exist",
                    "unauthorized",
                    "denied",
                    "invalid reference",
                ]
                .iter()
                .any(|p| m.contains(p))
            }
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_errors_are_the_ones_a_retry_can_fix() {
        let pull = |m: &str| EngineError::Pull {
            image: "i".into(),
            message: m.into(),
        };
        let cases = [
            (
                EngineError::ImageMissing { image: "i".into() },
                false,
                "image absent",
            ),
            (
                EngineError::Build {
                    tag: "t".into(),
                    message: "m".into(),
                    log: String::new(),
                },
                false,
                "broken recipe",
            ),
            (
                pull("manifest unknown: manifest unknown"),
                false,
                "registry lacks it",
            ),
            (pull("Not Found"), false, "registry lacks it"),
            (pull("connection refused"), true, "registry down"),
            (
                EngineError::Start {
                    name: "n".into(),
                    message: "EOF".into(),
                },
                true,
                "daemon restart",
            ),
            (
                EngineError::Connect {
                    endpoint: "e".into(),
                    message: "m".into(),
                },
                true,
                "daemon restart",
            ),
        ];
        for (e, want, why) in cases {
            assert_eq!(e.is_transient(), want, "{e}: {why}");
        }
    }
}
