//! `swe-eval submit`: a finished run as a SWE-bench leaderboard submission, in the layout the
//! SWE-bench experiments repository asks for (`evaluation/<split>/<date>_<name>/`):
//!
//! ```text
//! all_preds.jsonl                    one prediction per instance
//! logs/<instance_id>/patch.diff      the prediction's patch
//! logs/<instance_id>/report.json     the official per-instance report
//! logs/<instance_id>/test_output.txt the eval script's output
//! trajs/                             one reasoning trace per instance (from --trajs)
//! results/results.json, resolved_by_repo.json, resolved_by_time.json
//! metadata.yaml, README.md
//! ```
//!
//! The `results/` numbers are computed from the package's own `logs/` exactly as the
//! repository's analysis script does (see [`results`]), and [`verify`] does it again on a
//! finished package and names every number that differs. Every requirement of the
//! submission checklist that the inputs do not meet (one attempt per instance, reasoning
//! traces, a technical report, authors, ...) is a [`Warning`] naming the rule.
//!
//! Nothing is written outside the output folder, and the output folder may not be, contain or
//! lie inside any input.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use crate::dataset::Dataset;
use crate::fsutil::{self, WriteError};
use crate::grading::{self, GradeInput, Mode};
use crate::predictions::{model_dir_name, Prediction};
use crate::report::logs::{SavedLog, SavedLogs};
use crate::report::{self, InstanceReport, ReportError, TEST_OUTPUT_FILE};

pub mod results;
pub mod text;

pub use results::Results;
use results::{LOGS_DIR, PATCH_FILE, RESULTS_DIR};
pub use text::{Metadata, DECLARATIONS};

/// The predictions file of a package: one prediction per instance.
pub const PREDS_FILE: &str = "all_preds.jsonl";
/// The folder of reasoning traces.
pub const TRAJS_DIR: &str = "trajs";
/// What the leaderboard shows of the system.
pub const METADATA_FILE: &str = "metadata.yaml";
/// The analysis summary and checklist.
pub const README_FILE: &str = "README.md";

/// What the analysis script keeps at the top of a submission (it deletes anything else).
const KEPT_BY_SCRIPT: [&str; 8] = [
    "preds.json",
    PREDS_FILE,
    LOGS_DIR,
    METADATA_FILE,
    "metadata.yml",
    TRAJS_DIR,
    README_FILE,
    RESULTS_DIR,
];

/// Why a package could not be built or verified.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    /// An input could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file of the package could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// A run's report file could not be read or written.
    #[error(transparent)]
    Report(#[from] ReportError),
    /// The request cannot be met: an output folder that overlaps an input or is not empty,
    /// several runs or models and none chosen, no predictions, an unusable instance id.
    #[error("{0}")]
    Input(String),
}

/// A checklist requirement the package does not meet, or something the submitter must check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The rule, as the checklist or the submission guide names it.
    pub rule: &'static str,
    /// What is wrong, and where.
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] {}", self.rule, self.message)
    }
}

fn warn(list: &mut Vec<Warning>, rule: &'static str, message: impl Into<String>) {
    list.push(Warning {
        rule,
        message: message.into(),
    });
}

/// The finished run to package.
pub struct Source {
    /// Every prediction of the run (several models or samples are narrowed down by [`build`]).
    pub predictions: Vec<Prediction>,
    /// The run's test outputs.
    pub logs: Logs,
    /// Chooses among several runs in a logs tree.
    pub run_id: Option<String>,
    /// The run's own official summaries (`<model>.<run_id>.json`), to cross-check the package.
    pub summaries: Vec<PathBuf>,
}

/// Where each prediction's test output is.
#[derive(Debug)]
pub enum Logs {
    /// Looked up by instance id (and model, run id) in saved logs.
    Saved(SavedLogs),
    /// Each prediction's own log folder, by (model, sample, instance id), as
    /// [`predictions_from_tree`] found them.
    Folders(HashMap<(String, u32, String), PathBuf>),
}

