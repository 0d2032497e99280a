//! The figures of a PTS run from its stored phases: cell names, IOPS and latency per
//! cell, the latency test's tables over the measurement window, and the window's
//! verdict marked on the phases it covers.

use super::{Cell, PtsMatrix, PtsOutcome, PtsTest, Table};
use iolab_core::histogram::LatencyHistogram;
use iolab_core::result::{OpKind, PhaseResult};
use iolab_core::units::ByteCount;

/// "4KiB-r0": a cell in a phase name.
pub fn cell_tag(c: &Cell) -> String {
    format!("{}-r{}", ByteCount(c.block_size), c.read_percent)
}

/// Reads, writes and trims per second of a phase.
pub fn total_iops(p: &PhaseResult) -> f64 {
    p.ops
        .iter()
        .filter(|o| matches!(o.op, OpKind::Read | OpKind::Write))
        .map(|o| o.iops.get())
        .sum()
}

/// A phase's reads and writes in one histogram.
pub fn rw_histogram(p: &PhaseResult) -> LatencyHistogram {
    let mut h = LatencyHistogram::new();
    for o in p
        .ops
        .iter()
        .filter(|o| matches!(o.op, OpKind::Read | OpKind::Write))
    {
        h.merge(&o.histogram);
    }
    h
}

/// Stores the round and the cell's figures with the phase, and returns the tracked
/// one: IOPS, MB/s (10^6 bytes/s of reads and writes) or the mean response time in ms
/// (of every read and write).
pub fn record_figures(test: PtsTest, p: &mut PhaseResult, round: usize) -> f64 {
    let iops = total_iops(p);
    let mbps = p
        .ops
        .iter()
        .filter(|o| matches!(o.op, OpKind::Read | OpKind::Write))
        .map(|o| o.bandwidth.get())
        .sum::<f64>()
        / 1e6;
    p.extra.insert("pts_round".into(), round as f64);
    p.extra.insert("pts_iops".into(), iops);
    match test {
        PtsTest::Iops => iops,
        PtsTest::Throughput => {
            p.extra.insert("pts_mbps".into(), mbps);
            mbps
        }
        PtsTest::Latency => {
            let h = rw_histogram(p);
            let mean = h.mean() / 1e6;
            p.extra.insert("pts_latency_ms".into(), mean);
            p.extra
                .insert("pts_latency_max_ms".into(), h.max().0 as f64 / 1e6);
            p.extra.insert(
                "pts_latency_p99999_ms".into(),
                h.percentile(99.999).0 as f64 / 1e6,
            );
            mean
        }
    }
}

/// The phase of `cell` in `round` (1-based) among `phases`.
pub fn phase_of<'a>(
    phases: &'a [PhaseResult],
    round: usize,
    cell: &Cell,
) -> Option<&'a PhaseResult> {
    let name = format!("pts-r{round}-{}", cell_tag(cell));
    phases.iter().find(|p| p.name == name)
}

/// The latency test's tables beside the mean: over the window's rounds, the 99.999th
/// percentile of all their I/Os (their histograms merged), the maximum, and the IOPS
/// averaged.
pub fn latency_tables(
    phases: &[PhaseResult],
    m: &PtsMatrix,
    o: &PtsOutcome,
) -> Vec<(String, usize, Table)> {
    let window = o.window.0 + 1..=o.window.1 + 1;
    let mut nines = Vec::new();
    let mut max = Vec::new();
    let mut iops = Vec::new();
    for bs in &m.block_sizes {
        let (mut n, mut x, mut i) = (Vec::new(), Vec::new(), Vec::new());
        for mix in &m.mixes {
            let cell = Cell {
                block_size: *bs,
                read_percent: *mix,
            };
            let ps: Vec<&PhaseResult> = window
                .clone()
                .filter_map(|r| phase_of(phases, r, &cell))
                .collect();
            let mut h = LatencyHistogram::new();
            for p in &ps {
                h.merge(&rw_histogram(p));
            }
            n.push(h.percentile(99.999).0 as f64 / 1e6);
            x.push(h.max().0 as f64 / 1e6);
            i.push(ps.iter().map(|p| total_iops(p)).sum::<f64>() / ps.len().max(1) as f64);
        }
        let label = ByteCount(*bs).to_string();
        nines.push((label.clone(), n));
        max.push((label.clone(), x));
        iops.push((label, i));
    }
    vec![
        (
            "99.999th percentile response time, ms (all I/Os of the window's rounds)".into(),
            3,
            nines,
        ),
        (
            "maximum response time, ms (the window's rounds)".into(),
            3,
            max,
        ),
        ("IOPS (average of the window's rounds)".into(), 0, iops),
    ]
}

/// The verdict on the tracked cells' phases of the window's last round, and on every
/// window phase of the matrix its place in the window.
pub fn mark_window(phases: &mut [PhaseResult], o: &PtsOutcome, matrix: &PtsMatrix) {
    let (first, last) = (o.window.0 + 1, o.window.1 + 1);
    let key = matrix.test.key();
    let cells = matrix.cells();
    for p in phases.iter_mut() {
        let Some(round) = p.extra.get("pts_round").map(|r| *r as usize) else {
            continue;
        };
        if round < first
            || round > last
            || !cells
                .iter()
                .any(|c| p.name == format!("pts-r{round}-{}", cell_tag(c)))
        {
            continue;
        }
        p.extra.insert("pts_window".into(), 1.0);
        if round != last {
            continue;
        }
        for (cell, v) in &o.tracked {
            if p.name == format!("pts-r{round}-{}", cell_tag(cell)) {
                p.extra
                    .insert("pts_steady".into(), f64::from(u8::from(v.steady)));
                p.extra
                    .insert(format!("pts_window_average_{key}"), v.average);
                p.extra.insert(format!("pts_range_{key}"), v.range);
                p.extra.insert(format!("pts_excursion_{key}"), v.excursion);
                p.extra.insert(format!("pts_slope_{key}"), v.slope);
            }
        }
    }
}
