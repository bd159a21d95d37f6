//! `swe-eval serve`: the evaluator behind HTTP for training loops (`crate::evaluator` over
//! `crate::serve`), and `swe-eval serve export`: a server's rollouts as `correlate` and
//! `compare` read them. This file maps the flags onto the library's options and prints.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::args::{DatasetArgs, ExecArgs};
use super::{CliResult, UsageError};
use crate::evaluator::{self, Bounds, DatasetSource, ServeChoices};
use crate::orchestrate::Ending;
use crate::serve::{listen, ServeConfig};

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
#[command(after_help = "\
Quickstart (the bundled mini benchmark's 8 tasks):
  swe-eval serve &
  curl -s localhost:8321/v1/evaluations -d '{\"instance_id\": \"swe-eval-mini__calc-1\", \"model_patch\": \"...\"}'
  python3 -c 'import swe_eval_client as c; print(c.Client().evaluate(\"swe-eval-mini__calc-1\", patch))'

State: OUTPUT/serve (default results/serve): serve.sqlite (every request and result, the
verdict cache), jobs/<key>/ (each job's logs and verdict.json), logs/build_images/. A server
killed outright and started again on the same OUTPUT finishes every accepted request once and
answers the finished ones; it removes the dead server's containers and holds.

Endpoints: POST /v1/evaluations (one prediction record or a list), GET /v1/evaluations/{id}?wait=S,
POST /v1/evaluations/wait, GET /v1/health, GET /metrics (Prometheus), GET
/v1/export/rewards.jsonl and /v1/export/outcomes.jsonl (?since=N). A record is SWE-bench's
prediction: instance_id, model_patch, and optionally model_name_or_path, sample, deadline_s and
execute (false: the similarity alone). It may also carry text, full_output (SWE-bench's
inference output) and case (the mini benchmark's label), which are not read; any other field is
refused (400) naming it, and the field meant where one is close (timeout: deadline_s). Errors
are JSON {code, message, field}. A batch with more predictions to execute than --max-queue is
413; one that fits an empty queue but not the current one is 429 with Retry-After.

Reward: every executed outcome has score (1.0 when the grading named by graded_by resolved it,
else 0.0; 0.0 where mask is true), graded_by (--reward: strict by default) and objections (what
the strict grading objected to: forged PASSED lines and exit codes that contradict the log,
SKIPPED FAIL_TO_PASS tests, no sign the suite ran, files that change test collection, edits to
the hidden tests' files), beside the official status and resolved and the strict_status.
With --reward strict the jobs run strict: collection-altering files are removed before the
tests, so status is the official grading of that run.

Images are prepared when an instance is first asked for (--prepare-all: every one at start);
requests whose image is ready go first. Identical (instance, patch) requests run once, and later
ones are answered from the cache. Each request has one deadline (deadline_s, default --deadline)
covering image, start, apply, tests and removal; when it passes the answer is `timeout` with
mask true. Infrastructure failures are `infra_error` with mask true: drop such samples.

Listening on anything but a loopback address needs a bearer token (--token-file or
SWE_EVAL_TOKEN). Ctrl-C (or SIGTERM) stops accepting, lets running jobs finish and keeps the
queued requests for the next start; a second one kills the running jobs.")]
/// `swe-eval serve`: evaluate predictions over HTTP as they come.
pub struct Args {
    /// `export`: write a server's rollouts for `correlate` and `compare`.
    #[command(subcommand)]
    pub action: Option<Action>,
    /// The dataset [default: the bundled mini benchmark].
    #[command(flatten)]
    pub dataset: DatasetArgs,
    /// How predictions execute (OUTPUT/serve is the server's state).
    #[command(flatten)]
    pub exec: ExecArgs,
    /// The grading each outcome's `score` follows. The official and the strict verdicts are
    /// both in every answer (`status`, `strict_status`), with the strict grading's
    /// `objections`.
    #[arg(long, default_value = "strict", value_name = "GRADING",
          value_parser = super::values::reward())]
    pub reward: evaluator::GradedBy,
    /// Strict runs, as `run --strict`: collection-altering files are removed before the tests.
    /// Always so with `--reward strict` (the default); with `--reward official`, strict runs
    /// with the official score.
    #[arg(long)]
    pub strict: bool,
    /// Where to listen. Any address but a loopback one needs a token.
    #[arg(long, default_value = "127.0.0.1:8321", value_name = "ADDR:PORT")]
    pub listen: SocketAddr,
    /// A file holding the bearer token every request must carry (else SWE_EVAL_TOKEN).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Prepare every instance's image at start instead of when first asked for.
    #[arg(long)]
    pub prepare_all: bool,
    /// Most requests accepted and not done; more are answered 429 with Retry-After
    /// [allowed: 1 to 1000000].
    #[arg(long, default_value_t = evaluator::DEFAULT_MAX_QUEUE, value_name = "N",
          value_parser = super::values::serve(swe_eval_core::bounds::SERVE_QUEUE))]
    pub max_queue: usize,
    /// The deadline of a request that names none (deadline_s), in seconds
    /// [allowed: 1 to 604800].
    #[arg(long, default_value_t = evaluator::DEFAULT_DEADLINE.as_secs(), value_name = "SECS",
          value_parser = super::values::timeout_secs())]
    pub deadline: u64,
    /// The largest patch a request may carry, in bytes (413 beyond) [allowed: 1 to 268435456].
    #[arg(long, default_value_t = Bounds::default().max_patch_bytes, value_name = "BYTES",
          value_parser = super::values::serve(swe_eval_core::bounds::SERVE_PATCH_BYTES))]
    pub max_patch_bytes: usize,
    /// The most bytes of request bodies the server holds at once, every connection together
    /// (a body is at most 64 MiB). A request whose body would go past it is answered 503 with
    /// Retry-After before its body is read. The requests parsed from the bodies take about as
    /// much again [allowed: 67108864 to 68719476736].
    #[arg(long, default_value_t = crate::serve::DEFAULT_MAX_BODY_MEMORY, value_name = "BYTES",
          value_parser = super::values::serve(swe_eval_core::bounds::SERVE_BODY_MEMORY))]
    pub max_body_memory: usize,
    /// The server's CPU priority, -20 (first) to 19 (last): its nice value and, where the
    /// kernel groups CPU time by session (autogroup), its session's group, which is what
    /// weighs it against the Docker daemon and the jobs. Below 0 needs root. The group is the
    /// whole session's: start the server in a session of its own (`setsid`) to raise it alone.
    /// With `--cpu-weight` below 100 the answers come before the jobs' tests. Unset: as started
    /// [allowed: -20 to 19].
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = clap::value_parser!(i32).range(-20..=19))]
    pub nice: Option<i32>,
}

