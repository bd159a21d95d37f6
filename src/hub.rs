//! Datasets named as on the Hugging Face Hub (`SWE-bench/SWE-bench_Verified`,
//! `princeton-nlp/SWE-bench_Verified`, `SWE-bench/SWE-bench_Lite`, ...): the Parquet files of
//! one split are downloaded once into the Hugging Face cache and read from there like any
//! Parquet dataset.
//!
//! Which files: a dataset repository keeps a split as `data/<split>-NNNNN-of-NNNNN.parquet` on
//! its `main` branch (the `data/<split>-*` pattern SWE-bench's dataset cards declare); a
//! dataset kept in another format has the hub's own conversion on the `refs/convert/parquet`
//! branch, as `default/<split>/NNNN.parquet`. The file list comes from the hub's API
//! (`/api/datasets/<name>/revision/<branch>`); the files are fetched through `hf-hub`, which
//! keeps the cache layout of the Hugging Face tools (`datasets--<owner>--<name>/` with
//! `snapshots/<commit>/<path>` and `refs/<branch>`), so a dataset the Python tools already
//! downloaded is found, and the other way round.
//!
//! Settings come from the environment, as the Hugging Face tools read them ([`HubConfig`]):
//! `HF_ENDPOINT`, `HF_HUB_CACHE` / `HF_HOME`, `HF_TOKEN` (else the token file that
//! `huggingface-cli login` writes), `HF_HUB_OFFLINE`. A split already in the cache is used
//! without asking the hub, so only the first run needs the network. With no network the error
//! says which file to download and where to put it.

use std::path::{Path, PathBuf};

use hf_hub::api::sync::ApiBuilder;
use hf_hub::{Cache, Repo, RepoType};
use swe_eval_core::dataset::{self, Dataset, InputProblem, LoadError};

/// The split of a Hugging Face dataset name when none is given (SWE-bench ships `test`).
pub const DEFAULT_SPLIT: &str = "test";

/// The branch datasets are kept on.
const MAIN: &str = "main";
/// The branch where the hub keeps its Parquet conversion of a dataset.
const CONVERTED: &str = "refs/convert/parquet";

/// Where and how to reach the hub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubConfig {
    /// `HF_ENDPOINT`, default `https://huggingface.co` (no trailing slash).
    pub endpoint: String,
    /// The hub cache: `HF_HUB_CACHE`, else `$HF_HOME/hub`, where `HF_HOME` defaults to
    /// `$XDG_CACHE_HOME/huggingface` or `~/.cache/huggingface`.
    pub cache: PathBuf,
    /// `HF_TOKEN`, else the contents of `HF_TOKEN_PATH` or `$HF_HOME/token`.
    pub token: Option<String>,
    /// `HF_HUB_OFFLINE` set to 1/true/yes/on: the cache only.
    pub offline: bool,
    /// Draw download progress bars (on a terminal).
    pub progress: bool,
}

impl HubConfig {
    /// From the process environment.
    pub fn from_env() -> Self {
        let mut c = Self::from_vars(|k| std::env::var(k).ok());
        c.progress = std::io::IsTerminal::is_terminal(&std::io::stderr());
        c
    }

    /// From the variables `var` returns (empty values count as unset), as the Hugging Face
    /// tools read them. The token file is read when no `HF_TOKEN` is given.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        let get = |k: &str| var(k).filter(|v| !v.trim().is_empty());
        let home = get("HF_HOME").map(PathBuf::from).unwrap_or_else(|| {
            get("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| get("HOME").map(|h| Path::new(&h).join(".cache")))
                .unwrap_or_else(|| PathBuf::from(".cache"))
                .join("huggingface")
        });
        let cache = get("HF_HUB_CACHE")
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join("hub"));
        let token = get("HF_TOKEN").or_else(|| {
            let file = get("HF_TOKEN_PATH")
                .map(PathBuf::from)
                .unwrap_or_else(|| home.join("token"));
            let t = std::fs::read_to_string(file).ok()?;
            Some(t.trim().to_string()).filter(|t| !t.is_empty())
        });
        let endpoint = get("HF_ENDPOINT")
            .unwrap_or_else(|| "https://huggingface.co".to_string())
            .trim_end_matches('/')
            .to_string();
        let offline = get("HF_HUB_OFFLINE").is_some_and(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "1" | "true" | "yes" | "on"
            )
        });
        HubConfig {
            endpoint,
            cache,
            token,
            offline,
            progress: false,
        }
    }
}

/// Why a split could not be had.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HubError(String);

