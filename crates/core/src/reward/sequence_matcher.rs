//! A port of CPython 3.11's `difflib.SequenceMatcher` with no junk function: the same
//! `find_longest_match` (Ratcliff/Obershelp, ties to the lowest index in `a`, then in `b`), the
//! same recursion, matching blocks, opcodes, grouped opcodes and `ratio()`. `autojunk` is a
//! parameter because the reward uses both: `autojunk=False` on characters for the similarity,
//! and the default `autojunk=True` on lines inside `difflib.unified_diff`.
//!
//! Elements are dense `u32` ids (see [`CharIds`] and [`line_ids`]); the `b2j` index is a
//! compressed table of sorted positions per id, and `j2len` is two dense rows reset by
//! revisiting the positions set, so each step of the inner loop is a few array accesses
//! where Python does dict operations. The buffers live in [`Scratch`] and are reused.

use std::collections::HashMap;

/// One matching block: `a[a..a+size] == b[b..b+size]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Match {
    /// Start of the match in `a`.
    pub a: usize,
    /// Start of the match in `b`.
    pub b: usize,
    /// Length of the match.
    pub size: usize,
}

/// What an opcode says to do with `a[i1..i2]` to get `b[j1..j2]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    /// `a[i1..i2]` is replaced by `b[j1..j2]`.
    Replace,
    /// `a[i1..i2]` is deleted.
    Delete,
    /// `b[j1..j2]` is inserted at `a[i1]`.
    Insert,
    /// The ranges are equal.
    Equal,
}

/// One of difflib's `get_opcodes()` entries: how to turn `a[i1..i2]` into `b[j1..j2]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opcode {
    /// What the step does.
    pub tag: Tag,
    /// Start in `a`.
    pub i1: usize,
    /// End in `a` (exclusive).
    pub i2: usize,
    /// Start in `b`.
    pub j1: usize,
    /// End in `b` (exclusive).
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
    sam: Automaton,
}

/// A suffix automaton of `b[blo..bhi]`, for long ranges where the row-by-row search would
/// visit every pair of equal characters (two large texts over a small alphabet share almost
/// every character). It finds the same match as CPython in time linear in the ranges: scanning
/// `a`, the longest suffix of `a[alo..=i]` found in the range is the longest match ending at
/// `i`, and the first position where a state's strings end is the lowest `j` CPython keeps.
///
/// A state's first edge is inline; its others are found through one hash table keyed by
/// (state, id), and listed per state (to copy them into a clone). States near the root have
/// many edges (one per character that follows a common prefix), and walking them in a list
/// was the search's hot spot.
#[derive(Debug, Default)]
struct Automaton {
    states: Vec<State>,
    /// Edges beyond each state's first, as (id, next edge of the same state); their targets
    /// are in `table`.
    edges: Vec<(u32, u32)>,
    /// Open addressing, linear probing: ((state << 32) | id, target), `EMPTY` keys free.
    table: Vec<(u64, u32)>,
    /// Keys in `table`.
    used: usize,
    /// The root's edges, dense by id (the root is visited most).
    root: Vec<u32>,
}

/// One state, with its first edge inline: most states have exactly one.
#[derive(Debug, Clone, Copy)]
struct State {
    len: u32,
    link: u32,
    /// Lowest end position in `b` (absolute) of the strings of this state.
    first_end: u32,
    first_id: u32,
    first_to: u32,
    /// Head of the other edges in `edges` (`NONE` when there are none).
    more: u32,
}

const NONE: u32 = u32::MAX;

/// A free slot of [`Automaton::table`].
const EMPTY: u64 = u64::MAX;

impl Automaton {
    #[inline]
    fn edge(&self, state: u32, x: u32) -> u32 {
        if state == 0 {
            return self.root.get(x as usize).copied().unwrap_or(NONE);
        }
        let s = &self.states[state as usize];
        if s.first_id == x {
            return s.first_to;
        }
        if s.more == NONE {
            return NONE;
        }
        let key = Self::key(state, x);
        let mask = self.table.len() - 1;
        let mut i = Self::slot(key, mask);
        loop {
            let (k, to) = self.table[i];
            if k == key {
                return to;
            }
            if k == EMPTY {
                return NONE;
            }
            i = (i + 1) & mask;
        }
    }

    fn key(state: u32, x: u32) -> u64 {
        (u64::from(state) << 32) | u64::from(x)
    }

