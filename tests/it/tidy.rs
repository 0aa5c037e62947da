//! Tidiness: every scenario file parses, every flag of the command line is documented, the
//! documents name every crate, the README's sample output is what `lockstep run` prints, its
//! commands parse and name paths that exist, its `check` summaries are what `check` counts, it
//! says what `.ci/run` runs, every path the docs and comments cite is in the repository (and
//! none cites the design notes kept outside it), and no wheel, archive or binary is tracked.

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

/// The repository's top directories: a word of prose that starts with one (at the start of a
/// word) cites a path of the repository.
const TOP_DIRS: &[&str] = &[
    "docs/",
    "src/",
    "models/",
    "sim/",
    "check/",
    "reports/",
    "bridge/",
    "scenarios/",
    "tests/",
    "benches/",
    "conformance/",
    "deploy/",
    "reviews/",
    ".ci/",
];

/// The files whose prose may cite paths: Markdown, Rust, TOML, shell, Python and YAML files
/// and scripts (a `#!` first line) under `dir`, outside `target/` and hidden directories
/// other than `.ci/`, sorted.
fn prose_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if path.is_dir() {
            if name != "target" && (!name.starts_with('.') || name == ".ci") {
                prose_files(&path, out);
            }
            continue;
        }
        let ext = path.extension().unwrap_or_default().to_string_lossy();
        let script =
            ext.is_empty() && std::fs::read(&path).is_ok_and(|bytes| bytes.starts_with(b"#!"));
        if script || ["md", "rs", "toml", "sh", "py", "yml", "yaml"].contains(&ext.as_ref()) {
            out.push(path);
        }
    }
}

/// The comment of a TOML, shell, Python or YAML line: from its first `#` outside a string.
fn hash_comment(line: &str) -> Option<&str> {
    let mut quote = None;
    let mut escaped = false;
    for (at, c) in line.char_indices() {
        match (quote, c) {
            (Some('"'), '\\') if !escaped => {
                escaped = true;
                continue;
            }
            (Some(q), _) if c == q && !escaped => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            (None, '#') => return Some(&line[at..]),
            _ => {}
        }
        escaped = false;
    }
    None
}

/// The lines of `text` (of the file `path`) that a reader reads as prose, with their numbers
/// from 1: a Markdown file whole, a Rust file's comment lines (`//`, `///`, `//!`), the
/// comments of the others.
fn prose_lines<'a>(path: &std::path::Path, text: &'a str) -> Vec<(usize, &'a str)> {
    let ext = path.extension().unwrap_or_default().to_string_lossy();
    let lines = text.lines().enumerate().map(|(at, line)| (at + 1, line));
    match ext.as_ref() {
        "md" => lines.collect(),
        "rs" => lines
            .filter(|(_, l)| l.trim_start().starts_with("//"))
            .collect(),
        _ => lines
            .filter_map(|(n, l)| Some((n, hash_comment(l)?)))
            .collect(),
    }
}

/// The words of `line` that cite a path of the repository (they start with a top directory
/// where a word starts), each with whether it opens a double-quoted string. A placeholder
/// (`<kind>`, `{file}`, `*`, `…`) stays in the word; a full stop that ends a sentence does not.
fn cited_paths(line: &str) -> Vec<(String, bool)> {
    let is_path_char = |c: char| c.is_ascii_alphanumeric() || "/._-<>{}*…".contains(c);
    let mut cited = Vec::new();
    for (at, _) in line.char_indices() {
        let before = line[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || "/._-".contains(c)) {
            continue;
        }
        let rest = &line[at..];
        if !TOP_DIRS.iter().any(|dir| rest.starts_with(dir)) {
            continue;
        }
        let end = rest.find(|c: char| !is_path_char(c)).unwrap_or(rest.len());
        let word = rest[..end].trim_end_matches('.');
        // `scenarios/...` is a placeholder: keep the dots that make it one.
        let word = if rest[..end].ends_with("...") {
            &rest[..end]
        } else {
            word
        };
        cited.push((word.to_string(), before == Some('"')));
    }
    cited
}

/// The extensions of the files under the top directory `dir`, whatever their depth.
fn extensions_under(dir: &std::path::Path, out: &mut std::collections::BTreeSet<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "target") {
                extensions_under(&path, out);
            }
        } else if let Some(ext) = path.extension() {
            out.insert(ext.to_string_lossy().into_owned());
        }
    }
}