impl Logs {
    fn get(&self, p: &Prediction, run_id: Option<&str>) -> Result<SavedLog, SubmitError> {
        match self {
            Logs::Saved(saved) => saved
                .get(&p.instance_id, &p.model_dir_name(), run_id)
                .map_err(|e| SubmitError::Input(e.to_string())),
            Logs::Folders(dirs) => {
                let key = (
                    p.model_name_or_path.clone(),
                    p.sample,
                    p.instance_id.clone(),
                );
                match dirs.get(&key) {
                    Some(dir) => Ok(crate::report::logs::read_instance_dir(dir)?),
                    None => Ok(SavedLog::Missing),
                }
            }
        }
    }
}

/// How to package.
pub struct Options {
    /// The package's folder (new or empty).
    pub output: PathBuf,
    /// The model to submit when the run holds several.
    pub model: Option<String>,
    /// A folder of reasoning traces, one per instance, the instance id in each name.
    pub trajs: Option<PathBuf>,
    /// What `metadata.yaml` and `README.md` say of the system.
    pub metadata: Metadata,
    /// `verified`, `lite`, `test`, ... (the `evaluation/<split>/` folder).
    pub split: String,
}

/// What [`build`] wrote.
#[derive(Debug)]
pub struct Package {
    /// The package's folder.
    pub dir: PathBuf,
    /// The model packaged.
    pub model: String,
    /// The leaderboard entry name (`--name`, else the model).
    pub name: String,
    /// The `results/` numbers, as the analysis script computes them.
    pub results: Results,
    /// Predictions packaged (one per instance).
    pub predictions: usize,
    /// Instances with a reasoning trace.
    pub trajs: usize,
    /// Checklist requirements not met, and what the submitter must check.
    pub warnings: Vec<Warning>,
}

/// Refuses an output folder that is, holds or lies inside an input, or that has files in it.
pub fn check_output(output: &Path, inputs: &[&Path]) -> Result<(), SubmitError> {
    let out = resolve(output);
    for input in inputs {
        let inp = resolve(input);
        if out == inp || out.starts_with(&inp) || inp.starts_with(&out) {
            return Err(SubmitError::Input(format!(
                "the output folder {} overlaps the input {}; choose a folder apart from the inputs",
                output.display(),
                input.display()
            )));
        }
    }
    if let Ok(mut entries) = std::fs::read_dir(output) {
        if entries.next().is_some() {
            return Err(SubmitError::Input(format!(
                "the output folder {} is not empty; choose a new folder (nothing there is replaced)",
                output.display()
            )));
        }
    } else if output.exists() {
        return Err(SubmitError::Input(format!(
            "the output {} exists and is not a folder",
            output.display()
        )));
    }
    Ok(())
}

/// The absolute, symlink-free form of a path that may not exist yet.
fn resolve(p: &Path) -> PathBuf {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let mut existing = abs.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(c) = existing.canonicalize() {
            let mut out = c;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return abs,
        }
    }
}

/// An instance id that is safe as one folder name.
fn safe_component(id: &str) -> bool {
    !id.is_empty()
        && id != "."
        && id != ".."
        && !id.contains(['/', '\\', '\0'])
        && !id.starts_with('-')
}

