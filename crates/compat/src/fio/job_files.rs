//! fio's options about a job's files and its bookkeeping rather than its I/O, and
//! `iodepth_low` at its default:
//! `file_service_type`, `openfiles`, `allow_file_create`, `unlink`,
//! `unlink_each_loop`, `create_fsync`, `create_only`, `pre_read`, `overwrite`, `clocksource`
//! and `stats`. Each is
//! run as fio runs it, said where iolab gets there by another way, or refused in one
//! line where it cannot be honoured.

use super::values::{boolean, number};

/// What these options ask for, as written (checked against the rest of the job when it
/// is planned: [`FileOptions::check`]).
#[derive(Clone, Debug, PartialEq)]
pub struct FileOptions {
    /// fio's openfiles (default: nrfiles, every file open at once).
    pub openfiles: Option<u64>,
    /// fio's allow_file_create=0: a missing file is an error, not made.
    pub no_file_create: bool,
    /// fio's unlink_each_loop.
    pub unlink_each_loop: bool,
    /// fio's pre_read: the files are read into the page cache before the job.
    pub pre_read: bool,
    /// fio's overwrite: a writing job's files are laid out in full first.
    pub overwrite: bool,
    /// fio's iodepth_low (0 or none: iodepth).
    pub iodepth_low: Option<u64>,
    /// fio's create_only: the files are made and laid out, and no I/O runs.
    pub create_only: bool,
    /// fio's file_service_type: how each I/O's file is chosen, and the I/Os on a file
    /// before the next is chosen (its `:N`).
    pub service: (FileServiceKind, u32),
}

/// fio's file_service_type kinds that iolab runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FileServiceKind {
    #[default]
    RoundRobin,
    Sequential,
    Random,
}

impl Default for FileOptions {
    fn default() -> Self {
        FileOptions {
            openfiles: None,
            no_file_create: false,
            unlink_each_loop: false,
            pre_read: false,
            overwrite: false,
            iodepth_low: None,
            create_only: false,
            service: (FileServiceKind::RoundRobin, 1),
        }
    }
}

/// The job's other options the file options are checked against.
#[derive(Clone, Copy, Debug)]
pub struct FileContext {
    /// The queue depth, for an engine that queues (iodepth).
    pub queued: Option<u32>,
    pub nrfiles: u32,
    pub loops: u32,
    /// The files are made in a directory (no filename given).
    pub new_files: bool,
    pub reads: bool,
    pub direct: bool,
}

impl FileOptions {
    /// Applies `key` if it is one of these options: the word to say when the job runs,
    /// if any.
    pub fn apply(
        &mut self,
        key: &str,
        value: Option<&str>,
    ) -> Option<Result<Option<String>, String>> {
        let v = value.map(str::trim);
        Some(match key {
            "file_service_type" => file_service_type(v.unwrap_or_default()).map(|k| {
                self.service = k;
                None
            }),
            "openfiles" => v
                .ok_or_else(|| "needs a value (key=value)".to_string())
                .and_then(number)
                .map(|n| {
                    self.openfiles = Some(n);
                    None
                }),
            "allow_file_create" => boolean(value).map(|b| {
                self.no_file_create = !b;
                None
            }),
            "unlink" => boolean(value).map(|b| {
                Some(if b {
                    "unlink: the files iolab made are removed when the run ends (without --keep), as fio's unlink removes them when the job ends; a file iolab did not make is never removed"
                } else {
                    "unlink=0: the files iolab made are still removed when the run ends unless --keep (fio leaves them)"
                }
                .to_string())
            }),
            "unlink_each_loop" => boolean(value).map(|b| {
                self.unlink_each_loop = b;
                None
            }),
            "create_fsync" => boolean(value).map(|b| {
                (!b).then(|| "create_fsync=0: iolab still fsyncs the files it lays out, before the job and outside its figures".to_string())
            }),
            "iodepth_low" => v
                .ok_or_else(|| "needs a value (key=value)".to_string())
                .and_then(number)
                .map(|n| {
                    self.iodepth_low = Some(n);
                    None
                }),
            "overwrite" => boolean(value).map(|b| {
                self.overwrite = b;
                None
            }),
            "create_only" => boolean(value).map(|b| {
                self.create_only = b;
                None
            }),
            "pre_read" => boolean(value).map(|b| {
                self.pre_read = b;
                None
            }),
            "clocksource" => match v.unwrap_or_default() {
                "gettimeofday" | "clock_gettime" | "cpu" => Ok(Some(
                    "clocksource: iolab times I/Os with its own monotonic clock (clock_gettime), whatever the source named".to_string(),
                )),
                other => Err(format!(
                    "'{other}' is not a clock source: use gettimeofday, clock_gettime or cpu"
                )),
            },
            "stats" => boolean(value).and_then(|b| {
                if b {
                    Ok(None)
                } else {
                    Err("stats=0 (a job left out of the report) is not supported: iolab reports every job".into())
                }
            }),
            _ => return None,
        })
    }

