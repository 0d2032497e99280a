//! One S3 worker in one phase: its own connection(s) (an [`ObjectBackend`] made for it),
//! its own [`Pool`] of objects, one request in flight at a time, as a goroutine of warp.
//! Each request is timed from just before its push to just after its reap into the
//! [`Recorder`] (the same histograms and timeline as files), its time to first byte (a
//! GET) into the `ttfb` histogram, and its start and end into the worker's [`OpLog`]
//! for warp's measurement window. A request that fails after its retries stops the
//! phase everywhere.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::Ordering;

use iolab_backend::object::{
    ObjectBackend, ObjectCompletion, ObjectError, ObjectOp, ObjectRequest,
};
use iolab_core::histogram::LatencyHistogram;
use iolab_core::result::{ErrorRecord, OpKind};
use iolab_core::rng::Rng;
use iolab_core::spec::S3Op;
use iolab_core::units::Nanos;

use crate::clock::Clock;
use crate::control::PhaseControl;
use crate::object::plan::{MixOp, ObjectPlan, Pool};
use crate::object::window::OpLog;
use crate::phase::WorkerReport;
use crate::recorder::Recorder;
use crate::worker::INTERVAL;

/// Makes the object backend of a worker (by its global number).
pub type ObjectFactory<'a> =
    &'a (dyn Fn(u32) -> Result<Box<dyn ObjectBackend>, ObjectError> + Sync);

/// What the workers of a phase share.
pub struct PhaseSetup<'a, C: Clock> {
    pub plan: &'a ObjectPlan,
    pub op: S3Op,
    pub control: &'a PhaseControl,
    pub clock: &'a C,
    pub host: &'a str,
    pub factory: ObjectFactory<'a>,
    /// This rank's workers' pools, by local index.
    pub pools: &'a [Mutex<Pool>],
    /// Where each worker leaves its log, by local index.
    pub logs: &'a [Mutex<OpLog>],
    /// Without a deadline a phase makes one pass (put: each worker's share of objects).
    pub deadline: Option<Nanos>,
}

/// The state of one worker's loop.
struct Work<'a, 's, C: Clock> {
    s: &'s PhaseSetup<'a, C>,
    local: usize,
    global: u32,
    backend: Box<dyn ObjectBackend>,
    rec: Recorder,
    log: OpLog,
    ttfb: LatencyHistogram,
    counters: BTreeMap<String, u64>,
    key: String,
    out: Vec<ObjectCompletion>,
    start: Nanos,
    done: u64,
    rng: Rng,
}

pub fn run_worker<C: Clock>(s: &PhaseSetup<'_, C>, local: usize) -> Result<WorkerReport, String> {
    let global = s.plan.global(local as u32);
    let backend = match (s.factory)(global) {
        Ok(b) => b,
        Err(e) => {
            s.control.ready_and_wait(false);
            return Err(e.to_string());
        }
    };
    let mut pool = std::mem::take(&mut *s.pools[local].lock().expect("pool"));
    let Some(start) = s.control.ready_and_wait(true) else {
        *s.pools[local].lock().expect("pool") = pool;
        return Ok(WorkerReport::idle());
    };
    let mut w = Work {
        s,
        local,
        global,
        backend,
        rec: Recorder::new(start, INTERVAL),
        log: OpLog::new(),
        ttfb: LatencyHistogram::new(),
        counters: BTreeMap::new(),
        key: String::with_capacity(128),
        out: Vec::with_capacity(1),
        start,
        done: 0,
        rng: Rng::new(iolab_core::rng::mix(&[
            s.plan.spec.seed,
            u64::from(global),
            s.op as u64,
        ])),
    };
    match s.op {
        S3Op::Put => w.put(&mut pool),
        S3Op::Get | S3Op::Stat => w.read(&mut pool),
        S3Op::List => w.list(),
        S3Op::Delete => w.delete(&mut pool),
        S3Op::Mixed => w.mixed(&mut pool),
    }
    *s.pools[local].lock().expect("pool") = pool;
    let finished_at = s.clock.now().saturating_sub(start);
    for (status, n) in w.backend.status_counts() {
        *w.counters.entry(format!("http_{status}")).or_default() += n;
    }
    let mut measure = {
        w.rec.publish(&s.control.workers[local], true);
        std::mem::replace(&mut w.rec, Recorder::new(start, INTERVAL)).finish()
    };
    if !w.ttfb.is_empty() {
        measure.histograms.insert("ttfb".into(), w.ttfb);
    }
    measure.counters = w.counters;
    *s.logs[local].lock().expect("log") = w.log;
    s.control.finished(local);
    Ok(WorkerReport {
        measure,
        completed: w.done,
        finished_at,
    })
}

