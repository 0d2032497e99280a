//! A trial's tally: the figures of a scripted trial of three workers on a FakeClock
//! are the fixture's, which were recorded when each worker kept a tally of its own and
//! the trial merged them; and what the trial holds does not grow with its workers.

use std::collections::BTreeMap;

use iolab_core::LatencyHistogram;
use iolab_core::kvcache::KvModel;
use iolab_core::result::OpKind;
use iolab_core::spec::{GenerationMode, KvCacheSettings, KvCacheSpec};
use iolab_core::units::Nanos;
use iolab_engine::{Clock, FakeClock};
use serde_json::{Value, json};

use super::{Tally, TrialTally};
use crate::kvcache::cache::KvCache;
use crate::kvcache::conversation::ConversationCounts;
use crate::kvcache::entry::{EntryIo, EntrySetup};
use crate::kvcache::serve::{Serving, serve};
use crate::kvcache::users::{Qos, Request};

/// The scripted trial's stored figures as the per-worker tallies made them (a06549c's
/// code, before the trial shared one tally).
const FIXTURE: &str = include_str!("../../tests/fixtures/kvcache/scripted_trial.json");

/// Who serves what, in order, three requests a round and rounds 0.4 s apart: (worker,
/// entry key `<conversation>_turn_<n>`, the conversation's other turns it reads back,
/// context tokens, tokens generated, a system prompt looked up first).
type Step = (usize, &'static str, &'static [&'static str], u64, u64, bool);
const SCRIPT: &[Step] = &[
    (0, "a_turn_1", &[], 60, 40, true),
    (1, "b_turn_1", &[], 80, 64, false),
    (2, "c_turn_1", &[], 200, 10, true),
    (0, "a_turn_2", &["a_turn_1"], 120, 20, false),
    (1, "b_turn_2", &["b_turn_1", "b_turn_3"], 90, 5, false),
    (2, "d_turn_1", &[], 30, 100, false),
    (0, "a_turn_3", &["a_turn_1", "a_turn_2"], 150, 10, true),
    (1, "e_turn_1", &[], 250, 33, false),
    (2, "c_turn_2", &["c_turn_1"], 220, 1, false),
    (0, "b_turn_3", &["b_turn_1", "b_turn_2"], 100, 12, false),
    (2, "e_turn_2", &["e_turn_1"], 40, 64, true),
];

/// The last request, on worker 1, is cut by the run's end after this many pieces.
const CUT_AFTER: u32 = 3;

fn settings() -> KvCacheSettings {
    KvCacheSpec {
        model: Some(KvModel::Tiny1b),
        generation_mode: Some(GenerationMode::Fast),
        ..KvCacheSpec::default()
    }
    .resolve()
    .unwrap()
}

fn request(i: usize, &(w, key, previous, context, generate, prompt): &Step) -> Request {
    let (conversation, turn) = key.split_once("_turn_").unwrap();
    Request {
        user: w as u32,
        qos: Qos::Batch,
        context_tokens: context,
        generate_tokens: generate,
        key: key.into(),
        conversation: Some((
            (u32::from(conversation.as_bytes()[0] - b'a'), 0),
            turn.parse().unwrap(),
        )),
        previous: previous.iter().map(|s| s.to_string()).collect(),
        prefix: prompt.then_some(("kv_system_helpful", 7)),
        issued: Nanos::ZERO,
        seq: i as u64,
    }
}

/// A histogram as what it holds: its count, extremes, mean and buckets (its V2 bytes
/// also carry the highest value it was sized for, which depends on the order of its
/// records, not on them).
fn held(h: &LatencyHistogram) -> Value {
    json!({
        "count": h.count(),
        "min": h.min(),
        "max": h.max(),
        "mean": h.mean(),
        "stdev": h.stdev(),
        "buckets": h.buckets(),
    })
}

/// The trial as run_kvcache stores it (its figures, timeline and the storage tier's
/// whole-entry histograms, through `reduce`), and the per-I/O histograms beside.
fn stored(tally: Tally, cache: &KvCache) -> Value {
    use std::sync::atomic::Ordering::Relaxed;
    let counts = [
        cache.hits.load(Relaxed),
        cache.misses.load(Relaxed),
        cache.evictions.cpu.load(Relaxed),
        cache.evictions.storage.load(Relaxed),
    ];
    let io: BTreeMap<String, Value> = tally
        .io
        .ops
        .iter()
        .map(|(op, m)| {
            (
                format!("{op:?}"),
                json!([m.count, m.errors, held(&m.histogram)]),
            )
        })
        .collect();
    let rank = (
        tally,
        Nanos::from_secs(6),
        SCRIPT.len() as u64 + 1,
        0,
        counts,
        ConversationCounts::default(),
    );
    let t = crate::kvcache::reduce(&[rank]);
    let s = &t.storage;
    json!({
        "figures": t.figures,
        "timeline": t.timeline,
        "cut": t.cut,
        "storage": [held(&s.read), held(&s.write), held(&s.read_device), held(&s.write_device)],
        "io": io,
    })
}

/// Runs the script on three workers' entry I/O, one thread, one FakeClock; the trial's
/// tally as the trial makes it (run.rs: worker, work, run_trial).
fn scripted_trial(dir: &std::path::Path) -> (Tally, KvCache) {
    let settings = settings();
    let clock = FakeClock::new(Nanos(1000));
    let pieces = std::cell::Cell::new(0u32);
    let ends = || {
        pieces.set(pieces.get() + 1);
        pieces.get() > CUT_AFTER
    };
    // A CPU tier of 8 MiB (a few entries: demotions) over 16 MiB of storage (evictions).
    let cache = KvCache::new(KvModel::Tiny1b.shape(), 8 << 20, 16 << 20, dir, 0);
    let never = || false;
    let at = Serving {
        cache: &cache,
        settings: &settings,
        start: Nanos::ZERO,
        deadline: Nanos(u64::MAX),
        over: &never,
        live: None,
    };
    let mut ios: Vec<EntryIo<'_>> = (0..3)
        .map(|w| {
            let setup = EntrySetup {
                backend: iolab_core::spec::BackendKind::Psync,
                transfer: 256 << 10,
                direct: false,
                seed: w + 1,
            };
            EntryIo::new(setup, &clock, Nanos::ZERO).unwrap()
        })
        .collect();
    let trial = TrialTally::default();
    let mut tallies: Vec<_> = (0..3).map(|_| trial.worker()).collect();
    let mut round = Nanos::ZERO;
    for (i, step) in SCRIPT.iter().enumerate() {
        if i % 3 == 0 {
            clock.sleep(Nanos::from_millis(400));
            round = clock.now();
        }
        let mut req = request(i, step);
        req.issued = round.saturating_sub(Nanos::from_millis(150 * step.0 as u64));
        assert!(serve(&at, &mut ios[step.0], &req, &mut tallies[step.0]).unwrap());
    }
    ios[1].over = &ends;
    let last = request(
        SCRIPT.len(),
        &(1, "b_turn_4", &["b_turn_1", "b_turn_3"], 70, 9, false),
    );
    if !serve(&at, &mut ios[1], &last, &mut tallies[1]).unwrap() {
        tallies[1].lock().cut += 1;
    }
    // Each worker's end, then the trial's.
    let quiet: Vec<_> = tallies
        .into_iter()
        .zip(&mut ios)
        .map(|(mut t, io)| {
            t.add_io(io.take_measure());
            t.finish()
        })
        .collect();
    (trial.finish(&quiet), cache)
}

/// The trial's figures, timeline and histograms, exactly: the same samples make the
/// same percentiles however the workers' records reach the trial's tally.
#[test]
fn a_scripted_trials_stored_figures_are_the_fixtures() {
    let dir = tempfile::tempdir().unwrap();
    let (tally, cache) = scripted_trial(dir.path());
    assert_eq!(tally.cut, 1);
    assert!(tally.cpu.writes > 0 && tally.storage.writes > 0);
    let got = serde_json::to_string_pretty(&stored(tally, &cache)).unwrap() + "\n";
    if got != FIXTURE {
        let out = std::env::temp_dir().join("kvcache-scripted-trial.json");
        std::fs::write(&out, &got).unwrap();
        panic!(
            "the scripted trial's figures differ from tests/fixtures/kvcache/scripted_trial.json: this run's are in {}",
            out.display()
        );
    }
}

/// What a trial holds does not grow with its workers: 200 workers' records of a
/// request each (latencies of 294-300 s: each histogram grown to 30 x 1,024 counters)
/// leave its tally the histograms and counters of 1 worker's (a tally per worker held
/// that many per worker).
#[test]
fn a_trials_histograms_do_not_grow_with_its_workers() {
    use crate::kvcache::cache::Op;
    use crate::kvcache::entry::Spans;
    use iolab_core::kvcache::TierKind;
    let counters_after = |workers: usize| {
        let trial = TrialTally::default();
        for w in 0..workers {
            let mut tally = trial.worker();
            let mut guard = tally.lock();
            let t = &mut *guard;
            let long = Nanos::from_secs(300 - w as u64 % 7);
            for (tier, write) in [(TierKind::Cpu, false), (TierKind::Storage, true)] {
                let op = Op {
                    tier,
                    bytes: 1 << 20,
                    spans: Spans {
                        total: long,
                        device: long,
                    },
                };
                t.record(&op, write);
                t.record(&op, !write);
            }
            for h in [
                &mut t.end_to_end,
                &mut t.queue_wait,
                &mut t.allocation_wait,
                &mut t.request_storage,
            ] {
                h.record(long.0);
            }
            drop(guard);
            // The storage tier's I/Os, as an entry's recorder hands them on.
            let mut io = iolab_engine::WorkerMeasure::default();
            for op in [OpKind::Read, OpKind::Write, OpKind::Fsync] {
                io.ops.entry(op).or_default().histogram.record(long.0);
            }
            tally.add_io(io);
            tally.finish();
        }
        let t = trial.finish(&[]);
        assert_eq!(t.storage.read.count(), workers as u64);
        t.histogram_counters()
    };
    // 12 whole-entry histograms and 3 of the I/Os, each of 30 x 1,024 counters.
    assert_eq!(counters_after(1), 15 * 30 * 1024);
    assert_eq!(counters_after(200), counters_after(1));
}
