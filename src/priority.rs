//! A process's CPU priority (`serve --nice`): its nice value, and where the kernel groups CPU
//! time by session (autogroup, `/proc/sys/kernel/sched_autogroup_enabled`), its session's
//! group as well. Under autogroup a thread's nice weighs it only against the threads of its own
//! session; what it gets against another session (the Docker daemon's, the jobs' containers) is
//! its session group's weight, which `/proc/self/autogroup` sets. So both are set: the nice
//! for machines without autogroup (and for the threads of the session), the group's for those
//! with it. The group is the whole session's: a server meant to stand apart is started in a
//! session of its own (`setsid`).

/// What was set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Applied {
    /// The nice value, -20 (first) to 19 (last).
    pub nice: i32,
    /// Whether the session's autogroup was given it too.
    pub autogroup: bool,
}

impl std::fmt::Display for Applied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "nice {}", self.nice)?;
        if self.autogroup {
            write!(f, ", and this session's CPU group (autogroup)")?;
        }
        Ok(())
    }
}

/// The nice values there are.
pub const NICE: std::ops::RangeInclusive<i32> = -20..=19;

/// Why the priority could not be set.
#[derive(Debug, thiserror::Error)]
pub enum NiceError {
    /// Not a nice value at all.
    #[error("a nice value is -20 to 19, not {0}")]
    OutOfRange(i32),
    /// The kernel refused the nice value.
    #[error(
        "cannot set the nice value to {nice}: {source} (a value below the present one needs root \
         or CAP_SYS_NICE)"
    )]
    Nice {
        /// The value asked for.
        nice: i32,
        /// The kernel's answer.
        #[source]
        source: rustix::io::Errno,
    },
    /// The session's group could not be given it.
    #[error("cannot set this session's CPU group (/proc/self/autogroup) to nice {nice}: {source}")]
    Autogroup {
        /// The value asked for.
        nice: i32,
        /// Why the write failed.
        #[source]
        source: std::io::Error,
    },
}

/// Sets this process's nice to `nice`, and its session's autogroup's where the kernel has
/// autogroup on. Call it before the process starts threads: a thread takes the nice of the
/// thread that made it. A value below the present one needs root (CAP_SYS_NICE).
pub fn set_nice(nice: i32) -> Result<Applied, NiceError> {
    if !NICE.contains(&nice) {
        return Err(NiceError::OutOfRange(nice));
    }
    // setpriority(PRIO_PROCESS, 0): on Linux, the calling thread's.
    rustix::process::setpriority_process(None, nice)
        .map_err(|source| NiceError::Nice { nice, source })?;
    let autogroup = autogroup_on(std::path::Path::new(
        "/proc/sys/kernel/sched_autogroup_enabled",
    ));
    if autogroup {
        std::fs::write("/proc/self/autogroup", nice.to_string())
            .map_err(|source| NiceError::Autogroup { nice, source })?;
    }
    Ok(Applied { nice, autogroup })
}

/// Whether the kernel groups CPU time by session: the sysctl file `path` says 1.
fn autogroup_on(path: &std::path::Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|s| s.trim() == "1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn autogroup_is_on_only_where_the_sysctl_says_1() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("sched_autogroup_enabled");
        assert!(!autogroup_on(&f), "no file: no autogroup");
        std::fs::write(&f, "1\n").unwrap();
        assert!(autogroup_on(&f));
        std::fs::write(&f, "0\n").unwrap();
        assert!(!autogroup_on(&f));
    }

    #[test]
    fn what_was_set_is_said_with_the_group_only_when_it_was_set() {
        let set = |autogroup| {
            Applied {
                nice: -10,
                autogroup,
            }
            .to_string()
        };
        assert_eq!(set(false), "nice -10");
        assert_eq!(
            set(true),
            "nice -10, and this session's CPU group (autogroup)"
        );
    }

    #[test]
    fn a_nice_value_out_of_range_is_refused_before_anything_is_set() {
        for n in [-21, 20] {
            let e = set_nice(n).unwrap_err();
            assert!(matches!(e, NiceError::OutOfRange(m) if m == n), "{e:?}");
            assert_eq!(e.to_string(), format!("a nice value is -20 to 19, not {n}"));
        }
    }
}
