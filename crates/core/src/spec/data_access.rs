//! What a [`DataSpec`] says about its I/Os' sizes, offsets and pace, and the checks of
//! those options: one size or a [`SizeMix`] per direction, the unit offsets and shares
//! are counted in, a skewed [`Distribution`](super::access::Distribution), rates and
//! pauses.

use super::access::SizeMix;
use super::data::{DataPattern, DataSpec, Layout, MAX_IO_SIZE, Placement, RandomKind};
use crate::error::SpecError;
use crate::units::ByteCount;

/// The sizes of one direction's I/Os: one size, or a mix drawn per I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoSizes<'a> {
    pub smallest: u64,
    pub largest: u64,
    pub mix: Option<&'a SizeMix>,
}

/// Rate options by name: all I/Os', reads', writes'.
type RateOptions<T> = [(&'static str, Option<T>); 3];

impl DataSpec {
    /// The mix each read and each write is drawn from (`IoDir` order), if any: the
    /// writes' own, or the reads' unless the writes have a size of their own.
    pub fn size_mixes(&self) -> [Option<&SizeMix>; 2] {
        let read = self.block_sizes.as_ref();
        let write = match (&self.write_block_sizes, self.write_block_size) {
            (Some(w), _) => Some(w),
            (None, Some(_)) => None,
            (None, None) => read,
        };
        [read, write]
    }

    /// The sizes of reads and of writes (`IoDir` order).
    pub fn sizes(&self) -> [IoSizes<'_>; 2] {
        let [read_fixed, write_fixed] = self.io_sizes();
        let [read_mix, write_mix] = self.size_mixes();
        let of = |fixed: u64, mix: Option<&'_ SizeMix>| -> (u64, u64) {
            mix.map_or((fixed, fixed), |m| (m.smallest(), m.largest()))
        };
        let (r, w) = (of(read_fixed, read_mix), of(write_fixed, write_mix));
        [
            IoSizes {
                smallest: r.0,
                largest: r.1,
                mix: read_mix,
            },
            IoSizes {
                smallest: w.0,
                largest: w.1,
                mix: write_mix,
            },
        ]
    }

    /// Whether any I/O's size is drawn from a mix.
    pub fn has_size_mix(&self) -> bool {
        self.size_mixes().iter().any(Option::is_some)
    }

    /// What shares are rounded to: whole I/Os of the larger size when each direction has
    /// one size, the unit when sizes are drawn (an I/O near the end of a share is then
    /// drawn among the sizes that fit, as fio does).
    pub fn grain(&self) -> u64 {
        if self.has_size_mix() {
            self.unit()
        } else {
            self.largest_io()
        }
    }

    /// Why every I/O of this spec must have one size, if it must: --verify's blocks,
    /// IOR's transfers, a strided shared file's interleaved blocks.
    pub(super) fn one_size_only(&self) -> Option<&'static str> {
        if self.verify {
            Some("--verify checks blocks of one size")
        } else if self.pattern == DataPattern::IorTimestamp {
            Some("IOR's pattern is written in transfers of one size")
        } else if self.layout == Layout::Shared && self.placement == Placement::Strided {
            Some("a strided shared file interleaves the workers' blocks of one size")
        } else {
            None
        }
    }

    /// Checks the options of sizes, offsets, distributions, rates and pauses.
    pub(super) fn validate_access(&self) -> Result<(), SpecError> {
        self.validate_mixes()?;
        self.validate_distribution()?;
        self.validate_rates()?;
        self.validate_think()
    }

    fn validate_mixes(&self) -> Result<(), SpecError> {
        self.validate_write_sizes()?;
        self.validate_mix_sizes()?;
        self.validate_fixed_sizes_beside_mix()?;
        self.validate_block_align()
    }

    /// --write-block-sizes: not beside --write-block-size, only for a mixed workload.
    fn validate_write_sizes(&self) -> Result<(), SpecError> {
        if self.write_block_sizes.is_some() && self.write_block_size.is_some() {
            return Err(SpecError::new(
                "--write-block-sizes",
                "and --write-block-size both size the writes: give one",
            ));
        }
        if self.write_block_sizes.is_some() && !self.rw.is_mixed() {
            return Err(SpecError::new(
                "--write-block-sizes",
                format!(
                    "only applies to a mixed workload (rw, randrw), not {}: give --block-sizes",
                    self.rw.name()
                ),
            ));
        }
        Ok(())
    }

    /// Each size of a mix: one I/O's most, a multiple of the unit, and a mix allowed.
    fn validate_mix_sizes(&self) -> Result<(), SpecError> {
        let mixes = [
            ("--block-sizes", self.block_sizes.as_ref()),
            ("--write-block-sizes", self.write_block_sizes.as_ref()),
        ];
        let unit = self.unit();
        for (option, mix) in mixes {
            let Some(mix) = mix else { continue };
            for s in mix.sizes() {
                if s > MAX_IO_SIZE {
                    return Err(SpecError::new(
                        option,
                        format!(
                            "{} is more than one read or write can move on Linux (2 GiB - 4 KiB)",
                            ByteCount(s)
                        ),
                    ));
                }
                if !s.is_multiple_of(unit) {
                    return Err(SpecError::new(
                        option,
                        format!(
                            "{} is not a multiple of {}, the smallest size: every size must be (fio would cut it to one)",
                            ByteCount(s),
                            ByteCount(unit)
                        ),
                    ));
                }
            }
            if let Some(why) = self.one_size_only() {
                return Err(SpecError::new(option, format!("draws sizes, and {why}")));
            }
        }
        Ok(())
    }

    /// A direction of one size beside a mix: its size a multiple of the mix's unit.
    fn validate_fixed_sizes_beside_mix(&self) -> Result<(), SpecError> {
        let unit = self.unit();
        if self.has_size_mix() {
            let fixed = ["--block-size", "--write-block-size"];
            for ((option, dir), s) in fixed.iter().zip(["read", "write"]).zip(self.sizes()) {
                if s.mix.is_none() && !s.smallest.is_multiple_of(unit) {
                    return Err(SpecError::new(
                        *option,
                        format!(
                            "the {dir} size {} is not a multiple of {}, the smallest size of the mix",
                            ByteCount(s.smallest),
                            ByteCount(unit)
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// --block-align: above 0, random offsets only, dividing the sizes, not strided.
    fn validate_block_align(&self) -> Result<(), SpecError> {
        if let Some(align) = self.block_align {
            let option = "--block-align";
            if align.get() == 0 {
                return Err(SpecError::new(option, "must be larger than 0"));
            }
            if !self.rw.is_random() {
                return Err(SpecError::new(
                    option,
                    format!("only applies to random offsets, not to {}", self.rw.name()),
                ));
            }
            let smallest = self.unit_of_sizes();
            if !align.get().is_multiple_of(smallest) && !smallest.is_multiple_of(align.get()) {
                return Err(SpecError::new(
                    option,
                    format!(
                        "{align} and the smallest I/O size {} must divide one another",
                        ByteCount(smallest)
                    ),
                ));
            }
            let covers = self.random == RandomKind::FullCoverage;
            if covers && self.sizes().iter().any(|s| s.smallest != align.get()) {
                return Err(SpecError::new(
                    option,
                    format!(
                        "{align} is not the smallest I/O size, so I/Os may overlap and --random full-coverage cannot touch every block once: use --random uniform (fio turns its random map off)"
                    ),
                ));
            }
            if self.layout == Layout::Shared && self.placement == Placement::Strided {
                return Err(SpecError::new(
                    option,
                    "a strided shared file interleaves the workers' blocks of one size",
                ));
            }
        }
        Ok(())
    }

    /// The smallest I/O size of either direction, without --block-align.
    fn unit_of_sizes(&self) -> u64 {
        let [r, w] = self.sizes();
        r.smallest.min(w.smallest)
    }

    fn validate_distribution(&self) -> Result<(), SpecError> {
        let Some(d) = &self.distribution else {
            return Ok(());
        };
        let option = "--distribution";
        if !self.rw.is_random() {
            return Err(SpecError::new(
                option,
                format!("only applies to random offsets, not to {}", self.rw.name()),
            ));
        }
        if self.random == RandomKind::FullCoverage {
            return Err(SpecError::new(
                option,
                format!(
                    "{} draws some blocks more often than others, so it cannot be combined with --random full-coverage (fio turns its random map off too): use --random uniform",
                    d.name()
                ),
            ));
        }
        if self.layout == Layout::Shared && self.placement == Placement::Strided {
            return Err(SpecError::new(
                option,
                "a strided shared file interleaves the workers' blocks: use --placement segmented",
            ));
        }
        Ok(())
    }

    fn validate_rates(&self) -> Result<(), SpecError> {
        self.validate_rate_kinds()?;
        self.validate_rate_sizes()?;
        self.validate_rate_minimums()?;
        self.validate_rate_cycle()
    }

    /// The rates given as (option, value): bytes per second, then I/Os per second, each
    /// all I/Os' first, then reads', then writes'.
    fn rate_options(&self) -> (RateOptions<ByteCount>, RateOptions<u64>) {
        let byte_rates = [
            ("--rate", self.rate),
            ("--read-rate", self.read_rate),
            ("--write-rate", self.write_rate),
        ];
        let io_rates = [
            ("--rate-iops", self.rate_iops),
            ("--read-rate-iops", self.read_rate_iops),
            ("--write-rate-iops", self.write_rate_iops),
        ];
        (byte_rates, io_rates)
    }

    /// One kind of rate (bytes or I/Os), and all I/Os' limit or each direction's, the
    /// latter for a mixed workload only.
    fn validate_rate_kinds(&self) -> Result<(), SpecError> {
        let (byte_rates, io_rates) = self.rate_options();
        let any_bytes = byte_rates.iter().any(|(_, r)| r.is_some());
        let any_ios = io_rates.iter().any(|(_, r)| r.is_some());
        if any_bytes && any_ios {
            return Err(SpecError::new(
                "--rate",
                "and --rate-iops limit the same I/Os: give one kind (fio refuses both too)",
            ));
        }
        let given = |rates: &[(&'static str, bool)]| -> [(&'static str, bool); 3] {
            [rates[0], rates[1], rates[2]]
        };
        let kinds = [
            given(&byte_rates.map(|(o, r)| (o, r.is_some()))),
            given(&io_rates.map(|(o, r)| (o, r.is_some()))),
        ];
        for rates in kinds {
            let per_direction = rates[1..].iter().find(|(_, r)| *r);
            if let Some((option, _)) = per_direction {
                if rates[0].1 {
                    return Err(SpecError::new(
                        *option,
                        format!(
                            "and {} both limit these I/Os: give the limit of all I/Os or each direction's",
                            rates[0].0
                        ),
                    ));
                }
                if !self.rw.is_mixed() {
                    return Err(SpecError::new(
                        *option,
                        format!(
                            "only applies to a mixed workload (rw, randrw), not {}: give {}",
                            self.rw.name(),
                            rates[0].0
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// A byte rate of at least one I/O per second, an I/O rate of at least 1.
    fn validate_rate_sizes(&self) -> Result<(), SpecError> {
        let (byte_rates, io_rates) = self.rate_options();
        let [read_sizes, write_sizes] = self.sizes();
        let smallest = [
            read_sizes.smallest.min(write_sizes.smallest),
            read_sizes.smallest,
            write_sizes.smallest,
        ];
        for ((option, rate), smallest) in byte_rates.iter().zip(smallest) {
            if let Some(r) = rate
                && r.get() < smallest
            {
                return Err(SpecError::new(
                    *option,
                    format!(
                        "{r} per second is less than one I/O of {} per second",
                        ByteCount(smallest)
                    ),
                ));
            }
        }
        for (option, rate) in io_rates {
            if rate == Some(0) {
                return Err(SpecError::new(
                    option,
                    "must be at least 1 (or leave it out)",
                ));
            }
        }
        Ok(())
    }

    /// --rate-min or --rate-iops-min: one of them, above 0, not above the rate it is
    /// held to.
    fn validate_rate_minimums(&self) -> Result<(), SpecError> {
        if self.rate_min.is_some() && self.rate_iops_min.is_some() {
            return Err(SpecError::new(
                "--rate-min",
                "and --rate-iops-min both set a minimum: give one",
            ));
        }
        if self.rate_min.is_some_and(|r| r.get() == 0) || self.rate_iops_min == Some(0) {
            return Err(SpecError::new(
                if self.rate_min.is_some() {
                    "--rate-min"
                } else {
                    "--rate-iops-min"
                },
                "must be above 0 (or leave it out)",
            ));
        }
        let below = |min: Option<u64>, max: [Option<u64>; 3]| {
            min.zip(max.iter().flatten().min().copied())
                .filter(|(min, max)| min > max)
        };
        if let Some((min, max)) = below(
            self.rate_min.map(ByteCount::get),
            [self.rate, self.read_rate, self.write_rate].map(|r| r.map(ByteCount::get)),
        ) {
            return Err(SpecError::new(
                "--rate-min",
                format!(
                    "{} per second is above the rate it is held to ({} per second)",
                    ByteCount(min),
                    ByteCount(max)
                ),
            ));
        }
        if let Some((min, max)) = below(
            self.rate_iops_min,
            [self.rate_iops, self.read_rate_iops, self.write_rate_iops],
        ) {
            return Err(SpecError::new(
                "--rate-iops-min",
                format!("{min} is above the rate it is held to ({max} I/Os per second)"),
            ));
        }
        Ok(())
    }

    /// --rate-cycle of at least 1ms beside a minimum; --rate-process beside a rate.
    fn validate_rate_cycle(&self) -> Result<(), SpecError> {
        if self.rate_cycle.is_some_and(|c| c.nanos().0 < 1_000_000) {
            return Err(SpecError::new("--rate-cycle", "must be at least 1ms"));
        }
        if self.rate_cycle.is_some() && self.rate_min.is_none() && self.rate_iops_min.is_none() {
            return Err(SpecError::new(
                "--rate-cycle",
                "only applies with --rate-min or --rate-iops-min",
            ));
        }
        if self.rate_process != super::RateProcess::Linear && !self.paced() {
            return Err(SpecError::new(
                "--rate-process",
                "only applies with --rate or --rate-iops",
            ));
        }
        Ok(())
    }

    /// Refuses zones of absolute sizes (zoned_abs) that reach past the smallest share
    /// one worker has in one file, `share` bytes: fio ends such a job with an error.
    pub fn check_zones_fit(&self, share: u64) -> Result<(), SpecError> {
        let Some(super::Distribution::ZonedAbs { read, write }) = &self.distribution else {
            return Ok(());
        };
        for zones in [read, write] {
            let cover: u64 = zones.iter().map(|z| z.size.get()).sum();
            if cover > share {
                return Err(SpecError::new(
                    "--distribution",
                    format!(
                        "its zones cover {} but a worker's share of a file is {}",
                        ByteCount(cover),
                        ByteCount(share)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Whether any rate limits the I/Os.
    pub fn paced(&self) -> bool {
        [self.rate, self.read_rate, self.write_rate]
            .iter()
            .any(Option::is_some)
            || [self.rate_iops, self.read_rate_iops, self.write_rate_iops]
                .iter()
                .any(Option::is_some)
    }

    fn validate_think(&self) -> Result<(), SpecError> {
        let think = self.think_time.map(|t| t.nanos());
        if think.is_some_and(|t| t.0 == 0) {
            return Err(SpecError::new("--think-time", "must be longer than 0s"));
        }
        let needs = [
            ("--think-spin", self.think_spin.is_some()),
            ("--think-io-time", self.think_io_time.is_some()),
            ("--think-every", self.think_every != 1),
            (
                "--think-count",
                self.think_count != super::ThinkCount::Complete,
            ),
        ];
        if think.is_none()
            && let Some((option, _)) = needs.iter().find(|(_, given)| *given)
        {
            return Err(SpecError::new(*option, "only applies with --think-time"));
        }
        if self.think_every == 0 {
            return Err(SpecError::new("--think-every", "must be at least 1"));
        }
        if let (Some(spin), Some(t)) = (self.think_spin, self.think_time)
            && spin.nanos() > t.nanos()
        {
            return Err(SpecError::new(
                "--think-spin",
                format!("{spin} is longer than --think-time {t}, which it is part of"),
            ));
        }
        if self.think_io_time.is_some_and(|t| t.nanos().0 == 0) {
            return Err(SpecError::new("--think-io-time", "must be longer than 0s"));
        }
        Ok(())
    }
}
