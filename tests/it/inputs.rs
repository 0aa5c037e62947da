//! Inputs of every command: each read is capped by its kind (a scenario, review, history or
//! sweep summary), from a path or standard input, and never waits for ever on a FIFO, a pipe
//! or a device that gives nothing; a FIFO or a pipe that gives data is read whole.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::support::{TempDir, root, stderr, stdout};

const K1: &str = "scenarios/catalogue/k1-gc-pause-unfenced.toml";

/// The wait the tests give an input that gives nothing, in place of the 10 s default.
const WAIT_MS: &str = "300";

/// How long a command may take before the test calls it stuck and kills it: far above what a
/// refusal takes (the wait and a start), far below forever.
const DEADLINE_MS: u64 = 30_000;

/// `lockstep` started in `dir` with `args`, the short wait, and at most 2 GiB of address
/// space, so that a command that reads without a cap fails fast instead of filling the
/// machine's memory.
fn start(dir: &Path, args: &[&str], stdin: Stdio) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lockstep"));
    command
        .args(args)
        .current_dir(dir)
        .env("LOCKSTEP_INPUT_WAIT_MS", WAIT_MS)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit(2) is async-signal-safe, and the closure touches nothing else.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 2 << 30,
                rlim_max: 2 << 30,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command.spawn().expect("the lockstep binary starts")
}

