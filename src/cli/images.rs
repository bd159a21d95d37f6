//! `swe-eval images`: the images of a dataset's instances as a job of their own. `build`
//! prepares them without running anything; `list` (or `check`) says per instance which of
//! its images are present, stale (built by an older recipe or layout) or missing; `prune`
//! removes this tool's images the selection does not use, sparing what a live run holds;
//! `export`/`import` carry them to another daemon as one archive; `push`/`pull` through a
//! registry. The work is `crate::orchestrate` (`image_set`); this file parses and renders.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::args::{DatasetArgs, ImageSources, Reachable};
use super::render;
use super::{CliError, CliResult, NothingComputable};
use crate::engine::{self, AnyEngine, EngineChoice, EngineKind};
use crate::images::{self, Disk, InstanceNames, LayerState, ListedLayer, Listing};
use crate::orchestrate::{self, ending, ImageSet, Selected, Source, Troubles};

/// `swe-eval images`: one of its actions.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  swe-eval images build -d verified.jsonl --flavour debian --mirrors /src/mirrors
  swe-eval images list -d verified.jsonl --flavour debian --mirrors /src/mirrors --json
  swe-eval images prune -d verified.jsonl --flavour debian --mirrors /src/mirrors --dry-run
  swe-eval images export -d verified.jsonl --flavour debian --mirrors /src/mirrors -o set.tar.zst
  swe-eval images import set.tar.zst

Every action takes the dataset flags of `run` (-d, --split, -i, --reachable, --flavour, --mirrors,
--repo, --namespace, --ca-cert) and its --engine (docker, podman, or swarm: the cluster's
manager); with no --dataset it works on the bundled mini benchmark. Images built with --ca-cert
have other names than without (only whether a bundle is given counts): list, prune and export
say when an image is the selection's recipe built the other way, and prune keeps it.")]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub action: Action,
}

/// What `swe-eval images` does.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Prepare the images of the selected instances (build what is missing); run nothing.
    Build(BuildArgs),
    /// Which images each instance has: present, stale (older recipe) or missing.
    ///
    /// Stale: the image the current recipe names is not there, but one of the same place built
    /// by an older recipe or layout is (names carry content hashes).
    #[command(visible_alias = "check")]
    List(ListArgs),
    /// Remove images and compiler caches the selection does not use, sparing what live runs
    /// hold.
    ///
    /// Removes this tool's images that no selected instance uses: stale ones and those of
    /// instances not selected (-i narrows what is kept). An image a live run holds or a
    /// container uses stays, and so does a selected instance's image of the current recipe
    /// built with the CA bundle the other way (--ca-cert given or not): a run with that
    /// setting uses it. Refuses while an instance's images cannot be named.
    ///
    /// The compiler cache volumes (`swe-eval-ccache.<owner__name>.<hash>`, one per repository
    /// and environment whose instance builds compile) go by the same rule, by default: those
    /// no selected instance's build mounts (other repositories, environments of an older
    /// recipe) are caches nothing selected can use, and can take gigabytes; a build that needs
    /// one again starts it empty. A volume a container uses (a build compiling now) or whose
    /// environment image a live run holds stays. --keep-volumes leaves them all.
    Prune(PruneArgs),
    /// Push the selection's images to a registry (`HOST:PORT/<name>`).
    Push(RegistryArgs),
    /// Pull the selection's missing images from a registry where `push` put them.
    Pull(RegistryArgs),
    /// Write the selection's images to one archive (layers they share stored once).
    Export(ExportArgs),
    /// Load an archive written by `export` (or any `docker save` archive).
    Import(ImportArgs),
}

