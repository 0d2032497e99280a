//! An mdtest command line as an iolab metadata workload ([`plan_mdtest`]) and mdtest's
//! text output ([`summary`]): one worker per rank as mdtest runs one task per rank,
//! mdtest's files per directory and tree (`-n`, `-I`, `-z`, `-b`, `-L`, `-u`), phases
//! (`-C -T -E -r`, in one call or, as IO500 runs them, one call each on the tree an
//! earlier call left), bytes (`-w`, `-e`), `-N` stride, `-W` stonewall with mdtest's
//! continue-to-the-maximum, `-Y`; and its "SUMMARY rate" table (mdtest.c
//! summarize_results: max, min, mean and sample standard deviation over iterations of all
//! items over the slowest task's time).

use std::fmt::Write as _;

use iolab_core::spec::{MetaItems, MetaOp, MetaPaths, MetaSpec};
use iolab_core::units::{ByteCount, Nanos, TimeSpan};

use crate::args::ArgError;
use crate::mdtest::MdtestOptions;

/// What one mdtest invocation runs.
#[derive(Clone, Debug, PartialEq)]
pub struct MdtestPlan {
    pub options: MdtestOptions,
    /// The tests of an iteration in mdtest's order: the directory test (-D), then the
    /// file test (-F); both without either option.
    pub tests: Vec<MetaSpec>,
    /// Files each task works on.
    pub items_per_task: u64,
    pub notes: Vec<String>,
}

fn refuse(option: &str, message: impl Into<String>) -> ArgError {
    ArgError {
        tool: "mdtest",
        option: option.to_string(),
        message: message.into(),
    }
}

/// Plans `o` for ranks whose first host has `on_first_host` of them, on `hosts` hosts.
pub fn plan_mdtest(
    o: &MdtestOptions,
    on_first_host: u32,
    hosts: usize,
) -> Result<MdtestPlan, ArgError> {
    if o.read && o.read_bytes != o.write_bytes && o.read_bytes != 0 {
        return Err(refuse(
            "-e",
            format!(
                "{} bytes read of {} written: iolab reads back what create wrote (-e equal to -w)",
                o.read_bytes, o.write_bytes
            ),
        ));
    }
    if o.sync_file && o.write_bytes > 0 {
        return Err(refuse(
            "-y",
            "an fsync of each file written is not run by iolab's mdtest front-end",
        ));
    }
    if o.depth > 0 && !o.leaf_only {
        return Err(refuse(
            "-z",
            "files in every level of the tree are not run by iolab; add -L (files only in the leaf directories)",
        ));
    }
    let leaves = u64::from(o.branch.max(1))
        .checked_pow(o.depth)
        .ok_or_else(|| refuse("-z", "more leaf directories than iolab can count"))?;
    // mdtest: -I per directory; -n per task, spread over the leaves.
    let per_dir = match (o.items_per_dir, o.items) {
        (0, n) => n / leaves,
        (i, _) => i,
    };
    if per_dir == 0 {
        return Err(refuse(
            "-n",
            format!(
                "{} items over {leaves} leaf directories leave none per directory",
                o.items
            ),
        ));
    }
    let mut ops = Vec::new();
    for (on, op) in [
        (o.create, MetaOp::Create),
        (o.stat, MetaOp::Stat),
        (o.read, MetaOp::Read),
        (o.remove, MetaOp::Remove),
    ] {
        if on {
            ops.push(op);
        }
    }
    // mdtest -N k: the task k further on; across nodes iolab counts the shift in ranks
    // and mdtest's stride in tasks per node.
    let shift = o.stride * if hosts > 1 { on_first_host.max(1) } else { 1 };
    let spec = MetaSpec {
        threads: 1,
        files_per_dir: per_dir,
        dirs_per_thread: Some(
            u32::try_from(leaves).map_err(|_| refuse("-b", "too many leaf directories"))?,
        ),
        total_files: None,
        ops,
        file_size: ByteCount(o.write_bytes),
        shared_dir: !o.unique_dir,
        depth: o.depth.saturating_sub(1),
        branching: o.branch.max(1),
        runtime: (o.stonewall > 0).then(|| TimeSpan(Nanos::from_secs(o.stonewall))),
        wear_out: o.stonewall > 0,
        shift: Some(shift),
        paths: MetaPaths::Whole,
        sync_after_every_phase: o.sync_after_phase,
        ..MetaSpec::default()
    };
    spec.validate().map_err(|e| refuse(&e.option, e.reason))?;
    let mut tests = Vec::new();
    // mdtest runs both tests when given neither -D nor -F (or both).
    let (dirs, files) = match (o.dirs_only, o.files_only) {
        (false, false) => (true, true),
        either => either,
    };
    if dirs {
        // A directory item is made, stat'ed and removed; mdtest's directory read does
        // nothing, and iolab leaves it out.
        let ops: Vec<MetaOp> = spec
            .ops
            .iter()
            .copied()
            .filter(|op| *op != MetaOp::Read)
            .collect();
        if !ops.is_empty() {
            tests.push(MetaSpec {
                items: MetaItems::Dirs,
                file_size: ByteCount(0),
                sync_after_every_phase: spec.sync_after_every_phase,
                ops,
                ..spec.clone()
            });
        }
    }
    if files {
        tests.push(spec);
    }
    let mut notes = Vec::new();
    if dirs && o.read {
        notes.push("directory read: mdtest times an empty loop; iolab does not run it".into());
    }
    if dirs && o.create && o.stat && o.read && o.remove {
        notes.push("directory rename (mdtest's default with no phase option) is not run by iolab: its row prints 0.000".into());
    }
    if o.depth > 1 || (o.depth == 1 && o.branch > 1) {
        notes.push(
            "the tree's directories carry iolab's names (b*/d*), not mdtest's mdtest_tree.N.M"
                .into(),
        );
    }
    notes.push("tree creation and removal are not timed apart: their rows print 0.000".into());
    Ok(MdtestPlan {
        options: o.clone(),
        items_per_task: per_dir * leaves,
        tests,
        notes,
    })
}

