//! A workload measured over two parameters at once, as the ZFS study's block size x
//! processes: [`matrices`] finds the groups of one phase name that split on one parameter
//! and sweep another, and makes them one [`Matrix`] (rows the swept values, columns the
//! split ones); [`Matrix::cell`] reads a [`Cell`] of a side, and [`sync_pairs`] pairs a
//! matrix written with O_SYNC with its twin written without, to be drawn together.

use iolab_core::result::{OpKind, PhaseKind};
use iolab_core::stats::Spread;

use crate::aggregate::{Aggregate, Group};
use crate::measure::Measure;
use crate::sweep::{Params, value_order};

/// One phase name over rows x columns.
#[derive(Clone, Debug, PartialEq)]
pub struct Matrix {
    pub name: String,
    pub kind: PhaseKind,
    /// The swept parameter ("threads") and its values, in order.
    pub rows_key: String,
    pub rows: Vec<String>,
    /// The parameter the groups split on ("block_size") and its values, in order.
    pub cols_key: String,
    pub cols: Vec<String>,
    /// Per column, the index of its group in [`Aggregate::groups`].
    pub groups: Vec<usize>,
    /// What each cell can show: the main operations, then the total IOPS of mixed phases.
    pub figures: Vec<Figure>,
    /// Parameters with one value over the whole matrix, on every side.
    pub fixed: Params,
}

/// What a table of a matrix shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Figure {
    /// An operation's figure of merit, with its mean latency.
    Op(OpKind),
    /// Reads and writes together, in IOPS.
    TotalIops,
}

impl Figure {
    /// "write", "total IOPS".
    pub fn name(self) -> &'static str {
        match self {
            Figure::Op(op) => op.name(),
            Figure::TotalIops => "total IOPS",
        }
    }
}

/// One cell: the figure over the repetitions, in its measure, and the mean latency of the
/// operation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cell {
    pub measure: Measure,
    pub value: Spread,
    /// The mean latency in ns (None for a total over operations).
    pub mean_latency_ns: Option<f64>,
}

impl Matrix {
    /// The matrix's groups, in column order.
    pub fn column_groups<'a>(&self, agg: &'a Aggregate) -> Vec<&'a Group> {
        self.groups.iter().map(|i| &agg.groups[*i]).collect()
    }

    /// True when group `index` of the aggregate is a column of this matrix.
    pub fn holds(&self, index: usize) -> bool {
        self.groups.contains(&index)
    }

    /// "async-seq-write", "randrw read", "randrw total IOPS": the title of a table.
    pub fn figure_label(&self, figure: Figure) -> String {
        match figure {
            Figure::Op(op) if self.figures.len() == 1 || self.name == op.name() => {
                self.name.clone()
            }
            f => format!("{} {}", self.name, f.name()),
        }
    }

    /// The cell of `side` at row value `row` and column `col`.
    pub fn cell(
        &self,
        agg: &Aggregate,
        side: usize,
        figure: Figure,
        row: &str,
        col: usize,
    ) -> Option<Cell> {
        let g = &agg.groups[*self.groups.get(col)?];
        let p = g.point(side, Some(row))?;
        match figure {
            Figure::TotalIops => Some(Cell {
                measure: Measure::Iops,
                value: *p.total()?,
                mean_latency_ns: None,
            }),
            Figure::Op(op) => {
                let o = p.op(op)?;
                let block = crate::measure::block_size_of(&p.params);
                let measure = Measure::choose(op, g.kind, block);
                let value = match measure {
                    Measure::Bandwidth => o.bandwidth,
                    _ => o.iops,
                };
                Some(Cell {
                    measure,
                    value,
                    mean_latency_ns: (o.latency.count > 0).then_some(o.latency.mean),
                })
            }
        }
    }

    /// The key of the block size, when it is one of the matrix's parameters.
    pub fn block_key(&self) -> Option<&str> {
        [&self.rows_key, &self.cols_key]
            .into_iter()
            .find(|k| *k == "block_size")
            .map(String::as_str)
    }
}

/// A value of a matrix parameter as a heading: "128KiB", "90% reads", "sync", "64".
pub fn value_heading(key: &str, value: &str) -> String {
    match key {
        "rwmix_read" => format!("{value}% reads"),
        "sync" if value == "true" => "sync".to_string(),
        "sync" => "async".to_string(),
        _ => value.to_string(),
    }
}

/// The matrices of an aggregate: every phase name with two or more groups that split on
/// the same single parameter and sweep the same one.
pub fn matrices(agg: &Aggregate) -> Vec<Matrix> {
    let mut names: Vec<&str> = Vec::new();
    for g in &agg.groups {
        if !names.contains(&g.name.as_str()) {
            names.push(&g.name);
        }
    }
    names
        .into_iter()
        .filter_map(|name| matrix_of(agg, name))
        .collect()
}

