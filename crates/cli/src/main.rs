//! `iolab`: one binary for storage benchmarks. Parses the command line, sets up the
//! process (Ctrl-C, MPI), runs the command and turns its outcome into an exit code:
//! 0 ok, 1 the benchmark ran but failed validation, 2 usage/configuration/runtime
//! error, 130 interrupted.

#![forbid(unsafe_code)]

mod cli;
mod commands;
mod exit;
mod live;
mod progress;
mod runtime;
mod sink;
mod telemetry;
mod watch;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    iolab_backend::process::default_sigpipe();
    // iolab's own MPI traffic is a few bytes every 0.1 s: let ranks waiting in it sleep
    // rather than spin, so they never take CPU from the workers they coordinate.
    iolab_backend::process::set_env_default("OMPI_MCA_mpi_yield_when_idle", "1");
    iolab_engine::data::set_build_revision(env!("IOLAB_GIT_REVISION"));
    let cli = match cli::Cli::try_parse() {
        Ok(c) => c,
        Err(e) if e.use_stderr() => {
            let args: Vec<String> = std::env::args().collect();
            eprintln!("iolab: {}", exit::one_line_usage(&e, &args));
            return ExitCode::from(exit::USAGE);
        }
        Err(e) => {
            // --help and --version.
            let _ = e.print();
            return ExitCode::from(exit::OK);
        }
    };
    let code = match commands::dispatch(cli) {
        Ok(code) => code,
        Err(e) => exit::report(&e),
    };
    live::linger();
    ExitCode::from(code)
}
