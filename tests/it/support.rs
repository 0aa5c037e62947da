//! Helpers shared by the package's integration tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root.
pub(crate) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every scenario file under `dir` (relative to the root), sorted.
pub(crate) fn scenario_files(dir: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    collect(&root().join(dir), &mut files);
    files.sort();
    assert!(!files.is_empty(), "no scenario files under {dir}");
    files
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable directory") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|e| e == "toml") {
            files.push(path);
        }
    }
}

/// Runs the `lockstep` binary with `args` from the repository root.
pub(crate) fn lockstep(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("the lockstep binary runs")
}

/// A fresh, empty directory for one test, `lockstep-it-PID-N-NAME` in the temporary directory
/// (`N` counts the directories of the process, so two tests giving the same name never share
/// one), removed with everything in it when dropped, even when the test panics.
#[derive(Debug)]
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new(name: &str) -> TempDir {
        static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("lockstep-it-{}-{n}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A scenario file alone in a [`TempDir`], removed with it when dropped.
#[derive(Debug)]
pub(crate) struct TempScenario {
    path: PathBuf,
    _dir: TempDir,
}

impl std::ops::Deref for TempScenario {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TempScenario {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

/// Writes `text` to a fresh scenario file in a per-test temporary directory, removed when the
/// returned file is dropped.
pub(crate) fn temp_scenario(test: &str, text: &str) -> TempScenario {
    let dir = TempDir::new(test);
    let path = dir.join("scenario.toml");
    std::fs::write(&path, text).expect("write scenario");
    TempScenario { path, _dir: dir }
}

/// The smallest good scenario: one Redis lock, 10 s, no faults.
pub(crate) const GOOD: &str = r#"
[scenario]
name = "t"
duration_ms = 10_000

[model]
kind = "redis"
ttl_ms = 1_000
"#;

/// A small, fault-free scenario that is valid on every seed.
pub(crate) const CLEAN: &str = r#"
[scenario]
name = "clean"
duration_ms = 5_000

[model]
kind = "redis"
ttl_ms = 1_000
"#;

/// Runs `lockstep run` on `text` and returns the error lines, checking exit code 2, no panic
/// and no report on stdout.
pub(crate) fn errors_of(test: &str, text: &str) -> Vec<String> {
    let path = temp_scenario(test, text);
    let out = lockstep(&["run", path.to_str().expect("utf-8 path")]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "exit code; stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        stdout(&out).is_empty(),
        "no partial output: {}",
        stdout(&out)
    );
    let file = path.display().to_string();
    let lines: Vec<String> = err.lines().map(str::to_string).collect();
    for l in &lines {
        assert!(l.starts_with(&file), "every line names the file: {l}");
    }
    lines
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The verdict of `history` judged by grant order (when clients learned), as the checker
/// judged before services named their grants: the same history with every grant's ticket
/// taken away.
pub(crate) fn judged_by_grant_order(
    history: &lockstep_check::History,
    options: &lockstep_check::Options,
) -> lockstep_check::Verdict {
    let mut unnamed = history.clone();
    for entry in &mut unnamed.entries {
        if let lockstep_check::Event::Grant { ticket, .. } = &mut entry.event {
            *ticket = None;
        }
    }
    lockstep_check::check(&unnamed, options).expect("a history without tickets is judged")
}
