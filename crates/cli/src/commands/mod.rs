//! One module per subcommand; [`dispatch`] runs the one asked for and returns the exit
//! code.

mod finish;
mod run;

use anyhow::Result;

use crate::cli::{Cli, Command};

pub fn dispatch(cli: Cli) -> Result<u8> {
    match cli.command {
        Command::Run(args) => run::run(args),
    }
}
