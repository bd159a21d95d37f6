//! Named volumes (the compiler caches of builds): created, listed by label, removed.

use std::collections::BTreeMap;

use bollard::errors::Error as DockerError;
use bollard::models::VolumeCreateRequest;
use bollard::query_parameters::{ListVolumesOptionsBuilder, RemoveVolumeOptions};

use super::engine::DockerEngine;
use super::filters::{label_filters, listing_failed};
use super::status::status_of;
use crate::engine::{EngineError, Resource};

impl DockerEngine {
    /// Creates the named volume `name` with `labels` (one that exists is left as it is).
    pub(super) async fn create_volume(
        &self,
        name: &str,
        labels: &BTreeMap<String, String>,
    ) -> Result<(), DockerError> {
        let request = VolumeCreateRequest {
            name: Some(name.to_string()),
            labels: Some(labels.clone().into_iter().collect()),
            ..Default::default()
        };
        self.docker.create_volume(request).await.map(|_| ())
    }

    /// Removes the named volume `name` (absent: no error; one a container uses:
    /// [`EngineError::VolumeInUse`]).
    pub(super) async fn remove_volume(&self, name: &str) -> Result<(), EngineError> {
        match self
            .docker
            .remove_volume(name, None::<RemoveVolumeOptions>)
            .await
        {
            Ok(()) => Ok(()),
            Err(e) if status_of(&e) == Some(404) => Ok(()),
            Err(e) if status_of(&e) == Some(409) => Err(EngineError::VolumeInUse {
                name: name.to_string(),
                message: e.to_string(),
            }),
            Err(e) => Err(EngineError::Remove {
                name: format!("volume {name}"),
                message: e.to_string(),
            }),
        }
    }

    /// Named volumes carrying all of `labels`.
    pub(super) async fn list_volumes(
        &self,
        labels: BTreeMap<String, String>,
    ) -> Result<Vec<Resource>, EngineError> {
        let filters = label_filters(&labels);
        let opts = ListVolumesOptionsBuilder::default()
            .filters(&filters)
            .build();
        let list = self
            .docker
            .list_volumes(Some(opts))
            .await
            .map_err(listing_failed("volumes"))?;
        Ok(list
            .volumes
            .unwrap_or_default()
            .into_iter()
            .map(|v| Resource {
                id: v.name.clone(),
                name: v.name,
                labels: v.labels.into_iter().collect(),
            })
            .collect())
    }
}
