//! `iolab train datagen`: a dataset in DLIO's layout and file formats, written by every
//! rank's share of the files, stored as one write phase.

use anyhow::Result;
use iolab_core::units::ByteCount;
use iolab_suites::train::datagen::check_space;
use iolab_suites::train::generate;

use super::{DatagenArgs, quiet, spec_json, stored_as};
use crate::commands::finish::conclude;
use crate::runtime::Runtime;
use crate::sink::RunSink;

pub(super) fn datagen_in(rt: &Runtime, args: DatagenArgs) -> Result<u8> {
    let prepared = args
        .spec
        .resolve()
        .map_err(anyhow::Error::from)
        .and_then(|cfg| Ok((cfg, args.spec.data_dir()?.to_path_buf())))
        .and_then(|(cfg, dir)| {
            // A dataset that cannot fit is refused before anything is written.
            if rt.is_root() {
                check_space(&dir, &cfg)?;
            }
            Ok((cfg, dir))
        })
        .and_then(|x| {
            args.output.prepare(rt)?;
            Ok(x)
        });
    let (cfg, dir) = rt.agree(prepared)?;
    let mut sink = RunSink::start(
        rt,
        args.output.recording(),
        "train-datagen",
        spec_json(&args.spec, &cfg),
        dir.display().to_string(),
        dir.parent(),
    );
    let out = match generate(rt.comm.as_ref(), &dir, &cfg, cfg.accelerators, rt.interrupt) {
        Ok(o) => o,
        Err(e) => return sink.end_on(rt.is_root(), e),
    };
    let mut extra = std::collections::BTreeMap::new();
    extra.insert("files".into(), out.files as f64);
    extra.insert(
        "files_per_sec".into(),
        out.files as f64 / out.elapsed.as_secs_f64().max(1e-9),
    );
    let mut phase = out.phase.clone();
    phase
        .params
        .insert("format".into(), cfg.format.extension().to_string());
    phase.extra.extend(extra);
    if rt.is_root() && !args.output.quiet {
        println!(
            "iolab {} · train datagen: {} {} files, {} in {} ({}, {:.1} files/s) in {}",
            env!("CARGO_PKG_VERSION"),
            out.files,
            cfg.format.extension(),
            ByteCount(out.bytes).human(),
            out.elapsed.human(),
            iolab_core::bandwidth(ByteCount(out.bytes), out.elapsed).human(),
            out.files as f64 / out.elapsed.as_secs_f64().max(1e-9),
            dir.display()
        );
    }
    sink.phase(phase);
    stored_as(rt, &sink, &args.output);
    conclude(rt, sink, &quiet(&args.output))
}
