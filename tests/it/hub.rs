//! Hugging Face dataset names, against a stand-in hub on 127.0.0.1 (this machine cannot reach
//! the real one): a small HTTP server that answers the two kinds of request a dataset
//! download makes, as the hub answers them. `GET /api/datasets/<name>/revision/<branch>`
//! lists the repository's files (`siblings`) and commit (`sha`); `GET
//! /datasets/<name>/resolve/<branch>/<path>` serves a file, honouring `Range` (206 with
//! `Content-Range`) and naming the commit (`X-Repo-Commit`) and the content (`ETag`). The file
//! served is `tests/fixtures/hostile/mini.parquet`: the mini benchmark's rows as Parquet,
//! written by `scripts/faults_parquet_seed.sh` the way Hugging Face ships SWE-bench Verified.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};
use swe_eval::hub::{fetch_split, HubConfig};
use swe_eval_core::dataset::{self, Dataset};

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

/// The bundled mini benchmark as Parquet.
fn mini_parquet() -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile/mini.parquet"))
        .unwrap()
}

/// One request the stand-in saw.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    authorization: Option<String>,
}

/// The stand-in hub: datasets by name, each a map from (branch, path) to bytes.
struct StandIn {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

type Files = BTreeMap<(String, String), Vec<u8>>;

impl StandIn {
    /// Serves `repos` (dataset name -> files) until the test process ends; with `token`, only
    /// requests bearing it are answered (401 otherwise), as for a gated dataset.
    fn start(repos: BTreeMap<String, Files>, token: Option<&str>) -> StandIn {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (log, token) = (seen.clone(), token.map(str::to_string));
        let repos = Arc::new(repos);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (repos, log, token) = (repos.clone(), log.clone(), token.clone());
                std::thread::spawn(move || {
                    let _ = serve(stream, &repos, &log, token.as_deref());
                });
            }
        });
        StandIn { url, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn config(&self, cache: &Path, token: Option<&str>) -> HubConfig {
        HubConfig {
            endpoint: self.url.clone(),
            cache: cache.to_path_buf(),
            token: token.map(str::to_string),
            offline: false,
            progress: false,
        }
    }
}

/// Answers one request.
fn serve(
    stream: TcpStream,
    repos: &BTreeMap<String, Files>,
    log: &Mutex<Vec<Seen>>,
    token: Option<&str>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut headers = BTreeMap::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let authorization = headers.get("authorization").cloned();
    log.lock().unwrap().push(Seen {
        path: path.clone(),
        authorization: authorization.clone(),
    });
    let mut out = stream;
    let mut reply = |status: &str, extra: &[(&str, String)], body: &[u8]| {
        let mut head = format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
            body.len()
        );
        for (k, v) in extra {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        out.write_all(head.as_bytes())?;
        out.write_all(body)?;
        out.flush()
    };
    if let Some(t) = token {
        if authorization.as_deref() != Some(&format!("Bearer {t}")) {
            return reply("401 Unauthorized", &[], b"{\"error\":\"gated\"}");
        }
    }
    let branch_of = |b: &str| b.replace("%2F", "/");
    if let Some(rest) = path.strip_prefix("/api/datasets/") {
        // <owner>/<name>/revision/<branch>
        let parts: Vec<&str> = rest.splitn(4, '/').collect();
        if let [owner, name, "revision", branch] = parts[..] {
            let branch = branch_of(branch.split('?').next().unwrap_or(""));
            if let Some(files) = repos.get(&format!("{owner}/{name}")) {
                let siblings: Vec<serde_json::Value> = files
                    .keys()
                    .filter(|(b, _)| *b == branch)
                    .map(|(_, p)| serde_json::json!({ "rfilename": p }))
                    .collect();
                if !siblings.is_empty() {
                    let body = serde_json::json!({
                        "id": format!("{owner}/{name}"), "sha": COMMIT, "siblings": siblings,
                    });
                    let extra = [("Content-Type", "application/json".to_string())];
                    return reply("200 OK", &extra, body.to_string().as_bytes());
                }
            }
        }
        return reply("404 Not Found", &[], b"{\"error\":\"not found\"}");
    }
    if let Some(rest) = path.strip_prefix("/datasets/") {
        // <owner>/<name>/resolve/<branch>/<path>
        let parts: Vec<&str> = rest.splitn(5, '/').collect();
        if let [owner, name, "resolve", branch, file] = parts[..] {
            let key = (branch_of(branch), file.to_string());
            if let Some(bytes) = repos
                .get(&format!("{owner}/{name}"))
                .and_then(|f| f.get(&key))
            {
                let etag = format!("\"{}\"", hex::encode(Sha256::digest(bytes)));
                let mut extra = vec![("X-Repo-Commit", COMMIT.to_string()), ("ETag", etag)];
                let range = headers.get("range").and_then(|r| r.strip_prefix("bytes="));
                let Some((from, to)) = range.and_then(|r| r.split_once('-')) else {
                    return reply("200 OK", &extra, bytes);
                };
                let from: usize = from.parse().unwrap_or(0);
                let to: usize = to.parse().unwrap_or(bytes.len() - 1).min(bytes.len() - 1);
                extra.push((
                    "Content-Range",
                    format!("bytes {from}-{to}/{}", bytes.len()),
                ));
                return reply("206 Partial Content", &extra, &bytes[from..=to]);
            }
        }
    }
    reply("404 Not Found", &[], b"{\"error\":\"not found\"}")
}

