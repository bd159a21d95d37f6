//! A job's Swarm objects: its service, its task, its configs.

use bollard::models::{
    ConfigSpec, ServiceSpec, Task, TaskSpecContainerSpecConfigs, TaskSpecContainerSpecFile1,
};

use super::inputs;
use super::*;
use crate::engine::docker::status_of;
use crate::engine::{EngineError, JobSpec};

impl SwarmEngine {
    /// The task of service `id` (the newest, should Swarm have made more than one).
    pub(super) async fn task_of(&self, id: &str) -> Result<Option<Task>, EngineError> {
        let tasks = self.tasks_of(id).await?;
        Ok(tasks
            .into_iter()
            .max_by_key(|t| t.version.as_ref().and_then(|v| v.index).unwrap_or(0)))
    }

    pub(super) async fn create_configs(
        &self,
        plan: &inputs::Inputs,
        job: &JobSpec,
        created: &mut Vec<String>,
    ) -> Result<Vec<TaskSpecContainerSpecConfigs>, EngineError> {
        let mut refs = Vec::new();
        for c in &plan.configs {
            let spec = ConfigSpec {
                name: Some(c.name.clone()),
                labels: Some(job.labels.clone().into_iter().collect()),
                data: Some(inputs::base64(&c.data)),
                ..Default::default()
            };
            let create = || self.docker().create_config(spec.clone());
            let made = match create().await {
                // Left by an interrupted attempt of the same job.
                Err(e) if status_of(&e) == Some(409) => {
                    self.remove_config(&c.name).await?;
                    create().await
                }
                r => r,
            };
            let id = made
                .map_err(|e| EngineError::Copy {
                    name: job.name.clone(),
                    message: format!("config {}: {e}", c.name),
                })?
                .id;
            created.push(id.clone());
            refs.push(TaskSpecContainerSpecConfigs {
                file: Some(TaskSpecContainerSpecFile1 {
                    name: Some(c.target.clone()),
                    uid: Some("0".into()),
                    gid: Some("0".into()),
                    mode: Some(0o444),
                }),
                config_id: Some(id),
                config_name: Some(c.name.clone()),
                ..Default::default()
            });
        }
        Ok(refs)
    }

    pub(super) async fn remove_config(&self, id: &str) -> Result<(), EngineError> {
        match self.docker().delete_config(id).await {
            Ok(()) => Ok(()),
            Err(e) if status_of(&e) == Some(404) => Ok(()),
            Err(e) => Err(EngineError::Remove {
                name: format!("config {id}"),
                message: e.to_string(),
            }),
        }
    }

    pub(super) async fn create_service(
        &self,
        spec: ServiceSpec,
        job: &JobSpec,
    ) -> Result<String, EngineError> {
        let name = spec.name.clone().unwrap_or_default();
        let create = || self.docker().create_service(spec.clone(), None);
        let made = match create().await {
            Err(e) if status_of(&e) == Some(409) => {
                self.remove_service(&name).await?;
                create().await
            }
            r => r,
        };
        made.map(|r| r.id.unwrap_or(name))
            .map_err(|e| EngineError::Create {
                name: job.name.clone(),
                message: e.to_string(),
            })
    }
}
