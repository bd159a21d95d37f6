//! A CPU weight for the harness's containers (`--cpu-weight`): every container the engine
//! creates goes under one cgroup of the harness's own, [`PARENT`], whose weight this module
//! writes on this machine, so that the jobs' tests and builds take the CPU only after the
//! machine's other work at a lower weight (a `serve` answering requests, a benchmark beside
//! them), or before it at a higher one.
//!
//! A container's own CPU shares would not do it: they weigh it against its siblings only (the
//! other containers under the daemon's parent cgroup), never against processes outside it. The
//! parent's weight is what the kernel sets against the rest of the machine.
//!
//! Docker makes the container's cgroup under the parent it is given (`HostConfig.CgroupParent`)
//! when the daemon manages cgroups itself (its `cgroupfs` driver); the parent is made and
//! weighed here beforehand, which needs the daemon on this machine and the right to write its
//! cgroup file system (root). On cgroup v1 the weight is the `cpu` hierarchy's `cpu.shares`, on
//! v2 the unified hierarchy's `cpu.weight`.

use std::path::{Path, PathBuf};

/// The cgroup every container goes under, at the root of each hierarchy.
pub const PARENT: &str = "swe-eval";

/// The weights `--cpu-weight` takes: cgroup v2's scale, where 100 is a process's default.
pub const WEIGHTS: std::ops::RangeInclusive<u32> = 1..=10_000;

/// Which cgroup layout the daemon's machine has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One hierarchy per controller: the weight is `<root>/cpu/<parent>/cpu.shares`.
    V1,
    /// The unified hierarchy: the weight is `<root>/<parent>/cpu.weight`.
    V2,
}

/// cgroup v1's `cpu.shares` for a v2 weight: 100 is 1,024 (a process's default on both), in
/// proportion, within v1's bounds (2 to 262,144).
pub fn shares(weight: u32) -> u64 {
    (u64::from(weight) * 1024 / 100).clamp(2, 262_144)
}

/// Why the harness's cgroup could not be made or weighed.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    /// A weight outside the range cgroup v2 accepts (1 to 10000).
    #[error("a CPU weight is {} to {}, not {weight}", WEIGHTS.start(), WEIGHTS.end())]
    Range {
        /// The weight asked for.
        weight: u32,
    },
    /// A file of the cgroup file system could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A file of the cgroup file system could not be written.
    #[error("cannot write {value} to {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// What was written.
        value: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The hierarchy the cgroup belongs in is not there.
    #[error("no cgroup hierarchy at {}", path.display())]
    NoHierarchy {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// The cgroup's folder could not be made.
    #[error("cannot make {}: {source}", path.display())]
    Make {
        /// The folder.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The weight written is not what the file holds afterwards.
    #[error("{} holds {held} after {value} was written", path.display())]
    NotTaken {
        /// The file.
        path: PathBuf,
        /// What was written.
        value: String,
        /// What it holds.
        held: String,
    },
}

/// Makes the parent cgroup under `root` (`/sys/fs/cgroup` on a real machine) and writes its
/// weight. Returns the file written. On v2 the CPU controller is first enabled for the root's
/// children when it is not (the parent's `cpu.weight` exists only then).
pub fn prepare(root: &Path, layout: Layout, weight: u32) -> Result<PathBuf, CgroupError> {
    if !WEIGHTS.contains(&weight) {
        return Err(CgroupError::Range { weight });
    }
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|source| CgroupError::Read {
            path: path.to_path_buf(),
            source,
        })
    };
    let write = |path: &Path, value: &str| {
        std::fs::write(path, value).map_err(|source| CgroupError::Write {
            path: path.to_path_buf(),
            value: value.to_string(),
            source,
        })
    };
    let (dir, file, value) = match layout {
        Layout::V1 => (
            root.join("cpu").join(PARENT),
            "cpu.shares",
            shares(weight).to_string(),
        ),
        Layout::V2 => {
            let control = root.join("cgroup.subtree_control");
            let enabled = read(&control)?;
            if !enabled.split_whitespace().any(|c| c == "cpu") {
                write(&control, "+cpu")?;
            }
            (root.join(PARENT), "cpu.weight", weight.to_string())
        }
    };
    // The hierarchy must be there: a missing one is not made (under a tmpfs it would be a
    // plain folder, weighing nothing).
    let hierarchy = dir.parent().unwrap_or(root);
    if !hierarchy.is_dir() {
        return Err(CgroupError::NoHierarchy {
            path: hierarchy.to_path_buf(),
        });
    }
    match std::fs::create_dir(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(source) => return Err(CgroupError::Make { path: dir, source }),
    }
    let path = dir.join(file);
    write(&path, &value)?;
    let held = read(&path)?.trim().to_string();
    if held != value {
        return Err(CgroupError::NotTaken { path, value, held });
    }
    Ok(path)
}

