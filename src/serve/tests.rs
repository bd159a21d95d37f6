//! The HTTP face in process, on the fake engine with the mini benchmark's specs: every
//! endpoint and error answer, the token, a full queue (429 with Retry-After), an expired
//! deadline, and random request bodies (never a 5xx, never a crash).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::{json, Value};

use super::{listen, ServeConfig};
use crate::bench::{run_load, Client, Load};
use crate::engine::FakeEngine;
use crate::evaluator::tests::{engine, gold, mini, Mini};
use crate::evaluator::Evaluator;

const CALC: &str = "swe-eval-mini__calc-1";

/// A server on a free loopback port; stops when dropped (the runtime's tasks end with it).
struct Server {
    addr: SocketAddr,
    stop: tokio::sync::watch::Sender<bool>,
    ev: Arc<Evaluator<FakeEngine>>,
    /// Its folder: the mini benchmark as `mini` materialized it (`in/`), the state.
    dir: tempfile::TempDir,
}

async fn server(token: Option<&str>, tune: impl FnOnce(&mut Mini)) -> (Server, Mini, FakeEngine) {
    server_with(token, tune, |_| {}, |_| {}).await
}

/// [`server`], with the engine and the listener's configuration tuned too.
async fn server_with(
    token: Option<&str>,
    tune: impl FnOnce(&mut Mini),
    tune_engine: impl FnOnce(&FakeEngine),
    tune_config: impl FnOnce(&mut ServeConfig),
) -> (Server, Mini, FakeEngine) {
    let dir = tempfile::tempdir().unwrap();
    let mut m = mini(dir.path());
    tune(&mut m);
    let e = engine(&m.dataset);
    tune_engine(&e);
    let (ev, _) = Evaluator::start(Arc::new(e.clone()), m.dataset.clone(), m.opts.clone())
        .await
        .unwrap();
    let ev = Arc::new(ev);
    let mut config = ServeConfig::new("127.0.0.1:0".parse().unwrap());
    config.token = token.map(str::to_string);
    config.max_body = 1 << 20;
    tune_config(&mut config);
    let l = listen(config).await.unwrap();
    let addr = l.local_addr();
    let (stop, rx) = tokio::sync::watch::channel(false);
    tokio::spawn(l.serve(ev.clone(), rx));
    (
        Server {
            addr,
            stop,
            ev,
            dir,
        },
        m,
        e,
    )
}

impl Server {
    async fn client(&self, token: Option<&str>) -> Client {
        Client::connect(self.addr, token.map(str::to_string))
            .await
            .unwrap()
    }

    async fn close(self) {
        let _ = self.stop.send(true);
        self.ev.shutdown().await;
    }
}

fn body(b: &[u8]) -> Value {
    serde_json::from_slice(b).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(b)))
}

/// The rows of a JSON Lines answer to `GET path` (which must be 200).
async fn jsonl(c: &mut Client, path: &str) -> Vec<Value> {
    let (status, _, b) = c.request("GET", path, None).await.unwrap();
    assert_eq!(status, 200, "{path}");
    String::from_utf8(b)
        .unwrap()
        .lines()
        .map(|l| body(l.as_bytes()))
        .collect()
}

