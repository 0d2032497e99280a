//! An S3 workload from start to end on every rank: [`run_s3`] checks the options agree
//! and fit in memory, makes the run's token, checks the bucket before any load (rank 0:
//! it must exist, or be made with --create-bucket, and the run's prefix must be empty),
//! writes the run's marker, prepares objects when a phase needs some and none are there
//! (untimed, as warp's prepare), and runs each phase of --ops through the shared phase
//! runner; [`finish_s3`](super::finish_s3) (cleanup.rs) then removes every object the
//! run wrote, the marker, and the bucket when the run made it. Nothing is ever deleted by
//! listing: only keys iolab named itself.

use std::collections::BTreeMap;
use std::sync::Mutex;

use iolab_backend::object::{ObjectBackend, ObjectError, ObjectOp, ObjectRequest};
use iolab_comm::{Comm, CommExt};
use iolab_core::result::{PhaseKind, PhaseResult};
use iolab_core::spec::{S3Op, S3Spec};
use iolab_core::units::ByteCount;

use crate::assemble::{PhaseMeta, assemble};
use crate::clock::Clock;
use crate::data::check_ranks_agree;
use crate::error::EngineError;
use crate::memory::{Available, ranks_on_this_host, refuse_over};
use crate::object::plan::{ObjectPlan, Pool};
use crate::object::window::{self, KINDS, OpLog};
use crate::object::worker::{ObjectFactory, PhaseSetup, run_worker};
use crate::phase::{Env, run_phase};
use crate::target::{agree, run_token};

/// How an S3 workload fits into a larger run.
#[derive(Clone, Debug, Default)]
pub struct ObjectOptions {
    /// Phases are named `<prefix>-<op>-<size>` (default `<op>-<size>`).
    pub name_prefix: Option<String>,
    pub repetition: u32,
    /// Extra coordinates (a study's sweep values).
    pub params: BTreeMap<String, String>,
    /// Memory one worker's backend holds (its buffers), for the pre-flight.
    pub backend_bytes: u64,
    /// Where the requests go, for the phases' settings ("http://127.0.0.1:8333").
    pub endpoints: Vec<String>,
}

/// What a run left and what it made, for [`finish_s3`](super::finish_s3).
#[derive(Debug)]
pub struct ObjectOutcome {
    pub phases: Vec<PhaseResult>,
    pub plan: ObjectPlan,
    /// This rank's workers' objects at the end.
    pub pools: Vec<Pool>,
    /// Rank 0 made the bucket (so it removes it once empty).
    pub made_bucket: bool,
    /// The phases ended early (an error, or Ctrl-C).
    pub stopped: bool,
}

/// This rank's plan and the bucket check. Collective.
pub fn start_s3(
    comm: &dyn Comm,
    spec: &S3Spec,
    factory: ObjectFactory<'_>,
    opts: &ObjectOptions,
) -> Result<(ObjectPlan, bool), EngineError> {
    spec.validate()?;
    check_ranks_agree(comm, "the workload", spec)?;
    let per_worker = opts.backend_bytes + OpLog::BYTES;
    let ranks_here = ranks_on_this_host(comm);
    agree(
        comm,
        refuse_over(
            per_worker * u64::from(spec.concurrency) * u64::from(ranks_here),
            if spec.part_concurrency > 1 {
                "--part-concurrency"
            } else {
                "--concurrency"
            },
            if spec.part_concurrency > 1 {
                format!(
                    "--concurrency {} x --part-concurrency {}: {} per worker (payload, request log, receive buffers of {} connections per endpoint)",
                    spec.concurrency,
                    spec.part_concurrency,
                    ByteCount(per_worker).human(),
                    spec.part_concurrency + 1
                )
            } else {
                format!(
                    "--concurrency {} x {} per connection (send and receive buffers, request log)",
                    spec.concurrency,
                    ByteCount(per_worker).human()
                )
            },
            ranks_here,
            &Available::read(std::path::Path::new("/")),
            comm.host(),
        ),
    )?;
    let token = format!(
        "{:012x}",
        iolab_core::rng::mix(&[u64::from_le_bytes(*b"iolab-s3"), hash_str(&run_token(comm))])
            & 0xffff_ffff_ffff
    );
    let token: String = comm
        .broadcast(0, &token)
        .map_err(|e| EngineError::Setup(e.to_string()))?;
    let plan = ObjectPlan::new(spec, comm.rank(), comm.size(), &token);
    let made = if comm.rank() == 0 {
        check_bucket(&plan, factory)
    } else {
        Ok(false)
    };
    let made = agree(comm, made)?;
    Ok((plan, made))
}