/// Which instances, and where their images and repositories come from.
#[derive(Debug, clap::Args)]
pub struct Selection {
    /// The dataset [default: the bundled mini benchmark].
    #[command(flatten)]
    pub data: DatasetArgs,
    /// Only these instances (space- or comma-separated).
    #[arg(long, short = 'i', visible_alias = "instance_ids", num_args = 1.., value_delimiter = ',')]
    pub instance_ids: Vec<String>,
    /// Every reachable instance.
    #[command(flatten)]
    pub reachable: Reachable,
    /// Where images and repositories come from.
    #[command(flatten)]
    pub sources: ImageSources,
    /// Which engine holds the images.
    #[command(flatten)]
    pub engine: Where,
}

/// Which engine's images `swe-eval images` works on.
#[derive(Debug, Clone, clap::Args)]
pub struct Where {
    /// The engine whose images these are, as `run --engine` names it: docker (the daemon at
    /// DOCKER_HOST), podman (its Docker-compatible service), or swarm (the cluster's manager
    /// at DOCKER_HOST: a Swarm run builds and finds its images there, and pushes them to its
    /// --registry for the other nodes).
    #[arg(
        long = "engine",
        value_enum,
        default_value = "docker",
        hide_possible_values = true
    )]
    pub kind: EngineKind,
}

impl Where {
    /// The engine, connected.
    async fn connect(&self) -> Result<AnyEngine, CliError> {
        let choice = EngineChoice {
            kind: self.kind,
            ..Default::default()
        };
        Ok(engine::connect(&choice).await?)
    }
}

/// `images build`.
#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    /// The instances.
    #[command(flatten)]
    pub selection: Selection,
    /// Image builds at once [default: half the cores, 1 to 4]. [allowed: 1 to 64]
    #[arg(long, value_name = "N", value_parser = super::values::build_jobs())]
    pub build_jobs: Option<usize>,
    /// Folder for the build logs (`logs/build_images/`, with `timings.jsonl`).
    #[arg(long, short = 'o', default_value = "results")]
    pub output: PathBuf,
}

/// `images list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// The instances.
    #[command(flatten)]
    pub selection: Selection,
    /// Print the listing as JSON (docs/formats.md, "Image listing") instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also measure the disk the images take (each layer once; one inspection per image).
    #[arg(long)]
    pub disk: bool,
}

/// `images prune`.
#[derive(Debug, clap::Args)]
pub struct PruneArgs {
    /// The instances whose images are kept.
    #[command(flatten)]
    pub selection: Selection,
    /// Say what would be removed, remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Leave the compiler cache volumes alone: remove images only.
    #[arg(long)]
    pub keep_volumes: bool,
}

/// `images push` and `images pull`.
#[derive(Debug, clap::Args)]
pub struct RegistryArgs {
    /// The instances.
    #[command(flatten)]
    pub selection: Selection,
    /// The registry (`HOST:PORT`); images go there as `HOST:PORT/<name>`.
    #[arg(long, value_name = "HOST:PORT")]
    pub registry: String,
}

/// `images export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The instances.
    #[command(flatten)]
    pub selection: Selection,
    /// The archive to write: `.tar`, or `.tar.zst` (zstd-compressed). An existing file is
    /// refused unless --force.
    #[arg(long, short = 'o')]
    pub output: PathBuf,
    /// Write over an existing archive file.
    #[arg(long)]
    pub force: bool,
}

/// `images import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The archive to load (`.tar` or `.tar.zst`, as `export` writes it).
    pub archive: PathBuf,
    /// Which engine loads it.
    #[command(flatten)]
    pub engine: Where,
}

impl Args {
    /// What the command reads and writes, for the clobber check.
    pub fn io(&self) -> swe_eval_core::paths::IoPlan {
        use swe_eval_core::paths::{IoPlan, Output};
        let select = |s: &Selection, plan: IoPlan| {
            let plan = match &s.data.dataset {
                Some(d) => plan.input("--dataset", d),
                None => plan,
            };
            s.sources.inputs(plan)
        };
        match &self.action {
            Action::Build(a) => select(
                &a.selection,
                IoPlan::new().output(Output::Folder(a.output.clone())),
            ),
            Action::List(a) => select(&a.selection, IoPlan::new()),
            Action::Prune(a) => select(&a.selection, IoPlan::new()),
            Action::Push(a) | Action::Pull(a) => select(&a.selection, IoPlan::new()),
            Action::Export(a) => select(
                &a.selection,
                IoPlan::new().output(Output::File(a.output.clone())),
            ),
            Action::Import(a) => IoPlan::new().input("ARCHIVE", &a.archive),
        }
    }
}

