//! `bench reward`: the whole unified-diff reward (load the dataset and predictions, score
//! every prediction on every core, serialize the JSON Lines) against plain Python (stdlib
//! difflib + `unidiff`, `scripts/reward_oracle.py`) on the same files; the speed-up, the
//! agreement of the two, peak memory (VmHWM), and a pathological pair of large patches that
//! share little.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::{shared, BenchError};
use crate::memory::Resident;
use swe_eval_core::bounds::Workers;
use swe_eval_core::reward::{self, RewardRecord};

/// What `bench reward` scores, how often, and the Python baseline.
#[derive(Debug, Clone)]
pub struct RewardOptions {
    /// Dataset (`None`: the shared partial SWE-bench Verified).
    pub dataset: Option<PathBuf>,
    /// Predictions (`None`: the shared 486 pydantic-deep predictions).
    pub predictions: Option<PathBuf>,
    /// Timed runs of the Rust side, and of `swe-eval reward` as a process (at least one).
    pub iterations: usize,
    /// Python interpreter for the baseline (`None`: no baseline).
    pub python: Option<String>,
    /// Size of each pathological patch, in KiB (0: none).
    pub pathological_kb: usize,
    /// Worker threads asked for (`None`: every core); at most the cores are used.
    pub workers: Option<usize>,
}

/// Time of each step of one end-to-end run.
#[derive(Debug, Default, Clone, Copy)]
pub struct Steps {
    /// Reading the dataset.
    pub load_dataset: Duration,
    /// Reading the predictions.
    pub load_predictions: Duration,
    /// Scoring them.
    pub rewards: Duration,
    /// Serializing and writing the JSON Lines.
    pub write: Duration,
}

impl Steps {
    /// All four.
    pub fn total(&self) -> Duration {
        self.load_dataset + self.load_predictions + self.rewards + self.write
    }
}

/// What the Python baseline came to.
#[derive(Debug)]
pub enum PythonBaseline {
    /// Not asked for.
    Skipped,
    /// The interpreter could not be started.
    NotRun {
        /// The interpreter.
        python: String,
        /// Why.
        source: std::io::Error,
    },
    /// It exited with an error.
    Failed {
        /// Its standard error.
        stderr: String,
    },
    /// It ran.
    Ran(PythonFigures),
}

/// The Python baseline's figures.
#[derive(Debug, Clone, Copy)]
pub struct PythonFigures {
    /// Its process, start to end.
    pub wall: Duration,
    /// Its reward computation alone, as it reports it (NaN when it says nothing).
    pub compute_secs: f64,
    /// Rows it wrote.
    pub rows: usize,
    /// The largest difference between its similarity and Rust's, row by row.
    pub max_abs_diff: f64,
}

/// The two pathological pairs.
#[derive(Debug, Clone, Copy)]
pub struct Pathological {
    /// Size of the prediction, bytes.
    pub pred_bytes: usize,
    /// Size of the reference, bytes.
    pub oracle_bytes: usize,
    /// Two large patches with disjoint vocabularies: their similarity.
    pub similarity: f64,
    /// Its time, one core.
    pub time: Duration,
    /// The prediction against itself with one character in 20 changed: its similarity.
    pub near_similarity: f64,
    /// Its time, one core.
    pub near_time: Duration,
}

/// What `bench reward` measured.
#[derive(Debug)]
pub struct RewardFigures {
    /// The worker threads asked for and used.
    pub workers: Workers,
    /// Threads of the pool that scored.
    pub threads: usize,
    /// Rewards computed in each run.
    pub rows: usize,
    /// Each end-to-end run in process, shortest first.
    pub runs: Vec<Steps>,
    /// Each run of `swe-eval reward` as a process that ended with 0 or 3, shortest first.
    pub command_runs: Vec<Duration>,
    /// Every reward one after another on one core, scoring alone.
    pub serial: Duration,
    /// The three slowest predictions of those, with their instance.
    pub slowest: Vec<(Duration, String)>,
    /// The Python baseline.
    pub python: PythonBaseline,
    /// The pathological pairs, when asked for.
    pub pathological: Option<Pathological>,
    /// This process's peak resident memory, KiB.
    pub peak_rss_kib: Option<u64>,
}

impl RewardFigures {
    /// The shortest end-to-end run in process.
    pub fn best(&self) -> Duration {
        self.runs.first().map_or(Duration::ZERO, Steps::total)
    }

