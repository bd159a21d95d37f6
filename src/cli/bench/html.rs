//! `swe-eval bench html`: a run's `report.html` written and opened in headless chromium
//! ([`crate::bench::measure_html`]); prints the times.

use std::path::PathBuf;

use crate::bench::{measure_html, HtmlOptions};
use crate::cli::{CliResult, Ending};

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

/// The shortest and the median of sorted, non-empty `v`.
fn best_median(v: &[f64]) -> (f64, f64) {
    (v[0], v[v.len() / 2])
}

/// Writes the page, opens it in headless chromium, and prints the times.
pub fn run(args: Args) -> CliResult {
    let f = measure_html(&HtmlOptions {
        count: args.count,
        output: args.output,
        chromium: args.chromium,
        repeat: args.repeat,
    })?;
    let (open_best, open_median) = best_median(&f.opens);
    let (blank_best, blank_median) = best_median(&f.blank);
    let (js_best, js_median) = best_median(&f.scripts);
    println!(
        "report.html with {} predictions: {:.1} MB, written in {:.2} s",
        f.records,
        f.bytes as f64 / 1e6,
        f.write_secs
    );
    println!(
        "  headless chromium, start to dumped DOM: best {open_best:.2} s, median {open_median:.2} s ({} opens)",
        f.opens.len()
    );
    println!(
        "  the same on a blank page (chromium's own start): best {blank_best:.2} s, median {blank_median:.2} s"
    );
    println!("  page script (parse data, summary, first page): best {js_best:.0} ms, median {js_median:.0} ms");
    if let Some(page) = &f.kept {
        println!("  page kept at {}", page.display());
    }
    Ok(Ending::Clean)
}
