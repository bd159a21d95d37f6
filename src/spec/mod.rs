//! Per-repository, per-version specifications as data, test directives, and eval scripts. Not written yet.
