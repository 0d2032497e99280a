//! The KV cache section of the page (`iolab kvcache` runs): per run, each trial's
//! scored figures (tokens/s wall-clock and storage, bandwidths, device p95s, decode
//! bytes, cache hit rate) with its verdict, kv-cache.py's pass/fail criteria with their
//! values and limits, and over several trials each figure's median and spread: the
//! tables of [`crate::kvcache_tables`], the figures the text report prints. The trials'
//! per-second timelines and latency charts are the page's Timelines and Latency.

use std::fmt::Write as _;

use iolab_core::result::RunRecord;

use super::escape;
use crate::kvcache_tables::{criteria_table, spread_rows, spread_table, trials_of, trials_table};

const KVCACHE_NOTE: &str = "Each trial's figures as stored (docs/figures.md): tokens/s over \
the wall-clock duration and over the requests' summed storage time, the storage tier's \
bandwidth, its device p95s (under MPI the worst rank's, which the criteria judge), the \
decode bytes read (kv-cache.py's: every earlier turn read back and every decode read, on \
any tier), the cache hit rate, and beside them the bytes the decode steps alone read from \
the storage tier. A trial passes when it meets every criterion below.";

const CRITERIA_NOTE: &str = "kv-cache.py's storage health under its latency profile: \
storage device p95s below their limits, the CPU tier's p95 too when it was used, and \
the cache hit rate above 0.3.";

/// The section's body, empty when no run has a KV cache trial.
pub fn kvcache_html(runs: &[RunRecord], names: &[String]) -> String {
    let with: Vec<(usize, Vec<_>)> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| (i, trials_of(r)))
        .filter(|(_, t)| !t.is_empty())
        .collect();
    let mut out = String::new();
    for (i, trials) in &with {
        if with.len() > 1 || runs.len() > 1 {
            let name = names.get(*i).cloned().unwrap_or_default();
            let _ = writeln!(out, "<h3>{}</h3>", escape(&name));
        }
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(KVCACHE_NOTE));
        out.push_str(&trials_table(trials).to_html("figures kvcache"));
        let (criteria, classes) = criteria_table(trials);
        let _ = writeln!(
            out,
            "<h4>Pass/fail criteria</h4>\n<p class=\"note\">{}</p>",
            escape(CRITERIA_NOTE)
        );
        out.push_str(&criteria.to_html_rows("criteria", &classes));
        if trials.len() > 1 {
            let rows = spread_rows(trials.iter().map(|(_, f)| f));
            let _ = writeln!(out, "<h4>Over {} trials</h4>", trials.len());
            out.push_str(&spread_table(&rows).to_html("spread"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use iolab_core::kvcache::KvCacheFigures;
    use iolab_core::result::PhaseFigures;
    use iolab_core::units::{ByteCount, Nanos};

    use super::*;

    fn trial(name: &str, tokens: u64, read_p95_ms: u64) -> iolab_core::result::PhaseResult {
        let mut f = KvCacheFigures {
            duration: Nanos::from_secs(2),
            requests: 10,
            tokens_generated: tokens,
            storage_time: Nanos::from_secs(4),
            hits: 3,
            misses: 1,
            decode_bytes_read: ByteCount(1 << 30),
            decode_step_bytes_read: Some(ByteCount(1 << 28)),
            ..Default::default()
        };
        f.storage.read_device.p95 = Nanos::from_millis(read_p95_ms);
        let mut p = crate::test_support::phase(name, &[]);
        p.figures = Some(PhaseFigures::KvCache(Box::new(f)));
        p
    }

    #[test]
    fn a_kvcache_runs_trials_show_their_figures_criteria_and_spread() {
        let run = crate::test_support::run_with(
            "kv",
            vec![
                trial("kvcache trial 1", 1000, 20),
                trial("kvcache trial 2", 3000, 250),
            ],
        );
        let html = kvcache_html(&[run], &["r1".to_string()]);
        // Wall-clock tokens/s (tokens over 2 s) and storage tokens/s (over 4 s).
        for cell in [
            "<td>kvcache trial 1</td>",
            "500.0",
            "250.0",
            "1500.0",
            "750.0",
        ] {
            assert!(html.contains(cell), "{cell} in {html}");
        }
        // Hit rate, decode GiB and the read device p95 of each trial.
        assert!(html.contains("<td class=\"num\">0.750</td>"), "{html}");
        assert!(html.contains("<td class=\"num\">1.000</td>"), "{html}");
        // The decode steps' GiB beside it.
        assert!(html.contains("<td class=\"num\">0.250</td><td>"), "{html}");
        assert!(html.contains("<td class=\"num\">250.000</td>"), "{html}");
        // Trial 2's read device p95 fails its criterion, trial 1 passes them all.
        assert!(
            html.contains("<tr class=\"fail\"><td>kvcache trial 2</td><td>storage read device p95 (ms)</td><td class=\"num\">250.000</td><td class=\"num\">&lt; 200</td><td>FAIL</td></tr>"),
            "{html}"
        );
        assert_eq!(
            html.matches("<tr class=\"pass\"><td>kvcache trial 1</td>")
                .count(),
            3
        );
        assert!(html.contains("<h4>Over 2 trials</h4>"), "{html}");
        // The median of the two wall-clock rates.
        assert!(html.contains("<td class=\"num\">1000.000</td>"), "{html}");
    }

    #[test]
    fn a_run_without_kvcache_trials_has_no_section() {
        let run = crate::test_support::run_with("kv", vec![crate::test_support::phase("a", &[])]);
        assert_eq!(kvcache_html(&[run], &["r1".to_string()]), "");
    }
}
