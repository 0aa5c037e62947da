//! The files the commands read and write. Every input (a scenario, review, history or sweep
//! summary, from a path or standard input) is read by [`read_text`], [`read_bytes`] or
//! [`read_stdin`]: at most its kind's cap ([`Input`]), never waiting forever on a FIFO, a pipe
//! or a device that gives nothing, a leading UTF-8 byte-order mark skipped. An [`Output`] is
//! checked before anything runs and written whole at the end; only the `lockstep` binary
//! writes files, through it.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A kind of input: what it is called in errors and the most bytes it may have. The caps are
/// far above any file lockstep writes or its catalogue holds (a scenario is a few KB, the
/// history of a one-hour run about 14 MB), and keep `/dev/zero` or a runaway generator from
/// filling memory; docs/scenarios.md, docs/review.md, docs/history.md and README.md state
/// them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Input {
    /// Its name in errors: "scenario file".
    pub what: &'static str,
    /// The most bytes it may have.
    pub cap: u64,
}

impl Input {
    /// A scenario file (also a sweep map's, and each design's of a review): 4 MiB.
    pub const SCENARIO: Input = Input {
        what: "scenario file",
        cap: 4 << 20,
    };
    /// A review file: 4 MiB.
    pub const REVIEW: Input = Input {
        what: "review file",
        cap: 4 << 20,
    };
    /// A history (JSON Lines) for `judge`: 256 MiB (`judge` of a 245 MiB history peaked at
    /// 500 MB).
    pub const HISTORY: Input = Input {
        what: "history",
        cap: 256 << 20,
    };
    /// A sweep summary (`sweep --format json`) for `merge` and `report`: 16 MiB.
    pub const SUMMARY: Input = Input {
        what: "sweep summary",
        cap: 16 << 20,
    };
}

/// How long a FIFO, a pipe or a device may give no data before its read is refused, unless
/// the binary sets another wait ([`set_input_wait_ms`]).
pub const INPUT_WAIT_MS: u64 = 10_000;

static WAIT_MS: AtomicU64 = AtomicU64::new(INPUT_WAIT_MS);

/// Sets how long a FIFO, a pipe or a device may give no data (the binary's
/// `LOCKSTEP_INPUT_WAIT_MS`); at least 1 ms. It changes no run, only when a read gives up.
pub fn set_input_wait_ms(ms: u64) {
    WAIT_MS.store(ms.max(1), Ordering::Relaxed);
}

/// Why an input could not be read: the text after `FILE: cannot read the ...: `.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// The system's error, in words.
    #[error("{0}")]
    Io(String),
    /// The path names a directory.
    #[error("it is a directory")]
    Directory,
    /// The path names a socket, which is no file to open.
    #[error("it is a socket, not a file")]
    Socket,
    /// More bytes than the input's cap; no more than the cap and one byte were read.
    #[error("it has more than {}, the most a {what} may have", size(*cap))]
    TooLarge {
        /// The kind of input.
        what: &'static str,
        /// Its cap in bytes.
        cap: u64,
    },
    /// A FIFO, a pipe or a device gave no data for the wait.
    #[error("gave no data for {} s (LOCKSTEP_INPUT_WAIT_MS sets the wait)", seconds(*wait_ms))]
    NoData {
        /// The wait, in milliseconds.
        wait_ms: u64,
    },
    /// The text is not UTF-8.
    #[error("it is not UTF-8 text (line {line})")]
    NotUtf8 {
        /// The line of the first byte that is not.
        line: usize,
    },
}

