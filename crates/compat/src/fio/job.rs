//! A fio job resolved from its options: [`FioJob::from_section`] applies a
//! [`Section`]'s options in fio's order (later ones win, as in fio) and refuses, naming the
//! option and the job, any option iolab does not run. Every accepted option changes
//! what runs or is refused when its value cannot be honoured: none is ignored.

use iolab_core::units::TimeSpan;

use super::access::FioAccess;
use super::error::FioError;
use super::jobfile::Section;
use super::logs::LogOptions;
use super::reporting::{ReportOptions, accepted_word};
use super::values::{boolean, count, every, given, number, percent, size_in, time};

pub use super::job_kinds::{Engine, ExitWhat, FioOffset, FioRw};
use super::job_kinds::{block_sizes, size_or_percent};

/// One fio job with fio's defaults for what it does not set.
#[derive(Clone, Debug, PartialEq)]
pub struct FioJob {
    pub name: String,
    /// Where the job's section starts.
    pub at: String,
    pub rw: FioRw,
    pub rwmix_read: u8,
    /// Read and write block sizes (`bs=4k` or `bs=4k,64k`).
    pub bs_read: u64,
    pub bs_write: u64,
    /// The size of a trim (fio's third `bs=` part): the write size unless a
    /// third, empty part gave fio's default.
    pub bs_trim: u64,
    /// Bytes per job clone (fio's size); None: the file's or device's size.
    pub size: Option<u64>,
    /// `size=N%`: that share of the file's or device's size (after the offset).
    pub size_percent: Option<u8>,
    pub filesize: Option<u64>,
    pub nrfiles: u32,
    pub offset: FioOffset,
    /// fio's offset_increment: clone k's region starts `k` increments after `offset`.
    pub offset_increment: FioOffset,
    pub numjobs: u32,
    pub thread: bool,
    pub iodepth: u32,
    pub iodepth_batch_submit: u32,
    pub engine: Engine,
    pub direct: bool,
    pub sync: bool,
    pub fsync: Option<u64>,
    pub fdatasync: Option<u64>,
    pub end_fsync: bool,
    pub fsync_on_close: bool,
    pub invalidate: bool,
    pub runtime: Option<TimeSpan>,
    pub time_based: bool,
    pub ramp_time: Option<TimeSpan>,
    /// fio's steadystate options: the rule (ss=, default iops_slope:0.01%), its window
    /// (ss_dur; none or 0: off), the time before sampling (ss_ramp) and the sampling
    /// interval (ss_interval, newer fio's; 3.33 samples every second).
    pub ss: Option<iolab_core::steady::SteadyRule>,
    pub ss_dur: Option<TimeSpan>,
    pub ss_ramp: Option<TimeSpan>,
    pub ss_interval: Option<TimeSpan>,
    pub startdelay: Option<TimeSpan>,
    pub randrepeat: bool,
    pub randseed: Option<u64>,
    pub norandommap: bool,
    pub loops: u32,
    /// fio's number_ios: at most this many I/Os per loop (None: 0, no limit).
    pub number_ios: Option<u64>,
    /// fio's io_size (io_limit): bytes a clone moves, apart from the region's size.
    pub io_size: Option<u64>,
    /// fio's exitall (any job's turns it on for every job, whatever its value, as
    /// fio 3.33's callback does), exitall_on_error and exit_what.
    pub exitall: bool,
    pub exitall_on_error: bool,
    pub exit_what: ExitWhat,
    pub create_on_open: bool,
    /// Preallocate the files a job writes (fio's default fallocate=native; none: not).
    pub fallocate: bool,
    pub group_reporting: bool,
    /// `verify=crc32c` and the like: checked on read.
    pub verify: Option<String>,
    /// fio's fadvise_hint (default 1): advise the access pattern when opening files.
    pub fadvise_hint: bool,
    /// fio's do_verify (default 1): a write job with `verify` reads back and checks what
    /// it wrote; a read job checks what it reads.
    pub do_verify: bool,
    /// fio's verify_only: a write job's writes are skipped and its verify read-back
    /// alone checks what an earlier run wrote.
    pub verify_only: bool,
    pub stonewall: bool,
    pub wait_for: Option<String>,
    pub new_group: bool,
    pub filename: Option<String>,
    pub directory: Option<String>,
    /// The directory `filename` is in, as fio joins them (`job_files::filename_directory`).
    pub filename_dir: Option<String>,
    pub filename_format: Option<String>,
    /// fio's `rw=...:N` for a sequential job: bytes added to the next offset after
    /// each I/O (negative: backwards, as `rw=read:-8k`).
    pub seq_add: i64,
    /// fio's `rw=...:N` for a random job: N I/Os in sequence from each random offset.
    pub seq_nr: u32,
    /// fio's `kb_base`: 1024 (its default: `k` is 1024, `KiB` 1000) or 1000 (`k` is
    /// 1000, `KiB` 1024).
    pub kb_base: u64,
    /// unified_rw_reporting and the percentile options.
    pub report: ReportOptions,
    /// fio's log files (write_bw_log, ...).
    pub logs: LogOptions,
    /// fio's options about the job's files (openfiles, allow_file_create, pre_read, ...).
    pub files: super::job_files::FileOptions,
    /// What iolab says of options it accepts as they are (gtod_reduce, nice, ...).
    pub words: Vec<String>,
    /// buffer_compress_percentage, buffer_compress_chunk, dedupe_percentage,
    /// zero_buffers: what written buffers hold.
    pub compress_percentage: u8,
    pub compress_chunk: Option<u64>,
    pub dedupe_percentage: u8,
    pub zero_buffers: bool,
    /// refill_buffers and scramble_buffers as written (None: fio's default).
    pub refill_buffers: Option<bool>,
    pub scramble_buffers: Option<bool>,
    /// fio's buffer_pattern, as written.
    pub buffer_pattern: Option<String>,
    /// Sizes drawn per I/O, offsets and pace (bssplit, random_distribution, rate, ...).
    pub access: FioAccess,
    /// Per-I/O priorities and the default one (cmdprio_*, prioclass, prio).
    pub cmdprio: super::cmdprio::CmdPrio,
    /// The job's own options written with a value, for fio's `"job options"` in JSON
    /// (fio leaves out bare flags such as `thread`, and the globals).
    pub given: Vec<(String, String)>,
    /// The globals in force written with a value, for fio's `"global options"`.
    pub global_given: Vec<(String, String)>,
    /// Where each option was written (key, "file:line" or "command line: --key").
    pub given_at: Vec<(String, String)>,
}

