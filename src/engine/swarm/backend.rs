//! [`Engine`] for [`SwarmEngine`], as a [`Forward`](crate::engine::Forward) to the manager's own daemon: images are
//! built, held and removed there (every operation not written here is handed to it); jobs
//! run as services; the run's services and configs are listed and removed beside its
//! containers.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use bollard::query_parameters::{ListConfigsOptionsBuilder, ListServicesOptionsBuilder};

use super::inputs;
use super::strand;
use super::*;
use crate::engine::docker::label_filters;
use crate::engine::{DockerEngine, Engine, EngineError, EngineInfo, JobOutput, JobSpec, Resource};

/// Id prefixes of the Swarm objects [`Engine::list_containers`] returns beside containers.
pub const SERVICE_PREFIX: &str = "service:";
/// See [`SERVICE_PREFIX`]: the prefix of configs.
pub const CONFIG_PREFIX: &str = "config:";

/// A spec's name and labels.
type Named = (Option<String>, Option<HashMap<String, String>>);

/// A service or config as a [`Resource`], its id prefixed with its kind.
fn resource(prefix: &str, id: Option<String>, spec: Option<Named>) -> Resource {
    let (name, labels) = spec.unwrap_or_default();
    Resource {
        id: format!("{prefix}{}", id.unwrap_or_default()),
        name: name.unwrap_or_default(),
        labels: labels.unwrap_or_default().into_iter().collect(),
    }
}

impl crate::engine::Forward for SwarmEngine {
    type To = DockerEngine;

    /// The manager's own daemon: images are built, held and removed there.
    fn to(&self) -> &DockerEngine {
        &self.local
    }

    async fn info(&self) -> Result<EngineInfo, EngineError> {
        let mut info = self.local.info().await?;
        // Jobs run on the ready nodes, each job given one CPU.
        info.cpus = self
            .nodes()
            .await
            .ok()
            .map(|nodes| {
                nodes
                    .iter()
                    .filter(|n| n.ready)
                    .map(|n| n.cpus)
                    .sum::<usize>()
            })
            .filter(|&n| n > 0);
        Ok(info)
    }

    async fn run_job(&self, job: JobSpec) -> Result<JobOutput, EngineError> {
        let t0 = Instant::now();
        let mut out = JobOutput::default();
        let image = self.publish(&job.image).await?;
        let name = service_name(&job.name);
        let plan = if job.network {
            inputs::plan(&job.files, &job.command, &name)
        } else {
            let mut files = job.files.clone();
            files.push(crate::engine::FileIn {
                path: "/etc/resolv.conf".into(),
                contents: NO_DNS.to_vec(),
                mode: 0o644,
            });
            inputs::plan(&files, &job.command, &name)
        };
        let mut configs = Vec::new();
        let mut node = None;
        let mut keep_configs = false;
        let mut removed = Ok(());
        let result = match self.create_configs(&plan, &job, &mut configs).await {
            Err(e) => Err(e),
            Ok(refs) => {
                let ready: Vec<String> = match self.nodes().await {
                    Ok(n) => n.into_iter().filter(|n| n.ready).map(|n| n.id).collect(),
                    Err(_) => Vec::new(),
                };
                let pin = self.place().choose(&image, &ready);
                let network = if job.network {
                    self.opts.network.as_str()
                } else {
                    self.no_network.as_str()
                };
                let spec = service_spec(
                    &job,
                    &name,
                    &image,
                    plan.command.clone(),
                    refs,
                    pin.as_deref(),
                    network,
                );
                match self.create_service(spec, &job).await {
                    Err(e) => Err(e),
                    Ok(id) => {
                        let driven = self.drive(&id, &job, &image, t0, &mut out, &mut node).await;
                        match self.remove_job_service(&id, &name).await {
                            // Its configs stay with it (a service in use holds them).
                            Ok(strand::Removal::Kept { .. }) => keep_configs = true,
                            Ok(strand::Removal::Removed) => {}
                            Err(e) => removed = Err(e),
                        }
                        driven.and(removed)
                    }
                }
            }
        };
        if let Some(n) = &node {
            self.place().ended(n);
        }
        let mut configs_removed = Ok(());
        if keep_configs {
            configs.clear();
        }
        for id in &configs {
            if let Err(e) = self.remove_config(id).await {
                configs_removed = Err(e);
            }
        }
        out.close_timing(t0);
        result?;
        configs_removed?;
        Ok(out)
    }