    fn slot(key: u64, mask: usize) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize & mask
    }

    /// Sets the target of `key` in the table; true when the key is new.
    fn put(&mut self, key: u64, to: u32) -> bool {
        if (self.used + 1) * 2 > self.table.len() {
            self.grow();
        }
        let mask = self.table.len() - 1;
        let mut i = Self::slot(key, mask);
        loop {
            let k = self.table[i].0;
            if k == key {
                self.table[i].1 = to;
                return false;
            }
            if k == EMPTY {
                self.table[i] = (key, to);
                self.used += 1;
                return true;
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let old = std::mem::take(&mut self.table);
        self.table = vec![(EMPTY, NONE); (old.len() * 2).max(16)];
        self.used = 0;
        for (k, to) in old {
            if k != EMPTY {
                self.put(k, to);
            }
        }
    }

    /// Adds or redirects the edge `state --x--> to` beyond the state's first.
    fn add_more(&mut self, state: u32, x: u32, to: u32) {
        if self.put(Self::key(state, x), to) {
            let head = self.states[state as usize].more;
            self.edges.push((x, head));
            self.states[state as usize].more = (self.edges.len() - 1) as u32;
        }
    }

    /// Adds or redirects the edge `state --x--> to`.
    fn set_edge(&mut self, state: u32, x: u32, to: u32) {
        if state == 0 {
            self.root[x as usize] = to;
            return;
        }
        let s = &mut self.states[state as usize];
        if s.first_id == x || s.first_id == NONE {
            s.first_id = x;
            s.first_to = to;
            return;
        }
        self.add_more(state, x, to);
    }

    fn new_state(&mut self, len: u32, link: u32, first_end: u32) -> u32 {
        self.states.push(State {
            len,
            link,
            first_end,
            first_id: NONE,
            first_to: NONE,
            more: NONE,
        });
        (self.states.len() - 1) as u32
    }

    fn build(&mut self, b: &[u32], blo: usize, bhi: usize, alphabet: usize) {
        self.states.clear();
        self.edges.clear();
        // Room for the edges of a range of this size without growing, cleared.
        let room = (4 * (bhi - blo)).next_power_of_two().max(16);
        self.table.clear();
        self.table.resize(room, (EMPTY, NONE));
        self.used = 0;
        self.root.clear();
        self.root.resize(alphabet, NONE);
        self.new_state(0, NONE, 0);
        let mut last = 0u32;
        for (j, &x) in b.iter().enumerate().take(bhi).skip(blo) {
            let cur = self.new_state(self.states[last as usize].len + 1, NONE, j as u32);
            let mut p = last;
            while p != NONE && self.edge(p, x) == NONE {
                self.set_edge(p, x, cur);
                p = self.states[p as usize].link;
            }
            if p == NONE {
                self.states[cur as usize].link = 0;
            } else {
                let q = self.edge(p, x);
                let (plen, q_state) = (self.states[p as usize].len, self.states[q as usize]);
                if plen + 1 == q_state.len {
                    self.states[cur as usize].link = q;
                } else {
                    // The clone takes q's edges: its inline one, and copies of the others.
                    let clone = self.new_state(plen + 1, q_state.link, q_state.first_end);
                    self.states[clone as usize].first_id = q_state.first_id;
                    self.states[clone as usize].first_to = q_state.first_to;
                    let mut e = q_state.more;
                    while e != NONE {
                        let (id, next) = self.edges[e as usize];
                        let to = self.edge(q, id);
                        self.add_more(clone, id, to);
                        e = next;
                    }
                    while p != NONE && self.edge(p, x) == q {
                        self.set_edge(p, x, clone);
                        p = self.states[p as usize].link;
                    }
                    self.states[q as usize].link = clone;
                    self.states[cur as usize].link = clone;
                }
            }
            last = cur;
        }
    }
}

/// From this many pairs of positions on, a range is searched with the automaton. Measured on
/// the 486 real predictions: the same total time anywhere from 0 to 1024, slower above (the
/// row search is quadratic in practice), 2.5x slower at 2^20.
const AUTOMATON_MIN_PAIRS: usize = 1 << 10;

/// A prepared pair of sequences; `b` is indexed once, as in CPython's `set_seq2`.
pub struct SequenceMatcher<'s> {
    a: &'s [u32],
    b: &'s [u32],
    scratch: &'s mut Scratch,
    alphabet: usize,
    /// Popular elements are out of the index, so the automaton (which sees them) must not
    /// be used; and tests force either search.
    use_automaton_from: usize,
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
        let use_automaton_from = if autojunk && b.len() >= 200 {
            usize::MAX
        } else {
            AUTOMATON_MIN_PAIRS
        };
        SequenceMatcher {
            a,
            b,
            scratch,
            alphabet,
            use_automaton_from,
        }
    }

    /// Chooses the search: `Some(true)` always the automaton, `Some(false)` always rows,
    /// `None` by size (the default). Both give CPython's result.
    #[cfg(test)]
    pub fn force_automaton(&mut self, choice: Option<bool>) {
        self.use_automaton_from = match choice {
            Some(true) => 0,
            Some(false) => usize::MAX,
            None => AUTOMATON_MIN_PAIRS,
        };
    }

    /// CPython's `find_longest_match(alo, ahi, blo, bhi)`.
    pub fn find_longest_match(&mut self, alo: usize, ahi: usize, blo: usize, bhi: usize) -> Match {
        let (a, b) = (self.a, self.b);
        let pairs = (ahi - alo).saturating_mul(bhi - blo);
        let (mut besti, mut bestj, mut bestsize) =
            if pairs >= self.use_automaton_from && ahi > alo && bhi > blo {
                self.longest_by_automaton(alo, ahi, blo, bhi)
            } else {
                self.longest_by_rows(alo, ahi, blo, bhi)
            };
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

    fn longest_by_automaton(
        &mut self,
        alo: usize,
        ahi: usize,
        blo: usize,
        bhi: usize,
    ) -> (usize, usize, usize) {
        let sam = &mut self.scratch.sam;
        sam.build(self.b, blo, bhi, self.alphabet);
        let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0usize);
        let (mut v, mut l) = (0u32, 0usize);
        for i in alo..ahi {
            let x = self.a[i];
            loop {
                let to = sam.edge(v, x);
                if to != NONE {
                    v = to;
                    l += 1;
                    break;
                }
                if v == 0 {
                    l = 0;
                    break;
                }
                let st = &sam.states[v as usize];
                v = st.link;
                l = sam.states[v as usize].len as usize;
            }
            // Strictly longer only: the first (lowest) i wins ties, as in CPython's loop.
            if l > bestsize {
                bestsize = l;
                besti = i + 1 - l;
                bestj = sam.states[v as usize].first_end as usize + 1 - l;
            }
        }
        (besti, bestj, bestsize)
    }

    /// CPython's own loop: row by row over `a`, `j2len` of the previous row.
    fn longest_by_rows(
        &mut self,
        alo: usize,
        ahi: usize,
        blo: usize,
        bhi: usize,
    ) -> (usize, usize, usize) {
        let a = self.a;
        let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0usize);
        // Positions of the previous row, to reset its entries before reusing the buffer.
        let mut prev_range: (usize, usize) = (0, 0);
        let mut has_prev = false;
        for (i, &x) in a.iter().enumerate().take(ahi).skip(alo) {
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
        (besti, bestj, bestsize)
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
        let only_equal = group.len() == 1 && group[0].tag == Tag::Equal;
        if !group.is_empty() && !only_equal {
            groups.push(group);
        }
        groups
    }
}