fn hash_str(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Before any load: the bucket exists (or is made with --create-bucket), the keys may
/// list and write in it, and the run's prefix holds nothing. Returns whether the bucket
/// was made.
fn check_bucket(plan: &ObjectPlan, factory: ObjectFactory<'_>) -> Result<bool, EngineError> {
    let spec = &plan.spec;
    let mut b = factory(0).map_err(setup)?;
    let list = |b: &mut Box<dyn ObjectBackend>| {
        b.run(ObjectRequest {
            op: ObjectOp::List {
                prefix: &plan.root,
                token: None,
                max_keys: 1,
            },
            key: "",
            tag: 0,
        })
    };
    let mut made = false;
    let mut c = list(&mut b);
    if let Some(e) = &c.error
        && e.status() == Some(404)
    {
        if !spec.create_bucket {
            return Err(EngineError::Setup(missing_bucket(&spec.bucket, e)));
        }
        let r = b.run(ObjectRequest {
            op: ObjectOp::CreateBucket,
            key: "",
            tag: 0,
        });
        if let Some(e) = r.error {
            return Err(EngineError::Setup(format!(
                "cannot make bucket '{}': {e}",
                spec.bucket
            )));
        }
        made = true;
        c = list(&mut b);
    }
    if let Some(e) = c.error {
        return Err(EngineError::Setup(format!(
            "cannot use bucket '{}': {e}",
            spec.bucket
        )));
    }
    if c.items > 0 {
        return Err(EngineError::Setup(format!(
            "s3://{}/{} already holds objects; iolab writes only under a prefix of its own: choose another --prefix",
            spec.bucket, plan.root
        )));
    }
    let marker = plan.marker();
    let w = b.run(ObjectRequest {
        op: ObjectOp::Put {
            size: 0,
            data_offset: 0,
        },
        key: &marker,
        tag: 0,
    });
    if let Some(e) = w.error {
        if made {
            let _ = b.run(ObjectRequest {
                op: ObjectOp::DeleteBucket,
                key: "",
                tag: 0,
            });
        }
        return Err(EngineError::Setup(format!(
            "cannot write in bucket '{}': {e}",
            spec.bucket
        )));
    }
    Ok(made)
}

/// The one line for a bucket that is not there. S3's NoSuchBucket comes with the
/// backend's hint of what to try, which ends at `--create-bucket`: it is said once,
/// finished with what that option does; a bare 404 gets the whole hint here.
pub(super) fn missing_bucket(bucket: &str, e: &ObjectError) -> String {
    let what_to_try = if e.code() == Some("NoSuchBucket") {
        ""
    } else {
        "; create it, name another with --bucket, or pass --create-bucket"
    };
    format!(
        "bucket '{bucket}' does not exist: {e}{what_to_try} to have iolab make it (and remove it at the end)"
    )
}

fn setup(e: ObjectError) -> EngineError {
    EngineError::Setup(e.to_string())
}

/// Runs the phases of `spec` on every rank. The run's objects stay until
/// [`finish_s3`](super::finish_s3), which must follow, also after an error.
pub fn run_s3<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    plan: &ObjectPlan,
    made_bucket: bool,
    factory: ObjectFactory<'_>,
    opts: &ObjectOptions,
) -> ObjectOutcome {
    let mut out = ObjectOutcome {
        phases: Vec::new(),
        plan: plan.clone(),
        pools: Vec::new(),
        made_bucket,
        stopped: false,
    };
    let pools: Vec<Mutex<Pool>> = (0..plan.concurrency)
        .map(|_| Mutex::new(Pool::default()))
        .collect();
    let (ran, result) = phases(env, clock, plan, factory, opts, &pools);
    out.phases = ran;
    out.stopped = result.is_err()
        || out
            .phases
            .iter()
            .any(|p| p.error_count > 0 || p.interrupted);
    out.pools = pools
        .into_iter()
        .map(|p| p.into_inner().unwrap_or_default())
        .collect();
    if let Err(e) = result {
        out.phases.retain(|_| true);
        out.stopped = true;
        // The error is the phase's: keep it as a warning of the last phase, if any.
        if let Some(p) = out.phases.last_mut() {
            p.warnings.push(e.to_string());
        }
    }
    out
}

