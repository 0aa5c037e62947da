//! Every command example in README.md and docs/ runs: each `lockstep` command of a code block
//! is run as written (the slow ones on a small seed count, their outputs under a temporary
//! directory), and every other command is one that `.ci/run` runs or a script or example that
//! exists.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support::root;

/// One command of a code block: where it is, and its words (continuation lines joined).
#[derive(Debug)]
struct Example {
    at: String,
    line: String,
}

/// The documents whose examples are checked: README.md and every page under docs/.
fn documents() -> Vec<PathBuf> {
    let mut docs = vec![root().join("README.md")];
    let mut dirs = vec![root().join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("docs/") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                docs.push(path);
            }
        }
    }
    docs.sort();
    docs
}

/// The command lines of `text`'s code blocks without a language or marked `sh`: lines that
/// run `lockstep`, `cargo` or a script of the repository, comments and synopses left out.
/// A synopsis (`lockstep run FILE [--seed N]`) names its arguments in capitals or brackets.
fn examples(file: &Path, text: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let mut block: Option<bool> = None;
    let mut pending: Option<(usize, String)> = None;
    let name = file
        .strip_prefix(root())
        .unwrap_or(file)
        .display()
        .to_string();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim_end();
        if let Some(lang) = line.strip_prefix("```") {
            block = match block {
                None => Some(lang.is_empty() || lang == "sh"),
                Some(_) => None,
            };
            continue;
        }
        if block != Some(true) {
            continue;
        }
        let (start, mut joined) = pending.take().unwrap_or((n + 1, String::new()));
        let body = line.trim();
        if let Some(cont) = body.strip_suffix('\\') {
            joined.push_str(cont);
            pending = Some((start, joined));
            continue;
        }
        joined.push_str(body);
        let runs = [
            "lockstep ",
            "cargo ",
            "RUSTFLAGS=",
            "reports/",
            "conformance/",
            ".ci/",
        ]
        .iter()
        .any(|p| joined.starts_with(p));
        let synopsis = joined.contains(" [")
            || joined
                .split_whitespace()
                .any(|w| w.len() > 1 && w.chars().all(|c| c.is_ascii_uppercase() || c == '.'));
        if runs && !synopsis {
            out.push(Example {
                at: format!("{name}:{start}"),
                line: joined,
            });
        }
    }
    out
}

/// A `lockstep` command's arguments as the test runs them: `cargo run [--release] --` is the
/// binary; a seed count is cut to `small` and a command that runs every seed of its
/// scenarios is given `--seeds 1`; every file it writes, and every file a command before it
/// wrote, lies in `tmp` (by its name), so nothing outside is written.
fn arguments(words: &[&str], tmp: &Path, outputs: &mut BTreeMap<String, PathBuf>) -> Vec<String> {
    let mut args: Vec<String> = Vec::new();
    let mut i = 0;
    let command = words.first().copied().unwrap_or("");
    let mut seeds = false;
    while i < words.len() {
        let w = words[i];
        let writes = i > 0 && matches!(words[i - 1], "--out" | "--junit" | "--history");
        if writes {
            let name = Path::new(w).file_name().expect("a file").to_string_lossy();
            let path = tmp.join(&*name);
            outputs.insert(w.to_string(), path.clone());
            args.push(path.display().to_string());
        } else if let Some(path) = outputs.get(w) {
            args.push(path.display().to_string());
        } else if w == "--seeds" && i + 1 < words.len() {
            seeds = true;
            let n: u64 = words[i + 1].parse().expect("a seed count");
            let small = if command == "check" || command == "report" || command == "review" {
                1
            } else {
                8
            };
            args.push(w.to_string());
            args.push(n.min(small).to_string());
            i += 1;
        } else {
            args.push(w.to_string());
        }
        i += 1;
    }
    if !seeds && matches!(command, "check" | "report" | "review") {
        args.extend(["--seeds".to_string(), "1".to_string()]);
    }
    args
}

/// Runs one `lockstep` example (commands joined by `&&`, each a pipeline of `lockstep`
/// commands whose last output may be redirected to a file) from the repository's root;
/// returns the exit code of the last command run and what the commands printed on stderr.
fn run(line: &str, tmp: &Path, outputs: &mut BTreeMap<String, PathBuf>) -> (Option<i32>, String) {
    let line = line.split(" #").next().unwrap_or(line);
    let mut errors = String::new();
    let mut code = None;
    for part in line.split(" && ") {
        let (c, e) = run_pipeline(part, tmp, outputs);
        errors.push_str(&e);
        code = c;
        if code != Some(0) {
            break;
        }
    }
    (code, errors)
}

