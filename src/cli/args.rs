//! The argument groups several commands share, declared once and flattened into each
//! command's arguments: the dataset ([`DatasetArgs`] where it may be left out, [`DatasetFile`]
//! where it is required), how predictions execute
//! ([`ExecArgs`]: workers, output, timeout, network, images, engine), where images come from
//! ([`ImageArgs`], of which [`ImageSources`] alone for `images`) and where the jobs run
//! ([`EngineArgs`]). Each maps onto the library's
//! options; the defaults themselves live there (`orchestrate::RunOptions`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::engine::{EngineChoice, EngineKind};
use crate::hub::DEFAULT_SPLIT;
use crate::images::CacheLevel;
use crate::session::{ImageChoices, RunOptions};
use swe_eval_core::dataset::{Dataset, InputProblem, LoadError};
use swe_eval_core::paths::IoPlan;
use swe_eval_core::spec::Flavour;

/// The dataset, a file or a Hugging Face name, and its split, for the commands where it may
/// be left out (`run` and `validate`: the bundled mini benchmark; `compare` and `correlate`:
/// what the instance ids alone say). A command says what the rows are for through
/// `mut_arg("dataset", ...)` on its own arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct DatasetArgs {
    /// Dataset rows (JSON, JSON Lines or Parquet), or a Hugging Face dataset name such as
    /// SWE-bench/SWE-bench_Verified (downloaded once into the Hugging Face cache; HF_ENDPOINT,
    /// HF_HOME, HF_TOKEN are honoured).
    #[arg(long, short = 'd', visible_alias = "dataset_name")]
    pub dataset: Option<PathBuf>,
    /// The split of a Hugging Face dataset name given as --dataset.
    #[arg(long, default_value = DEFAULT_SPLIT)]
    pub split: String,
}

impl DatasetArgs {
    /// The rows and the problems met reading them, when a dataset was given.
    pub fn load(&self) -> Result<Option<(Dataset, Vec<InputProblem>)>, LoadError> {
        self.dataset
            .as_deref()
            .map(|d| crate::hub::load_dataset_split(d, &self.split))
            .transpose()
    }
}

/// The dataset, a file or a Hugging Face name, and its split, for the commands that cannot
/// do without one (`spec`, `reward`, `grade`).
#[derive(Debug, Clone, clap::Args)]
pub struct DatasetFile {
    /// Dataset rows (JSON, JSON Lines or Parquet), or a Hugging Face dataset name such as
    /// SWE-bench/SWE-bench_Verified (downloaded once into the Hugging Face cache; HF_ENDPOINT,
    /// HF_HOME, HF_TOKEN are honoured).
    #[arg(long, short = 'd', visible_alias = "dataset_name")]
    pub dataset: PathBuf,
    /// The split of a Hugging Face dataset name given as --dataset.
    #[arg(long, default_value = DEFAULT_SPLIT)]
    pub split: String,
}

impl DatasetFile {
    /// The rows and the problems met reading them.
    pub fn load(&self) -> Result<(Dataset, Vec<InputProblem>), LoadError> {
        crate::hub::load_dataset_split(&self.dataset, &self.split)
    }
}

/// `--reachable`: every reachable instance in one command; shared by `run`, `validate` and
/// `images`.
#[derive(Debug, Clone, clap::Args)]
pub struct Reachable {
    /// Only the instances that can run from local sources: complete rows (a test patch and
    /// FAIL_TO_PASS) whose repository the --mirrors folder or a --repo holds; with -i, those
    /// of the instances given. What is left out is counted per repository on stderr. The same
    /// command selects the same instances, so a run with --run-id resumes as any run does.
    #[arg(long)]
    pub reachable: bool,
}