/// The phases run (those before an error too), and the error that stopped them.
fn phases<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    plan: &ObjectPlan,
    factory: ObjectFactory<'_>,
    opts: &ObjectOptions,
    pools: &[Mutex<Pool>],
) -> (Vec<PhaseResult>, Result<(), EngineError>) {
    let mut out = Vec::new();
    let result = (|| -> Result<(), EngineError> {
        let comm = env.comm;
        let host = comm.host().to_string();
        for &op in &plan.spec.ops {
            let live: u64 = pools
                .iter()
                .map(|p| p.lock().expect("pool").live.len() as u64)
                .sum();
            if op.needs_objects() && comm.all_sum(live) == 0 {
                let prepare = prepare_objects(env, clock, plan, factory, pools, &host)?;
                if prepare.errors > 0 || prepare.interrupted {
                    let first = prepare
                        .outcomes
                        .iter()
                        .flat_map(|o| o.measure.errors.first())
                        .next()
                        .map(|e| e.message.clone())
                        .unwrap_or_else(|| "interrupted".into());
                    return Err(EngineError::Setup(format!(
                        "preparing {} objects for {} failed: {first}",
                        plan.spec.objects,
                        op.name()
                    )));
                }
            }
            let name = match &opts.name_prefix {
                Some(p) => format!("{p}-{}-{}", op.name(), size_name(plan)),
                None => format!("{}-{}", op.name(), size_name(plan)),
            };
            let deadline = plan.spec.duration.map(|d| d.nanos());
            let logs: Vec<Mutex<OpLog>> = (0..plan.concurrency)
                .map(|_| Mutex::new(OpLog::default()))
                .collect();
            let run = run_phase(
                env,
                clock,
                &name,
                plan.concurrency as usize,
                false,
                |i, control| {
                    let setup = PhaseSetup {
                        plan,
                        op,
                        control,
                        clock,
                        host: &host,
                        factory,
                        pools,
                        logs: &logs,
                        deadline,
                    };
                    run_worker(&setup, i)
                },
            )?;
            let mut phase = assemble(phase_meta(plan, op, &name, opts), &run);
            let logs: Vec<OpLog> = logs
                .into_iter()
                .map(|l| l.into_inner().unwrap_or_default())
                .collect();
            window_figures(comm, &logs, &mut phase);
            let stop = run.interrupted || run.errors > 0;
            out.push(phase);
            if stop {
                break;
            }
        }
        Ok(())
    })();
    (out, result)
}

/// One untimed pass, `prepare`: every worker uploads (puts) its share, without a
/// deadline.
fn prepare_objects<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    plan: &ObjectPlan,
    factory: ObjectFactory<'_>,
    pools: &[Mutex<Pool>],
    host: &str,
) -> Result<crate::phase::PhaseRun, EngineError> {
    let (op, deadline, name) = (S3Op::Put, None, "prepare");
    let logs: Vec<Mutex<OpLog>> = (0..plan.concurrency)
        .map(|_| Mutex::new(OpLog::default()))
        .collect();
    run_phase(
        env,
        clock,
        name,
        plan.concurrency as usize,
        false,
        |i, control| {
            run_worker(
                &PhaseSetup {
                    plan,
                    op,
                    control,
                    clock,
                    host,
                    factory,
                    pools,
                    logs: &logs,
                    deadline,
                },
                i,
            )
        },
    )
}

fn size_name(plan: &ObjectPlan) -> String {
    match plan.sizes {
        iolab_core::spec::ObjectSizes::Fixed(s) => ByteCount(s).to_string(),
        iolab_core::spec::ObjectSizes::Log2 { max, .. } => format!("rand{}", ByteCount(max)),
    }
}

