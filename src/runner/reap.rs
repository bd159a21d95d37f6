//! Removing containers by label: at start those of dead processes, at the end (or on a kill)
//! this process's own. Image holds are left to their owner.

use std::collections::BTreeMap;

use crate::engine::{Engine, LABEL_HOLD, LABEL_OWNER, LABEL_RUN_ID, LABEL_TOOL};

/// Which containers a reap removes.
#[derive(Debug, Clone, Copy)]
pub(super) enum Reap<'a> {
    /// At start: containers whose owning process (on this host) is gone, whatever their run,
    /// and unowned ones of this run id. A live process's containers are never touched, even
    /// under the same run id (another output folder may use it).
    Stale { run_id: &'a str },
    /// At the end or on a kill: this process's own containers.
    Mine { owner: &'a str },
}

/// Removes containers as `which` says. Returns the names removed and those that could not
/// be; failures are noted and the run goes on.
pub(super) async fn reap<E: Engine>(
    engine: &E,
    which: Reap<'_>,
    problems: &mut Vec<String>,
) -> (Vec<String>, Vec<String>) {
    let all = match engine
        .list_containers(BTreeMap::from([(LABEL_TOOL.to_string(), String::new())]))
        .await
    {
        Ok(list) => list,
        Err(e) => {
            problems.push(format!("cannot list leftover containers: {e}"));
            return (Vec::new(), Vec::new());
        }
    };
    let (mut removed, mut failed) = (Vec::new(), Vec::new());
    for c in all {
        let owner = c.labels.get(LABEL_OWNER);
        let doomed = match which {
            Reap::Stale { run_id } => match owner {
                Some(o) => crate::owner::owner_is_dead(o),
                None => c.labels.get(LABEL_RUN_ID).is_some_and(|r| r == run_id),
            },
            // Holds outlive the jobs: the caller releases them before it removes images.
            Reap::Mine { owner: me } => {
                owner.is_some_and(|o| o == me) && !c.labels.contains_key(LABEL_HOLD)
            }
        };
        if doomed {
            match engine.remove_container(&c.id).await {
                Ok(()) => removed.push(c.name),
                Err(e) => {
                    problems.push(format!("cannot remove leftover container {}: {e}", c.name));
                    failed.push(c.name);
                }
            }
        }
    }
    (removed, failed)
}
