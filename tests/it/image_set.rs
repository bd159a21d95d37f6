//! `swe-eval images` end to end on the mini benchmark's `calc` instances: `build` on the
//! machine's daemon, `list`, `export` to one archive; then on a second `dockerd` in a network
//! namespace of the test's own (a daemon with none of the images): `list` (all missing),
//! `import`, `list` (all present; with `--ca-cert`, the same recipe built without a CA
//! bundle, which prune keeps), a run that builds nothing; then an older recipe's image and
//! a removed one (`list`: stale and missing), a hold of a live run on the stale one, and `prune`
//! (dry, then for real: the held image spared, the rest of what the selection does not use
//! removed, the selection's images kept; then, the hold gone, the stale image removed). A guard
//! takes the second daemon, its namespace and files down, also on failure.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{bin, require};
use crate::daemons::{
    can_start_namespaced_daemons, kill_leftovers, must, run, spawn_ns_dockerd, stop_daemon,
    unmount_leftovers,
};

const CALC: [&str; 2] = ["swe-eval-mini__calc-1", "swe-eval-mini__calc-2"];

/// A `dockerd` in a network namespace of its own with nothing on it.
struct Daemon {
    ns: String,
    dir: PathBuf,
    _tmp: tempfile::TempDir,
    cgroup_parent: String,
    child: Option<Child>,
}