/// `4 MiB`, `256 MiB`, or bytes when not a whole number of MiB.
fn size(bytes: u64) -> String {
    if bytes % (1 << 20) == 0 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// `10`, `0.3`: milliseconds as seconds.
fn seconds(ms: u64) -> String {
    if ms % 1000 == 0 {
        (ms / 1000).to_string()
    } else {
        format!("{}", ms as f64 / 1000.0)
    }
}

/// The bytes of the file at `path`, as [`read_bytes`], as UTF-8 text.
///
/// # Errors
/// As [`read_bytes`], or [`ReadError::NotUtf8`].
pub fn read_text(path: &Path, input: Input) -> Result<String, ReadError> {
    text(read_bytes(path, input)?)
}

/// The bytes of the file at `path` (symbolic links followed), at most `input.cap`, without a
/// leading UTF-8 byte-order mark (RFC 8259 lets a JSON reader skip it; editors on Windows
/// write one; TOML allows it). A regular file is read to its end; a FIFO, a pipe (`/dev/fd/N`
/// of a shell's `<(...)`) or a device is read as long as it gives data within the wait
/// ([`INPUT_WAIT_MS`]) and until its writer closes it.
///
/// # Errors
/// A [`ReadError`]: the system's, a directory or a socket, more than the cap (no more than
/// the cap and one byte are read), or no data for the wait.
pub fn read_bytes(path: &Path, input: Input) -> Result<Vec<u8>, ReadError> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let kind = std::fs::metadata(path).map_err(|e| io(&e))?.file_type();
    if kind.is_dir() {
        return Err(ReadError::Directory);
    }
    if kind.is_socket() {
        return Err(ReadError::Socket);
    }
    // Without O_NONBLOCK, opening a FIFO waits for a writer, for ever if none comes.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| io(&e))?;
    let meta = file.metadata().map_err(|e| io(&e))?;
    if meta.is_file() {
        if meta.len() > input.cap {
            return Err(too_large(input));
        }
        capped(file, input, meta.len())
    } else if meta.is_dir() {
        Err(ReadError::Directory)
    } else {
        capped(
            Waiting {
                file,
                wait_ms: WAIT_MS.load(Ordering::Relaxed),
            },
            input,
            0,
        )
    }
}

/// Standard input, at most `input.cap`, without a leading byte-order mark. It waits as long
/// as standard input does: the caller's shell opened it, and a person may be typing.
///
/// # Errors
/// A [`ReadError`]: the system's, or more than the cap.
pub fn read_stdin(input: Input) -> Result<Vec<u8>, ReadError> {
    capped(std::io::stdin().lock(), input, 0)
}

/// `bytes` as text, or the line of the first byte that is not UTF-8.
///
/// # Errors
/// [`ReadError::NotUtf8`].
pub fn text(bytes: Vec<u8>) -> Result<String, ReadError> {
    String::from_utf8(bytes).map_err(|e| {
        let bad = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..bad].iter().filter(|&&b| b == b'\n').count();
        ReadError::NotUtf8 { line }
    })
}

