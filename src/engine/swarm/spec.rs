//! What a job becomes on Swarm: a service's name and spec, and what its task's state means.

use std::collections::HashMap;

use bollard::models::{
    NetworkAttachmentConfig, ServiceSpec, ServiceSpecMode, ServiceSpecModeReplicated, Task,
    TaskSpec, TaskSpecContainerSpec, TaskSpecContainerSpecConfigs, TaskSpecLogDriver,
    TaskSpecPlacement, TaskSpecResources, TaskSpecRestartPolicy,
    TaskSpecRestartPolicyConditionEnum, TaskState,
};

use crate::engine::JobSpec;

/// A service name from a job's container name: Swarm wants at most 63 characters of
/// `[a-zA-Z0-9-]`; a longer one keeps its start and a hash of the whole.
pub fn service_name(job_name: &str) -> String {
    let clean: String = job_name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    if clean.len() <= 63 {
        return clean;
    }
    use sha2::Digest;
    let h = hex::encode(sha2::Sha256::digest(job_name.as_bytes()));
    format!("{}-{}", &clean[..46], &h[..16])
}

/// The name `image` gets in `registry`: its own registry host (if any) replaced.
pub fn registry_name(registry: &str, image: &str) -> String {
    let rest = match image.split_once('/') {
        Some((first, rest))
            if first.contains('.') || first.contains(':') || first == "localhost" =>
        {
            rest
        }
        _ => image,
    };
    format!("{}/{rest}", registry.trim_end_matches('/'))
}

/// What a task's state means for the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskPhase {
    /// Not started yet (scheduling, pulling, starting).
    Waiting,
    /// Its container is running.
    Running,
    /// Ended by itself, with this exit code.
    Exited(i64),
    /// Refused by its node; the message.
    Rejected(String),
    /// Ended by Swarm (shut down, orphaned by a node that went away, removed).
    Lost(String),
}

/// The phase of `task`, from its state (and its error or message when it failed).
pub fn phase(task: &Task) -> TaskPhase {
    let status = task.status.clone().unwrap_or_default();
    let why = || {
        let state = status.state.map(|s| s.to_string()).unwrap_or_default();
        let err = status.err.clone().unwrap_or_default();
        let msg = status.message.clone().unwrap_or_default();
        format!("task {state}: {}", if err.is_empty() { msg } else { err })
    };
    match status.state {
        Some(TaskState::RUNNING) => TaskPhase::Running,
        Some(TaskState::COMPLETE) => TaskPhase::Exited(0),
        Some(TaskState::FAILED) => match status.container_status.and_then(|c| c.exit_code) {
            // A task that failed before its container ran has no exit code: not the job's.
            Some(code) if code != 0 => TaskPhase::Exited(code),
            _ => TaskPhase::Lost(why()),
        },
        Some(TaskState::REJECTED) => TaskPhase::Rejected(why()),
        Some(TaskState::SHUTDOWN | TaskState::REMOVE | TaskState::ORPHANED) => {
            TaskPhase::Lost(why())
        }
        _ => TaskPhase::Waiting,
    }
}