    /// Refuses what cannot be honoured with the job's other options, and says what
    /// iolab does for the rest.
    pub fn check(
        &self,
        job: &FileContext,
        notes: &mut Vec<String>,
    ) -> Result<(), (&'static str, String)> {
        let FileContext {
            queued,
            nrfiles,
            loops,
            new_files,
            reads,
            direct,
        } = *job;
        // fio 3.33 (init.c): 0, or more than iodepth, is iodepth.
        if let (Some(low), Some(depth)) = (self.iodepth_low, queued)
            && low > 0
            && low < u64::from(depth)
        {
            return Err((
                "iodepth_low",
                format!(
                    "{low} below iodepth={depth} is not supported: iolab submits again as each I/O completes (fio's default, iodepth_low=iodepth), where fio would wait for the queue to drain to {low}"
                ),
            ));
        }
        if let Some(n) = self.openfiles
            && n < u64::from(nrfiles)
        {
            return Err((
                "openfiles",
                format!(
                    "{n} open at once with {nrfiles} files is not supported: iolab keeps every file of a clone open (fio's default, openfiles=nrfiles)"
                ),
            ));
        }
        if self.no_file_create && new_files {
            return Err((
                "allow_file_create",
                "0 with files in a directory is not supported: iolab always makes a job's files itself, in DIR/iolab-work; give filename= for a file that exists".into(),
            ));
        }
        if self.unlink_each_loop && loops > 1 {
            return Err((
                "unlink_each_loop",
                "with loops is not supported: iolab keeps a clone's files over its passes (fio removes and makes them again each pass)".into(),
            ));
        }
        if self.unlink_each_loop {
            notes.push("unlink_each_loop: the files iolab made are removed when the run ends (without --keep), as fio's one loop removes them at its end; a file iolab did not make is never removed".into());
        }
        if self.pre_read {
            notes.push(if !reads {
                "pre_read has no effect on a job that does not read".into()
            } else if direct {
                "pre_read: with direct I/O nothing is read into the page cache, as fio's O_DIRECT pre-read reads around it".into()
            } else {
                "pre_read: the files are read once into the page cache before the job, as fio does (iolab in 1 MiB preads, fio in reads of the block size), and not dropped from it (fio clears invalidate)".into()
            });
        }
        Ok(())
    }
}

