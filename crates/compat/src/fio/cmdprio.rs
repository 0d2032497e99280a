//! fio's per-I/O priorities as fio 3.33 reads them (engines/cmdprio.c, options of its
//! io_uring and libaio engines): `cmdprio_percentage`, `cmdprio_class`, `cmdprio`,
//! `cmdprio_bssplit` (`BS/PERC[/CLASS/LEVEL]:...`, per direction `READ,WRITE`), and
//! `prioclass`/`prio`, the job's default priority; and [`io_priorities`], what a job's
//! I/Os carry once its engine is known.

use iolab_core::spec::{BackendKind, IoPriorities, PrioSplit};

use super::job::FioJob;
use super::plan::Refusal;
use super::values::size_in;

/// One block size's priorities: (percent, ioprio), in order.
pub type PrioEntries = Vec<(u8, u16)>;

/// One direction of cmdprio_bssplit as written: (block size, [(percent, class and
/// level if given)]).
pub type BsPrios = Vec<(u64, Vec<(u8, Option<(u8, u8)>)>)>;

/// The priorities a job asked for, as given.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CmdPrio {
    pub percentage: [Option<u8>; 2],
    pub class: [Option<u8>; 2],
    pub level: [Option<u8>; 2],
    /// Per direction: (block size, [(percent, class and level if given)]).
    pub bssplit: Option<[BsPrios; 2]>,
    pub prioclass: Option<u8>,
    pub prio: Option<u8>,
}

/// An ioprio value (Linux's IOPRIO_PRIO_VALUE; fio's ioprio_value: no class is best
/// effort).
pub fn ioprio(class: u8, level: u8) -> u16 {
    let class = if class == 0 { 2 } else { class };
    (u16::from(class) << 13) | u16::from(level)
}

fn in_range(text: &str, lo: u8, hi: u8, what: &str) -> Result<u8, String> {
    let t = text.trim();
    t.parse::<u8>()
        .ok()
        .filter(|n| (lo..=hi).contains(n))
        .ok_or_else(|| format!("'{t}' is not {what} from {lo} to {hi}"))
}

fn per_dir(text: &str, lo: u8, hi: u8, what: &str) -> Result<[Option<u8>; 2], String> {
    let mut parts = text.split(',');
    let one = |p: &str| -> Result<Option<u8>, String> {
        if p.trim().is_empty() {
            Ok(None)
        } else {
            in_range(p, lo, hi, what).map(Some)
        }
    };
    let read = one(parts.next().unwrap_or_default())?;
    Ok(match parts.next() {
        None => [read, read],
        Some(w) => [read, one(w)?],
    })
}

impl CmdPrio {
    /// Applies option `key` if it is one of these; None when it is not.
    pub fn apply(&mut self, key: &str, value: Option<&str>, kb: u64) -> Option<Result<(), String>> {
        let v = || value.ok_or_else(|| "needs a value (key=value)".to_string());
        let mut r = || -> Result<(), String> {
            match key {
                "cmdprio_percentage" => {
                    self.percentage = per_dir(v()?, 0, 100, "a percentage")?;
                }
                "cmdprio_class" => self.class = per_dir(v()?, 1, 3, "a priority class")?,
                "cmdprio" => self.level = per_dir(v()?, 0, 7, "a priority level")?,
                "cmdprio_bssplit" => {
                    let text = v()?;
                    let mut parts = text.splitn(3, ',');
                    let read = bssplit(parts.next().unwrap_or_default(), kb)?;
                    let write = match parts.next() {
                        None => read.clone(),
                        Some(w) => bssplit(w, kb)?,
                    };
                    self.bssplit = Some([read, write]);
                }
                "prioclass" => self.prioclass = Some(in_range(v()?, 0, 3, "a priority class")?),
                "prio" => self.prio = Some(in_range(v()?, 0, 7, "a priority level")?),
                _ => unreachable!(),
            }
            Ok(())
        };
        match key {
            "cmdprio_percentage" | "cmdprio_class" | "cmdprio" | "cmdprio_bssplit"
            | "prioclass" | "prio" => Some(r()),
            _ => None,
        }
    }

    /// Whether a cmdprio option was given (they need an io_uring or libaio job).
    pub fn per_io(&self) -> bool {
        self.percentage.iter().any(Option::is_some) || self.bssplit.is_some()
    }

    /// The job's default ioprio (0: none) and, per direction (read, write), the splits:
    /// (block size or every size, entries). Err: (option, reason).
    #[allow(clippy::type_complexity)]
    pub fn resolve(
        &self,
        reads: bool,
        writes: bool,
    ) -> Result<(u16, [Vec<(Option<u32>, PrioEntries)>; 2]), (&'static str, String)> {
        if self.percentage.iter().any(Option::is_some) && self.bssplit.is_some() {
            return Err((
                "cmdprio_bssplit",
                "cmdprio_percentage and cmdprio_bssplit are mutually exclusive".into(),
            ));
        }
        let default = if self.prioclass.is_some() || self.prio.is_some() {
            ioprio(self.prioclass.unwrap_or(0), self.prio.unwrap_or(0))
        } else {
            0
        };
        let mut dirs: [Vec<(Option<u32>, PrioEntries)>; 2] = [Vec::new(), Vec::new()];
        for (d, out) in dirs.iter_mut().enumerate() {
            if (d == 0 && !reads) || (d == 1 && !writes) {
                continue;
            }
            // fio's default class is RT (1), its default level 0.
            let implicit = ioprio(self.class[d].unwrap_or(1), self.level[d].unwrap_or(0));
            if let Some(p) = self.percentage[d].filter(|p| *p > 0) {
                out.push((None, vec![(p, implicit)]));
            }
            if let Some(split) = &self.bssplit {
                for (bs, entries) in &split[d] {
                    let total: u32 = entries.iter().map(|e| u32::from(e.0)).sum();
                    if total > 100 {
                        return Err((
                            "cmdprio_bssplit",
                            format!("the shares of {bs} bytes add up to {total}%, over 100%"),
                        ));
                    }
                    let bs = u32::try_from(*bs).map_err(|_| {
                        (
                            "cmdprio_bssplit",
                            format!("{bs} bytes is too large a block size"),
                        )
                    })?;
                    let entries = entries
                        .iter()
                        .map(|(p, cl)| (*p, cl.map_or(implicit, |(c, l)| ioprio(c, l))))
                        .collect();
                    out.push((Some(bs), entries));
                }
            }
        }
        Ok((default, dirs))
    }
}

