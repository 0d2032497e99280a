//! What `iolab pts` prints and writes: the header of settings and verdicts
//! ([`pts_header`] from [`PtsSettings`]), the text report ([`render_pts_text`]) and the
//! HTML page's model ([`pts_page`]), from each test's [`PtsTestResult`].

use std::fmt::Write as _;

use iolab_core::pts::{
    PtsClass, PtsMatrix, PtsOutcome, PtsTest, PtsTestResult, Table, decimals, fmt_value, mix_name,
};
use iolab_core::units::{ByteCount, TimeSpan};

use crate::html::pts::{PtsPage, WindowPlot};

/// The settings of a PTS run the header shows, gathered by the caller.
#[derive(Clone, Debug, PartialEq)]
pub struct PtsSettings {
    pub test: PtsTest,
    pub class: PtsClass,
    /// The device, image file or NBD URI as named, and its size in bytes.
    pub device: String,
    pub size: u64,
    /// The active range in percent of the size, and in bytes.
    pub range: u8,
    pub active: u64,
    pub threads: u32,
    pub queue_depth: u32,
    /// The I/O engine's name, and whether the device is an NBD export (no page cache
    /// between) rather than opened with O_DIRECT.
    pub backend: String,
    pub nbd: bool,
    pub cell_time: TimeSpan,
    pub scale: f64,
    pub max_rounds: usize,
    /// The matrix is PTS's whole one (not limited by block sizes or mixes).
    pub whole_matrix: bool,
    /// The device's volatile write cache as the kernel reports it ("write back",
    /// "write through"), when it does.
    pub write_cache: Option<String>,
}

fn verdict(sub: &PtsTestResult, max_rounds: usize) -> String {
    match &sub.outcome {
        Some(o) if o.steady => format!(
            "STEADY: rounds {}-{} are the measurement window ({} rounds run)",
            o.window.0 + 1,
            o.window.1 + 1,
            sub.rounds.rounds.len()
        ),
        Some(o) => format!(
            "NOT STEADY after {} rounds (the most: {}): the tables hold the last five, rounds {}-{}",
            sub.rounds.rounds.len(),
            max_rounds,
            o.window.0 + 1,
            o.window.1 + 1
        ),
        None => format!(
            "no verdict: {} rounds ran, five are needed",
            sub.rounds.rounds.len()
        ),
    }
}

/// The header: the test, class, device, active range and demand intensity, each test's
/// purge, preconditioning, rounds and steady-state verdict, and what departs from PTS.
pub fn pts_header(s: &PtsSettings, subs: &[PtsTestResult]) -> Vec<(String, String)> {
    let class = match s.class {
        PtsClass::Enterprise => "PTS-E (enterprise): active range 100 %, write cache expected off",
        PtsClass::Client => "PTS-C (client): active range 75 %, write cache expected on",
    };
    let mut h = vec![
        (
            "test".to_string(),
            format!("SNIA PTS 2.0 {}", s.test.name()),
        ),
        ("class".into(), class.into()),
        (
            "device".into(),
            format!("{} ({})", s.device, ByteCount(s.size).human()),
        ),
        (
            "active range".into(),
            format!("{} % ({})", s.range, ByteCount(s.active).human()),
        ),
        (
            "demand intensity".into(),
            format!(
                "TC {} threads x QD {} per thread ({} engine, {})",
                s.threads,
                s.queue_depth,
                s.backend,
                if s.nbd {
                    "no page cache between"
                } else {
                    "O_DIRECT"
                }
            ),
        ),
    ];
    let several = subs.len() > 1;
    for sub in subs {
        h.extend(sub_header(s, sub, several));
    }
    if !s.whole_matrix {
        h.push((
            "matrix".into(),
            format!(
                "limited by --block-sizes/--mixes: not PTS's whole {} matrix",
                s.test.name()
            ),
        ));
    }
    if s.scale != 1.0 {
        h.push((
            "durations".into(),
            format!("scaled by {}: not PTS's one minute per cell", s.scale),
        ));
    }
    if let Some(w) = &s.write_cache {
        let expected = match s.class {
            PtsClass::Enterprise => "write through",
            PtsClass::Client => "write back",
        };
        let note = if w.as_str() == expected {
            String::new()
        } else {
            format!(" (PTS expects {expected} for this class; iolab does not change it)")
        };
        h.push(("write cache".into(), format!("{w}{note}")));
    }
    h
}

