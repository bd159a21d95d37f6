//! A run's `report.html` as a person sees it, in Debian's headless chromium from `file://`:
//! the summary and the table render (a real screenshot), the table holds every prediction,
//! a filter given in the URL's fragment narrows it, a row opens its details, and a hostile
//! patch holding `</script>` neither breaks the page nor runs.

use std::path::Path;

use swe_eval_core::report::{self, FailingTest, Heading, Record, Text};

use crate::common::{chromium, headless_chromium, png_colours};

const HOSTILE: &str = "+</script><script>document.title='pwned';document.body.dataset.pwned='1'</script>\n+<img src=x onerror=\"document.title='pwned'\">";

/// 250 predictions over three repositories and every verdict; number 7 carries the hostile
/// patch.
fn records() -> Vec<Record> {
    let verdicts = ["resolved", "unresolved", "error", "empty_patch", "resolved"];
    (0..250)
        .map(|i| {
            let verdict = verdicts[i % verdicts.len()];
            Record {
                instance_id: format!("owner__repo{}-{i}", i % 3),
                repo: format!("owner/repo{}", i % 3),
                model: "m".into(),
                sample: (i / 125) as u32,
                verdict: verdict.into(),
                reason: (verdict == "error").then(|| "timeout".to_string()),
                strict_verdict: verdict.into(),
                fail_to_pass: Some((1, i % 2)),
                pass_to_pass: Some((3, 0)),
                similarity: Some((i % 10) as f64 / 10.0),
                duration_secs: Some(i as f64 / 3.0),
                patch: Some(Text::Inline(if i == 7 {
                    HOSTILE.to_string()
                } else {
                    format!(
                        "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-old {i}\n+new {i}\n"
                    )
                })),
                eval_script: Some(Text::Inline("#!/bin/bash\npytest tests/\n".into())),
                test_log: Some(Text::Inline(format!(
                    "collected 4 items\nlast line of log {i}\n"
                ))),
                failing_tests: vec![FailingTest {
                    name: format!("tests/test_x.py::test_{i}"),
                    group: "FAIL_TO_PASS".into(),
                    status: "FAILED".into(),
                }],
            }
        })
        .collect()
}

/// The DOM chromium has after the page script ran, for the page opened at `fragment`.
fn dom(chromium: &Path, page: &Path, fragment: &str, work: &Path) -> String {
    let profile = tempfile::tempdir_in(work).unwrap();
    let out = headless_chromium(chromium, profile.path())
        .arg("--dump-dom")
        .arg(format!("file://{}{fragment}", page.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        dom.contains("data-ready=\"1\""),
        "the page script finished: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dom
}

/// The text of the element with this id (no nested elements).
fn text_of<'a>(dom: &'a str, id: &str) -> &'a str {
    let start = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("#{id} in {dom}"));
    let body = &dom[start..];
    let open = body.find('>').unwrap() + 1;
    &body[open..open + body[open..].find('<').unwrap()]
}

/// The table's body.
fn tbody(dom: &str) -> &str {
    let start = dom.find("id=\"rows\"").expect("the table body");
    &dom[start..start + dom[start..].find("</tbody>").unwrap()]
}

fn table_rows(dom: &str) -> usize {
    tbody(dom).matches("<tr data-i=").count()
}

#[test]
fn run_report_sorts_filters_and_opens_in_headless_chromium() {
    let Some(chromium) = chromium() else { return };
    let work = tempfile::tempdir().unwrap();
    let page = work.path().join("report.html");
    let recs = records();
    report::write_html(
        &page,
        &Heading {
            title: "run <test> & co".into(),
            notes: vec!["250 predictions".into()],
        },
        &recs,
    )
    .unwrap();

    // Everything: 250 predictions, pages of 100.
    let all = dom(&chromium, &page, "", work.path());
    assert_eq!(text_of(&all, "total"), "250");
    assert_eq!(text_of(&all, "shown"), "250");
    assert_eq!(table_rows(&all), 100, "the first page");
    assert_eq!(text_of(&all, "page"), "1/3");
    assert!(
        all.contains("<title>run &lt;test&gt; &amp; co</title>"),
        "title intact"
    );
    assert!(!all.contains("pwned"), "the hostile patch did not run");

    // A filter in the fragment: resolved predictions of one repository, sorted by duration.
    let want = recs
        .iter()
        .filter(|r| r.verdict == "resolved" && r.repo == "owner/repo1")
        .count();
    let filtered = dom(
        &chromium,
        &page,
        "#verdict=resolved&repo=owner%2Frepo1&sort=duration&desc=1",
        work.path(),
    );
    assert_eq!(text_of(&filtered, "shown"), want.to_string());
    assert_eq!(table_rows(&filtered), want);
    assert_eq!(
        tbody(&filtered).matches("v-resolved").count(),
        2 * want,
        "verdict and strict"
    );
    assert_eq!(tbody(&filtered).matches("v-unresolved").count(), 0);
    let durations: Vec<f64> = filtered
        .split("<tr data-i=")
        .skip(1)
        .map(|row| {
            let cells: Vec<&str> = row.split("<td").collect();
            let last = cells.last().unwrap();
            last[last.find('>').unwrap() + 1..last.find("</td>").unwrap()]
                .parse()
                .unwrap()
        })
        .collect();
    assert!(
        durations.windows(2).all(|w| w[0] >= w[1]),
        "sorted by duration, longest first: {durations:?}"
    );

    // A text filter, and the hostile row opened: its patch is shown as text.
    let opened = dom(&chromium, &page, "#q=repo1-7&open=7", work.path());
    let matching = recs
        .iter()
        .filter(|r| r.instance_id.contains("repo1-7"))
        .count();
    assert_eq!(text_of(&opened, "shown"), matching.to_string());
    assert_eq!(table_rows(&opened), matching);
    assert!(!opened.contains("pwned\"") && !opened.contains("data-pwned"));
    assert!(
        opened.contains("&lt;/script&gt;&lt;script&gt;document.title='pwned'"),
        "the patch is text in the page"
    );
    assert!(
        opened.contains("tests/test_x.py::test_7"),
        "failing tests listed"
    );
    assert!(opened.contains("pytest tests/"), "eval script shown");
    assert!(opened.contains("last line of log 7"), "log tail shown");

    // A screenshot that is a real picture.
    let shot = work.path().join("shot.png");
    let profile = tempfile::tempdir_in(work.path()).unwrap();
    let out = headless_chromium(&chromium, profile.path())
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1280,1000")
        .arg(format!("file://{}#open=3", page.display()))
        .output()
        .unwrap();
    assert!(
        shot.is_file(),
        "no screenshot: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::metadata(&shot).unwrap().len() > 20_000);
    assert!(png_colours(&shot) > 20, "not blank or one colour");
}
