//! The plain kinds a fio job is made of: its I/O engine, its `rw`, what `exitall`
//! stops, and an offset in bytes or a percentage.

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
