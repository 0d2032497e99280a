//! A job's sizes, offsets and pace ([`FioAccess`]) as the workload's options, with fio's
//! rules where its own are looser than iolab's: a bssplit's shares completed as fio
//! completes them, fio's rate of one job clone made the rate of all of a job's workers,
//! rate_iops with drawn sizes paced by bytes at the smallest size (as fio paces it), and
//! what fio ignores dropped with a note.

use iolab_core::spec::access::SizeShare;
use iolab_core::spec::{DataSpec, RandomKind, RateProcess, SizeMix};
use iolab_core::units::{ByteCount, TimeSpan};

use super::access::{RandomGenerator, RawSplit};
use super::job::FioJob;

type Refusal = (&'static str, String);

/// fio's bssplit for one direction as the split it runs: a share over 100 % refused
/// (fio would take it as 100 %), shares adding up to more than 100 % refused (fio would
/// give the later sizes less than asked), blanks sharing what the others leave in whole
/// percents, and what is still missing going to the size with the largest share (the
/// last after fio's sort by share), as fio's draw gives it.
fn fio_split(raw: &RawSplit, notes: &mut Vec<String>) -> Result<SizeMix, String> {
    let name = |b: u64| ByteCount(b).to_string();
    if let Some((b, p)) = raw.iter().find(|(_, p)| p.is_some_and(|p| p > 100)) {
        return Err(format!(
            "{} has a share of {}%, over 100% (fio would take it as 100%)",
            name(*b),
            p.unwrap_or(0)
        ));
    }
    let sum: u32 = raw.iter().filter_map(|(_, p)| *p).sum();
    if sum > 100 {
        return Err(format!(
            "the shares add up to {sum}%, over 100% (fio would give the last sizes less than asked)"
        ));
    }
    let blanks = raw.iter().filter(|(_, p)| p.is_none()).count() as u32;
    let mut shares: Vec<u32> = raw
        .iter()
        .map(|(_, p)| match p {
            Some(p) => *p,
            None if raw.len() == 1 => 100,
            None => (100 - sum) / blanks,
        })
        .collect();
    let total: u32 = shares.iter().sum();
    if total < 100 {
        // fio's draw ends on the last size of its sort by share (stable: ties keep order).
        let mut order: Vec<usize> = (0..shares.len()).collect();
        order.sort_by_key(|&i| shares[i]);
        let last = *order.last().unwrap_or(&0);
        shares[last] += 100 - total;
        notes.push(format!(
            "bssplit: the shares add up to {total}%; as in fio, {} (the largest share) takes the other {}%",
            name(raw[last].0),
            100 - total
        ));
    }
    if let Some(i) = shares.iter().position(|p| *p == 0) {
        return Err(format!(
            "{} is left no share (0%): remove it",
            name(raw[i].0)
        ));
    }
    Ok(SizeMix::Split(
        raw.iter()
            .zip(shares)
            .map(|((b, _), p)| SizeShare {
                size: ByteCount(*b),
                percent: p as u8,
            })
            .collect(),
    ))
}

/// Each direction's mix (read, write), if its sizes are drawn.
fn mixes(job: &FioJob, notes: &mut Vec<String>) -> Result<[Option<SizeMix>; 2], Refusal> {
    let a = &job.access;
    let mut out = [None, None];
    for (d, mix) in out.iter_mut().enumerate() {
        *mix = match (&a.bssplit[d], a.bsrange[d]) {
            (Some(split), _) => Some(fio_split(split, notes).map_err(|m| ("bssplit", m))?),
            (None, Some((lo, hi))) if lo != hi => Some(SizeMix::Range {
                min: ByteCount(lo),
                max: ByteCount(hi),
            }),
            _ => None,
        };
    }
    Ok(out)
}

/// The directions whose sizes and rates a job takes (`IoDir` order; trims take the
/// reads', as the engine sizes them).
fn directions(spec: &DataSpec) -> Vec<usize> {
    match (spec.rw.reads(), spec.rw.writes()) {
        (true, true) => vec![0, 1],
        (false, true) => vec![1],
        _ => vec![0],
    }
}

/// Sets what `job.access` asks of `spec` (planned from the job's other options).
pub(super) fn apply_access(
    job: &FioJob,
    spec: &mut DataSpec,
    notes: &mut Vec<String>,
) -> Result<(), Refusal> {
    let [read_mix, write_mix] = mixes(job, notes)?;
    let dirs = directions(spec);
    if spec.rw.is_mixed() {
        if write_mix != read_mix {
            match &write_mix {
                Some(w) => spec.write_block_sizes = Some(w.clone()),
                None => spec.write_block_size = Some(ByteCount(job.bs_write)),
            }
        }
        spec.block_sizes = read_mix;
    } else {
        spec.block_sizes = if dirs == [1] { write_mix } else { read_mix };
    }
    if spec.write_block_size == Some(spec.block_size) && spec.block_sizes.is_none() {
        spec.write_block_size = None;
    }
    offsets(job, spec, &dirs, notes)?;
    pace(job, spec, &dirs, notes)?;
    think(job, spec, notes);
    Ok(())
}

fn offsets(
    job: &FioJob,
    spec: &mut DataSpec,
    dirs: &[usize],
    notes: &mut Vec<String>,
) -> Result<(), Refusal> {
    let a = &job.access;
    let smallest = spec.sizes().map(|s| s.smallest);
    if a.blockalign.iter().any(Option::is_some) {
        let align: Vec<u64> = dirs
            .iter()
            .map(|&d| a.blockalign[d].unwrap_or(smallest[d]))
            .collect();
        if !spec.rw.is_random() {
            notes.push(format!(
                "blockalign has no effect on rw={} (fio aligns random offsets only)",
                job.rw.fio_name()
            ));
        } else if align.iter().any(|x| *x != align[0]) {
            return Err((
                "blockalign",
                "a different alignment for reads and writes is not supported".into(),
            ));
        } else if dirs.iter().any(|&d| smallest[d] != align[0]) {
            spec.block_align = Some(ByteCount(align[0]));
            if spec.random == RandomKind::FullCoverage {
                spec.random = RandomKind::Uniform;
                notes.push(
                    "blockalign turns fio's random map off (norandommap): blocks may be drawn twice"
                        .into(),
                );
            }
        }
    }
    match a.random_generator {
        Some(RandomGenerator::Lfsr) if spec.rw.is_random() => {
            spec.random = RandomKind::FullCoverage;
            notes.push(
                "random_generator=lfsr: every block once per pass without a map, as fio's LFSR (in iolab's own order)"
                    .into(),
            );
        }
        Some(g @ (RandomGenerator::Tausworthe | RandomGenerator::Tausworthe64)) => {
            let name = if g == RandomGenerator::Tausworthe {
                "tausworthe"
            } else {
                "tausworthe64"
            };
            notes.push(format!(
                "random_generator={name}: offsets come from iolab's own 64-bit generator (xoshiro256++) by fio's rules"
            ));
        }
        _ => {}
    }
    if let Some(d) = &a.random_distribution {
        if spec.rw.is_random() {
            spec.distribution = Some(d.clone());
            // fio: "a non-uniform random distribution excludes a random map".
            spec.random = RandomKind::Uniform;
        } else {
            notes.push(format!(
                "random_distribution has no effect on rw={} (fio draws it for random offsets only)",
                job.rw.fio_name()
            ));
        }
    }
    Ok(())
}

/// fio 3.33's multiplier between its seeds (init.c `setup_random_seeds`).
const FIO_SEED_STEP: u64 = 0x9e37_0001;

/// fio 3.33's index of the seed of `percentage_random`'s choice
/// (FIO_RAND_SEQ_RAND_READ_OFF), of `file_service_type=random`'s (FIO_RAND_FILE_OFF) and
/// of a mixed job's read or write (FIO_RAND_MIX_OFF).
pub(super) const FIO_RAND_SEQ_RAND_READ_OFF: u32 = 10;
pub(super) const FIO_RAND_FILE_OFF: u32 = 5;
pub(super) const FIO_RAND_MIX_OFF: u32 = 4;
/// fio 3.33's index of the reads' size draw seed (FIO_RAND_BS_OFF; the writes' is next).
pub(super) const FIO_RAND_BS_OFF: u32 = 0;

/// The step of fio's seeds number `index` of a job's clones (init.c
/// `setup_random_seeds`): clone thread number n's seed is `step * n + index`. `seed` is
/// the spec's (randrepeat=0, no randseed); allrandrepeat gives fio's fixed seeds
/// whatever those say.
pub(super) fn fio_seed_step(job: &FioJob, seed: u64, index: u32) -> u64 {
    if job.access.allrandrepeat {
        // td_fill_rand_seeds: FIO_RANDSEED times the thread number, plus the seed's index.
        return 0xb189_9bed;
    }
    // fio's seed of its options (randseed, 0x89 by default) times the step 4 times, and
    // once per seed before this one.
    let base = match (job.randseed, job.randrepeat) {
        (Some(s), _) => s,
        (None, true) => 0x89,
        (None, false) => seed,
    };
    (0..4 + index).fold(base, |s, _| s.wrapping_mul(FIO_SEED_STEP))
}

/// fio's percentage_random as the engine runs it: the random share of reads and writes
/// and the step of fio's choice seeds (clone n's is `step * n + 10`, fio's
/// `rand_seeds[FIO_RAND_SEQ_RAND_READ_OFF]` for thread number n); None when every I/O is
/// random (fio's 100 draws nothing). `seed` is the spec's (randrepeat=0, no randseed);
/// allrandrepeat gives fio's fixed seeds whatever those say.
pub(super) fn random_share_of(
    job: &FioJob,
    spec: &DataSpec,
    seed: u64,
    notes: &mut Vec<String>,
) -> Result<Option<([u8; 2], u64)>, Refusal> {
    let Some([r, w, _]) = job.access.percentage_random else {
        return Ok(None);
    };
    let key = "percentage_random";
    if !spec.rw.is_random() {
        notes.push(format!(
            "percentage_random has no effect on rw={} (every I/O is sequential, as in fio)",
            job.rw.fio_name()
        ));
        return Ok(None);
    }
    let percent = [r, w];
    if directions(spec).iter().all(|&d| percent[d] == 100) {
        return Ok(None);
    }
    if spec.rw.trims() {
        return Err((
            key,
            format!("with rw={} (trims) is not supported", job.rw.fio_name()),
        ));
    }
    if spec.verify {
        return Err((key, "with verify is not supported: the read-back follows the writes' offsets, which overlap".into()));
    }
    if job.access.zonemode_strided {
        return Err((key, "with zonemode=strided is not supported".into()));
    }
    let step = fio_seed_step(job, seed, FIO_RAND_SEQ_RAND_READ_OFF);
    notes.push(format!(
        "percentage_random={r},{w}: each I/O random or sequential as fio 3.33 chooses (its generator and seeds); the random ones from iolab's own generator"
    ));
    Ok(Some((percent, step)))
}

/// A direction's rate as iolab paces it: I/Os or bytes per second of one job clone.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Rate {
    Ios(u64),
    Bytes(u64),
}