    async fn list_containers(
        &self,
        labels: BTreeMap<String, String>,
    ) -> Result<Vec<Resource>, EngineError> {
        let mut all = self.local.list_containers(labels.clone()).await?;
        let filters = label_filters(&labels);
        let list_err = |what: &str, e: bollard::errors::Error| EngineError::List {
            what: what.into(),
            message: e.to_string(),
        };
        let services = self
            .docker()
            .list_services(Some(
                ListServicesOptionsBuilder::default()
                    .filters(&filters)
                    .build(),
            ))
            .await
            .map_err(|e| list_err("services", e))?;
        // A service whose task is on a node that is down stays, with its configs, until the
        // node is back (see [`strand`]): it is not a leftover to remove yet. (The run that
        // kept it reported it.)
        let mut held_configs = std::collections::BTreeSet::new();
        for s in services {
            let id = s.id.clone().unwrap_or_default();
            if self.stranded_on(&id).await?.is_some() {
                held_configs.extend(
                    s.spec
                        .and_then(|x| x.task_template)
                        .and_then(|t| t.container_spec)
                        .and_then(|c| c.configs)
                        .unwrap_or_default()
                        .into_iter()
                        .filter_map(|c| c.config_id),
                );
                continue;
            }
            all.push(resource(
                SERVICE_PREFIX,
                s.id,
                s.spec.map(|x| (x.name, x.labels)),
            ));
        }
        // After the services: a config is removable once no service uses it.
        let configs = self
            .docker()
            .list_configs(Some(
                ListConfigsOptionsBuilder::default()
                    .filters(&filters)
                    .build(),
            ))
            .await
            .map_err(|e| list_err("configs", e))?;
        all.extend(
            configs
                .into_iter()
                .filter(|c| !c.id.as_ref().is_some_and(|id| held_configs.contains(id)))
                .map(|c| resource(CONFIG_PREFIX, c.id, c.spec.map(|x| (x.name, x.labels)))),
        );
        Ok(all)
    }

    async fn remove_container(&self, id: &str) -> Result<(), EngineError> {
        if let Some(s) = id.strip_prefix(SERVICE_PREFIX) {
            // Its node may have gone down since it was listed.
            if let Some(node) = self.stranded_on(s).await? {
                return Err(EngineError::Remove {
                    name: format!("service {s}"),
                    message: strand::kept_message(s, &node),
                });
            }
            self.remove_service(s).await
        } else if let Some(c) = id.strip_prefix(CONFIG_PREFIX) {
            self.remove_config(c).await
        } else {
            self.local.remove_container(id).await
        }
    }

    /// Jobs are services created when they may start: nothing is prepared ahead.
    fn prepares_ahead(&self) -> bool {
        false
    }

    /// The services' containers are not counted (their state is polled per job).
    fn jobs_running(&self) -> Option<usize> {
        None
    }

    fn exported(&self) -> Vec<(String, std::time::Duration)> {
        self.pushed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    async fn finish_run(&self) -> Vec<String> {
        let names = std::mem::take(
            &mut *self
                .registry_names
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        );
        let mut problems = self.kept_problems();
        for n in names {
            if let Err(e) = self.remove_own_registry_name(&n).await {
                problems.push(format!(
                    "registry name {n} not removed from the manager: {e}"
                ));
            }
        }
        // Registry names of this tool's images left by runs that were killed (their names
        // were never removed), and the digest names the manager's own tasks pulled. One in use
        // (a container, a live run's job) stays for a later run; a live run's push that loses
        // its name meanwhile fails and is retried.
        if let Some(registry) = &self.opts.registry {
            for n in self.leftover_registry_names(registry).await {
                match self.local.remove_image(&n).await {
                    Ok(()) | Err(EngineError::ImageInUse { .. }) => {}
                    Err(e) => problems.push(format!(
                        "registry name {n} not removed from the manager: {e}"
                    )),
                }
            }
        }
        problems
    }
}