#[tokio::test]
async fn every_endpoint_answers_and_every_error_is_json_with_its_status() {
    let (s, m, _e) = server(None, |_| {}).await;
    let mut c = s.client(None).await;
    let one = json!({"instance_id": CALC, "model_patch": gold(&m, CALC), "sample": 2});
    let (status, _, b) = c
        .request("POST", "/v1/evaluations", Some(one.to_string().as_bytes()))
        .await
        .unwrap();
    assert_eq!(status, 200);
    let accepted = body(&b);
    assert_eq!(accepted["state"], "queued");
    assert!(accepted["similarity"].as_f64().unwrap() > 0.99);
    let id = accepted["id"].as_str().unwrap().to_string();
    let (status, _, b) = c
        .request("GET", &format!("/v1/evaluations/{id}?wait=30"), None)
        .await
        .unwrap();
    assert_eq!(status, 200);
    let done = body(&b);
    assert_eq!(
        (done["state"].as_str(), done["status"].as_str()),
        (Some("done"), Some("resolved")),
        "{done}"
    );
    assert_eq!(done["mask"], false);
    assert_eq!(done["fail_to_pass"]["passed"], 3);

    // A batch: a list in, a list out; the identical one comes from the cache.
    let batch = json!([
        {"instance_id": CALC, "model_patch": gold(&m, CALC)},
        {"instance_id": CALC, "model_patch": "", "execute": true},
        {"instance_id": CALC, "model_patch": "x", "execute": false},
    ]);
    let (status, _, b) = c
        .request(
            "POST",
            "/v1/evaluations",
            Some(batch.to_string().as_bytes()),
        )
        .await
        .unwrap();
    assert_eq!(status, 200);
    let list = body(&b);
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 3);
    assert_eq!(
        (list[0]["cached"].as_bool(), list[0]["status"].as_str()),
        (Some(true), Some("resolved"))
    );
    assert_eq!(list[1]["status"], "empty");
    assert!(list[2].get("status").is_none(), "not executed: no status");
    let ids: Vec<Value> = list.iter().map(|e| e["id"].clone()).collect();
    let (status, _, b) = c
        .request(
            "POST",
            "/v1/evaluations/wait",
            Some(json!({"ids": ids, "timeout_s": 5}).to_string().as_bytes()),
        )
        .await
        .unwrap();
    assert_eq!(status, 200);
    let w = body(&b);
    assert_eq!(w["done"].as_array().unwrap().len(), 3, "{w}");
    assert_eq!(w["pending"], json!([]));

    let (status, _, b) = c.request("GET", "/v1/health", None).await.unwrap();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&b));
    assert_eq!(body(&b)["accepting"], true);
    let (status, _, b) = c.request("GET", "/metrics", None).await.unwrap();
    assert_eq!(status, 200);
    let text = String::from_utf8(b).unwrap();
    for line in [
        "swe_eval_cache_hits_total 1",
        "swe_eval_results_total{status=\"resolved\"} 2",
        "swe_eval_queue_depth 0",
        "swe_eval_result_latency_seconds_count",
    ] {
        assert!(text.contains(line), "{line} missing in:\n{text}");
    }
    let gauge = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("{name} missing in:\n{text}"))
    };
    let (rss, peak) = (
        gauge("process_resident_memory_bytes"),
        gauge("swe_eval_process_peak_resident_memory_bytes"),
    );
    assert!(rss > 1 << 20 && peak >= rss, "rss {rss}, peak {peak}");
    let rows = jsonl(&mut c, "/v1/export/outcomes.jsonl?since=0").await;
    assert_eq!(rows.len(), 3, "three executed: {rows:?}");
    assert_eq!(rows[1]["sample"], 1, "samples numbered in acceptance order");

    // Errors: JSON with code, message and field, and the right status.
    let errors: [ErrorCase<'_>; 9] = [
        (
            "POST",
            "/v1/evaluations",
            Some(b"{not json"),
            400,
            "bad_request",
            None,
        ),
        (
            "POST",
            "/v1/evaluations",
            Some(br#"{"instance_id": "nope", "model_patch": ""}"#),
            400,
            "bad_request",
            Some("instance_id"),
        ),
        (
            "POST",
            "/v1/evaluations",
            Some(br#"[{"instance_id": "swe-eval-mini__calc-1"}]"#),
            400,
            "bad_request",
            Some("[0].model_patch"),
        ),
        (
            "GET",
            "/v1/evaluations/e999999",
            None,
            404,
            "not_found",
            Some("id"),
        ),
        (
            "GET",
            "/v1/evaluations/../../etc",
            None,
            404,
            "not_found",
            Some("id"),
        ),
        ("GET", "/v2/nothing", None, 404, "not_found", None),
        (
            "DELETE",
            "/v1/evaluations",
            None,
            405,
            "method_not_allowed",
            None,
        ),
        (
            "GET",
            &format!("/v1/evaluations/{id}?wait=soon"),
            None,
            400,
            "bad_request",
            Some("wait"),
        ),
        (
            "POST",
            "/v1/evaluations/wait",
            Some(br#"{"ids": []}"#),
            400,
            "bad_request",
            Some("ids"),
        ),
    ];
    for (method, path, b, want, code, field) in errors {
        let (status, _, got) = c.request(method, path, b).await.unwrap();
        let e = body(&got);
        assert_eq!(
            (status, e["code"].as_str(), e["field"].as_str()),
            (want, Some(code), field),
            "{method} {path}: {e}"
        );
        assert!(!e["message"].as_str().unwrap().is_empty());
    }
    // Too large: a patch over the bound, and a body over the server's limit.
    let big = json!({"instance_id": CALC, "model_patch": "x".repeat((1 << 20) + 10)});
    let (status, _, got) = c
        .request("POST", "/v1/evaluations", Some(big.to_string().as_bytes()))
        .await
        .unwrap();
    assert_eq!(
        (status, body(&got)["code"].as_str()),
        (413, Some("too_large"))
    );
    s.close().await;
}

#[tokio::test]
async fn a_token_is_required_when_set_a_full_queue_is_429_and_a_deadline_a_masked_timeout() {
    let token = "0123456789abcdef-token";
    let (s, m, e) = server(Some(token), |m| {
        m.opts.max_queue = 1;
        m.opts.run.workers = 1;
    })
    .await;
    e.set_job_delay(Duration::from_secs(2));
    let mut anon = s.client(None).await;
    let (status, headers, got) = anon.request("GET", "/v1/health", None).await.unwrap();
    assert_eq!(
        (status, body(&got)["code"].as_str()),
        (401, Some("unauthorized"))
    );
    assert!(headers
        .iter()
        .any(|(k, v)| k == "www-authenticate" && v == "Bearer"));
    let mut wrong = s.client(Some("0123456789abcdef-tokeN")).await;
    assert_eq!(wrong.request("GET", "/metrics", None).await.unwrap().0, 401);
    let mut c = s.client(Some(token)).await;
    let slow = json!({"instance_id": CALC, "model_patch": gold(&m, CALC), "deadline_s": 0.5});
    let (status, _, got) = c
        .request("POST", "/v1/evaluations", Some(slow.to_string().as_bytes()))
        .await
        .unwrap();
    assert_eq!(status, 200);
    let id = body(&got)["id"].as_str().unwrap().to_string();
    let more = json!({"instance_id": CALC, "model_patch": "other"});
    let (status, headers, got) = c
        .request("POST", "/v1/evaluations", Some(more.to_string().as_bytes()))
        .await
        .unwrap();
    assert_eq!(
        (status, body(&got)["code"].as_str()),
        (429, Some("queue_full"))
    );
    let retry: u64 = headers
        .iter()
        .find(|(k, _)| k == "retry-after")
        .map(|(_, v)| v.parse().unwrap())
        .expect("Retry-After");
    assert!(retry >= 1);
    let (_, _, got) = c
        .request("GET", &format!("/v1/evaluations/{id}?wait=10"), None)
        .await
        .unwrap();
    let t = body(&got);
    assert_eq!(
        (t["status"].as_str(), t["mask"].as_bool()),
        (Some("timeout"), Some(true)),
        "{t}"
    );
    s.close().await;
}

/// A random JSON value whose objects use the request's field names (and others).
fn json_value() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("instance_id".to_string()),
        Just("model_patch".to_string()),
        Just("model_name_or_path".to_string()),
        Just("sample".to_string()),
        Just("deadline_s".to_string()),
        Just("execute".to_string()),
        Just("ids".to_string()),
        Just("timeout_s".to_string()),
        "[a-z_]{0,12}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        Just(json!(CALC)),
        Just(json!("e1")),
        ".{0,40}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..7)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

#[test]
fn random_request_bodies_never_get_a_5xx_and_never_stop_the_server() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (s, _m, _e) = rt.block_on(server(None, |m| m.opts.max_queue = 50));
    // A fixed seed (as every property test here), unless PROPTEST_RNG_SEED names another.
    let mut config = proptest::test_runner::Config::with_cases(256);
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = proptest::test_runner::RngSeed::Fixed(0x5e5e_e7a1_2026_1129);
    }
    let mut runner = proptest::test_runner::TestRunner::new(config);
    let paths = [
        "/v1/evaluations",
        "/v1/evaluations/wait",
        "/v1/evaluations/e1?wait=0",
        "/v1/health",
        "/x",
    ];
    let strategy = (
        prop_oneof![
            json_value().prop_map(|v| v.to_string().into_bytes()),
            prop::collection::vec(any::<u8>(), 0..300),
        ],
        0..paths.len(),
        prop_oneof![Just("POST"), Just("GET"), Just("PUT")],
    );
    runner
        .run(&strategy, |(bytes, p, method)| {
            let (status, got) = rt.block_on(async {
                let mut c = s.client(None).await;
                let b = (method != "GET").then_some(&bytes[..]);
                let (status, _, got) = c.request(method, paths[p], b).await.unwrap();
                (status, got)
            });
            prop_assert!(
                status < 500,
                "{status} for {method} {}: {}",
                paths[p],
                String::from_utf8_lossy(&got)
            );
            if status != 200 {
                let e: Value = serde_json::from_slice(&got).unwrap();
                prop_assert!(e["code"].is_string() && e["message"].is_string());
            }
            Ok(())
        })
        .unwrap();
    // Still serving.
    let status = rt.block_on(async {
        let mut c = s.client(None).await;
        c.request("GET", "/v1/health", None).await.unwrap().0
    });
    assert_eq!(status, 200);
    rt.block_on(s.close());
}

