//! `iolab train datagen`: a dataset in DLIO's layout and file formats, written by every
//! rank's share of the files with its writer threads (sized as v3.0 DLIO sizes a
//! write_threads of 1), stored as one write phase.

use std::path::Path;

use anyhow::Result;
use iolab_report::train::{DatagenReport, render_train_datagen};
use iolab_suites::train::datagen::check_space;
use iolab_suites::train::generate;
use iolab_suites::train::writers::sized_writers;

use super::{DatagenArgs, quiet, spec_json, stored_as};
use crate::commands::finish::conclude;
use crate::runtime::Runtime;
use crate::sink::RunSink;

pub(super) fn datagen_in(rt: &Runtime, args: DatagenArgs) -> Result<u8> {
    // The writer threads sized (a cap DLIO could not read refused) before anything is
    // checked or written.
    let cfg = rt.agree(args.spec.resolve())?;
    let cfg = sized_writers(rt.comm.as_ref(), &cfg)?;
    let prepared = args
        .spec
        .data_dir()
        .map(Path::to_path_buf)
        .map_err(anyhow::Error::from)
        .and_then(|dir| {
            // A dataset that cannot fit is refused before anything is written.
            if rt.is_root() {
                check_space(&dir, &cfg)?;
            }
            args.output.prepare(rt)?;
            Ok(dir)
        });
    let dir = rt.agree(prepared)?;
    let mut sink = RunSink::start(
        rt,
        args.output.recording(),
        "train-datagen",
        spec_json(&args.spec, &cfg),
        dir.display().to_string(),
        dir.parent(),
    );
    let out = match generate(rt.comm.as_ref(), &dir, &cfg, rt.interrupt) {
        Ok(o) => o,
        Err(e) => return sink.end_on(rt.is_root(), e),
    };
    if rt.is_root() && !args.output.quiet {
        print!(
            "{}",
            render_train_datagen(&DatagenReport {
                cfg: &cfg,
                files: out.files,
                bytes: out.bytes,
                elapsed: out.elapsed,
                workers: out.phase.workers,
                dir: &dir.display().to_string(),
            })
        );
    }
    sink.phase(out.phase);
    stored_as(rt, &sink, &args.output);
    conclude(rt, sink, &quiet(&args.output))
}
