//! `swe-eval validate`: run each instance's gold patch and no patch at all, `-k` times each,
//! and flag the instances whose verdicts cannot be trusted: gold does not resolve, the
//! untouched tree already resolves, or a verdict changes between repetitions (flaky tests).
//! Writes `<output>/validate.<run_id>.json` and the flaky map `<output>/flaky.<run_id>.jsonl`
//! (for `run --flaky` and `compare --flaky`); exits 3 when any instance is flagged. The
//! validation itself is `orchestrate::validate`.

use super::args::{DatasetArgs, ExecArgs, Reachable};
use super::render;
use super::CliResult;
use crate::orchestrate::{self, Finding, Repeats, Source, DEFAULT_REPEAT, VALIDATE_RUN_ID};
use crate::runner::Category;

/// `swe-eval validate`: the instances, the repetitions and where the results go.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Without --dataset, the bundled mini benchmark's instances are validated. A dataset whose every
row is a mini benchmark row, from any file, gets the mini settings (Debian images from its own
mirrors, a 30 s timeout); every other dataset the general ones, whatever its file is called.

Writes OUTPUT/validate.<run_id>.json (the findings) and the flaky map OUTPUT/flaky.<run_id>.jsonl:
one row per instance with its verdicts per run and the FAIL_TO_PASS/PASS_TO_PASS tests whose
status changed between runs of one patch (docs/formats.md). Pass it to `run --flaky` or
`compare --flaky` to mark the flaky instances there.

Exit codes: 0 every instance is sound; 1 failed; 2 bad usage; 3 some instance is flagged, or
some inputs or jobs had problems.")]
pub struct Args {
    /// The dataset [default: the bundled mini benchmark].
    #[command(flatten)]
    pub dataset: DatasetArgs,
    /// Repetitions of each of the gold and the empty run [allowed: 1 to 100].
    #[arg(short = 'k', long, default_value_t = DEFAULT_REPEAT, value_parser = super::values::repeat())]
    pub repeat: u32,
    /// Run only the gold patch, -k times: checks that gold resolves and that its verdict and
    /// test statuses are stable, at half the cost; the untouched tree is not run, so "resolves
    /// without a patch" is not checked.
    #[arg(long)]
    pub gold_only: bool,
    /// Run id.
    #[arg(
        long,
        visible_alias = "run_id",
        default_value = VALIDATE_RUN_ID,
        value_parser = swe_eval_core::paths::run_id_arg
    )]
    pub run_id: String,
    /// Every reachable instance.
    #[command(flatten)]
    pub reachable: Reachable,
    /// How the runs execute.
    #[command(flatten)]
    pub exec: ExecArgs,
}

impl Args {
    /// What the command reads and writes, for the clobber check.
    pub fn io(&self) -> swe_eval_core::paths::IoPlan {
        self.exec.io(self.dataset.dataset.as_deref())
    }
}

/// Validates through `crate::orchestrate::validate`, rendering its events.
pub fn run(args: Args) -> CliResult {
    let source = Source {
        dataset: args.dataset.dataset.clone(),
        split: args.dataset.split.clone(),
        predictions: None,
        instance_ids: args.exec.instance_ids.clone(),
        reachable: args.reachable.reachable,
        flaky: None,
    };
    let opts = args.exec.options(Some(args.run_id.clone()), false);
    let rt = tokio::runtime::Runtime::new()?;
    let done = rt.block_on(render::rendered(|interrupts, events| {
        let repeats = if args.gold_only {
            Repeats::gold_only(args.repeat)
        } else {
            Repeats::each(args.repeat)
        };
        orchestrate::validate(&source, repeats, &opts, interrupts, events)
    }))?;
    render::print_preparation(&done.prep);
    for f in &done.findings {
        println!("{}", finding_line(f));
    }
    let flagged = done.findings.iter().filter(|f| f.flagged()).count();
    let flaky = done.findings.iter().filter(|f| f.flaky).count();
    let unfinished = match done.findings.iter().filter(|f| f.runs_missing > 0).count() {
        0 => String::new(),
        n => format!(" ({n} with runs not done: not in the flaky map unless already flaky)"),
    };
    println!(
        "{} instances, {flagged} flagged{unfinished}, {flaky} flaky, k = {}{}; {} containers run \
         in {:.1} s; wrote {} and the flaky map {}",
        done.findings.len(),
        done.repeats.gold,
        if done.repeats.empty == 0 {
            " (gold only)"
        } else {
            ""
        },
        done.report.jobs_run,
        done.report.wall.as_secs_f64(),
        done.file.display(),
        done.flaky_map.display()
    );
    super::print_problems("warning: ", &done.report.problems);
    Ok(done.ending)
}

/// One instance's line: its gold and empty verdicts, and why it is flagged.
fn finding_line(f: &Finding) -> String {
    let names = |v: &[Category]| v.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(",");
    let mut why = Vec::new();
    if f.gold_not_resolved && f.gold_needs_network {
        why.push("gold does not resolve (needs network: rerun with --network)");
    } else if f.gold_not_resolved {
        why.push("gold does not resolve");
    }
    if f.empty_resolves {
        why.push("resolves without a patch");
    }
    let missing;
    if f.runs_missing > 0 {
        missing = format!(
            "{} run(s) not done, not validated yet (interrupted: the same command with the same \
             --run-id does them)",
            f.runs_missing
        );
        why.push(&missing);
    }
    let tests;
    if f.flaky {
        let verdicts = |v: &[Category]| v.windows(2).any(|w| w[0] != w[1]);
        if verdicts(&f.gold) || verdicts(&f.empty) {
            why.push("verdict changes between runs");
        }
        if !f.tests.is_empty() {
            let names: Vec<&str> = f.tests.iter().map(|t| t.test.as_str()).collect();
            tests = format!("test status changes between runs: {}", names.join(", "));
            why.push(&tests);
        }
    }
    format!(
        "{:<40} gold [{}] empty [{}]{}",
        f.instance_id,
        names(&f.gold),
        if f.empty.is_empty() {
            "not run".to_string()
        } else {
            names(&f.empty)
        },
        if why.is_empty() {
            String::new()
        } else {
            format!("  FLAGGED: {}", why.join("; "))
        }
    )
}
