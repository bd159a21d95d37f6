//! `report.html`: one self-contained page per run to browse every prediction.
//!
//! The page works from `file://` with no network: CSS and JavaScript are inline, a Content
//! Security Policy forbids every fetch, and the data is embedded once as JSON in a
//! `<script type="application/json">` element. That JSON escapes `<`, `>`, `&`, U+2028 and
//! U+2029, so no patch or log (say, one holding `</script>`) can end the element early, and the
//! script only ever puts data into the page as text (`textContent`), never as markup.
//!
//! At the top: resolve rate and counts per verdict. Below, a table of every prediction
//! (instance, repository, model, sample, verdict, strict verdict, FAIL_TO_PASS and PASS_TO_PASS
//! counts, similarity, duration) that sorts by any column and filters by text, verdict, strict
//! verdict and repository. It shows 100 rows a page, so 5,000 predictions stay quick. A row
//! opens its patch, its failing tests with their status, its eval script and the last lines of
//! its test log. The view is kept in the URL's fragment (`#verdict=resolved&sort=duration&open=3`),
//! so a view can be bookmarked and a headless browser can be pointed at one.
//!
//! Only tails are embedded: patches up to `MAX_PATCH` bytes, the last [`LOG_TAIL_LINES`]
//! lines of a log (at most [`MAX_LOG_TAIL`] bytes); identical eval scripts are stored once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::ReportError;
use crate::fsutil;

/// Bytes of a patch embedded at most (the rest is cut with a note).
pub const MAX_PATCH: usize = 64 * 1024;
/// Lines of the test log's end embedded.
pub const LOG_TAIL_LINES: usize = 80;
/// Bytes of the log tail embedded at most.
pub const MAX_LOG_TAIL: usize = 8 * 1024;
/// Bytes of an eval script embedded at most.
pub const MAX_SCRIPT: usize = 64 * 1024;

/// Text given in memory or to be read from a file when the page is written.
#[derive(Debug, Clone)]
pub enum Text {
    /// The text itself.
    Inline(String),
    /// A file to read (lossily as UTF-8); a file that cannot be read shows as absent.
    File(PathBuf),
}

impl Text {
    fn read(&self) -> Option<String> {
        match self {
            Text::Inline(s) => Some(s.clone()),
            Text::File(p) => std::fs::read(p)
                .ok()
                .map(|b| String::from_utf8_lossy(&b).into_owned()),
        }
    }
}

/// One test that did not pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailingTest {
    /// The test's id as the dataset lists it.
    pub name: String,
    /// `FAIL_TO_PASS` or `PASS_TO_PASS`.
    pub group: String,
    /// As the log shows it (`FAILED`, `ERROR`, `SKIPPED`, ...), or `not in log`.
    pub status: String,
}

/// One prediction as the page shows it.
#[derive(Debug, Clone, Default)]
pub struct Record {
    /// The dataset instance.
    pub instance_id: String,
    /// Its repository, `owner/name`.
    pub repo: String,
    /// `model_name_or_path` of the prediction.
    pub model: String,
    /// The prediction's sample number for this instance and model.
    pub sample: u32,
    /// resolved, unresolved, error, empty_patch or infra_error.
    pub verdict: String,
    /// Why, for errors (patch_apply_failed, timeout, ...).
    pub reason: Option<String>,
    /// The verdict under strict grading.
    pub strict_verdict: String,
    /// (success, failure) counts of FAIL_TO_PASS.
    pub fail_to_pass: Option<(usize, usize)>,
    /// (success, failure) counts of PASS_TO_PASS.
    pub pass_to_pass: Option<(usize, usize)>,
    /// SWE-RL similarity to the gold patch, where computed.
    pub similarity: Option<f64>,
    /// Seconds the prediction's job took.
    pub duration_secs: Option<f64>,
    /// The patch (its first `MAX_PATCH` bytes are shown).
    pub patch: Option<Text>,
    /// The eval script that ran.
    pub eval_script: Option<Text>,
    /// The test log (its tail is shown).
    pub test_log: Option<Text>,
    /// The tests that did not pass, with their status.
    pub failing_tests: Vec<FailingTest>,
}

