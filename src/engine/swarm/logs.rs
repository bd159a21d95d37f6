//! Reading a task's output through the manager. A followed log stream never ends (not even
//! when the task has), so the engine follows it while the task runs, then reads once more
//! without following, from the last line it saw: lines carry the node's timestamps, and the
//! second read skips what the first already gave. Everything goes through the same bounded
//! head/tail buffer as a plain container's output.

use super::super::bounded::HeadTail;

/// A log line's timestamp as (seconds since the epoch, nanoseconds), comparable.
pub type Stamp = (i64, u32);

/// Splits `2026-11-30T14:44:36.129188149Z rest` into its stamp and the rest. Docker writes
/// RFC 3339 with nanoseconds, trailing zeros trimmed, in UTC.
pub fn split_stamp(line: &[u8]) -> Option<(Stamp, &[u8])> {
    let sp = line.iter().position(|&b| b == b' ')?;
    let ts = std::str::from_utf8(&line[..sp]).ok()?;
    Some((parse_stamp(ts)?, &line[sp + 1..]))
}

fn parse_stamp(ts: &str) -> Option<Stamp> {
    let ts = ts.strip_suffix('Z')?;
    let (date, time) = ts.split_once('T')?;
    let mut d = date.splitn(3, '-').map(|x| x.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let (hms, frac) = match time.split_once('.') {
        Some((a, b)) => (a, b),
        None => (time, ""),
    };
    let mut t = hms.splitn(3, ':').map(|x| x.parse::<i64>().ok());
    let (hh, mm, ss) = (t.next()??, t.next()??, t.next()??);
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let nanos = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<9}").parse::<u32>().ok()?
    };
    Some((
        days_from_civil(y, m, day) * 86_400 + hh * 3600 + mm * 60 + ss,
        nanos,
    ))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The output read so far, and where the reading stands.
#[derive(Debug)]
pub struct Reader {
    /// The output kept so far (head and tail).
    pub buf: HeadTail,
    /// The last stamp seen, and how many lines carried it.
    last: Option<(Stamp, usize)>,
}

impl Reader {
    /// A reader that keeps at most `max` bytes of output.
    pub fn new(max: usize) -> Self {
        Reader {
            buf: HeadTail::new(max),
            last: None,
        }
    }

    /// One timestamped message from the followed stream.
    pub fn push(&mut self, msg: &[u8]) {
        match split_stamp(msg) {
            Some((stamp, rest)) => {
                self.last = match self.last {
                    Some((s, n)) if s == stamp => Some((s, n + 1)),
                    _ => Some((stamp, 1)),
                };
                self.buf.push(rest);
            }
            // Not stamped (should not happen): kept as is.
            None => self.buf.push(msg),
        }
    }

    /// The `since` (whole seconds) for the read that completes this one.
    pub fn since(&self) -> i32 {
        self.last
            .map_or(0, |((s, _), _)| i32::try_from(s).unwrap_or(i32::MAX))
    }

    /// A reader for the second, complete read: it skips what this one already holds.
    pub fn resume(&self) -> Skipper {
        Skipper {
            last: self.last,
            seen_at_last: 0,
        }
    }
}

/// Decides, for each message of the completing read, whether the followed stream had it.
#[derive(Debug)]
pub struct Skipper {
    last: Option<(Stamp, usize)>,
    seen_at_last: usize,
}

impl Skipper {
    /// True when `msg` is new (not already read from the followed stream).
    pub fn is_new(&mut self, msg: &[u8]) -> bool {
        let Some((last, count)) = self.last else {
            return true;
        };
        let Some((stamp, _)) = split_stamp(msg) else {
            return true;
        };
        if stamp < last {
            return false;
        }
        if stamp == last && self.seen_at_last < count {
            self.seen_at_last += 1;
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_parse_and_order_whatever_their_precision() {
        let a = parse_stamp("2026-11-30T14:44:36.12918814Z").unwrap();
        let b = parse_stamp("2026-11-30T14:44:36.129188149Z").unwrap();
        assert!(a < b, "{a:?} {b:?}");
        assert_eq!(parse_stamp("1970-01-01T00:00:00Z"), Some((0, 0)));
        assert_eq!(
            parse_stamp("2000-03-01T00:00:01.5Z"),
            Some((951_868_801, 500_000_000))
        );
        assert_eq!(parse_stamp("2026-11-30 14:44:36Z"), None);
        assert_eq!(parse_stamp("2026-11-30T14:44:36.1234567891Z"), None);
        let (s, rest) = split_stamp(b"2026-11-30T14:44:36.1Z hello world\n").unwrap();
        assert_eq!(s.1, 100_000_000);
        assert_eq!(rest, b"hello world\n");
    }

    /// Whatever point the followed stream stopped at, followed + completed = the whole log,
    /// including lines that share a timestamp.
    #[test]
    fn the_completing_read_adds_exactly_what_the_followed_stream_missed() {
        let lines: Vec<String> = [
            ("2026-11-30T10:00:00.1Z", "a"),
            ("2026-11-30T10:00:00.1Z", "b"),
            ("2026-11-30T10:00:00.2Z", "c"),
            ("2026-11-30T10:00:01Z", "d"),
            ("2026-11-30T10:00:01Z", "e"),
            ("2026-11-30T10:00:01Z", "f"),
            ("2026-11-30T10:00:02.000000001Z", "g"),
        ]
        .iter()
        .map(|(t, x)| format!("{t} {x}\n"))
        .collect();
        for cut in 0..=lines.len() {
            let mut r = Reader::new(1 << 20);
            lines[..cut].iter().for_each(|l| r.push(l.as_bytes()));
            let since = r.since();
            let mut skip = r.resume();
            for l in &lines {
                let (stamp, _) = split_stamp(l.as_bytes()).unwrap();
                // The daemon's `since` filter, in whole seconds.
                if stamp.0 >= i64::from(since) && skip.is_new(l.as_bytes()) {
                    r.push(l.as_bytes());
                }
            }
            let (out, dropped) = r.buf.finish();
            assert_eq!(
                String::from_utf8(out).unwrap(),
                "a\nb\nc\nd\ne\nf\ng\n",
                "cut {cut}"
            );
            assert_eq!(dropped, 0);
        }
    }
}
