//! The CLI integration tests: one binary, a temporary directory per test, the real
//! `iolab` executable. Modules by command.

mod common;
#[cfg(feature = "mpi")]
mod mpi;
mod results;
mod run;
mod study;
mod tools;