/// What `serve` does besides serving.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Write a server's rollouts as `correlate` and `compare` read them.
    ///
    /// Into `--to`: rewards.jsonl (similarity and reward of every request) and outcomes.jsonl (the executed
    /// verdicts; masked ones without `resolved`). Works on a stopped server's state too.
    Export(ExportArgs),
}

/// `swe-eval serve export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The server's output folder (its state is OUTPUT/serve).
    #[arg(
        long,
        short = 'o',
        default_value = "results",
        visible_alias = "report_dir"
    )]
    pub output: PathBuf,
    /// Where to write rewards.jsonl and outcomes.jsonl [default: OUTPUT/serve/export].
    #[arg(long, value_name = "DIR")]
    pub to: Option<PathBuf>,
    /// Only requests from this number on (the N of id eN) [allowed: 0 to 1000000000000].
    #[arg(long, default_value_t = 0, value_name = "N",
          value_parser = super::values::request_number())]
    pub since: u64,
}

impl Args {
    /// What the command reads and writes, for the clobber check.
    pub fn io(&self) -> swe_eval_core::paths::IoPlan {
        match &self.action {
            Some(Action::Export(a)) => {
                let to =
                    a.to.clone()
                        .unwrap_or_else(|| a.output.join("serve").join("export"));
                swe_eval_core::paths::IoPlan::new()
                    .input("--output", a.output.join("serve").join("serve.sqlite"))
                    .output(swe_eval_core::paths::Output::Folder(to))
            }
            None => {
                let plan = self.exec.io(self.dataset.dataset.as_deref());
                match &self.token_file {
                    Some(t) => plan.input("--token-file", t),
                    None => plan,
                }
            }
        }
    }
}

/// Serves, or exports.
pub fn run(args: Args) -> CliResult {
    match args.action {
        Some(Action::Export(a)) => export(&a),
        None => {
            // Before any thread starts: each takes the nice of the thread that made it.
            if let Some(n) = args.nice {
                let set = crate::priority::set_nice(n)?;
                eprintln!("swe-eval serve: {set}");
            }
            // Two runtimes: the HTTP answers on threads of their own, the evaluator (its
            // dispatcher, engine calls, deliveries and the state's writes) on others, so a
            // job's work never holds a thread an answer waits for.
            let work = runtime("swe-eval-work")?;
            let answers = runtime("swe-eval-http")?;
            answers.block_on(serve(args, work.handle().clone()))
        }
    }
}

/// A multi-threaded runtime whose threads are named `name`.
fn runtime(name: &str) -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name(name)
        .build()
}

