//! Output files of every command (`run --history`, `check --junit`, `hunt --out`, `map --out`,
//! `report --out`, `review --out`): checked before anything runs, even when the directory
//! exists but takes no new file, never written over one of the command's own inputs, and
//! written through a symbolic link, to a FIFO's reader or to a device without replacing it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{TempDir, root, stderr, stdout};

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

/// A fresh, empty directory for one test, removed when dropped.
fn fresh_dir(test: &str) -> TempDir {
    TempDir::new(&format!("out-{test}"))
}

/// A directory in which no new file can be made, whoever runs the tests: a fresh one made
/// read-only or, when the tests run as root (whom permissions do not stop), `/sys`, which
/// takes no new file from anyone; with the fresh one, removed when dropped (an empty
/// read-only directory is removed as any other).
fn read_only_dir(test: &str) -> (PathBuf, TempDir) {
    use std::os::unix::fs::PermissionsExt;
    let dir = fresh_dir(test);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    let probe = dir.join("probe");
    if std::fs::write(&probe, "").is_err() {
        return (dir.to_path_buf(), dir);
    }
    std::fs::remove_file(&probe).expect("remove the probe");
    let sys = PathBuf::from("/sys");
    assert!(
        std::fs::write(sys.join("lockstep-probe"), "").is_err(),
        "a directory that takes no new file, even from root"
    );
    (sys, dir)
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
    let (ro, _ro_dir) = read_only_dir("read-only");
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
}

/// A short chaos scenario for the review's one design.
const CHAOS: &str = r#"
[scenario]
name = "short chaos"
duration_ms = 20_000

[model]
kind = "redis"
ttl_ms = 1_000

[chaos]
profile = "default"
faults_per_minute = 30

[expect]
verdict = "any"
"#;

/// The inputs of [`each_output`] in `dir`: K1, the clean map and a review of one design.
fn inputs_in(dir: &Path) {
    let k1_text = std::fs::read_to_string(root().join(K1)).expect("K1");
    std::fs::write(dir.join("k1.toml"), k1_text).expect("write");
    std::fs::write(dir.join("clean.toml"), CLEAN).expect("write");
    std::fs::write(dir.join("chaos.toml"), CHAOS).expect("write");
    std::fs::write(
        dir.join("review.toml"),
        "[review]\nname = \"t\"\nseeds = 1\n\n[[design]]\nname = \"a\"\nscenario = \"chaos.toml\"\n",
    )
    .expect("write");
}

/// Every command that writes a file: its option, the extension its file takes, the arguments
/// that write it to `OUT`, and a piece of text its output has.
const COMMANDS: [(&str, &str, &[&str], &str); 6] = [
    (
        "run --history",
        "jsonl",
        &["run", "k1.toml", "--history", "OUT"],
        "\"grant\"",
    ),
    (
        "check --junit",
        "xml",
        &["check", "clean.toml", "--seeds", "2", "--junit", "OUT"],
        "<testsuite",
    ),
    (
        "map --out",
        "svg",
        &["map", "clean.toml", "--out", "OUT"],
        "<svg",
    ),
    (
        "hunt --out",
        "toml",
        &[
            "hunt",
            "k1.toml",
            "--seeds",
            "1",
            "--max-tries",
            "3",
            "--out",
            "OUT",
        ],
        "[scenario]",
    ),
    (
        "report --out",
        "html",
        &["report", "clean.toml", "--seeds", "2", "--out", "OUT"],
        "<html",
    ),
    (
        "review --out",
        "html",
        &["review", "review.toml", "--out", "OUT"],
        "<html",
    ),
];

/// Runs `args` in `dir` with `OUT` replaced by `out`, checking that the command did not
/// refuse it (exit 0, or 1 for a violation found or met).
fn write_to(dir: &Path, command: &str, args: &[&str], out: &Path) {
    let args: Vec<&str> = args
        .iter()
        .map(|a| if *a == "OUT" { s(out) } else { a })
        .collect();
    let o = lockstep_in(dir, &args);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{command} {}: exit {:?}\n{}",
        out.display(),
        o.status.code(),
        stderr(&o)
    );
}

/// No temporary file is left in `dir`.
fn no_temporary_in(dir: &Path) {
    for e in std::fs::read_dir(dir).expect("dir") {
        let name = e.expect("entry").file_name();
        let name = name.to_string_lossy();
        assert!(!name.ends_with(".tmp"), "left in {}: {name}", dir.display());
    }
}

