//! Removing a job's service without stranding its container on a node that is down.
//!
//! Swarm removes a removed service's containers through each task's node: the manager marks
//! the tasks for removal and each node's agent removes its container. A node that is down
//! when that happens never hears of it. When it comes back, its agent drops the tasks the
//! manager no longer assigns and leaves their containers (stopped) in place, where only that
//! node's own daemon could remove them. Seen here on Docker 20.10: a worker's daemon killed
//! mid-run, the lost job's service removed at once, and after the worker rejoined its
//! container was still there 300 s later.
//!
//! So a service with a task on a node that is down (and still in the swarm) is kept, with its
//! configs, instead of removed: it is left out of the run's leftovers, reported as a problem
//! of the run, and removed the normal way (which removes its container too) by the first reap
//! that finds the node back up. The run's own reap at its end cannot (the node is down), so
//! that is the next run's reap at its start: the service's owner is gone by then. A node that
//! left the swarm (`docker node rm`) holds nothing Swarm could reach: its services go at once.

use std::collections::HashMap;

use bollard::models::Task;
use bollard::query_parameters::ListTasksOptionsBuilder;

use super::{NodeView, SwarmEngine};
use crate::engine::docker::status_of;
use crate::engine::EngineError;

/// The node that would strand a task's container if its service were removed now: the node
/// of a task that is down but still in the swarm. `None` when every node holding a task is up
/// or gone for good (or no task was placed).
pub(super) fn stranding_node<'a>(tasks: &[Task], nodes: &'a [NodeView]) -> Option<&'a NodeView> {
    tasks
        .iter()
        .filter_map(|t| t.node_id.as_deref().filter(|n| !n.is_empty()))
        .filter_map(|id| nodes.iter().find(|n| n.id == id))
        .find(|n| !n.up)
}

/// What removing a job's service did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Removal {
    /// The service is gone (or was already).
    Removed,
    /// Kept: its task is on this node, which is down (see the module header).
    Kept {
        /// The node, as `hostname (id)`.
        node: String,
    },
}

/// The message of a service kept because of `node`.
pub(super) fn kept_message(service: &str, node: &str) -> String {
    format!(
        "service {service} kept: its task is on node {node}, which is down. Removed now, Swarm \
         would leave the task's container on that node for good; the first swe-eval run on \
         this swarm after the node is back removes the service and its container (if the node \
         will not come back, `docker node rm` it and the next run removes the service)"
    )
}

impl SwarmEngine {
    /// Every task of service `id`.
    pub(super) async fn tasks_of(&self, id: &str) -> Result<Vec<Task>, EngineError> {
        let filters = HashMap::from([("service".to_string(), vec![id.to_string()])]);
        self.docker()
            .list_tasks(Some(
                ListTasksOptionsBuilder::default().filters(&filters).build(),
            ))
            .await
            .map_err(|e| EngineError::Wait {
                name: id.into(),
                message: format!("list tasks: {e}"),
            })
    }

    /// The node (`hostname (id)`) that keeps service `id` from being removed, if any.
    pub(super) async fn stranded_on(&self, id: &str) -> Result<Option<String>, EngineError> {
        let tasks = self.tasks_of(id).await?;
        if tasks.is_empty() {
            return Ok(None);
        }
        let nodes = self.nodes().await?;
        Ok(stranding_node(&tasks, &nodes).map(|n| format!("{} ({})", n.hostname, n.id)))
    }

    /// Removes a job's service unless that would strand its container (see the module
    /// header); a kept service is remembered for [`SwarmEngine::kept_problems`].
    pub(super) async fn remove_job_service(
        &self,
        id: &str,
        name: &str,
    ) -> Result<Removal, EngineError> {
        if let Some(node) = self.stranded_on(id).await? {
            self.kept
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(name.to_string(), node.clone());
            return Ok(Removal::Kept { node });
        }
        self.remove_service(id).await?;
        Ok(Removal::Removed)
    }

    /// Removes service `id` (a name or an id); one already gone is not an error.
    pub(super) async fn remove_service(&self, id: &str) -> Result<(), EngineError> {
        match self.docker().delete_service(id).await {
            Ok(()) => Ok(()),
            Err(e) if status_of(&e) == Some(404) => Ok(()),
            Err(e) => Err(EngineError::Remove {
                name: format!("service {id}"),
                message: e.to_string(),
            }),
        }
    }

    /// The services kept so far, as problems of the run.
    pub(super) fn kept_problems(&self) -> Vec<String> {
        let kept = std::mem::take(&mut *self.kept.lock().unwrap_or_else(|p| p.into_inner()));
        kept.iter()
            .map(|(service, node)| kept_message(service, node))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bollard::models::TaskState;

    fn node(id: &str, up: bool) -> NodeView {
        NodeView {
            id: id.into(),
            hostname: format!("host-{id}"),
            ready: up,
            up,
            cpus: 2,
        }
    }

    fn task_on(node: Option<&str>) -> Task {
        Task {
            node_id: node.map(String::from),
            status: Some(bollard::models::TaskStatus {
                state: Some(TaskState::RUNNING),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_task_on_a_node_that_is_down_strands_its_service() {
        let nodes = [node("m", true), node("w", false)];
        let got = stranding_node(&[task_on(Some("m")), task_on(Some("w"))], &nodes);
        assert_eq!(got.map(|n| n.id.as_str()), Some("w"));
    }

    #[test]
    fn tasks_on_nodes_up_gone_or_unplaced_strand_nothing() {
        let nodes = [node("m", true), node("w", false)];
        assert!(stranding_node(&[task_on(Some("m"))], &nodes).is_none());
        // A node removed from the swarm: nothing there Swarm could reach.
        assert!(stranding_node(&[task_on(Some("gone"))], &nodes).is_none());
        assert!(stranding_node(&[task_on(None), task_on(Some(""))], &nodes).is_none());
        assert!(stranding_node(&[], &nodes).is_none());
    }

    #[test]
    fn a_drained_node_that_is_up_strands_nothing() {
        // Drained: not ready for new jobs, but up, so it hears of the removal.
        let drained = NodeView {
            ready: false,
            ..node("d", true)
        };
        assert!(stranding_node(&[task_on(Some("d"))], &[drained]).is_none());
    }

    #[test]
    fn the_kept_message_names_service_node_and_remedy() {
        let m = kept_message("swe-eval-r-1-0-1", "w1 (abc)");
        assert!(m.contains("swe-eval-r-1-0-1") && m.contains("w1 (abc)"));
        assert!(m.contains("docker node rm"));
    }
}