/// The page's heading.
#[derive(Debug, Clone, Default)]
pub struct Heading {
    /// The page's title.
    pub title: String,
    /// Lines under the title (run id, grading mode, ...).
    pub notes: Vec<String>,
}

/// Cuts `s` to at most `max` bytes at a character boundary from the start.
fn head(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[... {} more bytes not shown]",
        &s[..end],
        s.len() - end
    )
}

/// The last `lines` lines of `s`, at most `max` bytes.
pub fn tail(s: &str, lines: usize, max: usize) -> String {
    let trimmed = s.trim_end_matches('\n');
    let mut start = trimmed.len();
    for _ in 0..lines {
        match trimmed[..start].rfind('\n') {
            Some(i) => start = i,
            None => {
                start = 0;
                break;
            }
        }
    }
    let mut from = if start == 0 { 0 } else { start + 1 };
    if trimmed.len() - from > max {
        from = trimmed.len() - max;
        while !trimmed.is_char_boundary(from) {
            from += 1;
        }
    }
    if from > 0 {
        format!("[... {from} bytes before]\n{}", &trimmed[from..])
    } else {
        trimmed.to_string()
    }
}

/// JSON for a `<script type="application/json">` element: nothing in it can close the element
/// or be read as markup.
pub fn script_safe_json(v: &Value) -> String {
    let raw = v.to_string();
    let mut out = String::with_capacity(raw.len() + raw.len() / 16);
    for c in raw.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// Text as HTML character data or attribute value.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The page's data: the rows (arrays, in the column order the script reads), the details of
/// each row, and the eval scripts (stored once each).
fn data(heading: &Heading, records: &[Record]) -> Value {
    let mut scripts: Vec<String> = Vec::new();
    let mut script_index: HashMap<String, usize> = HashMap::new();
    let mut rows = Vec::with_capacity(records.len());
    let mut details = Vec::with_capacity(records.len());
    for r in records {
        let pair = |p: Option<(usize, usize)>| p.map_or(Value::Null, |(s, f)| json!([s, f]));
        rows.push(json!([
            r.instance_id,
            r.repo,
            r.model,
            r.sample,
            r.verdict,
            r.reason,
            r.strict_verdict,
            pair(r.fail_to_pass),
            pair(r.pass_to_pass),
            r.similarity.map(|x| (x * 10_000.0).round() / 10_000.0),
            r.duration_secs.map(|x| (x * 10.0).round() / 10.0),
        ]));
        let script = r.eval_script.as_ref().and_then(Text::read).map(|s| {
            let s = head(&s, MAX_SCRIPT);
            let next = scripts.len();
            *script_index.entry(s.clone()).or_insert_with(|| {
                scripts.push(s);
                next
            })
        });
        details.push(json!({
            "patch": r.patch.as_ref().and_then(Text::read).map(|p| head(&p, MAX_PATCH)),
            "log": r.test_log.as_ref().and_then(Text::read).map(|l| tail(&l, LOG_TAIL_LINES, MAX_LOG_TAIL)),
            "script": script,
            "tests": r.failing_tests.iter().map(|t| json!([t.name, t.group, t.status])).collect::<Vec<_>>(),
        }));
    }
    json!({
        "title": heading.title,
        "notes": heading.notes,
        "rows": rows,
        "details": details,
        "scripts": scripts,
    })
}

/// The whole page.
pub fn render(heading: &Heading, records: &[Record]) -> String {
    let data = script_safe_json(&data(heading, records));
    let title = escape_html(&heading.title);
    let mut page = String::with_capacity(data.len() + PAGE_CSS.len() + PAGE_JS.len() + 4096);
    page.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    page.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n");
    page.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    page.push_str(&format!(
        "<title>{title}</title>\n<style>{PAGE_CSS}</style>\n</head>\n"
    ));
    page.push_str(&format!("<body>\n<header><h1>{title}</h1><div id=\"notes\"></div><div id=\"summary\"></div><div id=\"groups\"></div></header>\n"));
    page.push_str(PAGE_BODY);
    page.push_str("<script type=\"application/json\" id=\"data\">");
    page.push_str(&data);
    page.push_str("</script>\n<script>");
    page.push_str(PAGE_JS);
    page.push_str("</script>\n</body>\n</html>\n");
    page
}

/// Writes the page atomically to `path`.
pub fn write(path: &Path, heading: &Heading, records: &[Record]) -> Result<(), ReportError> {
    fsutil::write_atomic(path, render(heading, records).as_bytes())?;
    Ok(())
}

/// The failing tests of an official `report.json` (its FAIL_TO_PASS and PASS_TO_PASS
/// failures), each with its status in the test log when the log and its parser are given.
pub fn failing_tests(
    report: &super::InstanceReport,
    log: Option<&str>,
    parser: Option<&str>,
) -> Vec<FailingTest> {
    let Some(ts) = &report.tests_status else {
        return Vec::new();
    };
    let statuses = match (log, parser) {
        (Some(log), Some(parser)) => {
            crate::logparse::parse(parser, crate::logparse::test_section(log).unwrap_or(log)).ok()
        }
        _ => None,
    };
    let mut out = Vec::new();
    for (group, tests) in [
        ("FAIL_TO_PASS", &ts.fail_to_pass.failure),
        ("PASS_TO_PASS", &ts.pass_to_pass.failure),
    ] {
        for t in tests {
            let status = match &statuses {
                Some(map) => map
                    .get(t)
                    .map_or("not in log".to_string(), |s| s.as_str().to_string()),
                None => "failed".to_string(),
            };
            out.push(FailingTest {
                name: t.clone(),
                group: group.to_string(),
                status,
            });
        }
    }
    out
}

/// The records of a grading from saved logs (`swe-eval grade`): one per prediction, with the
/// verdict under `mode`, the log's tail and the similarity of the patch to the gold patch.
/// `verdicts` and `logs` are parallel to `preds`; a prediction without a verdict shows as an
/// error.
pub fn records_for_grading(
    ds: &crate::dataset::Dataset,
    preds: &[crate::predictions::Prediction],
    verdicts: &[crate::grading::Graded],
    logs: &[super::logs::SavedLog],
    mode: crate::grading::Mode,
) -> Vec<Record> {
    use super::logs::SavedLog;
    preds
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let inst = ds.get(&p.instance_id);
            let v = verdicts.get(i);
            let log = match logs.get(i) {
                Some(SavedLog::Output(l)) => Some(l.as_str()),
                _ => None,
            };
            let counts = |f: fn(&crate::grading::TestGroups) -> &crate::grading::Group| {
                v.and_then(|v| v.tests(mode))
                    .map(|t| (f(t).success.len(), f(t).failure.len()))
            };
            let failing = v
                .and_then(|v| super::InstanceReport::from_verdict(v, mode))
                .map(|r| {
                    failing_tests(
                        &r,
                        log,
                        inst.map(|i| {
                            i.log_parser
                                .as_deref()
                                .unwrap_or_else(|| crate::logparse::parser_for_repo(&i.repo))
                        }),
                    )
                })
                .unwrap_or_default();
            Record {
                instance_id: p.instance_id.clone(),
                repo: inst.map(|i| i.repo.clone()).unwrap_or_default(),
                model: p.model_name_or_path.clone(),
                sample: p.sample,
                verdict: v.map_or("error", |v| v.category(mode).as_str()).to_string(),
                reason: match v {
                    None => Some("not graded".to_string()),
                    Some(v) => v.error_reason.map(|r| r.as_str().to_string()).or_else(|| {
                        v.needs_network.as_ref().map(|e| match e.explains_all() {
                            true => format!("needs network: {}", e.summary()),
                            false => e.summary(),
                        })
                    }),
                },
                strict_verdict: v
                    .map_or("error", |v| v.strict_category.as_str())
                    .to_string(),
                fail_to_pass: counts(|t| &t.fail_to_pass),
                pass_to_pass: counts(|t| &t.pass_to_pass),
                similarity: match inst {
                    Some(i) if !p.is_empty_patch() => {
                        Some(crate::reward::unidiff_reward(&i.patch, p.patch()).similarity)
                    }
                    _ => None,
                },
                duration_secs: None,
                patch: Some(Text::Inline(p.patch().to_string())),
                eval_script: inst.and_then(|i| i.eval_script.clone()).map(Text::Inline),
                test_log: log.map(|l| Text::Inline(tail(l, LOG_TAIL_LINES, MAX_LOG_TAIL))),
                failing_tests: failing,
            }
        })
        .collect()
}

