//! `iolab checkpoint`: MLPerf Storage v2.0's LLM checkpointing (Llama 3 8B to 1T) as
//! DLIO lays it out and times it: every simulated rank's shards written with fsync,
//! the caches emptied, read back; each checkpoint's time is the slowest rank's.

use std::fmt::Write as _;

use anyhow::Result;
use clap::Args;
use iolab_core::checkpoint::LlmShape;
use iolab_core::spec::{CheckpointSpec, TargetSpec};
use iolab_core::units::ByteCount;
use iolab_suites::checkpoint::{CheckpointOutcome, Round, check_checkpoint, run_checkpoints};
use iolab_suites::train::TrainError;

use crate::args::OutputArgs;
use crate::commands::finish::{cleanup, conclude, start_in_workdir};
use crate::runtime::Runtime;

#[derive(Args, Debug)]
pub struct CheckpointArgs {
    #[command(flatten)]
    pub spec: CheckpointSpec,
    #[command(flatten)]
    pub target: TargetSpec,
    /// Print the files and bytes of every simulated rank, and do nothing else.
    #[arg(long)]
    pub plan: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

pub fn checkpoint(args: CheckpointArgs) -> Result<u8> {
    if args.plan {
        let shape = LlmShape::of(&args.spec)?;
        print!("{}", render_plan(&shape));
        return Ok(crate::exit::OK);
    }
    Runtime::with(|rt| checkpoint_in(rt, args))
}

/// "llama3_8b (tp 1 x pp 1 x dp 8, ZeRO 3), 8 ranks", and `subset` after it when the
/// job is a subset of the full one.
fn shape_words(shape: &LlmShape, subset: &str) -> String {
    format!(
        "{} (tp {} x pp {} x dp {}, ZeRO {}), {} ranks{}",
        shape.model.dlio_workload(),
        shape.tp,
        shape.pp,
        shape.dp,
        shape.zero,
        shape.ranks,
        if shape.is_subset() { subset } else { "" }
    )
}

fn render_plan(shape: &LlmShape) -> String {
    let mut out = format!(
        "iolab {} · checkpoint plan · {}; {} parameters\n",
        env!("CARGO_PKG_VERSION"),
        shape_words(shape, " (subset)"),
        shape.parameters()
    );
    for r in 0..shape.ranks {
        let files = shape.files_of_rank(r);
        let bytes: u64 = files.iter().map(|f| f.bytes).sum();
        let _ = writeln!(
            out,
            "  rank {r:>5}: {:>3} files, {:>16} bytes ({})",
            files.len(),
            bytes,
            ByteCount(bytes).human()
        );
        for f in files {
            let _ = writeln!(out, "      {}.pt  {} bytes", f.name, f.bytes);
        }
    }
    let _ = writeln!(
        out,
        "  one checkpoint: {} bytes ({})",
        shape.total_bytes(),
        ByteCount(shape.total_bytes()).human()
    );
    out
}

fn checkpoint_in(rt: &Runtime, args: CheckpointArgs) -> Result<u8> {
    let step = (|| -> Result<_> {
        let shape = check_checkpoint(rt.comm.as_ref(), &args.spec, args.target.dir.as_deref())?;
        args.output.prepare(rt)?;
        Ok(shape)
    })();
    let shape = rt.agree(step)?;
    let (target, workdir, mut sink) = start_in_workdir(
        rt,
        &args.target,
        &args.output,
        "checkpoint",
        serde_json::json!({ "spec": args.spec, "shape": shape }),
    )?;
    let outcome = run_checkpoints(rt.comm.as_ref(), &shape, &args.spec, &workdir, rt.interrupt);
    // The checkpoint folders are iolab's: removed unless --keep.
    if !args.target.keep && rt.is_root() {
        for s in 1..=args.spec.writes {
            if let Some(w) = target.workdir() {
                let _ = w.remove_tree(&workdir.join(format!("global_epoch1_step{s}")));
            }
        }
    }
    rt.comm.barrier();
    let cleaned = cleanup(rt.comm.as_ref(), target, &[], args.target.keep);
    let out = match outcome {
        Ok(o) => o,
        Err(TrainError::Io(why)) => {
            sink.finish(iolab_core::result::RunStatus::Failed);
            if rt.is_root() {
                eprintln!("iolab: the benchmark ran but failed: {why}");
            }
            return Ok(crate::exit::FAILED);
        }
        Err(TrainError::Interrupted) => {
            sink.finish(iolab_core::result::RunStatus::Interrupted);
            return Ok(crate::exit::INTERRUPTED);
        }
        Err(e) => {
            sink.discard();
            return Err(e.into());
        }
    };
    cleaned?;
    if rt.is_root() && !args.output.quiet {
        print!("{}", render(&shape, &args.spec, &out));
    }
    sink.annotate("rank_bytes", serde_json::to_value(&out.rank_bytes)?);
    // Every checkpoint's own figures, so the phases' means can be recomputed.
    let rounds = |rs: &[Round]| -> Vec<serde_json::Value> {
        rs.iter()
            .map(|r| {
                serde_json::json!({
                    "duration_s": r.duration,
                    "bytes": r.bytes,
                    "slowest_rank": r.slowest_rank,
                    "slowest_s": r.slowest,
                })
            })
            .collect()
    };
    sink.annotate(
        "checkpoints",
        serde_json::json!({ "write": rounds(&out.writes), "read": rounds(&out.reads) }),
    );
    if let Some(dropped) = out.cache_dropped {
        sink.annotate("cache_dropped", serde_json::Value::Bool(dropped));
    }
    for p in out.phases {
        sink.phase(p);
    }
    conclude(
        rt,
        sink,
        &OutputArgs {
            quiet: true,
            ..args.output.clone()
        },
    )
}

fn render(shape: &LlmShape, spec: &CheckpointSpec, o: &CheckpointOutcome) -> String {
    let gib = 1073741824.0;
    let total = shape.total_bytes() as f64 / gib;
    let mut out = format!(
        "iolab {} · checkpoint · {}\n  one checkpoint: {:.3} GiB; the largest rank writes {:.3} GiB{}\n",
        env!("CARGO_PKG_VERSION"),
        shape_words(shape, " (subset: this job's share of the full one)"),
        total,
        o.rank_bytes.iter().copied().max().unwrap_or(0) as f64 / gib,
        if spec.scale < 1.0 {
            format!(" (scaled by {})", spec.scale)
        } else {
            String::new()
        }
    );
    let table = |name: &str, rounds: &[Round], out: &mut String| {
        if rounds.is_empty() {
            return;
        }
        let _ = writeln!(
            out,
            "\n  {name:<6} {:>10} {:>10} {:>14} {:>10}",
            "duration", "GiB/s", "slowest rank", "its time"
        );
        for (i, r) in rounds.iter().enumerate() {
            let _ = writeln!(
                out,
                "  {:<6} {:>9.3}s {:>10.3} {:>14} {:>9.3}s",
                i + 1,
                r.duration,
                if r.duration > 0.0 {
                    r.bytes as f64 / gib / r.duration
                } else {
                    0.0
                },
                r.slowest_rank,
                r.slowest
            );
        }
        let n = rounds.len() as f64;
        let d = rounds.iter().map(|r| r.duration).sum::<f64>() / n;
        let tp = rounds
            .iter()
            .map(|r| {
                if r.duration > 0.0 {
                    r.bytes as f64 / gib / r.duration
                } else {
                    0.0
                }
            })
            .sum::<f64>()
            / n;
        let _ = writeln!(
            out,
            "  {name} mean: {d:.3} s, {tp:.3} GiB/s (DLIO's figure: checkpoint size over the slowest rank's time)"
        );
    };
    table("write", &o.writes, &mut out);
    if o.cache_dropped == Some(false) {
        out.push_str("\n  warning: the page cache could not be emptied before the reads (root needed): they may come from memory\n");
    }
    table("read", &o.reads, &mut out);
    out
}
