//! The shared data the benchmarks read by default: `SWE_EVAL_SHARED` (as the tests), else
//! `../shared` beside the repository.

use std::path::PathBuf;

/// The shared data's folder.
fn shared() -> PathBuf {
    std::env::var_os("SWE_EVAL_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"))
}

/// The partial SWE-bench Verified dataset.
pub(super) fn partial_verified() -> PathBuf {
    shared().join("datasets/partial-verified/swebench_verified_partial.jsonl")
}

/// The pydantic-deep (MiniMax M2.5) run: its 486 predictions.
pub(super) fn minimax_predictions() -> PathBuf {
    minimax_run().join("all_preds.jsonl")
}

/// The same run's 399 official test outputs.
pub(super) fn minimax_logs() -> PathBuf {
    minimax_run().join("instance_test_outputs.jsonl")
}

fn minimax_run() -> PathBuf {
    shared().join("datasets/predictions/pydantic-deep_minimax-m2.5")
}