    /// The median end-to-end run in process.
    pub fn median(&self) -> Duration {
        self.runs
            .get(self.runs.len() / 2)
            .map_or(Duration::ZERO, Steps::total)
    }
}

/// One end-to-end run: load, score, serialize, write. Returns the similarities.
fn rust_once(dataset: &Path, preds: &Path, out: &Path) -> Result<(Vec<f64>, Steps), BenchError> {
    let mut steps = Steps::default();
    let t = Instant::now();
    let (ds, _) = swe_eval_core::dataset::load_dataset(dataset)?;
    steps.load_dataset = t.elapsed();
    let t = Instant::now();
    let loaded = swe_eval_core::predictions::load_path(preds)?;
    steps.load_predictions = t.elapsed();
    let t = Instant::now();
    let results = reward::unidiff_rewards(&ds, &loaded.items);
    steps.rewards = t.elapsed();
    let t = Instant::now();
    let mut records = Vec::with_capacity(results.len());
    let mut sims = Vec::with_capacity(results.len());
    for (p, r) in loaded.items.iter().zip(&results) {
        if let Ok(r) = r {
            records.push(RewardRecord::new(p, r));
            sims.push(r.similarity);
        }
    }
    swe_eval_core::fsutil::write_atomic(out, &reward::rewards_jsonl(&records))?;
    steps.write = t.elapsed();
    Ok((sims, steps))
}

/// Deterministic code-like text of about `bytes` bytes drawn from its own vocabulary.
fn synthetic_patch(bytes: usize, seed: u64, words: &[&str]) -> String {
    let mut x = seed;
    let mut next = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) as usize
    };
    let mut lines = Vec::new();
    let mut size = 0;
    while size < bytes {
        let n = 2 + next() % 6;
        let body: Vec<String> = (0..n)
            .map(|_| format!("{}{}", words[next() % words.len()], next() % 1000))
            .collect();
        let line = format!("+    {}\n", body.join(" "));
        size += line.len();
        lines.push(line);
    }
    format!(
        "diff --git a/big.py b/big.py\n--- a/big.py\n+++ b/big.py\n@@ -0,0 +1,{} @@\n{}",
        lines.len(),
        lines.concat()
    )
}

/// `swe-eval reward` (this executable) run as a user runs it, `iterations` times: process
/// start, loading, the fsync of the output. The runs that ended with 0 or 3, shortest first.
fn command_runs(
    opts: &RewardOptions,
    dataset: &Path,
    preds: &Path,
    out: &Path,
) -> Result<Vec<Duration>, BenchError> {
    let mut runs = Vec::new();
    let Ok(exe) = std::env::current_exe() else {
        return Ok(runs);
    };
    for _ in 0..opts.iterations.max(1) {
        let t = Instant::now();
        let status = Command::new(&exe)
            .arg("reward")
            .arg("--dataset")
            .arg(dataset)
            .arg("--predictions")
            .arg(preds)
            .arg("--output")
            .arg(out)
            .args(
                opts.workers
                    .map(|j| vec!["--workers".to_string(), j.to_string()])
                    .unwrap_or_default(),
            )
            .stderr(std::process::Stdio::null())
            .status()?;
        if status.code() == Some(0) || status.code() == Some(3) {
            runs.push(t.elapsed());
        }
    }
    runs.sort();
    Ok(runs)
}

/// The same work in Python in one process, against Rust's similarities `sims`.
fn python_baseline(
    python: &str,
    dataset: &Path,
    preds: &Path,
    out: &Path,
    sims: &[f64],
) -> Result<PythonBaseline, BenchError> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/reward_oracle.py");
    let t = Instant::now();
    let res = Command::new(python)
        .arg(&script)
        .args(["unidiff", "--dataset"])
        .arg(dataset)
        .arg("--predictions")
        .arg(preds)
        .arg("--output")
        .arg(out)
        .output();
    let wall = t.elapsed();
    Ok(match res {
        Ok(o) if o.status.success() => {
            let inner: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
            let py_sims: Vec<f64> = std::fs::read_to_string(out)?
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .filter_map(|v| v["similarity"].as_f64())
                .collect();
            let max_abs_diff = sims
                .iter()
                .zip(&py_sims)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            PythonBaseline::Ran(PythonFigures {
                wall,
                compute_secs: inner["seconds"].as_f64().unwrap_or(f64::NAN),
                rows: py_sims.len(),
                max_abs_diff,
            })
        }
        Ok(o) => PythonBaseline::Failed {
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        },
        Err(source) => PythonBaseline::NotRun {
            python: python.to_string(),
            source,
        },
    })
}

