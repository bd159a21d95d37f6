//! Who owns a container, an image hold or a run lock: this process's identity
//! (`host:pid:start-time`) and whether the process an identity names is gone.
//!
//! It imports nothing else of the crate, so every layer that labels or reaps (images, runner)
//! can use it without importing the others.

/// Label value identifying this process: `host:pid:start-time`. A container whose owner is on
/// this host and no longer alive (same pid and start time) is a leftover of a dead run.
pub fn owner_id() -> String {
    let pid = std::process::id();
    format!(
        "{}:{pid}:{}",
        hostname(),
        start_time(pid).unwrap_or_default()
    )
}

/// True when `owner` (from [`owner_id`]) names a process on this host that is gone.
pub fn owner_is_dead(owner: &str) -> bool {
    let mut parts = owner.rsplitn(3, ':');
    let (Some(start), Some(pid), Some(host)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    if host != hostname() {
        return false;
    }
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    start_time(pid).is_none_or(|s| s != start)
}

/// This host's name, as the kernel reports it.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown-host".into())
}

/// The process start time (field 22 of `/proc/<pid>/stat`), which tells a reused pid apart.
pub fn start_time(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces; it ends at the last ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_made_up_one_is_dead() {
        let me = owner_id();
        assert!(!owner_is_dead(&me), "{me}");
        let host = hostname();
        assert!(
            owner_is_dead(&format!("{host}:{}:1", std::process::id())),
            "start time differs"
        );
        assert!(
            !owner_is_dead("another-host:1:1"),
            "other hosts are never judged"
        );
        assert!(!owner_is_dead("garbage"));
    }
}