/// True when `s` reads as a hub repository id (`owner/name`) rather than a file name: two
/// parts of letters, digits, `-`, `_` and `.`, the name not ending in a data file extension.
pub fn is_repo_id(s: &str) -> bool {
    let mut parts = s.split('/');
    let (Some(owner), Some(name), None) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let part = |p: &str| {
        !p.is_empty()
            && p.len() <= 96
            && !p.starts_with(['.', '-'])
            && !p.ends_with('.')
            && !p.contains("..")
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    let file = [".json", ".jsonl", ".ndjson", ".parquet", ".csv"]
        .iter()
        .any(|ext| name.to_ascii_lowercase().ends_with(ext));
    part(owner) && part(name) && !file
}

/// A split name the hub could have (`test`, `dev`, `train`, ...).
fn is_split(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !s.starts_with('.')
}

/// The cache folder of dataset `name` (as the Hugging Face tools name it).
pub fn repo_dir(cache: &Path, name: &str) -> PathBuf {
    cache.join(format!("datasets--{}", name.replace('/', "--")))
}

/// Of a repository's files (paths as the hub lists them), those of `split` on `branch`,
/// sorted: `data/<split>-*.parquet` on `main`, `default/<split>/*.parquet` on the conversion
/// branch.
pub fn split_files<'a>(
    files: impl IntoIterator<Item = &'a str>,
    split: &str,
    branch: &str,
) -> Vec<String> {
    let mut out: Vec<String> = files
        .into_iter()
        .filter(|f| {
            let Some(rest) = (if branch == CONVERTED {
                f.strip_prefix("default/")
                    .and_then(|r| r.strip_prefix(split))
                    .and_then(|r| r.strip_prefix('/'))
            } else {
                f.strip_prefix("data/")
                    .and_then(|r| r.strip_prefix(split))
                    .and_then(|r| r.strip_prefix('-'))
            }) else {
                return false;
            };
            rest.ends_with(".parquet") && !rest.contains('/')
        })
        .map(str::to_string)
        .collect();
    out.sort();
    out
}

/// The files of `split` already in the cache, found without the network: in the snapshot
/// `main` points to, then the conversion branch's, then any other snapshot (one put there by
/// hand, as the offline error suggests).
pub fn cached_split(cache: &Path, name: &str, split: &str) -> Option<Vec<PathBuf>> {
    let dir = repo_dir(cache, name);
    let mut snapshots = Vec::new();
    for branch in [MAIN, CONVERTED] {
        if let Ok(commit) = std::fs::read_to_string(dir.join("refs").join(branch)) {
            snapshots.push((branch, dir.join("snapshots").join(commit.trim())));
        }
    }
    if let Ok(entries) = std::fs::read_dir(dir.join("snapshots")) {
        let mut others: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        others.sort();
        for s in others {
            snapshots.push((MAIN, s.clone()));
            snapshots.push((CONVERTED, s));
        }
    }
    for (branch, snapshot) in snapshots {
        let listed = list_below(&snapshot);
        let found: Vec<PathBuf> = split_files(listed.iter().map(String::as_str), split, branch)
            .into_iter()
            .map(|f| snapshot.join(f))
            // A link to a blob that never finished downloading is not there.
            .filter(|p| p.is_file())
            .collect();
        if !found.is_empty() {
            return Some(found);
        }
    }
    None
}

/// Relative paths (with `/`) of the files under `root`, two levels deep at most (enough for
/// `data/x.parquet` and `default/<split>/x.parquet`).
fn list_below(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![(root.to_path_buf(), String::new(), 0)];
    while let Some((dir, prefix, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let rel = format!("{prefix}{name}");
            if e.path().is_dir() {
                if depth < 2 {
                    stack.push((e.path(), format!("{rel}/"), depth + 1));
                }
            } else {
                out.push(rel);
            }
        }
    }
    out
}

