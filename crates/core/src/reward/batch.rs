//! Rewards of many predictions at once, in parallel over all cores (rayon), in input order,
//! and their wire formats (JSON Lines with per-file detail, or CSV without it).

use std::collections::HashMap;
use std::sync::Arc;

use rayon::prelude::*;
use serde::Serialize;

use super::git::{self, GitError};
use super::{
    filelevel, search_replace, search_replace_reward, unidiff_reward, FileSimilarity, Files,
    RewardResult,
};
use crate::dataset::{Dataset, Instance};
use crate::predictions::Prediction;
use crate::repos::RepoSources;

/// Why one prediction got no reward; the others still do.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RewardError {
    /// The prediction names an instance the dataset does not have.
    #[error("instance {0} is not in the dataset")]
    UnknownInstance(String),
    /// The instance's files could not be read from its repository.
    #[error("{instance_id}: {source}")]
    Git {
        /// The instance whose files were wanted.
        instance_id: String,
        /// What git said.
        #[source]
        source: Arc<GitError>,
    },
    /// The gold patch does not apply to the files at the base commit (a bad row or repository).
    #[error(
        "{instance_id}: the gold patch does not apply to the files at {base_commit}: {source}"
    )]
    GoldDoesNotApply {
        /// The instance.
        instance_id: String,
        /// The commit the files were read at.
        base_commit: String,
        /// Why the patch did not apply.
        #[source]
        source: filelevel::ApplyError,
    },
}

/// Runs `f` on a pool of worker threads: `asked` (default: every core), cut to the cores
/// this process can use ([`crate::bounds::bound_workers`]); the reward is CPU work, so more
/// threads than cores would only take the machine from others. Returns what `f` returned and
/// the worker count as asked and used (say so when they differ: [`crate::bounds::Workers::note`]).
pub fn with_workers<R: Send>(
    asked: Option<usize>,
    f: impl FnOnce() -> R + Send,
) -> Result<(R, crate::bounds::Workers), rayon::ThreadPoolBuildError> {
    let workers = crate::bounds::bound_workers(asked, crate::bounds::cores());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(workers.used)
        .build()?;
    Ok((pool.install(f), workers))
}

/// Unified-diff rewards of `preds` against their instances' gold patches.
pub fn unidiff_rewards(
    dataset: &Dataset,
    preds: &[Prediction],
) -> Vec<Result<RewardResult, RewardError>> {
    preds
        .par_iter()
        .map(|p| {
            let inst = dataset
                .get(&p.instance_id)
                .ok_or_else(|| RewardError::UnknownInstance(p.instance_id.clone()))?;
            Ok(unidiff_reward(&inst.patch, p.patch()))
        })
        .collect()
}

/// What the search/replace reward needs of one instance: the original files (those the gold
/// patch touches, plus any the predictions edit that exist at the base commit) and the files
/// after the gold patch.
#[derive(Debug, Clone, Default)]
pub struct OracleFiles {
    /// The original files, by path.
    pub code_context: Files,
    /// The same files after the gold patch (absent when the patch deletes one).
    pub oracle_new_content: Files,
}

/// Reads the originals at `base_commit` and applies the gold patch to them.
pub fn oracle_files(
    inst: &Instance,
    extra_paths: &[String],
    source: &RepoSources,
) -> Result<OracleFiles, RewardError> {
    let git_err = |source| RewardError::Git {
        instance_id: inst.instance_id.clone(),
        source: Arc::new(source),
    };
    let set = crate::unidiff::parse(&inst.patch).unwrap_or_default();
    let gold: Vec<_> = set.files.iter().filter(|f| !f.is_binary_file).collect();
    let mut paths: Vec<String> = gold.iter().map(|f| f.path().to_string()).collect();
    for p in extra_paths {
        if !paths.contains(p) {
            paths.push(p.clone());
        }
    }
    let dir = git::locate(source, &inst.repo).map_err(git_err)?;
    let code_context = git::read_files(&dir, &inst.base_commit, &paths).map_err(git_err)?;
    let mut oracle_new_content = Files::new();
    for f in gold {
        let path = f.path();
        let original = code_context.get(path).map_or("", String::as_str);
        let new =
            filelevel::apply_file(original, f).map_err(|source| RewardError::GoldDoesNotApply {
                instance_id: inst.instance_id.clone(),
                base_commit: inst.base_commit.clone(),
                source,
            })?;
        oracle_new_content.insert(path.to_string(), new);
    }
    Ok(OracleFiles {
        code_context,
        oracle_new_content,
    })
}