/// Runs the action.
pub fn run(args: Args) -> CliResult {
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(run_async(args))
}

async fn run_async(args: Args) -> CliResult {
    match args.action {
        Action::Build(a) => build(a).await,
        Action::List(a) => list(a).await,
        Action::Prune(a) => prune(a).await,
        Action::Push(a) => transfer(a, true).await,
        Action::Pull(a) => transfer(a, false).await,
        Action::Export(a) => export(a).await,
        Action::Import(a) => import(a).await,
    }
}

/// The selection's image set and how its images are made; the input problems are printed.
/// `output` is where build logs go (and the fallback cache).
fn selection(
    s: &Selection,
    output: &std::path::Path,
    build_jobs: Option<usize>,
) -> Result<Selected, CliError> {
    let source = Source {
        dataset: s.data.dataset.clone(),
        split: s.data.split.clone(),
        predictions: None,
        instance_ids: s.instance_ids.clone(),
        reachable: s.reachable.reachable,
        flaky: None,
    };
    let selected = orchestrate::select_images(&source, &s.sources.choices(build_jobs), output)?;
    super::print_problems("warning: ", &selected.problems);
    if let Some(reach) = &selected.reach {
        eprintln!("note: {reach}");
    }
    if selected.instances == 0 {
        return Err(NothingComputable("no instance selected: nothing to do".into()).into());
    }
    Ok(selected)
}

/// A scratch output folder for actions that write no logs (the mini benchmark is written
/// out there).
fn scratch() -> Result<tempfile::TempDir, CliError> {
    Ok(tempfile::Builder::new()
        .prefix("swe-eval-images-")
        .tempdir()?)
}

/// What list, prune, push/pull and export start from: the selection (its mini benchmark, if
/// any, written out in a scratch folder kept while this lives), its images' names, and which
/// of them the engine has.
struct Inventory {
    _scratch: tempfile::TempDir,
    set: ImageSet,
    names: Vec<InstanceNames>,
    problems: usize,
    engine: AnyEngine,
    listing: Listing,
}

async fn inventory(s: &Selection) -> Result<Inventory, CliError> {
    let scratch = scratch()?;
    let Selected {
        set,
        prepare: opts,
        problems,
        ..
    } = selection(s, scratch.path(), None)?;
    let engine = s.engine.connect().await?;
    let (names, listing) = orchestrate::list_images(&engine, &set, &opts).await?;
    // An instance whose spec cannot be made has no image name at all: a problem to say.
    let without: Vec<String> = (set.without_spec().iter())
        .map(|n| format!("{}: no test spec: {}", n.instance_id, n.reason))
        .collect();
    super::print_problems("warning: ", &without);
    Ok(Inventory {
        _scratch: scratch,
        set,
        names,
        problems: problems.len() + without.len(),
        engine,
        listing,
    })
}

async fn build(mut a: BuildArgs) -> CliResult {
    a.output = std::path::absolute(&a.output)?;
    let Selected {
        set,
        prepare: opts,
        problems,
        ..
    } = selection(&a.selection, &a.output, a.build_jobs)?;
    let problems = problems.len();
    let engine = Arc::new(a.selection.engine.connect().await?);
    let (events, rx) = mpsc::unbounded_channel();
    let (interrupts, irx) = mpsc::unbounded_channel();
    let shown = tokio::spawn(render::render(rx, interrupts));
    let times = orchestrate::build_images(engine, &set, &opts, irx, events).await;
    let _ = shown.await;
    render::print_preparation(&times);
    println!("  build logs under {}", opts.build_logs.display());
    Ok(ending(&Troubles {
        input_problems: problems + set.specs.failed.len(),
        run_problems: times.failed,
        ..Default::default()
    }))
}