/// Predictions read back from a run's log tree, with each one's folder: every folder below
/// `run` holding a `patch.diff` (or only swe-eval's `verdict.json`: an empty patch), as
/// `.../<run_id>/<model>/<instance_id>[.sample<k>]/`.
pub fn predictions_from_tree(
    run: &Path,
    run_id: Option<&str>,
) -> Result<(Vec<Prediction>, Logs), SubmitError> {
    let mut found = Vec::new();
    let mut stack = vec![(run.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|source| SubmitError::Read {
            path: dir.clone(),
            source,
        })?;
        let mut is_prediction = false;
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name == PATCH_FILE || name == crate::runner::store::VERDICT_FILE {
                is_prediction = true;
            } else if depth < 6 && entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push((entry.path(), depth + 1));
            }
        }
        if is_prediction {
            found.push(dir);
        }
    }
    let mut preds = Vec::new();
    let mut dirs = HashMap::new();
    let mut runs = BTreeSet::new();
    for dir in found {
        let name = |p: Option<&Path>| {
            p.and_then(Path::file_name)
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string()
        };
        let leaf = name(Some(&dir));
        let model = name(dir.parent());
        let this_run = name(dir.parent().and_then(Path::parent));
        if run_id.is_some_and(|r| r != this_run) {
            continue;
        }
        runs.insert(this_run);
        let (id, sample) = match leaf.rsplit_once(".sample") {
            Some((id, k)) if k.parse::<u32>().is_ok() => (id.to_string(), k.parse().unwrap_or(0)),
            _ => (leaf.clone(), 0),
        };
        let patch_path = dir.join(PATCH_FILE);
        let patch = if patch_path.is_file() {
            results::read_text(&patch_path)?
        } else {
            String::new()
        };
        dirs.insert((model.clone(), sample, id.clone()), dir.clone());
        preds.push(Prediction {
            instance_id: id,
            model_name_or_path: model,
            model_patch: Some(patch),
            sample,
            line: None,
            extra: Default::default(),
        });
    }
    if runs.len() > 1 {
        return Err(SubmitError::Input(format!(
            "{} holds several runs ({}); pass --run-id to choose one",
            run.display(),
            runs.into_iter().collect::<Vec<_>>().join(", ")
        )));
    }
    preds.sort_by(|a, b| (&a.instance_id, a.sample).cmp(&(&b.instance_id, b.sample)));
    Ok((preds, Logs::Folders(dirs)))
}

/// The official run summaries at the top of a run folder (`<model>.<run_id>[.sample<k>].json`).
pub fn summaries_in(run: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(run) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "json"))
        .filter(|p| {
            std::fs::read(p)
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .is_some_and(|v| {
                    v.get("resolved_ids").is_some() && v.get("schema_version").is_some()
                })
        })
        .collect();
    v.sort();
    v
}

/// Chooses the model and one prediction per instance (sample 0, else the first), warning
/// about every prediction left out.
fn choose(
    ds: &Dataset,
    preds: &[Prediction],
    model: Option<&str>,
    warnings: &mut Vec<Warning>,
) -> Result<(String, Vec<Prediction>), SubmitError> {
    let models: BTreeSet<&str> = preds
        .iter()
        .map(|p| p.model_name_or_path.as_str())
        .collect();
    let model = match model {
        Some(m) => {
            if !models.contains(m) && !models.iter().any(|x| model_dir_name(x) == m) {
                return Err(SubmitError::Input(format!(
                    "no prediction of model {m}; the run has: {}",
                    models.into_iter().collect::<Vec<_>>().join(", ")
                )));
            }
            m.to_string()
        }
        None if models.len() == 1 => models
            .iter()
            .next()
            .map(|m| m.to_string())
            .unwrap_or_default(),
        None if models.is_empty() => {
            return Err(SubmitError::Input("the run has no predictions".into()));
        }
        None => {
            return Err(SubmitError::Input(format!(
                "the run has several models ({}); pass --model to choose the one to submit",
                models.into_iter().collect::<Vec<_>>().join(", ")
            )));
        }
    };
    let mut by_id: BTreeMap<&str, Vec<&Prediction>> = BTreeMap::new();
    for p in preds
        .iter()
        .filter(|p| p.model_name_or_path == model || model_dir_name(&p.model_name_or_path) == model)
    {
        by_id.entry(&p.instance_id).or_default().push(p);
    }
    let mut chosen = Vec::new();
    let mut several = Vec::new();
    let mut unknown = Vec::new();
    for (id, mut list) in by_id {
        if ds.get(id).is_none() {
            unknown.push(id.to_string());
            continue;
        }
        if !safe_component(id) {
            return Err(SubmitError::Input(format!(
                "instance id {id:?} cannot be a folder name"
            )));
        }
        list.sort_by_key(|p| p.sample);
        if list.len() > 1 {
            several.push(id.to_string());
        }
        chosen.push(list[0].clone());
    }
    if !several.is_empty() {
        warn(
            warnings,
            "pass@1",
            format!(
                "the checklist asks for one attempt per task instance; {} instance(s) have several \
                 predictions ({}); packaged sample 0 of each. If a module of the system chose among \
                 attempts without the SWE-bench tests, that is best@k: pass --attempts 2+",
                several.len(),
                shorten(&several)
            ),
        );
    }
    if !unknown.is_empty() {
        warn(
            warnings,
            "dataset",
            format!(
                "{} prediction(s) name instances that are not in the dataset and were left out: {}",
                unknown.len(),
                shorten(&unknown)
            ),
        );
    }
    let order: HashMap<&str, usize> = ds
        .instances
        .iter()
        .enumerate()
        .map(|(i, x)| (x.instance_id.as_str(), i))
        .collect();
    chosen.sort_by_key(|p| order.get(p.instance_id.as_str()).copied());
    Ok((model, chosen))
}

