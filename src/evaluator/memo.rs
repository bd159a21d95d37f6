//! A bounded map that forgets its oldest entries: the verdicts kept in memory in front of the
//! state database, so a cache hit is answered without a query, and the similarities kept by
//! content (`similarity`), so a patch sent again is not compared again.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

/// At most `capacity` entries and `max_bytes` bytes; inserting past either forgets the entries
/// inserted longest ago. An entry's bytes are its key's and value's size twice the key (the map
/// and the order each hold one) and the value, plus the heap bytes its inserter declares.
#[derive(Debug)]
pub(super) struct Memo<K, V> {
    /// Each value with its bytes.
    map: HashMap<K, (V, usize)>,
    /// Keys in insertion order (each key once).
    order: VecDeque<K>,
    capacity: usize,
    max_bytes: usize,
    /// The bytes of the entries kept.
    bytes: usize,
}

impl<K: Hash + Eq + Clone, V: Clone> Memo<K, V> {
    /// An empty memo of at most `capacity` entries (at least one), of any size.
    pub(super) fn new(capacity: usize) -> Self {
        Self::bounded(capacity, usize::MAX)
    }

    /// An empty memo of at most `capacity` entries (at least one) and `max_bytes` bytes.
    pub(super) fn bounded(capacity: usize, max_bytes: usize) -> Self {
        Memo {
            map: HashMap::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
            max_bytes,
            bytes: 0,
        }
    }

    /// The bytes an entry with `heap` bytes outside the key and value is counted for.
    fn entry_bytes(heap: usize) -> usize {
        2 * std::mem::size_of::<K>() + std::mem::size_of::<V>() + heap
    }

    /// The value of `key`, if kept.
    pub(super) fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.map.get(key).map(|(v, _)| v.clone())
    }

    /// Keeps `value` under `key` (replacing its value if kept), forgetting the oldest entries
    /// past either bound.
    pub(super) fn insert(&mut self, key: K, value: V) {
        self.insert_sized(key, value, 0);
    }

    /// [`Memo::insert`] of a value that holds `heap` bytes outside itself (a string's text).
    /// A value larger than the whole byte bound is not kept.
    pub(super) fn insert_sized(&mut self, key: K, value: V, heap: usize) {
        let size = Self::entry_bytes(heap);
        if let Some((v, old)) = self.map.get_mut(&key) {
            self.bytes = self.bytes - *old + size;
            *v = value;
            *old = size;
        } else {
            if size > self.max_bytes {
                return;
            }
            self.order.push_back(key.clone());
            self.map.insert(key, (value, size));
            self.bytes += size;
        }
        while self.map.len() > self.capacity || self.bytes > self.max_bytes {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if let Some((_, b)) = self.map.remove(&oldest) {
                self.bytes -= b;
            }
        }
    }

    /// Entries kept.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }

    /// Bytes kept, as counted against the bound.
    #[cfg(test)]
    pub(super) fn bytes(&self) -> usize {
        self.bytes
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

    #[test]
    fn the_byte_bound_forgets_the_oldest_entries_and_refuses_an_entry_larger_than_itself() {
        let each = Memo::<u64, u64>::entry_bytes(0);
        let mut m: Memo<u64, u64> = Memo::bounded(100, 3 * each + 10);
        for k in 0..3 {
            m.insert(k, k);
        }
        assert_eq!((m.len(), m.bytes()), (3, 3 * each));
        // 11 heap bytes more than fit: the two oldest go.
        m.insert_sized(3, 3, 11);
        assert_eq!((m.get(&0), m.get(&1)), (None, None));
        assert_eq!((m.get(&2), m.get(&3)), (Some(2), Some(3)));
        assert_eq!(m.bytes(), 2 * each + 11);
        // A value replaced is counted at its new size.
        m.insert_sized(3, 30, 0);
        assert_eq!((m.get(&3), m.bytes()), (Some(30), 2 * each));
        // Larger than the bound: not kept, and nothing else goes for it.
        m.insert_sized(9, 9, 4 * each);
        assert_eq!((m.get(&9), m.len()), (None, 2));
        for k in 10..1000 {
            m.insert_sized(k, k, (k % 7) as usize);
            assert!(m.bytes() <= 3 * each + 10 && m.len() <= 100);
        }
    }
}
