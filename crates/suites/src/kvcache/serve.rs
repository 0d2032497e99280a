//! One request served, as kv-cache.py's `process_requests` serves it: the system
//! prompt's prefix looked up, every earlier turn of the conversation read back, the
//! prefill's entry written, and for a short context the decode: the entry read once
//! and again every 32 generated tokens; then the generation time slept.

use iolab_core::kvcache::TierKind;
use iolab_core::spec::KvCacheSettings;
use iolab_core::units::Nanos;

use super::cache::{KvCache, Op, Written};
use super::entry::EntryIo;
use super::live::KvLive;
use super::tally::Tally;
use super::users::Request;
use crate::AiError;

/// Tokens generated per decode read (config.yaml's decode.batch_size).
const DECODE_BATCH: u64 = 32;

/// Where a request is served: the cache, the run's start (the storage tier's timeline
/// starts there) and when
/// to give up: a request still being served at the end of the run stops before its next
/// cache operation, or at the deadline if it is sleeping its generation time, and is not
/// counted (its operations are).
pub struct Serving<'a> {
    pub cache: &'a KvCache,
    pub settings: &'a KvCacheSettings,
    pub start: Nanos,
    pub deadline: Nanos,
    pub over: &'a dyn Fn() -> bool,
    /// With `--serve`: the running trial's counts, for the live page.
    pub live: Option<&'a KvLive>,
}

impl Serving<'_> {
    /// Records a whole-entry cache operation in the worker's tally (and the live counts).
    fn record(&self, tally: &mut Tally, op: &Op, write: bool) {
        tally.record(op, write);
        if let Some(live) = self.live {
            live.op(op, write);
        }
    }

    /// Counts a cache access's read as it begins (kv-cache.py's way: one under way
    /// when the run ends counts).
    fn read_begins(&self, tally: &mut Tally, tier: TierKind, bytes: u64) {
        tally.read_begins(tier, bytes);
        if let Some(live) = self.live {
            live.read_begins(tier, bytes);
        }
    }

    /// Records a cache access's read once it has ended: its latencies.
    fn read_ended(&self, tally: &mut Tally, op: &Op) {
        tally.record_ended(op, false);
        if let Some(live) = self.live {
            live.read_ended(op);
        }
    }
}

/// Serves `req`; false if the run ended first.
pub fn serve(
    at: &Serving<'_>,
    io: &mut EntryIo<'_>,
    req: &Request,
    tally: &mut Tally,
) -> Result<bool, AiError> {
    match steps(at, io, req, tally) {
        Err(AiError::Interrupted) => Ok(false),
        r => r,
    }
}

fn steps(
    at: &Serving<'_>,
    io: &mut EntryIo<'_>,
    req: &Request,
    tally: &mut Tally,
) -> Result<bool, AiError> {
    let (cache, settings) = (at.cache, at.settings);
    let began = io.clock.now();
    tally.queue_wait.record(began.saturating_sub(req.issued).0);
    let mut storage = Nanos::ZERO;
    // `decode`: a read kv-cache.py makes in its DECODE phase (every read but the
    // system prompt's lookup, which it makes in the request's own phase), counted in
    // its decode bytes read, whatever the tier.
    let mut read = |io: &mut EntryIo<'_>, key: &str, tally: &mut Tally, decode: bool| {
        if (at.over)() {
            return Err(AiError::Interrupted);
        }
        let begins = &mut |tier, bytes| at.read_begins(tally, tier, bytes);
        let op = cache.access_counted(io, key, begins)?;
        if let Some(op) = &op {
            at.read_ended(tally, op);
            if decode {
                tally.decode_bytes_read += op.bytes;
            }
            storage = storage + op.spans.total;
        }
        Ok::<Option<Op>, AiError>(op)
    };
    let mut context = req.context_tokens;
    if let Some((key, tokens)) = req.prefix {
        read(io, key, tally, false)?;
        context = context.saturating_sub(tokens);
    }
    for key in &req.previous {
        read(io, key, tally, true)?;
    }
    let write = |io: &mut EntryIo<'_>, tally: &mut Tally| {
        if (at.over)() {
            return Err(AiError::Interrupted);
        }
        let w = cache.allocate(io, &req.key, context)?;
        Ok::<Nanos, AiError>(record_written(at, &w, tally))
    };
    let mut wrote = write(io, tally)?;
    if req.decodes() {
        match read(io, &req.key, tally, true)? {
            None => wrote = wrote + write(io, tally)?,
            Some(first) => {
                tally.decode_step_bytes_read += decode_step_bytes(&first);
                for _ in 0..req.generate_tokens.div_ceil(DECODE_BATCH).max(1) {
                    if let Some(op) = read(io, &req.key, tally, true)? {
                        tally.decode_step_bytes_read += decode_step_bytes(&op);
                    }
                }
            }
        }
    }
    let storage = storage + wrote;
    // The generation time, cut at the run's end: kv-cache.py measures its rates over the
    // duration it asked for, so a request generating past it does not stretch the run.
    let generation = Nanos(req.generate_tokens * settings.generation_mode.per_token_ns());
    let now = io.clock.now();
    io.clock
        .nap(generation.min(at.deadline.saturating_sub(now)));
    if now + generation > at.deadline || (at.over)() {
        return Err(AiError::Interrupted);
    }
    let done = io.clock.now();
    tally.end_to_end.record(done.saturating_sub(req.issued).0);
    tally.request_storage.record(storage.0);
    tally.storage_time += storage.0;
    tally.requests += 1;
    tally.tokens += req.generate_tokens;
    if let Some(live) = at.live {
        live.request(req.generate_tokens);
    }
    Ok(true)
}

/// Bytes a decode step's read took from the storage tier.
fn decode_step_bytes(op: &Op) -> u64 {
    match op.tier {
        iolab_core::kvcache::TierKind::Storage => op.bytes,
        iolab_core::kvcache::TierKind::Cpu => 0,
    }
}

/// Records a write and the demotions it caused; returns the time they took.
fn record_written(at: &Serving<'_>, w: &Written, tally: &mut Tally) -> Nanos {
    let mut took = Nanos::ZERO;
    for (r, wr) in &w.demoted {
        at.record(tally, r, false);
        at.record(tally, wr, true);
        took = took + r.spans.total + wr.spans.total;
    }
    if let Some(op) = &w.op {
        at.record(tally, op, true);
        took = took + op.spans.total;
    }
    if w.refused {
        tally.refused_writes += 1;
    }
    // Not the tiers' and not in the request's storage time (kv-cache.py's waits for
    // its allocation semaphore are in neither).
    tally.allocation_wait.record(w.waited.0);
    took
}