async fn serve(args: Args, work: tokio::runtime::Handle) -> CliResult {
    let token = evaluator::token_from(
        args.token_file.as_deref(),
        std::env::var("SWE_EVAL_TOKEN").ok(),
    )?;
    let mut config = ServeConfig::new(args.listen);
    config.token = token;
    config.max_body_memory = args.max_body_memory;
    // Refused before anything starts: a public address without a token.
    evaluator::check_listen(args.listen.ip(), config.token.as_deref())?;
    let mut run = args.exec.options(
        None,
        args.strict || args.reward == evaluator::GradedBy::Strict,
    );
    run.output = run.output.join("serve");
    let source = DatasetSource {
        dataset: args.dataset.dataset.clone(),
        split: args.dataset.split.clone(),
        instance_ids: args.exec.instance_ids.clone(),
    };
    let choices = ServeChoices {
        prepare_all: args.prepare_all,
        max_queue: Some(args.max_queue),
        deadline: Some(Duration::from_secs(args.deadline.max(1))),
        bounds: Some(Bounds {
            max_patch_bytes: args.max_patch_bytes,
            ..Bounds::default()
        }),
        reward: args.reward,
    };
    // Signals are caught from here on: a stop that comes while the state is read (a script's
    // background server ignores SIGINT until caught) stops the server as soon as it is open.
    let (sig_tx, mut sig_rx) = tokio::sync::mpsc::unbounded_channel();
    let signals = tokio::spawn(super::render::forward_interrupts(sig_tx));
    let listener = listen(config).await?;
    let opened = {
        let run = run.clone();
        work.spawn(async move { evaluator::open(&source, &run, &choices).await })
            .await
            .map_err(std::io::Error::other)??
    };
    for p in &opened.problems {
        eprintln!("warning: {p}");
    }
    let mut notices = opened.notices;
    let (printed_tx, mut printed_rx) = tokio::sync::oneshot::channel::<()>();
    let printing = tokio::spawn(async move {
        loop {
            tokio::select! {
                n = notices.recv() => match n {
                    Some(n) => eprintln!("note: {n}"),
                    None => break,
                },
                _ = &mut printed_rx => {
                    while let Ok(n) = notices.try_recv() {
                        eprintln!("note: {n}");
                    }
                    break;
                }
            }
        }
    });
    let ev = opened.evaluator;
    let addr = listener.local_addr();
    println!(
        "swe-eval serve: {} instance(s){}, state {}, listening on http://{addr}",
        opened.instances,
        if opened.mini {
            " (the mini benchmark)"
        } else {
            ""
        },
        run.output.display()
    );
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let serving = tokio::spawn(listener.serve(ev.clone(), stop_rx));
    let _ = sig_rx.recv().await;
    eprintln!("stopping: no new requests; running jobs finish (Ctrl-C again kills them)");
    let _ = stop_tx.send(true);
    let killer = {
        let ev = ev.clone();
        tokio::spawn(async move {
            if sig_rx.recv().await.is_some() {
                eprintln!("killing the running jobs");
                ev.interrupt();
            }
        })
    };
    let done = ev.shutdown().await;
    killer.abort();
    signals.abort();
    let _ = serving.await;
    // The notices said so far (the evaluator's timers may keep the channel open).
    let _ = printed_tx.send(());
    let _ = printing.await;
    if let Some(closed) = &done.closed {
        for p in &closed.driven.problems {
            eprintln!("warning: {p}");
        }
    }
    eprintln!("stopped: {} request(s) left for the next start", done.left);
    Ok(Ending::Clean)
}

fn export(a: &ExportArgs) -> CliResult {
    let state = a.output.join("serve");
    let db = evaluator::db_path(&state);
    if !db.is_file() {
        return Err(UsageError(format!(
            "no server state at {} (serve writes it under OUTPUT/serve; give the server's -o)",
            db.display()
        ))
        .into());
    }
    let store = evaluator::Store::open(&state)?;
    let rows = store.since(a.since)?;
    store.close();
    let (rewards, outcomes) = evaluator::export(&rows);
    let to = a.to.clone().unwrap_or_else(|| state.join("export"));
    swe_eval_core::fsutil::write_atomic(&to.join("rewards.jsonl"), &rewards)?;
    swe_eval_core::fsutil::write_atomic(&to.join("outcomes.jsonl"), &outcomes)?;
    println!(
        "{} request(s) exported to {} (rewards.jsonl, outcomes.jsonl): swe-eval correlate --rewards {} --results {}",
        rows.len(),
        to.display(),
        to.join("rewards.jsonl").display(),
        to.join("outcomes.jsonl").display()
    );
    Ok(Ending::Clean)
}