/// A hub with SWE-bench Verified (the mini rows) on `main`, and a dataset whose split exists
/// only in the hub's Parquet conversion.
fn hub_repos() -> BTreeMap<String, Files> {
    let parquet = mini_parquet();
    let main = |p: &str| (String::from("main"), p.to_string());
    let converted = |p: &str| (String::from("refs/convert/parquet"), p.to_string());
    BTreeMap::from([
        (
            "SWE-bench/SWE-bench_Verified".to_string(),
            Files::from([
                (main("README.md"), b"---\nconfigs: []\n---\n".to_vec()),
                (main("data/test-00000-of-00001.parquet"), parquet.clone()),
            ]),
        ),
        (
            "someone/converted".to_string(),
            Files::from([
                (main("rows.jsonl"), b"{}\n".to_vec()),
                (converted("default/test/0000.parquet"), parquet),
            ]),
        ),
    ])
}

/// The mini dataset as its JSON Lines file gives it.
fn mini_from_file() -> Dataset {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/mini/dataset.jsonl");
    let (ds, problems) = dataset::load_dataset(&path).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    ds
}

#[test]
fn a_dataset_name_is_downloaded_once_into_the_cache_and_reads_as_the_file_does() {
    let hub = StandIn::start(hub_repos(), None);
    let cache = tempfile::tempdir().unwrap();
    let cfg = hub.config(cache.path(), None);
    let name = "SWE-bench/SWE-bench_Verified";
    let files = fetch_split(&cfg, name, "test").unwrap();
    let want = cache.path().join(format!(
        "datasets--SWE-bench--SWE-bench_Verified/snapshots/{COMMIT}/data/test-00000-of-00001.parquet"
    ));
    assert_eq!(files, std::slice::from_ref(&want));
    assert_eq!(std::fs::read(&want).unwrap(), mini_parquet());
    // The layout of the Hugging Face tools' cache: the branch names the commit.
    let main_ref = cache
        .path()
        .join("datasets--SWE-bench--SWE-bench_Verified/refs/main");
    assert_eq!(std::fs::read_to_string(main_ref).unwrap().trim(), COMMIT);
    let asked = hub.seen().len();
    assert!(
        hub.seen()
            .iter()
            .any(|s| s.path == "/api/datasets/SWE-bench/SWE-bench_Verified/revision/main"),
        "{:?}",
        hub.seen()
    );

    // Once: a second fetch asks the hub nothing.
    assert_eq!(
        fetch_split(&cfg, name, "test").unwrap(),
        std::slice::from_ref(&want)
    );
    assert_eq!(hub.seen().len(), asked, "{:?}", hub.seen());

    // The rows are the mini benchmark's, exactly as its JSON Lines file gives them.
    let (ds, problems) = dataset::load_dataset(&want).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(ds.instances, mini_from_file().instances);

    // A split the dataset does not have is named, with the files it does have.
    let err = fetch_split(&cfg, name, "dev").unwrap_err().to_string();
    assert!(
        err.contains("split \"dev\"") && err.contains("data/test-00000-of-00001.parquet"),
        "{err}"
    );
}

