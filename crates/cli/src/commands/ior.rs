//! `iolab ior ...`: an IOR command line (POSIX) run on iolab's engine, one worker per rank
//! as IOR runs one task per rank, printed in IOR's layout (its "Results:" rows and
//! "Summary of all tests:") and stored as a run of kind "ior" with the command line in its
//! provenance, so that `compare` and `report` work on it. Options iolab does not run are
//! refused before anything runs (iolab_compat::ior_plan).

use anyhow::{Context, Result};
use clap::Args;
use iolab_comm::CommExt;
use iolab_compat::ior::parse_ior_args;
use iolab_compat::ior_output::{Access, IorPhase, Job, TABLE_HEADER, human_size, row, summary};
use iolab_compat::ior_plan::{IorPlan, file_base, plan_ior, random_read_sources};
use iolab_compat::rank_details::ior_rank_lines;
use iolab_core::civil::ctime;
use iolab_core::result::{OpKind, PhaseResult};
use iolab_core::spec::{BackendKind, DataSpec, TargetSpec};
use iolab_engine::data::{DataOptions, run_data};
use iolab_engine::plan::FileNames;
use iolab_engine::{EngineError, MonotonicClock, prepare_target};

use crate::commands::finish::{abandon, cleanup, finish_status};
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::watch::Watch;

/// Run an IOR command line (POSIX API) on iolab's engine, with IOR's output.
#[derive(Args, Debug)]
pub struct IorArgs {
    #[command(flatten)]
    pub common: crate::args::FrontEndArgs,

    /// IOR's arguments, as IOR takes them (-a POSIX -b 1m -t 256k -s 4 -F -w -r -o DIR/f).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "IOR ARGS",
        required = true
    )]
    pub args: Vec<String>,
}

pub fn ior(args: IorArgs) -> Result<u8> {
    let options = parse_ior_args(&args.args)?;
    Runtime::with(|rt| {
        let topo = rt.comm.topology();
        let plan = rt.agree(
            plan_ior(&options, rt.comm.size(), topo.ranks_on_first_host())
                .map_err(anyhow::Error::from),
        )?;
        args.common.live.start(rt)?;
        run_ior(rt, &args, &plan)
    })
}

fn run_ior(rt: &Runtime, args: &IorArgs, plan: &IorPlan) -> Result<u8> {
    let o = &plan.options;
    crate::commands::finish::check_status_file(
        rt,
        o.stonewall_status_file.as_deref(),
        "-O stoneWallingStatusFile=",
    )?;
    let target = TargetSpec {
        dir: Some(plan.dir.clone()),
        keep: o.keep_file,
        ..TargetSpec::default()
    };
    let mut sink = RunSink::start(
        rt,
        &args.common.store,
        "ior",
        serde_json::json!({ "ior": args.args, "write": plan.write, "read": plan.read }),
        plan.dir.display().to_string(),
        Some(&plan.dir),
        args.common.label.clone(),
    );
    let root = rt.is_root();
    let topo = rt.comm.topology();
    let job = Job {
        tasks: rt.comm.size(),
        tasks_on_node0: topo.ranks_on_first_host(),
    };
    if root {
        print!("{}", header(args, plan, job, topo.hosts().len()));
        print!("\nResults: \n\n{TABLE_HEADER}");
    }
    let output = args.common.output();
    let nodes = topo.hosts().len() as u32;
    let mut figures = Vec::new();
    let mut failed = false;
    for rep in 0..o.repetitions.max(1) {
        if rep > 0 && o.inter_test_delay > 0 {
            std::thread::sleep(std::time::Duration::from_secs(o.inter_test_delay));
        }
        let prepared = prepare_target(rt.comm.as_ref(), &target, BackendKind::Psync, true)?;
        let mut files = Vec::new();
        let mut written = None;
        let mut outcome: Result<(), EngineError> = Ok(());
        for (access, spec) in [(Access::Write, &plan.write), (Access::Read, &plan.read)] {
            let Some(spec) = spec else { continue };
            let watch = Watch::new(&output, &sink, None);
            let env = watch.env(rt);
            if access == Access::Read && written.is_none() {
                written = read_status_file(rt, plan);
            }
            // -z -z: IOR draws each transfer over the size of the file as it is (its
            // fileSizeForRead, a stat), -s x -b/-t of them or until -D.
            let random_read = access == Access::Read && plan.write.is_none() && o.random_offset > 1;
            if random_read && written.is_none() {
                written = Some(existing_blocks(rt, plan, &prepared)?);
            }
            let opts = DataOptions {
                name: Some(access.name().into()),
                repetition: rep,
                // A stonewalled write is read back as far as it got, as IOR's status file.
                written_blocks: if access == Access::Read {
                    written.clone()
                } else {
                    None
                },
                names: FileNames::Ior(file_base(&o.test_file)),
                no_verify_pass: !o.check_write,
                own_cache_policy: true,
                ops_per_worker: random_read.then(|| plan.bytes_per_rank / o.transfer_size),
                // -Z: the task each task reads, drawn as IOR draws it.
                read_from: (access == Access::Read)
                    .then(|| random_read_sources(o, rt.comm.size(), nodes, job.tasks_on_node0, rep))
                    .flatten(),
                ..DataOptions::default()
            };
            let ran = run_data(&env, &MonotonicClock, spec, &prepared, &opts);
            watch.progress.finish();
            let ran = match ran {
                Ok(r) => r,
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            };
            files.extend(ran.files.iter().cloned());
            if access == Access::Write && spec.stonewall.is_some() {
                written = Some(ran.completed.clone());
                write_status_file(rt, plan, &ran.completed)?;
            }
            let phase = &ran.phases[0];
            if root {
                say_errors(&ran.phases);
            }
            failed |= phase.error_count > 0 || ran.phases.iter().any(|p| p.verify_failures > 0);
            let f = ior_phase(access, spec, phase);
            if root {
                print!("{}", row(o, &f, rep));
            }
            save_rank_details(rt, plan, &f, phase)?;
            figures.push(f);
            sink.phases(ran.phases);
        }
        let cleaned = cleanup(rt.comm.as_ref(), prepared, &files, o.keep_file);
        if let Err(e) = outcome {
            return Err(abandon(sink, e));
        }
        cleaned?;
    }
    let interrupted = rt.interrupted();
    let code = finish_status(&mut sink, interrupted, failed);
    if root {
        // After the tables: what they mean here (an error before them stays one line).
        for n in &plan.notes {
            eprintln!("iolab ior: note: {n}");
        }
        print!("{}", summary(o, job, &figures));
        println!(
            "Finished            : {}",
            ctime(iolab_engine::phase::now_ms())
        );
        if !sink.record.id.is_empty() {
            eprintln!("iolab ior: stored as {}", sink.record.id);
        }
    }
    Ok(code)
}

