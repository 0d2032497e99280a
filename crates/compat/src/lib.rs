//! iolab-compat: other tools' languages as pure functions, with no I/O engine behind
//! them. [`io500`] is IO500's: its phase table, its score and validity rules, its result
//! files (result_summary.txt, result.txt, the old script's output) read and written;
//! [`fio`] is fio's command line, job files and output shapes;
//! [`beegfs`] reads beegfs-ctl StorageBench output; [`dlio`] is DLIO's dataset files
//! (npz, TFRecord) and summary.json. What runs a workload lives in
//! iolab-engine, and what composes workloads into a suite in iolab-suites.

#![forbid(unsafe_code)]

pub mod args;
pub mod beegfs;
pub mod dlio;
pub mod fio;
pub mod io500;
pub mod ior;
pub mod ior_output;
pub mod ior_plan;
pub mod mdtest;
pub mod mdtest_front;
pub mod rank_details;