/// Search/replace rewards of raw model outputs (the predictions' `model_patch`), reading
/// originals from local repositories; each instance's files are read once.
pub fn search_replace_rewards(
    dataset: &Dataset,
    preds: &[Prediction],
    source: &RepoSources,
) -> Vec<Result<RewardResult, RewardError>> {
    let mut by_instance: Vec<(&str, Vec<String>)> = Vec::new();
    for p in preds {
        let paths = search_replace::edited_paths(p.patch());
        match by_instance.iter_mut().find(|(id, _)| *id == p.instance_id) {
            Some((_, all)) => all.extend(paths),
            None => by_instance.push((&p.instance_id, paths)),
        }
    }
    let oracles: HashMap<&str, Result<OracleFiles, RewardError>> = by_instance
        .par_iter()
        .map(|(id, paths)| {
            let files = match dataset.get(id) {
                Some(inst) => oracle_files(inst, paths, source),
                None => Err(RewardError::UnknownInstance(id.to_string())),
            };
            (*id, files)
        })
        .collect();
    preds
        .par_iter()
        .map(|p| match &oracles[p.instance_id.as_str()] {
            Ok(f) => Ok(search_replace_reward(
                &f.code_context,
                &f.oracle_new_content,
                p.patch(),
            )),
            Err(e) => Err(e.clone()),
        })
        .collect()
}

/// One output row: the rewards wire format (JSON Lines; CSV without `files`), version
/// [`crate::wire::REWARDS_VERSION`], described in docs/formats.md.
#[derive(Debug, Clone, Serialize)]
pub struct RewardRecord<'a> {
    /// The prediction's instance.
    pub instance_id: &'a str,
    /// The prediction's model.
    pub model_name_or_path: &'a str,
    /// The prediction's sample number (0, 1, ...).
    pub sample: u32,
    /// The reference's similarity (see [`RewardResult::similarity`]).
    pub similarity: f64,
    /// -1 for a prediction that is not a valid edit, else `similarity`.
    pub reward: f64,
    /// `ok`, `empty`, `unparsable`, or the search/replace format error.
    pub format: String,
    /// Per-file similarities (JSON Lines only).
    pub files: &'a [FileSimilarity],
    /// [`crate::wire::REWARDS_VERSION`].
    pub format_version: u32,
}

impl<'a> RewardRecord<'a> {
    /// The row of prediction `p` with reward `r`.
    pub fn new(p: &'a Prediction, r: &'a RewardResult) -> Self {
        RewardRecord {
            instance_id: &p.instance_id,
            model_name_or_path: &p.model_name_or_path,
            sample: p.sample,
            similarity: r.similarity,
            reward: r.reward,
            format: r.format.as_string(),
            files: &r.files,
            format_version: crate::wire::REWARDS_VERSION,
        }
    }
}

/// JSON Lines, one record per line.
pub fn to_jsonl(records: &[RewardRecord<'_>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(records.len() * 256);
    for r in records {
        // Serializing plain strings and finite floats cannot fail.
        serde_json::to_writer(&mut out, r).expect("a reward record serializes");
        out.push(b'\n');
    }
    out
}

/// A JSON list of the same rows as [`to_jsonl`], one row per line, with a final newline.
pub fn to_json_list(records: &[RewardRecord<'_>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(records.len() * 256 + 4);
    out.push(b'[');
    for (i, r) in records.iter().enumerate() {
        out.extend_from_slice(if i == 0 { b"\n" } else { b",\n" });
        serde_json::to_writer(&mut out, r).expect("a reward record serializes");
    }
    out.extend_from_slice(b"\n]\n");
    out
}

/// CSV with a header, without the per-file column.
pub fn to_csv(records: &[RewardRecord<'_>]) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "instance_id",
        "model_name_or_path",
        "sample",
        "similarity",
        "reward",
        "format",
        crate::wire::FIELD,
    ])?;
    for r in records {
        w.write_record([
            r.instance_id,
            r.model_name_or_path,
            &r.sample.to_string(),
            &r.similarity.to_string(),
            &r.reward.to_string(),
            &r.format,
            &r.format_version.to_string(),
        ])?;
    }
    w.into_inner()
        .map_err(|e| csv::Error::from(std::io::Error::other(e.to_string())))
}