/// Whether `endpoint` (`DOCKER_HOST`'s form) is a daemon on this machine: a Unix socket. The
/// parent's weight is written here, so a daemon elsewhere would not see it.
pub fn is_local(endpoint: &str) -> bool {
    endpoint.starts_with("unix://") || endpoint.starts_with('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_weight_is_the_default_shares_and_the_ends_stay_in_v1s_bounds() {
        assert_eq!(shares(100), 1024);
        assert_eq!(shares(1), 10);
        assert_eq!(shares(50), 512);
        assert_eq!(shares(10_000), 102_400);
    }

    #[test]
    fn v1_writes_the_cpu_hierarchys_shares() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("cpu")).unwrap();
        let path = prepare(root.path(), Layout::V1, 1).unwrap();
        assert_eq!(path, root.path().join("cpu/swe-eval/cpu.shares"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "10");
        // Again: the cgroup is there already, its weight is written over.
        prepare(root.path(), Layout::V1, 200).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "2048");
    }

    #[test]
    fn v2_enables_the_cpu_controller_once_and_writes_the_weight() {
        let root = tempfile::tempdir().unwrap();
        let control = root.path().join("cgroup.subtree_control");
        std::fs::write(&control, "memory pids\n").unwrap();
        let path = prepare(root.path(), Layout::V2, 5).unwrap();
        assert_eq!(path, root.path().join("swe-eval/cpu.weight"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "5");
        // A plain file stands for the kernel's: what was written is what a write asks for.
        assert_eq!(std::fs::read_to_string(&control).unwrap(), "+cpu");
        std::fs::write(&control, "cpu memory").unwrap();
        prepare(root.path(), Layout::V2, 7).unwrap();
        assert_eq!(std::fs::read_to_string(&control).unwrap(), "cpu memory");
    }

    #[test]
    fn a_weight_out_of_range_or_an_unwritable_hierarchy_is_an_error_naming_it() {
        let root = tempfile::tempdir().unwrap();
        assert!(prepare(root.path(), Layout::V1, 0)
            .unwrap_err()
            .to_string()
            .contains("1 to 10000"));
        assert!(prepare(root.path(), Layout::V2, 10_001).is_err());
        // No cgroup.subtree_control: not a v2 hierarchy.
        let e = prepare(root.path(), Layout::V2, 10)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cannot read") && e.contains("cgroup.subtree_control"),
            "{e}"
        );
        // No `cpu` hierarchy under a v1 root: nothing is made.
        let e = prepare(root.path(), Layout::V1, 10)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no cgroup hierarchy"), "{e}");
        assert!(!root.path().join("cpu").exists());
    }

    #[test]
    fn only_a_unix_socket_is_this_machines_daemon() {
        assert!(is_local("unix:///var/run/docker.sock"));
        assert!(!is_local("tcp://10.0.0.2:2375"));
        assert!(!is_local("ssh://user@host"));
    }
}