/// fio's rate options of the job's directions as the spec's rates and minimums.
fn pace(
    job: &FioJob,
    spec: &mut DataSpec,
    dirs: &[usize],
    notes: &mut Vec<String>,
) -> Result<(), Refusal> {
    let a = &job.access;
    let given = |v: &[Option<u64>; 2]| dirs.iter().any(|&d| v[d].is_some());
    if given(&a.rate) && given(&a.rate_iops) {
        return Err((
            "rate_iops",
            "and rate are mutually exclusive (fio refuses them together)".into(),
        ));
    }
    let rates = direction_rates(job, spec, dirs)?;
    if rates.iter().any(Option::is_some) {
        set_rates(job, spec, dirs, rates, notes);
    }
    pace_minimums(job, spec, dirs)
}

/// Each direction's rate of one job clone, as iolab paces it.
fn direction_rates(
    job: &FioJob,
    spec: &DataSpec,
    dirs: &[usize],
) -> Result<[Option<Rate>; 2], Refusal> {
    let a = &job.access;
    let sizes = spec.sizes().map(|s| (s.smallest, s.mix.is_some()));
    let poisson = a.rate_process == RateProcess::Poisson;
    let mut rates: [Option<Rate>; 2] = [None, None];
    for &d in dirs {
        let (smallest, drawn) = sizes[d];
        rates[d] = match (a.rate[d], a.rate_iops[d]) {
            // fio's Poisson gaps are per I/O, at the rate's I/Os of the smallest size.
            (Some(b), _) if poisson => Some(Rate::Ios(b / smallest)),
            (Some(b), _) => Some(Rate::Bytes(b)),
            // fio paces rate_iops by bytes at the smallest size.
            (None, Some(n)) if drawn && !poisson => Some(Rate::Bytes(n * smallest)),
            (None, Some(n)) => Some(Rate::Ios(n)),
            (None, None) => None,
        };
        if rates[d] == Some(Rate::Ios(0)) {
            return Err((
                "rate",
                format!(
                    "{} per second is less than one I/O of {} per second",
                    ByteCount(a.rate[d].unwrap_or(0)),
                    ByteCount(smallest)
                ),
            ));
        }
    }
    Ok(rates)
}