/// `report.html` of a grading from saved logs (see [`records_for_grading`]).
pub fn write_graded(
    path: &Path,
    run_id: &str,
    ds: &crate::dataset::Dataset,
    preds: &[crate::predictions::Prediction],
    verdicts: &[crate::grading::Graded],
    logs: &[super::logs::SavedLog],
    mode: crate::grading::Mode,
) -> Result<(), ReportError> {
    let heading = Heading {
        title: format!("swe-eval grade {run_id}"),
        notes: vec![
            format!("{} predictions graded from saved logs", preds.len()),
            format!("verdicts in {mode:?} mode").to_lowercase(),
        ],
    };
    write(
        path,
        &heading,
        &records_for_grading(ds, preds, verdicts, logs, mode),
    )
}

const PAGE_BODY: &str = r##"<main>
<div id="controls">
<input id="q" type="search" placeholder="filter: instance, repository, model, reason" aria-label="filter">
<select id="verdict" aria-label="verdict"><option value="">every verdict</option></select>
<select id="strict" aria-label="strict verdict"><option value="">every strict verdict</option></select>
<select id="repo" aria-label="repository"><option value="">every repository</option></select>
<span id="count"><span id="shown">0</span> of <span id="total">0</span> predictions</span>
<span id="pager"><button id="prev" type="button">&#8249; prev</button> <span id="page">1/1</span> <button id="next" type="button">next &#8250;</button></span>
</div>
<table id="grid">
<thead><tr>
<th data-col="0">instance</th><th data-col="1">repository</th><th data-col="2">model</th><th data-col="3" class="n">sample</th>
<th data-col="4">verdict</th><th data-col="6">strict</th><th data-col="7" class="n">F2P pass/fail</th><th data-col="8" class="n">P2P pass/fail</th>
<th data-col="9" class="n">similarity</th><th data-col="10" class="n">duration (s)</th>
</tr></thead>
<tbody id="rows"></tbody>
</table>
<p id="empty" hidden>No prediction matches the filter.</p>
<section id="detail" hidden>
<h2 id="d-title"></h2>
<p id="d-meta"></p>
<h3>Patch</h3><pre id="d-patch" class="code"></pre>
<h3>Failing tests</h3><table id="d-tests"><thead><tr><th>test</th><th>group</th><th>status</th></tr></thead><tbody></tbody></table><p id="d-notests" hidden>None.</p>
<h3>Eval script</h3><pre id="d-script" class="code"></pre>
<h3>Test log (end)</h3><pre id="d-log" class="code"></pre>
</section>
</main>
"##;

