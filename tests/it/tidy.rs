//! Tidiness: every scenario file parses, every flag of the command line is documented, the
//! documents name every crate, the README's sample output is what `lockstep run` prints, and no
//! wheel, archive or binary is tracked.

use std::io::Read;

use lockstep::load;

use crate::catalogue::{K1_GOLDEN_EVENTS, K1_GOLDEN_TRACE_HASH};
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

/// The README's exit-code lists: for each "Exit codes (also in `lockstep ... --help`):", the
/// arguments of that help command and the lines of the block that follows.
fn readme_exit_codes() -> Vec<(Vec<String>, Vec<String>)> {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let marker = "Exit codes (also in `lockstep ";
    let mut lists = Vec::new();
    for (at, _) in readme.match_indices(marker) {
        let rest = &readme[at + marker.len()..];
        let (cmd, rest) = rest.split_once('`').expect("the help command ends with `");
        let block = rest
            .split_once("```\n")
            .and_then(|(_, block)| block.split_once("```"))
            .expect("a code block follows")
            .0;
        let args = cmd.split_whitespace().map(str::to_string).collect();
        lists.push((args, block.lines().map(str::to_string).collect()));
    }
    lists
}

/// The lines of the "Exit codes:" section of `help`, trimmed.
fn help_exit_codes(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim() != "Exit codes:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_string())
        .collect()
}

#[test]
fn the_readme_documents_the_exit_codes() {
    let lists = readme_exit_codes();
    let top = &lists
        .iter()
        .find(|(args, _)| args == &["--help"])
        .expect("README.md lists the exit codes of `lockstep --help`")
        .1;
    let codes: Vec<&str> = top.iter().filter_map(|l| l.split(' ').next()).collect();
    assert_eq!(codes, ["0", "1", "2"], "README.md's exit codes: {top:?}");
    for (args, readme) in &lists {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let help = help_exit_codes(&stdout(&lockstep(&args)));
        assert_eq!(
            &help,
            readme,
            "`lockstep {}` does not list the exit codes README.md states, each with its meaning",
            args.join(" ")
        );
    }
}

/// The README's sample output of `lockstep run` on K1 (seed 1), one line per line printed: a
/// `...` stands for lines left out, and a `why` entry wrapped over several lines is joined.
fn readme_k1_sample() -> Vec<String> {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let block = readme
        .split("```\n")
        .find(|block| block.starts_with("scenario   k1-gc-pause-unfenced\n"))
        .expect("README.md shows the output of `lockstep run` on K1");
    let mut lines: Vec<String> = Vec::new();
    for line in block.lines() {
        match lines.last_mut() {
            Some(entry) if line.starts_with("    ") && entry.starts_with("  - ") => {
                entry.push(' ');
                entry.push_str(line.trim_start());
            }
            _ => lines.push(line.to_string()),
        }
    }
    lines
}

#[test]
fn the_readme_sample_run_shows_the_k1_golden_trace_hash() {
    let sample = readme_k1_sample();
    let seed = sample
        .iter()
        .find(|l| l.starts_with("seed "))
        .expect("the sample shows the seed line");
    assert_eq!(
        seed,
        &format!(
            "seed       1   trace {K1_GOLDEN_TRACE_HASH}   {K1_GOLDEN_EVENTS} events, completed"
        ),
        "README.md's sample run of K1 does not show the golden trace hash and events pinned in \
         tests/it/catalogue.rs"
    );
}

#[test]
fn the_readme_sample_run_is_what_lockstep_run_prints() {
    let out = lockstep(&["run", "scenarios/catalogue/k1-gc-pause-unfenced.toml"]);
    let printed = stdout(&out);
    let printed: Vec<&str> = printed.lines().collect();
    for line in readme_k1_sample() {
        if line.trim() == "..." {
            continue;
        }
        assert!(
            printed.contains(&line.as_str()),
            "README.md's sample run of K1 shows a line `lockstep run` does not print:\n{line}\n\n\
             it prints:\n{}",
            printed.join("\n")
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

/// Every family has its page, `docs/families/<kind>.md`, and the page names every key the
/// family takes (`[model]`, and `[storage]` under its own mode), as the code declares them.
#[test]
fn every_family_key_is_on_its_page() {
    for family in lockstep::families::all() {
        let page = format!("docs/families/{}.md", family.kind());
        let text = std::fs::read_to_string(root().join(&page))
            .unwrap_or_else(|e| panic!("{page}: {e} (every family has its page)"));
        let keys = family.model_keys().iter().chain(family.resource_keys());
        for key in keys {
            assert!(
                text.contains(&format!("`{key}`")),
                "{page} does not document `{key}`"
            );
        }
        assert!(family.model_keys().contains(&"kind"), "{}", family.kind());
        assert!(family.model_keys().contains(&"ttl_ms"), "{}", family.kind());
    }
}
