//! A port of CPython 3.11's `difflib.SequenceMatcher` with no junk function: the same
//! `find_longest_match` (Ratcliff/Obershelp, ties to the lowest index in `a`, then in `b`), the
//! same recursion, matching blocks, opcodes, grouped opcodes and `ratio()`. `autojunk` is a
//! parameter because the reward uses both: `autojunk=False` on characters for the similarity,
//! and the default `autojunk=True` on lines inside `difflib.unified_diff`.
//!
//! Elements are dense `u32` ids (see [`CharIds`] and [`LineIds`]); the `b2j` index is a
//! compressed table of sorted positions per id, and `j2len` is two dense rows reset by
//! revisiting the positions set, so each step of the inner loop is a few array accesses
//! where Python does dict operations. The buffers live in [`Scratch`] and are reused.

use std::collections::HashMap;

/// One matching block: `a[a..a+size] == b[b..b+size]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Match {
    pub a: usize,
    pub b: usize,
    pub size: usize,
}

/// What an opcode says to do with `a[i1..i2]` to get `b[j1..j2]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    Replace,
    Delete,
    Insert,
    Equal,
}

impl Tag {
    pub fn as_str(self) -> &'static str {
        match self {
            Tag::Replace => "replace",
            Tag::Delete => "delete",
            Tag::Insert => "insert",
            Tag::Equal => "equal",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opcode {
    pub tag: Tag,
    pub i1: usize,
    pub i2: usize,
    pub j1: usize,
    pub j2: usize,
}

/// Reusable buffers; one per thread is enough.
#[derive(Debug, Default)]
pub struct Scratch {
    /// `b2j` as a compressed table: positions of id `x` are `pos[start[x]..start[x+1]]`.
    start: Vec<u32>,
    pos: Vec<u32>,
    /// `j2len` rows: `row[j + 1]` holds `j2len[j]`, so `j2len.get(j - 1, 0)` is `row[j]`.
    prev: Vec<u32>,
    cur: Vec<u32>,
    /// The recursion's work list, as in CPython's `get_matching_blocks`.
    queue: Vec<(usize, usize, usize, usize)>,
}

/// A prepared pair of sequences; `b` is indexed once, as in CPython's `set_seq2`.
pub struct SequenceMatcher<'s> {
    a: &'s [u32],
    b: &'s [u32],
    scratch: &'s mut Scratch,
}

impl<'s> SequenceMatcher<'s> {
    /// `alphabet` bounds the ids used in `b` (ids in `a` may be anything; those not in `b`
    /// simply never match). With `autojunk`, ids occurring more than `len(b)/100 + 1` times in
    /// a `b` of 200 elements or more are "popular" and left out of the index, as CPython does.
    pub fn new(
        a: &'s [u32],
        b: &'s [u32],
        alphabet: usize,
        autojunk: bool,
        scratch: &'s mut Scratch,
    ) -> Self {
        let s = &mut *scratch;
        // counts[x] at start[x + 1]; popular ids get a count of 0 (an empty list).
        s.start.clear();
        s.start.resize(alphabet + 1, 0);
        for &x in b {
            s.start[x as usize + 1] += 1;
        }
        if autojunk && b.len() >= 200 {
            let ntest = (b.len() / 100 + 1) as u32;
            for count in &mut s.start[1..] {
                if *count > ntest {
                    *count = 0;
                }
            }
        }
        for x in 1..s.start.len() {
            s.start[x] += s.start[x - 1];
        }
        s.pos.clear();
        s.pos.resize(s.start[alphabet] as usize, 0);
        let mut cursor: Vec<u32> = s.start[..alphabet].to_vec();
        for (j, &x) in b.iter().enumerate() {
            let x = x as usize;
            // A popular id's cursor already sits at its end, so it is skipped.
            if cursor[x] < s.start[x + 1] {
                s.pos[cursor[x] as usize] = j as u32;
                cursor[x] += 1;
            }
        }
        s.prev.clear();
        s.prev.resize(b.len() + 1, 0);
        s.cur.clear();
        s.cur.resize(b.len() + 1, 0);
        SequenceMatcher { a, b, scratch }
    }