/// Dense ids for the characters (code points) of two strings: ASCII maps to itself, other
/// characters of `b` get ids from 128 on, characters of `a` absent from `b` get `u32::MAX`.
#[derive(Debug, Default)]
pub struct CharIds {
    /// The ids of `a`'s characters (`u32::MAX` for non-ASCII ones absent from `b`).
    pub a: Vec<u32>,
    /// The ids of `b`'s characters.
    pub b: Vec<u32>,
    /// One more than the largest id `b` uses (at least 128).
    pub alphabet: usize,
    map: HashMap<char, u32>,
}

impl CharIds {
    /// Assigns the ids of `a` and `b`, reusing this value's memory.
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

    #[test]
    fn the_edge_table_answers_the_same_after_growing() {
        let mut x = 7u64;
        let b: Vec<u32> = (0..600)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                ((x >> 33) % 40) as u32
            })
            .collect();
        let mut sam = Automaton::default();
        sam.build(&b, 0, b.len(), 40);
        let edges = |sam: &Automaton| {
            let mut all = Vec::new();
            for state in 0..sam.states.len() as u32 {
                for id in 0..41 {
                    all.push(sam.edge(state, id));
                }
            }
            all
        };
        let before = edges(&sam);
        let slots = sam.table.len();
        sam.grow();
        sam.grow();
        assert_eq!(sam.table.len(), 4 * slots);
        assert_eq!(edges(&sam), before);
        // Every substring of b is a path from the root.
        for start in [0, 17, 300] {
            let mut v = 0;
            for &id in &b[start..start + 200] {
                v = sam.edge(v, id);
                assert_ne!(v, NONE);
            }
        }
    }

    #[test]
    fn automaton_and_rows_find_the_same_blocks() {
        let mut x = 12345u64;
        let mut rnd = |n: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        for case in 0..400 {
            let sigma = 1 + (case % 7) as u64;
            let (la, lb) = (rnd(120) as usize, rnd(120) as usize);
            let a: Vec<u32> = (0..la).map(|_| rnd(sigma) as u32).collect();
            // Half the cases: b is a mutated copy of a, so long matches exist.
            let b: Vec<u32> = if case % 2 == 0 {
                (0..lb).map(|_| rnd(sigma + 1) as u32).collect()
            } else {
                let mut out = Vec::new();
                for &v in &a {
                    if rnd(10) == 0 {
                        continue;
                    }
                    out.push(if rnd(15) == 0 { rnd(sigma) as u32 } else { v });
                }
                out
            };
            let run = |force| {
                let mut s = Scratch::default();
                let mut sm = SequenceMatcher::new(&a, &b, 8, false, &mut s);
                sm.force_automaton(Some(force));
                sm.matching_blocks()
            };
            assert_eq!(run(true), run(false), "a={a:?} b={b:?}");
        }
    }
}
