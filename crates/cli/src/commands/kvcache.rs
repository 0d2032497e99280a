//! `iolab kvcache`: MLPerf Storage v3.0's KV cache workload (LLM inference's cache
//! offload) on a directory, with a CPU-memory tier held in this process. Arguments,
//! one suite entry (iolab_suites::kvcache), the report's renderer.

use anyhow::Result;
use clap::Args;
use iolab_backend::object::S3Options;
use iolab_core::SpecError;
use iolab_core::spec::S3Spec;
use iolab_core::spec::{KvCacheSettings, KvCacheSpec, TargetSpec};
use iolab_engine::MonotonicClock;
use iolab_suites::AiError;
use iolab_suites::kvcache::outcome::{KvOutcome, check_settings, run_all};
use iolab_suites::kvcache::{Storage, check_device_share, storage_limit};

use crate::args::OutputArgs;
use crate::commands::finish::{cleanup, conclude, start_in_workdir};
use crate::commands::kvcache_s3::{KvS3Args, client_setup, open_bucket, say_left};
use crate::runtime::Runtime;
use crate::sink::RunSink;

#[derive(Args, Debug)]
pub struct KvCacheArgs {
    #[command(flatten)]
    pub spec: KvCacheSpec,
    #[command(flatten)]
    pub target: TargetSpec,
    #[command(flatten)]
    pub s3: KvS3Args,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The S3 tier's spec and clients' options, when the tier is a bucket.
type S3Setup = Option<(S3Spec, S3Options)>;

pub fn kvcache(args: KvCacheArgs) -> Result<u8> {
    Runtime::with(|rt| kvcache_in(rt, args))
}

/// Checks on every rank before anything is written: the settings, --dir, the memory
/// the CPU tier and the buffers take, the storage tier's room.
fn check(rt: &Runtime, args: &KvCacheArgs) -> Result<(KvCacheSettings, u64, S3Setup)> {
    let settings = args.spec.resolve()?;
    let device = args.target.device.is_some();
    if device && args.s3.on() {
        return Err(SpecError::new(
            "--device",
            "the storage tier is a device or a bucket, not both: drop --device or --s3-endpoint",
        )
        .into());
    }
    let dir = args.target.dir.as_deref();
    if dir.is_none() && !device && !args.s3.on() {
        return Err(SpecError::new(
            "--dir",
            "is required: where the storage tier's files go (or --device for a block device, --s3-endpoint for a bucket)",
        )
        .into());
    }
    check_settings(&settings, rt.comm.as_ref())?;
    let ranks = iolab_engine::ranks_on_this_host(rt.comm.as_ref());
    // A bucket's room is not known, a device's is its size (taken when it is opened):
    // --storage-capacity, else unbounded.
    let capacity = settings.storage_capacity.map_or(u64::MAX, |c| c.0);
    let (limit, s3) = match dir {
        _ if args.s3.on() => {
            let s3 = client_setup(&args.s3, &args.output, settings.workers(), settings.seed)?;
            (capacity, Some(s3))
        }
        Some(dir) if !device => (storage_limit(&settings, dir, ranks)?, None),
        _ => (capacity, None),
    };
    args.output.prepare(rt)?;
    Ok((settings, limit, s3))
}

fn kvcache_in(rt: &Runtime, args: KvCacheArgs) -> Result<u8> {
    let (settings, limit, s3) = rt.agree(check(rt, &args))?;
    let bucket = match &s3 {
        Some(s3) => Some(open_bucket(rt, s3)?),
        None => None,
    };
    let started = start(rt, &args, &settings);
    let (target, workdir, sink) = match started {
        Ok(s) => s,
        Err(e) => {
            if let Some(b) = bucket {
                say_left(rt, &b.release(rt.comm.as_ref(), false));
            }
            return Err(e);
        }
    };
    if settings.autoscale.is_none() {
        // The live page's plan: the trials, each of --duration.
        let secs = settings.duration.nanos().0 as f64 / 1e9;
        crate::live::plan(
            (1..=settings.trials).map(|i| (format!("kvcache trial {i}"), Some(secs))),
        );
    }
    let quiet = args.output.quiet;
    let on_device = match target.data_target() {
        iolab_engine::DataTarget::Device { path, size } => Some((path, size)),
        _ => None,
    };
    if let Some((_, size)) = &on_device
        && let Err(e) = check_device_share(&settings, *size, rt.comm.size())
    {
        sink.discard();
        return Err(e.into());
    }
    let storage = Storage {
        device: on_device.as_ref().map(|(p, size)| (p.as_path(), *size)),
        ..Storage::files(&workdir, limit)
    };
    let outcome = match bucket {
        None => run(rt, &settings, &storage, quiet),
        Some(b) => {
            let tier = (&storage, args.target.keep);
            let (r, left) = b.run(rt.comm.as_ref(), tier, |at| run(rt, &settings, at, quiet));
            say_left(rt, &left);
            r
        }
    };
    rt.comm.barrier();
    let cleaned = cleanup(rt.comm.as_ref(), target, &[], args.target.keep);
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => return sink.end_on(rt.is_root(), e),
    };
    cleaned?;
    print_and_store(rt, &settings, &args.output, sink, &outcome)
}

