//! Bounded reading of outside input: every file or stream iolab reads from a user (IO500
//! results, StorageBench text, fio job files, study and targets files, `-` for stdin) is
//! read through [`read_text`], which stops at a size and a line length instead of
//! growing without bound (`iolab io500 score /dev/zero`), and says which limit and which
//! file in one line.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// The most iolab reads from one input: far above any result or job file, far below
/// what would hurt the machine.
pub const MAX_INPUT: u64 = 16 << 20;
/// The longest line iolab accepts in a text input.
pub const MAX_LINE: usize = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("cannot read {}: {}", .path.display(), crate::error::describe(.source))]
    Io { path: PathBuf, source: io::Error },
    #[error("{} is larger than {}, the most iolab reads from one input; is it the right file?", .path.display(), crate::units::ByteCount(*.limit).human())]
    TooLarge { path: PathBuf, limit: u64 },
    #[error("{}:{line}: a line longer than {}, the longest iolab reads; is it a text file?", .path.display(), crate::units::ByteCount(*.limit as u64).human())]
    LineTooLong {
        path: PathBuf,
        line: usize,
        limit: usize,
    },
}

/// The bytes of `path` (`-`: standard input), at most `limit` of them.
pub fn read_bytes(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    let shown = shown(path);
    let io = |source| InputError::Io {
        path: shown.clone(),
        source,
    };
    let mut bytes = Vec::new();
    if path == Path::new("-") {
        io::stdin()
            .lock()
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(io)?;
    } else {
        std::fs::File::open(path)
            .map_err(io)?
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(io)?;
    }
    if bytes.len() as u64 > limit {
        return Err(InputError::TooLarge { path: shown, limit });
    }
    Ok(bytes)
}

/// How an input is named in errors: `-` is standard input.
fn shown(path: &Path) -> PathBuf {
    if path == Path::new("-") {
        PathBuf::from("standard input")
    } else {
        path.to_path_buf()
    }
}

/// The text of `path` (`-`: standard input): at most [`MAX_INPUT`] bytes and lines of at
/// most [`MAX_LINE`]; bytes that are not UTF-8 are replaced.
pub fn read_text(path: &Path) -> Result<String, InputError> {
    read_text_within(path, MAX_INPUT)
}

/// [`read_text`] with another size limit.
pub fn read_text_within(path: &Path, limit: u64) -> Result<String, InputError> {
    let bytes = read_bytes(path, limit)?;
    if let Some(line) = bytes
        .split(|&b| b == b'\n')
        .position(|l| l.len() > MAX_LINE)
    {
        return Err(InputError::LineTooLong {
            path: shown(path),
            line: line + 1,
            limit: MAX_LINE,
        });
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_input_stops_at_the_limit() {
        let err = read_text(Path::new("/dev/zero")).unwrap_err().to_string();
        assert_eq!(
            err,
            "/dev/zero is larger than 16.0 MiB, the most iolab reads from one input; is it the right file?"
        );
        let err = read_text_within(Path::new("/dev/zero"), 4096)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "/dev/zero is larger than 4.00 KiB, the most iolab reads from one input; is it the right file?"
        );
    }

    #[test]
    fn text_within_the_limits_reads_whole() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.txt");
        std::fs::write(&f, "one\ntwo\n").unwrap();
        assert_eq!(read_text(&f).unwrap(), "one\ntwo\n");
        let long = dir.path().join("long.txt");
        std::fs::write(&long, format!("ok\n{}\n", "x".repeat(MAX_LINE + 1))).unwrap();
        let err = read_text(&long).unwrap_err().to_string();
        assert!(
            err.ends_with("long.txt:2: a line longer than 1.00 MiB, the longest iolab reads; is it a text file?"),
            "{err}"
        );
        let err = read_text(&dir.path().join("none")).unwrap_err().to_string();
        assert!(err.starts_with("cannot read "), "{err}");
        assert!(err.ends_with("none: No such file or directory"), "{err}");
    }
}
