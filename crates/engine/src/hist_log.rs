//! fio's histogram log (`write_hist_log` with `log_hist_msec`) as fio 3.33 samples it
//! (stat.c `add_clat_sample`, iolog.c `flush_hist_samples`): each direction's
//! completion latencies in fio's `io_u_plat` bins (`plat_val_to_idx`: 64 bins per power
//! of two, 29 groups, 1856 bins, nanoseconds), and at a completion at least
//! `log_hist_msec` after the direction's last sample a [`HistSample`]: the time (ms from
//! the worker's measured start), the direction, that I/O's size and the bins of the
//! I/Os completed since the last sample (the completing one included). The first
//! sample's window starts at the direction's first completion; what completes after the
//! last sample is not logged, as in fio.

use iolab_core::result::OpKind;
use iolab_core::units::Nanos;
use serde::{Deserialize, Serialize};

/// fio's FIO_IO_U_PLAT_BITS, FIO_IO_U_PLAT_VAL and FIO_IO_U_PLAT_NR.
const PLAT_BITS: u32 = 6;
const PLAT_VAL: u64 = 1 << PLAT_BITS;
pub const PLAT_NR: usize = 29 * PLAT_VAL as usize;

/// fio's bin of a latency of `ns` nanoseconds (stat.c `plat_val_to_idx`).
pub fn plat_idx(ns: u64) -> usize {
    let msb = if ns == 0 { 0 } else { 63 - ns.leading_zeros() };
    if msb <= PLAT_BITS {
        return ns as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = u64::from(error_bits + 1) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (ns >> error_bits);
    ((base + offset) as usize).min(PLAT_NR - 1)
}

/// One line of fio's histogram log.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistSample {
    /// Milliseconds from the worker's measured start.
    pub at_ms: u64,
    /// fio's direction: 0 read, 1 write, 2 trim.
    pub dir: u8,
    /// The size of the I/O whose completion closed the window.
    pub bs: u64,
    /// The window's non-empty bins: (fio's bin index, I/Os).
    pub bins: Vec<(u16, u64)>,
}

impl HistSample {
    /// fio's line: `time, direction, block size, ` then every bin's count.
    pub fn line(&self) -> String {
        let mut all = vec![0u64; PLAT_NR];
        for &(i, n) in &self.bins {
            all[usize::from(i)] = n;
        }
        let mut s = format!("{}, {}, {}", self.at_ms, self.dir, self.bs);
        for n in all {
            s.push_str(", ");
            s.push_str(&n.to_string());
        }
        s.push('\n');
        s
    }
}

/// One direction's bins since its last sample, and when that was (0: not yet, as
/// fio's `hist_last`).
#[derive(Clone, Default)]
struct Window {
    bins: Vec<u64>,
    last_ms: u64,
}

/// A worker's histogram log while it runs.
#[derive(Clone)]
pub struct HistLog {
    msec: u64,
    start: Nanos,
    dirs: [Window; 3],
    pub samples: Vec<HistSample>,
}

impl HistLog {
    /// Samples every `msec` ms (more than 0) of a worker measured from `start`.
    pub fn new(msec: u64, start: Nanos) -> Self {
        HistLog {
            msec: msec.max(1),
            start,
            dirs: Default::default(),
            samples: Vec::new(),
        }
    }

    /// An I/O of `bytes` completed at `at` after `latency_ns`.
    pub fn record(&mut self, op: OpKind, latency_ns: u64, bytes: u64, at: Nanos) {
        let dir = match op {
            OpKind::Read => 0,
            OpKind::Write => 1,
            OpKind::Trim => 2,
            _ => return,
        };
        let w = &mut self.dirs[dir];
        if w.bins.is_empty() {
            w.bins = vec![0; PLAT_NR];
        }
        w.bins[plat_idx(latency_ns)] += 1;
        let elapsed = at.saturating_sub(self.start).0 / 1_000_000;
        if w.last_ms == 0 {
            w.last_ms = elapsed;
        }
        let window = elapsed.saturating_sub(w.last_ms);
        if window < self.msec {
            return;
        }
        let bins = w
            .bins
            .iter_mut()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(i, n)| (i as u16, std::mem::take(n)))
            .collect();
        // fio keeps the windows in step: the drift past the window counts towards the
        // next one.
        w.last_ms = elapsed - (window - self.msec);
        self.samples.push(HistSample {
            at_ms: elapsed,
            dir: dir as u8,
            bs: bytes,
            bins,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_fios() {
        // Below 128 ns each value is its own bin; then 64 bins per power of two.
        assert_eq!(plat_idx(0), 0);
        assert_eq!(plat_idx(127), 127);
        assert_eq!(plat_idx(128), 128);
        assert_eq!(plat_idx(129), 128);
        assert_eq!(plat_idx(130), 129);
        assert_eq!(plat_idx(256), 192);
        // 20 us: msb 14, error bits 8, base 9 * 64 = 576, offset (20000 >> 8) & 63 = 14.
        assert_eq!(plat_idx(20_000), 590);
        // Beyond fio's last group: its last bin.
        assert_eq!(plat_idx(u64::MAX), PLAT_NR - 1);
        assert_eq!(PLAT_NR, 1856);
    }

    #[test]
    fn windows_close_at_the_completion_past_their_length() {
        let ms = |m: u64| Nanos(m * 1_000_000);
        let mut h = HistLog::new(100, ms(0));
        // The first read at 1 ms opens the window; reads every 25 ms.
        for t in [1, 26, 51, 76, 101, 126, 151, 176, 201, 226] {
            h.record(OpKind::Read, 20_000, 4096, ms(t));
        }
        h.record(OpKind::Write, 300, 8192, ms(230));
        let s = &h.samples;
        // At 101 (100 ms after 1): the 5 reads from 1 to 101; at 201 the next 4.
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!((s[0].at_ms, s[0].dir, s[0].bs), (101, 0, 4096));
        assert_eq!(s[0].bins, vec![(590, 5)]);
        assert_eq!((s[1].at_ms, s[1].bins.clone()), (201, vec![(590, 4)]));
        let line = s[0].line();
        let cols: Vec<&str> = line.trim_end().split(", ").collect();
        assert_eq!(cols.len(), 3 + PLAT_NR);
        assert_eq!(&cols[..3], ["101", "0", "4096"]);
        assert_eq!(cols[3 + 590], "5");
        assert_eq!(cols.iter().skip(3).filter(|c| **c != "0").count(), 1);
    }
}