fn shorten(ids: &[String]) -> String {
    const SHOW: usize = 5;
    if ids.len() <= SHOW {
        ids.join(", ")
    } else {
        format!(
            "{}, ... ({} more)",
            ids[..SHOW].join(", "),
            ids.len() - SHOW
        )
    }
}

/// Writes the submission package into `opts.output` (which must be new or empty and apart from
/// every input; see [`check_output`]).
pub fn build(ds: &Dataset, src: &Source, opts: &Options) -> Result<Package, SubmitError> {
    let mut warnings = Vec::new();
    let out = &opts.output;
    let (model, chosen) = choose(ds, &src.predictions, opts.model.as_deref(), &mut warnings)?;
    let name = opts.metadata.name.clone().unwrap_or_else(|| model.clone());

    // all_preds.jsonl: the submitted prediction of every instance, in dataset order.
    let mut preds = Vec::new();
    for p in &chosen {
        let row = serde_json::json!({
            "instance_id": p.instance_id,
            "model_name_or_path": p.model_name_or_path,
            "model_patch": p.model_patch,
        });
        preds.extend_from_slice(row.to_string().as_bytes());
        preds.push(b'\n');
    }
    fsutil::write_atomic(&out.join(PREDS_FILE), &preds)?;

    // logs/<id>/: patch.diff, test_output.txt and the official report.json.
    let logs_dir = out.join(LOGS_DIR);
    let (mut no_log, mut apply_failed, mut problems) = (Vec::new(), Vec::new(), Vec::new());
    let mut run_resolved = BTreeSet::new();
    for p in chosen.iter().filter(|p| !p.is_empty_patch()) {
        let dir = logs_dir.join(&p.instance_id);
        fsutil::write_atomic(&dir.join(PATCH_FILE), p.patch().as_bytes())?;
        let saved = src.logs.get(p, src.run_id.as_deref())?;
        match &saved {
            SavedLog::Output(text) => {
                fsutil::write_atomic(&dir.join(TEST_OUTPUT_FILE), text.as_bytes())?;
            }
            SavedLog::ApplyFailed => apply_failed.push(p.instance_id.clone()),
            SavedLog::Missing => no_log.push(p.instance_id.clone()),
        }
        let Some(inst) = ds.get(&p.instance_id) else {
            continue;
        };
        if matches!(saved, SavedLog::Output(_))
            && (inst.fail_to_pass.is_none() || inst.pass_to_pass.is_none())
        {
            problems.push(format!(
                "{}: dataset row has no FAIL_TO_PASS/PASS_TO_PASS; no report.json written",
                p.instance_id
            ));
            continue;
        }
        let input = GradeInput::for_instance(inst, p.model_patch.as_deref(), saved.outcome());
        match grading::grade(&input) {
            Ok(v) => {
                if v.category(Mode::Official).is_resolved() {
                    run_resolved.insert(p.instance_id.clone());
                }
                if let Some(r) = InstanceReport::from_verdict(&v, Mode::Official) {
                    report::write_instance_report(&logs_dir, &p.instance_id, &r)?;
                }
            }
            Err(e) => problems.push(format!("{}: {e}", p.instance_id)),
        }
    }
    if !no_log.is_empty() {
        warn(
            &mut warnings,
            "logs",
            format!(
                "{} prediction(s) have no test output in the run and count as no_logs: {}",
                no_log.len(),
                shorten(&no_log)
            ),
        );
    }
    if !apply_failed.is_empty() {
        warn(
            &mut warnings,
            "logs",
            format!(
                "{} patch(es) did not apply; they have no test output and count as no_logs: {}",
                apply_failed.len(),
                shorten(&apply_failed)
            ),
        );
    }
    for p in problems {
        warn(&mut warnings, "grading", p);
    }

    let trajs = copy_trajs(opts.trajs.as_deref(), &chosen, out, &mut warnings)?;

    // results/: from the package's own logs, as the analysis script computes it.
    let results = results::regrade(ds, out)?;
    for (file, text) in results.files() {
        fsutil::write_atomic(&out.join(RESULTS_DIR).join(file), text.as_bytes())?;
    }
    if !results.undated.is_empty() {
        warn(
            &mut warnings,
            "resolved_by_time",
            format!(
                "{} of {} dataset rows have no created_at, so results/{} leaves them out; \
                 package with the official dataset to count every year",
                results.undated.len(),
                results.total,
                results::BY_TIME_FILE
            ),
        );
    }
    let covered = chosen.len();
    if covered < ds.instances.len() {
        warn(
            &mut warnings,
            "coverage",
            format!(
                "the run has predictions for {covered} of the dataset's {} instances; the others \
                 count as no_generation",
                ds.instances.len()
            ),
        );
    }
    cross_check(&src.summaries, &model, &results, &mut warnings);

    let pass_at_1 = !warnings.iter().any(|w| w.rule == "pass@1");
    let mut meta = opts.metadata.clone();
    if meta.models.is_empty() {
        meta.models.push(model.clone());
    }
    if meta.attempts.is_empty() {
        meta.attempts = "1".into();
    }
    metadata_warnings(&meta, &mut warnings);
    fsutil::write_atomic(
        &out.join(METADATA_FILE),
        text::metadata_yaml(&meta, &name).as_bytes(),
    )?;
    fsutil::write_atomic(
        &out.join(README_FILE),
        text::readme(&meta, &name, &opts.split, &results, pass_at_1).as_bytes(),
    )?;
    Ok(Package {
        dir: out.clone(),
        model,
        name,
        results,
        predictions: chosen.len(),
        trajs,
        warnings,
    })
}

