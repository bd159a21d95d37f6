//! Wire formats: report.json, the run summary, per-prediction JSONL and CSV. Not written yet.
