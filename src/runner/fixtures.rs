//! Fixtures of the dispatcher's tests on the fake engine, shared with the run's (`orchestrate`):
//! an image whose jobs the fake answers as the driver would, from keywords in the patch
//! (`GOOD` resolves, `BAD` fails, `NOAPPLY` does not apply, `LOOP` times out).

use std::sync::Arc;

use crate::engine::{exited, timed_out, EngineError, FakeEngine, JobSpec};
use swe_eval_core::dataset::Instance;
use swe_eval_core::predictions::Prediction;

use super::driver;
use super::{NoImage, Setup};

pub const IMAGE: &str = "img:1";

pub fn instance(id: &str) -> Instance {
    serde_json::from_value(serde_json::json!({
        "instance_id": id, "repo": "o/r", "base_commit": "c", "patch": "gold",
        "FAIL_TO_PASS": ["t.py::test_new"], "PASS_TO_PASS": ["t.py::test_old"],
    }))
    .unwrap()
}

/// An instance's image that could not be had, for the reason `message`.
pub fn no_image(message: &str) -> NoImage {
    NoImage::Failed {
        image: "fixture".into(),
        layer: "instance",
        message: message.into(),
    }
}

/// The setup of `id` in `image`, or with no image for the reason given.
pub fn setup(id: &str, image: Result<&str, &str>) -> (String, Arc<Setup>) {
    (
        id.to_string(),
        Arc::new(Setup {
            instance: instance(id),
            image: image.map(str::to_string).map_err(no_image),
            eval_script: "echo eval\n".into(),
            log_parser: "parse_log_pytest".into(),
            image_identity: "fixture".into(),
            cpus: None,
        }),
    )
}

pub fn pred(id: &str, model: &str, sample: u32, patch: &str) -> Prediction {
    Prediction {
        instance_id: id.into(),
        model_name_or_path: model.into(),
        model_patch: Some(patch.into()),
        sample,
        line: None,
        extra: Default::default(),
    }
}

pub fn file<'a>(job: &'a JobSpec, path: &str) -> &'a str {
    let f = job
        .files
        .iter()
        .find(|f| f.path == path)
        .expect("file present");
    std::str::from_utf8(&f.contents).unwrap()
}

/// What the driver would print for the keyword in the job's patch.
pub fn answer(job: &JobSpec) -> Result<crate::engine::JobOutput, EngineError> {
    let driver = file(job, driver::DRIVER_PATH);
    let nonce = driver
        .lines()
        .find_map(|l| l.strip_prefix("N="))
        .unwrap()
        .to_string();
    let patch = job
        .files
        .iter()
        .find(|f| f.path == driver::PATCH_PATH)
        .map_or("", |f| std::str::from_utf8(&f.contents).unwrap());
    let m = |s: &str| format!(">>>>> swe-eval {nonce} {s}\n");
    if patch.contains("NOAPPLY") {
        return Ok(exited(
            0,
            &format!(">>>>> Patch Apply Failed\n{}", m("apply failed")),
        ));
    }
    let head = if patch.is_empty() {
        m("apply none")
    } else {
        format!(">>>>> Applied Patch\n{}", m("apply ok git apply --verbose"))
    };
    if patch.contains("LOOP") {
        return Ok(timed_out(&format!(
            "{head}{}>>>>> Start Test Output\nrunning forever\n",
            m("eval start")
        )));
    }
    let (new, code) = if patch.contains("GOOD") {
        ("PASSED", 0)
    } else {
        ("FAILED", 1)
    };
    let body = format!(
        ">>>>> Start Test Output\n{new} t.py::test_new\nPASSED t.py::test_old\n===== 1 passed in 0.1s =====\n>>>>> End Test Output\n>>>>> Test Exit Code: {code}\n"
    );
    Ok(exited(
        0,
        &format!(
            "{head}{}{body}{}",
            m("eval start"),
            m(&format!("eval end {code}"))
        ),
    ))
}

pub fn fake() -> FakeEngine {
    let e = FakeEngine::new();
    e.add_image(IMAGE);
    e.on_image(IMAGE, answer);
    e
}