const PAGE_CSS: &str = r##"
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0;color:#1b1f24;background:#fff}
header{padding:16px 24px 8px;border-bottom:1px solid #d0d7de}
h1{font-size:20px;margin:0 0 4px}
#notes,#groups{color:#57606a;font-size:13px}
#groups{margin-top:8px}
.why{color:#57606a;font-size:12px}
#summary{display:flex;flex-wrap:wrap;gap:8px;margin-top:10px}
.stat{border:1px solid #d0d7de;border-radius:6px;padding:6px 12px;min-width:90px}
.stat b{display:block;font-size:20px}
.stat.main{background:#f6f8fa}
main{padding:12px 24px}
#controls{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin-bottom:8px}
#q{flex:1 1 260px;padding:5px 8px}
select,button{padding:4px 6px}
#count{color:#57606a}
table{border-collapse:collapse;width:100%}
#grid th{position:sticky;top:0;background:#f6f8fa;cursor:pointer;user-select:none;text-align:left;border-bottom:1px solid #d0d7de;padding:5px 8px;white-space:nowrap}
#grid th.sorted::after{content:" \25B2"}
#grid th.sorted.desc::after{content:" \25BC"}
#grid td{padding:3px 8px;border-bottom:1px solid #eaeef2;white-space:nowrap}
#grid tbody tr{cursor:pointer}
#grid tbody tr:hover{background:#f3f6fa}
#grid tbody tr.open{background:#ddf4ff}
.n{text-align:right}
.v{border-radius:10px;padding:1px 8px;font-size:12px;font-weight:600}
.v-resolved{background:#dafbe1;color:#116329}
.v-unresolved{background:#ffebe9;color:#a40e26}
.v-error{background:#fff8c5;color:#7d4e00}
.v-empty_patch{background:#eaeef2;color:#57606a}
.v-infra_error{background:#fbefff;color:#6e40c9}
#detail{margin-top:16px;border-top:2px solid #0969da;padding-top:8px}
#detail h2{font-size:17px;margin:4px 0}
#detail h3{font-size:14px;margin:14px 0 4px}
pre.code{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:8px;max-height:420px;overflow:auto;font:12px/1.45 ui-monospace,"DejaVu Sans Mono",monospace;white-space:pre}
.add{color:#116329;background:#e6ffec;display:block}
.del{color:#a40e26;background:#ffebe9;display:block}
.hunk{color:#0550ae;display:block}
#d-tests td,#d-tests th{border-bottom:1px solid #eaeef2;padding:2px 8px;text-align:left;font-size:13px}
"##;

const PAGE_JS: &str = r##"
"use strict";
(function () {
  var t0 = performance.now();
  var dataEl = document.getElementById("data");
  var D = JSON.parse(dataEl.textContent);
  dataEl.textContent = ""; // parsed once; the DOM need not keep a second copy
  var ROWS = D.rows, PAGE = 100;
  var C = {id: 0, repo: 1, model: 2, sample: 3, verdict: 4, reason: 5, strict: 6, f2p: 7, p2p: 8, sim: 9, dur: 10};
  var NAMES = {instance: 0, repository: 1, model: 2, sample: 3, verdict: 4, strict: 6, f2p: 7, p2p: 8, similarity: 9, duration: 10};
  var $ = function (id) { return document.getElementById(id); };
  var el = function (tag, text, cls) { var e = document.createElement(tag); if (text != null) e.textContent = text; if (cls) e.className = cls; return e; };
  var state = {q: "", verdict: "", strict: "", repo: "", sort: -1, desc: false, page: 0, open: -1};
  var view = [];

  $("notes").textContent = D.notes.join(" \u00b7 ");
  // Summary at the top: resolve rate and counts per verdict.
  var counts = {}, strictResolved = 0;
  ROWS.forEach(function (r) { counts[r[C.verdict]] = (counts[r[C.verdict]] || 0) + 1; if (r[C.strict] === "resolved") strictResolved++; });
  var total = ROWS.length, resolved = counts.resolved || 0;
  var stat = function (label, value, cls) { var d = el("div", null, "stat" + (cls ? " " + cls : "")); d.appendChild(el("b", String(value))); d.appendChild(el("span", label)); $("summary").appendChild(d); };
  stat("resolve rate (" + resolved + "/" + total + ")", total ? (100 * resolved / total).toFixed(1) + "%" : "n/a", "main");
  ["resolved", "unresolved", "error", "empty_patch", "infra_error"].forEach(function (k) { stat(k.replace("_", " "), counts[k] || 0); });
  stat("strict resolved", strictResolved);
  // With several models or samples, the resolve rate of each.
  var groups = {}, order = [];
  ROWS.forEach(function (r) {
    var g = r[C.model] + " sample " + r[C.sample];
    if (!groups[g]) { groups[g] = [0, 0, r[C.model], r[C.sample]]; order.push(g); }
    groups[g][1]++; if (r[C.verdict] === "resolved") groups[g][0]++;
  });
  order.sort(function (a, b) { var x = groups[a], y = groups[b]; return x[2] < y[2] ? -1 : x[2] > y[2] ? 1 : x[3] - y[3]; });
  if (order.length > 1) {
    $("groups").textContent = "resolved per model and sample: " + order.map(function (g) { return g + ": " + groups[g][0] + "/" + groups[g][1]; }).join(" \u00b7 ");
  }

  var fill = function (sel, col) {
    var seen = {};
    ROWS.forEach(function (r) { seen[r[col]] = 1; });
    Object.keys(seen).sort().forEach(function (v) { var o = el("option", v); o.value = v; $(sel).appendChild(o); });
  };
  fill("verdict", C.verdict); fill("strict", C.strict); fill("repo", C.repo);
  $("total").textContent = total;

  var readHash = function () {
    var h = location.hash.replace(/^#/, "");
    state = {q: "", verdict: "", strict: "", repo: "", sort: -1, desc: false, page: 0, open: -1};
    h.split("&").forEach(function (kv) {
      if (!kv) return;
      var i = kv.indexOf("="), k = decodeURIComponent(i < 0 ? kv : kv.slice(0, i)), v = i < 0 ? "" : decodeURIComponent(kv.slice(i + 1).replace(/\+/g, " "));
      if (k === "q" || k === "verdict" || k === "strict" || k === "repo") state[k] = v;
      else if (k === "sort") state.sort = v in NAMES ? NAMES[v] : (isNaN(+v) ? -1 : +v);
      else if (k === "desc") state.desc = v !== "0";
      else if (k === "page") state.page = Math.max(0, (parseInt(v, 10) || 1) - 1);
      else if (k === "open") state.open = parseInt(v, 10);
    });
    $("q").value = state.q; $("verdict").value = state.verdict; $("strict").value = state.strict; $("repo").value = state.repo;
  };
  var writeHash = function () {
    var parts = [];
    ["q", "verdict", "strict", "repo"].forEach(function (k) { if (state[k]) parts.push(k + "=" + encodeURIComponent(state[k])); });
    if (state.sort >= 0) parts.push("sort=" + state.sort);
    if (state.desc) parts.push("desc=1");
    if (state.page) parts.push("page=" + (state.page + 1));
    if (state.open >= 0) parts.push("open=" + state.open);
    history.replaceState(null, "", parts.length ? "#" + parts.join("&") : location.pathname + location.search);
  };

  var key = function (r, col) {
    var v = r[col];
    if (col === C.f2p || col === C.p2p) return v ? v[0] - v[1] / 1e6 : -1;
    return v;
  };
  var compute = function () {
    var q = state.q.toLowerCase();
    view = [];
    for (var i = 0; i < ROWS.length; i++) {
      var r = ROWS[i];
      if (state.verdict && r[C.verdict] !== state.verdict) continue;
      if (state.strict && r[C.strict] !== state.strict) continue;
      if (state.repo && r[C.repo] !== state.repo) continue;
      if (q && (r[C.id] + " " + r[C.repo] + " " + r[C.model] + " " + (r[C.reason] || "") + " " + r[C.verdict]).toLowerCase().indexOf(q) < 0) continue;
      view.push(i);
    }
    if (state.sort >= 0) {
      var col = state.sort, sign = state.desc ? -1 : 1;
      view.sort(function (a, b) {
        var x = key(ROWS[a], col), y = key(ROWS[b], col);
        if (x === y) return a - b;
        if (x == null) return 1;
        if (y == null) return -1;
        return (x < y ? -1 : 1) * sign;
      });
    }
  };
  var fmt = function (v, col) {
    if (v == null) return "";
    if (col === C.f2p || col === C.p2p) return v[0] + " / " + v[1];
    if (col === C.sim) return v.toFixed(3);
    if (col === C.dur) return v.toFixed(1);
    return String(v);
  };
  var render = function () {
    var pages = Math.max(1, Math.ceil(view.length / PAGE));
    if (state.page >= pages) state.page = pages - 1;
    var body = $("rows"), frag = document.createDocumentFragment();
    var start = state.page * PAGE, end = Math.min(view.length, start + PAGE);
    for (var k = start; k < end; k++) {
      var i = view[k], r = ROWS[i], tr = document.createElement("tr");
      tr.dataset.i = i;
      if (i === state.open) tr.className = "open";
      [C.id, C.repo, C.model, C.sample, C.verdict, C.strict, C.f2p, C.p2p, C.sim, C.dur].forEach(function (col) {
        var td = el("td", null, (col === C.sample || col >= C.f2p) ? "n" : "");
        if (col === C.verdict || col === C.strict) {
          var s = el("span", r[col], "v v-" + r[col]);
          td.appendChild(s);
          if (col === C.verdict && r[C.reason]) { s.title = r[C.reason]; td.appendChild(el("span", " " + r[C.reason], "why")); }
        } else td.textContent = fmt(r[col], col);
        tr.appendChild(td);
      });
      frag.appendChild(tr);
    }
    body.textContent = "";
    body.appendChild(frag);
    $("shown").textContent = view.length;
    $("page").textContent = (state.page + 1) + "/" + pages;
    $("prev").disabled = state.page === 0;
    $("next").disabled = state.page >= pages - 1;
    $("empty").hidden = view.length > 0;
    Array.prototype.forEach.call(document.querySelectorAll("#grid th"), function (th) {
      var on = +th.dataset.col === state.sort;
      th.classList.toggle("sorted", on);
      th.classList.toggle("desc", on && state.desc);
    });
    showDetail();
  };
  var diffInto = function (pre, text) {
    pre.textContent = "";
    if (text == null) { pre.textContent = "(none)"; return; }
    var frag = document.createDocumentFragment();
    text.split("\n").forEach(function (line) {
      var c = line.charAt(0), cls = "";
      if (line.indexOf("+++") === 0 || line.indexOf("---") === 0) cls = "";
      else if (c === "+") cls = "add"; else if (c === "-") cls = "del"; else if (line.indexOf("@@") === 0) cls = "hunk";
      if (cls) frag.appendChild(el("span", line, cls)); else frag.appendChild(document.createTextNode(line + "\n"));
    });
    pre.appendChild(frag);
  };
  var showDetail = function () {
    var i = state.open, box = $("detail");
    if (!(i >= 0 && i < ROWS.length)) { box.hidden = true; return; }
    var r = ROWS[i], d = D.details[i];
    box.hidden = false;
    $("d-title").textContent = r[C.id] + " \u00b7 " + r[C.model] + " \u00b7 sample " + r[C.sample];
    $("d-meta").textContent = "verdict " + r[C.verdict] + (r[C.reason] ? " (" + r[C.reason] + ")" : "") + " \u00b7 strict " + r[C.strict] +
      " \u00b7 FAIL_TO_PASS " + fmt(r[C.f2p], C.f2p) + " \u00b7 PASS_TO_PASS " + fmt(r[C.p2p], C.p2p) +
      (r[C.sim] != null ? " \u00b7 similarity " + fmt(r[C.sim], C.sim) : "") + (r[C.dur] != null ? " \u00b7 " + fmt(r[C.dur], C.dur) + " s" : "");
    diffInto($("d-patch"), d.patch);
    var tb = $("d-tests").tBodies[0];
    tb.textContent = "";
    d.tests.forEach(function (t) { var tr = el("tr"); t.forEach(function (v) { tr.appendChild(el("td", v)); }); tb.appendChild(tr); });
    $("d-tests").hidden = d.tests.length === 0;
    $("d-notests").hidden = d.tests.length > 0;
    $("d-script").textContent = d.script == null ? "(none)" : D.scripts[d.script];
    $("d-log").textContent = d.log == null ? "(none)" : d.log;
    $("d-log").scrollTop = $("d-log").scrollHeight;
  };
  var update = function (resetPage) { if (resetPage) state.page = 0; writeHash(); compute(); render(); };

  $("q").addEventListener("input", function () { state.q = this.value; update(true); });
  ["verdict", "strict", "repo"].forEach(function (id) { $(id).addEventListener("change", function () { state[id] = this.value; update(true); }); });
  $("prev").addEventListener("click", function () { state.page--; update(false); });
  $("next").addEventListener("click", function () { state.page++; update(false); });
  Array.prototype.forEach.call(document.querySelectorAll("#grid th"), function (th) {
    th.addEventListener("click", function () {
      var col = +th.dataset.col;
      if (state.sort === col) state.desc = !state.desc; else { state.sort = col; state.desc = false; }
      update(false);
    });
  });
  $("rows").addEventListener("click", function (e) {
    var tr = e.target.closest("tr");
    if (!tr) return;
    var i = +tr.dataset.i;
    state.open = state.open === i ? -1 : i;
    writeHash(); render();
    if (state.open >= 0) $("detail").scrollIntoView({block: "start"});
  });
  window.addEventListener("hashchange", function () { readHash(); compute(); render(); });
  readHash(); compute(); render();
  document.body.dataset.renderMs = Math.round(performance.now() - t0);
  document.body.dataset.ready = "1";
})();
"##;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_data_cannot_close_the_script_element() {
        let rec = Record {
            instance_id: "a</script><script>alert(1)</script>".into(),
            verdict: "resolved".into(),
            strict_verdict: "resolved".into(),
            patch: Some(Text::Inline("+</script>\u{2028}&amp;<!--".into())),
            ..Record::default()
        };
        let page = render(
            &Heading {
                title: "<b>run</b>".into(),
                notes: vec![],
            },
            &[rec],
        );
        assert_eq!(
            page.matches("</script>").count(),
            2,
            "only the two real ends"
        );
        assert!(!page.contains("<!--"));
        assert!(page.contains("<title>&lt;b&gt;run&lt;/b&gt;</title>"));
        let start = page.find("id=\"data\">").unwrap() + "id=\"data\">".len();
        let end = start + page[start..].find("</script>").unwrap();
        let back: Value = serde_json::from_str(&page[start..end]).unwrap();
        assert_eq!(back["rows"][0][0], "a</script><script>alert(1)</script>");
        assert_eq!(back["details"][0]["patch"], "+</script>\u{2028}&amp;<!--");
    }

    #[test]
    fn tails_keep_the_last_lines_within_the_byte_limit() {
        let log: String = (1..=200).map(|i| format!("line {i}\n")).collect();
        let t = tail(&log, 3, 1000);
        assert!(t.ends_with("line 198\nline 199\nline 200"), "{t}");
        assert!(t.starts_with("[... "), "{t}");
        assert_eq!(tail("a\nb\n", 5, 100), "a\nb");
        let t = tail(&"é".repeat(50), 10, 7);
        assert!(t.ends_with("ééé"), "{t}");
    }

    #[test]
    fn identical_eval_scripts_are_stored_once() {
        let rec = |id: &str| Record {
            instance_id: id.into(),
            eval_script: Some(Text::Inline("#!/bin/bash\npytest\n".into())),
            ..Record::default()
        };
        let d = data(&Heading::default(), &[rec("a"), rec("b")]);
        assert_eq!(d["scripts"].as_array().unwrap().len(), 1);
        assert_eq!(d["details"][1]["script"], 0);
    }
}
