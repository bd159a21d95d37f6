//! Writing a package ([`build`]): the output folder checked, the model and one prediction per
//! instance chosen, logs, reasoning traces, `results/`, `metadata.yaml` and `README.md`
//! written, and the package cross-checked against the run's own summaries.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use swe_eval_core::dataset::Dataset;
use swe_eval_core::fsutil::{self};
use swe_eval_core::grading::{self, GradeInput, Mode};
use swe_eval_core::predictions::{model_dir_name, Prediction};
use swe_eval_core::report::{self, Check, InstanceReport, SavedLog, TEST_OUTPUT_FILE};

use super::error::SubmitError;
use super::layout::{
    id_in_name, EVAL_SCRIPT_FILE, METADATA_FILE, PREDS_FILE, README_FILE, TRAJS_DIR,
};
use super::results;
use super::results::Results;
use super::results::{LOGS_DIR, PATCH_FILE, RESULTS_DIR};
use super::source::{safe_component, Source};
use super::text;
use super::text::{Metadata, DECLARATIONS};
use super::warning::{warn, Warning};

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
    /// The sample packaged for every instance (0: the first attempt); an instance without it
    /// is left out, never given another sample.
    pub sample: u32,
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
            return Err(SubmitError::Usage(format!(
                "the output folder {} overlaps the input {}; choose a folder apart from the inputs",
                output.display(),
                input.display()
            )));
        }
    }
    if let Ok(mut entries) = std::fs::read_dir(output) {
        if entries.next().is_some() {
            return Err(SubmitError::Usage(format!(
                "the output folder {} is not empty; choose a new folder (nothing there is replaced)",
                output.display()
            )));
        }
    } else if output.exists() {
        return Err(SubmitError::Usage(format!(
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

/// Chooses the model and, per instance, its prediction of sample `sample`, warning about
/// every prediction left out. An instance without that sample is left out (named), never
/// given another sample.
fn choose(
    ds: &Dataset,
    preds: &[Prediction],
    model: Option<&str>,
    sample: u32,
    warnings: &mut Vec<Warning>,
) -> Result<(String, Vec<Prediction>), SubmitError> {
    let models: BTreeSet<&str> = preds
        .iter()
        .map(|p| p.model_name_or_path.as_str())
        .collect();
    let model = match model {
        Some(m) => {
            if !models.contains(m) && !models.iter().any(|x| model_dir_name(x) == m) {
                return Err(SubmitError::Usage(format!(
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
            return Err(SubmitError::Usage(format!(
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
    let mut without = Vec::new();
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
        match list.iter().find(|p| p.sample == sample) {
            Some(p) => chosen.push((*p).clone()),
            None => without.push(format!(
                "{id} (has sample {})",
                list.iter()
                    .map(|p| p.sample.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
    if !several.is_empty() {
        warn(
            warnings,
            "pass@1",
            format!(
                "the checklist asks for one attempt per task instance; {} instance(s) have several \
                 predictions ({}); packaged sample {sample} of each. If a module of the system \
                 chose among attempts without the SWE-bench tests, that is best@k: pass \
                 --attempts 2+",
                several.len(),
                shorten(&several)
            ),
        );
    }
    if !without.is_empty() {
        warn(
            warnings,
            "sample",
            format!(
                "{} instance(s) have no sample {sample} of {model} and are not packaged (no other \
                 sample is put in its place; --sample chooses another for every instance): {}",
                without.len(),
                shorten(&without)
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

/// Each chosen prediction's saved log, held against the prediction's patch (see
/// `swe_eval_core::report::check_log`): a log that ran another patch is not the prediction's,
/// and the prediction is left out of the package, named with its file, line, model and
/// sample. Empty patches need no log.
fn bind_logs(
    src: &Source,
    chosen: Vec<Prediction>,
    warnings: &mut Vec<Warning>,
) -> Result<Vec<(Prediction, SavedLog, Option<PathBuf>)>, SubmitError> {
    let mut out = Vec::with_capacity(chosen.len());
    for p in chosen {
        if p.is_empty_patch() {
            out.push((p, SavedLog::Missing, None));
            continue;
        }
        let (saved, folder) = src.logs.find(&p, src.run_id.as_deref())?;
        // No log and no folder: nothing ran this prediction (warned as no_logs). A folder with
        // no test output (an empty patch's verdict) is still held against the patch below.
        if matches!(saved, SavedLog::Missing) && folder.is_none() {
            out.push((p, saved, None));
            continue;
        }
        match report::check_log(folder.as_deref(), &saved, p.patch())? {
            Check::Differs(why) => {
                let at = match (&src.predictions_path, p.line) {
                    (Some(f), Some(l)) => format!("{f}:{l}: "),
                    (Some(f), None) => format!("{f}: "),
                    (None, _) => String::new(),
                };
                warn(
                    warnings,
                    "patch",
                    format!(
                        "{at}{} (model {}, sample {}): its log ran another patch: {why}; not \
                         packaged",
                        p.instance_id, p.model_name_or_path, p.sample
                    ),
                );
            }
            _ => out.push((p, saved, folder)),
        }
    }
    Ok(out)
}

/// Runs `write` on a new folder beside `output` and renames it to `output` when `write`
/// succeeds (`output` may be an empty folder: the rename replaces it); when `write` fails, the
/// new folder is removed, with the parent folders this made, so a failure leaves no output.
pub(super) fn staged<T>(
    output: &Path,
    write: impl FnOnce(&Path) -> Result<T, SubmitError>,
) -> Result<T, SubmitError> {
    let abs = std::path::absolute(output).map_err(|source| SubmitError::Read {
        path: output.to_path_buf(),
        source,
    })?;
    let (Some(parent), Some(name)) = (abs.parent(), abs.file_name()) else {
        return Err(SubmitError::Usage(format!(
            "{} cannot be a package folder",
            output.display()
        )));
    };
    // The topmost parent folder this creates, to remove again (if left empty) on failure.
    let made = fsutil::first_missing(parent);
    let write_err = |path: &Path, step, source| {
        SubmitError::Write(fsutil::WriteError {
            path: path.to_path_buf(),
            step,
            source,
        })
    };
    // The error names the package folder asked for (the folder it would be made in failed).
    std::fs::create_dir_all(parent).map_err(|e| write_err(&abs, "create folder", e))?;
    let mut k = 0u32;
    let tmp = loop {
        let candidate = parent.join(format!(
            ".{}.partial-{}-{k}",
            name.to_string_lossy(),
            std::process::id()
        ));
        match std::fs::create_dir(&candidate) {
            Ok(()) => break candidate,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && k < 1000 => k += 1,
            Err(e) => return Err(write_err(&candidate, "create folder", e)),
        }
    };
    let result = write(&tmp).and_then(|v| {
        std::fs::rename(&tmp, &abs).map_err(|e| write_err(&abs, "rename into place", e))?;
        Ok(v)
    });
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
        if let Some(top) = made {
            fsutil::remove_empty_folders(&top);
        }
    }
    result
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
/// every input; see [`check_output`]). The package is written into a folder beside it, checked
/// with [`verify`](super::verify), and only then renamed to `opts.output`: a failure at any
/// point, or a package that does not verify, leaves no output folder.
pub fn build(ds: &Dataset, src: &Source, opts: &Options) -> Result<Package, SubmitError> {
    let mut warnings = Vec::new();
    let (model, chosen) = choose(
        ds,
        &src.predictions,
        opts.model.as_deref(),
        opts.sample,
        &mut warnings,
    )?;
    let bound = bind_logs(src, chosen, &mut warnings)?;
    if bound.is_empty() {
        return Err(SubmitError::NothingToPackage {
            model,
            sample: opts.sample,
            warnings,
        });
    }
    staged(&opts.output, |out| {
        let mut pkg = write_package(ds, src, opts, out, model, bound, warnings)?;
        let check = super::verify(ds, out)?;
        if !check.mismatches.is_empty() {
            return Err(SubmitError::Unverified(check.mismatches));
        }
        pkg.dir = opts.output.clone();
        Ok(pkg)
    })
}

/// Writes every file of the package into `out`.
fn write_package(
    ds: &Dataset,
    src: &Source,
    opts: &Options,
    out: &Path,
    model: String,
    bound: Vec<(Prediction, SavedLog, Option<PathBuf>)>,
    mut warnings: Vec<Warning>,
) -> Result<Package, SubmitError> {
    let name = opts.metadata.name.clone().unwrap_or_else(|| model.clone());
    let chosen: Vec<Prediction> = bound.iter().map(|(p, _, _)| p.clone()).collect();

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

    // logs/<id>/: patch.diff, test_output.txt, the official report.json, and the run's
    // eval.sh when its log folder holds one.
    let logs_dir = out.join(LOGS_DIR);
    let (mut no_log, mut apply_failed, mut problems) = (Vec::new(), Vec::new(), Vec::new());
    for (p, saved, folder) in bound.iter().filter(|(p, _, _)| !p.is_empty_patch()) {
        let dir = logs_dir.join(&p.instance_id);
        fsutil::write_atomic(&dir.join(PATCH_FILE), p.patch().as_bytes())?;
        match saved {
            SavedLog::Output(text) => {
                fsutil::write_atomic(&dir.join(TEST_OUTPUT_FILE), text.as_bytes())?;
            }
            SavedLog::ApplyFailed => apply_failed.push(p.instance_id.clone()),
            SavedLog::Missing => no_log.push(p.instance_id.clone()),
        }
        if let Some(script) = folder.as_ref().map(|f| f.join(EVAL_SCRIPT_FILE)) {
            match std::fs::read(&script) {
                Ok(bytes) => fsutil::write_atomic(&dir.join(EVAL_SCRIPT_FILE), &bytes)?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(SubmitError::Read {
                        path: script,
                        source,
                    })
                }
            }
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
    cross_check(&src.summaries, &model, opts.sample, &results, &mut warnings);

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
        dir: out.to_path_buf(),
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
fn cross_check(
    summaries: &[PathBuf],
    model: &str,
    sample: u32,
    results: &Results,
    warnings: &mut Vec<Warning>,
) {
    let prefix = format!("{}.", model_dir_name(model));
    let of_sample = |n: &str| match sample {
        0 => !n.contains(".sample"),
        k => n.ends_with(&format!(".sample{k}.json")),
    };
    let Some(path) = summaries.iter().find(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(&prefix) && of_sample(n))
    }) else {
        return;
    };
    // A summary that cannot be read says nothing to compare with.
    let Some(summary) = std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<report::RunSummary>(&b).ok())
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
    fn a_write_that_fails_part_way_leaves_no_output_and_success_renames_into_place() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("a/b/pkg");
        let failed = staged(&out, |tmp| {
            fsutil::write_atomic(&tmp.join("logs/x/patch.diff"), b"diff")?;
            Err::<(), _>(SubmitError::Input("a write failed".into()))
        });
        assert!(failed.is_err());
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert!(
            left.is_empty(),
            "no output, no partial folder, no parent made: {left:?}"
        );

        staged(&out, |tmp| Ok(fsutil::write_atomic(&tmp.join("x"), b"x")?)).unwrap();
        assert_eq!(std::fs::read(out.join("x")).unwrap(), b"x");
        // An empty output folder is replaced by the package.
        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        staged(&empty, |tmp| {
            Ok(fsutil::write_atomic(&tmp.join("y"), b"y")?)
        })
        .unwrap();
        assert!(empty.join("y").is_file());
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.contains("partial")), "{names:?}");
    }
}