#[test]
fn an_output_through_a_symbolic_link_writes_its_target_and_keeps_the_link() {
    let dir = fresh_dir("symlink");
    inputs_in(&dir);
    // The targets in a directory of their own, so the temporary file must go beside them.
    std::fs::create_dir(dir.join("real")).expect("dir");
    let mut wrong = Vec::new();
    for (i, (command, ext, args, has)) in COMMANDS.iter().enumerate() {
        let target = dir.join(format!("real/out-{i}.{ext}"));
        let link = dir.join(format!("link-{i}.{ext}"));
        std::fs::write(&target, "old").expect("write");
        std::os::unix::fs::symlink(format!("real/out-{i}.{ext}"), &link).expect("symlink");
        write_to(&dir, command, args, &link);
        let meta = std::fs::symlink_metadata(&link).expect("the link");
        let text = std::fs::read_to_string(&target).expect("the target");
        if !meta.file_type().is_symlink() || !text.contains(has) {
            wrong.push(format!(
                "{command}: link replaced, or its target has: {text:.100}"
            ));
        }
    }
    // A link whose target does not exist yet: the target is made.
    let link = dir.join("dangling.jsonl");
    std::os::unix::fs::symlink("real/new.jsonl", &link).expect("symlink");
    write_to(&dir, "run", COMMANDS[0].2, &link);
    let text = std::fs::read_to_string(dir.join("real/new.jsonl")).unwrap_or_default();
    if !std::fs::symlink_metadata(&link)
        .expect("link")
        .file_type()
        .is_symlink()
        || !text.contains("\"grant\"")
    {
        wrong.push("run --history: a dangling link replaced, or its target not made".into());
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    no_temporary_in(&dir);
    no_temporary_in(&dir.join("real"));
}

/// What a reader of a FIFO receives until the writer is done.
struct FifoReader {
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Vec<u8>>,
}

impl FifoReader {
    /// Opens `fifo` for reading now, without waiting for a writer, so the command finds a
    /// reader when it opens the FIFO to write, and the test never waits on a FIFO that the
    /// command replaced by a file.
    fn open(fifo: &Path) -> FifoReader {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        use std::sync::atomic::Ordering;
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(fifo)
            .expect("open the FIFO");
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let finished = done.clone();
        #[allow(
            clippy::disallowed_methods,
            reason = "the test's reader of a FIFO, beside the command; no run reads it"
        )]
        let thread = std::thread::spawn(move || {
            let mut got = Vec::new();
            let mut buf = vec![0; 1 << 16];
            loop {
                // Read before deciding: the writer is done, and all it wrote is in the pipe.
                let writer_done = finished.load(Ordering::SeqCst);
                match f.read(&mut buf) {
                    Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
                    Ok(_) if writer_done => return got,
                    Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => panic!("{e}"),
                    _ if writer_done => return got,
                    _ => std::thread::sleep(std::time::Duration::from_millis(5)),
                }
            }
        });
        FifoReader { done, thread }
    }

    /// Everything read, once the writer is done.
    fn received(self) -> Vec<u8> {
        self.done.store(true, std::sync::atomic::Ordering::SeqCst);
        self.thread.join().expect("the reader")
    }
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(s(path)).expect("path");
    // SAFETY: `c` is a valid, NUL-terminated path.
    let made = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
    assert_eq!(made, 0, "mkfifo {}", path.display());
}

#[test]
fn an_output_to_a_fifo_is_written_to_its_reader_and_the_fifo_kept() {
    use std::os::unix::fs::FileTypeExt;
    let dir = fresh_dir("fifo");
    inputs_in(&dir);
    let mut wrong = Vec::new();
    for (i, (command, ext, args, has)) in COMMANDS.iter().enumerate() {
        let fifo = dir.join(format!("out-{i}.{ext}"));
        mkfifo(&fifo);
        let reader = FifoReader::open(&fifo);
        write_to(&dir, command, args, &fifo);
        let got = String::from_utf8(reader.received()).expect("UTF-8");
        let meta = std::fs::symlink_metadata(&fifo).expect("the FIFO");
        // The whole output: as long as what the same command writes to a file.
        let file = dir.join(format!("file-{i}.{ext}"));
        write_to(&dir, command, args, &file);
        let whole = std::fs::read_to_string(&file).expect("the file");
        if !meta.file_type().is_fifo() || !got.contains(has) || got.len() != whole.len() {
            wrong.push(format!(
                "{command}: FIFO replaced, or its reader got {} of {} bytes",
                got.len(),
                whole.len()
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    no_temporary_in(&dir);
}

#[test]
fn an_output_to_a_character_device_is_written_to_it_and_the_device_kept() {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let dir = fresh_dir("device");
    inputs_in(&dir);
    let mut wrong = Vec::new();
    for (i, (command, ext, args, _)) in COMMANDS.iter().enumerate() {
        // The null device (1, 3) made in the test's own directory, never /dev/null itself:
        // as root, the old rename over it would have replaced the machine's.
        let device = dir.join(format!("null-{i}.{ext}"));
        let c = std::ffi::CString::new(s(&device)).expect("path");
        // SAFETY: `c` is a valid, NUL-terminated path.
        let made = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
        if made != 0 {
            // Only root makes device nodes; anyone else writes through a link to the
            // machine's null device, which a rename would replace by a file.
            std::os::unix::fs::symlink("/dev/null", &device).expect("symlink");
        }
        write_to(&dir, command, args, &device);
        let meta = std::fs::metadata(&device).expect("the device");
        if !meta.file_type().is_char_device() || meta.rdev() != libc::makedev(1, 3) {
            wrong.push(format!("{command}: the device was replaced"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    no_temporary_in(&dir);
}

#[test]
fn an_output_to_dev_stdout_goes_through_the_commands_own_stdout() {
    use std::os::unix::fs::MetadataExt;
    let dir = fresh_dir("stdout");
    inputs_in(&dir);
    // The shell's `> out.txt`: the command's stdout is a regular file.
    let out = dir.join("out.txt");
    let file = std::fs::File::create(&out).expect("create");
    let inode = file.metadata().expect("metadata").ino();
    let o = Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(["run", "k1.toml", "--history", "/dev/stdout"])
        .current_dir(&dir)
        .stdout(file)
        .output()
        .expect("the lockstep binary runs");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let meta = std::fs::metadata(&out).expect("out.txt");
    let text = std::fs::read_to_string(&out).expect("out.txt");
    // Formerly the history was renamed over out.txt and the table went to the file the shell
    // had opened, no longer there.
    assert_eq!(meta.ino(), inode, "out.txt was replaced");
    assert!(
        text.starts_with("{\"lockstep_history\"") && text.contains("\nscenario   k1-gc-pause"),
        "the history, then the table: {}",
        text.chars().rev().take(300).collect::<String>()
    );
    no_temporary_in(&dir);
}
