//! The image plan: which base, environment and instance images each instance needs, from
//! its test spec (environment images shared by every instance with the same tag).

use std::collections::BTreeMap;

use crate::engine::TarEntry;
use swe_eval_core::spec::{DebianRelease, Flavour, TestSpec};

use super::with_namespace;

/// How the base of a build chain is made.
#[derive(Debug, Clone, PartialEq)]
pub enum BaseRecipe {
    /// Bootstrapped offline with debootstrap; `alias` is the name the environment Dockerfile
    /// starts `FROM` (given to the bootstrapped image as a second tag).
    Debian {
        /// The Debian release bootstrapped.
        release: DebianRelease,
        /// The second tag: the name the environment Dockerfile starts `FROM`.
        alias: String,
    },
    /// Built from a Dockerfile (the official conda base; needs a registry for its `FROM`).
    Dockerfile {
        /// The image's tag.
        tag: String,
        /// The Dockerfile's text.
        dockerfile: String,
    },
}

impl BaseRecipe {
    /// The name environment images start from.
    pub fn image(&self) -> &str {
        match self {
            BaseRecipe::Debian { alias, .. } => alias,
            BaseRecipe::Dockerfile { tag, .. } => tag,
        }
    }
}

/// The environment image of a chain: shared by every instance with the same tag.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvRecipe {
    /// The image's name.
    pub tag: String,
    /// Its Dockerfile.
    pub dockerfile: String,
    /// The other files of its build context.
    pub files: Vec<TarEntry>,
}

/// The instance image of a chain.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceRecipe {
    /// The image's name.
    pub tag: String,
    /// Its Dockerfile.
    pub dockerfile: String,
    /// The other files of its build context.
    pub files: Vec<TarEntry>,
    /// The image needs the repository at `base_commit`: it is built from a history image
    /// (made on the host's git, shared along the repository's chain, see
    /// `images/history/`) that its Dockerfile's `FROM <environment>` is replaced by.
    pub needs_repo: bool,
    /// The build needs the network even with the repository in the context (its install
    /// step fetches from PyPI, as the official build does).
    pub network: bool,
    /// Its install compiles (the environment has a compiler and ccache): built with a
    /// compiler cache shared by the repository's instance builds on the same environment
    /// (`images::compiler_cache_volume`).
    pub compiler_cache: bool,
}

/// Base, environment and instance images built locally.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildChain {
    /// The base image.
    pub base: BaseRecipe,
    /// The environment image.
    pub env: EnvRecipe,
    /// The instance image.
    pub instance: InstanceRecipe,
}

/// The images of one instance.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceImages {
    /// The instance.
    pub instance_id: String,
    /// `owner/name`, for the repository snapshot.
    pub repo: String,
    /// The commit its repository is checked out at.
    pub base_commit: String,
    /// A ready image (the row's own, or an official one, namespace applied): used when
    /// present, pulled when missing.
    pub prebuilt: Option<String>,
    /// Built when there is no prebuilt image or it cannot be had; `None` for rows run as is.
    pub build: Option<BuildChain>,
}

/// Options of [`plan`].
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// Registry and namespace replacing `swebench` in official names (`--namespace`).
    pub namespace: Option<String>,
    /// Official flavour: try the prebuilt official image before building (default on).
    pub skip_official_pull: bool,
    /// Architecture of official names.
    pub arch: Option<String>,
}

impl InstanceImages {
    /// The images of `spec`'s instance.
    pub fn from_spec(spec: &TestSpec, opts: &PlanOptions) -> InstanceImages {
        let ns = opts.namespace.as_deref();
        let files = |fs: Vec<swe_eval_core::spec::ContextFile>| -> Vec<TarEntry> {
            fs.into_iter()
                .map(|f| TarEntry {
                    path: f.path,
                    contents: f.contents,
                    mode: f.mode,
                })
                .collect()
        };
        let mut out = InstanceImages {
            instance_id: spec.instance_id.clone(),
            repo: spec.repo.clone(),
            base_commit: spec.base_commit.clone(),
            prebuilt: None,
            build: None,
        };
        if spec.eval_script_from_row {
            if let Some(img) = &spec.row_image {
                out.prebuilt = Some(match ns {
                    Some(ns) => with_namespace(img, ns),
                    None => img.clone(),
                });
                return out;
            }
        }
        let base = match (spec.flavour, spec.debian_release) {
            (Flavour::Debian, Some(release)) => BaseRecipe::Debian {
                release,
                alias: spec.base_image_tag.clone(),
            },
            _ => BaseRecipe::Dockerfile {
                tag: spec.base_image_tag.clone(),
                dockerfile: swe_eval_core::spec::official_base_dockerfile(
                    opts.arch.as_deref().unwrap_or("x86_64"),
                ),
            },
        };
        if spec.flavour == Flavour::Official && !opts.skip_official_pull {
            out.prebuilt = Some(spec.official_image_name(ns));
        }
        out.build = Some(BuildChain {
            base,
            env: EnvRecipe {
                tag: spec.env_image_tag.clone(),
                dockerfile: spec.env_dockerfile.clone(),
                files: files(spec.env_context_files()),
            },
            instance: InstanceRecipe {
                tag: spec.instance_image_tag.clone(),
                dockerfile: spec.instance_dockerfile.clone(),
                files: files(spec.instance_context_files()),
                needs_repo: spec.instance_needs_repo_in_context(),
                network: spec.instance_build_network,
                compiler_cache: spec.compiles(),
            },
        });
        out
    }
}

/// The images every instance needs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImagePlan {
    /// The instances, in dataset order.
    pub instances: Vec<InstanceImages>,
}

/// The image plan of `specs`.
pub fn plan(specs: &[TestSpec], opts: &PlanOptions) -> ImagePlan {
    ImagePlan {
        instances: specs
            .iter()
            .map(|s| InstanceImages::from_spec(s, opts))
            .collect(),
    }
}

impl ImagePlan {
    /// Distinct environment images and how many instances share each.
    pub fn env_images(&self) -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for i in &self.instances {
            if let Some(b) = &i.build {
                *m.entry(b.env.tag.clone()).or_default() += 1;
            }
        }
        m
    }
}