/// Two large patches with disjoint vocabularies (characters still match everywhere, the slow
/// case of the character-level matcher), and a patch against itself with one character in 20
/// changed (the recursion finds thousands of matching blocks).
fn pathological(kb: usize) -> Pathological {
    let bytes = kb * 1024;
    let a = synthetic_patch(
        bytes,
        1,
        &[
            "alpha", "beta", "gamma", "delta", "self.x", "return", "(", ")", "=", "+",
        ],
    );
    let b = synthetic_patch(
        bytes,
        2,
        &[
            "lorem", "ipsum", "dolor", "sit", "amet", "yield", "[", "]", ":", "-",
        ],
    );
    let t = Instant::now();
    let r = reward::unidiff_reward(&b, &a);
    let time = t.elapsed();
    let mut k = 0usize;
    let near: String = a
        .split_inclusive('\n')
        .map(|line| {
            if !line.starts_with("+ ") {
                return line.to_string();
            }
            line.chars()
                .enumerate()
                .map(|(i, c)| {
                    k += 1;
                    if i > 0 && c != '\n' && k.is_multiple_of(20) {
                        '#'
                    } else {
                        c
                    }
                })
                .collect()
        })
        .collect();
    let t = Instant::now();
    let r2 = reward::unidiff_reward(&near, &a);
    Pathological {
        pred_bytes: a.len(),
        oracle_bytes: b.len(),
        similarity: r.similarity,
        time,
        near_similarity: r2.similarity,
        near_time: t.elapsed(),
    }
}

/// Times the Rust reward in process and as a command, one core's share per prediction, the
/// Python baseline and the pathological pairs, on the same files.
pub fn measure_reward(opts: &RewardOptions) -> Result<RewardFigures, BenchError> {
    // At most the cores, as `reward` itself.
    let workers =
        swe_eval_core::bounds::bound_workers(opts.workers, swe_eval_core::bounds::cores());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(workers.used)
        .build()?;
    let threads = pool.current_num_threads();
    let dataset = opts
        .dataset
        .clone()
        .unwrap_or_else(shared::partial_verified);
    let preds = opts
        .predictions
        .clone()
        .unwrap_or_else(shared::minimax_predictions);
    let tmp = tempfile::tempdir()?;

    // Rust, end to end, several times.
    let mut runs = Vec::new();
    let mut sims = Vec::new();
    for _ in 0..opts.iterations.max(1) {
        let (s, steps) =
            pool.install(|| rust_once(&dataset, &preds, &tmp.path().join("rust.jsonl")))?;
        sims = s;
        runs.push(steps);
    }
    runs.sort_by_key(Steps::total);
    let command_runs = command_runs(opts, &dataset, &preds, &tmp.path().join("command.jsonl"))?;

    // One core, one prediction at a time: the total, and where the time goes.
    let (ds, _) = swe_eval_core::dataset::load_dataset(&dataset)?;
    let loaded = swe_eval_core::predictions::load_path(&preds)?;
    let mut each: Vec<(Duration, &str)> = Vec::new();
    for p in &loaded.items {
        if let Some(inst) = ds.get(&p.instance_id) {
            let t = Instant::now();
            std::hint::black_box(reward::unidiff_reward(&inst.patch, p.patch()));
            each.push((t.elapsed(), &p.instance_id));
        }
    }
    let serial: Duration = each.iter().map(|(d, _)| *d).sum();
    each.sort_by_key(|&(d, _)| std::cmp::Reverse(d));
    let slowest = each
        .iter()
        .take(3)
        .map(|(d, id)| (*d, id.to_string()))
        .collect();

    let python = match &opts.python {
        Some(python) => python_baseline(
            python,
            &dataset,
            &preds,
            &tmp.path().join("python.jsonl"),
            &sims,
        )?,
        None => PythonBaseline::Skipped,
    };
    let pathological = (opts.pathological_kb > 0).then(|| pathological(opts.pathological_kb));
    Ok(RewardFigures {
        workers,
        threads,
        rows: sims.len(),
        runs,
        command_runs,
        serial,
        slowest,
        python,
        pathological,
        peak_rss_kib: Resident::read().peak_kib,
    })
}