/// A phase's figures as IOR reports them: every byte and transfer over the phase time.
fn ior_phase(access: Access, spec: &DataSpec, p: &PhaseResult) -> IorPhase {
    let op = p.ops.iter().find(|o| {
        matches!(
            (access, o.op),
            (Access::Write, OpKind::Write) | (Access::Read, OpKind::Read)
        )
    });
    let (bytes, transfers, latency) = op.map_or((0, 0, 0.0), |o| {
        (o.bytes.get(), o.ops, o.latency.mean / 1e9)
    });
    IorPhase {
        access,
        bytes,
        transfers,
        total_s: p.elapsed.as_secs_f64(),
        latency_s: latency,
        stonewall: (spec.wear_out && spec.stonewall.is_some()).then(|| {
            (
                p.first_done.as_secs_f64(),
                op.map_or(0, |o| o.first_done_bytes.get()),
            )
        }),
    }
}

/// `-O saveRankPerformanceDetailsCSV=F`: rank 0 appends a line per rank, as IOR does.
fn save_rank_details(rt: &Runtime, plan: &IorPlan, f: &IorPhase, p: &PhaseResult) -> Result<()> {
    let Some(path) = &plan.options.rank_details_csv else {
        return Ok(());
    };
    let result = if rt.is_root() {
        let secs: Vec<f64> = p.per_rank.iter().map(|r| r.elapsed.as_secs_f64()).collect();
        append(path, &ior_rank_lines(f.access.name(), f.bytes, &secs))
            .with_context(|| format!("-O saveRankPerformanceDetailsCSV={path}"))
    } else {
        Ok(())
    };
    rt.agree(result)
}

/// Appends `text` to the file at `path` (made if missing), as C's fopen(path, "a").
pub(crate) fn append(path: &str, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(text.as_bytes())
}

/// `-O stoneWallingStatusFile=F` with a stonewalled write: rank 0 writes the transfers
/// each task reached (after wear-out, the most any task did), as IOR writes it.
fn write_status_file(rt: &Runtime, plan: &IorPlan, completed: &[u64]) -> Result<()> {
    let Some(path) = &plan.options.stonewall_status_file else {
        return Ok(());
    };
    let result = if rt.is_root() {
        let pairs = completed.iter().copied().max().unwrap_or(0);
        std::fs::write(path, pairs.to_string())
            .with_context(|| format!("-O stoneWallingStatusFile={path}"))
    } else {
        Ok(())
    };
    rt.agree(result)
}

/// What went wrong in a phase, on stderr (IOR prints "Incorrect data on read" for -R):
/// the counts and the first error, which names the file, offset and byte.
fn say_errors(phases: &[PhaseResult]) {
    for p in phases {
        if p.verify_failures > 0 {
            eprintln!(
                "iolab ior: {}: {} transfer(s) did not hold the data written",
                p.name, p.verify_failures
            );
        }
        if p.error_count > p.verify_failures {
            eprintln!(
                "iolab ior: {}: {} I/O error(s)",
                p.name,
                p.error_count - p.verify_failures
            );
        }
        if let Some(e) = p.errors.first() {
            eprintln!("iolab ior: {}: first: {}", p.name, e.message);
        }
    }
}

