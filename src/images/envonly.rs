//! Environment images on their own, without the instance images above them: what a check of
//! the environments (`swe-eval spec --check-env`) builds and inspects.

use std::time::{Duration, Instant};

use super::build_one::{build_env, ensure_base_recipe};
use super::{BuildChain, BuildOptions, ImageFailure, Layer, Prepared};
use crate::engine::Engine;

/// How an environment image came to be.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvOutcome {
    /// False when the tag already existed.
    pub built: bool,
    /// Time spent building it (zero when it existed), the base not included.
    pub build_time: Duration,
}

/// Makes the base and the environment image of `chain` (for `repo`'s instances) present
/// (built when missing).
pub async fn ensure_env<E: Engine>(
    engine: &E,
    chain: &BuildChain,
    repo: &str,
    opts: &BuildOptions,
    out: &mut Prepared,
) -> Result<EnvOutcome, ImageFailure> {
    ensure_base_recipe(engine, &chain.base, opts, out).await?;
    let env = &chain.env;
    let before = out.created.len();
    let t0 = Instant::now();
    build_env(engine, env, repo, opts, out).await?;
    let built = out.created[before..]
        .iter()
        .any(|(t, l)| *l == Layer::Env && *t == env.tag);
    Ok(EnvOutcome {
        built,
        build_time: if built { t0.elapsed() } else { Duration::ZERO },
    })
}
