//! The plain kinds a fio job is made of and how fio writes them: its I/O engine, its
//! `rw` (with its `:N` modifier), its block sizes per direction, what `exitall` stops,
//! a size or offset in bytes or a percentage.

use super::values::size_in;

/// fio's I/O engines iolab runs, and on what.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// psync, pvsync: one I/O at a time per job (iolab's psync backend, pread/pwrite).
    Psync,
    /// sync: lseek, then read/write, one I/O at a time (iolab's sync backend).
    Sync,
    /// io_uring.
    IoUring,
    /// libaio, run on io_uring (the same queue-depth semantics; said in the output).
    Libaio,
    /// null: completes at once, no storage.
    Null,
}

impl Engine {
    pub(super) fn parse(v: &str) -> Result<Engine, String> {
        Ok(match v.trim() {
            "psync" | "pvsync" => Engine::Psync,
            "sync" => Engine::Sync,
            "io_uring" => Engine::IoUring,
            "libaio" => Engine::Libaio,
            "null" => Engine::Null,
            other => {
                return Err(format!(
                    "'{other}' is not an engine iolab runs: use psync, pvsync, sync, io_uring, libaio or null"
                ));
            }
        })
    }

    pub fn fio_name(self) -> &'static str {
        match self {
            Engine::Psync => "psync",
            Engine::Sync => "sync",
            Engine::IoUring => "io_uring",
            Engine::Libaio => "libaio",
            Engine::Null => "null",
        }
    }
}

/// fio's `rw=` values iolab runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FioRw {
    Read,
    Write,
    RandRead,
    RandWrite,
    ReadWrite,
    RandRw,
    Trim,
    RandTrim,
    TrimWrite,
    RandTrimWrite,
}

impl FioRw {
    /// `rw=NAME[:N]`: the workload, and fio's modifier N if one was written.
    pub(super) fn parse_with_modifier(v: &str) -> Result<(FioRw, Option<&str>), String> {
        let (name, modifier) = match v.trim().split_once(':') {
            Some((n, m)) => (n.trim(), Some(m.trim())),
            None => (v.trim(), None),
        };
        Ok((FioRw::parse(name)?, modifier))
    }

    /// `rw=NAME[:N]` as fio reads it: the workload, the bytes a sequential job moves
    /// past each I/O's end (negative: back), and a random job's I/Os per random offset.
    pub(super) fn parse_rw(v: &str, kb_base: u64) -> Result<(FioRw, i64, u32), String> {
        let (rw, modifier) = FioRw::parse_with_modifier(v)?;
        Ok(match modifier {
            None => (rw, 0, 1),
            Some(m) if rw.is_random() => {
                let n = m.parse::<u32>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                    format!("'{m}' after ':' is not a number of I/Os (1 or more)")
                })?;
                (rw, 0, n)
            }
            Some(m) => {
                let (negative, bytes) = match m.strip_prefix('-') {
                    Some(b) => (true, b),
                    None => (false, m),
                };
                let n = i64::try_from(size_in(bytes, kb_base)?)
                    .map_err(|_| format!("'{m}' is too large"))?;
                (rw, if negative { -n } else { n }, 1)
            }
        })
    }

    pub(super) fn parse(v: &str) -> Result<FioRw, String> {
        Ok(match v.trim() {
            "read" => FioRw::Read,
            "write" => FioRw::Write,
            "randread" => FioRw::RandRead,
            "randwrite" => FioRw::RandWrite,
            "rw" | "readwrite" => FioRw::ReadWrite,
            "randrw" => FioRw::RandRw,
            "trim" => FioRw::Trim,
            "randtrim" => FioRw::RandTrim,
            "trimwrite" => FioRw::TrimWrite,
            "randtrimwrite" => FioRw::RandTrimWrite,
            other => {
                return Err(format!(
                    "'{other}' is not a workload iolab runs: use read, write, randread, randwrite, rw, randrw, trim, randtrim, trimwrite or randtrimwrite"
                ));
            }
        })
    }

    pub fn is_random(self) -> bool {
        matches!(self, FioRw::RandRead | FioRw::RandWrite | FioRw::RandRw)
    }

    /// Whether the workload reads (fio's td_read).
    pub fn reads(self) -> bool {
        matches!(
            self,
            FioRw::Read | FioRw::RandRead | FioRw::ReadWrite | FioRw::RandRw
        )
    }

    /// Whether the workload writes (fio's td_write).
    pub fn writes(self) -> bool {
        matches!(
            self,
            FioRw::Write
                | FioRw::RandWrite
                | FioRw::ReadWrite
                | FioRw::RandRw
                | FioRw::TrimWrite
                | FioRw::RandTrimWrite
        )
    }

    pub fn fio_name(self) -> &'static str {
        match self {
            FioRw::Read => "read",
            FioRw::Write => "write",
            FioRw::RandRead => "randread",
            FioRw::RandWrite => "randwrite",
            FioRw::ReadWrite => "rw",
            FioRw::RandRw => "randrw",
            FioRw::Trim => "trim",
            FioRw::RandTrim => "randtrim",
            FioRw::TrimWrite => "trimwrite",
            FioRw::RandTrimWrite => "randtrimwrite",
        }
    }
}

