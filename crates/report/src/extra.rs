//! Figures a phase keeps by name rather than per operation (a targets run's statistics, a
//! ladder step's load, an IO500 phase's value): what each is called in a report, and its
//! value in its unit. Text, Markdown and HTML name them the same way.

use iolab_core::units::{ByteCount, BytesPerSec};

/// Whether a stored figure is listed with a phase's figures: not the samples of a
/// steady-state window (`steady_iops.3`), kept to recompute the verdict from.
pub fn listed(key: &str) -> bool {
    !iolab_core::steady::is_window_sample(key)
}

/// What a stored figure is, in words: the name a reader can look up in docs/figures.md.
pub fn label(key: &str) -> String {
    let known = match key {
        "aggregate_bytes_per_sec" => "sum of per-target rates (StorageBench's aggregate)",
        "wall_bytes_per_sec" => "total bytes over wall time",
        "total_bytes" => "total bytes moved",
        "average_bytes_per_sec" => "per-target rate, average",
        "median_bytes_per_sec" => "per-target rate, median",
        "min_bytes_per_sec" => "per-target rate, lowest",
        "max_bytes_per_sec" => "per-target rate, highest",
        "mad_bytes_per_sec" => "per-target rate, median absolute deviation",
        "bytes_per_sec" => "rate (bytes over this target's slowest thread's time)",
        "threshold_percent" => "slow threshold (below the reference by)",
        "vs_median_percent" => "against the median",
        "percent_of_rated" => "of the rated figure",
        "slow" => "flagged slow",
        "node_slow" => "node flagged slow",
        "slow_targets" => "targets flagged slow",
        "slow_nodes" => "nodes flagged slow",
        "ladder_load" => "ladder load (queue depth)",
        "objective_latency_ns" => "latency judged against the objective",
        "meets_objective" => "meets the objective",
        "knee" => "knee of the curve",
        "au_percent" => "accelerator utilization (AU, DLIO's)",
        "au_nominal_percent" => "AU over the asked compute",
        "au_min_percent" => "lowest accelerator's AU",
        "au_threshold_percent" => "AU threshold (MLPerf Storage)",
        "samples_per_sec" => "samples per second, all accelerators",
        "dlio_mib_per_sec" => "DLIO's I/O figure (samples/s x record length, MiB/s)",
        "load_mean_s" => "wait for a batch per step, mean (s)",
        "compute_mean_s" => "compute asked per step, mean (s)",
        "compute_measured_mean_s" => "compute measured per step, mean (s)",
        "first_step_mean_s" => "first step (loader start, wait and compute), mean (s)",
        "load_p50_s" => "wait for a batch per step, p50 (s)",
        "load_p99_s" => "wait for a batch per step, p99 (s)",
        "step_wait_mean_s" => "wait at the step barrier per step, mean (s)",
        "cpu_ns_per_sample" => "CPU time per sample (ns, all ranks)",
        "duration_mean_s" => "checkpoint duration, mean (slowest rank, s)",
        "gib_per_sec_mean" => "checkpoint throughput, mean (GiB/s)",
        "slowest_rank_mean_s" => "slowest rank's own time, mean (s)",
        "checkpoint_gib" => "one checkpoint (GiB)",
        "compress_ratio" => "compress ratio asked",
        "compress_ratio_measured" => "compress ratio measured (lz4 per write, sampled writes)",
        "compress_ratio_stream" => "compress ratio measured (lz4 stream, 64 KiB window)",
        "dedupe_ratio" => "dedupe ratio asked",
        "dedupe_ratio_measured" => "dedupe ratio measured (dedupe units, sampled writes)",
        "repeat_ratio_512" => "512-byte units over distinct ones (sampled writes)",
        "sampled_writes" => "writes sampled for the data figures",
        "latency_depth" => "queue depth the latency target settled at",
        "sampled_bytes" => "bytes sampled for the data figures",
        "steady_attained" => "steady state attained (--steady-state)",
        "steady_limit" => "steady-state limit (% of the window mean when given in %)",
        "steady_limit_is_percent" => "steady-state limit is a percentage",
        "steady_window_points" => "steady-state window (samples)",
        "steady_interval_ns" => "steady-state sample interval",
        "steady_ramp_ns" => "steady-state samples ignored for",
        "steady_samples" => "steady-state samples taken",
        "steady_at_ns" => "steady state reached at",
        "steady_criterion" => "steady-state criterion, last full window",
        "steady_max_deviation" => "largest deviation from the window mean",
        "steady_slope" => "least-squares slope per sample",
        "steady_mean_iops" => "window mean IOPS",
        "steady_mean_bytes_per_sec" => "window mean bandwidth",
        "pts_round" => "PTS round",
        "pts_iops" => "PTS cell IOPS (reads and writes)",
        "pts_window" => "in the PTS measurement window",
        "pts_steady" => "PTS steady state (this tracked cell)",
        "pts_window_average_iops" => "PTS window average IOPS",
        "pts_range_iops" => "PTS window range (max - min IOPS)",
        "pts_excursion_iops" => "PTS least-squares excursion (IOPS)",
        "pts_slope_iops" => "PTS least-squares slope (IOPS per round)",
        _ => "",
    };
    if known.is_empty() {
        key.replace('_', " ")
    } else {
        known.to_string()
    }
}

/// A stored figure in its unit, by its name: rates as bandwidth, bytes as sizes,
/// percentages with %, flags as yes/no, latencies as times, counts whole.
pub fn value(key: &str, v: f64) -> String {
    if matches!(
        key,
        "slow"
            | "node_slow"
            | "meets_objective"
            | "knee"
            | "steady_attained"
            | "steady_limit_is_percent"
    ) {
        return if v > 0.0 { "yes" } else { "no" }.to_string();
    }
    if key.ends_with("bytes_per_sec") {
        BytesPerSec(v).human()
    } else if key.ends_with("bytes") {
        ByteCount(v.max(0.0) as u64).human()
    } else if key.ends_with("percent") || key == "percent_of_rated" {
        format!("{v:.1}%")
    } else if key.ends_with("_ns") {
        iolab_core::units::Nanos(v.max(0.0) as u64).human()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_named_and_in_their_units() {
        assert_eq!(
            label("aggregate_bytes_per_sec"),
            "sum of per-target rates (StorageBench's aggregate)"
        );
        assert_eq!(label("wall_bytes_per_sec"), "total bytes over wall time");
        assert_eq!(label("io500-value"), "io500-value");
        assert_eq!(value("wall_bytes_per_sec", 1024.0 * 1024.0), "1.00 MiB/s");
        assert_eq!(value("total_bytes", 16.0 * 1048576.0), "16.0 MiB");
        assert_eq!(value("vs_median_percent", -5.06), "-5.1%");
        assert_eq!(value("slow", 1.0), "yes");
        assert_eq!(value("node_slow", 0.0), "no");
        assert_eq!(value("targets", 2.0), "2");
        assert_eq!(value("iops", 276212.468), "276212.47");
    }
}
