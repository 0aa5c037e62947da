//! Tidiness: every scenario file parses, every flag of the command line is documented, the
//! documents name every crate, the README's sample output is what `lockstep run` prints, its
//! commands parse and name paths that exist, its `check` summaries are what `check` counts, and
//! no wheel, archive or binary is tracked.

use std::io::Read;

use lockstep::load;

use crate::catalogue::{K1_GOLDEN_EVENTS, K1_GOLDEN_TRACE_HASH};
use crate::support::{lockstep, root, scenario_files, stdout};

#[test]
fn every_scenario_file_parses() {
    // scenario_files asserts that each directory has some.
    let conformance = scenario_files("conformance/scenarios");
    for path in scenario_files("scenarios").into_iter().chain(conformance) {
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
fn every_flag_of_judge_is_in_the_readme() {
    flags_are_in_the_readme("judge", &["--property", "--expect", "--format"]);
}

#[test]
fn every_flag_of_map_is_in_the_readme() {
    flags_are_in_the_readme("map", &["--out", "--jobs", "--format"]);
}

#[test]
fn every_flag_of_hunt_is_in_the_readme() {
    flags_are_in_the_readme("hunt", &["--out", "--chaos", "--max-tries", "--candidates"]);
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
        "lockstep-bridge",
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
        // Every lease-based family takes `ttl_ms`; PostgreSQL's advisory lock has no TTL.
        if family.kind() != "postgres" {
            assert!(family.model_keys().contains(&"ttl_ms"), "{}", family.kind());
        }
    }
}

/// The commands of the README's `sh` blocks that run `lockstep` (`cargo run [--release] --`
/// or `lockstep`), each as its arguments (a shell redirection and what follows cut off), with
/// the byte offset of its line. The synopses (`lockstep run FILE [--seed N] ...`) are not
/// commands and are left out.
fn readme_commands(readme: &str) -> Vec<(usize, Vec<String>)> {
    let mut commands = Vec::new();
    let mut in_sh = false;
    let mut at = 0;
    for line in readme.split_inclusive('\n') {
        let start = at;
        at += line.len();
        let line = line.trim_end();
        if line.starts_with("```") {
            in_sh = line == "```sh";
            continue;
        }
        let args = ["cargo run --release -- ", "cargo run -- ", "lockstep "]
            .iter()
            .find_map(|p| line.strip_prefix(p));
        if let (true, Some(args)) = (in_sh, args) {
            let args = args.split(['>', '|', '#']).next().unwrap_or("");
            let args = args.split_whitespace().map(str::to_string).collect();
            commands.push((start, args));
        }
    }
    commands
}

/// True when `lockstep` parses `args` (clap): run in an empty directory, where no input
/// exists, a command that parses fails on its first file, never with clap's usage error.
fn parses(args: &[String]) -> bool {
    let empty = crate::support::TempDir::new("readme");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(args)
        .current_dir(&empty)
        .output()
        .expect("the lockstep binary runs");
    let err = String::from_utf8_lossy(&out.stderr);
    !(err.starts_with("error:") || err.contains("\nUsage: "))
}

#[test]
fn every_readme_command_parses_and_names_paths_that_exist() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let commands = readme_commands(&readme);
    assert!(commands.len() >= 8, "{commands:?}");
    let bad = ["run", "x.toml", "--sed", "1"].map(String::from);
    assert!(!parses(&bad), "a misspelt flag is a parse error");
    for (_, args) in &commands {
        assert!(
            parses(args),
            "README.md: `lockstep {}` does not parse",
            args.join(" ")
        );
        for arg in args.iter().filter(|a| a.starts_with("scenarios")) {
            assert!(
                root().join(arg).exists(),
                "README.md names {arg}, which does not exist"
            );
        }
        // An example writes where nothing is tracked or left lying about.
        for w in args
            .windows(2)
            .filter(|w| ["--out", "--junit", "--history"].contains(&w[0].as_str()))
        {
            assert!(
                w[1].starts_with("target/") || w[1].starts_with("/tmp/"),
                "README.md: `lockstep {}` writes {} (outside target/ and /tmp/)",
                args.join(" "),
                w[1]
            );
        }
    }
    // Paths in the prose too; a `*` is a pattern some file of the directory matches.
    for (at, _) in readme.match_indices("scenarios/") {
        let path: String = readme[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || "/._-*".contains(*c))
            .collect();
        let path = path.trim_end_matches('.');
        match path.split_once('*') {
            None => assert!(
                root().join(path).exists(),
                "README.md names {path}, which does not exist"
            ),
            Some((dir, suffix)) => {
                let found = std::fs::read_dir(root().join(dir))
                    .unwrap_or_else(|e| panic!("README.md names {path}: {e}"))
                    .any(|e| {
                        e.expect("entry")
                            .file_name()
                            .to_string_lossy()
                            .ends_with(suffix)
                    });
                assert!(found, "README.md names {path}, which matches no file");
            }
        }
    }
}

#[test]
fn the_readme_check_summaries_are_what_check_counts() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let commands = readme_commands(&readme);
    let mut quoted = 0;
    for (at, _) in readme.match_indices(" scenarios, ") {
        // `N scenarios, M runs`, quoted after the `check` command it summarises.
        let before = readme[..at]
            .rsplit(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap_or("");
        let after: String = readme[at + " scenarios, ".len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let (Ok(n), Ok(runs)) = (before.parse::<usize>(), after.parse::<u64>()) else {
            continue;
        };
        quoted += 1;
        let (_, args) = commands
            .iter()
            .rev()
            .find(|(start, args)| *start < at && args.first().is_some_and(|a| a == "check"))
            .expect("the summary follows a `check` command");
        let seeds = args
            .windows(2)
            .find(|w| w[0] == "--seeds")
            .map(|w| w[1].parse::<u64>().expect("--seeds N"));
        let paths: Vec<std::path::PathBuf> = args[1..]
            .iter()
            .take_while(|a| !a.starts_with("--"))
            .map(|a| root().join(a))
            .collect();
        let files = lockstep::suite::scenario_files(&paths).expect("the README's paths");
        let counted: u64 = files
            .iter()
            .map(|f| {
                let s = load(f).unwrap_or_else(|e| panic!("{e}")).scenario;
                lockstep::suite::seeds_of(&s, seeds).len()
            })
            .sum();
        assert_eq!(
            (n, runs),
            (files.len(), counted),
            "README.md quotes `{n} scenarios, {runs} runs` for `lockstep {}`",
            args.join(" ")
        );
    }
    assert!(quoted > 0, "README.md quotes a summary of `lockstep check`");
}
