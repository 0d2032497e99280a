//! Where `iolab fio`'s report goes: standard output or `--output FILE` ([`FioOutput`]).
//! The file is opened (and checked) before anything runs but emptied only when the first
//! report is written, so a run refused before it writes leaves the file as it was (and
//! removes it again if it made it).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

use anyhow::{Context, Result};

/// Standard output, or `--output`'s file.
pub struct FioOutput {
    file: Option<Mutex<OutputFile>>,
}

struct OutputFile {
    file: std::fs::File,
    path: PathBuf,
    made: bool,
    written: bool,
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if self.made && !self.written {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl FioOutput {
    /// Opens `--output` before anything runs, on the rank that prints (`root`); it is
    /// emptied, as fio does, when the first report is written.
    pub fn open(output: Option<&str>, root: bool) -> Result<Self> {
        let file = match output {
            Some(path) if root => {
                let path = PathBuf::from(path);
                let made = std::fs::symlink_metadata(&path).is_err();
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(&path)
                    .with_context(|| format!("--output {}", path.display()))?;
                Some(Mutex::new(OutputFile {
                    file,
                    path,
                    made,
                    written: false,
                }))
            }
            _ => None,
        };
        Ok(FioOutput { file })
    }

    /// Writes to `--output` or standard output.
    pub fn write(&self, text: &str) -> Result<()> {
        match &self.file {
            Some(f) => {
                let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
                let first = !f.written;
                f.written = true;
                let path = f.path.display().to_string();
                let out = &mut f.file;
                (if first { out.set_len(0) } else { Ok(()) })
                    .and_then(|_| out.write_all(text.as_bytes()))
                    .and_then(|_| out.flush())
                    .with_context(|| format!("--output {path}"))
            }
            None => {
                let mut out = std::io::stdout().lock();
                out.write_all(text.as_bytes())
                    .and_then(|_| out.flush())
                    .context("standard output")
            }
        }
    }
}