/// (method, path, body, status, code, field) of one error the API must answer.
type ErrorCase<'a> = (
    &'a str,
    &'a str,
    Option<&'a [u8]>,
    u16,
    &'a str,
    Option<&'a str>,
);

#[tokio::test]
async fn a_paced_load_keeps_every_request_with_its_due_time_lateness_and_latency() {
    let (s, m, _e) = server(None, |_| {}).await;
    let one = json!({"instance_id": CALC, "model_patch": gold(&m, CALC), "execute": false});
    let load = Load {
        addr: s.addr,
        token: None,
        connections: 4,
        requests: 40,
        method: "POST".into(),
        path: "/v1/evaluations".into(),
        bodies: vec![one.to_string().into_bytes()],
        keep_bodies: false,
        rate: Some(400.0),
    };
    let report = run_load(load).await.unwrap();
    let ks: Vec<usize> = report.samples.iter().map(|x| x.k).collect();
    assert_eq!(ks, (0..40).collect::<Vec<_>>());
    for x in &report.samples {
        // The k-th is due k / rate seconds after the start.
        assert!((x.due_s - x.k as f64 / 400.0).abs() < 1e-6, "{x:?}");
        assert_eq!(x.status, 200);
        assert!(x.latency_ms > 0.0 && x.late_ms >= 0.0, "{x:?}");
    }
    // The same latencies as the report's own.
    let mut lat: Vec<f64> = report.samples.iter().map(|x| x.latency_ms).collect();
    lat.sort_by(f64::total_cmp);
    let max = report.latencies.quantile(1.0).as_secs_f64() * 1000.0;
    assert!((lat[39] - max).abs() < 1e-6, "{} vs {max}", lat[39]);
    s.close().await;
}