/// fio 3.33's file_service_type (options.c `str_fst_cb`): `roundrobin`, `sequential` or
/// `random`, with `:N` I/Os a file (fio's default 1; `sequential` ignores it). fio's
/// distributions over the files are refused.
fn file_service_type(v: &str) -> Result<(FileServiceKind, u32), String> {
    let (kind, n) = match v.split_once(':') {
        Some((k, n)) => (k.trim(), Some(n.trim())),
        None => (v, None),
    };
    let name = kind;
    let kind = match kind {
        "roundrobin" => FileServiceKind::RoundRobin,
        "sequential" => FileServiceKind::Sequential,
        "random" => FileServiceKind::Random,
        "zipf" | "pareto" | "normal" | "gauss" => {
            return Err(format!(
                "'{v}' is not supported: iolab chooses files by roundrobin, sequential or random (fio's distributions over the files are not run)"
            ));
        }
        _ => {
            return Err(format!(
                "'{v}' is not a file service type: use roundrobin, sequential or random, with :N for N I/Os a file"
            ));
        }
    };
    let n = match n {
        None => 1,
        Some(n) => match n.parse::<u32>() {
            Ok(n) if n > 0 => n,
            _ => {
                return Err(format!(
                    "'{v}': N in {name}:N must be a whole number of I/Os from 1"
                ));
            }
        },
    };
    Ok((kind, n))
}

/// The directory fio 3.33 puts a job's `filename` in: the one in force when it adds the
/// file (filesetup.c `add_file` joins `directory` and the name, an absolute name too),
/// so a `directory` given after the `filename` does not apply to it. On the command
/// line options apply in order (`--filename=x --directory=d` opens ./x); in a job
/// file fio sorts each section's options first ([`super::jobfile::Section::fio_order`]:
/// `filename` has priority -1), so within a section the `directory` applies in
/// either order, but a job's own `directory` does not move a `[global]` `filename`.
/// None: the name as written.
pub fn filename_directory(section: &super::jobfile::Section) -> Option<String> {
    let mut dir: Option<String> = None;
    let mut joined: Option<Option<String>> = None;
    for o in section.fio_order().into_iter().map(|i| &section.options[i]) {
        match o.key.as_str() {
            "directory" => dir = o.value.clone(),
            "filename" => joined = Some(dir.clone()),
            _ => {}
        }
    }
    joined.flatten()
}

/// fio's file_service_type as the engine runs it: the kind, the I/Os a file (fio's
/// `:N`), and for `random` the step of the clones' seeds of fio's file choice
/// (`super::plan_access::fio_seed_step`). None: fio's default (one I/O a file in turn)
/// or a job of one file, which nothing else changes.
pub(super) fn file_service_of(
    job: &super::job::FioJob,
    spec: &iolab_core::spec::DataSpec,
    seed: u64,
    notes: &mut Vec<String>,
) -> Result<Option<(FileServiceKind, u32, u64)>, super::plan::Refusal> {
    let (kind, n) = job.files.service;
    if kind == FileServiceKind::RoundRobin && n == 1 {
        return Ok(None);
    }
    let key = "file_service_type";
    if job.nrfiles <= 1 {
        notes.push("file_service_type has no effect on a job of one file, as in fio".into());
        return Ok(None);
    }
    if job.seq_add != 0 || job.seq_nr > 1 {
        return Err((
            key,
            format!(
                "with rw={}:N is not supported: iolab chooses files this way only for plain sequences and random orders",
                job.rw.fio_name()
            ),
        ));
    }
    if job.access.percentage_random.is_some() {
        return Err((key, "with percentage_random is not supported".into()));
    }
    if spec.rw.is_mixed() && (!spec.rw.is_random() || spec.write_block_size.is_some()) {
        return Err((
            key,
            "with a mixed job whose reads and writes each keep their own sequence (rw=rw, or bs=R,W of two sizes) is not supported".into(),
        ));
    }
    let step = match kind {
        FileServiceKind::Random => {
            if job.access.random_generator == Some(super::access::RandomGenerator::Tausworthe64) {
                notes.push("file_service_type=random: the files are drawn by fio's 32-bit generator (fio's tausworthe64 draws them in another order, with the same shares)".into());
            }
            super::plan_access::fio_seed_step(job, seed, super::plan_access::FIO_RAND_FILE_OFF)
        }
        _ => 0,
    };
    Ok(Some((kind, n, step)))
}
