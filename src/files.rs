//! The files the commands write: an [`Output`] is checked before anything runs and written
//! whole at the end. Only the `lockstep` binary writes files, through this module.

use std::io::Write;
use std::path::{Path, PathBuf};

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
/// regular file is written to directly, as a shell's `>` would, never replaced.
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