/// fio's `exit_what`: which jobs a job's end stops with `exitall` (or its error with
/// `exitall_on_error`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExitWhat {
    /// The jobs of its reporting group (fio's default).
    #[default]
    Group,
    /// The jobs running at that moment, of every group; the next stonewall's run.
    Stonewall,
    /// Every job, the later stonewalls' too.
    All,
}

impl ExitWhat {
    pub(super) fn parse(v: &str) -> Result<ExitWhat, String> {
        Ok(match v.trim() {
            "group" => ExitWhat::Group,
            "stonewall" => ExitWhat::Stonewall,
            "all" => ExitWhat::All,
            other => {
                return Err(format!(
                    "'{other}' is not an exit_what: use group, stonewall or all"
                ));
            }
        })
    }
}

/// fio's `bs=READ[,WRITE[,TRIM]]` over the sizes in force `now` (read, write, trim): an
/// empty part keeps the read size in force, a missing write size is the read one's, a
/// missing trim size the write one's, an empty one fio's default 4096.
pub(super) fn block_sizes(text: &str, now: [u64; 3], kb_base: u64) -> Result<[u64; 3], String> {
    let size = |t: &str| size_in(t, kb_base);
    let mut parts = text.split(',');
    let read = parts.next().unwrap_or_default();
    let write = parts.next().filter(|w| !w.is_empty());
    let trim = parts.next();
    let r = if read.is_empty() { now[0] } else { size(read)? };
    let w = match write {
        Some(w) => size(w)?,
        None if read.is_empty() => now[1],
        None => r,
    };
    // "bs=8k,32k," leaves trims at fio's default.
    let t = match trim {
        Some("") => 4096,
        Some(t) => size(t)?,
        None => w,
    };
    if r == 0 || w == 0 || t == 0 {
        return Err("must be larger than 0".into());
    }
    Ok([r, w, t])
}

/// fio's `size`: bytes, or a whole percentage from 1 to 100 of the file's size.
pub(super) fn size_or_percent(v: &str, kb_base: u64) -> Result<(Option<u64>, Option<u8>), String> {
    let t = v.trim();
    Ok(match t.strip_suffix('%') {
        Some(p) => {
            let p = p
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|p| (1..=100).contains(p))
                .ok_or_else(|| format!("'{}%' is not a percentage from 1% to 100%", p.trim()))?;
            (None, Some(p))
        }
        None => (Some(size_in(t, kb_base)?), None),
    })
}

/// fio's `offset`: bytes, or a percentage of the file's size (fio aligns it up to the
/// block size; a file fio creates has size 0 then, so the offset is 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FioOffset {
    Bytes(u64),
    Percent(u8),
}

impl std::fmt::Display for FioOffset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FioOffset::Bytes(b) => write!(f, "{b}"),
            FioOffset::Percent(p) => write!(f, "{p}%"),
        }
    }
}

impl FioOffset {
    pub(super) fn parse(v: &str, kb_base: u64) -> Result<FioOffset, String> {
        let t = v.trim();
        match t.strip_suffix('%') {
            Some(p) => p
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= 100)
                .map(FioOffset::Percent)
                .ok_or_else(|| format!("'{t}' is not a percentage from 0% to 100%")),
            None => size_in(t, kb_base).map(FioOffset::Bytes),
        }
    }

    /// The offset in bytes in a file of `file_size` bytes, for blocks of `block`.
    pub fn bytes(self, file_size: u64, block: u64) -> u64 {
        match self {
            FioOffset::Bytes(b) => b,
            FioOffset::Percent(p) => {
                let at = (u128::from(file_size) * u128::from(p) / 100) as u64;
                at.div_ceil(block.max(1)) * block.max(1)
            }
        }
    }
}
