//! The bundled mini benchmark, embedded in the binary. Not written yet.
