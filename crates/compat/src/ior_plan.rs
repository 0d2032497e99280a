//! An IOR command line as iolab workloads: [`plan_ior`] turns [`IorOptions`] into the
//! write and read phases one repetition runs, with IOR's semantics — one worker per rank
//! (an IOR task), `-b` bytes per segment, `-s` segments, `-F` file per process or one
//! shared file, `-e` fsync inside the timed write, `-C -Q` reads of another node's data,
//! `-z` random offsets, `-D` stonewall with `-O stoneWallingWearOut=1`, and IOR's cache
//! policy (the page cache is left alone). What iolab runs by other means is said in
//! [`IorPlan::notes`]; what it cannot run is an error naming the option.

use std::path::PathBuf;

use iolab_core::spec::{
    BackendKind, CacheMode, DataPattern, DataSpec, Layout, Placement, RandomKind, RwKind,
};
use iolab_core::units::{ByteCount, Nanos, TimeSpan};

use iolab_core::rng::GlibcRand;

use crate::args::ArgError;
use crate::ior::IorOptions;

/// What one IOR invocation runs.
#[derive(Clone, Debug, PartialEq)]
pub struct IorPlan {
    pub options: IorOptions,
    /// The directory of `-o`, where iolab keeps its work directory.
    pub dir: PathBuf,
    /// Each repetition's phases, in IOR's order.
    pub write: Option<DataSpec>,
    pub read: Option<DataSpec>,
    /// Bytes each rank moves in a phase (`-b` x `-s`).
    pub bytes_per_rank: u64,
    pub notes: Vec<String>,
}

fn refuse(option: &str, message: impl Into<String>) -> ArgError {
    ArgError {
        tool: "ior",
        option: option.to_string(),
        message: message.into(),
    }
}

/// Plans `o` for `ranks` ranks, `on_first_host` of them on the first host.
pub fn plan_ior(o: &IorOptions, ranks: u32, on_first_host: u32) -> Result<IorPlan, ArgError> {
    if o.transfer_size == 0 || o.block_size == 0 {
        return Err(refuse(
            "-t",
            "the transfer and block sizes must be more than 0",
        ));
    }
    if o.unique_dir {
        return Err(refuse(
            "-u",
            "a directory per task is not run by iolab's IOR front-end; use `iolab run --dir DIR/{rank}`",
        ));
    }
    if o.multi_file {
        return Err(refuse("-m", "a file per repetition is not run by iolab"));
    }
    if o.num_tasks != 0 && o.num_tasks != ranks {
        return Err(refuse(
            "-N",
            format!(
                "{} tasks of {ranks}: iolab runs IOR on every rank of the job",
                o.num_tasks
            ),
        ));
    }
    if o.stonewall_status_file.is_some() && o.write && !o.wear_out {
        return Err(refuse(
            "-O",
            "stoneWallingStatusFile with -w needs -O stoneWallingWearOut=1 (as IOR requires)",
        ));
    }
    if o.wear_out && o.deadline == 0 {
        return Err(refuse(
            "-O",
            "stoneWallingWearOut=1 needs a deadline: -D SECONDS (as IOR requires)",
        ));
    }
    let (layout, placement) = match (o.file_per_proc, o.segments, o.block_size == o.transfer_size) {
        (true, _, _) => (Layout::FilePerThread, Placement::Segmented),
        (false, 1, _) => (Layout::Shared, Placement::Segmented),
        (false, _, true) => (Layout::Shared, Placement::Strided),
        (false, s, false) => {
            return Err(refuse(
                "-s",
                format!(
                    "{s} segments of -b {} with -t {} in one shared file: IOR's segment layout (each task's block, segment after segment) is run by iolab only with -s 1 or -b equal to -t; use -F, -s 1, or -b {}",
                    o.block_size, o.transfer_size, o.transfer_size
                ),
            ));
        }
    };
    let bytes_per_rank = o
        .block_size
        .checked_mul(o.segments)
        .ok_or_else(|| refuse("-s", "-b times -s is more bytes than iolab can count"))?;
    let mut notes = vec![format!(
        "files are named as IOR names them ({}{}) in iolab's work directory {}/iolab-work",
        file_base(&o.test_file),
        if o.file_per_proc { ".%08d" } else { "" },
        parent_of(&o.test_file).display(),
    )];
    if o.intra_test_barriers {
        notes.push("-g: ranks meet before and after each phase; open and close are not timed apart, so open(s) and close(s) print as -".into());
    }
    // IOR's default packet type is timestamp; the others are iolab's own pattern.
    let timestamp = o
        .data_packet_type
        .as_deref()
        .is_none_or(|t| t.starts_with('t'));
    if !timestamp {
        notes.push("--dataPacketType other than timestamp: iolab writes its own incompressible pattern (seeded), checked the same way by -W and -R".into());
    } else if o.timestamp_signature.is_none() {
        notes.push("no -G: the timestamp signature is 0 (IOR takes the time), so a later -r -R finds it without -G".into());
    }
    let read_shift = if o.reorder_tasks {
        // IOR -C: read the data of the task Q nodes further on (tasks per node x Q).
        (o.task_per_node_offset.max(1) * on_first_host.max(1)) % ranks.max(1)
    } else {
        0
    };
    let base = DataSpec {
        block_size: ByteCount(o.transfer_size),
        threads: 1,
        layout,
        placement,
        size: Some(ByteCount(if o.file_per_proc || o.segments == 1 {
            bytes_per_rank
        } else {
            o.transfer_size * o.segments
        })),
        direct: o.direct,
        cache: CacheMode::Keep,
        random: if o.random_offset >= 2 {
            RandomKind::Uniform
        } else {
            RandomKind::FullCoverage
        },
        stonewall: (o.deadline > 0).then(|| TimeSpan(Nanos::from_secs(o.deadline))),
        wear_out: o.wear_out,
        // IOR's POSIX backend: lseek, then read or write.
        backend: BackendKind::Sync,
        pattern: if timestamp {
            DataPattern::IorTimestamp
        } else {
            DataPattern::Iolab
        },
        // IOR's timeStampSignatureValue: -G as an unsigned int.
        seed: if timestamp {
            u64::from(o.timestamp_signature.unwrap_or(0) as u32)
        } else {
            DataSpec::default().seed
        },
        ..DataSpec::default()
    };
    let random = o.random_offset > 0;
    let write = o.write.then(|| DataSpec {
        rw: if random {
            RwKind::Randwrite
        } else {
            RwKind::Write
        },
        fsync_at_end: o.fsync,
        fsync_every: o.fsync_per_write.then_some(1),
        verify: o.check_write || o.check_read,
        ..base.clone()
    });
    let read = (o.read || o.check_read).then(|| DataSpec {
        rw: if random {
            RwKind::Randread
        } else {
            RwKind::Read
        },
        verify: o.check_read,
        read_shift: Some(read_shift),
        ..base.clone()
    });
    for spec in write.iter().chain(read.iter()) {
        spec.validate().map_err(|e| refuse(&e.option, e.reason))?;
    }
    Ok(IorPlan {
        options: o.clone(),
        dir: parent_of(&o.test_file),
        write,
        read,
        bytes_per_rank,
        notes,
    })
}

