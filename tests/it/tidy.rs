//! Tidiness: every scenario file parses, every flag of the command line is documented, the
//! documents name every crate, and no wheel, archive or binary is tracked.

use std::io::Read;

use lockstep::load;

use crate::support::{lockstep, root, scenario_files, stdout};

#[test]
fn every_scenario_file_parses() {
    for path in scenario_files("scenarios") {
        if let Err(e) = load(&path) {
            panic!("{e}");
        }
    }
}

/// The flags `lockstep CMD --help` lists, asserting that it lists `expected`, and that the
/// README names every one of them.
pub(crate) fn flags_are_in_the_readme(cmd: &str, expected: &[&str]) {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let help = stdout(&lockstep(&[cmd, "--help"]));
    let flags: Vec<&str> = help
        .split_whitespace()
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(|w| w.trim_end_matches(','))
        .filter(|w| !["--help", "--version"].contains(w))
        .collect();
    for flag in expected {
        assert!(flags.contains(flag), "{help}");
    }
    for flag in flags {
        assert!(readme.contains(flag), "README.md does not mention {flag}");
    }
}

#[test]
fn every_flag_of_run_is_in_the_readme() {
    flags_are_in_the_readme("run", &["--seed"]);
}

#[test]
fn every_flag_of_map_is_in_the_readme() {
    flags_are_in_the_readme("map", &["--out", "--jobs", "--format"]);
}

#[test]
fn every_flag_of_hunt_is_in_the_readme() {
    flags_are_in_the_readme("hunt", &["--out", "--chaos", "--max-tries"]);
}

#[test]
fn every_flag_of_report_is_in_the_readme() {
    flags_are_in_the_readme("report", &["--out", "--seeds"]);
}

#[test]
fn the_architecture_page_maps_every_crate() {
    let arch = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    for krate in [
        "lockstep-sim",
        "lockstep-check",
        "lockstep-models",
        "lockstep-reports",
        "`src/`",
    ] {
        assert!(
            arch.contains(krate),
            "ARCHITECTURE.md does not mention {krate}"
        );
    }
}

#[test]
fn the_readme_documents_the_exit_codes() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let help = stdout(&lockstep(&["--help"]));
    for line in help
        .lines()
        .filter(|l| l.trim_start().starts_with(['0', '1', '2']))
    {
        assert!(
            readme.contains(line.trim()),
            "README.md does not say: {}",
            line.trim()
        );
    }
}

/// What the repository must never track: wheels, archives, shared objects and binaries (the
/// same list `.gitignore` ignores).
const UNTRACKABLE: &[&str] = &[
    "whl", "zip", "tar", "tgz", "gz", "jar", "so", "dylib", "a", "exe", "bin",
];

#[test]
fn no_wheel_archive_or_binary_is_tracked() {
    let listed = std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root())
        .output();
    let files = match listed {
        Ok(out) if out.status.success() => String::from_utf8(out.stdout).expect("UTF-8 paths"),
        Ok(out) => {
            eprintln!(
                "SKIPPED: not a git checkout ({}), so no tracked files to check",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return;
        }
        Err(e) => {
            eprintln!("SKIPPED: git does not run ({e}), so no tracked files to check");
            return;
        }
    };
    let files: Vec<&str> = files.split('\0').filter(|f| !f.is_empty()).collect();
    if !files.contains(&"Cargo.toml") {
        eprintln!("SKIPPED: the enclosing git repository does not track this package");
        return;
    }
    let mut offenders = Vec::new();
    for file in files {
        if UNTRACKABLE
            .iter()
            .any(|ext| file.to_ascii_lowercase().ends_with(&format!(".{ext}")))
        {
            offenders.push(format!("{file}: a wheel, archive or binary by its name"));
            continue;
        }
        let path = root().join(file);
        // A file deleted from the work tree, a symbolic link or a submodule has no content here.
        if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            continue;
        }
        let mut head = Vec::new();
        std::fs::File::open(&path)
            .and_then(|f| f.take(8192).read_to_end(&mut head))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        if head.contains(&0) {
            offenders.push(format!("{file}: binary (a NUL byte in its first 8 KB)"));
        }
    }
    assert!(
        offenders.is_empty(),
        "tracked files that do not belong in the repository (git rm them):\n{}",
        offenders.join("\n")
    );
}
