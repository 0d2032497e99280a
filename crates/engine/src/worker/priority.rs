//! fio's per-I/O priorities (`cmdprio_percentage`, `cmdprio_class`, `cmdprio`,
//! `cmdprio_bssplit`; fio 3.33's engines/cmdprio.c): each read or write gets its
//! direction's priority with a given chance (per block size with a split), the job's
//! default priority otherwise, carried in the I/O's io_uring SQE (`ioprio`); each
//! priority's completion latencies are kept apart, as fio's `clat_prio` statistics.

use iolab_core::histogram::LatencyHistogram;

use iolab_core::spec::IoPriorities;

/// One worker's draws and per-priority latencies.
#[derive(Debug)]
pub struct PrioDraw {
    p: IoPriorities,
    state: u64,
    /// Per direction (read, write): each priority of `all` and its latencies.
    pub kept: [Vec<(u16, LatencyHistogram)>; 2],
}

impl PrioDraw {
    pub fn new(p: IoPriorities, seed: u64) -> PrioDraw {
        let kept = [false, true].map(|w| {
            p.all(w)
                .into_iter()
                .map(|v| (v, LatencyHistogram::new()))
                .collect()
        });
        PrioDraw {
            p,
            state: seed | 1,
            kept,
        }
    }

    fn percent(&mut self) -> u32 {
        // xorshift64*: one draw per I/O that has a split.
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        (self.state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32 % 100
    }

    /// The priority of an I/O of `len` bytes (fio's fio_cmdprio_set_ioprio).
    pub fn draw(&mut self, write: bool, len: u32) -> u16 {
        let splits = if write { &self.p.write } else { &self.p.read };
        let Some(s) = splits.iter().find(|s| s.bs.is_none_or(|b| b == len)) else {
            return self.p.default;
        };
        let total: u32 = s.entries.iter().map(|e| u32::from(e.0)).sum();
        if total == 0 {
            return self.p.default;
        }
        let entries = s.entries.clone();
        let r = self.percent();
        if r >= total {
            return self.p.default;
        }
        let mut sum = 0;
        for (perc, prio) in entries {
            sum += u32::from(perc);
            if r < sum {
                return prio;
            }
        }
        self.p.default
    }

    /// An I/O of priority `prio` completed in `latency_ns`.
    pub fn completed(&mut self, write: bool, prio: u16, latency_ns: u64) {
        if let Some((_, h)) = self.kept[usize::from(write)]
            .iter_mut()
            .find(|(p, _)| *p == prio)
        {
            h.record(latency_ns);
        }
    }

    /// The histograms as a measure keeps them: `prio.{read|write}.{index}.{ioprio}`.
    pub fn into_histograms(self) -> Vec<(String, LatencyHistogram)> {
        let mut out = Vec::new();
        for (w, kept) in self.kept.into_iter().enumerate() {
            let dir = if w == 1 { "write" } else { "read" };
            for (i, (p, h)) in kept.into_iter().enumerate() {
                out.push((format!("prio.{dir}.{i:02}.{p}"), h));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_core::spec::PrioSplit;

    /// An ioprio value: the class in bits 13..16, the level in 0..3 (Linux's
    /// `IOPRIO_PRIO_VALUE`; compat's fio::cmdprio makes the job's).
    fn ioprio_value(class: u8, level: u8) -> u16 {
        (u16::from(class) << 13) | u16::from(level)
    }

    /// fio's cmdprio-bssplit.fio advanced split: 25 % of 64 KiB reads at 1/1, 75 % at
    /// 3/2, 1 MiB reads and all writes at the default; shares within 2 % over 20000.
    #[test]
    fn draws_keep_the_split_per_size_and_direction() {
        let p = IoPriorities {
            default: ioprio_value(2, 7),
            read: vec![
                PrioSplit {
                    bs: Some(65536),
                    entries: vec![(25, ioprio_value(1, 1)), (75, ioprio_value(3, 2))],
                },
                PrioSplit {
                    bs: Some(1 << 20),
                    entries: vec![(0, ioprio_value(1, 0))],
                },
            ],
            write: vec![],
        };
        assert_eq!(p.all(false), [0x4007, 0x2001, 0x6002, 0x2000]);
        let mut d = PrioDraw::new(p, 7);
        let n = 20000;
        let count = |d: &mut PrioDraw, write, len, want| {
            (0..n).filter(|_| d.draw(write, len) == want).count() as f64 / n as f64
        };
        assert!((count(&mut d, false, 65536, 0x2001) - 0.25).abs() < 0.02);
        assert!((count(&mut d, false, 65536, 0x6002) - 0.75).abs() < 0.02);
        assert_eq!(count(&mut d, false, 1 << 20, 0x4007), 1.0);
        assert_eq!(count(&mut d, true, 1 << 20, 0x4007), 1.0);
        // cmdprio_percentage=20: one split for every size.
        let p = IoPriorities {
            default: ioprio_value(3, 0),
            read: vec![PrioSplit {
                bs: None,
                entries: vec![(20, ioprio_value(1, 0))],
            }],
            write: vec![],
        };
        let mut d = PrioDraw::new(p, 9);
        assert!((count(&mut d, false, 131072, 0x2000) - 0.20).abs() < 0.02);
        d.completed(false, 0x2000, 1000);
        d.completed(false, 0x6000, 5000);
        let h = d.into_histograms();
        assert_eq!(h[0].0, "prio.read.00.24576");
        assert_eq!(h[1].0, "prio.read.01.8192");
        assert_eq!((h[0].1.count(), h[1].1.count()), (1, 1));
    }
}