/// The file name of `-o` (IOR's `testFile`), without its directory.
pub fn file_base(test_file: &str) -> String {
    std::path::Path::new(test_file)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "testFile".into())
}

/// The directory `-o` names a file in ("." for a bare name).
fn parent_of(test_file: &str) -> PathBuf {
    match std::path::Path::new(test_file).parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// IOR's -Z: the task whose data each task reads in repetition `rep`, by task, drawn as
/// IOR draws them with glibc's rand(): once (-Z), each task seeds with its rank plus the
/// seed (-X) and draws a task offset, drawing again while it falls within the first
/// -Q nodes' tasks (capped at the last node); twice (-Z -Z), every task shuffles the
/// task list alike from the seed, and reads the task at its own place. A negative -X
/// seeds with its magnitude plus the repetition. None without -Z.
pub fn random_read_sources(
    o: &IorOptions,
    tasks: u32,
    nodes: u32,
    on_first_host: u32,
    rep: u32,
) -> Option<Vec<u32>> {
    if o.reorder_random == 0 || tasks == 0 {
        return None;
    }
    let seed = o.reorder_random_seed.unwrap_or(0);
    let seed = if seed < 0 {
        (-seed) as u32 + rep
    } else {
        seed as u32
    };
    if o.reorder_random > 1 {
        let mut rand = GlibcRand::new(seed);
        let mut order: Vec<u32> = (0..tasks).collect();
        for i in 0..tasks {
            let target = i + rand.rand() % (tasks - i);
            order.swap(target as usize, i as usize);
        }
        return Some(order);
    }
    let node_offset = o.task_per_node_offset.min(nodes.saturating_sub(1));
    let floor = node_offset * on_first_host;
    Some(
        (0..tasks)
            .map(|rank| {
                let mut rand = GlibcRand::new(rank.wrapping_add(seed));
                let mut offset = rand.rand() % tasks;
                // IOR loops until the draw leaves the first nodes' tasks; with fewer
                // tasks than that floor it never would, so iolab stops at the floor.
                let mut left = 1000;
                while offset < floor && left > 0 {
                    offset = rand.rand() % tasks;
                    left -= 1;
                }
                (rank + offset) % tasks
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ior::parse_ior_args;

    fn plan(line: &str, ranks: u32, per_host: u32) -> Result<IorPlan, ArgError> {
        let argv: Vec<String> = line.split_whitespace().map(String::from).collect();
        plan_ior(&parse_ior_args(&argv).unwrap(), ranks, per_host)
    }

    #[test]
    fn file_per_process_with_fsync_and_shifted_reads() {
        let p = plan(
            "-a POSIX -b 1m -t 256k -s 4 -F -w -r -C -e -o /tmp/x/f",
            4,
            2,
        )
        .unwrap();
        assert_eq!(p.dir, PathBuf::from("/tmp/x"));
        assert_eq!(p.bytes_per_rank, 4 << 20);
        let w = p.write.unwrap();
        assert_eq!(
            (w.rw, w.layout, w.block_size),
            (RwKind::Write, Layout::FilePerThread, ByteCount(256 << 10))
        );
        assert_eq!(w.size, Some(ByteCount(4 << 20)));
        assert!(w.fsync_at_end && w.cache == CacheMode::Keep);
        let r = p.read.unwrap();
        // -C -Q 1 with 2 tasks per node: the next node's data.
        assert_eq!((r.rw, r.read_shift), (RwKind::Read, Some(2)));
    }

    #[test]
    fn io500s_hard_and_random_lines_plan() {
        let hard = plan(
            "-C -Q 1 -g -G 27 -k -e -t 47008 -b 47008 -s 100 -w -a POSIX -o /d/ior-hard/file",
            2,
            2,
        )
        .unwrap();
        let w = hard.write.unwrap();
        assert_eq!(
            (w.layout, w.placement),
            (Layout::Shared, Placement::Strided)
        );
        assert_eq!(w.size, Some(ByteCount(47008 * 100)));
        let rnd = plan(
            "-r -D 3 -z -z -t 4096 -b 4096 -s 1000 -O stoneWallingWearOut=1 -C -Q 2 -o f",
            4,
            4,
        )
        .unwrap();
        let r = rnd.read.unwrap();
        assert_eq!((r.rw, r.random), (RwKind::Randread, RandomKind::Uniform));
        assert_eq!(
            (r.stonewall, r.wear_out),
            (Some(TimeSpan::from_secs(3)), true)
        );
        // Q 2 x 4 tasks per node, on 4 ranks: back to itself (IOR's modulo).
        assert_eq!(r.read_shift, Some(0));
        assert_eq!(rnd.dir, PathBuf::from("."));
    }

    #[test]
    fn what_iolab_does_not_run_is_refused_by_name() {
        let e = plan("-w -b 4m -t 1m -s 2 -o f", 2, 2)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("ior -s: 2 segments of -b 4194304 with -t 1048576 in one shared file"),
            "{e}"
        );
        assert!(
            plan("-w -u -o f", 2, 2)
                .unwrap_err()
                .to_string()
                .starts_with("ior -u: ")
        );
        assert!(
            plan("-w -N 3 -o f", 2, 2)
                .unwrap_err()
                .to_string()
                .starts_with("ior -N: 3 tasks of 2")
        );
        let e = plan("-w -O stoneWallingWearOut=1 -o f", 2, 2)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "ior -O: stoneWallingWearOut=1 needs a deadline: -D SECONDS (as IOR requires)"
        );
    }

    #[test]
    fn dash_z_draws_the_tasks_ior_draws() {
        let mut o = IorOptions::default();
        assert_eq!(random_read_sources(&o, 4, 1, 4, 0), None);
        // -Z on one node: task r reads task (r + rand() % 4) % 4 with srand(r), as IOR.
        o.reorder_random = 1;
        let want: Vec<u32> = (0..4u32)
            .map(|r| (r + GlibcRand::new(r).rand() % 4) % 4)
            .collect();
        assert_eq!(random_read_sources(&o, 4, 1, 4, 0), Some(want));
        // -Z -Z: one shuffle of the tasks, the same on every task: a permutation.
        o.reorder_random = 2;
        let mut order = random_read_sources(&o, 8, 2, 4, 0).unwrap();
        order.sort();
        assert_eq!(order, (0..8).collect::<Vec<_>>());
        // -Z on two nodes with -Q 1: never the first node's tasks' offsets (0..4).
        o.reorder_random = 1;
        let got = random_read_sources(&o, 8, 2, 4, 0).unwrap();
        for (rank, source) in got.iter().enumerate() {
            let offset = (source + 8 - rank as u32) % 8;
            assert!(offset >= 4, "task {rank} reads task {source}");
        }
    }
}