/// One round series' lines of the header (its block size named when there are several).
fn sub_header(s: &PtsSettings, sub: &PtsTestResult, several: bool) -> Vec<(String, String)> {
    let mut h = Vec::new();
    let of = if several {
        format!(" ({})", ByteCount(sub.matrix.block_sizes[0]))
    } else {
        String::new()
    };
    h.push((format!("purge{of}"), sub.purge.clone()));
    h.push((
        format!("preconditioning (workload-independent){of}"),
        sub.wipc.clone(),
    ));
    h.push((
        format!("rounds{of}"),
        format!(
            "{} cells of {} each (--scale {}), {}",
            sub.matrix.cells().len(),
            s.cell_time,
            s.scale,
            if s.test == PtsTest::Throughput {
                "sequential over the active range"
            } else {
                "random, uniform over the active range"
            }
        ),
    ));
    h.push((
        format!("tracked{of}"),
        sub.matrix
            .tracked
            .iter()
            .map(|c| format!("{} ({})", c.name(), s.test.unit()))
            .collect::<Vec<_>>()
            .join(", "),
    ));
    h.push((format!("steady state{of}"), verdict(sub, s.max_rounds)));
    h
}

/// The text report: the header, each test's steady-state lines and tables, the device.
pub fn render_pts_text(
    test: PtsTest,
    header: &[(String, String)],
    subs: &[PtsTestResult],
    inventory: &[(String, String)],
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "iolab pts · SNIA PTS 2.0 {}", test.name());
    for (k, v) in header {
        let _ = writeln!(out, "  {k}: {v}");
    }
    let print_table = |out: &mut String, title: &str, d: usize, mixes: &[u8], rows: &Table| {
        let _ = writeln!(out, "\n{title} (rows: block size; columns: R/W mix):");
        let _ = write!(out, "  {:>8}", "");
        for m in mixes {
            let _ = write!(out, " {:>10}", mix_name(*m));
        }
        out.push('\n');
        for (bs, row) in rows {
            let _ = write!(out, "  {bs:>8}");
            for v in row {
                let _ = write!(out, " {v:>10.d$}");
            }
            out.push('\n');
        }
    };
    for sub in subs {
        let Some(o) = &sub.outcome else {
            let _ = writeln!(
                out,
                "\n{} rounds ran: no measurement window",
                sub.rounds.rounds.len()
            );
            continue;
        };
        let _ = writeln!(
            out,
            "\nSteady state (PTS: range <= 20 %, excursion <= 10 % of the window average):"
        );
        for (c, v) in &o.tracked {
            let _ = writeln!(
                out,
                "  {:<12} {}  average {}, range {:.1} %, excursion {:.1} %, slope {:.d2$} {}/round",
                c.name(),
                if v.steady { "steady    " } else { "NOT steady" },
                fmt_value(test, v.average),
                100.0 * v.range / v.average.max(f64::MIN_POSITIVE),
                100.0 * v.excursion / v.average.max(f64::MIN_POSITIVE),
                v.slope,
                test.unit(),
                d2 = decimals(test) + 1
            );
        }
        print_table(
            &mut out,
            &format!(
                "{}, average of rounds {}-{}",
                table_title(test),
                o.window.0 + 1,
                o.window.1 + 1
            ),
            decimals(test),
            &sub.matrix.mixes,
            &table(&sub.matrix, o),
        );
        for (title, d, rows) in &sub.extra_tables {
            print_table(&mut out, title, *d, &sub.matrix.mixes, rows);
        }
    }
    let _ = writeln!(out, "\nDevice:");
    for (k, v) in inventory {
        let _ = writeln!(out, "  {k}: {v}");
    }
    out
}

fn table_title(test: PtsTest) -> &'static str {
    match test {
        PtsTest::Iops => "IOPS",
        PtsTest::Throughput => "Throughput, MB/s",
        PtsTest::Latency => "Mean response time, ms",
    }
}

/// The main table's rows: block size and each mix's window average.
fn table(m: &PtsMatrix, o: &PtsOutcome) -> Table {
    let cells = m.cells();
    m.block_sizes
        .iter()
        .map(|bs| {
            (
                ByteCount(*bs).to_string(),
                m.mixes
                    .iter()
                    .map(|mix| {
                        cells
                            .iter()
                            .position(|c| c.block_size == *bs && c.read_percent == *mix)
                            .and_then(|i| o.averages.get(i).copied())
                            .unwrap_or(0.0)
                    })
                    .collect(),
            )
        })
        .collect()
}

