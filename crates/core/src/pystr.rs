//! The few Python `str` behaviours the reward and the unidiff reader depend on, reproduced
//! exactly: `str.isspace` (hence `strip`), `str.splitlines`, and the decimal digits that `re`'s
//! `\d` and `int()` accept. Rust's own definitions differ at the edges (U+001C..U+001F are
//! whitespace to Python, not to Rust), and one differing character changes a similarity.

/// Python's `str.isspace` for one character: Rust's `White_Space` plus U+001C..U+001F
/// (which Python counts as whitespace because their bidirectional class is B or S).
pub fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.strip()` with no argument.
pub fn strip(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// Python's `str.splitlines()` (no `keepends`): splits on `\n`, `\r`, `\r\n`, `\v`, `\f`,
/// U+001C, U+001D, U+001E, U+0085, U+2028 and U+2029; a final terminator adds no empty line.
pub fn splitlines(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut iter = s.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        let is_break = matches!(
            c,
            '\n' | '\r'
                | '\u{b}'
                | '\u{c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if !is_break {
            continue;
        }
        out.push(&s[start..i]);
        let mut end = i + c.len_utf8();
        if c == '\r' {
            if let Some(&(_, '\n')) = iter.peek() {
                iter.next();
                end += 1;
            }
        }
        start = end;
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// Code points of the digit zero of every run of Unicode decimal digits (category Nd) in
/// Python 3.11's Unicode database (14.0.0); each run holds the values 0..=9 in order. Taken
/// from `unicodedata` by `scripts/reward_gen_digits.py`.
const DIGIT_ZEROS: [u32; 66] = [
    0x30, 0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66,
    0xDE6, 0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90,
    0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10,
    0x104A0, 0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0, 0x11650,
    0x116C0, 0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x16A60, 0x16AC0, 0x16B50,
    0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6, 0x1E140, 0x1E2F0, 0x1E950, 0x1FBF0,
];

/// The value of a decimal digit as Python's `re` (`\d`) and `int()` see it, any script.
pub fn decimal_value(c: char) -> Option<u32> {
    let cp = c as u32;
    if c.is_ascii_digit() {
        return Some(cp - 0x30);
    }
    if cp < 0x660 {
        return None;
    }
    let idx = DIGIT_ZEROS.partition_point(|&z| z <= cp);
    let zero = DIGIT_ZEROS[idx.checked_sub(1)?];
    (cp - zero < 10).then_some(cp - zero)
}

/// A run of decimal digits as Python's `int()` reads it, rendered back the way `%d` prints it:
/// ASCII, without leading zeros. Arbitrary length, so no overflow can differ from Python.
pub fn normalize_int(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len());
    for c in digits.chars() {
        let d = decimal_value(c).unwrap_or(0);
        if out.is_empty() && d == 0 {
            continue;
        }
        out.push(char::from(b'0' + d as u8));
    }
    if out.is_empty() {
        out.push('0');
    }
    out
}

/// The value of a normalized decimal string, or `None` when it does not fit in a `u64`.
pub fn int_value(normalized: &str) -> Option<u64> {
    normalized.parse().ok()
}

/// Python's `len()` of a string: code points.
pub fn py_len(s: &str) -> usize {
    s.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_whitespace_includes_information_separators() {
        // Python: '\x1c'.isspace() is True; Rust's is_whitespace says false.
        assert_eq!(strip("\u{1f}\u{a0} x \u{1c}\u{3000}"), "x");
        assert_eq!(
            strip("\u{200b}x"),
            "\u{200b}x",
            "zero-width space is not whitespace"
        );
    }

    #[test]
    fn splitlines_matches_python() {
        let cases: &[(&str, &[&str])] = &[
            ("", &[]),
            ("a\n", &["a"]),
            ("a\r\nb\rc\n\nd", &["a", "b", "c", "", "d"]),
            ("a\u{85}b\u{2028}c\u{1c}", &["a", "b", "c"]),
            ("\n", &[""]),
            ("x\r", &["x"]),
        ];
        for (input, want) in cases {
            assert_eq!(splitlines(input), *want, "input {input:?}");
        }
    }

    #[test]
    fn decimal_digits_of_other_scripts() {
        assert_eq!(decimal_value('7'), Some(7));
        assert_eq!(decimal_value('\u{663}'), Some(3), "Arabic-Indic three");
        assert_eq!(
            decimal_value('\u{1D7E5}'),
            Some(3),
            "mathematical digit in a run of runs"
        );
        assert_eq!(decimal_value('\u{b2}'), None, "superscript two is not Nd");
        assert_eq!(normalize_int("007"), "7");
        assert_eq!(normalize_int("\u{660}\u{661}2"), "12");
        assert_eq!(normalize_int("000"), "0");
    }
}