/// Each child's output once it has exited, or `None` for one still running at the deadline
/// (then killed).
fn finish(children: Vec<Child>) -> Vec<Option<std::process::Output>> {
    let mut waited_ms = 0;
    let mut children: Vec<Option<Child>> = children.into_iter().map(Some).collect();
    let mut outputs: Vec<Option<std::process::Output>> = children.iter().map(|_| None).collect();
    while waited_ms < DEADLINE_MS && children.iter().any(Option::is_some) {
        for (child, output) in children.iter_mut().zip(&mut outputs) {
            if let Some(c) = child {
                if c.try_wait().expect("try_wait").is_some() {
                    *output = Some(
                        child
                            .take()
                            .expect("child")
                            .wait_with_output()
                            .expect("output"),
                    );
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        waited_ms += 20;
    }
    for c in children.iter_mut().flatten() {
        let _ = c.kill();
        let _ = c.wait();
    }
    outputs
}

/// A directory with K1 in it.
fn inputs(test: &str) -> TempDir {
    let dir = TempDir::new(&format!("inputs-{test}"));
    std::fs::copy(root().join(K1), dir.join("k1.toml")).expect("copy");
    dir
}

/// Writes `design.toml` in `dir`: a small review whose one design's scenario is `scenario`.
fn review_of(dir: &Path, scenario: &Path) {
    std::fs::write(
        dir.join("design.toml"),
        format!(
            "[review]\nname = \"t\"\nseeds = 1\n\n[[design]]\nname = \"a\"\nscenario = \"{}\"\n",
            scenario.display()
        ),
    )
    .expect("write");
}

/// Every command reading `bad`, each as the label the test prints and its arguments; `report`
/// reads it once as a scenario and once, through a link `bad.json` to it, as a summary; the
/// review once as its file and once as its design's scenario (`design.toml`).
fn commands_reading(bad: &str) -> Vec<(&'static str, Vec<String>)> {
    let cases: [(&str, &[&str]); 11] = [
        ("run", &["run", bad]),
        ("judge", &["judge", bad]),
        ("merge", &["merge", bad]),
        ("sweep", &["sweep", bad, "--seeds", "1"]),
        ("check", &["check", bad, "--seeds", "1"]),
        ("hunt", &["hunt", bad, "--seeds", "1", "--out", "min.toml"]),
        ("map", &["map", bad]),
        ("report", &["report", bad, "--out", "r.html"]),
        ("report summary", &["report", "bad.json", "--out", "r.html"]),
        ("review", &["review", bad]),
        ("review design", &["review", "design.toml"]),
    ];
    cases
        .iter()
        .map(|(label, args)| (*label, args.iter().map(|a| (*a).to_string()).collect()))
        .collect()
}

/// Runs every command reading `bad` at once and lists those that did not exit 2 with an
/// error line naming the file and containing `says`, within the deadline.
fn refusals(dir: &Path, bad: &Path, says: &str) -> Vec<String> {
    std::os::unix::fs::symlink(bad, dir.join("bad.json")).expect("symlink");
    let cases = commands_reading(bad.to_str().expect("utf-8"));
    let children = cases
        .iter()
        .map(|(_, args)| {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            start(dir, &args, Stdio::null())
        })
        .collect();
    let mut wrong = Vec::new();
    for ((label, _), output) in cases.iter().zip(finish(children)) {
        let Some(o) = output else {
            wrong.push(format!("{label}: still running after {DEADLINE_MS} ms"));
            continue;
        };
        let err = stderr(&o);
        // The file, or the key of the review that names it.
        let named = |l: &&str| {
            (l.contains(bad.to_str().expect("utf-8"))
                || l.starts_with("bad.json: ")
                || l.starts_with("design.toml: design[0].scenario: "))
                && l.contains(says)
        };
        if o.status.code() != Some(2) || !err.lines().any(|l| named(&l)) || err.contains("panic") {
            wrong.push(format!(
                "{label}: exit {:?}, stderr: {}",
                o.status,
                err.chars().take(300).collect::<String>()
            ));
        }
    }
    wrong
}

#[test]
fn dev_zero_is_refused_at_each_kind_of_input_s_cap() {
    let zero = Path::new("/dev/zero");
    let dir = inputs("zero");
    review_of(&dir, zero);
    // Formerly read until memory ran out (a review design: 11 GB in 60 s).
    let wrong = refusals(&dir, zero, "it has more than ");
    assert!(wrong.is_empty(), "{wrong:#?}");
    // Standard input is capped too.
    let children = ["run", "judge"]
        .iter()
        .map(|c| {
            let zero = std::fs::File::open(zero).expect("/dev/zero");
            start(&dir, &[c, "-"], Stdio::from(zero))
        })
        .collect();
    for (c, o) in ["run", "judge"].iter().zip(finish(children)) {
        let o = o.unwrap_or_else(|| panic!("{c} -: still running"));
        assert_eq!(o.status.code(), Some(2), "{c} -: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with("<stdin>: cannot read the ")
                && stderr(&o).contains("MiB, the most a "),
            "{c} -: {}",
            stderr(&o)
        );
    }
}

#[test]
fn a_fifo_without_a_writer_is_refused_after_the_wait() {
    let dir = inputs("fifo");
    let fifo = dir.join("nobody.fifo");
    mkfifo(&fifo);
    review_of(&dir, &fifo);
    // Formerly every command waited for a writer for ever.
    let wrong = refusals(&dir, &fifo, "gave no data for 0.3 s");
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn a_file_over_its_kind_s_cap_is_refused_naming_the_cap() {
    let dir = TempDir::new("inputs-large");
    // Sparse files: their size costs no disk and, refused by their size, no reading.
    let sized = |name: &str, bytes: u64| {
        let path = dir.join(name);
        let f = std::fs::File::create(&path).expect("create");
        f.set_len(bytes).expect("set_len");
        path
    };
    let cases = [
        (
            sized("big.toml", (4 << 20) + 1),
            "run",
            "4 MiB, the most a scenario file",
        ),
        (
            sized("big.jsonl", (256 << 20) + 1),
            "judge",
            "256 MiB, the most a history",
        ),
        (
            sized("big.json", (16 << 20) + 1),
            "merge",
            "16 MiB, the most a sweep summary",
        ),
        (
            sized("review.toml", (4 << 20) + 1),
            "review",
            "4 MiB, the most a review file",
        ),
    ];
    let children = cases
        .iter()
        .map(|(file, command, _)| {
            start(
                &dir,
                &[command, file.to_str().expect("utf-8")],
                Stdio::null(),
            )
        })
        .collect();
    for ((file, command, says), o) in cases.iter().zip(finish(children)) {
        let o = o.unwrap_or_else(|| panic!("{command}: still running"));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{command}: {err}");
        assert!(
            err.starts_with(&format!("{}: cannot read", file.display())) && err.contains(says),
            "{command}: {err}"
        );
    }
    // A file of exactly the cap is read (and found to be no scenario).
    let at_cap = sized("at-cap.toml", 4 << 20);
    let o = crate::support::lockstep(&["run", at_cap.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!stderr(&o).contains("the most a"), "{}", stderr(&o));
}

#[test]
fn a_directory_or_a_socket_input_is_refused_as_one() {
    let dir = TempDir::new("inputs-dir");
    let socket = dir.join("socket");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).expect("bind");
    for (path, is) in [
        (&*dir, "it is a directory"),
        (&socket, "it is a socket, not a file"),
    ] {
        let p = path.to_str().expect("utf-8");
        for (command, says) in [
            ("run", "cannot read the file"),
            ("judge", "cannot read the history"),
            ("merge", "cannot read"),
            ("review", "cannot read the file"),
        ] {
            let o = crate::support::lockstep(&[command, p]);
            assert_eq!(o.status.code(), Some(2), "{command}");
            assert_eq!(stderr(&o).trim(), format!("{p}: {says}: {is}"), "{command}");
        }
    }
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().expect("utf-8")).expect("path");
    // SAFETY: `c` is a valid, NUL-terminated path.
    let made = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
    assert_eq!(made, 0, "mkfifo {}", path.display());
}

/// A history K1 writes, in `dir`.
fn k1_history(dir: &Path) -> PathBuf {
    let history = dir.join("k1.jsonl");
    let o = crate::support::lockstep(&["run", K1, "--history", history.to_str().expect("utf-8")]);
    assert!(history.exists(), "{}", stderr(&o));
    history
}

#[test]
fn a_fifo_or_pipe_that_gives_data_is_read_whole() {
    let dir = TempDir::new("inputs-pipe");
    let history = k1_history(&dir);
    let judged = crate::support::lockstep(&["judge", history.to_str().expect("utf-8")]);
    let expected = stdout(&judged).replace(history.to_str().expect("utf-8"), "HISTORY");

    // A shell's process substitution: `/dev/fd/63`, a pipe.
    let o = Command::new("bash")
        .args([
            "-c",
            r#"exec "$0" judge <(cat "$1")"#,
            env!("CARGO_BIN_EXE_lockstep"),
            history.to_str().expect("utf-8"),
        ])
        .output()
        .expect("bash runs");
    let out = stdout(&o);
    let name = out
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .expect("the history line")
        .to_string();
    assert!(name.starts_with("/dev/fd/"), "{out}");
    assert_eq!(out.replace(&name, "HISTORY"), expected, "{}", stderr(&o));

    // A named FIFO whose writer comes after the command opened it, within the wait.
    let fifo = dir.join("late.fifo");
    mkfifo(&fifo);
    let child = Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(["judge", fifo.to_str().expect("utf-8")])
        .env("LOCKSTEP_INPUT_WAIT_MS", "20000")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let mut w = writer_of(&fifo);
    w.write_all(&std::fs::read(&history).expect("history"))
        .expect("write");
    drop(w);
    let o = child.wait_with_output().expect("judge");
    assert_eq!(
        stdout(&o).replace(fifo.to_str().expect("utf-8"), "HISTORY"),
        expected,
        "{}",
        stderr(&o)
    );
}

/// `fifo` opened to write once its reader has opened it; it panics, rather than waiting for
/// ever, when no reader comes before the deadline.
fn writer_of(fifo: &Path) -> std::fs::File {
    use std::os::unix::fs::OpenOptionsExt;
    let mut waited_ms = 0;
    loop {
        // Without waiting: this fails while the FIFO has no reader.
        let probe = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(fifo);
        if probe.is_ok() {
            // A reader is there: this open does not wait.
            return std::fs::OpenOptions::new()
                .write(true)
                .open(fifo)
                .expect("open the FIFO to write");
        }
        assert!(
            waited_ms < DEADLINE_MS,
            "no reader opened {}",
            fifo.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
        waited_ms += 10;
    }
}

#[test]
fn a_leading_byte_order_mark_is_skipped_in_every_input() {
    const BOM: &[u8] = b"\xEF\xBB\xBF";
    let dir = TempDir::new("inputs-bom");
    let with_bom = |name: &str, text: &[u8]| {
        let path = dir.join(name);
        std::fs::write(&path, [BOM, text].concat()).expect("write");
        path.to_str().expect("utf-8").to_string()
    };
    let history = k1_history(&dir);
    let history_text = std::fs::read(&history).expect("history");
    let sweep = crate::support::lockstep(&["sweep", K1, "--seeds", "2", "--format", "json"]);
    let k1 = std::fs::read(root().join(K1)).expect("K1");
    let scenario = with_bom("k1.toml", &k1);
    let cases = [
        ("judge", vec!["judge".to_string(), with_bom("h.jsonl", &history_text)]),
        ("merge", vec!["merge".to_string(), with_bom("s.json", &sweep.stdout)]),
        ("run", vec!["run".to_string(), scenario.clone()]),
        (
            "review",
            vec![
                "review".to_string(),
                with_bom(
                    "review.toml",
                    b"[review]\nname = \"t\"\nseeds = 1\nclasses = [\"pauses\"]\n\n[[design]]\nname = \"a\"\nscenario = \"k1.toml\"\n",
                ),
            ],
        ),
    ];
    let mut wrong = Vec::new();
    for (command, args) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = crate::support::lockstep(&args);
        // Formerly `judge` and `merge` said only "expected value at (line 1) column 1".
        if !matches!(o.status.code(), Some(0 | 1)) {
            wrong.push(format!("{command}: {}", stderr(&o)));
        }
    }
    // Standard input too, and the history format's own reader.
    let mut child = Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(["judge", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&[BOM, &history_text].concat())
        .expect("write");
    let o = child.wait_with_output().expect("judge -");
    if !matches!(o.status.code(), Some(0 | 1)) {
        wrong.push(format!("judge -: {}", stderr(&o)));
    }
    if let Err(e) = lockstep_check::jsonl::parse(&[BOM, &history_text].concat()) {
        wrong.push(format!("jsonl::parse: {:?}", e.first()));
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