impl Daemon {
    fn start() -> Daemon {
        let tag = format!("swi{}", std::process::id() % 100_000);
        let tmp = tempfile::Builder::new()
            .prefix("si")
            .tempdir_in("/tmp")
            .unwrap();
        crate::daemons::mark_owner(tmp.path());
        let mut d = Daemon {
            ns: format!("{tag}-ns"),
            dir: tmp.path().to_path_buf(),
            _tmp: tmp,
            cgroup_parent: format!("/{tag}-daemon"),
            child: None,
        };
        must("ip", &["netns", "add", &d.ns]);
        must("ip", &["-n", &d.ns, "link", "set", "lo", "up"]);
        d.child = Some(spawn_ns_dockerd(&d.ns, &d.dir, &d.host(), &d.cgroup_parent));
        let t0 = Instant::now();
        while d.docker(&["version"]).is_err() {
            if t0.elapsed() > Duration::from_secs(180) {
                let log = std::fs::read_to_string(d.dir.join("dockerd.log")).unwrap_or_default();
                panic!("the second daemon did not answer within 180 s; its log:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        d
    }

    fn host(&self) -> String {
        format!("unix://{}", self.dir.join("d.sock").display())
    }

    fn docker(&self, args: &[&str]) -> Result<String, String> {
        let host = self.host();
        let mut all = vec!["-H", host.as_str()];
        all.extend_from_slice(args);
        run("docker", &all)
    }

    fn must(&self, args: &[&str]) -> String {
        self.docker(args)
            .unwrap_or_else(|e| panic!("docker {args:?} on the second daemon: {e}"))
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(c) = self.child.take() {
            stop_daemon(c);
        }
        kill_leftovers(&self.dir, &self.cgroup_parent);
        unmount_leftovers(&self.dir);
        let _ = run("ip", &["netns", "del", &self.ns]);
    }
}

/// `swe-eval images ARGS` (or `run`, when `args` starts with it) in `dir`, against `host`
/// (`None`: the machine's daemon), on the mini benchmark's calc instances.
fn swe_eval(dir: &Path, host: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = Command::new(bin());
    if args.first() != Some(&"run") {
        cmd.arg("images");
    }
    cmd.args(args).current_dir(dir);
    if let Some(h) = host {
        cmd.env("DOCKER_HOST", h);
    }
    let out = cmd.output().expect("spawn swe-eval");
    eprintln!(
        "swe-eval {args:?}: exit {:?}\n{}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn ok(o: &Output, what: &str) -> String {
    assert_eq!(o.status.code(), Some(0), "{what}: exit code");
    stdout(o)
}

/// The listing of the calc instances, as JSON.
fn listing(dir: &Path, host: Option<&str>) -> Value {
    let o = swe_eval(dir, host, &["list", "-i", &CALC.join(","), "--json"]);
    let v: Value = serde_json::from_str(&ok(&o, "list")).expect("list --json is JSON");
    assert_eq!(v["format_version"], 1);
    v
}

/// Each layer's state of instance `i` of the listing: `[(layer, state)]`.
fn states(v: &Value, i: usize) -> Vec<(String, String)> {
    v["instances"][i]["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["layer"].as_str().unwrap().to_string(),
                l["state"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn all(state: &str) -> Vec<(String, String)> {
    ["base", "env", "history", "instance"]
        .iter()
        .map(|l| (l.to_string(), state.to_string()))
        .collect()
}

/// Instance `i` can run without a build: its base, environment and instance images are
/// present; its history image too, unless it went after its instance image was built (a run
/// that made it removes it at the end; the instance image holds its layers).
fn assert_built(v: &Value, i: usize) {
    let s = states(v, i);
    let history_gone = (s[2].1 == "missing").then(|| ("history".into(), "missing".into()));
    let mut want = all("present");
    if let Some(h) = history_gone {
        want[2] = h;
    }
    assert_eq!(s, want, "{v}");
}

/// The image a layer of instance `i` has under the current recipe.
fn image(v: &Value, i: usize, layer: &str) -> String {
    v["instances"][i]["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["layer"] == layer)
        .and_then(|l| l["image"].as_str())
        .unwrap_or_else(|| panic!("instance {i} has no {layer} image: {v}"))
        .to_string()
}

#[test]
fn images_build_list_export_import_run_and_prune_sparing_a_held_image() {
    if !can_start_namespaced_daemons("a network namespace, a second dockerd")
        || !require("a Docker daemon", run("docker", &["version"]).is_ok())
    {
        return;
    }
    // The calc images are the mini benchmark's: no run of it may remove them meanwhile.
    let _turn = crate::common::mini_images_turn();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let ids = CALC.join(",");

    // On the machine's daemon: build, list, export.
    let built = swe_eval(dir, None, &["build", "-i", &ids, "-o", "results"]);
    let out = ok(&built, "build");
    assert!(
        out.contains("image preparation: 2 ready, 0 failed"),
        "{out}"
    );
    assert!(dir.join("results/logs/build_images").is_dir());
    let here = listing(dir, None);
    assert_eq!(here["ready"], 2, "{here}");
    for i in 0..2 {
        assert_built(&here, i);
    }
    let archive = dir.join("calc.tar.zst");
    let exported = swe_eval(dir, None, &["export", "-i", &ids, "-o", "calc.tar.zst"]);
    let out = ok(&exported, "export");
    assert!(
        out.contains("wrote ") && out.contains("of 2 instances"),
        "{out}"
    );
    let size = std::fs::metadata(&archive).unwrap().len();
    assert!(size > 1_000_000, "the archive holds the base: {size} bytes");
    // Again over it: refused without --force, written with it.
    let again = swe_eval(dir, None, &["export", "-i", &ids, "-o", "calc.tar.zst"]);
    assert_eq!(
        again.status.code(),
        Some(2),
        "an existing archive is refused"
    );
    let forced = ["export", "-i", &ids, "-o", "calc.tar.zst", "--force"];
    ok(&swe_eval(dir, None, &forced), "export --force");
    let size = std::fs::metadata(&archive).unwrap().len();
    assert!(size > 1_000_000, "written again whole: {size} bytes");

    // A daemon with none of the images.
    let second = Daemon::start();
    let host = second.host();
    let there = listing(dir, Some(&host));
    assert_eq!(there["ready"], 0);
    for i in 0..2 {
        assert_eq!(states(&there, i), all("missing"), "{there}");
    }
    let imported = swe_eval(dir, Some(&host), &["import", "calc.tar.zst"]);
    let out = ok(&imported, "import");
    assert!(out.contains("loaded "), "{out}");
    let there = listing(dir, Some(&host));
    assert_eq!(there["ready"], 2, "{there}");
    for i in 0..2 {
        // What was exported is there, layer by layer.
        assert_eq!(states(&there, i), states(&here, i), "{there}");
    }
    assert_eq!(there["unused"], Value::Array(vec![]), "{there}");

    // Listed for images with a CA bundle (`--ca-cert`: another environment, so other names),
    // the images there are the same recipe built without one: said so, and kept by prune.
    std::fs::write(dir.join("ca.pem"), "only whether there is one counts\n").unwrap();
    let with_ca = ["-i", &ids, "--ca-cert", "ca.pem"];
    let o = swe_eval(
        dir,
        Some(&host),
        &[&["list", "--json"], &with_ca[..]].concat(),
    );
    let v: Value = serde_json::from_str(&ok(&o, "list --ca-cert")).unwrap();
    assert_eq!(v["ready"], 0, "{v}");
    for i in 0..2 {
        for layer in ["env", "instance"] {
            let l = (v["instances"][i]["layers"].as_array().unwrap().iter())
                .find(|l| l["layer"] == layer)
                .unwrap();
            assert_eq!(l["state"], "stale", "{v}");
            let other = serde_json::json!({
                "image": image(&there, i, layer),
                "built_with_ca_cert": false
            });
            assert_eq!(l["other_ca"], other, "{v}");
        }
    }
    // The environment and instance images, and the history images when they are there.
    let kept = (v["unused"].as_array().unwrap().iter())
        .filter(|u| u["other_ca"]["built_with_ca_cert"] == false)
        .count();
    assert!(kept >= 3, "{v}");
    let o = swe_eval(dir, Some(&host), &[&["list"], &with_ca[..]].concat());
    let out = ok(&o, "list --ca-cert (table)");
    assert!(
        out.contains("built without the CA bundle (--ca-cert) this command was given")
            && out.contains(&format!("removes those but those {kept}"))
            && out.contains("2 instance(s) ready with the images built without"),
        "{out}"
    );
    let o = swe_eval(
        dir,
        Some(&host),
        &[&["prune", "--dry-run"], &with_ca[..]].concat(),
    );
    let out = ok(&o, "prune --ca-cert --dry-run");
    let env = image(&there, 0, "env");
    assert!(
        out.contains(&format!("kept {env}: the selection's recipe built without")),
        "{out}"
    );
    assert!(!out.contains("would remove"), "{out}");
    assert!(
        out.contains(&format!(
            "the selection's 2 image(s) and {kept} of its recipe built with the CA bundle the other way kept"
        )),
        "{out}"
    );

    // A run there builds nothing (the second daemon has no bridge: nothing could be built
    // that needs the network, and nothing is).
    let ran = swe_eval(
        dir,
        Some(&host),
        &["run", "-i", CALC[0], "--run-id", "imported", "-o", "ran"],
    );
    let out = ok(&ran, "run on the imported images");
    assert!(
        out.contains("image preparation: 1 ready, 0 failed"),
        "{out}"
    );
    let built = regex::Regex::new(r"[1-9][0-9]* built").unwrap();
    assert!(!built.is_match(&out), "nothing built: {out}");
    assert!(out.contains("3/3 verdicts as expected"), "{out}");

    // An older recipe's images: calc-1's instance image only under another name (stale), an
    // environment of another recipe for the same repository (stale), calc-2's instance image
    // gone (missing).
    let inst1 = image(&there, 0, "instance");
    let stale1 = format!("{}:older-recipe", inst1.rsplit_once(':').unwrap().0);
    second.must(&["tag", &inst1, &stale1]);
    second.must(&["rmi", &inst1]);
    let env = image(&there, 0, "env");
    let stale_env = "swe-eval.env.py.bookworm.x86_64.0lderrecipe0000000000000:latest";
    second.must(&["tag", &env, stale_env]);
    second.must(&["rmi", &image(&there, 1, "instance")]);
    let there = listing(dir, Some(&host));
    let s0 = states(&there, 0);
    let s1 = states(&there, 1);
    assert_eq!(
        s0,
        [
            ("base".into(), "present".into()),
            ("env".into(), "present".into()),
            // As exported (present, or gone after its instance image was built).
            states(&here, 0)[2].clone(),
            ("instance".into(), "stale".into())
        ],
        "{there}"
    );
    assert_eq!(s1[3], ("instance".into(), "missing".into()), "{there}");
    assert_eq!(
        there["instances"][0]["layers"][3]["found"],
        serde_json::json!([stale1]),
        "{there}"
    );
    let unused: Vec<&str> = there["unused"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["name"].as_str().unwrap())
        .collect();
    assert_eq!(unused, [stale_env, stale1.as_str()], "{there}");

    // A live run holds the stale image (a hold as runs make them: a never-started container
    // labelled with the image and its owner, here this test's process).
    let owner = swe_eval::owner::owner_id();
    let hold = second.must(&[
        "create",
        "--label",
        "swe-eval.tool=1",
        "--label",
        &format!("swe-eval.hold={stale1}"),
        "--label",
        &format!("swe-eval.owner={owner}"),
        "--network",
        "none",
        &stale1,
        "true",
    ]);
    let dry = swe_eval(dir, Some(&host), &["prune", "-i", &ids, "--dry-run"]);
    let out = ok(&dry, "prune --dry-run");
    assert!(out.contains(&format!("would remove {stale_env}")), "{out}");
    assert!(
        out.contains(&format!("kept {stale1}: held by the live run {owner}")),
        "{out}"
    );
    second.must(&["image", "inspect", stale_env]);
    let pruned = swe_eval(dir, Some(&host), &["prune", "-i", &ids]);
    let out = ok(&pruned, "prune");
    assert!(out.contains(&format!("removed {stale_env}")), "{out}");
    assert!(out.contains(&format!("kept {stale1}: held")), "{out}");
    assert!(second.docker(&["image", "inspect", stale_env]).is_err());
    second.must(&["image", "inspect", &stale1]);
    for name in there["instances"][0]["layers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["layer"] != "instance" && l["state"] == "present")
        .map(|l| l["image"].as_str().unwrap())
    {
        second.must(&["image", "inspect", name]);
    }
    // The run ends (its hold goes): the next prune removes the stale image.
    second.must(&["rm", hold.trim()]);
    let pruned = swe_eval(dir, Some(&host), &["prune", "-i", &ids]);
    let out = ok(&pruned, "prune after the hold");
    assert!(out.contains(&format!("removed {stale1}")), "{out}");
    let there = listing(dir, Some(&host));
    assert_eq!(there["unused"], Value::Array(vec![]), "{there}");
    drop(second);

    // The machine's daemon: the instance and history images the build made go again, as a
    // run at the default cache level would remove them (the base and environment stay).
    for i in 0..2 {
        for layer in ["instance", "history"] {
            let _ = run("docker", &["rmi", &image(&here, i, layer)]);
        }
    }
}

/// `images prune` and the compiler cache volumes, on a daemon of the test's own (no image
/// needed: none of the mini instances compiles, so the selection mounts no volume and every
/// compiler cache of the tool's is unused): a dry run and `--keep-volumes` remove none; then
/// the cache no container uses goes, the one a container uses stays (until that container
/// goes), and volumes that are not the tool's compiler caches are never touched.
#[test]
fn prune_removes_the_compiler_caches_the_selection_does_not_use_sparing_one_a_container_holds() {
    if !can_start_namespaced_daemons("a network namespace, a second dockerd")
        || !require("a Docker daemon", run("docker", &["version"]).is_ok())
    {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let daemon = Daemon::start();
    let host = daemon.host();
    let stale = swe_eval::images::compiler_cache_volume(
        "swe-eval-mini/calc",
        "swe-eval.env.py.bookworm.x86_64.0lderrecipe0000000000000:latest",
    );
    let held = swe_eval::images::compiler_cache_volume("other/repo", "env:1");
    for v in [&stale, &held] {
        daemon.must(&[
            "volume",
            "create",
            "--label",
            "swe-eval=1",
            "--label",
            "swe-eval.layer=instance",
            v,
        ]);
    }
    // Not the tool's (no label), and the tool's but not a compiler cache.
    let foreign = "swe-eval-ccache.someone__else.000000000000";
    daemon.must(&["volume", "create", foreign]);
    daemon.must(&[
        "volume",
        "create",
        "--label",
        "swe-eval=1",
        "swe-eval.other",
    ]);
    // A container (never started) on an empty image holds `held`.
    let import = format!("tar cf - -T /dev/null | docker -H {host} import - swe-eval-it/empty:1");
    run("sh", &["-c", &import]).expect("import an empty image");
    let holder = daemon.must(&[
        "create",
        "--network",
        "none",
        "-v",
        &format!("{held}:/cache"),
        "swe-eval-it/empty:1",
        "true",
    ]);
    let volumes = || -> Vec<String> {
        let mut v: Vec<String> = daemon
            .must(&["volume", "ls", "-q"])
            .lines()
            .map(str::to_string)
            .collect();
        v.sort();
        v
    };
    let all = volumes();
    assert_eq!(all.len(), 4, "{all:?}");

    let dry = swe_eval(dir, Some(&host), &["prune", "-i", CALC[0], "--dry-run"]);
    let out = ok(&dry, "prune --dry-run");
    for v in [&stale, &held] {
        assert!(out.contains(&format!("would remove volume {v}")), "{out}");
    }
    assert!(
        out.contains("2 compiler cache volume(s) would be removed"),
        "{out}"
    );
    let kept = swe_eval(
        dir,
        Some(&host),
        &["prune", "-i", CALC[0], "--keep-volumes"],
    );
    let out = ok(&kept, "prune --keep-volumes");
    assert!(!out.contains("volume"), "{out}");
    assert_eq!(volumes(), all);

    let pruned = swe_eval(dir, Some(&host), &["prune", "-i", CALC[0]]);
    let out = ok(&pruned, "prune");
    assert!(out.contains(&format!("removed volume {stale}")), "{out}");
    assert!(
        out.contains(&format!("kept volume {held}: a container uses it")),
        "{out}"
    );
    let mut left = vec![held.clone(), foreign.to_string(), "swe-eval.other".into()];
    left.sort();
    assert_eq!(volumes(), left);

    // The container goes: so does its cache, at the next prune.
    daemon.must(&["rm", holder.trim()]);
    let pruned = swe_eval(dir, Some(&host), &["prune", "-i", CALC[0]]);
    let out = ok(&pruned, "prune after the container");
    assert!(out.contains(&format!("removed volume {held}")), "{out}");
    let mut left = vec![foreign.to_string(), "swe-eval.other".into()];
    left.sort();
    assert_eq!(volumes(), left);
}

/// `--reachable` on the mini benchmark's rows plus an incomplete copy of one, with a mirrors
/// folder holding the calc repository alone: `images list` and `run` take the two calc
/// instances and say what they left out (per repository, and the incomplete row); the same
/// command again resumes (nothing run); a folder holding none of the repositories is refused.
#[test]
fn reachable_selects_the_complete_instances_of_the_repositories_held_locally() {
    if !require("a Docker daemon", run("docker", &["version"]).is_ok()) {
        return;
    }
    let _turn = crate::common::mini_images_turn();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let bench = swe_eval_core::mini::materialize(&dir.join("mini")).unwrap();
    let mut rows: Vec<String> = std::fs::read_to_string(&bench.dataset)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let mut incomplete: Value = serde_json::from_str(&rows[0]).unwrap();
    assert_eq!(incomplete["instance_id"], CALC[0]);
    incomplete["instance_id"] = "swe-eval-mini__calc-9".into();
    incomplete["FAIL_TO_PASS"] = Value::Null;
    rows.push(incomplete.to_string());
    std::fs::write(dir.join("rows.jsonl"), rows.join("\n") + "\n").unwrap();
    let calc = swe_eval_core::mini::mirror_file_name("calc");
    std::fs::create_dir_all(dir.join("mirrors")).unwrap();
    std::fs::copy(bench.mirrors.join(&calc), dir.join("mirrors").join(&calc)).unwrap();
    std::fs::create_dir_all(dir.join("none")).unwrap();
    let select = |mirrors: &'static str| {
        [
            "-d",
            "rows.jsonl",
            "--flavour",
            "debian",
            "--reachable",
            "--mirrors",
        ]
        .into_iter()
        .chain([mirrors])
        .collect::<Vec<_>>()
    };
    let said = |o: &Output| {
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        for part in [
            "--reachable: 2 of 9 instances kept",
            "1 incomplete (no test_patch or FAIL_TO_PASS)",
            "swe-eval-mini/intervals 2",
            "swe-eval-mini/strutils 2",
        ] {
            assert!(err.contains(part), "{part:?} not said:\n{err}");
        }
    };

    let mut args = vec!["list", "--json"];
    args.extend(select("mirrors"));
    let listed = swe_eval(dir, None, &args);
    let v: Value = serde_json::from_str(&ok(&listed, "list --reachable")).unwrap();
    let ids: Vec<&str> = v["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["instance_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, CALC, "{v}");
    said(&listed);

    let mut args = vec!["run", "-p", "gold", "--timeout", "60", "--run-id", "reach"];
    args.extend(["-o", "out"]);
    args.extend(select("mirrors"));
    let first = swe_eval(dir, None, &args);
    let out = ok(&first, "run --reachable");
    said(&first);
    let rows = std::fs::read_to_string(dir.join("out/reach.predictions.jsonl")).unwrap();
    let verdicts: Vec<(String, String)> = rows
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["instance_id"].as_str().unwrap().to_string(),
                v["category"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut verdicts = verdicts;
    verdicts.sort();
    assert_eq!(
        verdicts,
        CALC.map(|id| (id.to_string(), "resolved".to_string())),
        "{out}"
    );
    let again = swe_eval(dir, None, &args);
    let out = ok(&again, "run --reachable again");
    assert!(
        out.contains("2 predictions, 2 resumed, 0 containers run"),
        "{out}"
    );

    let mut args = vec!["list"];
    args.extend(select("none"));
    let refused = swe_eval(dir, None, &args);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(3), "{err}");
    assert!(
        err.contains("0 of 9 instances kept") && err.contains("nothing to do"),
        "{err}"
    );
}

/// The first line of `o`'s standard error, after checking it ended with exit code `code`.
fn ended(o: &Output, code: i32, what: &str) -> String {
    assert_eq!(o.status.code(), Some(code), "{what}: exit code");
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// `images export` over an existing file: refused at once (before any listing), exit code 2,
/// the message naming the file and --force; the file is left as it was.
#[test]
fn export_refuses_an_existing_archive_unless_forced() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    std::fs::write(dir.join("set.tar"), "keep me").unwrap();
    let o = swe_eval(dir, None, &["export", "-i", CALC[0], "-o", "set.tar"]);
    let line = ended(&o, 2, "export over a file");
    assert!(
        line.contains("set.tar exists") && line.contains("--force"),
        "{line}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("set.tar")).unwrap(),
        "keep me"
    );
}

/// A `--namespace` Docker could not put in an image name is bad usage (exit code 2) with the
/// reason, before any daemon is asked (it used to answer `status code 301`, exit code 1).
#[test]
fn a_namespace_that_cannot_start_an_image_name_is_bad_usage() {
    let work = tempfile::tempdir().unwrap();
    for (ns, says) in [
        ("a//b", "empty part"),
        ("Bad Namespace", "uppercase letter"),
    ] {
        let o = swe_eval(work.path(), None, &["list", "--namespace", ns]);
        let line = ended(&o, 2, ns);
        assert!(
            line.contains("--namespace") && line.contains(ns) && line.contains(says),
            "{line}"
        );
    }
}

/// An archive cut short says so, naming the file: compressed (the decompression fails; it
/// used to be the HTTP client's `Error in the hyper legacy client`) or not (the daemon's tar
/// reader meets its end).
#[test]
fn a_truncated_archive_is_said_to_be_truncated_or_corrupt() {
    if !require("a Docker daemon", run("docker", &["version"]).is_ok()) {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    // A tar of 4 MB that does not compress away, then cut.
    let mut data = vec![0u8; 4 << 20];
    let mut x: u32 = 0x2545_f491;
    for b in data.iter_mut() {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *b = x as u8;
    }
    std::fs::write(dir.join("blob"), &data).unwrap();
    must(
        "tar",
        &[
            "-C",
            &dir.to_string_lossy(),
            "-cf",
            &dir.join("whole.tar").to_string_lossy(),
            "blob",
        ],
    );
    let tar = std::fs::read(dir.join("whole.tar")).unwrap();
    let zst = zstd::encode_all(&tar[..], 3).unwrap();
    std::fs::write(dir.join("cut.tar.zst"), &zst[..zst.len() / 2]).unwrap();
    std::fs::write(dir.join("cut.tar"), &tar[..tar.len() / 2]).unwrap();
    for file in ["cut.tar.zst", "cut.tar"] {
        let o = swe_eval(dir, None, &["import", file]);
        let line = ended(&o, 1, file);
        assert!(
            line.contains(&format!("{file} is truncated or corrupt")),
            "{line}"
        );
    }
}

/// `images list` with an instance whose test spec cannot be made (a version no spec knows):
/// the instance and why on stderr, and exit code 3 (it used to be 0).
#[test]
fn list_names_the_instance_it_cannot_name_and_ends_with_problems() {
    if !require("a Docker daemon", run("docker", &["version"]).is_ok()) {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let bench = swe_eval_core::mini::materialize(&dir.join("mini")).unwrap();
    let first = std::fs::read_to_string(&bench.dataset)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    let mut row: Value = serde_json::from_str(&first).unwrap();
    row["instance_id"] = "swe-eval-mini__calc-99".into();
    row["version"] = "9.9".into();
    std::fs::write(dir.join("rows.jsonl"), format!("{row}\n")).unwrap();
    let o = swe_eval(
        dir,
        None,
        &[
            "list",
            "-d",
            "rows.jsonl",
            "--mirrors",
            &bench.mirrors.to_string_lossy(),
        ],
    );
    let line = ended(&o, 3, "list");
    assert!(
        line.starts_with("warning: swe-eval-mini__calc-99: no test spec: ") && line.contains("9.9"),
        "{line}"
    );
    let table = stdout(&o);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("swe-eval-mini__calc-99 ")
                && l.contains(" no test spec: no spec for ")),
        "{table}"
    );
}
