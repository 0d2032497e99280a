//! IOR's text output (IOR 4.1, the commit IO500 isc26 builds), so that scripts that read
//! IOR's "Results:" rows and "Summary of all tests:" read iolab's: the column layout of
//! `PrintReducedResult` and `PrintLongSummaryOneOperation` (ior-output.c), the same
//! statistics (population standard deviation over repetitions; the summary's OPs over
//! total time, the row's IOPS over the I/O time). iolab does not time open and close
//! apart from the I/O: those columns print `-`, as IOR prints a figure it has not got.

use std::fmt::Write as _;

use crate::ior::IorOptions;

const MIB: f64 = 1048576.0;
const KIB: f64 = 1024.0;

/// Write or read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Write,
    Read,
}

impl Access {
    pub fn name(self) -> &'static str {
        match self {
            Access::Write => "write",
            Access::Read => "read",
        }
    }
}

/// What one phase of one repetition measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IorPhase {
    pub access: Access,
    /// Bytes moved by all ranks, and transfers.
    pub bytes: u64,
    pub transfers: u64,
    /// The phase time: from the common start until the last rank finished (IOR's
    /// total(s); its wr/rd(s) too, as iolab times open and close with the I/O).
    pub total_s: f64,
    /// Mean time of one transfer, seconds.
    pub latency_s: f64,
    /// With a stonewall and wear-out: the stonewall time and the bytes moved by then.
    pub stonewall: Option<(f64, u64)>,
}

/// IOR's `PPDouble`: left-justified in 10, 6 decimals under 1, 2 under 3600, none above;
/// a negative number (not measured) as `-`.
fn pp(x: f64, append: &str) -> String {
    if x < 0.0 {
        return format!("   -      {append}");
    }
    let precision = if x < 1.0 {
        6
    } else if x < 3600.0 {
        2
    } else {
        0
    };
    format!("{x:<10.precision$}{append}")
}

/// IOR's `HumanReadable` for sizes: "1 MiB" for a whole number of the unit, "1.50 MiB"
/// otherwise, "512 bytes" under a MiB.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB")];
    for (unit, name) in UNITS {
        if bytes >= unit {
            return if bytes.is_multiple_of(unit) {
                format!("{} {name}", bytes / unit)
            } else {
                format!("{:.2} {name}", bytes as f64 / unit as f64)
            };
        }
    }
    format!("{bytes} bytes")
}

/// The table header IOR prints before the first repetition.
pub const TABLE_HEADER: &str = "access    bw(MiB/s)  IOPS       Latency(s)  block(KiB) xfer(KiB)  open(s)    wr/rd(s)   close(s)   total(s)   iter\n------    ---------  ----       ----------  ---------- ---------  --------   --------   --------   --------   ----\n";

/// One "Results:" row.
pub fn row(o: &IorOptions, p: &IorPhase, iter: u32) -> String {
    let secs = p.total_s.max(f64::MIN_POSITIVE);
    let mut out = format!("{:<10}", p.access.name());
    out.push_str(&pp(p.bytes as f64 / secs / MIB, " "));
    out.push_str(&pp(p.transfers as f64 / secs, " "));
    out.push_str(&pp(p.latency_s, "  "));
    out.push_str(&pp(o.block_size as f64 / KIB, " "));
    out.push_str(&pp(o.transfer_size as f64 / KIB, " "));
    out.push_str(&pp(-1.0, " "));
    out.push_str(&pp(p.total_s, " "));
    out.push_str(&pp(-1.0, " "));
    out.push_str(&pp(p.total_s, " "));
    let _ = writeln!(out, "{iter:<4}");
    out
}

/// Max, min, mean and population standard deviation, as IOR computes them.
fn stats(values: &[f64]) -> (f64, f64, f64, f64) {
    let n = values.len().max(1) as f64;
    let max = values.iter().copied().fold(f64::MIN, f64::max);
    let min = values.iter().copied().fold(f64::MAX, f64::min);
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (mean - v).powi(2)).sum::<f64>() / n;
    (max, min, mean, var.sqrt())
}

/// Where the job ran, for the summary's columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Job {
    pub tasks: u32,
    /// Tasks on the first node (IOR's tPN).
    pub tasks_on_node0: u32,
}

/// What IOR's opening block says besides the options: when, what, where and on what.
#[derive(Clone, Copy, Debug)]
pub struct RunFacts<'a> {
    /// The start time as ctime prints it.
    pub began: &'a str,
    /// The arguments, as given after `ior`.
    pub args: &'a [String],
    pub host: &'a str,
    /// The directory the test file is in.
    pub path: &'a std::path::Path,
    pub nodes: usize,
    /// Bytes each rank moves in one direction.
    pub bytes_per_rank: u64,
}

