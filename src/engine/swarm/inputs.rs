//! Getting a job's files into a Swarm task. A service's container cannot be written to before
//! it starts (there is no copy-in for services), so each file travels one of two ways:
//!
//! - **inline**: base64 in an argument of the task's command, for files up to [`INLINE_MAX`]
//!   bytes while the inline total stays under [`INLINE_TOTAL_MAX`]. Linux refuses a single
//!   argument of 128 KiB or more (`MAX_ARG_STRLEN`; exec fails with E2BIG, the task exits 1),
//!   and Swarm refuses a service spec that does not fit one raft entry (about 1.5 MB here;
//!   "raft message is too large"), so both limits keep a margin. Costs no API call and leaves
//!   nothing on disk but the file itself: the bootstrap `exec`s the job, so its arguments
//!   (the driver and its nonce) vanish from `/proc/1/cmdline`.
//! - **configs**: larger files are cut into Swarm configs of [`CONFIG_CHUNK`] bytes (the
//!   documented limit is 500 KB; the Docker 20.10 here accepts up to 1,023,999 bytes and
//!   refuses empty ones), mounted read-only under [`CONFIG_DIR`] and joined by the bootstrap.
//!   They cost one API call each way per chunk and stay readable in the task.
//!
//! The bootstrap is a fixed bash script (no job data in it): it writes each file with its
//! mode, then `exec`s the job's own command. If it cannot, it prints [`BOOTSTRAP_FAILED`] and
//! exits [`BOOTSTRAP_EXIT`], which the engine reports as a copy failure (infrastructure).

use super::super::FileIn;

/// Largest file sent inline: its base64 (128,000 bytes) stays under the kernel's 131,072-byte
/// limit on one argument.
pub const INLINE_MAX: usize = 96_000;
/// Largest total of inline files (raw bytes; 1 MiB as base64), far under `ARG_MAX` (2 MiB with
/// the default stack limit) and Swarm's raft entry limit.
pub const INLINE_TOTAL_MAX: usize = 768 * 1024;
/// Bytes per config: the documented Swarm limit (500 KB), below what this Docker accepts.
pub const CONFIG_CHUNK: usize = 500 * 1024;
/// Where config chunks are mounted in the task.
pub const CONFIG_DIR: &str = "/swe-eval-in";
/// First words the bootstrap prints when it cannot write a file.
pub const BOOTSTRAP_FAILED: &str = "swe-eval bootstrap failed:";
/// Its exit status then.
pub const BOOTSTRAP_EXIT: i64 = 125;

