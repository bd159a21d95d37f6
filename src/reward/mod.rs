//! The SWE-RL similarity reward: difflib port, unified-diff parsing, both reward variants. Not written yet.
