//! Progress display (indicatif), fed by runner events. Not written yet.
