//! `iolab meta`. To be written.

use anyhow::Result;
use clap::Args;

#[derive(Args, Debug)]
pub struct MetaArgs {}

pub fn meta(_args: MetaArgs) -> Result<u8> {
    anyhow::bail!("iolab meta is not implemented yet")
}
