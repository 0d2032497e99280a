//! DLIO's summary.json: [`render`] writes an iolab training run in its shape (so the
//! tools that read DLIO's results read iolab's), [`parse`] reads DLIO's (to compare).

use iolab_core::train::RunFigures;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::dlio::CompatError;

/// What iolab reads of a DLIO summary.json.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DlioSummary {
    pub num_accelerators: u64,
    pub au_percent: Vec<f64>,
    pub au_mean_percent: f64,
    pub samples_per_sec: Vec<f64>,
    pub samples_per_sec_mean: f64,
    pub io_mib_per_sec_mean: f64,
    pub au_met: Option<bool>,
    /// Checkpointing (DLIO's mlperf_storage_v2.0 branch): GB is 2^30 bytes there.
    pub checkpoint_size_gib: Option<f64>,
    pub save_gib_per_sec_mean: Option<f64>,
    pub save_seconds_mean: Option<f64>,
    pub load_gib_per_sec_mean: Option<f64>,
    pub load_seconds_mean: Option<f64>,
}

/// The facts of a run DLIO's summary carries beside its figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SummaryContext {
    pub hosts: Vec<String>,
    pub host_memory_gib: Vec<f64>,
    pub num_files_train: u64,
    pub num_samples_per_file: u64,
    pub start: String,
    pub end: String,
    pub data_size_per_host_gib: f64,
}

/// An iolab run as DLIO's summary.json.
pub fn render(f: &RunFigures, ctx: &SummaryContext) -> Value {
    let au: Vec<f64> = f.epochs.iter().map(|e| e.au_percent).collect();
    let tp: Vec<f64> = f.epochs.iter().map(|e| e.samples_per_sec).collect();
    let caching: Vec<u8> = ctx
        .host_memory_gib
        .iter()
        .map(|m| u8::from(*m > ctx.data_size_per_host_gib))
        .collect();
    json!({
        "start": ctx.start,
        "end": ctx.end,
        "num_accelerators": f.accelerators,
        "num_hosts": ctx.hosts.len(),
        "hostname": ctx.hosts.first().cloned().unwrap_or_default(),
        "num_files_train": ctx.num_files_train,
        "num_files_eval": 0,
        "num_samples_per_file": ctx.num_samples_per_file,
        "host_memory_GB": ctx.host_memory_gib,
        "data_size_per_host_GB": ctx.data_size_per_host_gib,
        "potential_caching": caching,
        "epochs": f.epochs.len(),
        "metric": {
            "train_au_percentage": au,
            "train_au_mean_percentage": f.au_mean_percent,
            "train_au_meet_expectation": if f.au_met { "success" } else { "fail" },
            "train_au_stdev_percentage": f.au_stdev_percent,
            "train_throughput_samples_per_second": tp,
            "train_throughput_mean_samples_per_second": f.samples_per_sec_mean,
            "train_throughput_stdev_samples_per_second": f.samples_per_sec_stdev,
            "train_io_mean_MB_per_second": f.dlio_mib_per_sec_mean,
            "train_io_stdev_MB_per_second": f.samples_per_sec_stdev * if f.samples_per_sec_mean > 0.0 { f.dlio_mib_per_sec_mean / f.samples_per_sec_mean } else { 0.0 },
        },
        "generator": format!("iolab {}", env!("CARGO_PKG_VERSION")),
    })
}

fn floats(v: Option<&Value>) -> Vec<f64> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default()
}

/// Reads DLIO's summary.json (at most 16 MiB of it).
pub fn parse(text: &str) -> Result<DlioSummary, CompatError> {
    if text.len() > 16 << 20 {
        return Err(CompatError::new("summary.json is larger than 16 MiB"));
    }
    let v: Value = serde_json::from_str(text)
        .map_err(|e| CompatError::new(format!("summary.json is not JSON: {e}")))?;
    let m = v
        .get("metric")
        .ok_or_else(|| CompatError::new("summary.json has no \"metric\" object"))?;
    let f = |k: &str| m.get(k).and_then(Value::as_f64);
    Ok(DlioSummary {
        num_accelerators: v
            .get("num_accelerators")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        au_percent: floats(m.get("train_au_percentage")),
        au_mean_percent: f("train_au_mean_percentage").unwrap_or(0.0),
        samples_per_sec: floats(m.get("train_throughput_samples_per_second")),
        samples_per_sec_mean: f("train_throughput_mean_samples_per_second").unwrap_or(0.0),
        io_mib_per_sec_mean: f("train_io_mean_MB_per_second").unwrap_or(0.0),
        au_met: m
            .get("train_au_meet_expectation")
            .and_then(Value::as_str)
            .map(|s| s == "success"),
        checkpoint_size_gib: f("checkpoint_size_GB"),
        save_gib_per_sec_mean: f("save_checkpoint_io_mean_GB_per_second"),
        save_seconds_mean: f("save_checkpoint_duration_mean_seconds"),
        load_gib_per_sec_mean: f("load_checkpoint_io_mean_GB_per_second"),
        load_seconds_mean: f("load_checkpoint_duration_mean_seconds"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_core::train::EpochFigures;

    #[test]
    fn renders_what_parse_reads() {
        let e = |au: f64, tp: f64| EpochFigures {
            au_percent: au,
            samples_per_sec: tp,
            ..Default::default()
        };
        let f = RunFigures::of(2, vec![e(90.0, 10.0), e(94.0, 12.0)], 1_048_576.0, 90.0);
        let v = render(&f, &SummaryContext::default());
        let back = parse(&v.to_string()).unwrap();
        assert_eq!(back.num_accelerators, 2);
        assert_eq!(back.au_percent, vec![90.0, 94.0]);
        assert!((back.au_mean_percent - 92.0).abs() < 1e-9);
        assert!((back.io_mib_per_sec_mean - 11.0).abs() < 1e-9);
        assert_eq!(back.au_met, Some(true));
    }

    #[test]
    fn reads_dlio_s_own_summary() {
        // The metric block DLIO 2.0.0 wrote for unet3d_h100 at 32 files here.
        let text = r#"{"num_accelerators": 2, "metric": {"train_au_percentage": [93.1, 94.5],
            "train_au_mean_percentage": 93.8, "train_au_meet_expectation": "success",
            "train_throughput_samples_per_second": [18.2, 17.8],
            "train_throughput_mean_samples_per_second": 18.0,
            "train_io_mean_MB_per_second": 2516.5}}"#;
        let s = parse(text).unwrap();
        assert_eq!(s.au_percent.len(), 2);
        assert_eq!(s.samples_per_sec_mean, 18.0);
        assert!(parse("{}").unwrap_err().to_string().contains("metric"));
    }
}
