//! The run: a dispatcher and bounded workers, timeouts, retries, cancellation, resume. Not written yet.
