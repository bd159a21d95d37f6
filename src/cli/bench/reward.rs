//! `swe-eval bench reward`: the whole unified-diff reward (load the dataset and predictions,
//! score every prediction on every core, serialize the JSON Lines) against plain Python
//! (stdlib difflib + `unidiff`, `scripts/reward_oracle.py`) on the same files; the speed-up,
//! the agreement of the two, peak memory (VmHWM), and a pathological pair of ~300 KB patches
//! that share little.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::cli::{CliResult, Ending};
use swe_eval_core::reward::{self, RewardRecord};

fn shared() -> PathBuf {
    std::env::var_os("SWE_EVAL_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"))
}

/// `swe-eval bench reward`: which predictions, how often, and the Python baseline.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Dataset (default: the shared partial SWE-bench Verified).
    #[arg(long, short = 'd')]
    pub dataset: Option<PathBuf>,
    /// Predictions (default: the shared 486 pydantic-deep predictions).
    #[arg(long, short = 'p')]
    pub predictions: Option<PathBuf>,
    /// Timed runs of the Rust side; the best and the median are reported [allowed: 1 to 1000].
    #[arg(long, default_value_t = 5, value_parser = crate::cli::values::bench(swe_eval_core::bounds::BENCH_PASSES))]
    pub iterations: usize,
    /// Python interpreter for the baseline.
    #[arg(long, default_value = "python3")]
    pub python: String,
    /// Skip the Python baseline.
    #[arg(long)]
    pub no_python: bool,
    /// Size of each pathological patch, in KB (0 skips it) [allowed: 0 to 10240].
    #[arg(long, default_value_t = 300, value_parser = crate::cli::values::bench(swe_eval_core::bounds::BENCH_PATCH_KB))]
    pub pathological_kb: usize,
    /// Worker threads [default: every core] [allowed: 1 to 1024]; at most the cores are used.
    #[arg(long, short = 'j', visible_alias = "jobs", value_parser = crate::cli::values::workers())]
    pub workers: Option<usize>,
    /// Also write the figures as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Time of each step of one end-to-end run.
#[derive(Debug, Default, Clone, Copy)]
struct Steps {
    load_dataset: Duration,
    load_predictions: Duration,
    rewards: Duration,
    write: Duration,
}

impl Steps {
    fn total(&self) -> Duration {
        self.load_dataset + self.load_predictions + self.rewards + self.write
    }
}