/// Reads `from` to its end, at most `input.cap` bytes (one more is read to know there are
/// more), and drops a leading byte-order mark. `hint` is the size expected (a regular
/// file's), reserved at once; the buffer grows by doubling but never past the cap and one
/// byte, so `/dev/zero` costs the cap, not twice it.
fn capped(mut from: impl Read, input: Input, hint: u64) -> Result<Vec<u8>, ReadError> {
    let limit = usize::try_from(input.cap.saturating_add(1)).unwrap_or(usize::MAX);
    let mut bytes = Vec::with_capacity(usize::try_from(hint).unwrap_or(0).min(limit));
    let mut chunk = vec![0; 64 << 10];
    loop {
        let want = chunk.len().min(limit - bytes.len());
        if want == 0 {
            return Err(too_large(input));
        }
        let n = match from.read(&mut chunk[..want]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                return Err(ReadError::NoData {
                    wait_ms: WAIT_MS.load(Ordering::Relaxed),
                });
            }
            Err(e) => return Err(io(&e)),
        };
        if bytes.capacity() - bytes.len() < n {
            let grown = (bytes.capacity() * 2).max(bytes.len() + n).min(limit);
            bytes.reserve_exact(grown - bytes.len());
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
    if bytes.starts_with(BOM) {
        bytes.drain(..BOM.len());
    }
    Ok(bytes)
}

/// The UTF-8 byte-order mark, U+FEFF.
const BOM: &[u8] = b"\xEF\xBB\xBF";

fn too_large(input: Input) -> ReadError {
    ReadError::TooLarge {
        what: input.what,
        cap: input.cap,
    }
}

fn io(e: &std::io::Error) -> ReadError {
    ReadError::Io(io_reason(e))
}

/// A FIFO, a pipe or a device opened without blocking, read by waiting for data at most
/// `wait_ms` each time (`poll(2)`); a read that waited longer fails with `TimedOut`.
struct Waiting {
    file: std::fs::File,
    wait_ms: u64,
}

impl Read for Waiting {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::os::fd::AsRawFd;
        loop {
            // Poll first: a FIFO that no writer has opened yet reads as its end, but polls as
            // empty until one does.
            let mut fd = libc::pollfd {
                fd: self.file.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let wait = i32::try_from(self.wait_ms).unwrap_or(i32::MAX);
            // SAFETY: `fd` is one valid `pollfd` for the duration of the call.
            match unsafe { libc::poll(&mut fd, 1, wait) } {
                0 => return Err(std::io::ErrorKind::TimedOut.into()),
                n if n < 0 => {
                    let e = std::io::Error::last_os_error();
                    if e.kind() != std::io::ErrorKind::Interrupted {
                        return Err(e);
                    }
                }
                _ => match self.file.read(buf) {
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    r => return r,
                },
            }
        }
    }
}

/// The directory of `file`; `.` for a bare file name.
fn parent_dir(file: &Path) -> &Path {
    match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// A file a command writes (`--out`, `--junit`, `--history`): checked before anything runs,
/// so a location that cannot take it or an input it would overwrite is found before the first
/// run, and written whole at the end.
///
/// What the path names decides how: a regular file, or one not there yet, gets a temporary
/// file beside it renamed over it, so a reader sees the old file or the whole new one, never
/// a part; a symbolic link is followed, so the link stays and its target gets the text (the
/// temporary file goes beside the target); a FIFO, a device or anything else that is not a
/// regular file is written to directly, as a shell's `>` would, never replaced; one of the
/// process's own descriptors (`/dev/stdout`, `/dev/fd/N`) is written through, whatever it is
/// open on.
#[derive(Debug)]
pub struct Output {
    path: PathBuf,
    /// What the file is, in errors: "JUnit file", "report".
    what: &'static str,
}

/// Where an output's text goes.
#[derive(Debug)]
enum Target {
    /// A regular file or a new one, at this path with every symbolic link resolved: written
    /// to a temporary file beside it, then renamed over it.
    File(PathBuf),
    /// A FIFO, a device, anything else that exists and is no regular file: opened and
    /// written, never renamed over, since a rename would replace the node with a file.
    Stream,
    /// One of this process's own open files (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`):
    /// written through that descriptor, at its offset, whatever it is. Opened again by its
    /// name, a regular file would be renamed over (the shell's `> out.txt` then keeps writing
    /// to a file no longer there) or written from its start over what the command printed.
    Descriptor(std::os::fd::RawFd),
}

/// How many symbolic links a path may go through, as Linux's `MAXSYMLINKS`.
const MAX_LINKS: usize = 40;

impl Output {
    /// Checks that `path` can be written as the `what` without overwriting any of `inputs`
    /// (the files the command reads, compared after resolving symbolic links and `..`): it
    /// is not a directory, and either it is a FIFO or a device this process may write, or its
    /// directory (the target's, through links) exists and takes a new file. It makes nothing
    /// beside a FIFO or a device (`/dev` gets no temporary file).
    ///
    /// # Errors
    /// The problem, as `FILE: cannot write the WHAT: PROBLEM`.
    pub fn check(path: &Path, what: &'static str, inputs: &[&Path]) -> Result<Output, String> {
        let out = Output {
            path: path.to_path_buf(),
            what,
        };
        out.problem(inputs).map_or(Ok(()), |p| Err(out.error(p)))?;
        Ok(out)
    }

    fn problem(&self, inputs: &[&Path]) -> Option<String> {
        let target = match self.target() {
            Ok(t) => t,
            Err(e) => return Some(e),
        };
        if let Some(input) = inputs.iter().find(|i| same_file(&self.path, i)) {
            return Some(format!("it is the input file {}", input.display()));
        }
        let file = match target {
            Target::File(f) => f,
            Target::Stream => return writable(&self.path).err().map(|e| io_reason(&e)),
            Target::Descriptor(fd) => return open_to_write(fd).err(),
        };
        let dir = parent_dir(&file);
        if !dir.is_dir() {
            return Some(format!("no directory {}", dir.display()));
        }
        // The temporary file the write will use, made and removed again: the directory takes
        // a new file.
        let tmp = match temporary(&file) {
            Ok(t) => t,
            Err(e) => return Some(e),
        };
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(_) => {
                let _ = std::fs::remove_file(&tmp);
                None
            }
            Err(e) => Some(format!(
                "no new file can be made in {} ({})",
                dir.display(),
                io_reason(&e)
            )),
        }
    }

    /// What the path names now, links followed.
    fn target(&self) -> Result<Target, String> {
        if let Some(fd) = descriptor(&self.path) {
            return Ok(Target::Descriptor(fd));
        }
        match std::fs::metadata(&self.path) {
            Ok(m) if m.is_dir() => Err("it is a directory".to_string()),
            Ok(m) if m.is_file() => std::fs::canonicalize(&self.path)
                .map(Target::File)
                .map_err(|e| io_reason(&e)),
            Ok(_) => Ok(Target::Stream),
            // Not there, or a link to nothing yet: the file the links lead to is made.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                links_followed(&self.path).map(Target::File)
            }
            Err(e) => Err(io_reason(&e)),
        }
    }

    fn error(&self, problem: impl std::fmt::Display) -> String {
        format!(
            "{}: cannot write the {}: {problem}",
            self.path.display(),
            self.what
        )
    }

    /// Writes `text` whole: to a regular file through a temporary file renamed over it, so
    /// that a reader (a CI server collecting reports) sees the old file or the whole new one,
    /// never a part; to a FIFO or a device directly (a FIFO waits for its reader, as a
    /// shell's `>` does).
    ///
    /// # Errors
    /// The problem, as `FILE: cannot write the WHAT: PROBLEM`.
    pub fn write(&self, text: &str) -> Result<(), String> {
        match self.target().map_err(|e| self.error(e))? {
            Target::Stream => std::fs::OpenOptions::new()
                .write(true)
                .open(&self.path)
                .and_then(|mut f| f.write_all(text.as_bytes()))
                .map_err(|e| self.error(io_reason(&e))),
            Target::File(file) => self.replace(&file, text),
            Target::Descriptor(fd) => write_to(fd, text).map_err(|e| self.error(io_reason(&e))),
        }
    }

    /// Writes `text` to a temporary file beside `file` and renames it over `file`; an
    /// existing file keeps its permissions.
    fn replace(&self, file: &Path, text: &str) -> Result<(), String> {
        let tmp = temporary(file).map_err(|e| self.error(e))?;
        let kept = std::fs::metadata(file).ok().map(|m| m.permissions());
        let written = std::fs::File::create(&tmp).and_then(|mut f| {
            if let Some(p) = kept {
                f.set_permissions(p)?;
            }
            f.write_all(text.as_bytes())?;
            f.sync_all()
        });
        written
            .and_then(|()| std::fs::rename(&tmp, file))
            .map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                self.error(io_reason(&e))
            })
    }

    /// The output's path as given, for messages.
    pub fn display(&self) -> std::path::Display<'_> {
        self.path.display()
    }
}

