//! The per-rank CSV files IO500 asks IOR and mdtest for (`-O
//! saveRankPerformanceDetailsCSV=F`, `--saveRankPerformanceDetails=F`), in their
//! formats: IOR's `StoreRankInformation` appends one line per rank and phase,
//! `access,rank,total time,access time,bytes/total,bytes/access` where bytes are the
//! phase's bytes over the ranks (its mean per rank); mdtest's appends an `all` line of
//! every test's rate and time (empty pair where a test did not run) and a line per rank
//! of its rate and time before the barrier for the directory and file tests. Numbers
//! in C's `%.10e`. iolab times open and close with the I/O, so IOR's two times are one.

use iolab_core::spec::{MetaItems, MetaOp};

/// C's `%.10e`: 1.2345678900e+03.
fn e10(x: f64) -> String {
    let s = format!("{x:.10e}");
    // Rust writes 1.2345678900e3 and 1.0e-5; C pads the exponent to two digits with a sign.
    match s.split_once('e') {
        Some((mantissa, exp)) => {
            let (sign, digits) = match exp.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exp),
            };
            format!("{mantissa}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

/// IOR's lines for one phase: each rank's time from the common start until it was done.
pub fn ior_rank_lines(access: &str, total_bytes: u64, rank_secs: &[f64]) -> String {
    let per_rank = total_bytes as f64 / rank_secs.len().max(1) as f64;
    rank_secs
        .iter()
        .enumerate()
        .map(|(rank, &t)| {
            let rate = if t > 0.0 { per_rank / t } else { 0.0 };
            format!(
                "{access},{rank},{},{},{},{}\n",
                e10(t),
                e10(t),
                e10(rate),
                e10(rate)
            )
        })
        .collect()
}

/// mdtest's tests in the order of its results table (mdtest.h): directory create, stat,
/// read, rename, remove, then the file tests, then tree create and remove (None: a test
/// iolab does not run, always empty).
const TESTS: [(MetaItems, Option<MetaOp>); 9] = [
    (MetaItems::Dirs, Some(MetaOp::Create)),
    (MetaItems::Dirs, Some(MetaOp::Stat)),
    (MetaItems::Dirs, None),
    (MetaItems::Dirs, None),
    (MetaItems::Dirs, Some(MetaOp::Remove)),
    (MetaItems::Files, Some(MetaOp::Create)),
    (MetaItems::Files, Some(MetaOp::Stat)),
    (MetaItems::Files, Some(MetaOp::Read)),
    (MetaItems::Files, Some(MetaOp::Remove)),
];
const TREE_TESTS: usize = 2;

/// One figure set of a test: what it worked on, the operation, items and seconds.
pub type Measured = (MetaItems, MetaOp, u64, f64);

fn pairs(measured: &[Measured], tests_after: usize) -> String {
    let mut out = String::new();
    for (items, op) in TESTS {
        match measured.iter().find(|m| Some(m.1) == op && m.0 == items) {
            Some(&(_, _, n, secs)) if n > 0 && secs > 0.0 => {
                out.push_str(&format!(",{},{}", e10(n as f64 / secs), e10(secs)));
            }
            _ => out.push_str(",,"),
        }
    }
    out + &",,".repeat(tests_after)
}

/// mdtest's lines for one call of one iteration: `all` with the items per task and every
/// test over all tasks, then each rank's own.
pub fn mdtest_rank_lines(items_per_task: u64, all: &[Measured], ranks: &[Vec<Measured>]) -> String {
    let mut out = format!("all,{items_per_task}{}\n", pairs(all, TREE_TESTS));
    for (rank, measured) in ranks.iter().enumerate() {
        out.push_str(&format!("{rank},{}\n", pairs(measured, 0)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_c_prints_them() {
        assert_eq!(e10(1234.56789), "1.2345678900e+03");
        assert_eq!(e10(0.000012), "1.2000000000e-05");
        assert_eq!(e10(0.0), "0.0000000000e+00");
    }

    #[test]
    fn ior_lines_are_one_per_rank() {
        let s = ior_rank_lines("write", 4 << 20, &[2.0, 4.0]);
        assert_eq!(
            s,
            "write,0,2.0000000000e+00,2.0000000000e+00,1.0485760000e+06,1.0485760000e+06\n\
             write,1,4.0000000000e+00,4.0000000000e+00,5.2428800000e+05,5.2428800000e+05\n"
        );
    }

    #[test]
    fn mdtest_lines_leave_tests_not_run_empty() {
        let s = mdtest_rank_lines(
            100,
            &[(MetaItems::Files, MetaOp::Stat, 200, 2.0)],
            &[
                vec![(MetaItems::Files, MetaOp::Stat, 100, 1.0)],
                vec![(MetaItems::Files, MetaOp::Stat, 100, 2.0)],
            ],
        );
        let lines: Vec<&str> = s.lines().collect();
        // 11 tests after "all,100": 5 directory, 4 file (stat the second), 2 tree.
        assert_eq!(
            lines[0],
            "all,100,,,,,,,,,,,,,1.0000000000e+02,2.0000000000e+00,,,,,,,,"
        );
        assert_eq!(lines[0].split(',').count(), 2 + 22);
        // A rank's line: its rank, then 9 tests (no tree tests), as mdtest prints them.
        let dirs = mdtest_rank_lines(10, &[(MetaItems::Dirs, MetaOp::Create, 10, 1.0)], &[]);
        assert!(
            dirs.starts_with("all,10,1.0000000000e+01,1.0000000000e+00,,"),
            "{dirs}"
        );
        assert_eq!(
            lines[1],
            "0,,,,,,,,,,,,,,1.0000000000e+02,1.0000000000e+00,,,,"
        );
        assert_eq!(lines[2].split(',').count(), 2 + 18);
    }
}