/// Writes the files described by its arguments (groups of four: path, octal mode, `b64` or
/// `cat`, data: base64 text, or the config chunk paths to join), then runs what follows `--`.
const BOOTSTRAP: &str = r#"fail() { echo "swe-eval bootstrap failed: $*"; exit 125; }
while [ "$#" -gt 0 ] && [ "$1" != -- ]; do
  [ "$#" -ge 4 ] || fail "bad arguments"
  p=$1; m=$2; k=$3; d=$4; shift 4
  dir=${p%/*}
  [ -z "$dir" ] || mkdir -p -- "$dir" || fail "mkdir $dir"
  case $k in
    b64) printf '%s' "$d" | base64 -d > "$p" || fail "write $p" ;;
    cat) cat $d > "$p" || fail "write $p" ;;
    *) fail "unknown kind $k" ;;
  esac
  chmod "$m" "$p" || fail "chmod $p"
done
[ "$1" = -- ] || fail "no command"
shift
exec "$@"
"#;

/// One config to create: its name, where it is mounted, its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigChunk {
    /// The config's name.
    pub name: String,
    /// The path it is mounted at in the task's container.
    pub target: String,
    /// Its bytes.
    pub data: Vec<u8>,
}

/// How a job's files reach its task: the full command, and the configs it mounts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inputs {
    /// The task's main process, which puts the files in place before the job's command.
    pub command: Vec<String>,
    /// The configs the service mounts.
    pub configs: Vec<ConfigChunk>,
}

/// Plans the transport of `files` for a job whose main process is `command`. Config names
/// start with `prefix` (unique per job). Smaller files go inline first, so the driver (a few
/// KB, and the only file holding a secret) is always inline.
pub fn plan(files: &[FileIn], command: &[String], prefix: &str) -> Inputs {
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by_key(|&i| files[i].contents.len());
    let mut inline_total = 0usize;
    let mut records: Vec<(usize, [String; 4])> = Vec::new();
    let mut configs = Vec::new();
    for i in order {
        let f = &files[i];
        let n = f.contents.len();
        let mode = format!("{:o}", f.mode);
        // An empty file cannot be a config (Swarm refuses empty data): always inline.
        if n == 0 || (n <= INLINE_MAX && inline_total + n <= INLINE_TOTAL_MAX) {
            inline_total += n;
            records.push((i, [f.path.clone(), mode, "b64".into(), base64(&f.contents)]));
            continue;
        }
        let mut parts = Vec::new();
        for (k, chunk) in f.contents.chunks(CONFIG_CHUNK).enumerate() {
            let target = format!("{CONFIG_DIR}/{i}.{k:04}");
            configs.push(ConfigChunk {
                name: format!("{prefix}.{i}.{k}"),
                target: target.clone(),
                data: chunk.to_vec(),
            });
            parts.push(target);
        }
        records.push((i, [f.path.clone(), mode, "cat".into(), parts.join(" ")]));
    }
    // Files are written in the job's order (a later file may rely on an earlier directory).
    records.sort_by_key(|(i, _)| *i);
    let mut cmd = vec![
        "/bin/bash".to_string(),
        "-c".into(),
        BOOTSTRAP.into(),
        "swe-eval-bootstrap".into(),
    ];
    for (_, r) in records {
        cmd.extend(r);
    }
    cmd.push("--".into());
    cmd.extend(command.iter().cloned());
    Inputs {
        command: cmd,
        configs,
    }
}

/// Standard base64 with padding.
pub fn base64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= c.len() {
                out.push(T[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn file(path: &str, len: usize, mode: u32) -> FileIn {
        FileIn {
            path: path.into(),
            contents: (0..len).map(|i| (i * 7 % 256) as u8).collect(),
            mode,
        }
    }

    #[test]
    fn base64_matches_the_rfc_vectors() {
        for (raw, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(raw.as_bytes()), enc);
        }
        assert_eq!(base64(&[0xff, 0xfe, 0x00]), "//4A");
    }

    #[test]
    fn the_inline_limit_keeps_one_argument_under_the_kernel_limit() {
        assert!(base64(&vec![0u8; INLINE_MAX]).len() < 131_072);
        assert!(base64(&vec![0u8; INLINE_TOTAL_MAX]).len() <= 1 << 20);
    }

    #[test]
    fn small_files_go_inline_and_the_command_follows_the_separator() {
        let files = [
            file("/swe-eval/job.sh", 3000, 0o755),
            file("/swe-eval/patch.diff", 0, 0o644),
        ];
        let cmd = vec!["/bin/bash".to_string(), "/swe-eval/job.sh".into()];
        let p = plan(&files, &cmd, "cfg");
        assert!(p.configs.is_empty());
        let args = &p.command[4..];
        assert_eq!(args[0], "/swe-eval/job.sh");
        assert_eq!(args[1], "755");
        assert_eq!(args[2], "b64");
        assert_eq!(args[3], base64(&files[0].contents));
        assert_eq!(&args[4..8], ["/swe-eval/patch.diff", "644", "b64", ""]);
        assert_eq!(&args[8..], ["--", "/bin/bash", "/swe-eval/job.sh"]);
    }

    #[test]
    fn a_file_over_the_inline_limit_is_cut_into_config_chunks() {
        let big = CONFIG_CHUNK * 2 + 1;
        let files = [
            file("/a", INLINE_MAX, 0o644),
            file("/b", INLINE_MAX + 1, 0o600),
            file("/c", big, 0o644),
        ];
        let p = plan(&files, &["true".to_string()], "job7");
        // /a inline at the limit; /b one chunk; /c three chunks, the last of one byte.
        let sizes: Vec<usize> = p.configs.iter().map(|c| c.data.len()).collect();
        assert_eq!(sizes, [INLINE_MAX + 1, CONFIG_CHUNK, CONFIG_CHUNK, 1]);
        assert!(p
            .configs
            .iter()
            .all(|c| !c.data.is_empty() && c.data.len() <= CONFIG_CHUNK));
        let joined: Vec<u8> = p.configs[1..].iter().flat_map(|c| c.data.clone()).collect();
        assert_eq!(joined, files[2].contents);
        assert_eq!(p.configs[0].name, "job7.1.0");
        let args = &p.command[4..];
        assert_eq!(&args[4..8], ["/b", "600", "cat", "/swe-eval-in/1.0000"]);
        assert_eq!(args[10], "cat");
        assert_eq!(
            args[11],
            "/swe-eval-in/2.0000 /swe-eval-in/2.0001 /swe-eval-in/2.0002"
        );
    }

    #[test]
    fn the_inline_total_is_bounded_and_the_smallest_files_stay_inline() {
        let files: Vec<FileIn> = (0..10)
            .map(|i| file(&format!("/f{i}"), INLINE_MAX - i, 0o644))
            .collect();
        let p = plan(&files, &["true".to_string()], "x");
        let inline: usize = p.command.windows(2).filter(|w| w[0] == "b64").count();
        assert_eq!(inline, INLINE_TOTAL_MAX / INLINE_MAX);
        // The largest ones went to configs.
        assert!(p
            .configs
            .iter()
            .all(|c| c.name.starts_with("x.0.") || c.name.starts_with("x.1.")));
    }

    /// The bootstrap run by a real bash (with coreutils) writes every file byte for byte with
    /// its mode, then execs the command with its arguments.
    #[test]
    fn the_bootstrap_writes_the_files_and_execs_the_command() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().display().to_string();
        let chunks = tempfile::tempdir().unwrap();
        let all: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
        let files = [
            FileIn {
                path: format!("{root}/x/job.sh"),
                contents: b"echo \"job $1\"\n".to_vec(),
                mode: 0o755,
            },
            FileIn {
                path: format!("{root}/bin.dat"),
                contents: all.clone(),
                mode: 0o600,
            },
            FileIn {
                path: format!("{root}/empty"),
                contents: Vec::new(),
                mode: 0o644,
            },
        ];
        let cmd = vec![
            "/bin/bash".to_string(),
            format!("{root}/x/job.sh"),
            "it ran".into(),
        ];
        let mut p = plan(&files, &cmd, "t");
        // Pretend bin.dat went through configs: two chunks mounted in `chunks`.
        let at = p
            .command
            .iter()
            .position(|a| a == &format!("{root}/bin.dat"))
            .unwrap();
        let (a, b) = all.split_at(1234);
        std::fs::write(chunks.path().join("p0"), a).unwrap();
        std::fs::write(chunks.path().join("p1"), b).unwrap();
        p.command[at + 2] = "cat".into();
        p.command[at + 3] = format!("{0}/p0 {0}/p1", chunks.path().display());
        let out = Command::new(&p.command[0])
            .args(&p.command[1..])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "job it ran\n",
            "{out:?}"
        );
        assert_eq!(std::fs::read(format!("{root}/bin.dat")).unwrap(), all);
        assert_eq!(std::fs::read(format!("{root}/empty")).unwrap(), b"");
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &str| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&format!("{root}/x/job.sh")), 0o755);
        assert_eq!(mode(&format!("{root}/bin.dat")), 0o600);
    }

    #[test]
    fn a_bootstrap_that_cannot_write_says_so_and_exits_125() {
        let files = [file("/proc/swe-eval-cannot/x", 10, 0o644)];
        let p = plan(&files, &["true".to_string()], "t");
        let out = Command::new(&p.command[0])
            .args(&p.command[1..])
            .output()
            .unwrap();
        assert_eq!(i64::from(out.status.code().unwrap()), BOOTSTRAP_EXIT);
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with(BOOTSTRAP_FAILED),
            "{out:?}"
        );
    }
}
