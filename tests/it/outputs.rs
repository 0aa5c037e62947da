//! Output files of every command (`check --junit`, `hunt --out`, `map --out`, `report --out`):
//! checked before anything runs, even when the directory exists but takes no new file, and
//! never written over one of the command's own inputs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{root, stderr, stdout};

const K1: &str = "scenarios/catalogue/k1-gc-pause-unfenced.toml";

/// A small, fault-free scenario that is valid on every seed, with a one-axis map.
const CLEAN: &str = r#"
[scenario]
name = "clean"
duration_ms = 5_000

[model]
kind = "redis"
ttl_ms = 1_000

[sweep]
seeds = 2
x = { key = "model.ttl_ms", values = [1_000, 2_000] }
"#;

/// A fresh, empty directory for one test.
fn fresh_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lockstep-it-{}-out-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// A directory in which no new file can be made, whoever runs the tests: a fresh one made
/// read-only or, when the tests run as root (whom permissions do not stop), `/sys`, which
/// takes no new file from anyone.
fn read_only_dir(test: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = fresh_dir(test);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    let probe = dir.join("probe");
    if std::fs::write(&probe, "").is_err() {
        return dir;
    }
    std::fs::remove_file(&probe).expect("remove the probe");
    let sys = PathBuf::from("/sys");
    assert!(
        std::fs::write(sys.join("lockstep-probe"), "").is_err(),
        "a directory that takes no new file, even from root"
    );
    sys
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Runs `lockstep` with `args` in `dir`.
fn lockstep_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the lockstep binary runs")
}

/// Exit 2, nothing on stdout (no run was reported), and stderr names `out` as the `what`
/// that cannot be written, with `says`.
fn refused(o: &Output, out: &Path, what: &str, says: &str) {
    let err = stderr(o);
    assert_eq!(
        o.status.code(),
        Some(2),
        "stdout: {}\nstderr: {err}",
        stdout(o)
    );
    assert!(stdout(o).is_empty(), "nothing ran: {}", stdout(o));
    let line = format!("{}: cannot write the {what}: ", out.display());
    assert!(
        err.lines()
            .any(|l| l.starts_with(&line) && l.contains(says)),
        "no line `{line}...{says}...` in:\n{err}"
    );
}

#[test]
fn an_output_in_a_directory_that_takes_no_file_is_refused_before_any_run() {
    let dir = fresh_dir("read-only-inputs");
    let clean = dir.join("clean.toml");
    std::fs::write(&clean, CLEAN).expect("write");
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        CLEAN.replace("duration_ms = 5_000", "duration_ms = 0"),
    )
    .expect("write");
    let ro = read_only_dir("read-only");
    let says = "no new file can be made in";

    // check: formerly every seed ran, "all expectations hold" was printed, and then exit 2.
    let junit = ro.join("junit.xml");
    let o = lockstep_in(
        &dir,
        &["check", s(&clean), "--seeds", "50", "--junit", s(&junit)],
    );
    refused(&o, &junit, "JUnit file", says);

    // hunt: formerly the clean search ran and exited 0 without a word about --out.
    let min = ro.join("min.toml");
    let o = lockstep_in(&dir, &["hunt", s(&clean), "--seeds", "5", "--out", s(&min)]);
    refused(&o, &min, "minimal scenario", says);

    // map and report: the output's problem is listed with the input's, before anything runs.
    let svg = ro.join("map.svg");
    let o = lockstep_in(&dir, &["map", s(&bad), "--out", s(&svg)]);
    refused(&o, &svg, "map", says);
    assert!(
        stderr(&o).contains("scenario.duration_ms"),
        "{}",
        stderr(&o)
    );
    let html = ro.join("report.html");
    let o = lockstep_in(&dir, &["report", s(&bad), "--out", s(&html)]);
    refused(&o, &html, "report", says);
    assert!(
        stderr(&o).contains("scenario.duration_ms"),
        "{}",
        stderr(&o)
    );
    for f in ["junit.xml", "min.toml", "map.svg", "report.html"] {
        assert!(!ro.join(f).exists(), "{f}");
    }
}

#[test]
fn an_output_that_is_one_of_the_inputs_is_refused_and_the_input_kept() {
    let dir = fresh_dir("clobber");
    let k1_text = std::fs::read_to_string(root().join(K1)).expect("K1");
    std::fs::write(dir.join("k1.toml"), &k1_text).expect("write");
    std::fs::create_dir(dir.join("sub")).expect("dir");
    std::os::unix::fs::symlink("k1.toml", dir.join("link.toml")).expect("symlink");
    let hunt = |file: &str, out: &str| {
        let o = lockstep_in(
            &dir,
            &[
                "hunt",
                file,
                "--seeds",
                "1",
                "--max-tries",
                "3",
                "--out",
                out,
            ],
        );
        refused(&o, Path::new(out), "minimal scenario", "is the input file");
        let kept = std::fs::read_to_string(dir.join("k1.toml")).expect("k1.toml");
        assert_eq!(kept, k1_text, "hunt {file} --out {out} kept its input");
    };
    hunt("k1.toml", "k1.toml");
    hunt("k1.toml", "sub/../k1.toml");
    hunt(s(&dir.join("k1.toml")), "./k1.toml");
    hunt("k1.toml", "link.toml");
    hunt("link.toml", "k1.toml");

    std::fs::write(dir.join("clean.toml"), CLEAN).expect("write");
    let o = lockstep_in(&dir, &["map", "clean.toml", "--out", "./clean.toml"]);
    refused(&o, Path::new("./clean.toml"), "map", "is the input file");
    let o = lockstep_in(&dir, &["check", ".", "--junit", "sub/../clean.toml"]);
    refused(
        &o,
        Path::new("sub/../clean.toml"),
        "JUnit file",
        "is the input file",
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("clean.toml")).expect("clean.toml"),
        CLEAN
    );

    let sweep = lockstep_in(
        &dir,
        &["sweep", "clean.toml", "--seeds", "2", "--format", "json"],
    );
    assert_eq!(sweep.status.code(), Some(0), "{}", stderr(&sweep));
    std::fs::write(dir.join("clean.json"), &sweep.stdout).expect("write");
    let o = lockstep_in(&dir, &["report", "clean.json", "--out", "clean.json"]);
    refused(&o, Path::new("clean.json"), "report", "is the input file");
    assert_eq!(
        std::fs::read(dir.join("clean.json")).expect("clean.json"),
        sweep.stdout
    );
    std::fs::remove_dir_all(&dir).expect("clean up");
}
