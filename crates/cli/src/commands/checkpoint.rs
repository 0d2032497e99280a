//! `iolab checkpoint`: MLPerf Storage v2.0's LLM checkpointing (Llama 3 8B to 1T) as
//! DLIO lays it out and times it: every simulated rank's shards written with fsync,
//! the caches emptied, read back; each checkpoint's time is the slowest rank's.

use std::fmt::Write as _;

use anyhow::Result;
use clap::Args;
use iolab_comm::CommExt;
use iolab_core::SpecError;
use iolab_core::checkpoint::LlmShape;
use iolab_core::spec::{CheckpointSpec, TargetSpec};
use iolab_core::train::{
    Check, CheckpointMemory, V3_READ_WITHIN_S, Verdict, v3_checkpoint_memory_rule, v3_subset_rule,
};
use iolab_core::units::ByteCount;
use iolab_suites::checkpoint::{
    CheckpointOutcome, Round, check_checkpoint, my_ranks, run_checkpoints,
};
use std::collections::BTreeMap;

use crate::args::OutputArgs;
use crate::commands::finish::{cleanup, conclude, start_in_workdir};
use crate::commands::train::node_memory;
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

/// The node v3.0's memory rule is worst on (the least checkpoint bytes for its
/// memory): the bytes its ranks write before the reads, and its memory. Collective.
fn worst_node(rt: &Runtime, shape: &LlmShape, spec: &CheckpointSpec) -> (u64, u64) {
    let mine: u64 = my_ranks(shape, rt.comm.as_ref())
        .map(|r| shape.files_of_rank(r).iter().map(|f| f.bytes).sum::<u64>())
        .sum();
    let bytes = mine.saturating_mul(u64::from(spec.writes));
    let memory = node_memory();
    let all: Vec<(String, u64, u64)> = rt
        .comm
        .all_gather(&(rt.comm.host().to_string(), bytes, memory))
        .unwrap_or_default();
    let mut hosts: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (h, b, m) in all {
        let e = hosts.entry(h).or_default();
        e.0 = e.0.saturating_add(b);
        e.1 = m;
    }
    let ratio = |(b, m): &(u64, u64)| *b as f64 / (*m).max(1) as f64;
    hosts
        .into_values()
        .min_by(|a, b| ratio(a).total_cmp(&ratio(b)))
        .unwrap_or((bytes, memory))
}

/// `--closed`: what v3.0's checkpointing rules forbid, refused before anything is
/// written (one line naming the option).
fn closed_rules(
    shape: &LlmShape,
    spec: &CheckpointSpec,
    (bytes, memory): (u64, u64),
) -> Result<(), SpecError> {
    let subset = v3_subset_rule(shape.model.dlio_workload(), shape.is_subset(), shape.ranks);
    if !subset.ok {
        return Err(SpecError::new(
            "--ranks",
            format!("{} (--closed)", subset.detail),
        ));
    }
    if bytes > 3 * memory {
        return Ok(());
    }
    let gib = |b: u64| b as f64 / 1073741824.0;
    let why = format!(
        "the checkpoints ({:.2} GiB per node) are not over 3 x the node's {:.2} GiB of memory, so v3.0 (--closed) wants",
        gib(bytes),
        gib(memory)
    );
    if spec.keep_cache {
        return Err(SpecError::new(
            "--keep-cache",
            format!("{why} the cache-flush step before the read: drop --keep-cache"),
        ));
    }
    if spec.time_between.nanos().0 as f64 / 1e9 > V3_READ_WITHIN_S {
        return Err(SpecError::new(
            "--time-between",
            format!(
                "{why} the read to start within {V3_READ_WITHIN_S:.0} s of the write: at most 30s"
            ),
        ));
    }
    Ok(())
}

fn checkpoint_in(rt: &Runtime, args: CheckpointArgs) -> Result<u8> {
    let step = check_checkpoint(rt.comm.as_ref(), &args.spec, args.target.dir.as_deref());
    let shape = rt.agree(step.map_err(anyhow::Error::from))?;
    let node = worst_node(rt, &shape, &args.spec);
    let step = (|| -> Result<_> {
        if args.spec.closed {
            closed_rules(&shape, &args.spec, node)?;
        }
        args.output.prepare(rt)?;
        Ok(())
    })();
    rt.agree(step)?;
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
        print!("{}", render(&shape, &args.spec, &out));
        print!("{}", render_rules(&checks, &verdict, out.read_gap_s));
    }
    sink.annotate("validity", serde_json::to_value(checks)?);
    sink.annotate("verdict", serde_json::to_value(&verdict)?);
    sink.annotate("read_gap_s", serde_json::json!(out.read_gap_s));
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

/// v3.0's checkpointing rules on a run: the memory rule on its worst node (bytes,
/// memory), the subset rule, and their verdict.
fn judge(shape: &LlmShape, node: (u64, u64), out: &CheckpointOutcome) -> ([Check; 2], Verdict) {
    let checks = [
        v3_checkpoint_memory_rule(&CheckpointMemory {
            node_bytes: node.0,
            node_memory: node.1,
            flushed: out.cache_dropped == Some(true),
            read_gap_s: out.read_gap_s,
        }),
        v3_subset_rule(shape.model.dlio_workload(), shape.is_subset(), shape.ranks),
    ];
    let verdict = Verdict::of(&checks);
    (checks, verdict)
}

/// MLPerf Storage v3.0's checkpointing rules on the run, and the gap they time.
fn render_rules(checks: &[Check], verdict: &Verdict, gap: Option<f64>) -> String {
    let mut out = String::new();
    if let Some(g) = gap {
        let _ = writeln!(
            out,
            "\n  the first read started {g:.2} s after the last write ended (flush step and --time-between included)"
        );
    }
    out.push_str("\n  MLPerf Storage v3.0's checkpointing rules:\n");
    for c in checks {
        let _ = writeln!(
            out,
            "    {:<5} {:<28} {}",
            if c.ok { "ok" } else { "FAIL" },
            c.rule,
            c.detail
        );
    }
    let _ = writeln!(
        out,
        "\n  verdict: {}",
        if verdict.valid {
            "VALID under v3.0's checkpointing rules".to_string()
        } else {
            format!(
                "NOT VALID under v3.0's checkpointing rules (failed: {})",
                verdict.failed.join("; ")
            )
        }
    );
    out
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
        out.push_str("\n  warning: the written files could not be flushed from the page cache before the reads: they may come from memory\n");
    }
    table("read", &o.reads, &mut out);
    out
}