/// The spec's rates of all the job's workers from one clone's `rates`: bytes per second
/// if any direction is paced by bytes, else I/Os per second; each direction's for a
/// mixed workload, else all I/Os'.
fn set_rates(
    job: &FioJob,
    spec: &mut DataSpec,
    dirs: &[usize],
    rates: [Option<Rate>; 2],
    notes: &mut Vec<String>,
) {
    let a = &job.access;
    let clones = u64::from(spec.threads.max(1));
    let sizes = spec.sizes().map(|s| (s.smallest, s.mix.is_some()));
    let bytes = rates.iter().flatten().any(|r| matches!(r, Rate::Bytes(_)));
    let per_second = |d: usize| -> Option<u64> {
        rates[d].map(|r| match r {
            Rate::Bytes(b) => b * clones,
            // One size (linear), or bytes elsewhere: the same pace in bytes.
            Rate::Ios(n) if bytes => n * sizes[d].0 * clones,
            Rate::Ios(n) => n * clones,
        })
    };
    let [r, w] = [per_second(0), per_second(1)];
    let (total, read, write) = if spec.rw.is_mixed() {
        (None, r, w)
    } else {
        (r.or(w), None, None)
    };
    if bytes {
        (spec.rate, spec.read_rate, spec.write_rate) = (
            total.map(ByteCount),
            read.map(ByteCount),
            write.map(ByteCount),
        );
    } else {
        (spec.rate_iops, spec.read_rate_iops, spec.write_rate_iops) = (total, read, write);
    }
    spec.rate_process = a.rate_process;
    if a.rate_process == RateProcess::Poisson && dirs.iter().any(|&d| sizes[d].1) {
        notes.push(
            "rate_process=poisson with drawn sizes: one gap per I/O at the rate's I/Os of the smallest size, as fio spaces them"
                .into(),
        );
    }
}