#[test]
fn a_split_only_in_the_hubs_parquet_conversion_is_found_there() {
    let hub = StandIn::start(hub_repos(), None);
    let cache = tempfile::tempdir().unwrap();
    let files = fetch_split(&hub.config(cache.path(), None), "someone/converted", "test").unwrap();
    assert_eq!(files.len(), 1);
    assert!(files[0].ends_with("default/test/0000.parquet"), "{files:?}");
    let (ds, _) = dataset::load_dataset(&files[0]).unwrap();
    assert_eq!(ds.len(), mini_from_file().len());
}

#[test]
fn a_token_is_sent_and_a_refusal_says_what_to_do() {
    let hub = StandIn::start(hub_repos(), Some("hf_secret"));
    let cache = tempfile::tempdir().unwrap();
    let name = "SWE-bench/SWE-bench_Verified";
    let err = fetch_split(&hub.config(cache.path(), None), name, "test")
        .unwrap_err()
        .to_string();
    assert!(err.contains("HF_TOKEN"), "{err}");
    assert!(err.contains("data/test-00000-of-00001.parquet"), "{err}");
    let files = fetch_split(&hub.config(cache.path(), Some("hf_secret")), name, "test").unwrap();
    assert_eq!(files.len(), 1);
    assert!(hub
        .seen()
        .iter()
        .filter(|s| s.path.contains("/resolve/"))
        .all(|s| s.authorization.as_deref() == Some("Bearer hf_secret")));
}

#[test]
fn with_no_hub_the_error_names_the_file_to_download_and_where_to_put_it() {
    // A port nothing listens on: bound, then closed.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cache = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(crate::common::bin())
        .args([
            "reward",
            "--dataset_name",
            "SWE-bench/SWE-bench_Verified",
            "-p",
            "gold",
        ])
        .arg("-o")
        .arg(cache.path().join("r.jsonl"))
        .env("HF_ENDPOINT", format!("http://127.0.0.1:{port}"))
        .env("HF_HOME", cache.path())
        .env_remove("HF_HUB_CACHE")
        .env_remove("HF_HUB_OFFLINE")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{err}");
    let url = format!(
        "http://127.0.0.1:{port}/datasets/SWE-bench/SWE-bench_Verified/resolve/main/data/test-00000-of-00001.parquet"
    );
    assert!(err.contains(&url), "{err}");
    let place: PathBuf = cache
        .path()
        .join("hub/datasets--SWE-bench--SWE-bench_Verified/snapshots/manual/data/test-00000-of-00001.parquet");
    assert!(err.contains(&place.display().to_string()), "{err}");
    assert!(!cache.path().join("r.jsonl").exists());
}

/// `swe-eval reward` on a hub name gives the same rewards as on the file.
#[test]
fn reward_on_a_dataset_name_equals_reward_on_the_file() {
    let hub = StandIn::start(hub_repos(), None);
    let dir = tempfile::tempdir().unwrap();
    let preds = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/mini/predictions.jsonl");
    let reward = |dataset: &str, out: &str| {
        let o = std::process::Command::new(crate::common::bin())
            .args(["reward", "-d", dataset, "--split", "test", "-p"])
            .arg(&preds)
            .arg("-o")
            .arg(dir.path().join(out))
            .env("HF_ENDPOINT", &hub.url)
            .env("HF_HOME", dir.path().join("hf"))
            .env_remove("HF_HUB_CACHE")
            .env_remove("HF_HUB_OFFLINE")
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        std::fs::read_to_string(dir.path().join(out)).unwrap()
    };
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/mini/dataset.jsonl");
    let from_file = reward(file.to_str().unwrap(), "file.jsonl");
    let from_hub = reward("SWE-bench/SWE-bench_Verified", "hub.jsonl");
    assert_eq!(from_hub.lines().count(), 22);
    assert_eq!(from_hub, from_file);
}

