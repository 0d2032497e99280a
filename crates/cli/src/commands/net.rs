//! `iolab net`: the network between ranks alone. Ranks stream to each other over TCP
//! (pairs i and i+size/2, or a ring), each direction measured on its own, and rank 0
//! prints every pair's throughput with the minimum, maximum, average and aggregate, so a
//! network limit can be told apart from a storage one. One process alone streams
//! between two of its own threads over loopback (and says so).

use std::fmt::Write as _;

use anyhow::{Context, Result};
use clap::Args;
use iolab_core::result::{PhaseResult, RunStatus};
use iolab_core::spec::NetSpec;
use iolab_core::units::BytesPerSec;
use iolab_engine::{Env, MonotonicClock};
use iolab_suites::targets::net::{NetPhase, run_net};

use crate::args::OutputArgs;
use crate::commands::finish::conclude_after_report;
use crate::progress::ProgressLine;
use crate::runtime::Runtime;
use crate::sink::RunSink;

#[derive(Args, Debug)]
pub struct NetArgs {
    #[command(flatten)]
    pub spec: NetSpec,

    #[command(flatten)]
    pub output: OutputArgs,
}

pub fn net(args: NetArgs) -> Result<u8> {
    Runtime::with(|rt| net_in(rt, args))
}

fn net_in(rt: &Runtime, args: NetArgs) -> Result<u8> {
    rt.agree(
        args.spec
            .validate()
            .map_err(anyhow::Error::from)
            .and_then(|()| args.output.prepare(rt)),
    )?;
    let comm = rt.comm.as_ref();
    let mut sink = RunSink::start(
        rt,
        args.output.recording(),
        "net",
        serde_json::to_value(&args.spec).context("recording the spec")?,
        format!("{} ranks", comm.size()),
        None,
    );
    let progress = ProgressLine::new(args.output.progress, args.output.quiet);
    let show = |p: &iolab_engine::Progress<'_>| progress.show(p);
    let env = Env::new(comm, rt.interrupt).with_progress(&show);
    let outcome = run_net(&env, &MonotonicClock, &args.spec);
    progress.finish();
    let phases = match outcome {
        Ok(p) => p,
        Err(e) => {
            sink.finish(RunStatus::Failed);
            return Err(e.into());
        }
    };
    if rt.is_root() && !args.output.quiet {
        print!("{}", render(&args.spec, &phases));
    }
    for p in phases {
        sink.phase(p.summary);
        sink.phases(p.pairs);
    }
    conclude_after_report(rt, sink, &args.output)
}

fn human(v: f64) -> String {
    BytesPerSec(v).human()
}

fn render(spec: &NetSpec, phases: &[NetPhase]) -> String {
    let mut out = format!("iolab {} · net\n", env!("CARGO_PKG_VERSION"));
    let amount = match spec.runtime {
        Some(r) => format!("for {r}"),
        None => format!("{} per stream", spec.size),
    };
    for p in phases {
        let _ = writeln!(
            out,
            "\n{}  ({} stream{} per pair, {} blocks, {amount}; {})",
            p.summary.name,
            spec.streams,
            if spec.streams == 1 { "" } else { "s" },
            spec.block_size,
            p.summary.elapsed.human()
        );
        let _ = writeln!(
            out,
            "  {:<12} {:<28} {:>12} {:>12}",
            "pair", "hosts", "KiB/s", "human"
        );
        for pair in &p.pairs {
            out.push_str(&pair_line(pair));
        }
        if let Some(a) = &p.analysis {
            let _ = writeln!(
                out,
                "  min {} ({})  max {} ({})  avg {}  aggregate {}",
                human(a.min.throughput),
                a.min.id,
                human(a.max.throughput),
                a.max.id,
                human(a.average),
                human(a.aggregate)
            );
        }
        for w in &p.summary.warnings {
            let _ = writeln!(out, "warning: {w}");
        }
    }
    out
}

fn pair_line(p: &PhaseResult) -> String {
    let get = |k: &str| p.params.get(k).cloned().unwrap_or_default();
    let bw = p.extra.get("bytes_per_sec").copied().unwrap_or(0.0);
    let mut line = format!(
        "  {:<12} {:<28} {:>12.0} {:>12}",
        format!("{}->{}", get("sender"), get("receiver")),
        format!("{} -> {}", get("sender_host"), get("receiver_host")),
        bw / 1024.0,
        human(bw)
    );
    if p.extra.get("slow") == Some(&1.0) {
        line.push_str("  SLOW");
    }
    if p.error_count > 0 {
        let first = p.errors.first().map(|e| e.message.as_str()).unwrap_or("");
        let _ = write!(line, "  {} errors; first: {first}", p.error_count);
    }
    line.push('\n');
    line
}
