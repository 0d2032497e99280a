//! `iolab targets`. To be written.

use anyhow::Result;
use clap::Args;

#[derive(Args, Debug)]
pub struct TargetsArgs {}

pub fn targets(_args: TargetsArgs) -> Result<u8> {
    anyhow::bail!("iolab targets is not implemented yet")
}