/// The service a job becomes.
pub fn service_spec(
    job: &JobSpec,
    name: &str,
    image: &str,
    command: Vec<String>,
    configs: Vec<TaskSpecContainerSpecConfigs>,
    pin: Option<&str>,
    network: &str,
) -> ServiceSpec {
    let labels: HashMap<String, String> = job.labels.clone().into_iter().collect();
    // The node keeps at most twice the job's output bound on disk (in two files).
    let log_file = (job.max_output_bytes.max(1 << 20)).to_string();
    ServiceSpec {
        name: Some(name.to_string()),
        labels: Some(labels.clone()),
        // One replica that is never restarted. Not `replicated-job`: Docker 20.10 leaves the
        // containers of a job's tasks on their nodes after the service is removed, while a
        // replicated service's go with it.
        mode: Some(ServiceSpecMode {
            replicated: Some(ServiceSpecModeReplicated { replicas: Some(1) }),
            ..Default::default()
        }),
        task_template: Some(TaskSpec {
            container_spec: Some(TaskSpecContainerSpec {
                // The task's container carries the run's labels too: on the manager's own
                // daemon the runner's reaps find it like a plain container (Swarm left the
                // containers of jobs lost in a manager crash there, their services removed).
                labels: Some(labels),
                image: Some(image.to_string()),
                command: Some(command),
                env: Some(job.env.clone()),
                dir: job.working_dir.clone(),
                configs: (!configs.is_empty()).then_some(configs),
                stop_signal: Some("SIGKILL".into()),
                stop_grace_period: Some(0),
                ..Default::default()
            }),
            resources: Some(TaskSpecResources {
                limits: Some(bollard::models::Limit {
                    nano_cpus: job.limits.cpus.map(|c| (c * 1e9) as i64),
                    memory_bytes: job.limits.memory_bytes,
                    pids: job.limits.pids,
                }),
                ..Default::default()
            }),
            restart_policy: Some(TaskSpecRestartPolicy {
                condition: Some(TaskSpecRestartPolicyConditionEnum::NONE),
                max_attempts: Some(0),
                ..Default::default()
            }),
            placement: pin.map(|node| TaskSpecPlacement {
                constraints: Some(vec![format!("node.id=={node}")]),
                ..Default::default()
            }),
            networks: Some(vec![NetworkAttachmentConfig {
                target: Some(network.to_string()),
                ..Default::default()
            }]),
            log_driver: Some(TaskSpecLogDriver {
                name: Some("json-file".into()),
                options: Some(HashMap::from([
                    ("max-size".to_string(), log_file),
                    ("max-file".to_string(), "2".to_string()),
                ])),
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{FileIn, Limits};
    use std::collections::BTreeMap;
    use std::time::Duration;

    fn job() -> JobSpec {
        JobSpec {
            image: "img".into(),
            name: "swe-eval.run 1.3.0".into(),
            labels: BTreeMap::from([("swe-eval".into(), "1".into())]),
            files: vec![FileIn {
                path: "/swe-eval/job.sh".into(),
                contents: b"echo hi".to_vec(),
                mode: 0o755,
            }],
            command: vec!["/bin/bash".into(), "/swe-eval/job.sh".into()],
            env: vec!["A=1".into()],
            working_dir: Some("/testbed".into()),
            limits: Limits::default(),
            network: false,
            timeout: Duration::from_secs(60),
            max_output_bytes: 8 << 20,
            watch: Vec::new(),
            gate: None,
        }
    }

    #[test]
    fn service_names_are_swarm_safe_and_unique_when_cut() {
        assert_eq!(service_name("swe-eval.mini.3.0"), "swe-eval-mini-3-0");
        let long_a = format!("swe-eval.{}.1.0", "r".repeat(80));
        let long_b = format!("swe-eval.{}.2.0", "r".repeat(80));
        let (a, b) = (service_name(&long_a), service_name(&long_b));
        assert_eq!(a.len(), 63);
        assert_ne!(a, b);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    }

    #[test]
    fn registry_names_replace_the_image_registry() {
        assert_eq!(
            registry_name("10.0.0.1:5000", "swe-eval/env:abc"),
            "10.0.0.1:5000/swe-eval/env:abc"
        );
        assert_eq!(registry_name("r:5000/", "ubuntu"), "r:5000/ubuntu");
        assert_eq!(registry_name("r:5000", "ghcr.io/x/y:1"), "r:5000/x/y:1");
        assert_eq!(registry_name("r:5000", "localhost:5000/x"), "r:5000/x");
        assert_eq!(
            registry_name("r:5000", "swebench/sweb.eval.x86_64.a_1776_b:latest"),
            "r:5000/swebench/sweb.eval.x86_64.a_1776_b:latest"
        );
    }

    #[test]
    fn a_job_is_a_one_shot_service_with_its_limits_and_no_network() {
        let j = job();
        let s = service_spec(
            &j,
            "svc",
            "reg/img@sha256:ab",
            vec!["c".into()],
            Vec::new(),
            None,
            "nonet-id",
        );
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["Mode"]["Replicated"]["Replicas"], 1);
        let t = &v["TaskTemplate"];
        assert_eq!(t["RestartPolicy"]["Condition"], "none");
        assert_eq!(t["Resources"]["Limits"]["NanoCPUs"], 1_000_000_000i64);
        assert_eq!(t["Resources"]["Limits"]["MemoryBytes"], 4i64 << 30);
        assert_eq!(t["Resources"]["Limits"]["Pids"], 1024);
        assert_eq!(t["Networks"][0]["Target"], "nonet-id", "{t}");
        assert!(t.get("Placement").is_none_or(|n| n.is_null()));
        assert_eq!(t["ContainerSpec"]["Image"], "reg/img@sha256:ab");
        assert_eq!(t["ContainerSpec"]["StopSignal"], "SIGKILL");
        assert_eq!(t["ContainerSpec"]["Dir"], "/testbed");
        assert_eq!(t["LogDriver"]["Name"], "json-file");
        assert_eq!(v["Labels"]["swe-eval"], "1");
        assert_eq!(
            t["ContainerSpec"]["Labels"]["swe-eval"], "1",
            "the container's too"
        );
        let s = service_spec(&j, "svc", "i", vec![], Vec::new(), Some("node1"), "bridge");
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            v["TaskTemplate"]["Placement"]["Constraints"][0],
            "node.id==node1"
        );
        assert_eq!(v["TaskTemplate"]["Networks"][0]["Target"], "bridge");
    }

    fn task(state: TaskState, exit: Option<i64>, err: &str) -> Task {
        Task {
            status: Some(bollard::models::TaskStatus {
                state: Some(state),
                err: Some(err.into()),
                container_status: Some(bollard::models::ContainerStatus {
                    exit_code: exit,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn task_states_map_to_job_phases() {
        use TaskState as S;
        for s in [S::NEW, S::PENDING, S::ASSIGNED, S::PREPARING, S::STARTING] {
            assert_eq!(phase(&task(s, None, "")), TaskPhase::Waiting, "{s}");
        }
        assert_eq!(phase(&task(S::RUNNING, None, "")), TaskPhase::Running);
        assert_eq!(phase(&task(S::COMPLETE, Some(0), "")), TaskPhase::Exited(0));
        assert_eq!(
            phase(&task(S::FAILED, Some(3), "non-zero exit (3)")),
            TaskPhase::Exited(3)
        );
        // Failed with no exit code: the container never ran the job.
        assert!(matches!(
            phase(&task(S::FAILED, None, "starting container failed")),
            TaskPhase::Lost(_)
        ));
        assert!(
            matches!(phase(&task(S::REJECTED, None, "No such image: x")), TaskPhase::Rejected(m) if m.contains("No such image"))
        );
        for s in [S::SHUTDOWN, S::ORPHANED, S::REMOVE] {
            assert!(
                matches!(phase(&task(s, None, "")), TaskPhase::Lost(_)),
                "{s}"
            );
        }
    }
}
