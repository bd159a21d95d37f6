//! `--help` of every command as a person reads it, kept as reviewed snapshots
//! (tests/it/snapshots/it__help__*.snap): a change to an option, a default or a sentence shows
//! as a diff to accept (`INSTA_UPDATE=always cargo test --test it help::`) or to fix.

use std::process::Command;

use crate::common::bin;

/// Every command and subcommand, as the arguments that lead to it.
const COMMANDS: &[&[&str]] = &[
    &[],
    &["run"],
    &["reward"],
    &["correlate"],
    &["compare"],
    &["spec"],
    &["grade"],
    &["validate"],
    &["submit"],
    &["bench"],
    &["bench", "reward"],
    &["bench", "grade"],
    &["bench", "correlate"],
    &["bench", "harness"],
    &["bench", "engine"],
    &["bench", "base"],
    &["bench", "html"],
    &["bench", "serve"],
    &["images"],
    &["images", "build"],
    &["images", "list"],
    &["images", "prune"],
    &["images", "push"],
    &["images", "pull"],
    &["images", "export"],
    &["images", "import"],
    &["serve"],
    &["serve", "export"],
];

fn help(args: &[&str]) -> String {
    let out = Command::new(bin())
        .args(args)
        .arg("--help")
        // Help shows the values of the variables an option reads (`[env: SWE_EVAL_...=x]`), and
        // wraps to the terminal: neither may depend on where the tests run.
        .env_clear()
        .env("COLUMNS", "100")
        .output()
        .expect("run swe-eval --help");
    assert!(out.status.success(), "{args:?} --help: {out:?}");
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

#[test]
fn help_of_every_command_reads_as_reviewed() {
    for args in COMMANDS {
        let name = if args.is_empty() {
            "swe-eval".to_string()
        } else {
            format!("swe-eval {}", args.join(" "))
        };
        insta::assert_snapshot!(name.replace(' ', "_"), help(args), &name);
    }
}

/// Every subcommand the binary lists is in [`COMMANDS`], so a new one gets a snapshot too.
#[test]
fn every_listed_command_has_a_help_snapshot() {
    let mut missing = Vec::new();
    for parent in [&[][..], &["bench"][..], &["images"][..], &["serve"][..]] {
        let text = help(parent);
        let listed = text
            .split("Commands:")
            .nth(1)
            .and_then(|rest| rest.split("\n\n").next())
            .unwrap_or_default();
        for line in listed.lines() {
            let Some(cmd) = line.split_whitespace().next() else {
                continue;
            };
            if cmd == "help" {
                continue;
            }
            let mut args = parent.to_vec();
            args.push(cmd);
            if !COMMANDS.contains(&args.as_slice()) {
                missing.push(args.join(" "));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "commands without a help snapshot: {missing:?}"
    );
}
