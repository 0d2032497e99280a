//! `iolab find`. To be written.

use anyhow::Result;
use clap::Args;

#[derive(Args, Debug)]
pub struct FindArgs {}

pub fn find(_args: FindArgs) -> Result<u8> {
    anyhow::bail!("iolab find is not implemented yet")
}
