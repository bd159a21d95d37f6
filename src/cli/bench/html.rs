//! `swe-eval bench html`: how long a run's `report.html` takes to write and to open in headless
//! chromium at a given number of predictions. The records are real: the shared MiniMax run
//! graded from its saved logs (patches, log tails, failing tests), repeated as further samples
//! until there are `--predictions` of them. Opening is timed twice: the chromium process from
//! start to the dumped DOM (`--dump-dom`, which waits for the load and the page script), and the
//! page script alone (it records its own time in `data-render-ms`).

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use crate::cli::{failed, CliResult, Ending};
use swe_eval_core::grading::Mode;
use swe_eval_core::report::{grade_all, load_inputs, read_logs, SavedLogs};

const SHARED: &str = "../shared/datasets";

/// `swe-eval bench html`: how many predictions in the page, and how often to open it.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Predictions (rows) in the page [allowed: 1 to 100000].
    #[arg(long, default_value_t = 5000, value_parser = crate::cli::values::bench(swe_eval_core::bounds::BENCH_ROWS))]
    pub count: usize,
    /// Folder for the page (default: a temporary folder, removed after).
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// The browser.
    #[arg(long, default_value = "/usr/bin/chromium")]
    pub chromium: PathBuf,
    /// Times the page is opened (the best and the median are reported) [allowed: 1 to 1000].
    #[arg(long, default_value_t = 3, value_parser = crate::cli::values::bench(swe_eval_core::bounds::BENCH_PASSES))]
    pub repeat: usize,
}

/// Writes the page, opens it in headless chromium, and prints the times.
pub fn run(args: Args) -> CliResult {
    let run_dir = format!("{SHARED}/predictions/pydantic-deep_minimax-m2.5");
    let dataset = PathBuf::from(format!(
        "{SHARED}/partial-verified/swebench_verified_partial.jsonl"
    ));
    let mut problems = Vec::new();
    let predictions = format!("{run_dir}/all_preds.jsonl");
    let (ds, preds) = load_inputs(
        swe_eval_core::dataset::load_dataset(&dataset)?,
        &predictions,
        &mut problems,
    )?;
    let logs = SavedLogs::open(&PathBuf::from(format!(
        "{run_dir}/instance_test_outputs.jsonl"
    )))?;
    let saved = read_logs(&preds, &predictions, &logs, None, &mut problems);
    let verdicts = grade_all(&ds, &preds, &saved, &mut problems);
    let base =
        swe_eval_core::report::records_for_grading(&ds, &preds, &verdicts, &saved, Mode::Official);
    if base.is_empty() {
        return Err(failed("no records to repeat"));
    }
    let mut records = Vec::with_capacity(args.count);
    for i in 0..args.count {
        let mut r = base[i % base.len()].clone();
        r.sample = (i / base.len()) as u32;
        records.push(r);
    }

    let tmp = tempfile::tempdir()?;
    let dir = args
        .output
        .clone()
        .unwrap_or_else(|| tmp.path().to_path_buf());
    let page = dir.join("report.html");
    let t = Instant::now();
    swe_eval_core::report::write_html(
        &page,
        &swe_eval_core::report::Heading {
            title: format!("bench: {} predictions", records.len()),
            notes: vec![],
        },
        &records,
    )?;
    let write_secs = t.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(&page)?.len();

    let blank = tmp.path().join("blank.html");
    std::fs::write(
        &blank,
        "<!DOCTYPE html><title>blank</title><body data-render-ms=\"0\"><span id=\"shown\">0</span>",
    )?;
    let mut baseline = Vec::new();
    let mut opens = Vec::new();
    let mut scripts = Vec::new();
    for k in 0..2 * args.repeat.max(1) {
        let target = if k % 2 == 0 { &blank } else { &page };
        let profile = tmp.path().join(format!("profile{k}"));
        let t = Instant::now();
        let out = Command::new(&args.chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--window-size=1400,1000",
                "--dump-dom",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(format!("file://{}", std::path::absolute(target)?.display()))
            .output()
            .map_err(|e| failed(format!("cannot start {}: {e}", args.chromium.display())))?;
        if k % 2 == 0 {
            baseline.push(t.elapsed().as_secs_f64());
            continue;
        }
        opens.push(t.elapsed().as_secs_f64());
        let dom = String::from_utf8_lossy(&out.stdout);
        let ms = dom
            .split("data-render-ms=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .and_then(|s| s.parse::<f64>().ok())
            .ok_or_else(|| {
                failed("the page did not finish rendering (no data-render-ms in the DOM)")
            })?;
        let shown = dom
            .split("<span id=\"shown\">")
            .nth(1)
            .and_then(|s| s.split('<').next())
            .unwrap_or("?");
        if shown != records.len().to_string() {
            return Err(failed(format!(
                "the page shows {shown} rows, not {}",
                records.len()
            )));
        }
        scripts.push(ms);
    }
    let stat = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[0], v[v.len() / 2])
    };
    let (open_best, open_median) = stat(&mut opens);
    let (blank_best, blank_median) = stat(&mut baseline);
    let (js_best, js_median) = stat(&mut scripts);
    println!(
        "report.html with {} predictions: {:.1} MB, written in {write_secs:.2} s",
        records.len(),
        bytes as f64 / 1e6
    );
    println!(
        "  headless chromium, start to dumped DOM: best {open_best:.2} s, median {open_median:.2} s ({} opens)",
        opens.len()
    );
    println!(
        "  the same on a blank page (chromium's own start): best {blank_best:.2} s, median {blank_median:.2} s"
    );
    println!("  page script (parse data, summary, first page): best {js_best:.0} ms, median {js_median:.0} ms");
    if args.output.is_some() {
        println!("  page kept at {}", page.display());
    }
    Ok(Ending::Clean)
}