/// The value of header `name` (lower case) of an answer.
fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

#[tokio::test]
async fn a_batch_larger_than_the_queue_is_413_and_one_that_fits_an_empty_queue_is_429() {
    let (s, _m, e) = server(None, |m| {
        m.opts.max_queue = 2;
        m.opts.run.workers = 1;
    })
    .await;
    e.set_job_delay(Duration::from_secs(2));
    let mut c = s.client(None).await;
    let rec = |k: usize| json!({"instance_id": CALC, "model_patch": format!("p{k}"), "sample": k});
    let post = |v: Value| v.to_string().into_bytes();
    // Three to execute against --max-queue 2: never acceptable, so no Retry-After.
    let (status, headers, got) = c
        .request(
            "POST",
            "/v1/evaluations",
            Some(&post(json!([rec(0), rec(1), rec(2)]))),
        )
        .await
        .unwrap();
    let e3 = body(&got);
    assert_eq!(
        (status, e3["code"].as_str()),
        (413, Some("too_large")),
        "{e3}"
    );
    assert!(
        e3["message"].as_str().unwrap().contains("--max-queue 2"),
        "{e3}"
    );
    assert_eq!(header(&headers, "retry-after"), None);
    // Not executed, the same three are taken: only executed ones go in the queue.
    let similarity: Vec<Value> = (0..3)
        .map(|k| json!({"instance_id": CALC, "model_patch": format!("p{k}"), "execute": false}))
        .collect();
    let (status, _, _) = c
        .request(
            "POST",
            "/v1/evaluations",
            Some(&post(Value::Array(similarity))),
        )
        .await
        .unwrap();
    assert_eq!(status, 200);
    // One queued: two more fit an empty queue, not this one, so they wait their turn.
    let (status, _, _) = c
        .request("POST", "/v1/evaluations", Some(&post(rec(0))))
        .await
        .unwrap();
    assert_eq!(status, 200);
    let (status, headers, got) = c
        .request(
            "POST",
            "/v1/evaluations",
            Some(&post(json!([rec(1), rec(2)]))),
        )
        .await
        .unwrap();
    assert_eq!(
        (status, body(&got)["code"].as_str()),
        (429, Some("queue_full"))
    );
    assert!(header(&headers, "retry-after").is_some());
    s.close().await;
}