/// warp's measurement window over every worker of every rank, as `window_*` figures.
/// Collective.
fn window_figures(comm: &dyn Comm, logs: &[OpLog], phase: &mut PhaseResult) {
    let local = window::edges(logs);
    // A rank whose workers did not all work has no window; then no rank has one.
    let none = comm.all_max(u64::from(local.is_none()));
    let (s, e) = local.unwrap_or((0, u64::MAX));
    let start = comm.all_max(s);
    let end = u64::MAX - comm.all_max(u64::MAX - e);
    if none > 0 || end <= start {
        return;
    }
    let w = window::within(logs, start, end);
    let inexact = comm.all_max(u64::from(!w.exact));
    let secs = (end - start) as f64 / 1e9;
    phase.extra.insert("window_start_ns".into(), start as f64);
    phase.extra.insert("window_end_ns".into(), end as f64);
    phase
        .extra
        .insert("window_exact".into(), (inexact == 0) as u64 as f64);
    for (k, kind) in KINDS.iter().enumerate() {
        let ops = comm.all_sum(w.ops[k].round() as u64);
        let bytes = comm.all_sum(w.bytes[k].round() as u64);
        if ops == 0 && bytes == 0 {
            continue;
        }
        let name = kind.name();
        phase.extra.insert(format!("window_{name}_ops"), ops as f64);
        phase
            .extra
            .insert(format!("window_{name}_bytes"), bytes as f64);
        phase
            .extra
            .insert(format!("window_{name}_ops_per_sec"), ops as f64 / secs);
        phase
            .extra
            .insert(format!("window_{name}_bytes_per_sec"), bytes as f64 / secs);
    }
    if inexact > 0 {
        phase.warnings.push(
            "warp's measurement window is approximate: a worker ran more than 4096 requests before the last one completed its first".into(),
        );
    }
    if secs < 1.0 {
        phase.warnings.push(format!(
            "warp's measurement window is {:.3} s long: too short for a steady figure (give --duration)",
            secs
        ));
    }
}

fn phase_meta(plan: &ObjectPlan, op: S3Op, name: &str, opts: &ObjectOptions) -> PhaseMeta {
    let spec = &plan.spec;
    let mut p = BTreeMap::new();
    p.insert("op".into(), op.name().into());
    p.insert("object_size".into(), spec.size_label());
    p.insert("objects".into(), spec.objects.to_string());
    p.insert("concurrency".into(), spec.concurrency.to_string());
    p.insert("ranks".into(), plan.ranks.to_string());
    p.insert("bucket".into(), spec.bucket.clone());
    p.insert("prefix".into(), plan.root.clone());
    if !opts.endpoints.is_empty() {
        p.insert("endpoints".into(), opts.endpoints.join(","));
    }
    p.insert(
        "addressing".into(),
        format!("{:?}", spec.addressing).to_lowercase(),
    );
    if let Some(d) = spec.duration {
        p.insert("duration".into(), d.to_string());
    }
    if let Some(r) = spec.range_size.filter(|_| matches!(op, S3Op::Get)) {
        p.insert("range_size".into(), r.to_string());
    }
    if let Some(ps) = spec
        .part_size
        .filter(|_| matches!(op, S3Op::Put | S3Op::Mixed))
    {
        p.insert("part_size".into(), ps.to_string());
        if spec.part_concurrency > 1 {
            p.insert("part_concurrency".into(), spec.part_concurrency.to_string());
        }
    }
    if op == S3Op::Delete {
        p.insert("batch".into(), spec.batch.to_string());
    }
    if op == S3Op::List {
        p.insert("list_page".into(), spec.list_page.to_string());
    }
    if op == S3Op::Mixed {
        let s = spec.shares();
        p.insert(
            "shares".into(),
            format!(
                "get={},stat={},put={},delete={}",
                s.get, s.stat, s.put, s.delete
            ),
        );
    }
    p.extend(opts.params.clone());
    let mut warnings = Vec::new();
    if op == S3Op::Put && spec.disable_sha256_payload {
        warnings.push(
            "--disable-sha256-payload: uploads are signed UNSIGNED-PAYLOAD (warp hashes each body over plain http by default)".into(),
        );
    }
    PhaseMeta {
        name: name.to_string(),
        kind: Some(PhaseKind::Object),
        params: p,
        repetition: opts.repetition,
        spec: serde_json::to_value(spec).unwrap_or_default(),
        warnings,
    }
}
