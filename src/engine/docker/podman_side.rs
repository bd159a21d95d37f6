//! What the adapter learns of a Podman service when it connects ([`PodmanSide`]): what the
//! service says about itself through its own API, and the open-files and processes limits its
//! jobs are given (see `engine/podman.rs` for what differs from Docker).

use bollard::models::ResourcesUlimits;

use crate::engine::podman::{self, PodmanHost};

/// What the adapter knows of a Podman service it talks to.
#[derive(Debug)]
pub struct PodmanSide {
    /// What the service says about itself; `None` when its own API could not be read (then
    /// every limit is sent, and nothing is said about what it ignores).
    pub(super) host: Option<PodmanHost>,
    /// Why `host` is unknown.
    pub(super) unknown: Option<String>,
    /// The service's own open-files and processes limits, given to each job as Docker's
    /// containers inherit the daemon's (Podman would raise them to 1,048,576).
    pub(super) ulimits: Option<Vec<ResourcesUlimits>>,
}

impl PodmanSide {
    /// Asks the Podman service at `endpoint`, whose version is `version`, about itself.
    pub(super) async fn ask(endpoint: &str, version: &str) -> PodmanSide {
        let (host, unknown) = match podman::get_json(endpoint, "/v4.0.0/libpod/info").await {
            Ok(info) => (Some(PodmanHost::from_info(version, &info)), None),
            Err(e) => (None, Some(e.to_string())),
        };
        let ulimits = podman::service_rlimits(endpoint)
            .await
            .map(|(nofile, nproc)| {
                [("nofile", nofile), ("nproc", nproc)]
                    .into_iter()
                    .filter_map(|(name, l)| {
                        Some(ResourcesUlimits {
                            name: Some(name.into()),
                            soft: Some(l.soft?),
                            hard: Some(l.hard?),
                        })
                    })
                    .collect()
            });
        PodmanSide {
            host,
            unknown,
            ulimits,
        }
    }

    /// How the daemon is named to the user, and what a run on it does not do as on Docker.
    pub(super) fn describe(&self) -> (String, Vec<String>) {
        match (&self.host, &self.unknown) {
            (Some(h), _) => (h.describe(), h.limitations()),
            (None, why) => (
                "Podman".to_string(),
                vec![format!(
                    "Podman: its own API (/libpod/info) could not be read ({}): every \
                     limit is sent, but whether a rootless service applies them is unknown",
                    why.as_deref().unwrap_or("no reason given")
                )],
            ),
        }
    }
}