    /// CPython's `find_longest_match(alo, ahi, blo, bhi)`.
    pub fn find_longest_match(&mut self, alo: usize, ahi: usize, blo: usize, bhi: usize) -> Match {
        let (a, b) = (self.a, self.b);
        let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0usize);
        // Positions of the previous row, to reset its entries before reusing the buffer.
        let mut prev_range: (usize, usize) = (0, 0);
        let mut has_prev = false;
        for i in alo..ahi {
            let x = a[i];
            let (lo, hi) = self.range_of(x, blo, bhi);
            {
                let s = &mut *self.scratch;
                let (prev, cur) = (&s.prev, &mut s.cur);
                for &j in &s.pos[lo..hi] {
                    let j = j as usize;
                    let k = prev[j] + 1;
                    cur[j + 1] = k;
                    if k as usize > bestsize {
                        besti = i + 1 - k as usize;
                        bestj = j + 1 - k as usize;
                        bestsize = k as usize;
                    }
                }
            }
            let s = &mut *self.scratch;
            if has_prev {
                let (plo, phi) = prev_range;
                for &j in &s.pos[plo..phi] {
                    s.prev[j as usize + 1] = 0;
                }
            }
            std::mem::swap(&mut s.prev, &mut s.cur);
            prev_range = (lo, hi);
            has_prev = true;
        }
        if has_prev {
            let s = &mut *self.scratch;
            let (plo, phi) = prev_range;
            for &j in &s.pos[plo..phi] {
                s.prev[j as usize + 1] = 0;
            }
        }
        // CPython then extends the match with equal neighbours that are not junk; with popular
        // elements left out of the index this can grow the match.
        while besti > alo && bestj > blo && a[besti - 1] == b[bestj - 1] {
            besti -= 1;
            bestj -= 1;
            bestsize += 1;
        }
        while besti + bestsize < ahi
            && bestj + bestsize < bhi
            && a[besti + bestsize] == b[bestj + bestsize]
        {
            bestsize += 1;
        }
        Match {
            a: besti,
            b: bestj,
            size: bestsize,
        }
    }

    /// The slice of `pos` holding positions of `x` within `blo..bhi`.
    fn range_of(&self, x: u32, blo: usize, bhi: usize) -> (usize, usize) {
        let s = &*self.scratch;
        let x = x as usize;
        let (Some(&lo), Some(&hi)) = (s.start.get(x), s.start.get(x + 1)) else {
            return (0, 0);
        };
        let list = &s.pos[lo as usize..hi as usize];
        let from = if list.first().is_some_and(|&j| (j as usize) < blo) {
            list.partition_point(|&j| (j as usize) < blo)
        } else {
            0
        };
        let to = if list.last().is_some_and(|&j| (j as usize) >= bhi) {
            list.partition_point(|&j| (j as usize) < bhi)
        } else {
            list.len()
        };
        (lo as usize + from, lo as usize + to.max(from))
    }

    /// The raw blocks of CPython's recursion, in discovery order (before sorting).
    fn raw_blocks(&mut self, mut visit: impl FnMut(Match)) {
        let (la, lb) = (self.a.len(), self.b.len());
        let mut queue = std::mem::take(&mut self.scratch.queue);
        queue.clear();
        queue.push((0, la, 0, lb));
        while let Some((alo, ahi, blo, bhi)) = queue.pop() {
            let m = self.find_longest_match(alo, ahi, blo, bhi);
            if m.size > 0 {
                visit(m);
                if alo < m.a && blo < m.b {
                    queue.push((alo, m.a, blo, m.b));
                }
                if m.a + m.size < ahi && m.b + m.size < bhi {
                    queue.push((m.a + m.size, ahi, m.b + m.size, bhi));
                }
            }
        }
        self.scratch.queue = queue;
    }

    /// The number of matched elements: the sum of the sizes of the matching blocks.
    pub fn matches(&mut self) -> usize {
        let mut total = 0;
        self.raw_blocks(|m| total += m.size);
        total
    }

