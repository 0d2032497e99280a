//! Standard output that never panics. `print!` and `println!` in this crate are
//! redefined (in main.rs) to call [`write_stdout`]: when stdout is a closed pipe
//! (`iolab results list | head`) the process ends quietly, as programs do on SIGPIPE;
//! when writing fails otherwise (`> /dev/full`, a vanished terminal) it says so in one
//! line and exits with [`crate::exit::OUTPUT`]. Results are stored before anything is
//! printed, so nothing measured is lost. [`check_output_dir`] refuses an output file
//! whose directory is not there before anything is written.

use std::io::{self, Write};

/// Writes to stdout, or ends the process as described above.
pub fn write_stdout(args: std::fmt::Arguments<'_>) {
    if let Err(e) = io::stdout().lock().write_fmt(args) {
        stdout_failed(&e);
    }
}

/// Flushes stdout at the end of a command (a last line without a newline).
pub fn flush_stdout() {
    if let Err(e) = io::stdout().lock().flush() {
        stdout_failed(&e);
    }
}

/// Ends the process after stdout failed (see the module's documentation).
pub fn stdout_failed(e: &io::Error) -> ! {
    if e.kind() == io::ErrorKind::BrokenPipe {
        // The reader has what it wanted: 128 + SIGPIPE, as a shell reports it.
        std::process::exit(141);
    }
    let _ = writeln!(
        io::stderr(),
        "iolab: error: writing to standard output: {}",
        iolab_core::error::describe(e)
    );
    std::process::exit(i32::from(crate::exit::OUTPUT));
}

/// Refuses an output file whose directory is not there (a typo), before anything is
/// read or written: iolab creates no directories for its reports.
pub fn check_output_dir(option: &str, path: &std::path::Path) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => anyhow::bail!(
            "{option} {}: {} is not a directory",
            path.display(),
            dir.display()
        ),
        Err(_) => anyhow::bail!(
            "{option} {}: the directory {} does not exist; create it first or choose another file",
            path.display(),
            dir.display()
        ),
    }
}
