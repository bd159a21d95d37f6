//! The network of jobs without network access.

use std::collections::HashMap;

use bollard::Docker;

use crate::engine::EngineError;

/// The network of jobs without network access: an internal overlay (no gateway, no route
/// out). Swarm has no `none` network for services, and a task attached to no network joins the
/// node's default bridge, with a route out.
pub const NO_NETWORK: &str = "swe-eval-none";
/// What a job without network access gets as `/etc/resolv.conf`: a name server that is not
/// there, so lookups fail at once as under `--network none` (Swarm's embedded DNS on the
/// internal network takes 20 s to fail each lookup).
pub const NO_DNS: &[u8] = b"nameserver 127.0.0.1\n";

/// The id of the [`NO_NETWORK`] network, created if the swarm has none. It stays (one object,
/// shared by every run; leaving the swarm removes it). Two runs that create it at once make
/// two networks of that name: both then use the oldest.
pub(super) async fn isolated_network(docker: &Docker) -> Result<String, EngineError> {
    let err = |message: String| EngineError::Connect {
        endpoint: format!("swarm network {NO_NETWORK}"),
        message,
    };
    let find = || async {
        let filters = HashMap::from([("name".to_string(), vec![NO_NETWORK.to_string()])]);
        let list = docker
            .list_networks(Some(bollard::query_parameters::ListNetworksOptions {
                filters: Some(filters),
            }))
            .await
            .map_err(|e| err(e.to_string()))?;
        let mut ours: Vec<_> = list
            .into_iter()
            .filter(|n| {
                n.name.as_deref() == Some(NO_NETWORK) && n.scope.as_deref() == Some("swarm")
            })
            .filter_map(|n| Some((n.created.map(|c| c.to_string()).unwrap_or_default(), n.id?)))
            .collect();
        ours.sort();
        Ok::<_, EngineError>(ours.into_iter().next().map(|(_, id)| id))
    };
    if let Some(id) = find().await? {
        return Ok(id);
    }
    docker
        .create_network(bollard::models::NetworkCreateRequest {
            name: NO_NETWORK.into(),
            driver: Some("overlay".into()),
            internal: Some(true),
            labels: Some(HashMap::from([(
                "swe-eval.network".to_string(),
                "none".to_string(),
            )])),
            ..Default::default()
        })
        .await
        .map_err(|e| err(e.to_string()))?;
    find()
        .await?
        .ok_or_else(|| err("created, then not found".into()))
}
