//! What a [`DataSpec`] must satisfy before anything looks at the target: block sizes,
//! sizes and offsets, rates, verify, steady state, data reduction and the write block
//! size, each refusal naming the option.

use super::data::{DataPattern, DataSpec, MAX_IO_SIZE};
use crate::error::SpecError;
use crate::pattern::VERIFY_MIN_BLOCK;
use crate::units::ByteCount;

impl DataSpec {
    /// Checks what can be checked without looking at the target.
    pub fn validate(&self) -> Result<(), SpecError> {
        self.validate_block_sizes()?;
        self.validate_write_block_size()?;
        crate::spec::validate_threads(self.threads)?;
        self.validate_queue()?;
        self.validate_access()?;
        self.validate_verify_block()?;
        self.validate_reduction()?;
        self.validate_steady()?;
        self.validate_verify_trim()?;
        self.validate_sizes()?;
        self.validate_spans()?;
        if let Some(cpus) = &self.cpus
            && cpus.0.is_empty()
        {
            return Err(SpecError::new("--cpus", "names no CPU"));
        }
        Ok(())
    }

    /// --block-size above 0; neither size more than one I/O can move.
    fn validate_block_sizes(&self) -> Result<(), SpecError> {
        if self.block_size.get() == 0 {
            return Err(SpecError::new("--block-size", "must be larger than 0"));
        }
        let sizes = [("--block-size", Some(self.block_size))]
            .into_iter()
            .chain([("--write-block-size", self.write_block_size)]);
        for (option, size) in sizes {
            if let Some(s) = size.filter(|s| s.get() > MAX_IO_SIZE) {
                return Err(SpecError::new(
                    option,
                    format!(
                        "{s} is more than one read or write can move on Linux (2 GiB - 4 KiB, {MAX_IO_SIZE} bytes)"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// --queue-depth between 1 and 4096, --submit-batch within it, --fsync-every of 1
    /// at least.
    fn validate_queue(&self) -> Result<(), SpecError> {
        if self.queue_depth == 0 {
            return Err(SpecError::new("--queue-depth", "must be at least 1"));
        }
        if self.queue_depth > 4096 {
            return Err(SpecError::new(
                "--queue-depth",
                format!("{} is more than the 4096 iolab supports", self.queue_depth),
            ));
        }
        if self.submit_batch == 0 || self.submit_batch > self.queue_depth.max(1) {
            return Err(SpecError::new(
                "--submit-batch",
                format!(
                    "must be between 1 and the queue depth ({}), not {}",
                    self.queue_depth, self.submit_batch
                ),
            ));
        }
        if self.fsync_every == Some(0) {
            return Err(SpecError::new(
                "--fsync-every",
                "must be at least 1 (or leave it out)",
            ));
        }
        Ok(())
    }

    /// --verify with iolab's pattern: a block that holds its header.
    fn validate_verify_block(&self) -> Result<(), SpecError> {
        if self.verify
            && self.pattern == DataPattern::Iolab
            && self.block_size.get() < VERIFY_MIN_BLOCK
        {
            return Err(SpecError::new(
                "--verify",
                format!(
                    "needs a --block-size of at least {VERIFY_MIN_BLOCK} bytes to hold its header, not {}",
                    self.block_size
                ),
            ));
        }
        Ok(())
    }

    /// --verify: not of a trimming workload.
    fn validate_verify_trim(&self) -> Result<(), SpecError> {
        if self.verify && self.rw.trims() {
            return Err(SpecError::new(
                "--verify",
                format!(
                    "cannot check a {} workload: a trimmed block holds no data to check",
                    self.rw.name()
                ),
            ));
        }
        Ok(())
    }

    /// --size and --total-size: one block at least.
    fn validate_sizes(&self) -> Result<(), SpecError> {
        for (name, size) in [("--size", self.size), ("--total-size", self.total_size)] {
            if let Some(s) = size
                && s.get() < self.grain()
            {
                return Err(SpecError::new(
                    name,
                    format!(
                        "{s} is smaller than one block of {}",
                        ByteCount(self.grain())
                    ),
                ));
            }
        }
        Ok(())
    }

    /// --runtime and --stonewall: longer than 0s, not both; --wear-out beside a
    /// stonewall.
    fn validate_spans(&self) -> Result<(), SpecError> {
        for (option, span) in [("--runtime", self.runtime), ("--stonewall", self.stonewall)] {
            if span.is_some_and(|t| t.nanos().0 == 0) {
                return Err(SpecError::new(option, "must be longer than 0s"));
            }
        }
        if self.runtime.is_some() && self.stonewall.is_some() {
            return Err(SpecError::new(
                "--stonewall",
                "cannot be combined with --runtime (a time-based run already stops at its runtime)",
            ));
        }
        if self.wear_out && self.stonewall.is_none() {
            return Err(SpecError::new(
                "--wear-out",
                "only applies to a run with --stonewall",
            ));
        }
        Ok(())
    }

    fn validate_steady(&self) -> Result<(), SpecError> {
        let Some(s) = self.steady() else {
            return Ok(());
        };
        if s.interval.nanos().0 < 100_000_000 {
            return Err(SpecError::new(
                "--steady-interval",
                format!(
                    "{} is shorter than 100ms, how often a phase looks at its figures",
                    s.interval
                ),
            ));
        }
        if s.window.nanos().0 < 2 * s.interval.nanos().0 {
            return Err(SpecError::new(
                "--steady-window",
                format!(
                    "{} holds fewer than two samples of {} (a window needs two at least)",
                    s.window, s.interval
                ),
            ));
        }
        Ok(())
    }

    /// Data reduction and buffer contents: ratios of 1 or more, only for writes of
    /// iolab's own pattern (a verify block or IOR's words are what they are); a buffer
    /// pattern alone; a pattern --verify can check; a dedupe unit of whole 512-byte blocks.
    fn validate_reduction(&self) -> Result<(), SpecError> {
        self.validate_ratios()?;
        self.validate_buffer_pattern()?;
        if self.verify && self.pattern == DataPattern::Zeros {
            return Err(SpecError::new(
                "--pattern",
                "zeros cannot be verified: every block is the same",
            ));
        }
        if self.verify && self.pattern.is_fio() {
            return Err(SpecError::new(
                "--pattern",
                "fio's data cannot be verified: its buffers hold no block's place (use --pattern iolab with --verify)",
            ));
        }
        if self.compress_chunk.is_some_and(|c| c.get() == 0) {
            return Err(SpecError::new("--compress-chunk", "must be larger than 0"));
        }
        self.validate_dedupe_unit()
    }

    /// --compress-ratio and --dedupe-ratio: 1 to 1000, for writes of iolab's pattern.
    fn validate_ratios(&self) -> Result<(), SpecError> {
        for (option, ratio) in [
            ("--compress-ratio", self.compress_ratio),
            ("--dedupe-ratio", self.dedupe_ratio),
        ] {
            let Some(r) = ratio else { continue };
            if !r.is_finite() {
                return Err(SpecError::new(
                    option,
                    format!("{r} is not a ratio (a number of 1 or more)"),
                ));
            }
            if r < 1.0 {
                return Err(SpecError::new(
                    option,
                    format!(
                        "{r} is below 1: the ratio is the bytes written over the bytes stored (1 = no reduction, 2 = half)"
                    ),
                ));
            }
            if r > 1000.0 {
                return Err(SpecError::new(
                    option,
                    format!("{r} is more than the 1000 iolab builds data for"),
                ));
            }
            if !self.rw.writes() {
                return Err(SpecError::new(
                    option,
                    format!(
                        "only applies to a workload that writes, not {}",
                        self.rw.name()
                    ),
                ));
            }
            let why = if self.verify {
                Some("--verify writes self-checking blocks")
            } else if self.pattern != DataPattern::Iolab {
                Some("--pattern decides what the blocks hold")
            } else {
                None
            };
            if let Some(why) = why {
                return Err(SpecError::new(option, format!("cannot be combined: {why}")));
            }
        }
        Ok(())
    }

    /// --buffer-pattern: a pattern fio would take, for writes, with nothing else deciding
    /// what the blocks hold.
    fn validate_buffer_pattern(&self) -> Result<(), SpecError> {
        if let Some(p) = &self.buffer_pattern {
            let bad = |why: String| SpecError::new("--buffer-pattern", why);
            crate::pattern::parse_buffer_pattern(p).map_err(bad)?;
            if !self.rw.writes() {
                return Err(bad(format!(
                    "only applies to a workload that writes, not {}",
                    self.rw.name()
                )));
            }
            let other = [
                (self.compress_ratio.is_some(), "--compress-ratio"),
                (self.dedupe_ratio.is_some(), "--dedupe-ratio"),
                (self.verify, "--verify"),
                (self.pattern != DataPattern::Iolab, "--pattern"),
            ];
            if let Some((_, o)) = other.iter().find(|(on, _)| *on) {
                return Err(bad(format!(
                    "cannot be combined with {o}: every write carries the pattern alone"
                )));
            }
        }
        Ok(())
    }

    /// --dedupe-unit: whole 512-byte blocks, no larger than the smallest write.
    fn validate_dedupe_unit(&self) -> Result<(), SpecError> {
        if let Some(unit) = self.dedupe_unit {
            let bad = |why: String| SpecError::new("--dedupe-unit", why);
            if unit.get() == 0 || !unit.get().is_multiple_of(512) {
                return Err(bad(format!(
                    "{unit} is not a multiple of 512 bytes (the smallest block storage compares)"
                )));
            }
            let smallest = self.sizes()[1].smallest;
            if unit.get() > smallest {
                return Err(bad(format!(
                    "{unit} is larger than the block size {}: a write holds whole units (give --dedupe-unit {} or less)",
                    ByteCount(smallest),
                    ByteCount(smallest)
                )));
            }
        }
        Ok(())
    }

    /// Writes of their own size: only in a mixed workload, a multiple or a divisor of
    /// the read size, and not where blocks of one size are assumed (a strided shared
    /// file, --verify's blocks, IOR's words).
    fn validate_write_block_size(&self) -> Result<(), SpecError> {
        let Some(w) = self.write_block_size else {
            return Ok(());
        };
        let option = "--write-block-size";
        let r = self.block_size.get();
        if w.get() == 0 {
            return Err(SpecError::new(option, "must be larger than 0"));
        }
        if w.get() == r {
            return Ok(());
        }
        if !self.rw.is_mixed() {
            return Err(SpecError::new(
                option,
                format!(
                    "only applies to a mixed workload (rw, randrw), not {}: give --block-size {w}",
                    self.rw.name()
                ),
            ));
        }
        // Against a mix of read sizes, the mix's checks apply (every size a multiple of
        // the smallest).
        if self.block_sizes.is_none() && !w.get().is_multiple_of(r) && !r.is_multiple_of(w.get()) {
            return Err(SpecError::new(
                option,
                format!(
                    "{w} and the read size {} must divide one another (4KiB and 64KiB, not 4KiB and 6KiB)",
                    self.block_size
                ),
            ));
        }
        match self.one_size_only() {
            Some(why) => Err(SpecError::new(
                option,
                format!("differs from --block-size, and {why}"),
            )),
            None => Ok(()),
        }
    }
}
