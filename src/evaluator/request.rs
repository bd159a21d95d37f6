//! What a trainer sends ([`Request`]: one SWE-bench prediction record and how to evaluate it),
//! read from JSON and checked field by field, and why a request is refused ([`Refusal`]: a
//! code, a message and the field, which the HTTP face turns into a status and a JSON error).

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use swe_eval_core::dataset::kind_of as kind;

/// One prediction to evaluate.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The instance.
    pub instance_id: String,
    /// The patch (`""` for none).
    pub model_patch: String,
    /// The model [default: the server's].
    pub model_name_or_path: Option<String>,
    /// The sample number [default: 0].
    pub sample: u32,
    /// The hard deadline from acceptance [default: the server's].
    pub deadline: Option<Duration>,
    /// Execute it (`false`: the similarity alone).
    pub execute: bool,
}

impl Request {
    /// A request to execute `patch` on `instance_id`, everything else by default.
    pub fn new(instance_id: &str, patch: &str) -> Self {
        Request {
            instance_id: instance_id.to_string(),
            model_patch: patch.to_string(),
            model_name_or_path: None,
            sample: 0,
            deadline: None,
            execute: true,
        }
    }
}

/// Why a request was refused: the HTTP face's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalCode {
    /// Malformed: not JSON, a field missing or of the wrong type, an unknown instance (400).
    BadRequest,
    /// No or a wrong bearer token (401).
    Unauthorized,
    /// No such evaluation or path (404).
    NotFound,
    /// The path exists, not with this method (405).
    MethodNotAllowed,
    /// The body, a patch or a batch is too large (413); also a batch with more predictions to
    /// execute than the queue holds when empty (`--max-queue`).
    TooLarge,
    /// The queue is full: retry after `retry_after` (429).
    QueueFull,
    /// Not accepting: shutting down, the state cannot be written, or request bodies already
    /// fill the server's memory for them (503, the last with `retry_after`).
    Unavailable,
}

impl RefusalCode {
    /// The HTTP status of the code.
    pub fn http_status(self) -> u16 {
        match self {
            RefusalCode::BadRequest => 400,
            RefusalCode::Unauthorized => 401,
            RefusalCode::NotFound => 404,
            RefusalCode::MethodNotAllowed => 405,
            RefusalCode::TooLarge => 413,
            RefusalCode::QueueFull => 429,
            RefusalCode::Unavailable => 503,
        }
    }
}

/// A refused request: what is wrong, and where.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Refusal {
    /// What kind of refusal.
    pub code: RefusalCode,
    /// What is wrong, for a person.
    pub message: String,
    /// The field at fault (`model_patch`, `[3].instance_id` in a batch), if one is.
    pub field: Option<String>,
    /// Seconds to wait before retrying: a full queue, bodies past the server's memory for them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
}

impl Refusal {
    /// A refusal of `code` with `message`, naming `field`.
    pub fn new(code: RefusalCode, message: impl Into<String>, field: Option<&str>) -> Self {
        Refusal {
            code,
            message: message.into(),
            field: field.map(str::to_string),
            retry_after: None,
        }
    }

    /// A batch of `executed` predictions to execute, more than the queue holds (`max_queue`):
    /// refused as too large (413), since no wait would let it in.
    pub fn batch_over_queue(executed: usize, max_queue: usize) -> Self {
        Refusal::new(
            RefusalCode::TooLarge,
            format!(
                "{executed} predictions to execute in one batch, more than the queue holds \
                 (--max-queue {max_queue}) even when empty: send at most {max_queue} at once"
            ),
            None,
        )
    }