/// The Parquet files of `split` of dataset `name`: from the cache when they are there, else
/// downloaded into it from the hub.
pub fn fetch_split(cfg: &HubConfig, name: &str, split: &str) -> Result<Vec<PathBuf>, HubError> {
    if !is_repo_id(name) {
        return Err(HubError(format!(
            "{name} is neither a file nor a Hugging Face dataset name (owner/name)"
        )));
    }
    if !is_split(split) {
        return Err(HubError(format!(
            "--split {split:?}: a split is a plain name such as test, dev or train"
        )));
    }
    if let Some(files) = cached_split(&cfg.cache, name, split) {
        return Ok(files);
    }
    if cfg.offline {
        return Err(offline(cfg, name, split, "HF_HUB_OFFLINE is set"));
    }
    let api = ApiBuilder::from_cache(Cache::new(cfg.cache.clone()))
        .with_endpoint(cfg.endpoint.clone())
        .with_token(cfg.token.clone())
        .with_progress(cfg.progress)
        .build()
        .map_err(|e| HubError(format!("cannot set up a Hugging Face Hub client: {e}")))?;
    let mut seen = Vec::new();
    for branch in [MAIN, CONVERTED] {
        let repo = api.repo(Repo::with_revision(
            name.to_string(),
            RepoType::Dataset,
            branch.to_string(),
        ));
        let info = match repo.info() {
            Ok(info) => info,
            // A dataset without a conversion branch: what `main` had is all there is.
            Err(_) if branch == CONVERTED => break,
            Err(e) => return Err(cannot_reach(cfg, name, split, &e)),
        };
        let listed: Vec<&str> = info.siblings.iter().map(|s| s.rfilename.as_str()).collect();
        let wanted = split_files(listed.iter().copied(), split, branch);
        if wanted.is_empty() {
            seen.extend(listed.iter().map(|f| f.to_string()));
            continue;
        }
        let mut paths = Vec::with_capacity(wanted.len());
        for file in &wanted {
            let path = repo.get(file).map_err(|e| {
                HubError(format!(
                    "cannot download {file} of dataset {name} from {}: {e}{}",
                    cfg.endpoint,
                    hint(cfg, name, split)
                ))
            })?;
            paths.push(path);
        }
        return Ok(paths);
    }
    seen.sort();
    seen.dedup();
    Err(HubError(format!(
        "dataset {name} at {} has no Parquet files of split {split:?} (looked for data/{split}-*.parquet on main and default/{split}/*.parquet on {CONVERTED}; files: {})",
        cfg.endpoint,
        if seen.is_empty() { "none".to_string() } else { seen.join(", ") }
    )))
}

/// The error when the hub cannot be asked.
fn cannot_reach(
    cfg: &HubConfig,
    name: &str,
    split: &str,
    e: &hf_hub::api::sync::ApiError,
) -> HubError {
    let text = e.to_string();
    let why = if text.contains("401") || text.contains("403") {
        format!("{text} (a gated or private dataset needs HF_TOKEN, or `huggingface-cli login`)")
    } else if text.contains("404") {
        format!("{text} (is {name} spelled right?)")
    } else {
        text
    };
    offline(cfg, name, split, &why)
}

/// The split is neither in the cache nor to be had from the hub: say what to download and
/// where to put it.
fn offline(cfg: &HubConfig, name: &str, split: &str, why: &str) -> HubError {
    HubError(format!(
        "dataset {name} (split {split}) is not in the cache {} and cannot be downloaded from {}: {why}{}",
        cfg.cache.display(),
        cfg.endpoint,
        hint(cfg, name, split)
    ))
}

/// What to do without the network.
fn hint(cfg: &HubConfig, name: &str, split: &str) -> String {
    let file = format!("data/{split}-00000-of-00001.parquet");
    format!(
        ".\nWithout network: download {}/datasets/{name}/resolve/{MAIN}/{file} on a machine that has it, then pass the file as --dataset FILE, or put it at {} where every later run finds it.",
        cfg.endpoint,
        repo_dir(&cfg.cache, name)
            .join("snapshots")
            .join("manual")
            .join(&file)
            .display()
    )
}