async fn list(a: ListArgs) -> CliResult {
    let Inventory {
        set,
        problems,
        engine,
        listing,
        ..
    } = inventory(&a.selection).await?;
    let disk = match a.disk {
        true => Some(images::disk(&engine, &listing).await?),
        false => None,
    };
    let without = set.without_spec();
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&listing.file(without, disk))?
        );
    } else {
        print_table(&listing);
        for n in &without {
            println!("{:<44} no test spec: {}", n.instance_id, n.reason);
        }
        print_summary(&listing, disk.as_ref());
    }
    // Instances some of whose images cannot be named (their repository cannot be had).
    let unnamed: Vec<String> = (listing.instances.iter())
        .filter_map(|i| {
            let unknown: Vec<(&str, &str)> = (i.layers.iter())
                .filter_map(|l| match &l.state {
                    LayerState::Unknown { reason } => Some((l.layer.as_str(), reason.as_str())),
                    _ => None,
                })
                .collect();
            let (_, reason) = unknown.first()?;
            let layers: Vec<&str> = unknown.iter().map(|(layer, _)| *layer).collect();
            Some(format!(
                "{}: its {} image(s) cannot be named: {reason}",
                i.instance_id,
                layers.join(" and ")
            ))
        })
        .collect();
    super::print_problems("warning: ", &unnamed);
    Ok(ending(&Troubles {
        input_problems: problems + unnamed.len(),
        ..Default::default()
    }))
}

/// One line per instance: each layer's state, and what a stale or unknown one means.
fn print_table(l: &Listing) {
    let layers: Vec<ListedLayer> = [
        ListedLayer::Prebuilt,
        ListedLayer::Base,
        ListedLayer::Env,
        ListedLayer::History,
        ListedLayer::Instance,
    ]
    .into_iter()
    .filter(|layer| l.instances.iter().any(|i| i.state(*layer).is_some()))
    .collect();
    let mut header = format!("{:<44}", "instance");
    for layer in &layers {
        header.push_str(&format!(" {:<8}", layer.as_str()));
    }
    println!("{}", header.trim_end());
    for i in &l.instances {
        let mut line = format!("{:<44}", i.instance_id);
        for layer in &layers {
            let s = i.state(*layer).map_or("-", |s| s.as_str());
            line.push_str(&format!(" {s:<8}"));
        }
        println!("{}", line.trim_end());
        for layer in &i.layers {
            if let Some(o) = &layer.other_ca {
                println!(
                    "    {}: built {}: {}; {}",
                    layer.layer.as_str(),
                    with_or_without(o.built_with_ca_cert),
                    o.image,
                    use_it(o.built_with_ca_cert)
                );
                continue;
            }
            match &layer.state {
                LayerState::Unknown { reason } => {
                    println!("    {}: cannot be named: {reason}", layer.layer.as_str())
                }
                LayerState::Stale { found } => println!(
                    "    {}: only an older recipe's image: {}",
                    layer.layer.as_str(),
                    found.join(", ")
                ),
                _ => {}
            }
        }
    }
}