fn run_pipeline(
    line: &str,
    tmp: &Path,
    outputs: &mut BTreeMap<String, PathBuf>,
) -> (Option<i32>, String) {
    let (line, redirect) = match line.split_once(" > ") {
        Some((l, file)) => (l, Some(file.trim())),
        None => (line, None),
    };
    let mut input: Option<Vec<u8>> = None;
    let mut code = None;
    let mut errors = String::new();
    for part in line.split(" | ") {
        let words: Vec<&str> = part.split_whitespace().collect();
        let words = match words.as_slice() {
            ["cargo", "run", "--release", "--", rest @ ..] | ["cargo", "run", "--", rest @ ..] => {
                rest.to_vec()
            }
            ["lockstep", rest @ ..] => rest.to_vec(),
            other => panic!("not a lockstep command: {other:?}"),
        };
        let args = arguments(&words, tmp, outputs);
        let mut child = Command::new(env!("CARGO_BIN_EXE_lockstep"))
            .args(&args)
            .current_dir(root())
            .env_remove("LOCKSTEP_SEED")
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the lockstep binary runs");
        if let Some(bytes) = input.take() {
            use std::io::Write;
            child
                .stdin
                .take()
                .expect("piped")
                .write_all(&bytes)
                .expect("stdin");
        }
        let out = child.wait_with_output().expect("lockstep ends");
        errors.push_str(&String::from_utf8_lossy(&out.stderr));
        code = out.status.code();
        input = Some(out.stdout);
    }
    if let Some(file) = redirect {
        let path = tmp.join(Path::new(file).file_name().expect("a file"));
        std::fs::write(&path, input.unwrap_or_default()).expect("the redirected output");
        outputs.insert(file.to_string(), path);
    }
    (code, errors)
}

/// The commands `.ci/run` runs, one a line with continuations joined.
fn ci_commands() -> Vec<String> {
    let text = std::fs::read_to_string(root().join(".ci/run")).expect(".ci/run");
    let mut out = Vec::new();
    let mut joined = String::new();
    for line in text.lines() {
        let body = line.trim();
        match body.strip_suffix('\\') {
            Some(cont) => joined.push_str(cont),
            None => {
                joined.push_str(body);
                out.push(std::mem::take(&mut joined));
            }
        }
    }
    out
}

#[test]
fn every_command_example_of_the_docs_runs() {
    let tmp = crate::support::TempDir::new("examples");
    let ci = ci_commands();
    let squeeze = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut ran = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).expect("a document");
        // The files a block's commands write are what its later commands read.
        let mut outputs = BTreeMap::new();
        for ex in examples(&doc, &text) {
            let line = ex.line.as_str();
            let lockstep = line.starts_with("lockstep ")
                || line.starts_with("cargo run --release -- ")
                || line.starts_with("cargo run -- ");
            if lockstep {
                let (code, errors) = run(line, &tmp, &mut outputs);
                assert!(
                    !errors.contains("panicked"),
                    "{}: `{line}` panicked: {errors}",
                    ex.at
                );
                // `hunt` exits 1 when it found and wrote a violation, which is its example's point.
                let ok = code == Some(0) || (line.contains(" hunt ") && code == Some(1));
                assert!(ok, "{}: `{line}` exited {code:?}: {errors}", ex.at);
                ran += 1;
                continue;
            }
            let script = line.split_whitespace().next().expect("a word");
            if script.contains('/') && !script.contains('=') {
                // A script of the repository: it exists and may be run.
                let path = root().join(script);
                let meta = std::fs::metadata(&path)
                    .unwrap_or_else(|e| panic!("{}: `{script}`: {e}", ex.at));
                use std::os::unix::fs::PermissionsExt;
                assert!(
                    meta.permissions().mode() & 0o111 != 0,
                    "{}: {script} is not executable",
                    ex.at
                );
                continue;
            }
            if line.contains("--example ") {
                // A bridge example: it is declared, under the name given.
                let name = line
                    .split("--example ")
                    .nth(1)
                    .and_then(|r| r.split_whitespace().next());
                let manifest =
                    std::fs::read_to_string(root().join("bridge/Cargo.toml")).expect("bridge");
                let name = name.expect("an example's name");
                assert!(
                    manifest.contains(&format!("name = \"{name}\"")),
                    "{}: no example {name}",
                    ex.at
                );
                continue;
            }
            // Any other cargo command (the tests themselves) is one that `.ci/run` runs.
            assert!(
                ci.iter().any(|c| squeeze(c) == squeeze(line)),
                "{}: `{line}` is not a command .ci/run runs",
                ex.at
            );
        }
    }
    assert!(ran >= 8, "only {ran} lockstep examples found");
}

#[test]
fn examples_are_found_and_synopses_left_out() {
    let text = "x\n```sh\n# a comment\nlockstep run a.toml --seed 2\nlockstep run FILE [--seed N]\ncargo run --release -- check \\\n    scenarios\n```\n```toml\nlockstep = 1\n```\n";
    let found: Vec<String> = examples(Path::new("x.md"), text)
        .into_iter()
        .map(|e| format!("{} {}", e.at, e.line))
        .collect();
    assert_eq!(
        found,
        [
            "x.md:4 lockstep run a.toml --seed 2",
            "x.md:6 cargo run --release -- check scenarios"
        ]
    );
}