/// Sends a request's head with `Content-Length: len` and `sent` bytes of its body, and keeps
/// the connection open (the rest of the body not sent).
async fn partial_post(addr: SocketAddr, len: usize, sent: usize) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let mut t = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /v1/evaluations HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {len}\r\n\r\n"
    );
    t.write_all(head.as_bytes()).await.unwrap();
    t.write_all(&vec![b' '; sent]).await.unwrap();
    t.flush().await.unwrap();
    t
}

/// Reads one answer from a raw connection: its status line and its body.
async fn raw_answer(t: &mut tokio::net::TcpStream) -> (String, String) {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = tokio::time::timeout(Duration::from_secs(10), t.read(&mut chunk))
            .await
            .expect("an answer within 10 s")
            .unwrap();
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).into_owned();
        if let Some((head, rest)) = text.split_once("\r\n\r\n") {
            let len: usize = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")?
                        .parse()
                        .ok()
                })
                .unwrap_or(0);
            if rest.len() >= len || n == 0 {
                return (head.lines().next().unwrap().to_string(), rest.to_string());
            }
        }
        assert!(n > 0, "closed before an answer: {text}");
    }
}

#[tokio::test]
async fn bodies_past_the_servers_memory_for_them_are_503_before_they_are_read() {
    // Bodies of at most 1 MiB, 1.5 MiB of them at once.
    let (s, m, _e) = server_with(
        None,
        |_| {},
        |_| {},
        |c| {
            c.max_body_memory = 3 << 19;
        },
    )
    .await;
    // A body of 1 MiB being sent holds 1 MiB of the budget from its head on.
    let mut first = partial_post(s.addr, 1 << 20, 1000).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Another of 600 kB is refused at once, its body never sent, with Retry-After.
    let mut second = partial_post(s.addr, 600_000, 0).await;
    let (status, text) = raw_answer(&mut second).await;
    assert!(status.contains(" 503 "), "{status} {text}");
    let e = body(text.as_bytes());
    assert_eq!(e["code"], "unavailable", "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("--max-body-memory"),
        "{e}"
    );
    // A small one fits beside the first.
    let mut c = s.client(None).await;
    let small = json!({"instance_id": CALC, "model_patch": gold(&m, CALC), "execute": false});
    let (status, _, _) = c
        .request(
            "POST",
            "/v1/evaluations",
            Some(small.to_string().as_bytes()),
        )
        .await
        .unwrap();
    assert_eq!(status, 200);
    // The first one finishes (whitespace: not JSON), and its share is given back.
    {
        use tokio::io::AsyncWriteExt;
        first
            .write_all(&vec![b' '; (1 << 20) - 1000])
            .await
            .unwrap();
    }
    let (status, _) = raw_answer(&mut first).await;
    assert!(status.contains(" 400 "), "{status}");
    // Given back: a whole 1 MiB body is read again (whitespace: 400, not 503).
    let mut again = partial_post(s.addr, 1 << 20, 1 << 20).await;
    let (status, _) = raw_answer(&mut again).await;
    assert!(status.contains(" 400 "), "{status}");
    // A chunked body (no length given) takes its share as it comes: past the budget, 503.
    let mut chunked = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let head = "POST /v1/evaluations HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n";
        chunked.write_all(head.as_bytes()).await.unwrap();
        let _held = partial_post(s.addr, 1 << 20, 0).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let piece = vec![b' '; 600_000];
        chunked
            .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
            .await
            .unwrap();
        chunked.write_all(&piece).await.unwrap();
        chunked.write_all(b"\r\n").await.unwrap();
        let (status, _) = raw_answer(&mut chunked).await;
        assert!(status.contains(" 503 "), "{status}");
    }
    s.close().await;
}

