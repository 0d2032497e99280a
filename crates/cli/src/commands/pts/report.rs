//! What `iolab pts` prints and writes: the verdict, the header with the settings and the
//! device's inventory, the text tables and the HTML page PTS's report asks for.

use std::path::Path;

use iolab_core::units::ByteCount;
use iolab_report::{PtsPage, WindowPlot};
use iolab_suites::pts::figures::{Table, decimals, fmt_value, mix_name};
use iolab_suites::pts::{PtsMatrix, PtsOutcome, PtsPlan, PtsTest, PtsTestResult};

use super::{Class, PtsArgs};

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

pub(super) fn header(
    args: &PtsArgs,
    plan: &PtsPlan,
    range: u8,
    size: u64,
    subs: &[PtsTestResult],
) -> Vec<(String, String)> {
    let class = match args.class {
        Class::Enterprise => "PTS-E (enterprise): active range 100 %, write cache expected off",
        Class::Client => "PTS-C (client): active range 75 %, write cache expected on",
    };
    let mut h = vec![
        (
            "test".to_string(),
            format!("SNIA PTS 2.0 {}", plan.test.name()),
        ),
        ("class".into(), class.into()),
        (
            "device".into(),
            format!(
                "{} ({})",
                args.target_path().display(),
                ByteCount(size).human()
            ),
        ),
        (
            "active range".into(),
            format!("{range} % ({})", ByteCount(plan.active).human()),
        ),
        (
            "demand intensity".into(),
            format!(
                "TC {} threads x QD {} per thread ({} engine, {})",
                plan.threads,
                plan.queue_depth,
                args.backend.name(),
                if args.nbd_uri.is_some() {
                    "no page cache between"
                } else {
                    "O_DIRECT"
                }
            ),
        ),
    ];
    let several = subs.len() > 1;
    for sub in subs {
        h.extend(sub_header(args, plan, sub, several));
    }
    if !plan.whole_matrix {
        h.push((
            "matrix".into(),
            format!(
                "limited by --block-sizes/--mixes: not PTS's whole {} matrix",
                plan.test.name()
            ),
        ));
    }
    if args.scale != 1.0 {
        h.push((
            "durations".into(),
            format!("scaled by {}: not PTS's one minute per cell", args.scale),
        ));
    }
    if let Some(w) = write_cache(&args.target_path()) {
        let expected = match args.class {
            Class::Enterprise => "write through",
            Class::Client => "write back",
        };
        let note = if w == expected {
            String::new()
        } else {
            format!(" (PTS expects {expected} for this class; iolab does not change it)")
        };
        h.push(("write cache".into(), format!("{w}{note}")));
    }
    h
}

/// One round series' lines of the header (its block size named when there are several).
fn sub_header(
    args: &PtsArgs,
    plan: &PtsPlan,
    sub: &PtsTestResult,
    several: bool,
) -> Vec<(String, String)> {
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
            plan.cell_time,
            args.scale,
            if plan.test == PtsTest::Throughput {
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
            .map(|c| format!("{} ({})", c.name(), plan.test.unit()))
            .collect::<Vec<_>>()
            .join(", "),
    ));
    h.push((format!("steady state{of}"), verdict(sub, plan.max_rounds)));
    h
}

/// The kernel's name of a block device path (/dev/loop3 -> loop3).
fn kernel_name(device: &Path) -> Option<String> {
    let real = std::fs::canonicalize(device).ok()?;
    real.file_name().map(|n| n.to_string_lossy().into_owned())
}

fn sys(name: &str, rel: &str) -> Option<String> {
    std::fs::read_to_string(format!("/sys/class/block/{name}/{rel}"))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn write_cache(device: &Path) -> Option<String> {
    sys(&kernel_name(device)?, "queue/write_cache")
}

/// The device's inventory (sysfs), or the image file's file system.
pub(super) fn inventory(device: &Path, block: bool) -> Vec<(String, String)> {
    let mut rows = vec![("path".to_string(), device.display().to_string())];
    if iolab_backend::nbd::is_uri(device) {
        rows.push(("kind".into(), "NBD export (through libnbd)".into()));
        return rows;
    }
    if block && let Some(name) = kernel_name(device) {
        rows.push(("kernel name".into(), name.clone()));
        for (label, rel) in [
            ("model", "device/model"),
            ("serial", "device/serial"),
            ("firmware", "device/firmware_rev"),
            ("vendor", "device/vendor"),
            ("backing file", "loop/backing_file"),
            ("logical block size", "queue/logical_block_size"),
            ("physical block size", "queue/physical_block_size"),
            ("rotational", "queue/rotational"),
            ("discard granularity", "queue/discard_granularity"),
            ("discard max bytes", "queue/discard_max_bytes"),
            ("write cache", "queue/write_cache"),
            ("scheduler", "queue/scheduler"),
        ] {
            if let Some(v) = sys(&name, rel) {
                rows.push((label.into(), v));
            }
        }
        if let Some(sectors) = sys(&name, "size").and_then(|s| s.parse::<u64>().ok()) {
            rows.push(("capacity".into(), ByteCount(sectors * 512).human()));
        }
    } else {
        let mut notes = Vec::new();
        let t = iolab_host::inventory::target_info(
            &iolab_host::SysRoot::live(),
            device.parent().unwrap_or(Path::new("/")),
            &mut notes,
        );
        rows.push(("kind".into(), "image file".into()));
        if let (Some(fs), Some(m)) = (t.fs_type, t.mount_point) {
            rows.push(("file system".into(), format!("{fs} at {m}")));
        }
        for d in t.block_devices {
            rows.push((
                "under it".into(),
                format!("{} {}", d.name, d.model.unwrap_or_default())
                    .trim()
                    .to_string(),
            ));
        }
    }
    rows
}

pub(super) fn render_text(
    plan: &PtsPlan,
    header: &[(String, String)],
    subs: &[PtsTestResult],
    inventory: &[(String, String)],
) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let test = plan.test;
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

pub(super) fn page(
    plan: &PtsPlan,
    header: Vec<(String, String)>,
    subs: &[PtsTestResult],
    inventory: Vec<(String, String)>,
) -> PtsPage {
    let test = plan.test;
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
        mixes: plan.subs[0].mixes.iter().map(|m| mix_name(*m)).collect(),
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
