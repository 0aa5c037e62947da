//! Tidiness: every scenario file parses, every flag of the command line is documented, and the
//! documents name every crate.

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
