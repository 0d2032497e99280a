//! A phase's [`Timeline`]: per operation type, what completed in each interval from the
//! phase start ([`OpSeries`]), merged across workers and ranks interval by interval, and
//! the stretches in which nothing completed ([`Silences`]).

use serde::{Deserialize, Serialize};

use super::OpKind;
use super::silence::Silences;
use crate::units::Nanos;

/// Per-second counts of one operation type, for charts and live progress.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpSeries {
    pub op: OpKind,
    /// Operations completed in each interval.
    pub ops: Vec<u64>,
    /// Bytes completed in each interval.
    pub bytes: Vec<u64>,
    /// Sum of the latencies (ns) of the operations completed in each interval, so
    /// mean latency per interval is latency_sum / ops.
    pub latency_sum: Vec<u64>,
}

/// A per-interval timeline of a phase, intervals counted from the phase start.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeline {
    pub interval: Nanos,
    pub series: Vec<OpSeries>,
    /// Where no operation completed on any worker (the phase's pause).
    #[serde(default, skip_serializing_if = "Silences::is_empty")]
    pub silences: Silences,
}

impl Timeline {
    pub fn series(&self, op: OpKind) -> Option<&OpSeries> {
        self.series.iter().find(|s| s.op == op)
    }

    /// Adds another timeline (another worker or rank) interval by interval.
    pub fn merge(&mut self, other: &Timeline) {
        if self.interval == Nanos::ZERO {
            self.interval = other.interval;
        }
        for theirs in &other.series {
            let idx = match self.series.iter().position(|s| s.op == theirs.op) {
                Some(i) => i,
                None => {
                    self.series.push(OpSeries {
                        op: theirs.op,
                        ..OpSeries::default()
                    });
                    self.series.sort_by_key(|s| s.op);
                    self.series
                        .iter()
                        .position(|s| s.op == theirs.op)
                        .expect("just pushed")
                }
            };
            let mine = &mut self.series[idx];
            add_into(&mut mine.ops, &theirs.ops);
            add_into(&mut mine.bytes, &theirs.bytes);
            add_into(&mut mine.latency_sum, &theirs.latency_sum);
        }
        self.silences.merge(&other.silences);
    }
}

fn add_into(into: &mut Vec<u64>, from: &[u64]) {
    if into.len() < from.len() {
        into.resize(from.len(), 0);
    }
    for (a, b) in into.iter_mut().zip(from) {
        *a += *b;
    }
}