fn metadata_warnings(m: &Metadata, warnings: &mut Vec<Warning>) {
    if m.report.is_none() {
        warn(
            warnings,
            "technical report",
            "every submission needs a technical report, paper or blog post describing the system \
             (--report URL; info/report in metadata.yaml)",
        );
    }
    if m.authors.is_none() {
        warn(
            warnings,
            "authors",
            "the checklist asks for the names of the people involved and the first author's \
             website (--authors; info/authors in metadata.yaml)",
        );
    }
    if m.site.is_none() {
        warn(
            warnings,
            "metadata",
            "info/site in metadata.yaml is empty (--site URL)",
        );
    }
    if m.orgs.is_empty() {
        warn(
            warnings,
            "metadata",
            "tags/org in metadata.yaml is empty (--org NAME)",
        );
    }
    for (flag, text) in DECLARATIONS {
        if !m.declared.iter().any(|d| d == flag) {
            warn(
                warnings,
                "checklist",
                format!("not declared: \"{text}\" (confirm with --declare {flag})"),
            );
        }
    }
}

/// Warns when the run's own summary resolves other instances than the package's logs.
fn cross_check(summaries: &[PathBuf], model: &str, results: &Results, warnings: &mut Vec<Warning>) {
    let prefix = format!("{}.", model_dir_name(model));
    let Some(path) = summaries.iter().find(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(&prefix) && !n.contains(".sample"))
    }) else {
        return;
    };
    let Ok(summary) = std::fs::read(path)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice::<report::RunSummary>(&b).map_err(|e| e.to_string()))
    else {
        return;
    };
    let theirs: BTreeSet<&str> = summary.resolved_ids.iter().map(String::as_str).collect();
    let ours: BTreeSet<&str> = results.resolved.iter().map(String::as_str).collect();
    if theirs != ours {
        let only_run: Vec<String> = theirs.difference(&ours).map(|s| s.to_string()).collect();
        let only_pkg: Vec<String> = ours.difference(&theirs).map(|s| s.to_string()).collect();
        warn(
            warnings,
            "consistency",
            format!(
                "{} resolves {} instance(s), the package's logs {} (grading mode of the run: {}); \
                 only in the run: [{}]; only in the package: [{}]",
                path.display(),
                theirs.len(),
                ours.len(),
                summary
                    .grading_mode
                    .map_or("official".to_string(), |m| format!("{m:?}").to_lowercase()),
                shorten(&only_run),
                shorten(&only_pkg)
            ),
        );
    }
}