impl<C: Clock> Work<'_, '_, C> {
    /// Whether the loop goes on: not stopped, not past the deadline.
    fn going(&mut self, now: Nanos) -> bool {
        let c = self.s.control;
        if c.stop.load(Ordering::Relaxed) {
            return false;
        }
        if let Some(d) = self.s.deadline
            && now.saturating_sub(self.start) >= d
        {
            c.first_done.store(true, Ordering::Relaxed);
            self.rec.mark_first_done();
            return false;
        }
        if !self.rec.first_done_marked() && c.first_done.load(Ordering::Relaxed) {
            self.rec.mark_first_done();
        }
        true
    }

    /// Runs one request and records it; returns it, or None when it failed (the phase
    /// is then stopped).
    fn one(
        &mut self,
        kind: OpKind,
        op: ObjectOp<'_>,
        key_is_own: bool,
    ) -> Option<ObjectCompletion> {
        let key = if key_is_own { self.key.as_str() } else { "" };
        let t0 = self.s.clock.now();
        let req = ObjectRequest { op, key, tag: 0 };
        let pushed = self.backend.push(req).and_then(|()| self.backend.submit());
        self.out.clear();
        self.backend.reap(&mut self.out);
        let t1 = self.s.clock.now();
        let c = match pushed {
            Ok(()) => self.out.pop().unwrap_or_default(),
            Err(e) => ObjectCompletion {
                error: Some(Box::new(e)),
                ..ObjectCompletion::default()
            },
        };
        let (from, to) = (
            t0.saturating_sub(self.start).0,
            t1.saturating_sub(self.start).0,
        );
        if c.retries > 0 {
            *self.counters.entry("retries".into()).or_default() += u64::from(c.retries);
        }
        if let Some(e) = &c.error {
            self.log.record(kind, from, to, 0, false);
            self.rec.error(ErrorRecord {
                rank: self.s.plan.rank,
                host: self.s.host.to_string(),
                op: kind,
                path: format!("s3://{}/{}", self.s.plan.spec.bucket, key),
                offset: None,
                errno: None,
                message: e.to_string(),
            });
            self.s.control.stop_all();
            return None;
        }
        self.rec.record(kind, t1.saturating_sub(t0), c.bytes, t1);
        self.log.record(kind, from, to, c.bytes, true);
        if let Some(fb) = c.first_byte.filter(|_| kind == OpKind::Get) {
            self.ttfb.record(fb.as_nanos() as u64);
        }
        if c.items > 0 && matches!(kind, OpKind::List | OpKind::Delete) {
            let name = if kind == OpKind::List {
                "keys_listed"
            } else {
                "objects_deleted"
            };
            *self.counters.entry(name.into()).or_default() += c.items;
        }
        let p = &self.s.control.workers[self.local];
        self.done += 1;
        p.ops.store(self.done, Ordering::Relaxed);
        p.bytes.fetch_add(c.bytes, Ordering::Relaxed);
        self.rec.publish(p, false);
        Some(c)
    }

    fn put_object(&mut self, n: u64) -> bool {
        let (g, plan) = (self.global, self.s.plan);
        plan.key_into(g, n, &mut self.key);
        let op = ObjectOp::Put {
            size: plan.size_of(g, n),
            data_offset: plan.data_of(g, n),
        };
        let ok = self.one(OpKind::Put, op, true);
        if let Some(c) = &ok
            && c.items > 1
        {
            *self.counters.entry("parts".into()).or_default() += c.items;
        }
        ok.is_some()
    }

    fn put(&mut self, pool: &mut Pool) {
        let share = self.s.plan.share_of(self.global);
        let mut left = share;
        while self.going(self.s.clock.now()) && (self.s.deadline.is_some() || left > 0) {
            let n = pool.add();
            if !self.put_object(n) {
                // Kept in the pool: a PUT that failed may still have stored the object,
                // and cleanup removes what it finds.
                break;
            }
            left = left.saturating_sub(1);
        }
    }