/// The totals under the table.
fn print_summary(l: &Listing, disk: Option<&Disk>) {
    let counts = l.layer_counts();
    let parts: Vec<String> = counts
        .iter()
        .map(|(layer, c)| {
            let mut s = format!("{} {} present", layer.as_str(), c.present);
            for (n, what) in [
                (c.stale, "stale"),
                (c.missing, "missing"),
                (c.unknown, "unknown"),
            ] {
                if n > 0 {
                    s.push_str(&format!(", {n} {what}"));
                }
            }
            s
        })
        .collect();
    println!(
        "{} instances, {} ready to run without a build; {}",
        l.instances.len(),
        l.ready(),
        parts.join("; ")
    );
    let other_ca = l.unused.iter().find_map(|u| u.other_ca.as_ref());
    let kept = l.unused.iter().filter(|u| u.other_ca.is_some()).count();
    let stale = (l.unused.iter())
        .filter(|u| !u.stale_for.is_empty() && u.other_ca.is_none())
        .count();
    let (of_ca, but) = match other_ca {
        Some(o) => (
            format!(
                "{kept} of the selection's recipe built {}, ",
                with_or_without(o.built_with_ca_cert)
            ),
            format!(" but those {kept}"),
        ),
        None => (String::new(), String::new()),
    };
    println!(
        "{} image(s) of the selection present; {} image(s) of swe-eval it does not use ({stale} stale, \
         {of_ca}the others of instances not selected); `swe-eval images prune` removes those{but}",
        l.used.len(),
        l.unused.len()
    );
    if let Some(o) = other_ca {
        println!(
            "{} instance(s) ready with the images built {}: {}",
            l.ready_with_other_ca(),
            with_or_without(o.built_with_ca_cert),
            use_it(o.built_with_ca_cert)
        );
    }
    if let Some(d) = disk {
        println!(
            "disk: {} for the selection's images (each layer once); {} more that prune would free",
            human_bytes(d.used_bytes),
            human_bytes(d.unused_alone_bytes)
        );
    }
}

async fn prune(a: PruneArgs) -> CliResult {
    let Inventory {
        names,
        problems,
        engine,
        listing,
        ..
    } = inventory(&a.selection).await?;
    let opts = images::PruneOptions {
        dry_run: a.dry_run,
        keep_volumes: a.keep_volumes,
    };
    let report = images::prune(&engine, &names, &listing, opts).await?;
    let (verb, done) = if a.dry_run {
        ("would remove", "would be removed")
    } else {
        ("removed", "removed")
    };
    for r in &report.swept.removed {
        println!("removed {r} (left to remove by a run that ended)");
    }
    for r in &report.removed {
        println!("{verb} {r}");
    }
    for (image, holder) in &report.held {
        println!("kept {image}: held by the live run {holder}");
    }
    for image in &report.in_use {
        println!("kept {image}: a container uses it");
    }
    for (image, built_with) in &report.other_ca {
        println!(
            "kept {image}: the selection's recipe built {} (a run {} uses it)",
            with_or_without(*built_with),
            if *built_with {
                "given --ca-cert"
            } else {
                "without --ca-cert"
            }
        );
    }
    let v = &report.volumes;
    for r in &v.removed {
        println!("{verb} volume {r}");
    }
    for (volume, holder) in &v.held {
        println!("kept volume {volume}: the live run {holder} holds its environment");
    }
    for volume in &v.in_use {
        println!("kept volume {volume}: a container uses it");
    }
    let errors: Vec<String> = (report.errors.iter())
        .chain(&report.swept.errors)
        .chain(&v.errors)
        .map(|(what, e)| format!("{what} not removed: {e}"))
        .collect();
    super::print_problems("warning: ", &errors);
    let other_ca = match report.other_ca.len() {
        0 => String::new(),
        n => format!(" and {n} of its recipe built with the CA bundle the other way"),
    };
    println!(
        "{} image(s) {done}; {} kept for live runs or containers; the selection's {} image(s){other_ca} kept",
        report.removed.len() + report.swept.removed.len(),
        report.held.len() + report.in_use.len(),
        listing.used.len()
    );
    if !a.keep_volumes {
        println!(
            "{} compiler cache volume(s) {done}; {} kept for live runs or containers; the selection's {} kept",
            v.removed.len(),
            v.held.len() + v.in_use.len(),
            v.used.len()
        );
    }
    Ok(ending(&Troubles {
        input_problems: problems,
        run_problems: errors.len(),
        ..Default::default()
    }))
}

