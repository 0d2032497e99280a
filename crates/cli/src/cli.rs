//! The command line: subcommands with long kebab-case flags and human units, and the
//! dispatch to the command asked for. The options several commands share are in
//! [`crate::args`].

use clap::{Parser, Subcommand};

use crate::args::RunArgs;

#[derive(Parser, Debug)]
#[command(
    name = "iolab",
    version,
    about = "Storage benchmark and characterization for HPC and AI storage",
    long_about = "iolab runs data and metadata workloads on any POSIX path or block device, on one node or across many under MPI, and reports bandwidth, IOPS and latency figures you can trust.",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a data workload (fio-style): sequential or random, read, write or mixed.
    Run(RunArgs),
    /// Run a study: sweeps and matrices from a preset or a study file.
    Study(crate::commands::study::StudyArgs),
    /// List, show, export or delete stored runs.
    Results(crate::commands::results::ResultsArgs),
    /// Compare two runs or labels: peak against peak for every metric, with the change in %.
    Compare(crate::commands::results::CompareArgs),
    /// Write a report of a run (and runs to compare it with): HTML with charts, Markdown, CSV.
    Report(crate::commands::results::ReportArgs),
    /// Run a metadata workload (mdtest-style): create, stat, read, remove trees.
    Meta(crate::commands::meta::MetaArgs),
    /// Walk a tree in parallel and count matching files (IO500's find phase).
    Find(crate::commands::find::FindArgs),
    /// Benchmark every storage target at once and flag slow ones.
    Targets(crate::commands::targets::TargetsArgs),
    /// Measure the network between ranks alone (no storage involved).
    Net(crate::commands::net::NetArgs),
    /// Run an object storage workload over S3 (warp-style): put, get, stat, list, delete, mixed.
    S3(crate::commands::s3::S3Args),
    /// Find the highest IOPS at an acceptable latency: step the load up until a latency objective breaks.
    Ladder(crate::commands::ladder::LadderArgs),
    /// Check the tuning of this machine against what storage studies recommend (reads only).
    Audit(crate::commands::audit::AuditArgs),
    /// Project a device's lifetime at a write rate against its rated endurance.
    Endurance(crate::commands::endurance::EnduranceArgs),
    /// Describe the machine under test: CPU, memory, kernel, file system, devices, network.
    Inventory(crate::commands::inventory::InventoryArgs),
    /// Run the IO500 suite, plan it, or score an IO500 result.
    Io500(crate::commands::io500::Io500Args),
    /// Run fio command lines and job files on iolab's engine, printing fio's output shapes.
    Fio(crate::commands::fio::FioArgs),
    /// Run an IOR command line (POSIX) on iolab's engine, printing IOR's results tables.
    Ior(crate::commands::ior::IorArgs),
    /// Run an mdtest command line (files, POSIX) on iolab's engine, printing mdtest's table.
    Mdtest(crate::commands::mdtest::MdtestArgs),
    /// AI training's data loading as MLPerf Storage's DLIO runs it: datagen, run, search.
    Train(crate::commands::train::TrainArgs),
    /// LLM checkpointing as MLPerf Storage v2.0 runs it: Llama 3 8B to 1T shards, written and read back.
    Checkpoint(crate::commands::checkpoint::CheckpointArgs),
    /// LLM inference's KV cache offload as MLPerf Storage v3.0 runs it: users, CPU and storage tiers.
    Kvcache(crate::commands::kvcache::KvCacheArgs),
    /// SNIA PTS 2.0's IOPS test on a flash device: purge, precondition, rounds until steady.
    Pts(crate::commands::pts::PtsArgs),
}

/// Runs the subcommand asked for and returns the exit code.
pub fn dispatch(cli: Cli) -> anyhow::Result<u8> {
    use crate::commands::*;
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Inventory(args) => inventory::inventory(args),
        Command::Study(args) => study::study(args),
        Command::Audit(args) => audit::audit(args),
        Command::Results(args) => results::results(args),
        Command::Compare(args) => results::compare(args),
        Command::Report(args) => results::report(args),
        Command::Ladder(args) => ladder::ladder(args),
        Command::Endurance(args) => endurance::endurance(args),
        Command::Meta(args) => meta::meta(args),
        Command::Find(args) => find::find(args),
        Command::Targets(args) => targets::targets(args),
        Command::Net(args) => net::net(args),
        Command::S3(args) => s3::s3(args),
        Command::Io500(args) => io500::io500(args),
        Command::Fio(args) => fio::fio(args),
        Command::Ior(args) => ior::ior(args),
        Command::Mdtest(args) => mdtest::mdtest(args),
        Command::Train(args) => train::train(args),
        Command::Checkpoint(args) => checkpoint::checkpoint(args),
        Command::Kvcache(args) => kvcache::kvcache(args),
        Command::Pts(args) => pts::pts(args),
    }
}