/// A read without a write in this run reads as many transfers per rank as the status
/// file of an earlier stonewalled write says (IOR's ReadStoneWallingIterations: rank 0
/// reads it; missing or unreadable, the whole -b x -s is read, as IOR does).
fn read_status_file(rt: &Runtime, plan: &IorPlan) -> Option<Vec<u64>> {
    let path = plan.options.stonewall_status_file.as_ref()?;
    let mine = if rt.is_root() {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
            .unwrap_or(0)
    } else {
        0
    };
    let pairs = rt.comm.all_max(mine);
    (pairs > 0).then(|| vec![pairs; rt.comm.size() as usize])
}

/// The transfers each task's file holds now (IOR stats the file a `-z -z` read draws
/// over): rank 0 looks at every task's file, as iolab recorded it when it wrote it.
fn existing_blocks(
    rt: &Runtime,
    plan: &IorPlan,
    target: &iolab_engine::target::PreparedTarget,
) -> Result<Vec<u64>> {
    let o = &plan.options;
    let tasks = rt.comm.size();
    let looked = if rt.is_root() {
        file_sizes(plan, target, tasks)
    } else {
        Ok(Vec::new())
    };
    // Every rank learns whether rank 0 found the files before any waits for their sizes.
    let sizes = rt.agree(looked)?;
    let sizes: Vec<u64> = rt.comm.broadcast(0, &sizes)?;
    let t = o.transfer_size;
    Ok(if o.file_per_proc {
        sizes.iter().map(|s| s / t).collect()
    } else {
        // One shared file: each task draws over its share of the file's transfers.
        let all = sizes.first().copied().unwrap_or(0) / t;
        (0..u64::from(tasks))
            .map(|_| all / u64::from(tasks))
            .collect()
    })
}

/// The bytes iolab recorded in each task's file (one shared file: one size).
fn file_sizes(
    plan: &IorPlan,
    target: &iolab_engine::target::PreparedTarget,
    tasks: u32,
) -> Result<Vec<u64>> {
    let o = &plan.options;
    let workdir = target
        .workdir()
        .ok_or_else(|| anyhow::anyhow!("ior -o: a read needs a directory"))?;
    let base = file_base(&o.test_file);
    let names: Vec<String> = if o.file_per_proc {
        (0..tasks).map(|r| format!("{base}.{r:08}")).collect()
    } else {
        vec![base]
    };
    names
        .iter()
        .map(|name| {
            let path = workdir.join(name);
            workdir.file_info(&path).map(|i| i.size).ok_or_else(|| {
                anyhow::anyhow!(
                    "ior -r -z -z: {} holds no data an earlier iolab ior -w wrote; run the write first (with -k)",
                    path.display()
                )
            })
        })
        .collect()
}

/// IOR's opening block: the command, the machine, the test's options.
fn header(args: &IorArgs, plan: &IorPlan, job: Job, nodes: usize) -> String {
    let o = &plan.options;
    let now = ctime(iolab_engine::phase::now_ms());
    let kv = |k: &str, v: &dyn std::fmt::Display| format!("{k:<20}: {v}\n");
    let mut out = format!(
        "IOR-iolab-{}: MPI Coordinated Test of Parallel I/O\n",
        env!("CARGO_PKG_VERSION")
    );
    out.push_str(&kv("Began", &now));
    out.push_str(&kv("Command line", &format!("ior {}", args.args.join(" "))));
    out.push_str(&kv("Machine", &format!("Linux {}", iolab_comm::hostname())));
    out.push_str(&kv("TestID", &0));
    out.push_str(&kv("StartTime", &now));
    out.push_str(&kv("Path", &plan.dir.join("iolab-work").display()));
    out.push_str("\nOptions: \n");
    out.push_str(&kv("api", &"POSIX"));
    out.push_str(&kv("test filename", &o.test_file));
    let access = if o.file_per_proc {
        "file-per-process"
    } else {
        "single-shared-file"
    };
    out.push_str(&kv("access", &access));
    out.push_str(&kv("type", &"independent"));
    out.push_str(&kv("segments", &o.segments));
    let ordering = if o.random_offset > 0 {
        "random"
    } else {
        "sequential"
    };
    out.push_str(&kv("ordering in a file", &ordering));
    if o.reorder_tasks {
        out.push_str(&kv("ordering inter file", &"constant task offset"));
        out.push_str(&kv("task offset", &o.task_per_node_offset));
    } else {
        out.push_str(&kv("ordering inter file", &"no tasks offsets"));
    }
    out.push_str(&kv("nodes", &nodes));
    out.push_str(&kv("tasks", &job.tasks));
    out.push_str(&kv("clients per node", &job.tasks_on_node0));
    out.push_str(&kv("repetitions", &o.repetitions));
    out.push_str(&kv("xfersize", &format!("{} bytes", o.transfer_size)));
    out.push_str(&kv("blocksize", &human_size(o.block_size)));
    out.push_str(&kv(
        "aggregate filesize",
        &human_size(plan.bytes_per_rank * u64::from(job.tasks)),
    ));
    if o.deadline > 0 {
        out.push_str(&kv("stonewallingTime", &o.deadline));
        out.push_str(&kv("stoneWallingWearOut", &u8::from(o.wear_out)));
    }
    out
}