/// rate_min and rate_iops_min (one value for the job's directions) as the minimum of all
/// its workers, with rate_cycle.
fn pace_minimums(job: &FioJob, spec: &mut DataSpec, dirs: &[usize]) -> Result<(), Refusal> {
    let a = &job.access;
    let clones = u64::from(spec.threads.max(1));
    for (key, mins, is_bytes) in [
        ("rate_min", a.rate_min, true),
        ("rate_iops_min", a.rate_iops_min, false),
    ] {
        let values: Vec<Option<u64>> = dirs.iter().map(|&d| mins[d]).collect();
        let Some(first) = values.iter().flatten().next().copied() else {
            continue;
        };
        if values.iter().any(|v| *v != Some(first)) {
            return Err((
                key,
                format!(
                    "a different minimum per direction is not supported; give one value for all ({key}={first})"
                ),
            ));
        }
        if is_bytes {
            spec.rate_min = Some(ByteCount(first * clones));
        } else {
            spec.rate_iops_min = Some(first * clones);
        }
        spec.rate_cycle = a
            .rate_cycle
            .map(|ms| TimeSpan(iolab_core::units::Nanos::from_millis(ms)));
    }
    Ok(())
}

fn think(job: &FioJob, spec: &mut DataSpec, notes: &mut Vec<String>) {
    let a = &job.access;
    let Some(t) = a.thinktime.filter(|t| t.nanos().0 > 0) else {
        return;
    };
    spec.think_time = Some(t);
    spec.think_spin = a.thinktime_spin.filter(|s| s.nanos().0 > 0).map(|s| {
        if s.nanos() > t.nanos() {
            notes.push(format!(
                "thinktime_spin={s} is longer than thinktime={t}: cut to it, as fio does"
            ));
            t
        } else {
            s
        }
    });
    spec.think_every = a.thinktime_blocks.unwrap_or(1).max(1);
    spec.think_count = a.thinktime_blocks_type;
    spec.think_io_time = a.thinktime_iotime.filter(|t| t.nanos().0 > 0);
}

