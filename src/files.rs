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

/// A file a command writes (`--out`, `--junit`): checked before anything runs, so a location
/// that cannot take it or an input it would overwrite is found before the first run, and
/// written whole at the end (a temporary file beside it renamed over it), never partly.
#[derive(Debug)]
pub struct Output {
    path: PathBuf,
    /// What the file is, in errors: "JUnit file", "report".
    what: &'static str,
}

impl Output {
    /// Checks that `path` can be written as the `what` without overwriting any of `inputs`
    /// (the files the command reads, compared after resolving symbolic links and `..`): its
    /// directory exists and takes a new file, and it is not a directory.
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
        let dir = parent_dir(&self.path);
        if !dir.is_dir() {
            return Some(format!("no directory {}", dir.display()));
        }
        if self.path.is_dir() {
            return Some("it is a directory".to_string());
        }
        if let Some(input) = inputs.iter().find(|i| same_file(&self.path, i)) {
            return Some(format!("it is the input file {}", input.display()));
        }
        let tmp = match self.temporary() {
            Ok(t) => t,
            Err(e) => return Some(e),
        };
        // The temporary file the write will use, made and removed again: the directory takes
        // a new file.
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

    /// The temporary file beside the output: `.NAME.PID.tmp`.
    fn temporary(&self) -> Result<PathBuf, String> {
        let name = self.path.file_name().ok_or("not a file name")?;
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".{}.tmp", std::process::id()));
        Ok(parent_dir(&self.path).join(tmp_name))
    }

    fn error(&self, problem: impl std::fmt::Display) -> String {
        format!(
            "{}: cannot write the {}: {problem}",
            self.path.display(),
            self.what
        )
    }

    /// Writes `text` to the temporary file and renames it over the output, so that a reader
    /// (a CI server collecting reports) sees the old file or the whole new one, never a part.
    ///
    /// # Errors
    /// The problem, as `FILE: cannot write the WHAT: PROBLEM`.
    pub fn write(&self, text: &str) -> Result<(), String> {
        let tmp = self.temporary().map_err(|e| self.error(e))?;
        let written = std::fs::File::create(&tmp).and_then(|mut f| {
            f.write_all(text.as_bytes())?;
            f.sync_all()
        });
        written
            .and_then(|()| std::fs::rename(&tmp, &self.path))
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