/// One iteration's phases: what they worked on, items of all tasks and the phase time
/// (the slowest task's), by operation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Iteration {
    pub phases: Vec<(MetaItems, MetaOp, u64, f64)>,
}

/// Max, min, mean and sample standard deviation (0 for one value), as mdtest.
fn stats(values: &[f64]) -> (f64, f64, f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let n = values.len() as f64;
    let max = values.iter().copied().fold(f64::MIN, f64::max);
    let min = values.iter().copied().fold(f64::MAX, f64::min);
    let mean = values.iter().sum::<f64>() / n;
    let sd = if values.len() > 1 {
        (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    (max, min, mean, sd)
}

/// mdtest's rows of the directory test and of the file test (its test names; the
/// directory read has none and is never printed).
const DIR_ROWS: [(&str, Option<MetaOp>); 4] = [
    ("Directory creation", Some(MetaOp::Create)),
    ("Directory stat", Some(MetaOp::Stat)),
    ("Directory rename", None),
    ("Directory removal", Some(MetaOp::Remove)),
];
const FILE_ROWS: [(&str, Option<MetaOp>); 4] = [
    ("File creation", Some(MetaOp::Create)),
    ("File stat", Some(MetaOp::Stat)),
    ("File read", Some(MetaOp::Read)),
    ("File removal", Some(MetaOp::Remove)),
];

/// mdtest's SUMMARY table: rates (items / s) or, with `time`, the phase times (s), with
/// the rows of the tests `plan` runs (directory rows with -D, file rows with -F, both
/// without either), then the tree rows.
pub fn summary(plan: &MdtestPlan, iterations: &[Iteration], time: bool) -> String {
    let mut out = format!(
        "\nSUMMARY {}: (of {} iterations)\n",
        if time {
            "time (in ms/op)"
        } else {
            "rate (in ops/sec)"
        },
        iterations.len()
    );
    out.push_str(
        "   Operation                     Max            Min           Mean        Std Dev\n",
    );
    out.push_str(
        "   ---------                     ---            ---           ----        -------\n",
    );
    let mut rows: Vec<(&str, MetaItems, Option<MetaOp>)> = Vec::new();
    for test in &plan.tests {
        let table = match test.items {
            MetaItems::Dirs => &DIR_ROWS,
            MetaItems::Files => &FILE_ROWS,
        };
        rows.extend(table.iter().map(|(name, op)| (*name, test.items, *op)));
    }
    for (name, items, op) in rows {
        let values: Vec<f64> = iterations
            .iter()
            .map(|it| {
                it.phases
                    .iter()
                    .find(|p| Some(p.1) == op && p.0 == items)
                    .map_or(0.0, |&(_, _, n, secs)| {
                        if time {
                            secs
                        } else if secs > 0.0 {
                            n as f64 / secs
                        } else {
                            0.0
                        }
                    })
            })
            .collect();
        let (max, min, mean, sd) = stats(&values);
        let _ = writeln!(
            out,
            "   {name:<18}     {max:14.3} {min:14.3} {mean:14.3} {sd:14.3}"
        );
    }
    for name in ["Tree creation", "Tree removal"] {
        let _ = writeln!(
            out,
            "   {name:<22} {:14.3} {:14.3} {:14.3} {:14.3}",
            0.0, 0.0, 0.0, 0.0
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mdtest::parse_mdtest_args;

    fn plan(line: &str, per_host: u32, hosts: usize) -> Result<MdtestPlan, ArgError> {
        let argv: Vec<String> = line.split_whitespace().map(String::from).collect();
        plan_mdtest(&parse_mdtest_args(&argv).unwrap(), per_host, hosts)
    }

    #[test]
    fn s1s_mdtest_line_plans_3000_files_in_each_of_10_leaves() {
        let p = plan(
            "-v -d /mnt/nfs/md -i 1 -b 10 -z 1 -L -I 3000 -y -u -t -F",
            16,
            32,
        )
        .unwrap();
        assert_eq!(p.items_per_task, 30_000);
        assert_eq!(
            (
                p.tests[0].files_per_dir,
                p.tests[0].dirs_per_thread,
                p.tests[0].depth
            ),
            (3000, Some(10), 0)
        );
        assert!(!p.tests[0].shared_dir);
        assert_eq!(
            p.tests[0].ops,
            [MetaOp::Create, MetaOp::Stat, MetaOp::Read, MetaOp::Remove]
        );
    }

    #[test]
    fn io500s_easy_create_line_and_the_stride_across_nodes() {
        let p = plan(
            "-n 1000 -u -L -F -P -G 27 -N 1 -d /d/mdtest-easy -x /d/sw -C -Y -W 2 -k -a POSIX",
            4,
            2,
        )
        .unwrap();
        assert_eq!(
            (p.tests[0].files_per_dir, p.tests[0].shift),
            (1000, Some(4))
        );
        assert_eq!(
            (p.tests[0].runtime, p.tests[0].wear_out),
            (Some(TimeSpan::from_secs(2)), true)
        );
        assert!(p.tests[0].sync_after_every_phase);
        // One node: -N 1 is the next task.
        assert_eq!(
            plan("-n 10 -F -N 1 -d d", 4, 1).unwrap().tests[0].shift,
            Some(1)
        );
    }

    #[test]
    fn io500s_later_calls_work_on_the_tree_an_earlier_call_left() {
        let stat = plan(
            "-n 1000000 -t -w 3901 -e 3901 -P -G=-1571475901 -N 1 -F -d /d/mdtest-hard -x /r/sw -T -a POSIX",
            2,
            1,
        )
        .unwrap();
        assert_eq!(stat.tests[0].ops, [MetaOp::Stat]);
        assert!(stat.tests[0].shared_dir && stat.tests[0].runtime.is_none());
        let read = plan("-n 10 -F -w 3901 -e 3901 -d d -E -X", 1, 1).unwrap();
        assert_eq!(read.tests[0].ops, [MetaOp::Read]);
        assert_eq!(
            plan("-n 10 -F -d d -r", 1, 1).unwrap().tests[0].ops,
            [MetaOp::Remove]
        );
    }

    #[test]
    fn what_iolab_does_not_run_is_refused_by_name() {
        let e = |line: &str| plan(line, 1, 1).unwrap_err().to_string();
        assert!(e("-n 10 -F -z 2 -b 2 -d d").starts_with("mdtest -z: files in every level"));
        assert!(e("-n 10 -F -w 100 -y -d d").starts_with("mdtest -y: "));
        assert!(
            e("-n 10 -F -w 100 -e 50 -d d").starts_with("mdtest -e: 50 bytes read of 100 written")
        );
    }

    /// The table of the real mdtest run `-n 100 -u -F -i 2` on 2 tasks, given its rates,
    /// prints in the same columns.
    #[test]
    fn the_summary_has_mdtests_columns() {
        let files = plan("-n 100 -u -F -i 2 -d d", 1, 1).unwrap();
        let it = |c: f64, s: f64| Iteration {
            phases: vec![
                (MetaItems::Files, MetaOp::Create, 200, 200.0 / c),
                (MetaItems::Files, MetaOp::Stat, 200, 200.0 / s),
            ],
        };
        let s = summary(
            &files,
            &[it(35587.171, 1503334.767), it(17056.256, 48030.965)],
            false,
        );
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[1], "SUMMARY rate (in ops/sec): (of 2 iterations)");
        assert_eq!(
            lines[2],
            "   Operation                     Max            Min           Mean        Std Dev"
        );
        // mdtest: "   File creation               35587.171      17056.256      26321.714      13103.336"
        assert_eq!(
            lines[4],
            "   File creation               35587.171      17056.256      26321.714      13103.336"
        );
        assert_eq!(
            lines[6],
            "   File read                       0.000          0.000          0.000          0.000"
        );
        assert_eq!(
            lines[8],
            "   Tree creation                   0.000          0.000          0.000          0.000"
        );
    }

    /// mdtest -D prints the directory rows (a real `mdtest -n 100 -D` row:
    /// "   Directory stat             296626.874     296626.874     296626.874          0.000"),
    /// and without -D or -F both tests run, directories first.
    #[test]
    fn directory_items_are_a_test_of_their_own() {
        let dirs = plan("-n 100 -D -d d", 1, 1).unwrap();
        assert_eq!(dirs.tests.len(), 1);
        assert_eq!(dirs.tests[0].items, MetaItems::Dirs);
        assert_eq!(
            dirs.tests[0].ops,
            [MetaOp::Create, MetaOp::Stat, MetaOp::Remove],
            "no directory read"
        );
        let it = Iteration {
            phases: vec![(MetaItems::Dirs, MetaOp::Stat, 100, 100.0 / 296626.874)],
        };
        let s = summary(&dirs, &[it], false);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[5],
            "   Directory stat             296626.874     296626.874     296626.874          0.000"
        );
        assert_eq!(&lines[4][..21], "   Directory creation");
        assert_eq!(&lines[6][..19], "   Directory rename");
        assert!(lines[8].starts_with("   Tree creation"), "{s}");
        let both = plan("-n 100 -d d", 1, 1).unwrap();
        let kinds: Vec<MetaItems> = both.tests.iter().map(|t| t.items).collect();
        assert_eq!(kinds, [MetaItems::Dirs, MetaItems::Files]);
        assert!(both.notes.iter().any(|n| n.starts_with("directory rename")));
        assert_eq!(summary(&both, &[], false).lines().count(), 4 + 8 + 2);
    }
}