/// The instance id a trajectory's file name carries: the longest id found in the name and not
/// followed by another digit (so `django__django-1234` does not claim `...-12345.traj`).
fn id_in_name<'a>(name: &str, ids: &'a [String]) -> Option<&'a String> {
    ids.iter()
        .filter(|id| {
            name.match_indices(id.as_str()).any(|(at, _)| {
                !name[at + id.len()..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_digit())
            })
        })
        .max_by_key(|id| id.len())
}

/// Copies the traces of the chosen instances from `dir` into `out/trajs/`; returns how many
/// instances have one.
fn copy_trajs(
    dir: Option<&Path>,
    chosen: &[Prediction],
    out: &Path,
    warnings: &mut Vec<Warning>,
) -> Result<usize, SubmitError> {
    let Some(dir) = dir else {
        warn(
            warnings,
            "reasoning traces",
            "trajs/ must hold one reasoning trace per task instance, showing every step the \
             system took (required since July 2024); none given (--trajs DIR)",
        );
        return Ok(0);
    };
    let ids: Vec<String> = chosen.iter().map(|p| p.instance_id.clone()).collect();
    let entries = std::fs::read_dir(dir).map_err(|source| SubmitError::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut have = BTreeSet::new();
    let mut stray = Vec::new();
    let mut names: Vec<_> = entries.flatten().collect();
    names.sort_by_key(|e| e.file_name());
    for entry in names {
        let name = entry.file_name().to_string_lossy().into_owned();
        match id_in_name(&name, &ids) {
            Some(id) => {
                copy_tree(&entry.path(), &out.join(TRAJS_DIR).join(&name))?;
                have.insert(id.clone());
            }
            None => stray.push(name),
        }
    }
    let missing: Vec<String> = ids.iter().filter(|i| !have.contains(*i)).cloned().collect();
    if !missing.is_empty() {
        warn(
            warnings,
            "reasoning traces",
            format!(
                "one reasoning trace per task instance, the instance id in its file name: {} of {} \
                 instance(s) have none in {}: {}",
                missing.len(),
                ids.len(),
                dir.display(),
                shorten(&missing)
            ),
        );
    }
    if !stray.is_empty() {
        warn(
            warnings,
            "reasoning traces",
            format!(
                "{} entr(y/ies) of {} name no submitted instance and were not copied: {}",
                stray.len(),
                dir.display(),
                shorten(&stray)
            ),
        );
    }
    Ok(have.len())
}

/// Copies a file or a folder (regular files and folders only; links are not followed).
fn copy_tree(from: &Path, to: &Path) -> Result<(), SubmitError> {
    let read_err = |source| SubmitError::Read {
        path: from.to_path_buf(),
        source,
    };
    let meta = std::fs::symlink_metadata(from).map_err(read_err)?;
    if meta.is_file() {
        let bytes = std::fs::read(from).map_err(read_err)?;
        fsutil::write_atomic(to, &bytes)?;
    } else if meta.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(from)
            .map_err(read_err)?
            .flatten()
            .collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            copy_tree(&e.path(), &to.join(e.file_name()))?;
        }
    }
    Ok(())
}

/// What [`verify`] found.
#[derive(Debug)]
pub struct Verification {
    /// The package graded again from its own logs.
    pub results: Results,
    /// Every number, id or file that disagrees with that grading (the package fails).
    pub mismatches: Vec<String>,
    /// Checklist requirements not met (the package still verifies).
    pub warnings: Vec<Warning>,
}

