//! Listing by label: the filters the daemon is asked for, the same test made on what it gives
//! (Podman 4.3 lists no image for two label filters or more), and a listing that failed.

use std::collections::{BTreeMap, HashMap};

use bollard::errors::Error as DockerError;

use crate::engine::{EngineError, LABEL_TOOL};

/// The error of a listing of `what` (`containers`, `images`, `volumes`) that failed.
pub(super) fn listing_failed(what: &'static str) -> impl FnOnce(DockerError) -> EngineError {
    move |e| EngineError::List {
        what: what.into(),
        message: e.to_string(),
    }
}

/// The daemon's `filters` for objects carrying all of `labels` (an empty value: the key with
/// any value); never an empty filter, which would list everything on the machine.
pub(in crate::engine) fn label_filters(
    labels: &BTreeMap<String, String>,
) -> HashMap<String, Vec<String>> {
    let mut f = HashMap::new();
    let mut want: Vec<String> = labels
        .iter()
        .map(|(k, v)| {
            if v.is_empty() {
                k.clone()
            } else {
                format!("{k}={v}")
            }
        })
        .collect();
    if want.is_empty() {
        // Never list everything on the machine: at least the tool's own label.
        want.push(LABEL_TOOL.to_string());
    }
    f.insert("label".to_string(), want);
    f
}

/// Whether `have` carries every label of `want` (an empty value: the key, with any value).
pub(super) fn has_labels(have: &HashMap<String, String>, want: &BTreeMap<String, String>) -> bool {
    want.iter()
        .all(|(k, v)| have.get(k).is_some_and(|got| v.is_empty() || got == v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_filters_never_select_everything() {
        let f = label_filters(&BTreeMap::new());
        assert_eq!(f["label"], vec![LABEL_TOOL.to_string()]);
        let f = label_filters(&BTreeMap::from([
            ("a".into(), "1".into()),
            ("b".into(), "".into()),
        ]));
        assert_eq!(f["label"], vec!["a=1".to_string(), "b".to_string()]);
    }

    #[test]
    fn labels_are_matched_as_the_daemon_filters_them() {
        let have = HashMap::from([
            ("swe-eval".to_string(), "1".to_string()),
            ("swe-eval.layer".to_string(), "base".to_string()),
        ]);
        let want = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert!(has_labels(&have, &want(&[])));
        assert!(has_labels(
            &have,
            &want(&[("swe-eval", "1"), ("swe-eval.layer", "base")])
        ));
        assert!(has_labels(&have, &want(&[("swe-eval.layer", "")])));
        assert!(!has_labels(&have, &want(&[("swe-eval.layer", "env")])));
        assert!(!has_labels(&have, &want(&[("swe-eval.hold", "")])));
    }
}
