//! JSON text as Python's `json.dumps(value, indent=4)` writes it (`ensure_ascii` on), so files
//! the official harness would write come out byte for byte the same. Integers, strings, lists,
//! objects and literals are exact; floats use Rust's shortest form (the official files that
//! pass through here hold none).

use serde_json::Value;

/// `json.dumps(value, indent=4)`.
pub fn to_python_json(value: &Value) -> String {
    to_python_json_indent(value, 4)
}

/// `json.dumps(value, indent=width)` (also what `json.dump(value, f, indent=width)` writes).
pub fn to_python_json_indent(value: &Value, width: usize) -> String {
    let mut out = String::new();
    write_value(&mut out, value, 0, width);
    out
}

fn indent(out: &mut String, level: usize, width: usize) {
    out.push('\n');
    for _ in 0..level * width {
        out.push(' ');
    }
}

fn write_value(out: &mut String, value: &Value, level: usize, width: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_string(out, s),
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                indent(out, level + 1, width);
                write_value(out, item, level + 1, width);
            }
            indent(out, level, width);
            out.push(']');
        }
        Value::Object(map) if map.is_empty() => out.push_str("{}"),
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                indent(out, level + 1, width);
                write_string(out, k);
                out.push_str(": ");
                write_value(out, v, level + 1, width);
            }
            indent(out, level, width);
            out.push('}');
        }
    }
}

/// Python's ASCII-only string escaping: printable ASCII stays, the usual short escapes, every
/// other code unit as `\uXXXX` (UTF-16, so astral characters become surrogate pairs).
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_python_json_dumps() {
        // Expected strings from Python 3.11: json.dumps(v, indent=4).
        let v = serde_json::json!({"a": [1, {"b": null}], "c": {}, "d": [], "e": "\u{7f}\u{1F600}\u{1}"});
        let expected = "{\n    \"a\": [\n        1,\n        {\n            \"b\": null\n        }\n    ],\n    \"c\": {},\n    \"d\": [],\n    \"e\": \"\\u007f\\ud83d\\ude00\\u0001\"\n}";
        assert_eq!(to_python_json(&v), expected);
        // json.dumps(v, indent=2).
        let v = serde_json::json!({"r": {"resolved": 1, "total": 2}, "l": ["x"]});
        let expected = "{\n  \"r\": {\n    \"resolved\": 1,\n    \"total\": 2\n  },\n  \"l\": [\n    \"x\"\n  ]\n}";
        assert_eq!(to_python_json_indent(&v, 2), expected);
    }
}