    fn read_object(&mut self, n: u64) -> bool {
        let (g, plan) = (self.global, self.s.plan);
        plan.key_into(g, n, &mut self.key);
        let (kind, op) = if self.s.op == S3Op::Stat {
            (OpKind::Stat, ObjectOp::Head)
        } else {
            let range = plan.spec.range_size.map(|r| {
                let size = plan.size_of(g, n);
                let len = r.get().min(size.max(1));
                let off = if size > len {
                    self.rng.below(size - len + 1)
                } else {
                    0
                };
                (off, len)
            });
            (OpKind::Get, ObjectOp::Get { range })
        };
        self.one(kind, op, true).is_some()
    }

    /// Each object once without a deadline; random objects until it with one.
    fn read(&mut self, pool: &mut Pool) {
        if pool.live.is_empty() {
            return;
        }
        let mut i = 0;
        while self.going(self.s.clock.now()) {
            let n = if self.s.deadline.is_some() {
                pool.live[self.rng.below(pool.live.len() as u64) as usize]
            } else if i < pool.live.len() {
                i += 1;
                pool.live[i - 1]
            } else {
                break;
            };
            if !self.read_object(n) {
                break;
            }
        }
    }

    /// Lists the worker's own directory, page by page: once, or over again until the
    /// deadline.
    fn list(&mut self) {
        let prefix = self.s.plan.dir_of(self.global);
        let page = self.s.plan.spec.list_page;
        let mut token: Option<String> = None;
        while self.going(self.s.clock.now()) {
            let op = ObjectOp::List {
                prefix: &prefix,
                token: token.as_deref(),
                max_keys: page,
            };
            let Some(c) = self.one(OpKind::List, op, false) else {
                break;
            };
            token = if c.truncated {
                self.backend.next_token().map(str::to_string)
            } else {
                None
            };
            if token.is_none() && self.s.deadline.is_none() {
                break;
            }
        }
    }

    /// Deletes the pool's objects, --batch a request, until none is left (or the
    /// deadline).
    fn delete(&mut self, pool: &mut Pool) {
        let batch = self.s.plan.spec.batch as usize;
        let mut keys: Vec<String> = Vec::with_capacity(batch);
        while !pool.live.is_empty() && self.going(self.s.clock.now()) {
            if batch == 1 {
                let n = *pool.live.last().expect("not empty");
                self.s.plan.key_into(self.global, n, &mut self.key);
                if self.one(OpKind::Delete, ObjectOp::Delete, true).is_none() {
                    break;
                }
                pool.live.pop();
            } else {
                let take = batch.min(pool.live.len());
                keys.clear();
                let from = pool.live.len() - take;
                for &n in &pool.live[from..] {
                    let mut k = String::new();
                    self.s.plan.key_into(self.global, n, &mut k);
                    keys.push(k);
                }
                let op = ObjectOp::DeleteMany { keys: &keys };
                if self.one(OpKind::Delete, op, false).is_none() {
                    break;
                }
                pool.live.truncate(from);
            }
        }
    }

    /// warp's mixed loop: the next slot of the shuffled table (each worker from its own
    /// place in it) picks GET, STAT, PUT or DELETE; GET and STAT a random object of the
    /// pool, PUT a new one, DELETE a random one out of it.
    fn mixed(&mut self, pool: &mut Pool) {
        let table = self.s.plan.mix_table();
        let mut slot = (self.global as usize * 37) % table.len().max(1);
        while self.going(self.s.clock.now()) {
            let op = table[slot];
            slot = (slot + 1) % table.len();
            let ok = match op {
                MixOp::Get | MixOp::Stat if !pool.live.is_empty() => {
                    let n = pool.live[self.rng.below(pool.live.len() as u64) as usize];
                    let (g, plan) = (self.global, self.s.plan);
                    plan.key_into(g, n, &mut self.key);
                    if op == MixOp::Stat {
                        self.one(OpKind::Stat, ObjectOp::Head, true).is_some()
                    } else {
                        self.one(OpKind::Get, ObjectOp::Get { range: None }, true)
                            .is_some()
                    }
                }
                MixOp::Put => {
                    let n = pool.add();
                    self.put_object(n)
                }
                MixOp::Delete if !pool.live.is_empty() => {
                    let i = self.rng.below(pool.live.len() as u64) as usize;
                    let n = pool.live[i];
                    self.s.plan.key_into(self.global, n, &mut self.key);
                    let ok = self.one(OpKind::Delete, ObjectOp::Delete, true).is_some();
                    if ok {
                        pool.take(i);
                    }
                    ok
                }
                _ => true,
            };
            if !ok {
                break;
            }
        }
    }
}
