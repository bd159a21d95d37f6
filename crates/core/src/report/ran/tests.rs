use super::*;

const BASE: &str = "a2ff107f8676f174de1fdaa210df5f0bad8a38d1";

/// The patch a run applied: one hunk in calc/parser.py.
const RAN: &str = "diff --git a/calc/parser.py b/calc/parser.py
--- a/calc/parser.py
+++ b/calc/parser.py
@@ -1,3 +1,3 @@
 def expr(self):
-    left = self.term()
+    left = self.binary(1)
     return left
";

/// Another sample's patch of the same file: other lines.
const OTHER_SAMPLE: &str = "diff --git a/calc/parser.py b/calc/parser.py
--- a/calc/parser.py
+++ b/calc/parser.py
@@ -1,3 +1,3 @@
 def expr(self):
-    left = self.term()
+    left = self.term(True)
     return left
";

/// A one-line README edit.
const README_EDIT: &str = "diff --git a/README.md b/README.md
--- a/README.md
+++ b/README.md
@@ -1 +1 @@
-# calc
+# calc, edited
";

/// A test output as the eval script traces it: `git status`, `git show` of the setup commit
/// (`setup` is its diff), `git diff <base>` (`diff`), then `between` trace lines and the
/// tests.
fn output(status: &str, setup: &str, diff: &str) -> String {
    format!(
        "+ cd /testbed\n+ git status\nOn branch main\nChanges not staged for commit:\n\
         \x20 (use \"git add <file>...\" to update what will be committed)\n{status}\n\
         no changes added to commit (use \"git add\" and/or \"git commit -a\")\n+ git show\n\
         commit 222e9e4108d687e0c4f7f3eef84cbbbb157a5cea\nAuthor: SWE-bench <setup@swebench.config>\n\
         Date:   Thu Dec 3 14:13:52 2026 +0000\n\n    SWE-bench\n\n{setup}\
         + git -c core.fileMode=false diff {BASE}\n{diff}\
         + git checkout {BASE} tests/test_evaluator.py\nUpdated 1 path from 7cbd7d3\n\
         + : '>>>>> Start Test Output'\n+ pytest -rA tests/test_evaluator.py\nPASSED tests/x.py::t\n"
    )
}

const MODIFIED: &str = "\tmodified:   calc/parser.py\n";

/// The diff `git diff <base>` prints after RAN was applied (with an index line git adds).
fn ran_diff() -> String {
    RAN.replace(
        "--- a/calc/parser.py",
        "index 52f56ae..05551db 100644\n--- a/calc/parser.py",
    )
}

#[test]
fn a_folder_ran_the_patch_its_patch_diff_or_verdict_holds() {
    let d = tempfile::tempdir().unwrap();
    assert!(matches!(
        check_folder(d.path(), RAN).unwrap(),
        Check::Unknown(_)
    ));
    std::fs::write(
        d.path().join(VERDICT_FILE),
        format!(
            "{{\"patch_hash\":\"{}\"}}",
            crate::predictions::patch_hash("")
        ),
    )
    .unwrap();
    assert_eq!(
        check_folder(d.path(), "").unwrap(),
        Check::Same(Basis::PatchHash)
    );
    let Check::Differs(why) = check_folder(d.path(), README_EDIT).unwrap() else {
        panic!("a README edit is not the empty patch that ran")
    };
    assert!(why.contains("the run's patch was empty"), "{why}");
    // An official log folder: patch.diff, no verdict.json.
    std::fs::remove_file(d.path().join(VERDICT_FILE)).unwrap();
    std::fs::write(d.path().join(PATCH_FILE), RAN).unwrap();
    assert_eq!(
        check_folder(d.path(), RAN).unwrap(),
        Check::Same(Basis::PatchFile)
    );
    let Check::Differs(why) = check_folder(d.path(), README_EDIT).unwrap() else {
        panic!("another patch")
    };
    assert!(why.contains("patch.diff is another patch"), "{why}");
    assert!(why.contains("first difference at line 1"), "{why}");
    // patch.diff replaced after the run: verdict.json still has the hash of what ran.
    std::fs::write(
        d.path().join(VERDICT_FILE),
        format!(
            "{{\"patch_hash\":\"{}\"}}",
            crate::predictions::patch_hash(RAN)
        ),
    )
    .unwrap();
    std::fs::write(d.path().join(PATCH_FILE), README_EDIT).unwrap();
    let Check::Differs(why) = check_folder(d.path(), README_EDIT).unwrap() else {
        panic!("patch.diff and verdict.json disagree")
    };
    assert!(why.contains("verdict.json is of another patch"), "{why}");
    std::fs::write(d.path().join(PATCH_FILE), RAN).unwrap();
    // The test output shows what ran too: a folder without patch.diff or verdict.json, and
    // one whose patch.diff was replaced.
    let bare = tempfile::tempdir().unwrap();
    let log = crate::report::SavedLog::Output(output(MODIFIED, "", &ran_diff()));
    assert_eq!(
        check_log(Some(bare.path()), &log, RAN).unwrap(),
        Check::Same(Basis::Lines)
    );
    std::fs::write(bare.path().join(PATCH_FILE), README_EDIT).unwrap();
    assert!(matches!(
        check_log(Some(bare.path()), &log, README_EDIT).unwrap(),
        Check::Differs(_)
    ));
    // Byte for byte: a trailing newline more is another text, as it is another hash.
    assert!(matches!(
        check_folder(d.path(), &format!("{RAN}\n")).unwrap(),
        Check::Differs(_)
    ));
}