/// The temporary file beside `file`: `.NAME.PID.tmp`.
fn temporary(file: &Path) -> Result<PathBuf, String> {
    let name = file.file_name().ok_or("not a file name")?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    Ok(parent_dir(file).join(tmp_name))
}

/// `path` with the symbolic links it names followed, one after another, to a path that is no
/// link (a file not made yet): where a new output through a dangling link goes.
fn links_followed(path: &Path) -> Result<PathBuf, String> {
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&at).map_err(|e| io_reason(&e))?;
                at = parent_dir(&at).join(to);
            }
            _ => return Ok(at),
        }
    }
    Err("too many levels of symbolic links".to_string())
}

/// The descriptor `path` names when it, or a symbolic link it leads through, is one of this
/// process's own: `/dev/fd/N`, `/proc/self/fd/N` or `/proc/PID/fd/N` (`/dev/stdout` is a
/// link to `/proc/self/fd/1`).
fn descriptor(path: &Path) -> Option<std::os::fd::RawFd> {
    let own = format!("/proc/{}/fd/", std::process::id());
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        let name = at.to_str()?;
        let n = ["/dev/fd/", "/proc/self/fd/", own.as_str()]
            .iter()
            .find_map(|dir| name.strip_prefix(dir));
        if let Some(n) = n {
            return n.parse().ok();
        }
        // Stop at anything that is no link, before reading what a descriptor's link names.
        let to = std::fs::read_link(&at).ok()?;
        at = parent_dir(&at).join(to);
    }
    None
}

