//! Similarities kept by content: the score of a patch against its instance's gold patch is a
//! pure function of the two, and the dataset fixes the gold patch of an instance id, so the
//! score is kept under the SHA-256 of (instance id, patch) and a request that repeats a patch
//! (GRPO groups repeat many) costs a hash and a lookup instead of a comparison.
//!
//! Bounded: at most [`SIMILARITY_ENTRIES`] scores and [`SIMILARITY_BYTES`] bytes as
//! [`Memo`] counts them (key, score and its format text), the oldest forgotten first.

use std::sync::{Mutex, MutexGuard};

use sha2::{Digest, Sha256};

use super::memo::Memo;

/// A prediction's similarity, reward and format.
#[derive(Debug, Clone)]
pub(super) struct Score {
    pub similarity: f64,
    pub reward: f64,
    pub format: String,
}

/// Scores kept at most.
pub(super) const SIMILARITY_ENTRIES: usize = 65_536;

/// Bytes of scores kept at most (about 110 bytes each).
pub(super) const SIMILARITY_BYTES: usize = 8 << 20;

/// The content key of `patch` sent for `instance_id`: the instance id's length, the id, then
/// the patch, hashed (the length keeps (`a`, `bc`) apart from (`ab`, `c`)).
fn content_key(instance_id: &str, patch: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update((instance_id.len() as u64).to_le_bytes());
    h.update(instance_id.as_bytes());
    h.update(patch.as_bytes());
    h.finalize().into()
}

/// The scores kept, behind their own lock (held for a lookup or an insertion only, never
/// while a score is computed).
pub(super) struct Similarities {
    memo: Mutex<Memo<[u8; 32], Score>>,
}

impl Similarities {
    /// An empty cache of at most `entries` scores and `bytes` bytes.
    pub(super) fn new(entries: usize, bytes: usize) -> Self {
        Similarities {
            memo: Mutex::new(Memo::bounded(entries, bytes)),
        }
    }

    fn memo(&self) -> MutexGuard<'_, Memo<[u8; 32], Score>> {
        self.memo.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The score of `patch` for `instance_id`: the one kept, else `compute()`'s (then kept).
    pub(super) fn score(
        &self,
        instance_id: &str,
        patch: &str,
        compute: impl FnOnce() -> Score,
    ) -> Score {
        let key = content_key(instance_id, patch);
        if let Some(s) = self.memo().get(&key) {
            return s;
        }
        let score = compute();
        self.memo()
            .insert_sized(key, score.clone(), score.format.capacity());
        score
    }

    /// Scores kept and their bytes.
    #[cfg(test)]
    fn size(&self) -> (usize, usize) {
        let m = self.memo();
        (m.len(), m.bytes())
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::collections::HashMap;

    use swe_eval_core::reward::Oracle;

    use super::*;

    /// The mini benchmark's gold patches and predictions, by instance.
    fn mini() -> (HashMap<String, String>, Vec<(String, String)>) {
        let read = |text: &str, field: &str| -> Vec<(String, String)> {
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| {
                    let v: serde_json::Value = serde_json::from_str(l).unwrap();
                    let id = v["instance_id"].as_str().unwrap().to_string();
                    (id, v[field].as_str().unwrap_or("").to_string())
                })
                .collect()
        };
        let golds = read(swe_eval_core::mini::DATASET, "patch")
            .into_iter()
            .collect();
        (golds, read(swe_eval_core::mini::PREDICTIONS, "model_patch"))
    }

    fn computed(gold: &str, patch: &str) -> Score {
        let r = Oracle::new(gold).unidiff_reward(patch);
        Score {
            similarity: r.similarity,
            reward: r.reward,
            format: r.format.as_string(),
        }
    }

    fn same(a: &Score, b: &Score) -> bool {
        a.similarity.to_bits() == b.similarity.to_bits()
            && a.reward.to_bits() == b.reward.to_bits()
            && a.format == b.format
    }

    #[test]
    fn a_hit_answers_what_the_comparison_answered_without_comparing_again() {
        let (golds, preds) = mini();
        let cache = Similarities::new(SIMILARITY_ENTRIES, SIMILARITY_BYTES);
        let calls = Cell::new(0);
        let mut distinct = std::collections::HashSet::new();
        for (id, patch) in &preds {
            let direct = computed(&golds[id], patch);
            let miss = cache.score(id, patch, || {
                calls.set(calls.get() + 1);
                computed(&golds[id], patch)
            });
            assert!(same(&miss, &direct), "{id}: {miss:?} against {direct:?}");
            distinct.insert((id.clone(), patch.clone()));
        }
        assert_eq!(calls.get(), distinct.len());
        // Every prediction again: answered from the cache, with the same bits.
        for (id, patch) in &preds {
            let hit = cache.score(id, patch, || panic!("{id}: compared again"));
            assert!(same(&hit, &computed(&golds[id], patch)), "{id}");
        }
        assert_eq!(cache.size().0, distinct.len());
    }

    #[test]
    fn the_same_patch_for_another_instance_is_another_entry() {
        let (golds, _) = mini();
        let (calc, wrap) = ("swe-eval-mini__calc-1", "swe-eval-mini__strutils-1");
        // calc's gold patch, sent for calc (similarity 1) and for strutils (0: other files).
        let patch = &golds[calc];
        let cache = Similarities::new(16, 1 << 20);
        let own = cache.score(calc, patch, || computed(&golds[calc], patch));
        let other = cache.score(wrap, patch, || computed(&golds[wrap], patch));
        assert_eq!((own.similarity, other.similarity), (1.0, 0.0));
        assert_eq!(cache.size().0, 2);
        // Each is found under its own instance.
        let again = cache.score(wrap, patch, || panic!("strutils compared again"));
        assert!(same(&again, &other));
        // An id and a patch that concatenate alike do not share a key.
        assert_ne!(content_key("ab", "c"), content_key("a", "bc"));
    }

    #[test]
    fn the_cache_keeps_within_its_entries_and_its_bytes() {
        let score = |i: usize| Score {
            similarity: i as f64,
            reward: i as f64,
            format: "ok".repeat(i % 5),
        };
        let by_entries = Similarities::new(100, usize::MAX);
        let by_bytes = Similarities::new(usize::MAX, 64 << 10);
        for i in 0..5_000 {
            let patch = format!("patch {i}");
            for c in [&by_entries, &by_bytes] {
                let got = c.score("x", &patch, || score(i));
                assert_eq!(got.similarity, i as f64);
            }
            assert!(by_entries.size().0 <= 100);
            assert!(by_bytes.size().1 <= 64 << 10);
        }
        assert_eq!(by_entries.size().0, 100);
        // Full: the newest are kept, the oldest forgotten (computed again when asked).
        let calls = Cell::new(0);
        let newest = by_bytes.score("x", "patch 4999", || {
            calls.set(calls.get() + 1);
            score(4999)
        });
        by_bytes.score("x", "patch 0", || {
            calls.set(calls.get() + 1);
            score(0)
        });
        assert_eq!((newest.similarity, calls.get()), (4999.0, 1));
        assert!(by_bytes.size().0 > 100, "{:?}", by_bytes.size());
    }
}