#[test]
fn the_test_output_shows_the_patch_that_ran_by_file_and_by_line() {
    let out = output(MODIFIED, "", &ran_diff());
    assert_eq!(diff_base(&out), Some(BASE));
    assert_eq!(check_output(&out, RAN), Check::Same(Basis::Lines));
    let Check::Differs(why) = check_output(&out, README_EDIT) else {
        panic!("a README edit did not run")
    };
    assert_eq!(
        why,
        "its `git status` shows calc/parser.py changed, a file the patch does not touch"
    );
    // Another sample of the same file: the files agree, the lines do not.
    let Check::Differs(why) = check_output(&out, OTHER_SAMPLE) else {
        panic!("another sample did not run")
    };
    assert!(
        why.starts_with(
            "its `git diff` of calc/parser.py is not the patch's change (2 line(s) differ"
        ),
        "{why}"
    );
    // The patch plus a README edit: README.md shows unchanged.
    let both = format!("{RAN}{README_EDIT}");
    assert_eq!(
        check_output(&out, &both),
        Check::Differs(
            "the patch changes README.md, which its `git status` shows unchanged".into()
        )
    );
}

#[test]
fn created_files_are_untracked_and_rejected_hunks_leave_a_rej() {
    let created = "diff --git a/calc/new.py b/calc/new.py
new file mode 100644
--- /dev/null
+++ b/calc/new.py
@@ -0,0 +1 @@
+X = 1
";
    let status =
        format!("{MODIFIED}\nUntracked files:\n  (use \"git add <file>...\")\n\tcalc/new.py\n");
    let out = output(&status, "", &ran_diff());
    assert_eq!(
        check_output(&out, &format!("{RAN}{created}")),
        Check::Same(Basis::Lines)
    );
    let out_without = output(MODIFIED, "", &ran_diff());
    assert_eq!(
        check_output(&out_without, &format!("{RAN}{created}")),
        Check::Differs(
            "the patch creates calc/new.py, which its `git status` does not show".into()
        )
    );
    // Every hunk of README.md rejected (`git apply --reject`): README.md.rej, no change.
    let status = format!("{MODIFIED}\nUntracked files:\n\tREADME.md.rej\n");
    let out = output(&status, "", &ran_diff());
    assert_eq!(
        check_output(&out, &format!("{RAN}{README_EDIT}")),
        Check::Same(Basis::Lines)
    );
}

/// The setup commit changed a file, and the patch holds the same change: `patch --batch`
/// applied it in reverse, so `git diff <base>` shows nothing of the file while `git status`
/// shows it changed since the setup commit.
#[test]
fn a_patch_applied_in_reverse_over_the_setup_commit_is_the_patch_that_ran() {
    let setup = "diff --git a/tox.ini b/tox.ini
index dbb705a..9f4fc3a 100644
--- a/tox.ini
+++ b/tox.ini
@@ -1 +1 @@
-    python -X dev -m pytest --durations 25 {posargs}
+    python -X dev -m pytest -rA --durations 25 {posargs}
";
    let patch = format!("{setup}{RAN}");
    let status = format!("{MODIFIED}\tmodified:   tox.ini\n\nUntracked files:\n\ttox.ini.orig\n");
    let out = output(&status, setup, &ran_diff());
    assert_eq!(check_output(&out, &patch), Check::Same(Basis::Lines));
    // Applied forward instead, the diff since base shows it twice over: also the patch's.
    assert_eq!(
        check_output(&out, RAN),
        Check::Differs(
            "its `git status` shows tox.ini changed, a file the patch does not touch".into()
        )
    );
}

/// Trace lines of later commands can come before a command's output: a diff found whole
/// after them is still read; one split by them, or larger than one pipe write, is held by
/// file only.
#[test]
fn an_interleaved_diff_is_read_when_whole_and_held_by_file_otherwise() {
    let late = output(
        MODIFIED,
        "",
        &format!(
            "+ source /opt/miniconda3/bin/activate\n++ conda activate\n{}",
            ran_diff()
        ),
    );
    assert_eq!(check_output(&late, RAN), Check::Same(Basis::Lines));
    assert!(matches!(
        check_output(&late, OTHER_SAMPLE),
        Check::Differs(_)
    ));
    let d = ran_diff();
    let (head, tail) = d.split_at(d.find("-    left").unwrap());
    let split = output(
        MODIFIED,
        "",
        &format!("{head}+ source /opt/miniconda3/bin/activate\n{tail}"),
    );
    assert_eq!(
        check_output(&split, OTHER_SAMPLE),
        Check::Same(Basis::Files)
    );
    let big: String = (0..300).map(|i| format!(" context line {i}\n")).collect();
    let big_patch = RAN.replace("@@ -1,3 +1,3 @@\n", &format!("@@ -1,303 +1,303 @@\n{big}"));
    let out = output(MODIFIED, "", &big_patch);
    assert!(big_patch.len() > ONE_WRITE);
    assert_eq!(check_output(&out, &big_patch), Check::Same(Basis::Files));
    // A log without the eval script's trace says nothing.
    assert!(matches!(check_output("PASSED x\n", RAN), Check::Unknown(_)));
}
