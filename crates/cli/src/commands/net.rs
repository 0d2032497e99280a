//! `iolab net`. To be written.

use anyhow::Result;
use clap::Args;

#[derive(Args, Debug)]
pub struct NetArgs {}

pub fn net(_args: NetArgs) -> Result<u8> {
    anyhow::bail!("iolab net is not implemented yet")
}
