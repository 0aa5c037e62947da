//! Puts the git commit the binary is built from into `LOCKSTEP_COMMIT`, for `lockstep
//! --version`; `unknown` outside a git checkout or without git.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

fn main() {
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=LOCKSTEP_COMMIT={commit}");
    // Build again when HEAD moves: to another branch (HEAD) or to a new commit (its ref, or
    // the packed refs). Paths from git itself, so a worktree's work too.
    // A path that does not exist would run this script on every build: only existing ones.
    let head_ref = git(&["symbolic-ref", "-q", "HEAD"]);
    let watched = ["HEAD", "packed-refs"]
        .into_iter()
        .map(str::to_string)
        .chain(head_ref);
    for path in watched {
        if let Some(p) = git(&["rev-parse", "--git-path", &path]) {
            if std::path::Path::new(&p).exists() {
                println!("cargo:rerun-if-changed={p}");
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
