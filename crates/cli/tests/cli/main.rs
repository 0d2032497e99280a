//! The CLI integration tests: one binary, a temporary directory per test, the real
//! `iolab` executable. Modules by command.

mod bad_input;
mod benchmarks_doc;
mod common;
mod data_reduction;
mod fio;
mod fio_access;
mod fio_cache;
mod fio_control;
mod fio_corpus;
mod fio_data;
mod fio_exit;
mod fio_files;
mod fio_hist;
mod fio_mixed;
mod fio_more;
mod fio_options;
mod fio_plot;
mod fio_service;
mod fio_verify;
mod flash;
mod flash_data;
mod house_rules;
mod io500;
mod io500_lines;
mod io500_run;
#[cfg(feature = "mpi")]
mod io500_tree;
mod ior;
mod ior_syscalls;
mod live;
mod live_metrics;
mod live_page;
mod live_targets;
mod mdtest;
mod mdtest_paths;
mod meta;
mod meta_syscalls;
#[cfg(feature = "mpi")]
mod mpi;
#[cfg(feature = "mpi")]
mod mpi_faults;
mod progress;
mod pts;
mod readme_doc;
mod real;
mod results;
mod results_compare;
mod run;
mod run_refusals;
mod safety;
mod steady_state;
mod study;
mod study_reports;
mod targets;
mod targets_analyze;
#[cfg(feature = "mpi")]
mod targets_mpi;
mod tools;
mod train;
mod usage;