/// One end-to-end run: load, score, serialize, write. Returns the similarities.
fn rust_once(
    dataset: &Path,
    preds: &Path,
    out: &Path,
) -> Result<(Vec<f64>, Steps), crate::cli::CliError> {
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

fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
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

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Times both implementations on the same files, checks they agree, and prints the figures.
pub fn run(args: Args) -> CliResult {
    // At most the cores, as `reward` itself.
    let workers =
        swe_eval_core::bounds::bound_workers(args.workers, swe_eval_core::bounds::cores());
    if let Some(note) = workers.note("worker threads", "its cores") {
        eprintln!("note: {note}");
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(workers.used)
        .build()?;
    let threads = pool.current_num_threads();
    let dataset = args.dataset.clone().unwrap_or_else(|| {
        shared().join("datasets/partial-verified/swebench_verified_partial.jsonl")
    });
    let preds = args.predictions.clone().unwrap_or_else(|| {
        shared().join("datasets/predictions/pydantic-deep_minimax-m2.5/all_preds.jsonl")
    });
    let tmp = tempfile::tempdir()?;

    // Rust, end to end, several times.
    let mut runs = Vec::new();
    let mut sims = Vec::new();
    for _ in 0..args.iterations.max(1) {
        let (s, steps) =
            pool.install(|| rust_once(&dataset, &preds, &tmp.path().join("rust.jsonl")))?;
        sims = s;
        runs.push(steps);
    }
    runs.sort_by_key(Steps::total);
    let best = runs[0].total();
    let median = runs[runs.len() / 2].total();
    let b = runs[0];
    println!(
        "rust:   best run: load dataset {:.1} ms, load predictions {:.1} ms, rewards {:.1} ms, write {:.1} ms",
        secs(b.load_dataset) * 1e3,
        secs(b.load_predictions) * 1e3,
        secs(b.rewards) * 1e3,
        secs(b.write) * 1e3
    );
    println!(
        "rust:   {} rewards, end to end best {:.1} ms, median {:.1} ms ({threads} threads, {} runs)",
        sims.len(),
        secs(best) * 1e3,
        secs(median) * 1e3,
        runs.len()
    );

    // The command itself, as a user runs it (process start, loading, fsync of the output).
    let mut command_runs = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        for _ in 0..args.iterations.max(1) {
            let t = Instant::now();
            let status = Command::new(&exe)
                .arg("reward")
                .arg("--dataset")
                .arg(&dataset)
                .arg("--predictions")
                .arg(&preds)
                .arg("--output")
                .arg(tmp.path().join("command.jsonl"))
                .args(
                    args.workers
                        .map(|j| vec!["--workers".to_string(), j.to_string()])
                        .unwrap_or_default(),
                )
                .stderr(std::process::Stdio::null())
                .status()?;
            if status.code() == Some(0) || status.code() == Some(3) {
                command_runs.push(t.elapsed());
            }
        }
    }
    command_runs.sort();
    let command_best = command_runs.first().copied();
    if let Some(c) = command_best {
        println!(
            "rust:   `swe-eval reward` as a process: best {:.1} ms, median {:.1} ms",
            secs(c) * 1e3,
            secs(command_runs[command_runs.len() / 2]) * 1e3
        );
    }

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
    let slowest: Vec<String> = each
        .iter()
        .take(3)
        .map(|(d, id)| format!("{id} {:.1} ms", secs(*d) * 1e3))
        .collect();
    println!(
        "rust:   one core, rewards only: {:.1} ms; slowest: {}",
        secs(serial) * 1e3,
        slowest.join(", ")
    );

    // Python, the same work in one process.
    let mut python = serde_json::Value::Null;
    if !args.no_python {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/reward_oracle.py");
        let out_py = tmp.path().join("python.jsonl");
        let t = Instant::now();
        let res = Command::new(&args.python)
            .arg(&script)
            .args(["unidiff", "--dataset"])
            .arg(&dataset)
            .arg("--predictions")
            .arg(&preds)
            .arg("--output")
            .arg(&out_py)
            .output();
        let wall = t.elapsed();
        match res {
            Ok(o) if o.status.success() => {
                let inner: serde_json::Value =
                    serde_json::from_slice(&o.stdout).unwrap_or_default();
                let py_sims: Vec<f64> = std::fs::read_to_string(&out_py)?
                    .lines()
                    .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                    .filter_map(|v| v["similarity"].as_f64())
                    .collect();
                let max_diff = sims
                    .iter()
                    .zip(&py_sims)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0, f64::max);
                let speedup = secs(wall) / secs(best);
                let speedup_command = command_best.map(|c| secs(wall) / secs(c));
                let compute = inner["seconds"].as_f64().unwrap_or(f64::NAN);
                println!(
                    "python: {} rewards, wall {:.2} s (reward computation alone {:.2} s)",
                    py_sims.len(),
                    secs(wall),
                    compute
                );
                println!(
                    "speed-up: {speedup:.0}x end to end in process (python wall / rust best), {:.0}x as processes (python wall / `swe-eval reward` wall), {:.0}x against python's computation alone; max |rust - python| = {max_diff:e} over {} rows",
                    speedup_command.unwrap_or(f64::NAN),
                    compute / secs(best),
                    py_sims.len().min(sims.len())
                );
                python = json!({"wall_s": secs(wall), "compute_s": compute, "rows": py_sims.len(),
                    "speedup_end_to_end": speedup, "speedup_as_processes": speedup_command, "speedup_vs_compute": compute / secs(best), "max_abs_diff": max_diff});
            }
            Ok(o) => eprintln!(
                "python baseline failed: {}",
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(e) => eprintln!("python baseline not run ({}): {e}", args.python),
        }
    }

    // Two large patches with disjoint vocabularies: characters still match everywhere, which
    // is the slow case of the character-level matcher.
    let mut patho = serde_json::Value::Null;
    if args.pathological_kb > 0 {
        let bytes = args.pathological_kb * 1024;
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
        let d = t.elapsed();
        println!(
            "pathological: two patches of {} and {} KB sharing little: similarity {:.4} in {:.2} s (one core)",
            a.len() / 1024,
            b.len() / 1024,
            r.similarity,
            secs(d)
        );
        // The other hard shape: nearly the same text, one character in 20 changed, so the
        // recursion finds thousands of matching blocks.
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
        let d2 = t.elapsed();
        println!(
            "pathological: a {} KB patch against itself with one character in 20 changed: similarity {:.4} in {:.2} s (one core)",
            a.len() / 1024,
            r2.similarity,
            secs(d2)
        );
        patho = json!({"pred_bytes": a.len(), "oracle_bytes": b.len(), "similarity": r.similarity, "seconds": secs(d),
            "near_copy": {"similarity": r2.similarity, "seconds": secs(d2)}});
    }

    let peak = peak_rss_kb();
    println!(
        "peak memory (VmHWM): {} MB",
        peak.map_or("?".into(), |kb| format!("{:.1}", kb as f64 / 1024.0))
    );
    if let Some(path) = &args.json {
        let doc = json!({
            "rows": sims.len(), "threads": threads, "rust_one_core_rewards_s": secs(serial),
            "rust_best_s": secs(best), "rust_median_s": secs(median),
            "command_best_s": command_best.map(secs),
            "rust_best_steps_s": {"load_dataset": secs(b.load_dataset), "load_predictions": secs(b.load_predictions),
                "rewards": secs(b.rewards), "write": secs(b.write)},
            "python": python, "pathological": patho, "peak_rss_kb": peak,
        });
        swe_eval_core::fsutil::write_json_atomic(path, &doc)?;
    }
    Ok(Ending::Clean)
}