fn matrix_of(agg: &Aggregate, name: &str) -> Option<Matrix> {
    let members: Vec<(usize, &Group)> = agg
        .groups
        .iter()
        .enumerate()
        .filter(|(_, g)| g.name == name)
        .collect();
    let (_, first) = members.first()?;
    let rows_key = first.swept.clone()?;
    let cols_key = first.split.keys().next()?.clone();
    let shaped = |g: &Group| {
        g.split.len() == 1 && g.split.contains_key(&cols_key) && g.swept.as_ref() == Some(&rows_key)
    };
    if members.len() < 2 || !members.iter().all(|(_, g)| shaped(g)) {
        return None;
    }
    let mut rows: Vec<String> = members
        .iter()
        .flat_map(|(_, g)| g.values.iter().cloned())
        .collect();
    rows.sort_by(|a, b| value_order(a, b));
    rows.dedup();
    let mut figures: Vec<Figure> = Vec::new();
    for (_, g) in &members {
        for op in g.headline_ops() {
            if !figures.contains(&Figure::Op(op.op)) {
                figures.push(Figure::Op(op.op));
            }
        }
    }
    if members.iter().any(|(_, g)| g.is_mixed()) {
        figures.push(Figure::TotalIops);
    }
    let mut fixed = first.fixed.clone();
    fixed.retain(|k, v| members.iter().all(|(_, g)| g.fixed.get(k) == Some(v)));
    Some(Matrix {
        name: name.to_string(),
        kind: first.kind,
        cols: members
            .iter()
            .map(|(_, g)| g.split[&cols_key].clone())
            .collect(),
        groups: members.iter().map(|(i, _)| *i).collect(),
        rows_key,
        rows,
        cols_key,
        figures,
        fixed,
    })
}

/// Pairs (async, sync) of matrices alike in everything but `sync`: same parameters and
/// values, the same operations, one written with O_SYNC (`sync=true`), one without.
pub fn sync_pairs(matrices: &[Matrix]) -> Vec<(usize, usize)> {
    let synced = |m: &Matrix| m.fixed.get("sync").is_some_and(|v| v == "true");
    let without_sync = |m: &Matrix| {
        let mut f = m.fixed.clone();
        f.remove("sync");
        f
    };
    let mut pairs = Vec::new();
    for (s, sync) in matrices.iter().enumerate().filter(|(_, m)| synced(m)) {
        let twin = matrices.iter().enumerate().find(|(a, m)| {
            !synced(m)
                && !pairs.iter().any(|(x, _)| x == a)
                && m.rows_key == sync.rows_key
                && m.cols_key == sync.cols_key
                && m.cols == sync.cols
                && m.figures == sync.figures
                && without_sync(m) == without_sync(sync)
        });
        if let Some((a, _)) = twin {
            pairs.push((a, s));
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::aggregate;
    use crate::test_support::{op_result, phase, run_with};

    /// The ZFS matrix: async and sync writes, block size {128KiB, 4KiB} x threads {1, 64}.
    fn zfs() -> iolab_core::result::RunRecord {
        let mut phases = Vec::new();
        for (bs, size) in [("128KiB", 128 << 10), ("4KiB", 4096)] {
            for threads in ["1", "64"] {
                for (name, sync) in [("async-seq-write", None), ("sync-seq-write", Some("true"))] {
                    let mut params = vec![("block_size", bs), ("threads", threads)];
                    params.extend(sync.map(|v| ("sync", v)));
                    let mut p = phase(name, &params);
                    let ops: u64 = if sync.is_some() { 1_000 } else { 4_000 };
                    p.ops.push(op_result(OpKind::Write, ops, ops * size as u64));
                    phases.push(p);
                }
            }
        }
        run_with("hdd", phases)
    }

    #[test]
    fn groups_split_by_block_size_become_one_matrix_each() {
        let agg = aggregate(&zfs());
        let ms = matrices(&agg);
        let names: Vec<&str> = ms.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["async-seq-write", "sync-seq-write"]);
        let m = &ms[0];
        assert_eq!(
            (m.rows_key.as_str(), m.cols_key.as_str()),
            ("threads", "block_size")
        );
        assert_eq!(m.rows, ["1", "64"]);
        assert_eq!(m.cols, ["4KiB", "128KiB"]);
        assert_eq!(m.figures, [Figure::Op(OpKind::Write)]);
        // 4 KiB in IOPS, 128 KiB in bandwidth: 4,000 x 128 KiB/s = 500 MiB/s.
        let small = m.cell(&agg, 0, m.figures[0], "64", 0).unwrap();
        assert_eq!(small.measure, Measure::Iops);
        assert_eq!(small.value.mean, 4_000.0);
        let big = m.cell(&agg, 0, m.figures[0], "1", 1).unwrap();
        assert_eq!(big.measure, Measure::Bandwidth);
        assert_eq!(big.value.mean, 500.0 * 1024.0 * 1024.0);
        assert_eq!(big.mean_latency_ns, Some(100_000.0));
        assert_eq!(sync_pairs(&ms), [(0, 1)]);
    }

    #[test]
    fn a_plain_sweep_is_no_matrix() {
        let run = run_with(
            "a",
            ["1", "2"]
                .iter()
                .map(|t| {
                    let mut p = phase("w", &[("threads", t)]);
                    p.ops.push(op_result(OpKind::Write, 10, 10 << 20));
                    p
                })
                .collect(),
        );
        assert!(matrices(&aggregate(&run)).is_empty());
    }
}
