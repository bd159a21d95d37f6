//! Images for the nodes: pushed to the run's registry once, named by digest, and the names
//! this leaves on the manager found again.

use std::collections::BTreeMap;

use bollard::query_parameters::PushImageOptionsBuilder;
use futures_util::StreamExt;

use super::*;
use crate::engine::docker::{label_filters, split_tag};
use crate::engine::{Engine, EngineError};

impl SwarmEngine {
    /// The reference jobs of `image` use: pushed to the registry (once), by digest.
    pub(super) async fn publish(&self, image: &str) -> Result<String, EngineError> {
        let Some(registry) = &self.opts.registry else {
            return Ok(image.to_string());
        };
        let cell = self
            .published
            .lock()
            .await
            .entry(image.to_string())
            .or_default()
            .clone();
        cell.get_or_try_init(|| self.push(registry, image))
            .await
            .cloned()
    }

    pub(super) async fn push(&self, registry: &str, image: &str) -> Result<String, EngineError> {
        let began = std::time::Instant::now();
        let target = registry_name(registry, image);
        let push_err = |message: String| EngineError::Push {
            image: target.clone(),
            message,
        };
        self.local.tag_image(image, &target).await?;
        self.registry_names
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(target.clone());
        let (repo, tag) = split_tag(&target);
        let opts = PushImageOptionsBuilder::default().tag(tag).build();
        let mut stream = self.docker().push_image(repo, Some(opts), None);
        while let Some(item) = stream.next().await {
            item.map_err(|e| push_err(e.to_string()))?;
        }
        let inspected = self
            .docker()
            .inspect_image(&target)
            .await
            .map_err(|e| push_err(format!("inspect after push: {e}")))?;
        self.pushed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((image.to_string(), began.elapsed()));
        let digest = inspected
            .repo_digests
            .unwrap_or_default()
            .into_iter()
            .find(|d| d.starts_with(&format!("{repo}@")));
        Ok(match digest {
            Some(d) => {
                self.registry_names
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(d.clone());
                d
            }
            None => target,
        })
    }
}

/// How long a registry name of the run's own is retried while a container still uses it: Swarm
/// removes a removed service's containers after the removal returns (on a loaded manager,
/// seconds later), so the last job's container can outlive its service for a moment.
const OWN_NAME_IN_USE_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

impl SwarmEngine {
    /// Removes a registry name this engine added; while a container uses it, retries for up to
    /// [`OWN_NAME_IN_USE_WAIT`] (the run's last tasks being taken down), then gives the error.
    pub(super) async fn remove_own_registry_name(&self, name: &str) -> Result<(), EngineError> {
        let began = std::time::Instant::now();
        loop {
            match self.local.remove_image(name).await {
                Err(EngineError::ImageInUse { .. }) if began.elapsed() < OWN_NAME_IN_USE_WAIT => {
                    tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                }
                other => return other,
            }
        }
    }

    /// The names in `registry` of this tool's images on the manager (tags and digests).
    pub(super) async fn leftover_registry_names(&self, registry: &str) -> Vec<String> {
        let prefix = format!("{}/", registry.trim_end_matches('/'));
        let filters = label_filters(&BTreeMap::from([(
            crate::engine::LABEL_TOOL.to_string(),
            String::new(),
        )]));
        let opts = bollard::query_parameters::ListImagesOptionsBuilder::default()
            .filters(&filters)
            .build();
        let Ok(images) = self.docker().list_images(Some(opts)).await else {
            return Vec::new();
        };
        images
            .into_iter()
            .flat_map(|i| i.repo_tags.into_iter().chain(i.repo_digests))
            .filter(|n| n.starts_with(&prefix))
            .collect()
    }
}
