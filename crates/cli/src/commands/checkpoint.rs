//! `iolab checkpoint`: MLPerf Storage v2.0's LLM checkpointing (Llama 3 8B to 1T) as
//! DLIO lays it out and times it: every simulated rank's shards written with fsync,
//! the caches emptied, read back; each checkpoint's time is the slowest rank's.

use anyhow::Result;
use clap::Args;
use iolab_core::checkpoint::LlmShape;
use iolab_core::spec::{CheckpointSpec, TargetSpec};
use iolab_core::train::{Check, Verdict};
use iolab_report::checkpoint::{
    render_checkpoint, render_checkpoint_plan, render_checkpoint_rules,
};
use iolab_suites::checkpoint::rules::{closed_rules, judge, worst_node};
use iolab_suites::checkpoint::{CheckpointOutcome, Round, check_checkpoint, run_checkpoints};

use crate::args::OutputArgs;
use crate::commands::finish::{cleanup, conclude, start_in_workdir};
use crate::commands::train::node_memory;
use crate::runtime::Runtime;
use crate::sink::RunSink;

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
        print!("{}", render_checkpoint_plan(&shape));
        return Ok(crate::exit::OK);
    }
    Runtime::with(|rt| checkpoint_in(rt, args))
}

fn checkpoint_in(rt: &Runtime, args: CheckpointArgs) -> Result<u8> {
    let (shape, node) = agreed_shape(rt, &args)?;
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
        Err(e) => return sink.end_on(rt.is_root(), e),
    };
    cleaned?;
    let (checks, verdict) = judge(&shape, node, &out);
    if rt.is_root() && !args.output.quiet {
        print!("{}", render_checkpoint(&shape, args.spec.scale, &out));
        print!(
            "{}",
            render_checkpoint_rules(&checks, &verdict, out.read_gap_s)
        );
    }
    store(&mut sink, &checks, &verdict, out)?;
    conclude(
        rt,
        sink,
        &OutputArgs {
            quiet: true,
            ..args.output.clone()
        },
    )
}

/// The job's shape and its worst node (bytes, memory), once every rank agrees that the
/// checks, `--closed`'s rules and the output pass: nothing is written before.
fn agreed_shape(rt: &Runtime, args: &CheckpointArgs) -> Result<(LlmShape, (u64, u64))> {
    let step = check_checkpoint(rt.comm.as_ref(), &args.spec, args.target.dir.as_deref());
    let shape = rt.agree(step.map_err(anyhow::Error::from))?;
    let node = worst_node(rt.comm.as_ref(), &shape, &args.spec, node_memory());
    let step = (|| -> Result<_> {
        if args.spec.closed {
            closed_rules(&shape, &args.spec, node)?;
        }
        args.output.prepare(rt)?;
        Ok(())
    })();
    rt.agree(step)?;
    Ok((shape, node))
}

/// Keeps the rules' verdict, the read gap, each rank's bytes, every checkpoint's own
/// figures (so the phases' means can be recomputed), the flush step and the phases.
fn store(
    sink: &mut RunSink,
    checks: &[Check; 2],
    verdict: &Verdict,
    out: CheckpointOutcome,
) -> Result<()> {
    sink.annotate("validity", serde_json::to_value(checks)?);
    sink.annotate("verdict", serde_json::to_value(verdict)?);
    sink.annotate("read_gap_s", serde_json::json!(out.read_gap_s));
    sink.annotate("rank_bytes", serde_json::to_value(&out.rank_bytes)?);
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
    Ok(())
}
