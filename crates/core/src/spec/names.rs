//! The names every spec shares: the markers the eval script prints around the test command,
//! the default image namespace, the repository's folder and the environment's name.

/// The marker lines the eval script prints around the test command's output.
pub const START_TEST_OUTPUT: &str = ">>>>> Start Test Output";

/// Printed after the test command's output.
pub const END_TEST_OUTPUT: &str = ">>>>> End Test Output";

/// The Debian flavour (and SWE-bench 5) prints `>>>>> Test Exit Code: N` after the end marker.
pub const TEST_EXIT_CODE: &str = ">>>>> Test Exit Code";

/// The official registry namespace.
pub const DEFAULT_NAMESPACE: &str = "swebench";

/// Where the repository lives in every image.
pub const REPO_DIR: &str = "/testbed";

/// The conda environment name of the official flavour.
pub const ENV_NAME: &str = "testbed";
