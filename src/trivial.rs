//! Trivial tasks on the real engine: an image whose `/testbed` is a one-file git repository,
//! an eval script whose "test command" is a one-liner, and patches that apply cleanly. The
//! harness's own overhead (container, patch, markers, grading, files) is all that is left to
//! measure, and the runner's real-engine tests use the same fixture.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::engine::{Engine, LABEL_TOOL};
use crate::images::{self, BaseOptions, ImageError};
use swe_eval_core::dataset::Instance;
use swe_eval_core::predictions::Prediction;
use swe_eval_core::spec::DebianRelease;

use crate::runner::Setup;

/// The image's tag (content-addressed by its Dockerfile, so a changed fixture rebuilds).
pub fn image_tag(base: &str) -> String {
    let hash = images::content_hash(&[dockerfile(base).as_bytes()]);
    format!("swe-eval-fixture/trivial:{}", &hash[..12])
}

fn dockerfile(base: &str) -> String {
    format!(
        "FROM {base}\n\
         RUN mkdir /testbed && cd /testbed && git init -q \\\n \
         && git config --global user.email fixture@swe-eval && git config --global user.name fixture \\\n \
         && printf 'def f():\\n    return 1\\n' > m.py && git add m.py && git commit -qm base\n\
         WORKDIR /testbed\n"
    )
}

/// Makes the trivial image present (bootstrapping the Debian base if needed); returns its tag.
pub async fn ensure_image<E: Engine>(engine: &E) -> Result<String, ImageError> {
    let base = images::ensure_base(
        engine,
        DebianRelease::Bookworm,
        &[],
        &BaseOptions::default(),
    )
    .await?;
    let tag = image_tag(&base.image);
    if !engine.image_exists(&tag).await? {
        let ctx = images::context_tar(&dockerfile(&base.image), &[], None).map_err(|e| {
            ImageError::Context {
                image: tag.clone(),
                message: e.to_string(),
            }
        })?;
        let labels = BTreeMap::from([(LABEL_TOOL.to_string(), "1".to_string())]);
        engine.build_image(&tag, ctx, labels).await?;
    }
    Ok(tag)
}

/// The test command of a trivial task: passes when `f()` returns 2 (FAIL_TO_PASS `t::test_f`)
/// and always passes `t::test_ok` (PASS_TO_PASS), printing pytest-style summary lines.
pub const TEST_COMMAND: &str = "python3 -c \"import m; ok = m.f() == 2; \
print(('PASSED' if ok else 'FAILED') + ' t::test_f'); print('PASSED t::test_ok'); \
print('=== %d passed in 0.01s ===' % (1 + ok)); raise SystemExit(0 if ok else 1)\"";

/// An eval script in the official shape around `command`.
pub fn eval_script(command: &str) -> String {
    format!(
        "#!/bin/bash\nset -uxo pipefail\ncd /testbed\n: '>>>>> Start Test Output'\n{command}\nrc=$?\n\
         : '>>>>> End Test Output'\necho \">>>>> Test Exit Code: $rc\"\n"
    )
}

/// A dataset row for trivial task `id`.
pub fn instance(id: &str) -> Instance {
    let row = serde_json::json!({
        "instance_id": id, "repo": "swe-eval-fixture/trivial", "base_commit": "HEAD",
        "patch": fix(""), "FAIL_TO_PASS": ["t::test_f"], "PASS_TO_PASS": ["t::test_ok"],
    });
    // The row is built here from constants: it always has the fields an Instance needs.
    serde_json::from_value(row).unwrap_or_else(|_| unreachable!())
}

/// A setup running `instance(id)` in `image` with `command` as its test command.
pub fn setup(id: &str, image: &str, command: &str) -> Arc<Setup> {
    Arc::new(Setup {
        instance: instance(id),
        image: Ok(image.to_string()),
        eval_script: eval_script(command),
        log_parser: "parse_log_pytest".to_string(),
        image_identity: format!("built {image}"),
        cpus: None,
    })
}

/// The fix (f returns 2), with `tag` in a trailing comment so patches can differ.
pub fn fix(tag: &str) -> String {
    format!(
        "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,3 @@\n def f():\n-    return 1\n+    return 2\n+# {tag}\n"
    )
}

/// A patch that applies but does not fix (f returns 3).
pub fn wrong() -> String {
    "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 3\n".to_string()
}

/// A prediction of `patch` for instance `id` by `model`, sample `sample`.
pub fn prediction(id: &str, model: &str, sample: u32, patch: &str) -> Prediction {
    Prediction {
        instance_id: id.to_string(),
        model_name_or_path: model.to_string(),
        model_patch: Some(patch.to_string()),
        sample,
        line: None,
        extra: Default::default(),
    }
}
