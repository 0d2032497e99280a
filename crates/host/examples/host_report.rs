//! Prints this machine's inventory and tuning audit as JSON, for a look by hand until
//! the CLI has `iolab inventory` and `iolab audit`:
//! `cargo run -p iolab-host --example host_report -- [DIR] [PROFILE]`.

use std::path::PathBuf;

use iolab_host::{Profile, SysRoot, audit, inventory};

fn main() {
    let mut args = std::env::args().skip(1);
    let target = PathBuf::from(args.next().unwrap_or_else(|| ".".to_string()));
    let profile = match args.next().map(|p| p.parse::<Profile>()).transpose() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let root = SysRoot::live();
    let inventory = inventory::collect(&root, Some(&target));
    let findings = audit::run(&root, &inventory, profile);
    let report = serde_json::json!({ "inventory": inventory, "audit": findings });
    println!(
        "{}",
        serde_json::to_string_pretty(&report).expect("JSON of plain data")
    );
}
