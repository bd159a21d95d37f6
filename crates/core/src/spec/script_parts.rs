//! What the scripts of both flavours share: the rendering context of an instance ([`Ctx`]:
//! its row, spec, test patch and test command), script text and shell quoting, the
//! repository's requirements as the official harness assembles them (at render time from
//! repository files, or at build time in bash when none were given), and the commands that
//! prune later history and make the setup commit.

use super::table::{table, RepoSpec};
use super::{RepoFiles, ENV_NAME};
use crate::dataset::Instance;

/// Heredoc delimiters of the official scripts.
const EVAL_HEREDOC: &str = "EOF_114329324912";

pub(super) const ENV_HEREDOC: &str = "EOF_59812759871";

/// What every renderer reads.
pub(super) struct Ctx<'a> {
    pub(super) inst: &'a Instance,
    pub(super) spec: &'a RepoSpec,
    pub(super) test_patch: &'a str,
    pub(super) test_files: &'a [String],
    pub(super) test_cmd: &'a str,
}

impl Ctx<'_> {
    pub(super) fn base(&self) -> &str {
        &self.inst.base_commit
    }

    pub(super) fn spec_version(&self) -> &str {
        self.inst.version.as_deref().unwrap_or("")
    }

    /// The commit requirements files are read at: the environment-setup commit, else the base.
    pub(super) fn env_commit(&self) -> &str {
        self.inst
            .environment_setup_commit
            .as_deref()
            .filter(|c| !c.is_empty())
            .unwrap_or(&self.inst.base_commit)
    }

    pub(super) fn reset_tests(&self) -> String {
        format!("git checkout {} {}", self.base(), self.test_files.join(" "))
    }

    pub(super) fn apply_test_patch(&self) -> String {
        format!(
            "git apply -v - <<'{EVAL_HEREDOC}'\n{}\n{EVAL_HEREDOC}",
            self.test_patch
        )
    }

    /// The repository's requirements as the official harness assembles them, when a source of
    /// repository files is at hand.
    pub(super) fn requirements(&self, files: Option<&dyn RepoFiles>) -> Option<String> {
        let files = files?;
        let commit = self.env_commit();
        let read = |path: &str| files.read(commit, path);
        table()
            .requirements_paths(&self.inst.repo)
            .iter()
            .find_map(|path| Some(assemble_requirements(&read(path)?, path, &read)))
    }

    /// The repository's `environment.yml`, renamed to the `testbed` environment.
    pub(super) fn environment_yml(&self, files: Option<&dyn RepoFiles>) -> Option<String> {
        let files = files?;
        table()
            .environment_yml_paths(&self.inst.repo)
            .iter()
            .find_map(|path| {
                let text = files.read(self.env_commit(), path)?;
                let renamed: Vec<String> = text
                    .split('\n')
                    .map(|l| {
                        if l.starts_with("name:") {
                            format!("name: {ENV_NAME}")
                        } else {
                            replace_yanked_yml_line(l)
                        }
                    })
                    .collect();
                Some(renamed.join("\n"))
            })
    }

    /// The install command as the spec gives it (`None` when the spec has none).
    pub(super) fn install(&self) -> Option<&str> {
        self.spec.install.as_deref()
    }
}

/// `#!/bin/bash`, the `set` line, then one command per line.
pub(super) fn script_text(set_line: &str, commands: &[String]) -> String {
    let mut s = format!("#!/bin/bash\n{set_line}\n");
    for c in commands {
        s.push_str(c);
        s.push('\n');
    }
    s
}

pub(super) fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A `requirements.txt` with its `-r` includes inlined first, editable/comment/`.[test` lines
/// dropped and yanked packages replaced, as `get_requirements` does.
fn assemble_requirements(text: &str, path: &str, read: &dyn Fn(&str) -> Option<String>) -> String {
    let excluded = |l: &str| {
        let t = l.trim();
        ["-e .", "#", ".[test"].iter().any(|p| t.starts_with(p))
    };
    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
    let mut additional: Vec<String> = Vec::new();
    let mut original: Vec<&str> = Vec::new();
    for line in text.split('\n') {
        if line.trim().starts_with("-r") {
            // The official harness slices the raw line after two characters.
            let name = line.get(2..).unwrap_or("").trim();
            let sub = if dir.is_empty() {
                name.to_string()
            } else {
                format!("{dir}/{name}")
            };
            if let Some(t) = read(&sub) {
                additional.extend(t.split('\n').filter(|l| !excluded(l)).map(str::to_string));
            }
        } else if !excluded(line) {
            original.push(line);
        }
    }
    additional.push(original.join("\n"));
    additional
        .join("\n")
        .split('\n')
        .map(replace_yanked_requirement)
        .collect::<Vec<_>>()
        .join("\n")
}

