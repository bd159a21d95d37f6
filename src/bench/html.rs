//! `bench html`: how long a run's `report.html` takes to write and to open in headless
//! chromium at a given number of predictions. The records are real: the shared MiniMax run
//! graded from its saved logs (patches, log tails, failing tests), repeated as further samples
//! until there are as many as asked for. Opening is timed twice: the chromium process from
//! start to the dumped DOM (`--dump-dom`, which waits for the load and the page script), and the
//! page script alone (it records its own time in `data-render-ms`); a blank page opened between
//! each gives chromium's own start.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use super::{shared, BenchError};
use swe_eval_core::grading::Mode;
use swe_eval_core::report::{grade_all, load_inputs, read_logs, SavedLogs};

/// What `bench html` writes and opens.
#[derive(Debug, Clone)]
pub struct HtmlOptions {
    /// Predictions (rows) in the page.
    pub count: usize,
    /// Folder for the page (`None`: a temporary folder, removed after).
    pub output: Option<PathBuf>,
    /// The browser.
    pub chromium: PathBuf,
    /// Times the page is opened (at least once).
    pub repeat: usize,
}

/// What `bench html` measured; each list of times is sorted, shortest first.
#[derive(Debug, Clone)]
pub struct HtmlFigures {
    /// Rows in the page.
    pub records: usize,
    /// Its size.
    pub bytes: u64,
    /// Seconds to write it.
    pub write_secs: f64,
    /// Seconds from chromium's start to the page's dumped DOM, per open.
    pub opens: Vec<f64>,
    /// The same for a blank page: chromium's own start.
    pub blank: Vec<f64>,
    /// Milliseconds the page's script took (its own `data-render-ms`), per open.
    pub scripts: Vec<f64>,
    /// Where the page was kept (`None`: it was removed with its temporary folder).
    pub kept: Option<PathBuf>,
}

/// Writes the page and opens it in headless chromium `opts.repeat` times.
pub fn measure_html(opts: &HtmlOptions) -> Result<HtmlFigures, BenchError> {
    let mut problems = Vec::new();
    let predictions = shared::minimax_predictions().display().to_string();
    let (ds, preds) = load_inputs(
        swe_eval_core::dataset::load_dataset(&shared::partial_verified())?,
        &predictions,
        &mut problems,
    )?;
    let logs = SavedLogs::open(&shared::minimax_logs())?;
    let saved = read_logs(&preds, &predictions, &logs, None, &mut problems);
    let verdicts = grade_all(&ds, &preds, &saved, &mut problems);
    let base =
        swe_eval_core::report::records_for_grading(&ds, &preds, &verdicts, &saved, Mode::Official);
    if base.is_empty() {
        return Err(BenchError::NoRecords { predictions });
    }
    let mut records = Vec::with_capacity(opts.count);
    for i in 0..opts.count {
        let mut r = base[i % base.len()].clone();
        r.sample = (i / base.len()) as u32;
        records.push(r);
    }

    let tmp = tempfile::tempdir()?;
    let dir = opts
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

    let blank_page = tmp.path().join("blank.html");
    std::fs::write(
        &blank_page,
        "<!DOCTYPE html><title>blank</title><body data-render-ms=\"0\"><span id=\"shown\">0</span>",
    )?;
    let mut blank = Vec::new();
    let mut opens = Vec::new();
    let mut scripts = Vec::new();
    for k in 0..2 * opts.repeat.max(1) {
        let target = if k % 2 == 0 { &blank_page } else { &page };
        let profile = tmp.path().join(format!("profile{k}"));
        let t = Instant::now();
        let out = Command::new(&opts.chromium)
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
            .map_err(|source| BenchError::Browser {
                path: opts.chromium.clone(),
                source,
            })?;
        if k % 2 == 0 {
            blank.push(t.elapsed().as_secs_f64());
            continue;
        }
        opens.push(t.elapsed().as_secs_f64());
        let dom = String::from_utf8_lossy(&out.stdout);
        let ms = dom
            .split("data-render-ms=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .and_then(|s| s.parse::<f64>().ok())
            .ok_or(BenchError::NotRendered)?;
        let shown = dom
            .split("<span id=\"shown\">")
            .nth(1)
            .and_then(|s| s.split('<').next())
            .unwrap_or("?");
        if shown != records.len().to_string() {
            return Err(BenchError::Rows {
                shown: shown.to_string(),
                records: records.len(),
            });
        }
        scripts.push(ms);
    }
    for v in [&mut opens, &mut blank, &mut scripts] {
        v.sort_by(f64::total_cmp);
    }
    Ok(HtmlFigures {
        records: records.len(),
        bytes,
        write_secs,
        opens,
        blank,
        scripts,
        kept: opts.output.is_some().then_some(page),
    })
}