    /// CPython's `ratio()`: `2.0 * matches / (len(a) + len(b))`, 1.0 when both are empty.
    pub fn ratio(&mut self) -> f64 {
        let length = self.a.len() + self.b.len();
        if length == 0 {
            return 1.0;
        }
        2.0 * self.matches() as f64 / length as f64
    }

    /// CPython's `get_matching_blocks()`: sorted, adjacent blocks merged, with the final
    /// `(len(a), len(b), 0)` sentinel.
    pub fn matching_blocks(&mut self) -> Vec<Match> {
        let mut blocks = Vec::new();
        self.raw_blocks(|m| blocks.push(m));
        blocks.sort();
        let mut out: Vec<Match> = Vec::with_capacity(blocks.len() + 1);
        let mut cur = Match {
            a: 0,
            b: 0,
            size: 0,
        };
        for m in blocks {
            if cur.a + cur.size == m.a && cur.b + cur.size == m.b {
                cur.size += m.size;
            } else {
                if cur.size > 0 {
                    out.push(cur);
                }
                cur = m;
            }
        }
        if cur.size > 0 {
            out.push(cur);
        }
        out.push(Match {
            a: self.a.len(),
            b: self.b.len(),
            size: 0,
        });
        out
    }

    /// CPython's `get_opcodes()`.
    pub fn opcodes(&mut self) -> Vec<Opcode> {
        let (mut i, mut j) = (0, 0);
        let mut out = Vec::new();
        for m in self.matching_blocks() {
            let tag = if i < m.a && j < m.b {
                Some(Tag::Replace)
            } else if i < m.a {
                Some(Tag::Delete)
            } else if j < m.b {
                Some(Tag::Insert)
            } else {
                None
            };
            if let Some(tag) = tag {
                out.push(Opcode {
                    tag,
                    i1: i,
                    i2: m.a,
                    j1: j,
                    j2: m.b,
                });
            }
            i = m.a + m.size;
            j = m.b + m.size;
            if m.size > 0 {
                out.push(Opcode {
                    tag: Tag::Equal,
                    i1: m.a,
                    i2: i,
                    j1: m.b,
                    j2: j,
                });
            }
        }
        out
    }

    /// CPython's `get_grouped_opcodes(n)`: hunks of changes with up to `n` lines of context.
    pub fn grouped_opcodes(&mut self, n: usize) -> Vec<Vec<Opcode>> {
        let mut codes = self.opcodes();
        if codes.is_empty() {
            codes.push(Opcode {
                tag: Tag::Equal,
                i1: 0,
                i2: 1,
                j1: 0,
                j2: 1,
            });
        }
        if codes[0].tag == Tag::Equal {
            let c = &mut codes[0];
            c.i1 = c.i1.max(c.i2.saturating_sub(n));
            c.j1 = c.j1.max(c.j2.saturating_sub(n));
        }
        let last = codes.len() - 1;
        if codes[last].tag == Tag::Equal {
            let c = &mut codes[last];
            c.i2 = c.i2.min(c.i1 + n);
            c.j2 = c.j2.min(c.j1 + n);
        }
        let nn = n + n;
        let mut groups = Vec::new();
        let mut group: Vec<Opcode> = Vec::new();
        for mut c in codes {
            if c.tag == Tag::Equal && c.i2 - c.i1 > nn {
                group.push(Opcode {
                    tag: Tag::Equal,
                    i1: c.i1,
                    i2: c.i2.min(c.i1 + n),
                    j1: c.j1,
                    j2: c.j2.min(c.j1 + n),
                });
                groups.push(std::mem::take(&mut group));
                c.i1 = c.i1.max(c.i2.saturating_sub(n));
                c.j1 = c.j1.max(c.j2.saturating_sub(n));
            }
            group.push(c);
        }
        if !group.is_empty() && !(group.len() == 1 && group[0].tag == Tag::Equal) {
            groups.push(group);
        }
        groups
    }
}

/// Dense ids for the characters (code points) of two strings: ASCII maps to itself, other
/// characters of `b` get ids from 128 on, characters of `a` absent from `b` get `u32::MAX`.
#[derive(Debug, Default)]
pub struct CharIds {
    pub a: Vec<u32>,
    pub b: Vec<u32>,
    pub alphabet: usize,
    map: HashMap<char, u32>,
}