async fn post(c: &mut Client, path: &str, v: Value) -> crate::bench::Answer {
    c.request("POST", path, Some(v.to_string().as_bytes()))
        .await
        .unwrap()
}

#[tokio::test]
async fn unknown_fields_are_refused_by_name_and_prediction_records_are_taken_as_they_are() {
    let (s, m, _e) = server(None, |_| {}).await;
    let mut c = s.client(None).await;
    let (status, _, got) = post(
        &mut c,
        "/v1/evaluations",
        json!({"instance_id": CALC, "model_patch": gold(&m, CALC), "timeout": 30}),
    )
    .await;
    let e = body(&got);
    assert_eq!((status, e["field"].as_str()), (400, Some("timeout")), "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("did you mean `deadline_s`?"),
        "{e}"
    );
    let (status, _, got) = post(
        &mut c,
        "/v1/evaluations/wait",
        json!({"ids": ["e1"], "timeout": 3}),
    )
    .await;
    let e = body(&got);
    assert_eq!((status, e["field"].as_str()), (400, Some("timeout")), "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("`timeout_s`"),
        "{e}"
    );
    // Every line of the mini benchmark's predictions file, as it is (with its `case`), and a
    // record as SWE-bench's inference scripts write it.
    let predictions = s.dir.path().join("in").join("predictions.jsonl");
    let predictions = std::fs::read_to_string(&predictions).unwrap();
    for line in predictions.lines().filter(|l| !l.is_empty()) {
        let mut v: Value = serde_json::from_str(line).unwrap();
        v["execute"] = json!(false);
        let (status, _, got) = post(&mut c, "/v1/evaluations", v).await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&got));
    }
    let inference = json!({"instance_id": CALC, "model_name_or_path": "m", "text": "prompt",
        "full_output": "answer", "model_patch": gold(&m, CALC), "execute": false});
    assert_eq!(post(&mut c, "/v1/evaluations", inference).await.0, 200);
    s.close().await;
}

#[tokio::test]
async fn the_bearer_scheme_is_matched_without_regard_to_case() {
    let token = "0123456789abcdef-token";
    let (s, _m, _e) = server(Some(token), |_| {}).await;
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let mut c = tokio::net::TcpStream::connect(s.addr).await.unwrap();
        use tokio::io::AsyncWriteExt;
        let req = format!(
            "GET /v1/health HTTP/1.1\r\nhost: x\r\nauthorization: {scheme} {token}\r\n\r\n"
        );
        c.write_all(req.as_bytes()).await.unwrap();
        let (status, text) = raw_answer(&mut c).await;
        assert!(status.contains(" 200 "), "{scheme}: {status} {text}");
    }
    let mut wrong = s.client(Some("0123456789abcdef-TOKEN")).await;
    assert_eq!(
        wrong.request("GET", "/v1/health", None).await.unwrap().0,
        401
    );
    s.close().await;
}

#[tokio::test]
async fn the_running_gauge_counts_containers_started_not_jobs_prepared_ahead() {
    // -j 2 on an engine that prepares ahead: the dispatcher hands it 4 jobs, 2 run at once.
    let (s, m, e) = server_with(
        None,
        |m| m.opts.run.workers = 2,
        |e| {
            e.set_prepares_ahead()
                .set_job_delay(Duration::from_millis(1500));
        },
        |_| {},
    )
    .await;
    let mut c = s.client(None).await;
    let batch: Vec<Value> = (0..4)
        .map(|k| json!({"instance_id": CALC, "model_patch": format!("{}#{k}", gold(&m, CALC))}))
        .collect();
    let (status, _, got) = c
        .request(
            "POST",
            "/v1/evaluations",
            Some(Value::Array(batch).to_string().as_bytes()),
        )
        .await
        .unwrap();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&got));
    let (mut most, mut seen_two) = (0, false);
    for _ in 0..40 {
        let (_, _, h) = c.request("GET", "/v1/health", None).await.unwrap();
        let running = body(&h)["running"].as_u64().unwrap();
        let (_, _, text) = c.request("GET", "/metrics", None).await.unwrap();
        let gauge: u64 = String::from_utf8(text)
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("swe_eval_running ")?.parse().ok())
            .unwrap();
        most = most.max(running).max(gauge);
        seen_two |= running == 2;
        if s.ev.queued() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(most <= 2 && seen_two, "running at most {most} at -j 2");
    assert_eq!(e.max_running(), 2);
    s.close().await;
}