/// IOR's opening block: the command, the machine, the test's options.
pub fn header(o: &IorOptions, job: Job, facts: &RunFacts<'_>) -> String {
    let kv = |k: &str, v: &dyn std::fmt::Display| format!("{k:<20}: {v}\n");
    let mut out = format!(
        "IOR-iolab-{}: MPI Coordinated Test of Parallel I/O\n",
        env!("CARGO_PKG_VERSION")
    );
    out.push_str(&kv("Began", &facts.began));
    out.push_str(&kv(
        "Command line",
        &format!("ior {}", facts.args.join(" ")),
    ));
    out.push_str(&kv("Machine", &format!("Linux {}", facts.host)));
    out.push_str(&kv("TestID", &0));
    out.push_str(&kv("StartTime", &facts.began));
    out.push_str(&kv("Path", &facts.path.display()));
    out.push_str("\nOptions: \n");
    out.push_str(&options_block(o, job, facts));
    out
}

/// The "Options:" lines of IOR's opening block.
fn options_block(o: &IorOptions, job: Job, facts: &RunFacts<'_>) -> String {
    let kv = |k: &str, v: &dyn std::fmt::Display| format!("{k:<20}: {v}\n");
    let mut out = kv("api", &"POSIX");
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
    out.push_str(&kv("nodes", &facts.nodes));
    out.push_str(&kv("tasks", &job.tasks));
    out.push_str(&kv("clients per node", &job.tasks_on_node0));
    out.push_str(&kv("repetitions", &o.repetitions));
    out.push_str(&kv("xfersize", &format!("{} bytes", o.transfer_size)));
    out.push_str(&kv("blocksize", &human_size(o.block_size)));
    out.push_str(&kv(
        "aggregate filesize",
        &human_size(facts.bytes_per_rank * u64::from(job.tasks)),
    ));
    if o.deadline > 0 {
        out.push_str(&kv("stonewallingTime", &o.deadline));
        out.push_str(&kv("stoneWallingWearOut", &u8::from(o.wear_out)));
    }
    out
}

/// "Summary of all tests:" with one row per access that ran.
pub fn summary(o: &IorOptions, job: Job, phases: &[IorPhase]) -> String {
    let mut out = summary_header();
    for access in [Access::Write, Access::Read] {
        let reps: Vec<&IorPhase> = phases.iter().filter(|p| p.access == access).collect();
        if !reps.is_empty() {
            summary_row(&mut out, o, job, access, &reps);
        }
    }
    out
}

/// The summary's title and column names.
fn summary_header() -> String {
    let mut out = String::from("\nSummary of all tests:");
    let _ = write!(
        out,
        "\n{:<9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>13}",
        "Operation",
        "Max(MiB)",
        "Min(MiB)",
        "Mean(MiB)",
        "StdDev",
        "Max(OPs)",
        "Min(OPs)",
        "Mean(OPs)",
        "StdDev",
        "Mean(s)",
        "Stonewall(s)",
        "Stonewall(MiB)"
    );
    out.push_str(" Test# #Tasks tPN reps fPP reord reordoff reordrand seed segcnt ");
    let _ = write!(
        out,
        "{:>8} {:>8} {:>9} {:>5}",
        " blksiz", "xsize", "aggs(MiB)", "API"
    );
    out.push_str(" RefNum\n");
    out
}