/// Loads `--dataset` as the commands take it: a file, or else a Hugging Face dataset name
/// (`SWE-bench/SWE-bench_Verified`) whose `split` is fetched once into the Hugging Face cache
/// (settings from the environment, [`HubConfig::from_env`]) and read as Parquet, its files in
/// order ([`swe_eval_core::dataset::load_dataset_files`]).
pub fn load_dataset_split(
    arg: &Path,
    split: &str,
) -> Result<(Dataset, Vec<InputProblem>), LoadError> {
    let name = arg.to_string_lossy();
    if arg.exists() || !is_repo_id(&name) {
        return dataset::load_dataset(arg);
    }
    let files = fetch_split(&HubConfig::from_env(), &name, split)
        .map_err(|e| LoadError::Fetch(Box::new(e)))?;
    dataset::load_dataset_files(&files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_ids_are_told_from_file_names() {
        for id in [
            "SWE-bench/SWE-bench_Verified",
            "princeton-nlp/SWE-bench_Verified",
            "SWE-bench/SWE-bench_Lite",
            "a/b.c",
        ] {
            assert!(is_repo_id(id), "{id}");
        }
        for not in [
            "verified.parquet",
            "data/verified.jsonl",
            "data/x.JSON",
            "a/b/c",
            "/abs/path",
            "./x",
            "../x/y",
            "a/",
            "a/.hidden",
            "a/b c",
            "",
        ] {
            assert!(!is_repo_id(not), "{not}");
        }
        assert!(is_split("test") && is_split("dev") && !is_split("../x") && !is_split(""));
    }

    #[test]
    fn a_split_is_data_files_on_main_or_the_converted_branch() {
        let files = [
            "README.md",
            "data/test-00001-of-00002.parquet",
            "data/test-00000-of-00002.parquet",
            "data/dev-00000-of-00001.parquet",
            "data/test_extra-00000-of-00001.parquet",
            "data/sub/test-1.parquet",
            "default/test/0000.parquet",
        ];
        assert_eq!(
            split_files(files, "test", MAIN),
            [
                "data/test-00000-of-00002.parquet",
                "data/test-00001-of-00002.parquet"
            ]
        );
        assert_eq!(
            split_files(files, "dev", MAIN),
            ["data/dev-00000-of-00001.parquet"]
        );
        assert_eq!(
            split_files(files, "test", CONVERTED),
            ["default/test/0000.parquet"]
        );
        assert!(split_files(files, "train", MAIN).is_empty());
    }

    #[test]
    fn settings_are_read_as_the_hugging_face_tools_read_them() {
        let home = tempfile::tempdir().unwrap();
        let vars = |pairs: &[(&str, String)]| {
            let pairs: Vec<(String, String)> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect();
            HubConfig::from_vars(move |k| {
                pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
            })
        };
        let d = vars(&[("HOME", "/home/u".into())]);
        assert_eq!(d.endpoint, "https://huggingface.co");
        assert_eq!(d.cache, Path::new("/home/u/.cache/huggingface/hub"));
        assert!(!d.offline);
        let x = vars(&[
            ("HOME", "/home/u".into()),
            ("XDG_CACHE_HOME", "/xdg".into()),
        ]);
        assert_eq!(x.cache, Path::new("/xdg/huggingface/hub"));

        let hf_home = home.path().to_string_lossy().into_owned();
        std::fs::write(home.path().join("token"), "hf_from_file\n").unwrap();
        let c = vars(&[
            ("HF_HOME", hf_home.clone()),
            ("HF_ENDPOINT", "http://127.0.0.1:9/".into()),
            ("HF_HUB_OFFLINE", "1".into()),
        ]);
        assert_eq!(c.endpoint, "http://127.0.0.1:9");
        assert_eq!(c.cache, home.path().join("hub"));
        assert_eq!(c.token.as_deref(), Some("hf_from_file"));
        assert!(c.offline);
        let t = vars(&[
            ("HF_HOME", hf_home),
            ("HF_TOKEN", "hf_env".into()),
            ("HF_HUB_CACHE", "/elsewhere".into()),
            ("HF_HUB_OFFLINE", "0".into()),
        ]);
        assert_eq!(t.token.as_deref(), Some("hf_env"));
        assert_eq!(t.cache, Path::new("/elsewhere"));
        assert!(!t.offline);
    }

    #[test]
    fn offline_the_error_names_the_file_and_where_it_goes_and_that_place_works() {
        let cache = tempfile::tempdir().unwrap();
        let cfg = HubConfig {
            endpoint: "https://huggingface.co".into(),
            cache: cache.path().to_path_buf(),
            token: None,
            offline: true,
            progress: false,
        };
        let name = "SWE-bench/SWE-bench_Verified";
        let err = fetch_split(&cfg, name, "test").unwrap_err().to_string();
        let url = "https://huggingface.co/datasets/SWE-bench/SWE-bench_Verified/resolve/main/data/test-00000-of-00001.parquet";
        assert!(err.contains(url), "{err}");
        assert!(err.contains("HF_HUB_OFFLINE"), "{err}");
        let place = cache
            .path()
            .join("datasets--SWE-bench--SWE-bench_Verified/snapshots/manual/data/test-00000-of-00001.parquet");
        assert!(err.contains(&place.display().to_string()), "{err}");
        // Put there, it is found (offline still).
        std::fs::create_dir_all(place.parent().unwrap()).unwrap();
        std::fs::write(&place, b"PAR1").unwrap();
        assert_eq!(fetch_split(&cfg, name, "test").unwrap(), [place]);
        assert!(fetch_split(&cfg, name, "dev").is_err());
    }
}