/// The official harness's command line, with only `python -m swebench.harness.run_evaluation`
/// replaced by `swe-eval run`, on the real engine: the dataset comes from the stand-in hub (the
/// mini benchmark's rows, which the test above shows load exactly as the file does), and the
/// verdicts are those the file-based runs of the mini benchmark must give
/// (`datasets/mini/expected.json`). The environment supplies what the mini benchmark needs
/// beyond the official flags: its repositories and the Debian flavour.
#[test]
fn the_official_command_line_runs_against_the_stand_in_hub() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    if rt.block_on(crate::common::docker_engine()).is_none() {
        return;
    }
    let _turn = crate::common::mini_images_shared();
    let hub = StandIn::start(hub_repos(), None);
    let dir = tempfile::tempdir().unwrap();
    let bench = swe_eval_core::mini::materialize(&dir.path().join("mini")).unwrap();
    let report_dir = dir.path().join("reports");
    let run_id = format!("it-official-{}", std::process::id());
    let ids = ["swe-eval-mini__calc-1", "swe-eval-mini__strutils-1"];
    let line = format!(
        "--dataset_name SWE-bench/SWE-bench_Verified --split test --predictions_path {} --max_workers 8 --run_id {run_id} --instance_ids {} {} --report_dir {}",
        bench.predictions.display(),
        ids[0],
        ids[1],
        report_dir.display()
    );
    let o = std::process::Command::new(crate::common::bin())
        .arg("run")
        .args(line.split(' '))
        .env("HF_ENDPOINT", &hub.url)
        .env("HF_HOME", dir.path().join("hf"))
        .env_remove("HF_HUB_CACHE")
        .env_remove("HF_HUB_OFFLINE")
        .env("SWE_EVAL_FLAVOUR", "debian")
        .env("SWE_EVAL_MIRRORS", &bench.mirrors)
        .output()
        .unwrap();
    let text = format!(
        "swe-eval run {line}\nexit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        hub.seen()
            .iter()
            .any(|s| s.path.ends_with("data/test-00000-of-00001.parquet")),
        "the dataset came from the hub: {:?}",
        hub.seen()
    );
    let rows = std::fs::read_to_string(report_dir.join(format!("{run_id}.predictions.jsonl")))
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mut got: Vec<(String, String, u64, String)> = rows
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["instance_id"].as_str().unwrap().to_string(),
                v["model"].as_str().unwrap().to_string(),
                v["sample"].as_u64().unwrap(),
                v["category"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    let expected: Vec<serde_json::Value> =
        serde_json::from_str(swe_eval_core::mini::EXPECTED).unwrap();
    let mut want: Vec<(String, String, u64, String)> = expected
        .iter()
        .filter(|e| ids.contains(&e["instance_id"].as_str().unwrap()))
        .map(|e| {
            (
                e["instance_id"].as_str().unwrap().to_string(),
                e["model_name_or_path"].as_str().unwrap().to_string(),
                e["sample"].as_u64().unwrap(),
                e["category"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    want.sort();
    assert_eq!(want.len(), 6);
    assert_eq!(got, want, "{text}");
    // The official run summary is in the report folder, as the official harness puts it.
    let summary = report_dir.join(format!("mini-gold.{run_id}.json"));
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&summary).unwrap_or_else(|e| panic!("{e}\n{text}")))
            .unwrap();
    assert_eq!(s["resolved_instances"], 2, "{s}");
    eprintln!(
        "hub: the official command line ran against the stand-in hub: {} verdicts as expected",
        got.len()
    );
}