/// One access's row over its repetitions `reps` (at least one): bandwidth, operations
/// and time, the stonewall's figures, then the test's settings.
fn summary_row(out: &mut String, o: &IorOptions, job: Job, access: Access, reps: &[&IorPhase]) {
    let secs = |p: &IorPhase| p.total_s.max(f64::MIN_POSITIVE);
    let bw: Vec<f64> = reps
        .iter()
        .map(|p| p.bytes as f64 / secs(p) / MIB)
        .collect();
    let ops: Vec<f64> = reps
        .iter()
        .map(|p| p.bytes as f64 / o.transfer_size.max(1) as f64 / secs(p))
        .collect();
    let times: Vec<f64> = reps.iter().map(|p| p.total_s).collect();
    let (bmax, bmin, bmean, bsd) = stats(&bw);
    let (omax, omin, omean, osd) = stats(&ops);
    let (_, _, tmean, _) = stats(&times);
    let _ = write!(
        out,
        "{:<9} {bmax:10.2} {bmin:10.2} {bmean:10.2} {bsd:10.2} {omax:10.2} {omin:10.2} {omean:10.2} {osd:10.2} {tmean:10.5} ",
        access.name()
    );
    let walls: Vec<(f64, u64)> = reps.iter().filter_map(|p| p.stonewall).collect();
    if o.wear_out && !walls.is_empty() {
        let time: f64 = walls.iter().map(|w| w.0).sum();
        // IOR's Stonewall(MiB): the mean bytes per task by the stonewall, over time.
        let per_task: f64 = walls
            .iter()
            .map(|w| w.1 as f64 / job.tasks.max(1) as f64)
            .sum();
        let _ = write!(
            out,
            "{:10.2} {:13.2} ",
            time / reps.len() as f64,
            per_task / time.max(f64::MIN_POSITIVE) / MIB
        );
    } else {
        let _ = write!(out, "{:>10} {:>13} ", "NA", "NA");
    }
    let _ = writeln!(
        out,
        "{:5} {:6} {:3} {:4} {:3} {:5} {:8} {:9} {:4} {:6} {:8} {:8} {:9.1} {:>3} {:6}",
        0,
        job.tasks,
        job.tasks_on_node0,
        o.repetitions,
        u8::from(o.file_per_proc),
        u8::from(o.reorder_tasks),
        o.task_per_node_offset,
        o.reorder_random,
        o.reorder_random_seed.unwrap_or(0),
        o.segments,
        o.block_size,
        o.transfer_size,
        reps[0].bytes as f64 / MIB,
        "POSIX",
        0
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ior::parse_ior_args;

    fn opts(line: &str) -> IorOptions {
        let argv: Vec<String> = line.split_whitespace().map(String::from).collect();
        parse_ior_args(&argv).unwrap()
    }

    /// The opening block names the command, the machine and each option as IOR 4.1
    /// prints them, in its column of 20.
    #[test]
    fn the_header_has_iors_lines() {
        let o = opts("-a POSIX -b 1m -t 256k -s 4 -F -w -r -i 2 -D 5 -o /tmp/f");
        let args: Vec<String> = ["-b", "1m"].map(String::from).to_vec();
        let facts = RunFacts {
            began: "Mon Dec  7 13:30:00 2026",
            args: &args,
            host: "node1",
            path: std::path::Path::new("/tmp/iolab-work"),
            nodes: 1,
            bytes_per_rank: 4 << 20,
        };
        let job = Job {
            tasks: 2,
            tasks_on_node0: 2,
        };
        let text = header(&o, job, &facts);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "Began               : Mon Dec  7 13:30:00 2026");
        assert_eq!(lines[2], "Command line        : ior -b 1m");
        assert_eq!(lines[3], "Machine             : Linux node1");
        assert_eq!(lines[6], "Path                : /tmp/iolab-work");
        assert_eq!(lines[8], "Options: ");
        assert_eq!(lines[11], "access              : file-per-process");
        assert!(text.contains("\naggregate filesize  : 8 MiB\n"), "{text}");
        assert!(text.ends_with("stonewallingTime    : 5\nstoneWallingWearOut : 0\n"));
    }

    /// The rows of the real IOR run of `-b 1m -t 256k -s 4 -F -w -r -C -e -i 2` on 2 tasks
    /// (IOR 5fcf0ba), given the same times, print in the same columns, character for
    /// character (IOR's own lines are quoted above each; its IOPS column is over the I/O
    /// time, which iolab does not time apart from open and close).
    #[test]
    fn rows_and_summary_have_iors_columns() {
        let o = opts("-a POSIX -b 1m -t 256k -s 4 -F -w -r -C -e -i 2 -o /tmp/f");
        let w = IorPhase {
            access: Access::Write,
            bytes: 8 << 20,
            transfers: 32,
            total_s: 0.004048,
            latency_s: 0.000251,
            stonewall: None,
        };
        let r = row(&o, &w, 0);
        // IOR: "write     1976.35    7978       0.000251    1024.00    256.00     0.000063   0.004011   0.000083   0.004048   0   "
        assert_eq!(
            r,
            "write     1976.28    7905       0.000251    1024.00    256.00        -       0.004048      -       0.004048   0   \n"
        );
        let header_fields: Vec<&str> = TABLE_HEADER
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .collect();
        assert_eq!(header_fields.len(), r.split_whitespace().count());
        let s = summary(
            &o,
            Job {
                tasks: 2,
                tasks_on_node0: 2,
            },
            &[
                w,
                IorPhase {
                    total_s: 0.003885,
                    ..w
                },
            ],
        );
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[1], "Summary of all tests:");
        assert_eq!(
            lines[2],
            "Operation   Max(MiB)   Min(MiB)  Mean(MiB)     StdDev   Max(OPs)   Min(OPs)  Mean(OPs)     StdDev    Mean(s) Stonewall(s) Stonewall(MiB) Test# #Tasks tPN reps fPP reord reordoff reordrand seed segcnt   blksiz    xsize aggs(MiB)   API RefNum"
        );
        // IOR: "write        2059.31    1976.35    2017.83      41.48    8237.25    7905.39    8071.32     165.93    0.00397         NA            NA     0      2   2    2   1     1        1         0    0      4  1048576   262144       8.0 POSIX      0"
        assert_eq!(
            lines[3],
            "write        2059.20    1976.28    2017.74      41.46    8236.81    7905.14    8070.97     165.83    0.00397         NA            NA     0      2   2    2   1     1        1         0    0      4  1048576   262144       8.0 POSIX      0"
        );
        assert_eq!(lines.len(), 4, "no read row without a read phase");
    }

    #[test]
    fn sizes_read_as_iors() {
        assert_eq!(human_size(1 << 20), "1 MiB");
        assert_eq!(human_size(8 << 20), "8 MiB");
        assert_eq!(human_size(47008 * 3), "141024 bytes");
        assert_eq!(human_size(3 << 29), "1.50 GiB");
    }

    #[test]
    fn large_and_missing_figures_print_as_ior_prints_them() {
        assert_eq!(pp(40820.48, " "), "40820      ");
        assert_eq!(pp(0.5, " "), "0.500000   ");
        assert_eq!(pp(-1.0, " "), "   -       ");
    }
}
