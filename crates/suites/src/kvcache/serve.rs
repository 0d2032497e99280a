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
use super::tally::{Tally, WorkerTally};
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
    /// Records a whole-entry cache operation in the trial's tally (and the live counts).
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

    /// One cache lookup (a whole-entry read when it hits), counted by its kind. Every
    /// read but the system prompt's lookup (made in the request's own phase) is one
    /// kv-cache.py makes in its DECODE phase: in its decode bytes read, whatever the
    /// tier, counted as it begins as the reference counts it.
    fn lookup(
        &self,
        io: &mut EntryIo<'_>,
        key: &str,
        tally: &mut WorkerTally<'_>,
        kind: Lookup,
    ) -> Result<Option<Op>, AiError> {
        if (self.over)() {
            return Err(AiError::Interrupted);
        }
        let decode = kind != Lookup::SystemPrompt;
        // A hit counts as its read begins, as the cache's own count and kv-cache.py's:
        // a read cut by the run's end is a hit too.
        let mut hit = false;
        let begins = &mut |tier, bytes| {
            hit = true;
            let mut t = tally.lock();
            self.read_begins(&mut t, tier, bytes);
            if decode {
                t.decode_bytes_read += bytes;
            }
        };
        let op = self.cache.access_counted(io, key, begins);
        tally.add_io(io.take_measure());
        let mut t = tally.lock();
        let lookups = &mut t.lookups;
        match kind {
            Lookup::SystemPrompt => &mut lookups.system_prompt,
            Lookup::EarlierTurn => &mut lookups.earlier_turns,
            Lookup::LaterTurn => &mut lookups.later_turns,
            Lookup::Decode => &mut lookups.decode,
        }
        .add(hit);
        let op = op?;
        if let Some(op) = &op {
            self.read_ended(&mut t, op);
        }
        Ok(op)
    }
}

/// A request's kinds of cache lookup (kv-cache.py's `process_requests` steps).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lookup {
    SystemPrompt,
    EarlierTurn,
    LaterTurn,
    Decode,
}

/// Serves `req`; false if the run ended first.
pub fn serve(
    at: &Serving<'_>,
    io: &mut EntryIo<'_>,
    req: &Request,
    tally: &mut WorkerTally<'_>,
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
    tally: &mut WorkerTally<'_>,
) -> Result<bool, AiError> {
    let (cache, settings) = (at.cache, at.settings);
    let began = io.clock.now();
    tally
        .lock()
        .queue_wait
        .record(began.saturating_sub(req.issued).0);
    let mut storage = Nanos::ZERO;
    let mut read = |io: &mut EntryIo<'_>, key: &str, tally: &mut WorkerTally<'_>, kind: Lookup| {
        let op = at.lookup(io, key, tally, kind)?;
        storage = storage + op.map_or(Nanos::ZERO, |op| op.spans.total);
        Ok::<Option<Op>, AiError>(op)
    };
    let mut context = req.context_tokens;
    if let Some((key, tokens)) = req.prefix {
        read(io, key, tally, Lookup::SystemPrompt)?;
        context = context.saturating_sub(tokens);
    }
    // The conversation's keys come in turn order: those before this turn's are earlier.
    let earlier = req.conversation.map_or(0, |(_, turn)| turn as usize - 1);
    for (i, key) in req.previous.iter().enumerate() {
        let kind = if i < earlier {
            Lookup::EarlierTurn
        } else {
            Lookup::LaterTurn
        };
        read(io, key, tally, kind)?;
    }
    let write = |io: &mut EntryIo<'_>, tally: &mut WorkerTally<'_>| {
        if (at.over)() {
            return Err(AiError::Interrupted);
        }
        let w = cache.allocate(io, &req.key, context);
        tally.add_io(io.take_measure());
        Ok::<Nanos, AiError>(record_written(at, &w?, &mut tally.lock()))
    };
    let mut wrote = write(io, tally)?;
    if req.decodes() {
        match read(io, &req.key, tally, Lookup::Decode)? {
            None => wrote = wrote + write(io, tally)?,
            Some(first) => {
                tally.lock().decode_step_bytes_read += decode_step_bytes(&first);
                for _ in 0..req.generate_tokens.div_ceil(DECODE_BATCH).max(1) {
                    if let Some(op) = read(io, &req.key, tally, Lookup::Decode)? {
                        tally.lock().decode_step_bytes_read += decode_step_bytes(&op);
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
    let mut t = tally.lock();
    t.end_to_end.record(done.saturating_sub(req.issued).0);
    t.request_storage.record(storage.0);
    t.storage_time += storage.0;
    t.requests += 1;
    t.tokens += req.generate_tokens;
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