async fn transfer(a: RegistryArgs, push: bool) -> CliResult {
    let Inventory {
        names,
        problems,
        engine,
        listing,
        ..
    } = inventory(&a.selection).await?;
    let report = if push {
        images::push_images(&engine, &listing.used, &a.registry).await
    } else {
        let wanted: std::collections::BTreeSet<String> =
            names.iter().flat_map(|n| n.all()).cloned().collect();
        let wanted: Vec<String> = wanted.into_iter().collect();
        images::pull_images(&engine, &wanted, &a.registry).await
    };
    let verb = if push { "pushed" } else { "pulled" };
    for (image, took) in &report.done {
        println!("{verb} {image} ({:.1} s)", took.as_secs_f64());
    }
    let errors: Vec<String> = (report.errors.iter())
        .map(|(image, e)| format!("{image}: {e}"))
        .collect();
    super::print_problems("warning: ", &errors);
    println!(
        "{} image(s) {verb} ({} failed)",
        report.done.len(),
        report.errors.len()
    );
    Ok(ending(&Troubles {
        input_problems: problems,
        run_problems: report.errors.len(),
        ..Default::default()
    }))
}

async fn export(a: ExportArgs) -> CliResult {
    // Before the listing, which can take a while: an archive in the way is said at once.
    images::may_write_archive(&a.output, a.force)?;
    let Inventory {
        problems,
        engine,
        listing,
        ..
    } = inventory(&a.selection).await?;
    let missing = listing.instances.len() - listing.ready();
    if missing > 0 {
        let other = listing.ready_with_other_ca();
        let hint = match listing.unused.iter().find_map(|u| u.other_ca.as_ref()) {
            Some(o) if other > 0 => format!(
                "; {other} of them have images built {}: {}",
                with_or_without(o.built_with_ca_cert),
                use_it(o.built_with_ca_cert)
            ),
            _ => String::new(),
        };
        eprintln!(
            "warning: {missing} selected instance(s) have no image to export (`swe-eval images list` names them){hint}"
        );
    }
    let report = images::export_images(&engine, &listing.used, &a.output, a.force).await?;
    println!(
        "wrote {}: {} images of {} instances, {} in {:.1} s",
        a.output.display(),
        report.images.len(),
        listing.ready(),
        human_bytes(report.bytes),
        report.took.as_secs_f64()
    );
    Ok(ending(&Troubles {
        input_problems: problems,
        run_problems: missing,
        ..Default::default()
    }))
}

async fn import(a: ImportArgs) -> CliResult {
    let engine = a.engine.connect().await?;
    let report = images::import_images(&engine, &a.archive).await?;
    println!(
        "loaded {} image(s) from {} ({}) in {:.1} s",
        report.images.len(),
        a.archive.display(),
        human_bytes(report.bytes),
        report.took.as_secs_f64()
    );
    Ok(ending(&Troubles::default()))
}

/// How an image of the selection's recipe but for the CA bundle was built.
fn with_or_without(built_with_ca_cert: bool) -> &'static str {
    if built_with_ca_cert {
        "with a CA bundle (--ca-cert), which this command was not given"
    } else {
        "without the CA bundle (--ca-cert) this command was given"
    }
}

/// What to do to use an image built with the CA bundle the other way.
fn use_it(built_with_ca_cert: bool) -> &'static str {
    if built_with_ca_cert {
        "run, list or export with --ca-cert (any bundle: only whether there is one counts) to use it"
    } else {
        "run, list or export without --ca-cert to use it"
    }
}

/// `1.2 GB`, `340.5 MB`, `12.0 kB` (powers of 1000).
pub fn human_bytes(n: u64) -> String {
    let units = ["B", "kB", "MB", "GB", "TB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1000.0 && u + 1 < units.len() {
        v /= 1000.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}