#[tokio::test]
async fn every_outcome_carries_its_score_grading_and_objections_and_so_does_the_export() {
    let (s, m, _e) = server(None, |m| m.opts.run.strict = true).await;
    let mut c = s.client(None).await;
    let forged = crate::evaluator::tests::hack::patch(crate::evaluator::tests::hack::FORGE);
    let batch = json!([
        {"instance_id": CALC, "model_patch": gold(&m, CALC), "model_name_or_path": "m", "sample": 4},
        {"instance_id": CALC, "model_patch": forged, "model_name_or_path": "m", "sample": 5},
        {"instance_id": CALC, "model_patch": "", "model_name_or_path": "m", "sample": 6},
        {"instance_id": CALC, "model_patch": "x", "model_name_or_path": "m", "execute": false},
    ]);
    let (_, _, got) = post(&mut c, "/v1/evaluations", batch).await;
    let ids: Vec<Value> = body(&got)
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].clone())
        .collect();
    let (_, _, got) = post(
        &mut c,
        "/v1/evaluations/wait",
        json!({"ids": ids, "timeout_s": 30}),
    )
    .await;
    let w = body(&got);
    let done = w["done"].as_array().unwrap();
    let got: Vec<(Value, Value, Value, Value)> = done
        .iter()
        .map(|e| {
            let first = e["objections"]
                .as_array()
                .and_then(|o| o.first())
                .and_then(|o| o.as_str())
                .map(|o| json!(o.split(':').next().unwrap()))
                .unwrap_or(Value::Null);
            (
                e["status"].clone(),
                e["score"].clone(),
                e["graded_by"].clone(),
                first,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (json!("resolved"), json!(1.0), json!("strict"), Value::Null),
            (
                json!("resolved"),
                json!(0.0),
                json!("strict"),
                json!("exit_code_disagrees")
            ),
            (json!("empty"), json!(0.0), json!("strict"), Value::Null),
            (Value::Null, Value::Null, Value::Null, Value::Null),
        ],
        "{w}"
    );
    assert!(done[..3].iter().all(|e| e["objections"].is_array()), "{w}");
    // The export: every row keeps its model and sample; executed ones carry the same score.
    let rows = jsonl(&mut c, "/v1/export/rewards.jsonl").await;
    assert_eq!(rows.len(), 4);
    assert!(rows
        .iter()
        .all(|r| r["model_name_or_path"] == "m" && r["sample"].is_u64()));
    let scored: Vec<(Value, Value)> = rows
        .iter()
        .map(|r| (r["score"].clone(), r["graded_by"].clone()))
        .collect();
    assert_eq!(
        scored,
        [
            (json!(1.0), json!("strict")),
            (json!(0.0), json!("strict")),
            (json!(0.0), json!("strict")),
            (Value::Null, Value::Null),
        ]
    );
    assert_eq!(rows[1]["status"], "resolved");
    assert!(rows[1]["objections"][0]
        .as_str()
        .unwrap()
        .starts_with("exit_code_disagrees: the test command exited 1"));
    let outcomes = jsonl(&mut c, "/v1/export/outcomes.jsonl").await;
    assert_eq!(outcomes.len(), 3);
    assert_eq!(
        (
            outcomes[1]["resolved"].as_bool(),
            outcomes[1]["strict_resolved"].as_bool()
        ),
        (Some(true), Some(false))
    );
    assert_eq!(outcomes[1]["score"], 0.0);
    s.close().await;
}