/// Whether descriptor `fd` is open and open for writing.
fn open_to_write(fd: std::os::fd::RawFd) -> Result<(), String> {
    // SAFETY: F_GETFL reads the flags of any integer; a closed one fails.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io_reason(&std::io::Error::last_os_error()));
    }
    if flags & libc::O_ACCMODE == libc::O_RDONLY {
        return Err(format!("descriptor {fd} is open for reading only"));
    }
    Ok(())
}

/// Writes `text` through a copy of descriptor `fd`, sharing its offset.
fn write_to(fd: std::os::fd::RawFd, text: &str) -> std::io::Result<()> {
    use std::os::fd::FromRawFd;
    if fd == 1 {
        // What the command printed before goes first.
        std::io::stdout().flush()?;
    }
    // SAFETY: dup(2) takes any integer; a closed one fails.
    let copy = unsafe { libc::dup(fd) };
    if copy < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `copy` was just opened by this process, and nothing else owns it.
    let mut file = unsafe { std::fs::File::from_raw_fd(copy) };
    file.write_all(text.as_bytes())
}

/// Whether this process may write `path` (a FIFO or a device), asked without opening it: an
/// open would wait for a FIFO's reader, and opening a device can do something.
fn writable(path: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: `c` is a NUL-terminated string that outlives the call.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// An IO error in words, without Rust's "(os error 13)".
pub fn io_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// True when `a` and `b` name the same file: the same path once symbolic links, `.` and `..`
/// are resolved (for a file that does not exist yet, its directory's), or, on Unix, the same
/// file under two names (a hard link).
fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
        use std::os::unix::fs::MetadataExt;
        return (x.dev(), x.ino()) == (y.dev(), y.ino());
    }
    let resolved = |p: &Path| {
        p.canonicalize().ok().or_else(|| {
            let dir = parent_dir(p).canonicalize().ok()?;
            Some(dir.join(p.file_name()?))
        })
    };
    matches!((resolved(a), resolved(b)), (Some(x), Some(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEN: Input = Input {
        what: "test input",
        cap: 10,
    };

    /// An input without end that counts the bytes it gave.
    struct Endless(u64);

    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            buf.fill(b'a');
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
    }

    #[test]
    fn an_endless_input_is_read_to_one_byte_past_its_cap_and_refused() {
        let mut endless = Endless(0);
        assert_eq!(
            capped(&mut endless, TEN, 0),
            Err(ReadError::TooLarge {
                what: "test input",
                cap: 10
            })
        );
        assert_eq!(endless.0, 11);
        assert_eq!(
            capped(&mut Endless(0), TEN, 0).unwrap_err().to_string(),
            "it has more than 10 bytes, the most a test input may have"
        );
    }

    #[test]
    fn an_input_of_its_cap_is_read_whole_without_a_byte_order_mark() {
        assert_eq!(capped(&b"0123456789"[..], TEN, 10).unwrap(), b"0123456789");
        assert!(capped(&b"0123456789x"[..], TEN, 0).is_err());
        // The mark counts towards the cap: it is in the file.
        assert_eq!(capped(&b"\xEF\xBB\xBF{}"[..], TEN, 0).unwrap(), b"{}");
        assert_eq!(
            capped(&b"{}\xEF\xBB\xBF"[..], TEN, 0).unwrap(),
            b"{}\xEF\xBB\xBF"
        );
    }

    #[test]
    fn text_that_is_not_utf8_is_named_by_its_line() {
        assert_eq!(
            text(b"a = 1\nb = 2\n\xFF\n".to_vec()),
            Err(ReadError::NotUtf8 { line: 3 })
        );
        assert_eq!(seconds(300), "0.3");
        assert_eq!(seconds(10_000), "10");
        assert_eq!(size(4 << 20), "4 MiB");
    }
}
