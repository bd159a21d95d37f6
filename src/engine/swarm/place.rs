//! Where a job should run. Swarm places a one-task service on the node with the fewest tasks;
//! it does not know which nodes already hold the job's image. The engine remembers where each
//! image's jobs have run (a node that ran one has pulled the image) and pins a job to such a
//! node with a placement constraint, unless that node is busier than the least busy ready
//! node by more than [`SLACK`] jobs: then Swarm chooses, and that node pulls the image too.
//! Node labels would not do better: Swarm's placement preferences can only spread tasks over
//! a label's values, not prefer a labelled node, so a label would be as hard a constraint as a
//! node id, at the cost of a node update per image and node (ARCHITECTURE.md).

use std::collections::{BTreeMap, BTreeSet};

/// How many more running jobs a node holding the image may have than the least busy node.
pub const SLACK: usize = 1;

/// Where each image's jobs have run, and how many of this engine's jobs run on each node.
#[derive(Debug, Default)]
pub struct Placement {
    /// Image reference -> nodes that ran a job of it.
    holders: BTreeMap<String, BTreeSet<String>>,
    /// Node -> this engine's jobs running there.
    running: BTreeMap<String, usize>,
}

impl Placement {
    /// The node to pin a job of `image` to, among `ready` nodes, if any should be.
    pub fn choose(&self, image: &str, ready: &[String]) -> Option<String> {
        let load = |n: &String| self.running.get(n).copied().unwrap_or(0);
        let least = ready.iter().map(load).min()?;
        let holders = self.holders.get(image)?;
        ready
            .iter()
            .filter(|n| holders.contains(*n))
            .min_by_key(|n| (load(n), (*n).clone()))
            .filter(|n| load(n) <= least + SLACK)
            .cloned()
    }

    /// A job of `image` started on `node`.
    pub fn started(&mut self, image: &str, node: &str) {
        self.holders
            .entry(image.to_string())
            .or_default()
            .insert(node.to_string());
        *self.running.entry(node.to_string()).or_default() += 1;
    }

    /// A job that started on `node` ended.
    pub fn ended(&mut self, node: &str) {
        if let Some(n) = self.running.get_mut(node) {
            *n = n.saturating_sub(1);
        }
    }

    /// `node` left or died: its images are no longer known to be reachable there.
    pub fn forget(&mut self, node: &str) {
        for h in self.holders.values_mut() {
            h.remove(node);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn an_unseen_image_is_left_to_swarm() {
        let p = Placement::default();
        assert_eq!(p.choose("img", &nodes(&["a", "b"])), None);
        assert_eq!(p.choose("img", &[]), None);
    }

    #[test]
    fn a_job_goes_where_its_image_ran_unless_that_node_is_much_busier() {
        let mut p = Placement::default();
        let ready = nodes(&["a", "b"]);
        p.started("img", "a");
        p.ended("a");
        assert_eq!(p.choose("img", &ready).as_deref(), Some("a"));
        p.started("img", "a"); // a: 1 running, b: 0 -> within the slack
        assert_eq!(p.choose("img", &ready).as_deref(), Some("a"));
        p.started("other", "a"); // a: 2, b: 0 -> too busy
        assert_eq!(p.choose("img", &ready), None);
        p.started("img", "b"); // b holds it too, and is the less busy holder
        assert_eq!(p.choose("img", &ready).as_deref(), Some("b"));
    }

    #[test]
    fn nodes_that_are_not_ready_or_were_forgotten_are_never_chosen() {
        let mut p = Placement::default();
        p.started("img", "a");
        p.ended("a");
        assert_eq!(p.choose("img", &nodes(&["b"])), None);
        p.forget("a");
        assert_eq!(p.choose("img", &nodes(&["a", "b"])), None);
    }
}