/// Why the cited `path` is not in the repository, or `None` when it is, or is not a path of
/// the repository at all. The rules:
/// - a placeholder (`<kind>`, `{file}`, `*`, `…`, `...`) stands for any name: the directory
///   it is in must exist (`scenarios/found/<name>.toml` asks for `scenarios/found/`);
/// - a file whose extension no file under its top directory has is another project's
///   (Redis's `src/sentinel.c`: the root crate's `src/` holds only Rust);
/// - a quoted word with no extension and no trailing `/` is a name, not a path (the seed's
///   stream `"bridge/chaos-shapes"`);
/// - anything else must exist, relative to the repository's root.
fn why_missing(
    path: &str,
    quoted: bool,
    extensions: &mut std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
) -> Option<String> {
    let placeholder = path.find(['<', '{', '*', '…']).or_else(|| path.find("..."));
    if let Some(at) = placeholder {
        let dir = &path[..path[..at].rfind('/').map_or(0, |slash| slash + 1)];
        return (!root().join(dir).is_dir())
            .then(|| format!("{path}: its directory {dir} does not exist"));
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = name
        .rsplit_once('.')
        .map(|(_, ext)| ext)
        .filter(|e| !e.is_empty());
    if let Some(ext) = ext {
        let top = path.split_inclusive('/').next().unwrap_or(path).to_string();
        let known = extensions.entry(top.clone()).or_insert_with(|| {
            let mut found = std::collections::BTreeSet::new();
            extensions_under(&root().join(&top), &mut found);
            found
        });
        if !known.contains(ext) {
            return None;
        }
    } else if quoted && !path.ends_with('/') {
        return None;
    }
    (!root().join(path).exists()).then(|| format!("{path} does not exist"))
}

/// Every path the project's prose cites is in the repository: the README, ARCHITECTURE.md,
/// `docs/`, the comments of scenario files and of the code (a path of the repository starts
/// with one of `TOP_DIRS`; the rules for placeholders and other projects' files are at
/// `why_missing`), and every relative link of a Markdown page. Nothing cites the design notes
/// kept outside the repository: the project's documents stand alone.
#[test]
fn every_cited_path_exists_and_nothing_cites_outside_the_repository() {
    let outside = [concat!("..", "/shared"), concat!("shared", "/docs")];
    let mut files = Vec::new();
    prose_files(&root(), &mut files);
    assert!(files.len() > 300, "{} files", files.len());
    let mut extensions = std::collections::BTreeMap::new();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        let shown = file
            .strip_prefix(root())
            .unwrap_or(file)
            .display()
            .to_string();
        for (n, line) in prose_lines(file, &text) {
            for needle in outside {
                if line.contains(needle) {
                    wrong.push(format!(
                        "{shown}:{n}: cites {needle}, outside the repository"
                    ));
                }
            }
            for (path, quoted) in cited_paths(line) {
                checked += 1;
                if let Some(why) = why_missing(&path, quoted, &mut extensions) {
                    wrong.push(format!("{shown}:{n}: {why}"));
                }
            }
            if shown.ends_with(".md") {
                for (at, _) in line.match_indices("](") {
                    let target = &line[at + 2..];
                    let target = &target[..target.find(')').unwrap_or(target.len())];
                    let target = target.split('#').next().unwrap_or("");
                    if target.is_empty() || target.contains("://") || target.starts_with("mailto:")
                    {
                        continue;
                    }
                    checked += 1;
                    let dir = file.parent().expect("a file's directory");
                    if !dir.join(target).exists() {
                        wrong.push(format!("{shown}:{n}: the link {target} leads nowhere"));
                    }
                }
            }
        }
    }
    assert!(checked > 300, "only {checked} cited paths found");
    assert!(
        wrong.is_empty(),
        "paths cited that are not in the repository ({} of {checked}):\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// The README's paragraph on `.ci/run` names every step the script takes: each cargo command
/// with the features, flags and target directory it runs with, and each script it calls.
#[test]
fn the_readme_says_what_ci_runs() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let paragraph = readme
        .split("\n\n")
        .find(|p| p.starts_with("`.ci/run`"))
        .expect("README.md has a paragraph on `.ci/run`")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let script = std::fs::read_to_string(root().join(".ci/run")).expect(".ci/run");
    let script = script.replace("\\\n", " ");
    let mut steps = Vec::new();
    for line in script.lines().map(str::trim) {
        // A cargo command, perhaps after `RUSTFLAGS="..."`.
        let (env, command) = match line.split_once("\" cargo ") {
            Some((env, rest)) if env.starts_with("RUSTFLAGS=\"") => {
                steps.push(format!("{env}\""));
                (true, format!("cargo {rest}"))
            }
            _ => (false, line.to_string()),
        };
        let words: Vec<&str> = command.split_whitespace().collect();
        match words.as_slice() {
            ["cargo", sub, ..] => {
                steps.push(format!("cargo {sub}"));
                for w in words.windows(2) {
                    if ["--features", "--target-dir"].contains(&w[0]) {
                        steps.push(w.join(" "));
                    }
                }
            }
            // A script of the repository, with its arguments.
            [first, ..] if !env && first.contains('/') && !first.starts_with(['$', '"', '#']) => {
                steps.push(words.join(" "));
            }
            _ => {}
        }
    }
    assert!(steps.len() >= 10, "{steps:?}");
    let missing: Vec<&String> = steps.iter().filter(|s| !paragraph.contains(*s)).collect();
    assert!(
        missing.is_empty(),
        "README.md's paragraph on `.ci/run` does not say that it runs {missing:?}:\n{paragraph}"
    );
}
