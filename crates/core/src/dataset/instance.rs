//! One dataset row ([`Instance`]), read leniently: lists that come JSON-encoded or plain,
//! nulls as defaults, unknown fields kept.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// One SWE-bench task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Instance {
    /// The task's id, `<owner>__<name>-<number>`.
    pub instance_id: String,
    /// The repository, `owner/name`.
    pub repo: String,
    /// The commit the task starts from.
    #[serde(default, deserialize_with = "null_as_default")]
    pub base_commit: String,
    /// The gold patch (the merged human change, without its tests).
    #[serde(default, deserialize_with = "null_as_default")]
    pub patch: String,
    /// The patch that adds or changes the tests that decide the task.
    #[serde(default)]
    pub test_patch: Option<String>,
    /// The issue text the model was given.
    #[serde(default)]
    pub problem_statement: Option<String>,
    /// The comments before the fix, as the dataset has them.
    #[serde(default)]
    pub hints_text: Option<String>,
    /// When the fix was created.
    #[serde(default)]
    pub created_at: Option<String>,
    /// Key into the per-repository specifications.
    #[serde(default, deserialize_with = "string_or_number")]
    pub version: Option<String>,
    /// The commit the environment is installed from.
    #[serde(default)]
    pub environment_setup_commit: Option<String>,
    /// Tests the fix must make pass (`FAIL_TO_PASS`).
    #[serde(rename = "FAIL_TO_PASS", default, deserialize_with = "test_list")]
    pub fail_to_pass: Option<Vec<String>>,
    /// Tests that must keep passing (`PASS_TO_PASS`).
    #[serde(rename = "PASS_TO_PASS", default, deserialize_with = "test_list")]
    pub pass_to_pass: Option<Vec<String>>,
    /// Verified's difficulty bucket, e.g. "<15 min fix".
    #[serde(default)]
    pub difficulty: Option<String>,
    /// The official prebuilt image of this instance, where the dataset names one.
    #[serde(default)]
    pub docker_image: Option<String>,
    /// SWE-bench 5 rows: the image to run in, as is (nothing is built).
    #[serde(default)]
    pub image: Option<String>,
    /// SWE-bench 5 rows: the eval script to run, as is.
    #[serde(default)]
    pub eval_script: Option<String>,
    /// SWE-bench 5 rows: the named log parser (`parse_log_pytest`, ...).
    #[serde(default)]
    pub log_parser: Option<String>,
    /// Everything else the row carried, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
    /// True when the row had a `patch` field at all (`null` counts): a reward needs the gold
    /// patch, and an absent field must not pass for an empty one.
    #[serde(skip)]
    pub has_patch_field: bool,
}

impl Instance {
    /// The owner-less repository name, e.g. `django` for `django/django`.
    pub fn repo_name(&self) -> &str {
        self.repo.rsplit('/').next().unwrap_or(&self.repo)
    }

    /// The `FAIL_TO_PASS` tests, empty when the row has none.
    pub fn fail_to_pass(&self) -> &[String] {
        self.fail_to_pass.as_deref().unwrap_or(&[])
    }

    /// The `PASS_TO_PASS` tests, empty when the row has none.
    pub fn pass_to_pass(&self) -> &[String] {
        self.pass_to_pass.as_deref().unwrap_or(&[])
    }
}

fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

fn string_or_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(other) => Err(serde::de::Error::custom(format!(
            "expected a string or a number, found {other}"
        ))),
    }
}

/// A test list: a JSON list of strings, or a string holding one (Hugging Face's encoding).
fn test_list<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => {
            if s.trim().is_empty() {
                return Ok(Some(Vec::new()));
            }
            serde_json::from_str::<Vec<String>>(&s)
                .map(Some)
                .map_err(|e| {
                    serde::de::Error::custom(format!("a JSON-encoded list of test names: {e}"))
                })
        }
        Some(v @ Value::Array(_)) => serde_json::from_value::<Vec<String>>(v)
            .map(Some)
            .map_err(|e| serde::de::Error::custom(format!("a list of test names: {e}"))),
        Some(other) => Err(serde::de::Error::custom(format!(
            "expected a list of test names, found {other}"
        ))),
    }
}