/// One direction of cmdprio_bssplit: `BS/PERC[/CLASS/LEVEL]` entries, those of one
/// size together (fio's split_parse_prio_ddir).
fn bssplit(text: &str, kb: u64) -> Result<BsPrios, String> {
    let mut out: BsPrios = Vec::new();
    for entry in text.trim().split(':').filter(|e| !e.trim().is_empty()) {
        let parts: Vec<&str> = entry.split('/').collect();
        let (bs, perc, cl) = match parts.as_slice() {
            [bs, p] => (bs, p, None),
            [bs, p, c, l] => (
                bs,
                p,
                Some((
                    in_range(c, 0, 3, "a priority class")?,
                    in_range(l, 0, 7, "a priority level")?,
                )),
            ),
            _ => {
                return Err(format!(
                    "'{entry}' is not BS/PERCENT or BS/PERCENT/CLASS/LEVEL"
                ));
            }
        };
        let bytes = size_in(bs, kb)?;
        let perc = in_range(perc, 0, 100, "a percentage")?;
        match out.iter_mut().find(|(b, _)| *b == bytes) {
            Some((_, v)) => v.push((perc, cl)),
            None => out.push((bytes, vec![(perc, cl)])),
        }
    }
    Ok(out)
}

/// fio's per-I/O priorities, for io_uring (and libaio, which runs on it): each I/O's
/// SQE carries one (fio's io_uring engine sets the default in every SQE).
pub(super) fn io_priorities(
    job: &FioJob,
    backend: BackendKind,
) -> Result<Option<IoPriorities>, Refusal> {
    let c = &job.cmdprio;
    if c.per_io() && backend != BackendKind::Uring {
        let key = if c.bssplit.is_some() {
            "cmdprio_bssplit"
        } else {
            "cmdprio_percentage"
        };
        return Err((
            key,
            format!(
                "is an option of fio's io_uring and libaio engines, not of ioengine={}",
                job.engine.fio_name()
            ),
        ));
    }
    if backend != BackendKind::Uring {
        return Ok(None);
    }
    let (default, [read, write]) = c.resolve(job.rw.reads(), job.rw.writes())?;
    if default == 0 && read.is_empty() && write.is_empty() {
        return Ok(None);
    }
    let splits = |d: Vec<(Option<u32>, PrioEntries)>| {
        d.into_iter()
            .map(|(bs, entries)| PrioSplit { bs, entries })
            .collect()
    };
    Ok(Some(IoPriorities {
        default,
        read: splits(read),
        write: splits(write),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fio's cmdprio-bssplit.fio and cmdprio-percentage.fio, as fio reads them.
    #[test]
    fn fios_examples_resolve_to_their_priorities() {
        let mut c = CmdPrio::default();
        for (k, v) in [
            ("cmdprio_bssplit", "64k/25/1/1:64k/75/3/2:1024k/0,1024k/0"),
            ("prioclass", "2"),
            ("prio", "7"),
        ] {
            c.apply(k, Some(v), 1024).unwrap().unwrap();
        }
        let (default, dirs) = c.resolve(true, true).unwrap();
        assert_eq!(default, 0x4007);
        assert_eq!(
            dirs[0],
            [
                (Some(65536), vec![(25, 0x2001), (75, 0x6002)]),
                (Some(1 << 20), vec![(0, 0x2000)])
            ]
        );
        assert_eq!(dirs[1], [(Some(1 << 20), vec![(0, 0x2000)])]);
        let mut c = CmdPrio::default();
        for (k, v) in [
            ("cmdprio_percentage", "20"),
            ("cmdprio_class", "1"),
            ("prioclass", "3"),
        ] {
            c.apply(k, Some(v), 1024).unwrap().unwrap();
        }
        let (default, dirs) = c.resolve(true, false).unwrap();
        assert_eq!(default, 0x6000);
        assert_eq!(dirs, [vec![(None, vec![(20, 0x2000)])], vec![]]);
        // Bad input, one line each.
        let bad = |k: &str, v: &str| {
            CmdPrio::default()
                .apply(k, Some(v), 1024)
                .unwrap()
                .unwrap_err()
        };
        assert_eq!(
            bad("cmdprio_percentage", "120"),
            "'120' is not a percentage from 0 to 100"
        );
        assert_eq!(
            bad("cmdprio_class", "4"),
            "'4' is not a priority class from 1 to 3"
        );
        assert_eq!(
            bad("cmdprio_bssplit", "64k/25/1"),
            "'64k/25/1' is not BS/PERCENT or BS/PERCENT/CLASS/LEVEL"
        );
        let mut c = CmdPrio::default();
        c.apply("cmdprio_bssplit", Some("4k/60:4k/50"), 1024)
            .unwrap()
            .unwrap();
        assert_eq!(
            c.resolve(true, true).unwrap_err().1,
            "the shares of 4096 bytes add up to 110%, over 100%"
        );
    }
}
