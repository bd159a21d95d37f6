//! A bounded map that forgets its oldest entries: the verdicts kept in memory in front of the
//! state database, so a cache hit is answered without a query.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

/// At most `capacity` entries; inserting past it forgets the one inserted longest ago.
#[derive(Debug)]
pub(super) struct Memo<K, V> {
    map: HashMap<K, V>,
    /// Keys in insertion order (each key once).
    order: VecDeque<K>,
    capacity: usize,
}

impl<K: Hash + Eq + Clone, V: Clone> Memo<K, V> {
    /// An empty memo of at most `capacity` entries (at least one).
    pub(super) fn new(capacity: usize) -> Self {
        Memo {
            map: HashMap::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    /// The value of `key`, if kept.
    pub(super) fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.map.get(key).cloned()
    }

    /// Keeps `value` under `key` (replacing its value if kept), forgetting the oldest entry
    /// when full.
    pub(super) fn insert(&mut self, key: K, value: V) {
        if let Some(v) = self.map.get_mut(&key) {
            *v = value;
            return;
        }
        while self.map.len() >= self.capacity {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            self.map.remove(&oldest);
        }
        self.order.push_back(key.clone());
        self.map.insert(key, value);
    }

    /// Entries kept.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_value_is_found_by_its_own_key_only_and_the_oldest_goes_past_the_bound() {
        let mut m: Memo<String, u32> = Memo::new(3);
        m.insert("a".into(), 1);
        m.insert("b".into(), 2);
        assert_eq!(m.get("a"), Some(1));
        // Other content, another key: not found.
        assert_eq!(m.get("a2"), None);
        // A new value under a kept key replaces it, and takes no second place.
        m.insert("a".into(), 10);
        assert_eq!((m.get("a"), m.len()), (Some(10), 2));
        m.insert("c".into(), 3);
        m.insert("d".into(), 4);
        // Bound 3: "a", inserted first, is forgotten; the others are kept.
        assert_eq!(m.len(), 3);
        assert_eq!(m.get("a"), None);
        assert_eq!(
            ["b", "c", "d"].map(|k| m.get(k)),
            [Some(2), Some(3), Some(4)]
        );
        for i in 0..100 {
            m.insert(format!("k{i}"), i);
        }
        assert_eq!(m.len(), 3);
        assert_eq!(m.get("k99"), Some(99));
        assert_eq!(m.get("k96"), None);
        // A capacity of 0 keeps one.
        let mut one: Memo<u8, u8> = Memo::new(0);
        one.insert(1, 1);
        one.insert(2, 2);
        assert_eq!((one.len(), one.get(&2)), (1, Some(2)));
    }
}
