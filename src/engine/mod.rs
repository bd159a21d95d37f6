//! The container engine: the only code that talks to Docker (through bollard). Not written yet.
