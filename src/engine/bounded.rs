//! A byte sink that keeps the head and the tail of a stream and counts what it dropped, so a
//! job that prints without end costs the orchestrator a fixed amount of memory. The head keeps
//! the setup and patch-application output; the tail keeps the test summary and the markers.

use std::collections::VecDeque;

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

    /// Bytes seen but not kept.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The kept bytes: head then tail, with nothing inserted between them.
    pub fn finish(self) -> (Vec<u8>, u64) {
        let mut out = self.head;
        out.extend(self.tail);
        (out, self.dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
