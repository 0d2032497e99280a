//! One module per subcommand; [`dispatch`] runs the one asked for and returns the exit
//! code.

/// The most ranks `study plan` and `io500 plan` take for --ranks: more than any machine
/// runs, and few enough that the plans' figures stay inside u64.
pub const MAX_PLAN_RANKS: u32 = 1 << 20;

pub mod audit;
pub mod checkpoint;
pub mod endurance;
pub mod find;
mod finish;
pub mod fio;
pub mod inventory;
pub mod io500;
pub mod ior;
pub mod ladder;
pub mod mdtest;
pub mod meta;
pub mod net;
pub mod pts;
pub mod results;
pub mod run;
pub mod s3;
pub mod study;
pub mod targets;
pub mod train;

use anyhow::Result;

use crate::cli::{Cli, Command};

pub fn dispatch(cli: Cli) -> Result<u8> {
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
        Command::Pts(args) => pts::pts(args),
    }
}