/// fio's default file name pattern.
pub const DEFAULT_FILENAME_FORMAT: &str = "$jobname.$jobnum.$filenum";

impl FioJob {
    /// The job a section describes, its options applied in fio's order.
    pub fn from_section(section: &Section) -> Result<FioJob, FioError> {
        let mut job = FioJob::defaults(&section.name, &section.at);
        for i in section.fio_order() {
            let o = &section.options[i];
            let fail = |m: String| FioError::option(&o.at, &section.name, &o.key, m);
            job.apply(&o.key, o.value.as_deref()).map_err(fail)?;
            if let Some(v) = &o.value {
                let given = if i < section.globals {
                    &mut job.global_given
                } else {
                    &mut job.given
                };
                given.push((o.key.clone(), v.clone()));
            }
            job.given_at.push((o.key.clone(), o.at.clone()));
        }
        job.filename_dir = super::job_files::filename_directory(section);
        Ok(job)
    }

    /// Where option `key` was last written, or where the job starts if it was not.
    pub fn at_of(&self, key: &str) -> &str {
        self.given_at
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map_or(self.at.as_str(), |(_, at)| at.as_str())
    }

    /// Why option `key` of this job cannot run as given, in one line naming where it
    /// was written, the job and the option.
    pub fn refusal(&self, key: &str, message: impl Into<String>) -> FioError {
        FioError::option(self.at_of(key), &self.name, key, message)
    }

    fn apply(&mut self, key: &str, value: Option<&str>) -> Result<(), String> {
        if let Some(r) = self.apply_to_parts(key, value) {
            return r;
        }
        let kb = self.kb_base;
        let groups: [OptionGroup; 9] = [
            FioJob::apply_pattern,
            FioJob::apply_buffers,
            FioJob::apply_amounts,
            FioJob::apply_engine,
            FioJob::apply_syncs,
            FioJob::apply_timing,
            FioJob::apply_control,
            FioJob::apply_verify,
            FioJob::apply_files,
        ];
        for group in groups {
            if group(self, key, value, kb)? {
                return Ok(());
            }
        }
        match self.access.apply(key, value, kb) {
            Some(applied) => applied,
            None => Err(unsupported(key)),
        }
    }

    /// Options that the job's parts take (reporting, logs, priorities, files) or that
    /// iolab accepts with a word to say (prio and prioclass are both: set, then said);
    /// None for the others.
    fn apply_to_parts(&mut self, key: &str, value: Option<&str>) -> Option<Result<(), String>> {
        if let Some(r) = self.report.apply(key, value) {
            return Some(r);
        }
        if let Some(r) = self.logs.apply(key, value, &self.name) {
            return Some(r);
        }
        if let Some(r) = self.cmdprio.apply(key, value, self.kb_base)
            && (r.is_err() || !matches!(key, "prio" | "prioclass"))
        {
            return Some(r);
        }
        let word = match self.files.apply(key, value) {
            Some(r) => r,
            None => accepted_word(key, value)?.map(Some),
        };
        Some(word.map(|word| {
            if let Some(word) = word
                && !self.words.contains(&word)
            {
                self.words.push(word);
            }
        }))
    }