impl CharIds {
    pub fn fill(&mut self, a: &str, b: &str) {
        self.map.clear();
        self.b.clear();
        self.a.clear();
        let mut next = 128u32;
        for c in b.chars() {
            let id = if c.is_ascii() {
                c as u32
            } else {
                *self.map.entry(c).or_insert_with(|| {
                    next += 1;
                    next - 1
                })
            };
            self.b.push(id);
        }
        for c in a.chars() {
            let id = if c.is_ascii() {
                c as u32
            } else {
                self.map.get(&c).copied().unwrap_or(u32::MAX)
            };
            self.a.push(id);
        }
        self.alphabet = next as usize;
    }
}

/// Dense ids for two sequences of lines (any hashable items compared by equality).
pub fn line_ids<'t>(a: &[&'t str], b: &[&'t str]) -> (Vec<u32>, Vec<u32>, usize) {
    let mut map: HashMap<&'t str, u32> = HashMap::new();
    let mut id_of = |s: &'t str| {
        let n = map.len() as u32;
        *map.entry(s).or_insert(n)
    };
    let bi: Vec<u32> = b.iter().map(|s| id_of(s)).collect();
    let ai: Vec<u32> = a.iter().map(|s| id_of(s)).collect();
    (ai, bi, map.len())
}

thread_local! {
    static SCRATCH: std::cell::RefCell<(Scratch, CharIds)> = Default::default();
}

/// `difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()` over code points.
pub fn ratio(a: &str, b: &str) -> f64 {
    if a == b {
        // One block covering both: 2n / 2n, exactly 1.0 (and 1.0 for two empty strings).
        return 1.0;
    }
    SCRATCH.with(|cell| {
        let mut guard = cell.borrow_mut();
        let (scratch, ids) = &mut *guard;
        ids.fill(a, b);
        let mut sm = SequenceMatcher::new(&ids.a, &ids.b, ids.alphabet, false, scratch);
        sm.ratio()
    })
}

/// `difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()` over code points.
pub fn char_matching_blocks(a: &str, b: &str) -> Vec<Match> {
    let mut ids = CharIds::default();
    ids.fill(a, b);
    let mut scratch = Scratch::default();
    let mut sm = SequenceMatcher::new(&ids.a, &ids.b, ids.alphabet, false, &mut scratch);
    sm.matching_blocks()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(a: &str, b: &str) -> Vec<(usize, usize, usize)> {
        char_matching_blocks(a, b)
            .into_iter()
            .map(|m| (m.a, m.b, m.size))
            .collect()
    }

    #[test]
    fn known_cpython_results() {
        // Values printed by CPython 3.11's difflib.
        assert_eq!(blocks("abxcd", "abcd"), [(0, 0, 2), (3, 2, 2), (5, 4, 0)]);
        assert_eq!(
            blocks("qabxcd", "abycdf"),
            [(1, 0, 2), (4, 3, 2), (6, 6, 0)]
        );
        assert_eq!(ratio("abcd", "bcde"), 0.75);
        assert_eq!(ratio("", ""), 1.0);
        assert_eq!(ratio("a", ""), 0.0);
        // Ties go to the lowest index in a, then in b.
        assert_eq!(blocks("ab", "ba"), [(0, 1, 1), (2, 2, 0)]);
        assert_eq!(blocks("é€x", "x€é"), [(0, 2, 1), (3, 3, 0)]);
    }

    #[test]
    fn autojunk_drops_popular_lines_from_the_index_only() {
        let a: Vec<u32> = (0..300)
            .map(|i| if i % 2 == 0 { 0 } else { 1 + i })
            .collect();
        let b = a.clone();
        let mut s = Scratch::default();
        let mut sm = SequenceMatcher::new(&a, &b, 400, true, &mut s);
        // Identical inputs still match entirely: the extension step recovers popular items.
        assert_eq!(
            sm.matching_blocks()[0],
            Match {
                a: 0,
                b: 0,
                size: 300
            }
        );
    }
}
