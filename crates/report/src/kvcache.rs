//! `iolab kvcache`'s text report: each trial's figures (iolab_core::kvcache, defined in
//! docs/figures.md), the latencies per tier and operation, the reference's pass/fail
//! criteria, and over several trials each scored figure's median and spread.

use std::fmt::Write as _;

use iolab_core::kvcache::{
    AutoscaleResult, AutoscaleStep, AutoscaleWhy, KvCacheFigures, KvLatency, TierFigures,
};
use iolab_core::spec::{AutoscaleMode, KvCacheSettings};
use iolab_core::units::Nanos;

const GIB: f64 = 1073741824.0;

fn ms(n: Nanos) -> f64 {
    n.0 as f64 / 1e6
}

fn latency_line(out: &mut String, name: &str, l: &KvLatency) {
    if l.count == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "    {name:<22} {:>8} {:>10.3} {:>10.3} {:>10.3} {:>10.3}",
        l.count,
        ms(l.p50),
        ms(l.p95),
        ms(l.p99),
        ms(l.max)
    );
}

fn tier_lines(out: &mut String, name: &str, t: &TierFigures) {
    latency_line(out, &format!("{name} read"), &t.read_latency);
    latency_line(out, &format!("{name} write"), &t.write_latency);
    if name == "storage" {
        latency_line(out, "storage read device", &t.read_device);
        latency_line(out, "storage write device", &t.write_device);
    }
}

/// One trial's figures.
pub fn render_trial(f: &KvCacheFigures, out: &mut String) {
    let secs = f.duration.0 as f64 / 1e9;
    let _ = writeln!(
        out,
        "  {} requests in {secs:.2} s ({:.2}/s), {} tokens generated",
        f.requests,
        f.requests_per_sec(),
        f.tokens_generated
    );
    let _ = writeln!(
        out,
        "  tokens/s: {:.1} wall-clock, {:.1} storage (tokens over the requests' summed storage time)",
        f.wall_tokens_per_sec(),
        f.storage_tokens_per_sec()
    );
    let _ = writeln!(
        out,
        "  storage: {:.3} GiB read ({:.3} GiB/s), {:.3} GiB written ({:.3} GiB/s)",
        f.storage.bytes_read.0 as f64 / GIB,
        f.read_bandwidth().gib_per_sec(),
        f.storage.bytes_written.0 as f64 / GIB,
        f.write_bandwidth().gib_per_sec(),
    );
    let decode = f.decode_bytes().map_or_else(
        || "n/a (stored before 2026-12-08, CPU entries demoted)".to_string(),
        |b| format!("{:.3} GiB", b.0 as f64 / GIB),
    );
    let _ = writeln!(
        out,
        "  decode bytes read {decode} (every earlier-turn and decode read, any tier: kv-cache.py's); decode steps {:.3} GiB of the storage tier",
        f.decode_step_bytes().0 as f64 / GIB
    );
    let _ = writeln!(
        out,
        "  cpu tier: {:.3} GiB read, {:.3} GiB written, {} entries demoted; storage: {} entries deleted",
        f.cpu.bytes_read.0 as f64 / GIB,
        f.cpu.bytes_written.0 as f64 / GIB,
        f.cpu.evictions,
        f.storage.evictions
    );
    let _ = writeln!(
        out,
        "  cache hit rate {:.3} ({} hits, {} misses){}",
        f.hit_rate(),
        f.hits,
        f.misses,
        if f.refused_writes > 0 {
            format!(
                "; {} writes refused: no room on the storage tier",
                f.refused_writes
            )
        } else {
            String::new()
        }
    );
    let l = &f.lookups;
    if l.total() != (0, 0) {
        let _ = writeln!(
            out,
            "    hits/misses by lookup: system prompt {}/{}, earlier turns {}/{}, later turns {}/{}, decode {}/{}",
            l.system_prompt.hits,
            l.system_prompt.misses,
            l.earlier_turns.hits,
            l.earlier_turns.misses,
            l.later_turns.hits,
            l.later_turns.misses,
            l.decode.hits,
            l.decode.misses
        );
    }
    latency_table(f, out);
    criteria_lines(f, out);
}