/// `types-pkg_resources` was yanked from PyPI; the official harness installs
/// `types-setuptools` instead (dropping the version).
const YANKED: &str = "types-pkg_resources";

const YANKED_REPLACEMENT: &str = "types-setuptools";

fn is_yanked_spec(rest: &str) -> bool {
    rest.is_empty() || rest.starts_with(['<', '>', '=', '!', '~'])
}

fn replace_yanked_requirement(line: &str) -> String {
    match line.strip_prefix(YANKED) {
        Some(rest) if is_yanked_spec(rest) => YANKED_REPLACEMENT.to_string(),
        _ => line.to_string(),
    }
}

/// In an `environment.yml` pip list, `- types-pkg_resources...` keeps its indentation.
fn replace_yanked_yml_line(line: &str) -> String {
    let trimmed = line.trim_start();
    if let Some(after_dash) = trimmed.strip_prefix('-') {
        let item = after_dash.trim_start();
        if let Some(rest) = item.strip_prefix(YANKED) {
            if is_yanked_spec(rest) {
                let prefix_len = line.len() - item.len();
                return format!("{}{YANKED_REPLACEMENT}", &line[..prefix_len]);
            }
        }
    }
    line.to_string()
}

/// Bash that assembles the requirements file at build time, as `get_requirements` does, for
/// when no repository files were given: `get` prints a repository file (from GitHub, or from
/// the checkout).
pub(super) fn requirements_fetch_script(paths: &[String], get: &str, dest: &str) -> String {
    let paths = paths
        .iter()
        .map(|p| shell_quote(p))
        .collect::<Vec<_>>()
        .join(" ");
    format!(
        r#"swe_get() {{ {get}; }}
swe_keep() {{ grep -v -E '^[[:space:]]*(-e \.|#|\.\[test)' || true; }}
SWE_REQ=""; for p in {paths}; do if swe_get "$p" > /tmp/swe_req_top.txt 2>/dev/null; then SWE_REQ="$p"; break; fi; done
test -n "$SWE_REQ"
SWE_REQ_DIR=$(dirname "$SWE_REQ"); : > /tmp/swe_req_extra.txt; : > /tmp/swe_req_main.txt
while IFS= read -r line || [ -n "$line" ]; do t="${{line#"${{line%%[![:space:]]*}}"}}"; case "$t" in -r*) f="${{line:2}}"; f="${{f#"${{f%%[![:space:]]*}}"}}"; f="${{f%"${{f##*[![:space:]]}}"}}"; swe_get "$SWE_REQ_DIR/$f" 2>/dev/null | swe_keep >> /tmp/swe_req_extra.txt;; *) printf '%s\n' "$line" | swe_keep >> /tmp/swe_req_main.txt;; esac; done < /tmp/swe_req_top.txt
cat /tmp/swe_req_extra.txt /tmp/swe_req_main.txt | sed -E 's/^types-pkg_resources([<>=!~]=?.*)?$/types-setuptools/' > {dest}"#
    )
}

/// Bash that writes the repository's `environment.yml` (renamed to `testbed`) to `dest`.
pub(super) fn environment_yml_fetch_script(paths: &[String], get: &str, dest: &str) -> String {
    let paths = paths
        .iter()
        .map(|p| shell_quote(p))
        .collect::<Vec<_>>()
        .join(" ");
    format!(
        r#"swe_get() {{ {get}; }}
SWE_YML=""; for p in {paths}; do if swe_get "$p" > {dest} 2>/dev/null; then SWE_YML="$p"; break; fi; done
test -n "$SWE_YML"
sed -i -E 's/^name:.*/name: {ENV_NAME}/' {dest}"#
    )
}

/// The commands that check out the base commit and remove all later history, shared by both
/// flavours (after the clone or copy). The official clone holds later history, which only
/// `git gc --prune=now --aggressive` removes; the Debian flavour's repository never held any
/// (its history image has `base_commit` and its ancestors only), so it skips the repack, which
/// would rewrite the whole history into the instance's own layer.
pub(super) fn prune_history(base: &str, repack: bool) -> Vec<String> {
    let mut l = vec![
        format!("TARGET_TIMESTAMP=$(git show -s --format=%ci {base})"),
        r#"git tag -l | while read tag; do TAG_COMMIT=$(git rev-list -n 1 "$tag"); TAG_TIME=$(git show -s --format=%ci "$TAG_COMMIT"); if [[ "$TAG_TIME" > "$TARGET_TIMESTAMP" ]]; then git tag -d "$tag"; fi; done"#.to_string(),
        "git reflog expire --expire=now --all".to_string(),
    ];
    if repack {
        l.push("git gc --prune=now --aggressive".to_string());
    }
    l.extend([
        r#"AFTER_TIMESTAMP=$(date -d "$TARGET_TIMESTAMP + 1 second" '+%Y-%m-%d %H:%M:%S')"#
            .to_string(),
        r#"COMMIT_COUNT=$(git log --oneline --all --since="$AFTER_TIMESTAMP" | wc -l)"#.to_string(),
        r#"[ "$COMMIT_COUNT" -eq 0 ] || exit 1"#.to_string(),
    ]);
    l
}

/// The commit that makes `git diff` show only what the patch changes afterwards.
pub(super) fn commit_setup() -> Vec<String> {
    vec![
        "git config --global user.email setup@swebench.config".to_string(),
        "git config --global user.name SWE-bench".to_string(),
        "git commit --allow-empty -am SWE-bench".to_string(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yanked_requirement_is_replaced() {
        assert_eq!(
            replace_yanked_requirement("types-pkg_resources==0.1"),
            "types-setuptools"
        );
        assert_eq!(
            replace_yanked_requirement("types-pkg_resources_x"),
            "types-pkg_resources_x"
        );
        assert_eq!(
            replace_yanked_yml_line("    - types-pkg_resources"),
            "    - types-setuptools"
        );
    }

    fn files(path: &str) -> Option<String> {
        (path == "reqs/base.txt").then(|| "six\n# c\n-e .\n".to_string())
    }

    #[test]
    fn requirements_inline_includes_first() {
        let text = "-r base.txt\npytest\n.[test]\nmock";
        assert_eq!(
            assemble_requirements(text, "reqs/dev.txt", &files),
            "six\n\npytest\nmock"
        );
    }
}

#[cfg(test)]
mod fetch_tests {
    use super::*;

    /// The build-time requirements fetch (bash) assembles what `assemble_requirements` does,
    /// up to blank lines (which pip ignores).
    #[test]
    fn bash_fetch_agrees_with_rust_assembly() {
        let tmp = tempfile::tempdir().unwrap();
        let main = "# comment\n-r base.txt\n-e .\nnumpy>=1.0\ntypes-pkg_resources==0.1\n.[test]\n  pytest\nlast-no-newline";
        let base = "six\n# x\nmock==1.0\n-e .\n";
        let dir = tmp.path().join("tests/requirements");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("py3.txt"), main).unwrap();
        std::fs::write(dir.join("base.txt"), base).unwrap();
        let paths = vec![
            "missing.txt".to_string(),
            "tests/requirements/py3.txt".to_string(),
        ];
        let script = requirements_fetch_script(&paths, "cat \"$ROOT/$1\"", "\"$OUT\"");
        let out = tmp.path().join("out.txt");
        let status = std::process::Command::new("bash")
            .args(["-euo", "pipefail", "-c", &script])
            .env("ROOT", tmp.path())
            .env("OUT", &out)
            .status()
            .unwrap();
        assert!(status.success());
        let read = |path: &str| std::fs::read_to_string(tmp.path().join(path)).ok();
        let want = assemble_requirements(main, "tests/requirements/py3.txt", &read);
        let non_blank = |s: &str| {
            s.lines()
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        let got = std::fs::read_to_string(&out).unwrap();
        assert_eq!(non_blank(&got), non_blank(&want));
        assert!(got.contains("types-setuptools\n") && !got.contains("-e ."));
    }
}