    fn bad(message: impl Into<String>, field: &str) -> Self {
        Refusal::new(RefusalCode::BadRequest, message, Some(field))
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.field {
            Some(field) => write!(f, "{}: {}", field, self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Bounds on what one request may carry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// Largest patch, in bytes.
    pub max_patch_bytes: usize,
    /// Most predictions in one batch.
    pub max_batch: usize,
    /// Longest deadline a request may ask for.
    pub max_deadline: Duration,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            max_patch_bytes: 1 << 20,
            max_batch: 4096,
            max_deadline: Duration::from_secs(24 * 3600),
        }
    }
}

/// The fields a request reads (see [`Request`]).
pub const REQUEST_FIELDS: [&str; 6] = [
    "instance_id",
    "model_patch",
    "model_name_or_path",
    "sample",
    "deadline_s",
    "execute",
];

/// Fields a request may carry and the evaluator does not read: what prediction records carry
/// besides the request's fields, so a trainer can post a record as its tool wrote it.
/// `text` and `full_output` are the prompt and the model's whole answer that SWE-bench's own
/// inference scripts (`swebench.inference.run_api`, `run_llama`) write beside `model_patch`;
/// `case` is the label of the bundled mini benchmark's predictions. Any other field is refused,
/// naming it, so a misspelt setting (`timeout` for `deadline_s`) is never dropped silently.
pub const IGNORED_FIELDS: [&str; 3] = ["text", "full_output", "case"];

/// Names a client may mean by a field the request does not know, and the field it takes.
const MEANT: [(&str, &str); 14] = [
    ("timeout", "deadline_s"),
    ("timeout_s", "deadline_s"),
    ("deadline", "deadline_s"),
    ("time_limit", "deadline_s"),
    ("patch", "model_patch"),
    ("diff", "model_patch"),
    ("prediction", "model_patch"),
    ("model", "model_name_or_path"),
    ("model_name", "model_name_or_path"),
    ("instance", "instance_id"),
    ("id", "instance_id"),
    ("sample_id", "sample"),
    ("seed", "sample"),
    ("run", "execute"),
];

/// The requests of a JSON body: one prediction record, or a list of them (a batch, whose
/// fields are named `[i].field` in refusals). A field neither read ([`REQUEST_FIELDS`]) nor
/// known to be carried by prediction records ([`IGNORED_FIELDS`]) is refused (400), naming it
/// and the field meant where one is close. The body is taken by value: its strings (the
/// patches) move into the requests rather than being copied.
pub fn requests_from_json(body: Value, bounds: &Bounds) -> Result<Vec<Request>, Refusal> {
    match body {
        Value::Array(items) => {
            if items.is_empty() {
                return Err(Refusal::new(
                    RefusalCode::BadRequest,
                    "an empty list: send one prediction record or a list of them",
                    None,
                ));
            }
            if items.len() > bounds.max_batch {
                return Err(Refusal::new(
                    RefusalCode::TooLarge,
                    format!(
                        "{} predictions in one batch; at most {}",
                        items.len(),
                        bounds.max_batch
                    ),
                    None,
                ));
            }
            items
                .into_iter()
                .enumerate()
                .map(|(i, v)| request_from_json(v, bounds, &format!("[{i}].")))
                .collect()
        }
        v => Ok(vec![request_from_json(v, bounds, "")?]),
    }
}

/// A refusal of the first field of `obj` that a request neither reads nor ignores.
fn unknown_field(obj: &serde_json::Map<String, Value>, at: &str) -> Option<Refusal> {
    let name = obj
        .keys()
        .find(|k| !REQUEST_FIELDS.contains(&k.as_str()) && !IGNORED_FIELDS.contains(&k.as_str()))?;
    let shown: String = name.chars().take(60).collect();
    let hint = match meant(name) {
        Some(field) => format!("; did you mean `{field}`?"),
        None => format!(
            " (a request reads {}; prediction records may also carry {})",
            REQUEST_FIELDS.join(", "),
            IGNORED_FIELDS.join(", ")
        ),
    };
    Some(Refusal::bad(
        format!("unknown field `{shown}`{hint}"),
        &format!("{at}{shown}"),
    ))
}

/// The request field a client most likely meant by `name`: a known other name for it
/// ([`MEANT`]), else a field within two edits of it (case and `-` aside).
fn meant(name: &str) -> Option<&'static str> {
    let norm = name.to_ascii_lowercase().replace('-', "_");
    if let Some((_, field)) = MEANT.iter().find(|(alias, _)| *alias == norm) {
        return Some(field);
    }
    REQUEST_FIELDS
        .iter()
        .map(|f| (edits(&norm, f), *f))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, f)| f)
}

/// The edit distance (insertions, deletions, substitutions) between `a` and `b`, by character.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