/// How predictions execute: shared by `run` and `validate`.
#[derive(Debug, Clone, clap::Args)]
pub struct ExecArgs {
    /// Only these instances (space- or comma-separated).
    #[arg(long, short = 'i', visible_alias = "instance_ids", num_args = 1.., value_delimiter = ',')]
    pub instance_ids: Vec<String>,
    /// Containers run at once [default: min(4, cores)] [allowed: 1 to 1024]. At most the
    /// engine's CPUs are used (each job is given one CPU; more at once would only share them
    /// and make timeouts likelier); the run says so when it uses fewer.
    #[arg(long, short = 'j', visible_alias = "max_workers", value_parser = super::values::workers())]
    pub workers: Option<usize>,
    /// Output folder: logs, run summaries and per-prediction files.
    #[arg(
        long,
        short = 'o',
        visible_alias = "report_dir",
        default_value = "results"
    )]
    pub output: PathBuf,
    /// Per-prediction timeout in seconds, from container start [default: 1800; 30 for the
    /// mini benchmark's rows, from any file] [allowed: 1 to 604800].
    #[arg(long, short = 't', value_parser = super::values::timeout_secs())]
    pub timeout: Option<u64>,
    /// Give the test containers network access (off by default).
    #[arg(long)]
    pub network: bool,
    /// How images are built, kept and removed.
    #[command(flatten)]
    pub images: ImageArgs,
    /// Where the jobs run.
    #[command(flatten)]
    pub engine: EngineArgs,
}

impl ExecArgs {
    /// The library's run options for these arguments (`run_id` and `strict` come from the
    /// command's own flags).
    pub fn options(&self, run_id: Option<String>, strict: bool) -> RunOptions {
        RunOptions {
            output: self.output.clone(),
            run_id,
            workers: self.workers,
            timeout: self.timeout.map(Duration::from_secs),
            strict,
            network: self.network,
            images: self.images.choices(),
            keep: self.images.cache_level,
            engine: self.engine.choice(),
        }
    }

    /// What a command with these arguments reads and writes, for the clobber check.
    pub fn io(&self, dataset: Option<&Path>) -> IoPlan {
        self.images.io(&self.output, dataset)
    }
}

/// Where the jobs run.
#[derive(Debug, Clone, clap::Args)]
pub struct EngineArgs {
    /// Where the jobs run.
    #[arg(long = "engine", value_enum, default_value = "docker")]
    pub kind: EngineKind,
    /// With `--engine swarm`: a registry every node can pull from; the run pushes the images
    /// it uses there. Without it, every node must already have them.
    #[arg(long, value_name = "HOST:PORT")]
    pub registry: Option<String>,
    /// The containers' CPU weight against the rest of this machine (100: a process's
    /// default). Below 100 the jobs' tests and builds take the cores only after other work
    /// (`serve`'s answers, say), above it before. Every container goes under a cgroup
    /// `swe-eval` whose weight is written here: Docker on this machine with its cgroupfs
    /// driver, as root. Unset: the daemon's default [allowed: 1 to 10000].
    #[arg(long, value_name = "WEIGHT", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub cpu_weight: Option<u32>,
}

impl EngineArgs {
    /// The choice as the library takes it (checked when the engine connects).
    pub fn choice(&self) -> EngineChoice {
        EngineChoice {
            kind: self.kind,
            registry: self.registry.clone(),
            cpu_weight: self.cpu_weight,
        }
    }
}

impl clap::ValueEnum for EngineKind {
    fn value_variants<'a>() -> &'a [Self] {
        &[EngineKind::Docker, EngineKind::Swarm, EngineKind::Podman]
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let help = match self {
            EngineKind::Docker => "Containers on the daemon at DOCKER_HOST (or the local socket)",
            EngineKind::Swarm => {
                "One-shot services on the Docker Swarm cluster that daemon manages (images are \
                 built there)"
            }
            EngineKind::Podman => {
                "Containers on a Podman service (its Docker-compatible API): DOCKER_HOST, else \
                 CONTAINER_HOST, else the user's rootless socket \
                 ($XDG_RUNTIME_DIR/podman/podman.sock), else the rootful one \
                 (/run/podman/podman.sock). A rootless service may apply no CPU, memory or pids \
                 limits: the run says so (README: Running without Docker)"
            }
        };
        Some(clap::builder::PossibleValue::new(self.as_str()).help(help))
    }
}

