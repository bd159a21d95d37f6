//! `bench grade`: how long parsing and grading saved test logs takes. Loads the dataset,
//! predictions and logs once (timed apart), then parses and grades every log a number of
//! times in memory; the passes are kept for the best and the median.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::{shared, BenchError};
use swe_eval_core::report::{grade_all, load_inputs, read_logs, SavedLog, SavedLogs};

/// What `bench grade` parses and grades, and how often.
#[derive(Debug, Clone)]
pub struct GradeOptions {
    /// Dataset rows (`None`: the shared partial Verified dataset).
    pub dataset: Option<PathBuf>,
    /// Predictions (`None`: the shared pydantic-deep run).
    pub predictions: Option<String>,
    /// Saved logs, as for `swe-eval grade` (`None`: that run's 399 official test outputs).
    pub logs: Option<PathBuf>,
    /// Timed passes over all logs (at least one is made).
    pub repeat: usize,
}

/// What `bench grade` measured.
#[derive(Debug, Clone)]
pub struct GradeFigures {
    /// Predictions read.
    pub predictions: usize,
    /// Logs parsed and graded in each pass.
    pub graded: usize,
    /// Bytes of those logs.
    pub log_bytes: usize,
    /// Loading the dataset, the predictions and the logs.
    pub load: Duration,
    /// Each pass, shortest first.
    pub passes: Vec<Duration>,
    /// What was wrong in the inputs (each left out).
    pub problems: Vec<String>,
}

impl GradeFigures {
    /// The shortest pass.
    pub fn best(&self) -> Duration {
        self.passes.first().copied().unwrap_or_default()
    }

    /// The median pass.
    pub fn median(&self) -> Duration {
        self.passes
            .get(self.passes.len() / 2)
            .copied()
            .unwrap_or_default()
    }
}

/// Loads the inputs once, then parses and grades every log `opts.repeat` times.
pub fn measure_grade(opts: &GradeOptions) -> Result<GradeFigures, BenchError> {
    let dataset = opts
        .dataset
        .clone()
        .unwrap_or_else(shared::partial_verified);
    let predictions = opts
        .predictions
        .clone()
        .unwrap_or_else(|| shared::minimax_predictions().display().to_string());
    let logs_path = opts.logs.clone().unwrap_or_else(shared::minimax_logs);

    let t = Instant::now();
    let mut problems = Vec::new();
    let (ds, preds) = load_inputs(
        swe_eval_core::dataset::load_dataset(&dataset)?,
        &predictions,
        &mut problems,
    )?;
    let logs = SavedLogs::open(&logs_path)?;
    let saved = read_logs(&preds, &predictions, &logs, None, &mut problems);
    let load = t.elapsed();
    let log_bytes: usize = saved
        .iter()
        .map(|s| match s {
            SavedLog::Output(o) => o.len(),
            _ => 0,
        })
        .sum();

    let mut passes: Vec<Duration> = Vec::new();
    let mut graded = 0;
    for _ in 0..opts.repeat.max(1) {
        let mut sink = Vec::new();
        let t = Instant::now();
        let verdicts = grade_all(&ds, &preds, &saved, &mut sink);
        passes.push(t.elapsed());
        graded = verdicts.iter().filter(|v| v.tests.is_some()).count();
    }
    passes.sort();
    Ok(GradeFigures {
        predictions: preds.len(),
        graded,
        log_bytes,
        load,
        passes,
        problems,
    })
}