/// Grades the package in `dir` again from its own `logs/` and checks `results/`, every
/// `report.json`, `all_preds.jsonl` and the README's summary line against that grading.
pub fn verify(ds: &Dataset, dir: &Path) -> Result<Verification, SubmitError> {
    if !dir.is_dir() {
        return Err(SubmitError::Input(format!(
            "{} is not a submission folder",
            dir.display()
        )));
    }
    let results = results::regrade(ds, dir)?;
    let mut mismatches = results::compare_files(dir, &results);
    for u in &results.ungradable {
        mismatches.push(format!("cannot grade: {u}"));
    }
    let mut warnings = Vec::new();
    let resolved: BTreeSet<&str> = results.resolved.iter().map(String::as_str).collect();

    // Each report.json against its own logs.
    let logs = dir.join(LOGS_DIR);
    for inst in &ds.instances {
        let path = logs.join(&inst.instance_id).join(report::REPORT_FILE);
        if !path.is_file() {
            continue;
        }
        match report::read_instance_report(&path) {
            Ok((id, r)) => {
                let graded = resolved.contains(inst.instance_id.as_str());
                if id != inst.instance_id {
                    mismatches.push(format!(
                        "{LOGS_DIR}/{}/report.json is keyed by {id}",
                        inst.instance_id
                    ));
                } else if r.resolved != graded {
                    mismatches.push(format!(
                        "{LOGS_DIR}/{}/report.json says resolved: {}, its test_output.txt grades {}",
                        inst.instance_id,
                        r.resolved,
                        if graded { "resolved" } else { "unresolved" }
                    ));
                }
            }
            Err(e) => mismatches.push(e.to_string()),
        }
    }

    // all_preds.jsonl against the patches in logs/.
    let preds_path = dir.join(PREDS_FILE);
    match std::fs::read_to_string(&preds_path) {
        Err(e) => mismatches.push(format!("{PREDS_FILE}: cannot read: {e}")),
        Ok(text) => {
            let mut seen: HashMap<String, usize> = HashMap::new();
            for (i, line) in text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                let at = format!("{PREDS_FILE} line {}", i + 1);
                let Ok(row) = serde_json::from_str::<serde_json::Value>(line) else {
                    mismatches.push(format!("{at}: not a JSON object"));
                    continue;
                };
                let Some(id) = row.get("instance_id").and_then(|v| v.as_str()) else {
                    mismatches.push(format!("{at}: field instance_id missing"));
                    continue;
                };
                if let Some(first) = seen.insert(id.to_string(), i + 1) {
                    warn(
                        &mut warnings,
                        "pass@1",
                        format!("{at}: {id} was already predicted on line {first}"),
                    );
                }
                let patch = row
                    .get("model_patch")
                    .and_then(|v| v.as_str())
                    .unwrap_or("");
                let diff = logs.join(id).join(PATCH_FILE);
                if diff.is_file() {
                    match results::read_text(&diff) {
                        Ok(d) if d == patch => {}
                        Ok(_) => mismatches.push(format!(
                            "{at}: model_patch of {id} differs from {LOGS_DIR}/{id}/{PATCH_FILE}"
                        )),
                        Err(e) => mismatches.push(e.to_string()),
                    }
                } else if !patch.trim().is_empty() {
                    mismatches.push(format!(
                        "{at}: {id} has a patch but {LOGS_DIR}/{id}/{PATCH_FILE} is missing"
                    ));
                }
            }
        }
    }

    // The summary line of the README.
    if let Ok(readme) = std::fs::read_to_string(dir.join(README_FILE)) {
        let want = format!(
            "Resolved {} instances ({}%)",
            results.resolved.len(),
            results.rate()
        );
        match readme
            .lines()
            .find(|l| l.starts_with("Resolved ") && l.contains(" instances ("))
        {
            Some(line) if line.trim() == want => {}
            Some(line) => mismatches.push(format!(
                "{README_FILE}: says \"{}\", the package's logs give \"{want}\"",
                line.trim()
            )),
            None => warn(
                &mut warnings,
                "README",
                "README.md should carry the analysis summary (\"Resolved N instances (R%)\")",
            ),
        }
    } else {
        warn(&mut warnings, "README", "README.md is missing");
    }
    if !dir.join(METADATA_FILE).is_file() {
        warn(&mut warnings, "metadata", "metadata.yaml is missing");
    }
    if !dir.join(TRAJS_DIR).is_dir() {
        warn(
            &mut warnings,
            "reasoning traces",
            "trajs/ is missing: one reasoning trace per task instance is required",
        );
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if !KEPT_BY_SCRIPT.contains(&n.as_str()) {
                warn(
                    &mut warnings,
                    "layout",
                    format!("{n} is not part of a submission; the analysis script deletes it"),
                );
            }
        }
    }
    Ok(Verification {
        results,
        mismatches,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trajectory_names_match_whole_ids_only() {
        let ids = vec!["d__d-1234".to_string(), "d__d-12345".to_string()];
        assert_eq!(id_in_name("d__d-12345.traj", &ids), Some(&ids[1]));
        assert_eq!(id_in_name("d__d-1234.traj.json", &ids), Some(&ids[0]));
        assert_eq!(id_in_name("run_d__d-1234", &ids), Some(&ids[0]));
        assert_eq!(id_in_name("d__d-123.md", &ids), None);
    }

    #[test]
    fn output_may_not_overlap_an_input_or_hold_files() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        std::fs::create_dir_all(run.join("logs")).unwrap();
        for bad in [run.clone(), run.join("pkg"), dir.path().to_path_buf()] {
            let e = check_output(&bad, &[&run]).unwrap_err();
            assert!(e.to_string().contains("overlaps"), "{e}");
        }
        let full = dir.path().join("full");
        std::fs::create_dir_all(&full).unwrap();
        std::fs::write(full.join("x"), b"x").unwrap();
        assert!(check_output(&full, &[&run])
            .unwrap_err()
            .to_string()
            .contains("not empty"));
        check_output(&dir.path().join("new"), &[&run]).unwrap();
    }

    #[test]
    fn a_run_tree_gives_every_sample_with_its_own_folder() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("logs/run_evaluation/r1/org__m");
        // Sample 0 had an empty patch: swe-eval wrote only its verdict.
        std::fs::create_dir_all(model.join("a__b-1")).unwrap();
        std::fs::write(model.join("a__b-1/verdict.json"), b"{}").unwrap();
        std::fs::create_dir_all(model.join("a__b-1.sample1")).unwrap();
        std::fs::write(model.join("a__b-1.sample1/patch.diff"), b"diff").unwrap();
        std::fs::write(model.join("a__b-1.sample1/test_output.txt"), b"log 1").unwrap();
        let (preds, logs) = predictions_from_tree(dir.path(), None).unwrap();
        let got: Vec<(u32, &str)> = preds.iter().map(|p| (p.sample, p.patch())).collect();
        assert_eq!(got, [(0, ""), (1, "diff")]);
        assert_eq!(preds[0].model_name_or_path, "org__m");
        assert_eq!(logs.get(&preds[0], None).unwrap(), SavedLog::Missing);
        assert_eq!(
            logs.get(&preds[1], None).unwrap(),
            SavedLog::Output("log 1".into()),
            "each sample's log comes from its own folder"
        );
        let other = dir.path().join("logs/run_evaluation/r2/org__m/a__b-1");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("patch.diff"), b"x").unwrap();
        let e = predictions_from_tree(dir.path(), None).unwrap_err();
        assert!(e.to_string().contains("several runs (r1, r2)"), "{e}");
        assert_eq!(
            predictions_from_tree(dir.path(), Some("r2"))
                .unwrap()
                .0
                .len(),
            1
        );
    }

    #[test]
    fn unsafe_ids_are_refused_as_folder_names() {
        for bad in ["", ".", "..", "a/b", "-rf", "a\\b"] {
            assert!(!safe_component(bad), "{bad:?}");
        }
        assert!(safe_component("django__django-11099"));
    }
}