/// The HTML page's model; `mixes` are the first test's R/W mixes, its columns.
pub fn pts_page(
    test: PtsTest,
    mixes: &[u8],
    header: Vec<(String, String)>,
    subs: &[PtsTestResult],
    inventory: Vec<(String, String)>,
) -> PtsPage {
    let unit = test.unit();
    let mut convergence: Vec<(String, Vec<f64>)> = Vec::new();
    let mut windows = Vec::new();
    let mut table_rows = Vec::new();
    let mut extra_tables: Vec<(String, usize, Table)> = Vec::new();
    for sub in subs {
        let m = &sub.matrix;
        // Convergence: the tracked cells first, then (IOPS, latency) every block size
        // at 100 % writes as PTS plots them, (throughput) the reads too.
        for c in &m.tracked {
            convergence.push((c.name(), sub.rounds.series(m, *c)));
        }
        for c in m.cells() {
            let wanted = test == PtsTest::Throughput || c.read_percent == 0;
            if wanted && !m.tracked.contains(&c) {
                convergence.push((c.name(), sub.rounds.series(m, c)));
            }
        }
        if let Some(o) = &sub.outcome {
            for (c, v) in &o.tracked {
                let s = sub.rounds.series(m, *c);
                windows.push(WindowPlot {
                    cell: c.name(),
                    rounds: (o.window.0 + 1..=o.window.1 + 1).collect(),
                    iops: s[o.window.0..=o.window.1].to_vec(),
                    average: v.average,
                    intercept: v.intercept,
                    slope: v.slope,
                    steady: v.steady,
                    verdict: format!(
                        "range {:.1} % of the average (limit 20 %), least-squares excursion {:.1} % (limit 10 %): {}",
                        100.0 * v.range / v.average.max(f64::MIN_POSITIVE),
                        100.0 * v.excursion / v.average.max(f64::MIN_POSITIVE),
                        if v.steady { "steady" } else { "NOT steady" }
                    ),
                });
            }
            table_rows.extend(table(m, o));
            extra_tables.extend(sub.extra_tables.iter().cloned());
        }
    }
    PtsPage {
        title: format!("iolab pts: SNIA PTS 2.0 {}", test.name()),
        header,
        convergence,
        windows,
        mixes: mixes.iter().map(|m| mix_name(*m)).collect(),
        table: table_rows,
        inventory,
        unit: unit.into(),
        log: test == PtsTest::Iops,
        decimals: decimals(test),
        table_title: format!(
            "{}: block size x R/W mix (average of the measurement window)",
            table_title(test)
        ),
        extra_tables,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_core::pts::PtsRounds;

    fn result() -> PtsTestResult {
        let matrix = PtsMatrix::iops()
            .limited(Some(&[4 << 10]), Some(&[100, 0]))
            .unwrap();
        let rounds = PtsRounds {
            rounds: vec![vec![900.0, 300.0]; 5],
        };
        PtsTestResult {
            outcome: rounds.outcome(&matrix),
            matrix,
            purge: "discarded".into(),
            wipc: "2 passes".into(),
            rounds,
            extra_tables: Vec::new(),
        }
    }

    #[test]
    fn the_header_and_text_give_the_verdict_the_window_and_the_table() {
        let settings = PtsSettings {
            test: PtsTest::Iops,
            class: PtsClass::Client,
            device: "/dev/loop9".into(),
            size: 1 << 30,
            range: 75,
            active: 768 << 20,
            threads: 4,
            queue_depth: 32,
            backend: "psync".into(),
            nbd: false,
            cell_time: "1s".parse().unwrap(),
            scale: 0.5,
            max_rounds: 25,
            whole_matrix: false,
            write_cache: Some("write through".into()),
        };
        let subs = [result()];
        let header = pts_header(&settings, &subs);
        let text = render_pts_text(PtsTest::Iops, &header, &subs, &[]);
        for line in [
            "iolab pts · SNIA PTS 2.0 IOPS\n",
            "  class: PTS-C (client): active range 75 %, write cache expected on\n",
            "  active range: 75 % (768 MiB)\n",
            "  steady state: STEADY: rounds 1-5 are the measurement window (5 rounds run)\n",
            "  durations: scaled by 0.5: not PTS's one minute per cell\n",
            "  write cache: write through (PTS expects write back for this class; iolab does not change it)\n",
            "IOPS, average of rounds 1-5 (rows: block size; columns: R/W mix):\n",
            "      4KiB        900        300\n",
        ] {
            assert!(text.contains(line), "{line:?} not in\n{text}");
        }
        let page = pts_page(PtsTest::Iops, &[100, 0], header, &subs, Vec::new());
        assert_eq!(page.mixes, ["100/0", "0/100"]);
        assert_eq!(page.table, [("4KiB".to_string(), vec![900.0, 300.0])]);
        assert_eq!(page.windows.len(), 1);
        assert!(page.windows[0].steady);
    }
}
