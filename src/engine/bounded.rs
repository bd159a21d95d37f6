//! A byte sink that keeps the head and the tail of a stream and counts what it dropped, so a
//! job that prints without end costs the orchestrator a fixed amount of memory. The head keeps
//! the setup and patch-application output; the tail keeps the test summary and the markers.

use std::collections::VecDeque;
use std::time::Duration;

/// The sink: the first bytes, the last bytes, and a count of those dropped between them.
#[derive(Debug)]
pub struct HeadTail {
    head: Vec<u8>,
    head_cap: usize,
    tail: VecDeque<u8>,
    tail_cap: usize,
    dropped: u64,
}

impl HeadTail {
    /// Keeps at most `max` bytes in all: a quarter at the head, the rest at the tail (test
    /// summaries come last, so the tail matters more).
    pub fn new(max: usize) -> Self {
        let head_cap = max / 4;
        HeadTail {
            head: Vec::new(),
            head_cap,
            tail: VecDeque::new(),
            tail_cap: max - head_cap,
            dropped: 0,
        }
    }

    /// Appends `bytes`: to the head while it has room, then to the tail, dropping the
    /// tail's oldest bytes beyond its capacity.
    pub fn push(&mut self, mut bytes: &[u8]) {
        if self.head.len() < self.head_cap {
            let n = (self.head_cap - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        if bytes.is_empty() {
            return;
        }
        if bytes.len() >= self.tail_cap {
            // The whole tail is replaced by the end of this chunk.
            let skip = bytes.len() - self.tail_cap;
            self.dropped += (self.tail.len() + skip) as u64;
            self.tail.clear();
            self.tail.extend(&bytes[skip..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
        if overflow > 0 {
            self.tail.drain(..overflow);
            self.dropped += overflow as u64;
        }
        self.tail.extend(bytes);
    }

    /// The kept bytes: head then tail, with nothing inserted between them.
    pub fn finish(self) -> (Vec<u8>, u64) {
        let mut out = self.head;
        out.extend(self.tail);
        (out, self.dropped)
    }
}

/// When each of a few texts first appeared in a stream, for a job's phase timings (the
/// runner watches its driver's markers). Texts split across chunks are found: the last bytes
/// of each chunk are kept to be searched with the next. The cost is one scan of each chunk
/// per text not yet seen.
#[derive(Debug)]
pub struct Watch {
    needles: Vec<Vec<u8>>,
    seen: Vec<Option<Duration>>,
    carry: Vec<u8>,
}

impl Watch {
    /// Watches for `texts` (empty ones are never seen).
    pub fn new(texts: &[String]) -> Self {
        Watch {
            needles: texts.iter().map(|t| t.as_bytes().to_vec()).collect(),
            seen: vec![None; texts.len()],
            carry: Vec::new(),
        }
    }

    /// Feeds the next chunk, which arrived `at` (time since the job started).
    pub fn feed(&mut self, chunk: &[u8], at: Duration) {
        let longest = self.needles.iter().map(Vec::len).max().unwrap_or(0);
        if longest == 0 || self.seen.iter().all(Option::is_some) {
            return;
        }
        // A text split across chunks lies in the carried tail and the chunk's first bytes; the
        // chunk itself is searched in place, not copied.
        let mut edge = std::mem::take(&mut self.carry);
        edge.extend_from_slice(&chunk[..(longest - 1).min(chunk.len())]);
        let contains = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
        for (needle, seen) in self.needles.iter().zip(&mut self.seen) {
            if seen.is_none()
                && !needle.is_empty()
                && (contains(&edge, needle) || contains(chunk, needle))
            {
                *seen = Some(at);
            }
        }
        let keep = longest - 1;
        self.carry = if chunk.len() >= keep {
            chunk[chunk.len() - keep..].to_vec()
        } else {
            edge[edge.len().saturating_sub(keep)..].to_vec()
        };
    }

    /// When each text was first seen, in the order given.
    pub fn finish(self) -> Vec<Option<Duration>> {
        self.seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_finds_texts_across_chunks_at_their_first_arrival() {
        let texts = ["START".to_string(), "END".to_string(), "never".to_string()];
        let mut w = Watch::new(&texts);
        let ms = Duration::from_millis;
        w.feed(b"setup ... ST", ms(10));
        w.feed(b"ART tests", ms(20));
        w.feed(b"START again E", ms(30));
        w.feed(b"ND", ms(40));
        assert_eq!(w.finish(), [Some(ms(20)), Some(ms(40)), None]);
        // A text split over chunks shorter than itself.
        let mut w = Watch::new(&["START".to_string()]);
        for (i, piece) in ["S", "TA", "RT"].iter().enumerate() {
            w.feed(piece.as_bytes(), ms(i as u64));
        }
        assert_eq!(w.finish(), [Some(ms(2))]);
        let mut none = Watch::new(&[]);
        none.feed(b"anything", ms(1));
        assert!(none.finish().is_empty());
    }

    #[test]
    fn keeps_everything_under_the_limit() {
        let mut h = HeadTail::new(100);
        h.push(b"hello ");
        h.push(b"world");
        assert_eq!(h.finish(), (b"hello world".to_vec(), 0));
    }

    #[test]
    fn keeps_head_and_tail_and_counts_the_middle() {
        let mut h = HeadTail::new(8); // head 2, tail 6
        for chunk in [&b"abc"[..], b"defgh", b"ijklmnop", b"q"] {
            h.push(chunk);
        }
        let all = b"abcdefghijklmnopq";
        let (out, dropped) = h.finish();
        assert_eq!(out, b"ablmnopq".to_vec());
        assert_eq!(dropped, 9);
        assert_eq!(out.len() as u64 + dropped, all.len() as u64);
    }

    #[test]
    fn zero_limit_keeps_nothing() {
        let mut h = HeadTail::new(0);
        h.push(b"abc");
        assert_eq!(h.finish(), (vec![], 3));
    }

    #[test]
    fn matches_a_naive_model_on_many_chunkings() {
        let data: Vec<u8> = (0..500u32).map(|i| (i % 251) as u8).collect();
        for max in [0, 1, 7, 64, 499, 500, 600] {
            for step in [1, 3, 17, 128, 1000] {
                let mut h = HeadTail::new(max);
                data.chunks(step).for_each(|c| h.push(c));
                let (out, dropped) = h.finish();
                let head = max / 4;
                let expect: Vec<u8> = if data.len() <= max {
                    data.clone()
                } else {
                    data[..head]
                        .iter()
                        .chain(&data[data.len() - (max - head)..])
                        .copied()
                        .collect()
                };
                assert_eq!(out, expect, "max {max} step {step}");
                assert_eq!(dropped as usize, data.len() - out.len());
            }
        }
    }
}
