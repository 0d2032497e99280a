//! `iolab`: one binary for storage benchmarks. Parses the command line, sets up the
//! process (Ctrl-C, MPI), runs the command and turns its outcome into an exit code:
//! 0 ok, 1 the benchmark ran but failed validation, 2 usage/configuration/runtime
//! error, 130 interrupted.

mod cli;
mod commands;
mod exit;
mod progress;
mod runtime;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // clap prints help and version to stdout with exit 0, usage errors with 2.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            });
        }
    };
    let code = match commands::dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("iolab: error: {}", exit::one_line(&e));
            exit::code_of(&e)
        }
    };
    ExitCode::from(code)
}