    /// The job's name, its read/write pattern, mix and block sizes, and its random
    /// offsets' seed and map.
    fn apply_pattern(&mut self, key: &str, value: Option<&str>, kb: u64) -> Result<bool, String> {
        match key {
            "name" => self.name = given(value)?.to_string(),
            "rw" | "readwrite" => {
                (self.rw, self.seq_add, self.seq_nr) = FioRw::parse_rw(given(value)?, kb)?;
            }
            "kb_base" => {
                self.kb_base = match given(value)?.trim() {
                    "1024" => 1024,
                    "1000" => 1000,
                    other => return Err(format!("'{other}' is not a kb_base: use 1024 or 1000")),
                }
            }
            "rwmixread" => self.rwmix_read = percent(value)?,
            "rwmixwrite" => self.rwmix_read = 100 - percent(value)?,
            "bs" | "blocksize" => {
                let now = [self.bs_read, self.bs_write, self.bs_trim];
                [self.bs_read, self.bs_write, self.bs_trim] = block_sizes(given(value)?, now, kb)?;
            }
            "randrepeat" => self.randrepeat = boolean(value)?,
            "randseed" => self.randseed = Some(number(given(value)?)?),
            "norandommap" => self.norandommap = boolean(value)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// What written buffers hold.
    fn apply_buffers(&mut self, key: &str, value: Option<&str>, kb: u64) -> Result<bool, String> {
        match key {
            "buffer_compress_percentage" => self.compress_percentage = percent(value)?,
            "buffer_compress_chunk" => {
                let c = size_in(given(value)?, kb)?;
                self.compress_chunk = (c > 0).then_some(c);
            }
            "dedupe_percentage" => self.dedupe_percentage = percent(value)?,
            "zero_buffers" => self.zero_buffers = boolean(value)?,
            "refill_buffers" => self.refill_buffers = Some(boolean(value)?),
            "scramble_buffers" => self.scramble_buffers = Some(boolean(value)?),
            "buffer_pattern" => {
                let p = given(value)?.trim();
                iolab_core::pattern::parse_buffer_pattern(p)?;
                self.buffer_pattern = Some(p.to_string());
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// How much a job moves: sizes, files, offsets, clones, loops and I/O counts.
    fn apply_amounts(&mut self, key: &str, value: Option<&str>, kb: u64) -> Result<bool, String> {
        match key {
            "size" => (self.size, self.size_percent) = size_or_percent(given(value)?, kb)?,
            "filesize" => self.filesize = Some(size_in(given(value)?, kb)?),
            "nrfiles" | "nr_files" => self.nrfiles = count(value, 1)?,
            "offset" => self.offset = FioOffset::parse(given(value)?, kb)?,
            "offset_increment" => self.offset_increment = FioOffset::parse(given(value)?, kb)?,
            "numjobs" => self.numjobs = count(value, 1)?,
            "loops" => self.loops = count(value, 1)?,
            "number_ios" => self.number_ios = every(value)?,
            "io_size" | "io_limit" => {
                let t = given(value)?.trim();
                if t.ends_with('%') {
                    return Err(format!(
                        "'{t}' (a share of the files' size) is not supported: give the bytes to move"
                    ));
                }
                let n = size_in(t, kb)?;
                self.io_size = (n > 0).then_some(n);
            }
            "fill_device" | "fill_fs" => {
                if boolean(value)? {
                    return Err("is not supported: iolab writes the job's size, never until the device or file system is full; give size=".into());
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The engine, its queue depth and threads, and how files are opened and laid out
    /// (O_DIRECT, page cache, hints, preallocation).
    fn apply_engine(&mut self, key: &str, value: Option<&str>, _kb: u64) -> Result<bool, String> {
        match key {
            "thread" => self.thread = boolean(value)?,
            "iodepth" => self.iodepth = count(value, 1)?,
            "iodepth_batch_submit" | "iodepth_batch" => {
                self.iodepth_batch_submit = count(value, 0)?.max(1)
            }
            "ioengine" => self.engine = Engine::parse(given(value)?)?,
            "direct" => self.direct = boolean(value)?,
            "buffered" => self.direct = !boolean(value)?,
            "invalidate" => self.invalidate = boolean(value)?,
            "create_on_open" => self.create_on_open = boolean(value)?,
            "fallocate" => {
                self.fallocate = match given(value)?.trim() {
                    "none" | "0" => false,
                    "native" | "posix" | "1" => true,
                    other => {
                        return Err(format!(
                            "'{other}' is not supported: use native, posix or none"
                        ));
                    }
                }
            }
            "fadvise_hint" => {
                self.fadvise_hint = match value.map(str::trim) {
                    Some("normal") => false,
                    Some("sequential" | "random") => {
                        return Err("an explicit pattern is not supported: use 1 (the job's own pattern, fio's default) or 0".into());
                    }
                    other => boolean(other)?,
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// O_SYNC and the job's fsyncs and fdatasyncs.
    fn apply_syncs(&mut self, key: &str, value: Option<&str>, _kb: u64) -> Result<bool, String> {
        match key {
            "sync" => {
                self.sync = match value.map(str::trim) {
                    Some("sync") => true,
                    Some("none") => false,
                    Some("dsync") => {
                        return Err(
                            "sync=dsync (O_DSYNC) is not supported; use sync=1 (O_SYNC)".into()
                        );
                    }
                    other => boolean(other)?,
                }
            }
            "fsync" => self.fsync = every(value)?,
            "fdatasync" => self.fdatasync = every(value)?,
            "end_fsync" => self.end_fsync = boolean(value)?,
            "fsync_on_close" => self.fsync_on_close = boolean(value)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// When a job runs and for how long: runtime, ramp, steady state, start delay.
    fn apply_timing(&mut self, key: &str, value: Option<&str>, _kb: u64) -> Result<bool, String> {
        match key {
            "runtime" | "timeout" => self.runtime = Some(time(given(value)?)?),
            "time_based" => self.time_based = boolean(value)?,
            "ramp_time" => self.ramp_time = Some(time(given(value)?)?),
            "steadystate" | "ss" => {
                self.ss = Some(
                    iolab_core::steady::SteadyRule::parse(key, given(value)?)
                        .map_err(|e| e.reason)?,
                )
            }
            "steadystate_duration" | "ss_dur" => self.ss_dur = Some(time(given(value)?)?),
            "steadystate_ramp_time" | "ss_ramp" => self.ss_ramp = Some(time(given(value)?)?),
            "steadystate_check_interval" | "ss_interval" => {
                self.ss_interval = Some(time(given(value)?)?)
            }
            "startdelay" => self.startdelay = Some(time(given(value)?)?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// How jobs end and wait for each other, and how they are reported together.
    fn apply_control(&mut self, key: &str, value: Option<&str>, _kb: u64) -> Result<bool, String> {
        match key {
            "exitall" => {
                // fio's str_exitall_cb turns it on whatever the number given.
                if let Some(n) = value {
                    number(n)?;
                }
                self.exitall = true;
            }
            "exitall_on_error" => self.exitall_on_error = boolean(value)?,
            "exit_what" => self.exit_what = ExitWhat::parse(given(value)?)?,
            "group_reporting" => self.group_reporting = boolean(value)?,
            "stonewall" | "wait_for_previous" => self.stonewall = boolean(value)?,
            "wait_for" => self.wait_for = Some(given(value)?.to_string()),
            "new_group" => self.new_group = boolean(value)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Checking what is written or read.
    fn apply_verify(&mut self, key: &str, value: Option<&str>, _kb: u64) -> Result<bool, String> {
        match key {
            "verify" => {
                self.verify = match given(value)?.trim() {
                    "0" | "none" => None,
                    m @ ("crc32c" | "crc32c-intel" | "md5" | "crc32" | "sha256" | "meta"
                    | "pattern") => Some(m.to_string()),
                    other => return Err(format!("'{other}' is not a verify method iolab checks")),
                }
            }
            "do_verify" => self.do_verify = boolean(value)?,
            "verify_only" => self.verify_only = boolean(value)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Where the job's files are and how they are named; its description.
    fn apply_files(&mut self, key: &str, value: Option<&str>, _kb: u64) -> Result<bool, String> {
        match key {
            "filename" => self.filename = Some(given(value)?.to_string()),
            "directory" => self.directory = Some(given(value)?.to_string()),
            // A job's text description: no effect on what it does, in fio either.
            "description" => {}
            "filename_format" => self.filename_format = Some(given(value)?.to_string()),
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// One group of [`FioJob`]'s own options: applies `key` with `value` (sizes read under
/// kb_base `kb`) and says whether the key is the group's.
type OptionGroup = fn(&mut FioJob, &str, Option<&str>, u64) -> Result<bool, String>;

/// Why an option is refused: fio knows it, but iolab does not run it (or it is not
/// fio's at all).
fn unsupported(key: &str) -> String {
    if super::known::is_fio_option(key) {
        format!("fio's option '{key}' is not supported by iolab fio; remove it (nothing was run)")
    } else {
        format!("unknown option '{key}' (nothing was run)")
    }
}

#[cfg(test)]
#[path = "job_tests.rs"]
mod tests;