fn request_from_json(v: Value, bounds: &Bounds, at: &str) -> Result<Request, Refusal> {
    let field = |name: &str| format!("{at}{name}");
    let Value::Object(mut obj) = v else {
        let whole = at.trim_end_matches('.');
        return Err(Refusal::new(
            RefusalCode::BadRequest,
            format!("a prediction record is a JSON object, not {}", kind(&v)),
            (!whole.is_empty()).then_some(whole),
        ));
    };
    if let Some(r) = unknown_field(&obj, at) {
        return Err(r);
    }
    let instance_id = match obj.remove("instance_id") {
        Some(Value::String(s)) if !s.is_empty() && s.len() <= 256 => s,
        Some(Value::String(s)) if s.is_empty() => {
            return Err(Refusal::bad("empty", &field("instance_id")))
        }
        Some(Value::String(_)) => {
            return Err(Refusal::bad("longer than 256 bytes", &field("instance_id")))
        }
        Some(other) => {
            return Err(Refusal::bad(
                format!("a string, not {}", kind(&other)),
                &field("instance_id"),
            ))
        }
        None => return Err(Refusal::bad("missing", &field("instance_id"))),
    };
    let model_patch = match obj.remove("model_patch") {
        Some(Value::String(s)) => s,
        Some(Value::Null) => String::new(),
        Some(other) => {
            return Err(Refusal::bad(
                format!("a string (or null for no patch), not {}", kind(&other)),
                &field("model_patch"),
            ))
        }
        None => {
            return Err(Refusal::bad(
                "missing (null or \"\" for an empty patch)",
                &field("model_patch"),
            ))
        }
    };
    if model_patch.len() > bounds.max_patch_bytes {
        return Err(Refusal::new(
            RefusalCode::TooLarge,
            format!(
                "{} bytes; at most {}",
                model_patch.len(),
                bounds.max_patch_bytes
            ),
            Some(&field("model_patch")),
        ));
    }
    let model_name_or_path = match obj.remove("model_name_or_path") {
        None | Some(Value::Null) => None,
        Some(Value::String(s))
            if !s.is_empty() && s.len() <= 256 && !s.chars().any(char::is_control) =>
        {
            Some(s)
        }
        Some(Value::String(_)) => {
            return Err(Refusal::bad(
                "1 to 256 bytes without control characters",
                &field("model_name_or_path"),
            ))
        }
        Some(other) => {
            return Err(Refusal::bad(
                format!("a string, not {}", kind(&other)),
                &field("model_name_or_path"),
            ))
        }
    };
    let sample = match obj.get("sample") {
        None | Some(Value::Null) => 0,
        Some(Value::Number(n)) => match n.as_u64().and_then(|n| u32::try_from(n).ok()) {
            Some(s) => s,
            None => {
                return Err(Refusal::bad(
                    format!("a whole number from 0 to {}, not {n}", u32::MAX),
                    &field("sample"),
                ))
            }
        },
        Some(other) => {
            return Err(Refusal::bad(
                format!("a whole number, not {}", kind(other)),
                &field("sample"),
            ))
        }
    };
    let deadline = match obj.get("deadline_s") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_f64() {
            Some(s) if s > 0.0 && s <= bounds.max_deadline.as_secs_f64() => {
                Some(Duration::from_secs_f64(s))
            }
            _ => {
                return Err(Refusal::bad(
                    format!(
                        "seconds, more than 0 and at most {}, not {n}",
                        bounds.max_deadline.as_secs()
                    ),
                    &field("deadline_s"),
                ))
            }
        },
        Some(other) => {
            return Err(Refusal::bad(
                format!("a number of seconds, not {}", kind(other)),
                &field("deadline_s"),
            ))
        }
    };
    let execute = match obj.get("execute") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(Refusal::bad(
                format!("true or false, not {}", kind(other)),
                &field("execute"),
            ))
        }
    };
    Ok(Request {
        instance_id,
        model_patch,
        model_name_or_path,
        sample,
        deadline,
        execute,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_record_and_a_batch_are_read_and_each_bad_field_is_named() {
        let b = Bounds::default();
        let one = requests_from_json(
            json!({"instance_id": "a__b-1", "model_patch": null, "sample": 3, "deadline_s": 1.5,
                    "execute": false, "model_name_or_path": "m", "case": "gold",
                    "text": "prompt", "full_output": "answer"}),
            &b,
        )
        .unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].model_patch, "");
        assert_eq!(one[0].sample, 3);
        assert_eq!(one[0].deadline, Some(Duration::from_millis(1500)));
        assert!(!one[0].execute);

        let cases = [
            (
                json!({"model_patch": ""}),
                "instance_id",
                RefusalCode::BadRequest,
            ),
            (
                json!({"instance_id": 5, "model_patch": ""}),
                "instance_id",
                RefusalCode::BadRequest,
            ),
            (
                json!({"instance_id": "x"}),
                "model_patch",
                RefusalCode::BadRequest,
            ),
            (
                json!({"instance_id": "x", "model_patch": "", "sample": -1}),
                "sample",
                RefusalCode::BadRequest,
            ),
            (
                json!({"instance_id": "x", "model_patch": "", "deadline_s": 0}),
                "deadline_s",
                RefusalCode::BadRequest,
            ),
            (
                json!({"instance_id": "x", "model_patch": "", "deadline_s": 1e9}),
                "deadline_s",
                RefusalCode::BadRequest,
            ),
            (
                json!({"instance_id": "x", "model_patch": "", "execute": "yes"}),
                "execute",
                RefusalCode::BadRequest,
            ),
            (
                json!({"instance_id": "x", "model_patch": "", "model_name_or_path": ""}),
                "model_name_or_path",
                RefusalCode::BadRequest,
            ),
            (
                json!({"instance_id": "x", "model_patch": "x".repeat(b.max_patch_bytes + 1)}),
                "model_patch",
                RefusalCode::TooLarge,
            ),
        ];
        for (body, field, code) in cases {
            let r = requests_from_json(body.clone(), &b).unwrap_err();
            assert_eq!(
                (r.field.as_deref(), r.code),
                (Some(field), code),
                "{body}: {r}"
            );
            let batch = json!([{"instance_id": "ok", "model_patch": ""}, body]);
            let r = requests_from_json(batch, &b).unwrap_err();
            assert_eq!(r.field.as_deref(), Some(format!("[1].{field}").as_str()));
        }
        for body in [json!([]), json!("x"), json!([1])] {
            let r = requests_from_json(body.clone(), &b).unwrap_err();
            assert_eq!(r.code, RefusalCode::BadRequest, "{body}");
        }
        let big = Bounds { max_batch: 2, ..b };
        let r = requests_from_json(json!([{}, {}, {}]), &big).unwrap_err();
        assert_eq!(r.code, RefusalCode::TooLarge);
    }

    #[test]
    fn an_unknown_field_is_refused_naming_it_and_the_field_meant() {
        let b = Bounds::default();
        let with = |extra: Value| {
            let mut r = json!({"instance_id": "a__b-1", "model_patch": ""});
            r.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            r
        };
        let cases = [
            (json!({"timeout": 30}), "timeout", Some("deadline_s")),
            (json!({"Timeout": 30}), "Timeout", Some("deadline_s")),
            (json!({"deadline": 30}), "deadline", Some("deadline_s")),
            (json!({"patch": "x"}), "patch", Some("model_patch")),
            (json!({"model": "m"}), "model", Some("model_name_or_path")),
            (
                json!({"instanceid": "x"}),
                "instanceid",
                Some("instance_id"),
            ),
            (json!({"exectue": false}), "exectue", Some("execute")),
            (json!({"samples": 2}), "samples", Some("sample")),
            (json!({"step": 12}), "step", None),
            (json!({"temperature": 0.7}), "temperature", None),
        ];
        for (extra, name, meant) in cases {
            let r = requests_from_json(with(extra.clone()), &b).unwrap_err();
            assert_eq!(
                (r.code, r.field.as_deref()),
                (RefusalCode::BadRequest, Some(name)),
                "{extra}: {r}"
            );
            assert!(
                r.message.contains(&format!("unknown field `{name}`")),
                "{r}"
            );
            match meant {
                Some(f) => assert!(r.message.contains(&format!("did you mean `{f}`?")), "{r}"),
                None => assert!(
                    !r.message.contains("did you mean") && r.message.contains("deadline_s"),
                    "{r}"
                ),
            }
            // In a batch, the field is named with its place.
            let batch = json!([{"instance_id": "ok", "model_patch": ""}, with(extra)]);
            let r = requests_from_json(batch, &b).unwrap_err();
            assert_eq!(r.field, Some(format!("[1].{name}")));
        }
        // What prediction records carry is accepted: the mini benchmark's own lines, and
        // SWE-bench's inference output.
        for line in swe_eval_core::mini::PREDICTIONS
            .lines()
            .filter(|l| !l.is_empty())
        {
            let v: Value = serde_json::from_str(line).unwrap();
            let got = requests_from_json(v.clone(), &b).unwrap();
            assert_eq!(got[0].instance_id, v["instance_id"].as_str().unwrap());
        }
        let inference = json!({"instance_id": "a__b-1", "model_name_or_path": "gpt",
            "text": "<prompt>", "full_output": "<answer>", "model_patch": "diff"});
        assert_eq!(
            requests_from_json(inference, &b).unwrap()[0].model_patch,
            "diff"
        );
    }
}