/// How images are built, kept and removed; shared by `run` and `validate`.
#[derive(Debug, Clone, clap::Args)]
pub struct ImageArgs {
    /// Where images and repositories come from.
    #[command(flatten)]
    pub sources: ImageSources,
    /// Which images to keep after the run. Only images this run created are removed; one
    /// another live run still uses is kept until that run ends.
    #[arg(long, visible_alias = "cache_level", value_enum, default_value_t = CacheLevel::Env)]
    pub cache_level: CacheLevel,
    /// Image builds at once [default: half the cores, 1 to 4]. Images are prepared while the
    /// jobs run (an instance's jobs start as soon as its image is ready), so builds and tests
    /// share the machine; they are bounded apart because they load it differently: a test is
    /// mostly CPU, a build mostly the daemon writing layers, git and installers on disk and
    /// network. --workers bounds the tests. [allowed: 1 to 64]
    #[arg(long, value_name = "N", value_parser = super::values::build_jobs())]
    pub build_jobs: Option<usize>,
}

/// Where images and repositories come from; shared by the commands that build or name
/// images (`run`, `validate`, `images`).
#[derive(Debug, Clone, clap::Args)]
pub struct ImageSources {
    /// Take a repository from a local clone, bundle or URL instead of GitHub (repeatable).
    #[arg(long = "repo", value_name = "OWNER/NAME=PATH_OR_URL")]
    pub repos: Vec<String>,
    /// A folder of mirrors: `<owner>__<name>` clones or `.bundle` files.
    #[arg(long, env = "SWE_EVAL_MIRRORS")]
    pub mirrors: Option<PathBuf>,
    /// Registry/namespace of prebuilt official images (`''` builds locally).
    #[arg(long, value_parser = namespace)]
    pub namespace: Option<String>,
    /// A PEM certificate bundle that image builds trust (for a TLS-intercepting proxy).
    #[arg(long)]
    pub ca_cert: Option<PathBuf>,
    /// Image flavour: `official` (conda, as the official images) or `debian` (offline base)
    /// [default: official; debian for the mini benchmark's rows, from any file].
    #[arg(long, env = "SWE_EVAL_FLAVOUR", value_parser = super::values::flavour())]
    pub flavour: Option<Flavour>,
}

impl ImageArgs {
    /// The files a command with these options reads and writes: `output`, `--dataset` and
    /// what the image sources read.
    pub fn io(&self, output: &Path, dataset: Option<&Path>) -> IoPlan {
        let mut plan =
            IoPlan::new().output(swe_eval_core::paths::Output::Folder(output.to_path_buf()));
        if let Some(d) = dataset {
            plan = plan.input("--dataset", d);
        }
        self.sources.inputs(plan)
    }

    /// The choices as the library takes them.
    pub fn choices(&self) -> ImageChoices {
        self.sources.choices(self.build_jobs)
    }
}

impl ImageSources {
    /// Adds the files these options read to `plan` (the repositories are only read by git).
    pub fn inputs(&self, plan: IoPlan) -> IoPlan {
        match &self.ca_cert {
            Some(ca) => plan.input("--ca-cert", ca),
            None => plan,
        }
    }

    /// The choices as the library takes them, with `build_jobs` image builds at once.
    pub fn choices(&self, build_jobs: Option<usize>) -> ImageChoices {
        ImageChoices {
            repos: self.repos.clone(),
            mirrors: self.mirrors.clone(),
            namespace: self.namespace.clone(),
            ca_cert: self.ca_cert.clone(),
            flavour: self.flavour,
            build_jobs,
        }
    }
}

impl clap::ValueEnum for CacheLevel {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            CacheLevel::None,
            CacheLevel::Base,
            CacheLevel::Env,
            CacheLevel::Instance,
        ]
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let (name, help) = match self {
            CacheLevel::None => ("none", "remove every image the run built or pulled"),
            CacheLevel::Base => ("base", "keep base images"),
            CacheLevel::Env => ("env", "keep base and environment images"),
            CacheLevel::Instance => ("instance", "keep every image"),
        };
        Some(clap::builder::PossibleValue::new(name).help(help))
    }
}

/// `--namespace`: empty, or what an image name can start with (refused here, exit code 2,
/// rather than by the daemon's answer to every lookup).
fn namespace(s: &str) -> Result<String, crate::images::NamespaceError> {
    crate::images::check_namespace(s).map(|()| s.to_string())
}