/// The trial's latency table, per tier and per wait, and the worst rank's p95.
fn latency_table(f: &KvCacheFigures, out: &mut String) {
    let _ = writeln!(
        out,
        "\n    {:<22} {:>8} {:>10} {:>10} {:>10} {:>10}",
        "latency (ms)", "count", "p50", "p95", "p99", "max"
    );
    tier_lines(out, "cpu", &f.cpu);
    tier_lines(out, "storage", &f.storage);
    latency_line(out, "request storage", &f.request_storage);
    latency_line(out, "queue wait", &f.queue_wait);
    latency_line(out, "allocation wait", &f.allocation_wait);
    latency_line(out, "end to end", &f.end_to_end);
    if let Some(w) = &f.worst_rank {
        let _ = writeln!(
            out,
            "\n  storage device p95 over {} ranks (judged: the worst rank's): read {:.3} ms on rank {} ({:.3} merged), write {:.3} ms on rank {} ({:.3} merged)",
            w.ranks,
            ms(w.read_device_p95),
            w.read_rank,
            ms(f.storage.read_device.p95),
            ms(w.write_device_p95),
            w.write_rank,
            ms(f.storage.write_device.p95)
        );
    }
}

/// The scored criteria, one line each with its verdict.
fn criteria_lines(f: &KvCacheFigures, out: &mut String) {
    out.push('\n');
    for c in f.criteria() {
        let _ = writeln!(
            out,
            "  {} {:<30} {:>10.3} ({} {})",
            crate::kvcache_tables::verdict(c.passed()),
            c.name,
            c.value,
            if c.below { "<" } else { ">" },
            c.limit
        );
    }
}

fn header(s: &KvCacheSettings) -> String {
    format!(
        "iolab {} · kvcache · {} ({} bytes/token), {} users, {} s, cpu tier {}, {} allocs at once, generation {:?}, seed {}{}\n",
        env!("CARGO_PKG_VERSION"),
        s.model.name(),
        s.model.shape().bytes_per_token(),
        s.users,
        s.duration.nanos().0 as f64 / 1e9,
        s.cpu_memory.human(),
        if s.max_concurrent_allocs == 0 {
            "any".to_string()
        } else {
            s.max_concurrent_allocs.to_string()
        },
        s.generation_mode,
        s.seed,
        match s.closed_option {
            Some(o) => format!(" (closed option {o})"),
            None => String::new(),
        }
    ) + &join_window_note(s)
}

/// With --join-window: the counts include requests finishing after the duration.
fn join_window_note(s: &KvCacheSettings) -> String {
    let w = s.join_window.nanos();
    if w.0 == 0 {
        return String::new();
    }
    format!(
        "join window {} s per worker: requests being served when the duration ended that finished while each worker in turn was waited for are counted, the rates still over the duration (kv-cache.py's way)\n",
        w.0 as f64 / 1e9
    )
}

/// The whole report: settings, every trial, and the medians over trials.
pub fn render_kvcache(s: &KvCacheSettings, trials: &[KvCacheFigures]) -> String {
    let mut out = header(s);
    for (i, f) in trials.iter().enumerate() {
        let _ = writeln!(out, "\ntrial {}", i + 1);
        render_trial(f, &mut out);
    }
    if trials.len() > 1 {
        let _ = writeln!(
            out,
            "\nover {} trials  {:>12} {:>12} {:>12} {:>8}",
            trials.len(),
            "median",
            "min",
            "max",
            "CV"
        );
        for r in crate::kvcache_tables::spread_rows(trials) {
            let _ = writeln!(
                out,
                "  {:<22} {:>12.3} {:>12.3} {:>12.3} {:>7.1}%",
                r.name,
                r.median,
                r.min,
                r.max,
                100.0 * r.cv
            );
        }
    }
    out
}