/// The run started: its work directory under --dir (locked for the run's life, as every
/// command's; with the S3 tier nothing else goes there), or with the S3 tier and no
/// --dir none at all; the run's sink.
fn start(
    rt: &Runtime,
    args: &KvCacheArgs,
    settings: &KvCacheSettings,
) -> Result<(iolab_engine::PreparedTarget, std::path::PathBuf, RunSink)> {
    let spec = serde_json::json!({ "spec": args.spec, "settings": settings });
    if !(args.s3.on() && args.target.dir.is_none()) {
        return start_in_workdir(rt, &args.target, &args.output, "kvcache", spec);
    }
    let bucket = args.s3.bucket.as_deref().unwrap_or_default();
    let sink = RunSink::start(
        rt,
        args.output.recording(),
        "kvcache",
        spec,
        format!("s3 bucket {bucket}"),
        None,
    );
    let target = iolab_engine::PreparedTarget::Null;
    Ok((target, std::path::PathBuf::new(), sink))
}

/// Prints the trials' (or the autoscaler's) report on rank 0 and stores every trial as a
/// phase, the figures under the run's `kvcache` (and `kvcache_autoscale`) keys.
fn print_and_store(
    rt: &Runtime,
    settings: &KvCacheSettings,
    output: &OutputArgs,
    mut sink: RunSink,
    outcome: &KvOutcome,
) -> Result<u8> {
    let autoscaled = outcome.autoscaled.as_ref();
    if rt.is_root() && !output.quiet {
        let figures: Vec<_> = outcome.trials.iter().map(|t| t.figures.clone()).collect();
        let text = match autoscaled {
            Some(r) => iolab_report::kvcache::render_autoscale(settings, r, &figures),
            None => iolab_report::kvcache::render_kvcache(settings, &figures),
        };
        print!("{text}");
    }
    sink.annotate("kvcache", serde_json::to_value(&outcome.trials)?);
    if let Some(r) = autoscaled {
        sink.annotate("kvcache_autoscale", serde_json::to_value(r)?);
    }
    for phase in outcome.phases(settings, rt.comm.size()) {
        sink.phase(phase);
    }
    conclude(
        rt,
        sink,
        &OutputArgs {
            quiet: true,
            ..output.clone()
        },
    )
}

/// The trials, or --autoscale's steps (a line on stderr after each, unless quiet),
/// fed to the live page second by second with --serve.
fn run(
    rt: &Runtime,
    settings: &KvCacheSettings,
    storage: &Storage<'_>,
    quiet: bool,
) -> Result<KvOutcome, AiError> {
    let watch = (settings.autoscale.is_some(), settings.workers());
    let mut say = |step: &_, left| {
        if !quiet {
            eprintln!(
                "{}",
                iolab_report::kvcache::autoscale_progress(settings, step, left)
            );
        }
    };
    crate::live::kvcache::watched(rt.is_root(), watch, |live| {
        let storage = Storage { live, ..*storage };
        let clock = (&MonotonicClock as &dyn iolab_engine::Clock, rt.interrupt);
        run_all(rt.comm.as_ref(), settings, &storage, clock, &mut say)
    })
}