/// What a spec check's iolab option is among this job's fio options.
pub(super) fn fio_key_of(job: &FioJob, option: &str) -> Option<&'static str> {
    let a = &job.access;
    Some(match option {
        "--block-sizes" | "--write-block-sizes" => {
            if a.bssplit.iter().any(Option::is_some) {
                "bssplit"
            } else {
                "bsrange"
            }
        }
        "--block-align" => "blockalign",
        "--distribution" => "random_distribution",
        "--rate" | "--read-rate" | "--write-rate" => {
            if a.rate.iter().any(Option::is_some) {
                "rate"
            } else {
                "rate_iops"
            }
        }
        "--rate-iops" | "--read-rate-iops" | "--write-rate-iops" => "rate_iops",
        "--rate-min" => "rate_min",
        "--rate-iops-min" => "rate_iops_min",
        "--rate-cycle" => "rate_cycle",
        "--rate-process" => "rate_process",
        "--think-time" => "thinktime",
        "--think-spin" => "thinktime_spin",
        "--think-every" => "thinktime_blocks",
        "--think-count" => "thinktime_blocks_type",
        "--think-io-time" => "thinktime_iotime",
        _ => return None,
    })
}

/// Makes the rates of one rank's workers the rates of `ranks` ranks' (each rank runs
/// every job's clones, each clone at fio's rate).
pub fn scale_rates(spec: &mut DataSpec, ranks: u32) {
    let r = u64::from(ranks.max(1));
    for b in [
        &mut spec.rate,
        &mut spec.read_rate,
        &mut spec.write_rate,
        &mut spec.rate_min,
    ] {
        *b = b.map(|v| ByteCount(v.get() * r));
    }
    for n in [
        &mut spec.rate_iops,
        &mut spec.read_rate_iops,
        &mut spec.write_rate_iops,
        &mut spec.rate_iops_min,
    ] {
        *n = n.map(|v| v * r);
    }
}

#[cfg(test)]
#[path = "plan_access_tests.rs"]
mod tests;