fn why_words(why: AutoscaleWhy) -> &'static str {
    match why {
        AutoscaleWhy::BelowTarget => "passed under 90 % of the target saturation: grow x1.2",
        AutoscaleWhy::AtTarget => "passed within 10 % of the target saturation: stop",
        AutoscaleWhy::FailedOnce => "failed once: the same users again",
        AutoscaleWhy::Failed => "failed twice in a row: stop",
        AutoscaleWhy::Rising => "tokens/s over 101 % of the peak: grow",
        AutoscaleWhy::FlatOnce => "tokens/s not over the peak: the same users again",
        AutoscaleWhy::Peaked => "tokens/s not over the peak twice in a row: stop",
        AutoscaleWhy::MostUsers => "at the most users (500): stop",
        AutoscaleWhy::MostSteps => "the last step --autoscale-steps allows: stop",
    }
}

/// One line saying where `--autoscale` stands after a step: what it measured, why it
/// goes on or stops, and at most how much is left.
pub fn autoscale_progress(s: &KvCacheSettings, step: &AutoscaleStep, steps_left: u32) -> String {
    let mode = match s.autoscale {
        Some(AutoscaleMode::Capacity) => "capacity",
        _ => "qos",
    };
    let verdict = match (s.autoscale, step.why) {
        (Some(AutoscaleMode::Qos), AutoscaleWhy::MostSteps | AutoscaleWhy::MostUsers) => {
            if step.passed { "passed; " } else { "failed; " }
        }
        _ => "",
    };
    let mut line = format!(
        "kvcache autoscale {mode}: step {} of at most {}: {} users, {:.1} tokens/s, read device p95 {:.1} ms, saturation {:.2} (target {:.2}): {verdict}{}",
        step.step,
        s.autoscale_steps,
        step.users,
        step.wall_tokens_per_sec,
        ms(step.read_device_p95),
        step.saturation,
        s.target_saturation,
        why_words(step.why)
    );
    if let Some(n) = step.next_users {
        let _ = write!(
            line,
            "; next {n} users, at most {steps_left} more step(s) of {} s",
            s.duration.nanos().0 as f64 / 1e9
        );
    }
    line
}

/// `--autoscale`'s report: each step's trial, the steps, and what they found.
pub fn render_autoscale(
    s: &KvCacheSettings,
    r: &AutoscaleResult,
    trials: &[KvCacheFigures],
) -> String {
    let mut out = header(s);
    for (step, f) in r.steps.iter().zip(trials) {
        let _ = writeln!(out, "\nstep {}: {} users", step.step, step.users);
        render_trial(f, &mut out);
    }
    let _ = writeln!(
        out,
        "\n{:>5} {:>6} {:>12} {:>12} {:>10} {:>6}  decision",
        "step", "users", "tokens/s", "read p95 ms", "saturation", "passed"
    );
    for st in &r.steps {
        let _ = writeln!(
            out,
            "{:>5} {:>6} {:>12.1} {:>12.3} {:>10.2} {:>6}  {}",
            st.step,
            st.users,
            st.wall_tokens_per_sec,
            ms(st.read_device_p95),
            st.saturation,
            if st.passed { "yes" } else { "no" },
            why_words(st.why)
        );
    }
    let _ = match (s.autoscale, r.users) {
        (Some(AutoscaleMode::Capacity), Some(u)) => writeln!(
            out,
            "peak: {:.1} tokens/s at {u} users",
            r.wall_tokens_per_sec
        ),
        (_, Some(u)) => writeln!(
            out,
            "most users passing at target saturation {:.2}: {u} ({:.1} tokens/s)",
            s.target_saturation, r.wall_tokens_per_sec
        ),
        (_, None) => writeln!(out, "no step passed: start with fewer --users"),
    };
    out
}
