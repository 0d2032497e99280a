//! `iolab`: one binary for storage benchmarks. Parses the command line, sets up the
//! process (Ctrl-C, MPI), runs the command and turns its outcome into an exit code:
//! 0 ok, 1 the benchmark ran but failed validation, 2 usage/configuration/runtime
//! error, 130 interrupted.

#![forbid(unsafe_code)]

// Every `print!` and `println!` of this crate goes through `output::write_stdout`, which
// never panics: a full or closed stdout ends the process with one line (see output.rs).
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!($($arg)*))
    };
}
macro_rules! println {
    () => {
        $crate::output::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

mod args;
mod cli;
mod commands;
mod exit;
mod live;
mod output;
mod progress;
mod runtime;
mod sink;
mod telemetry;
mod watch;

use std::process::ExitCode;

use clap::Parser;
use clap::error::ErrorKind;

fn main() -> ExitCode {
    iolab_backend::process::default_sigpipe();
    // iolab's own MPI traffic is a few bytes every 0.1 s: let ranks waiting in it sleep
    // rather than spin, so they never take CPU from the workers they coordinate.
    iolab_backend::process::set_env_default("OMPI_MCA_mpi_yield_when_idle", "1");
    iolab_engine::set_build_revision(env!("IOLAB_GIT_REVISION"));
    let cli = match cli::Cli::try_parse() {
        Ok(c) => c,
        // `iolab`, `iolab study`: a missing subcommand is no error to squash onto one
        // line but a newcomer's first look; clap's own help, on stderr, exit 2 as clap's.
        Err(e) if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            return ExitCode::from(exit::USAGE);
        }
        Err(e) if e.use_stderr() => {
            let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
            eprintln!("iolab: {}", exit::one_line_usage(&e, &args));
            return ExitCode::from(exit::USAGE);
        }
        Err(e) => {
            // --help and --version.
            if let Err(err) = e.print() {
                output::stdout_failed(&err);
            }
            output::flush_stdout();
            return ExitCode::from(exit::OK);
        }
    };
    let code = match cli::dispatch(cli) {
        Ok(code) => code,
        Err(e) => runtime::report(&e),
    };
    live::linger_and_stop();
    output::flush_stdout();
    ExitCode::from(code)
}
