//! MLPerf Storage's training presets: DLIO 2.0.0's workload files `unet3d_*`,
//! `resnet50_*` and `cosmoflow_*`, the values [`TrainSpec`](super::TrainSpec) starts from.

use super::{AcceleratorKind, LoaderKind, ShuffleKind, TrainFormat, TrainPreset};

/// A preset's settings (DLIO 2.0.0's workload files; MLPerf Storage v2.0 uses the same).
pub(super) struct PresetValues {
    pub(super) format: TrainFormat,
    pub(super) files: u64,
    pub(super) samples_per_file: u64,
    pub(super) record_length: f64,
    pub(super) record_length_stdev: f64,
    pub(super) loader: LoaderKind,
    pub(super) batch_size: u64,
    pub(super) read_threads: u32,
    pub(super) computation_threads: u32,
    pub(super) compute_a100: f64,
    pub(super) compute_h100: f64,
    pub(super) shuffle: ShuffleKind,
    pub(super) shuffle_size: u64,
    pub(super) au: f64,
}

pub(super) fn preset_values(p: TrainPreset) -> PresetValues {
    match p {
        TrainPreset::Unet3d => PresetValues {
            format: TrainFormat::Npz,
            files: 168,
            samples_per_file: 1,
            record_length: 146_600_628.0,
            record_length_stdev: 68_341_808.0,
            loader: LoaderKind::Pytorch,
            batch_size: 7,
            read_threads: 4,
            computation_threads: 1,
            compute_a100: 0.636,
            compute_h100: 0.323,
            shuffle: ShuffleKind::Seed,
            shuffle_size: 1024,
            au: 90.0,
        },
        TrainPreset::Resnet50 => PresetValues {
            format: TrainFormat::Tfrecord,
            files: 1024,
            samples_per_file: 1251,
            record_length: 114_660.07,
            record_length_stdev: 0.0,
            loader: LoaderKind::Tensorflow,
            batch_size: 400,
            read_threads: 8,
            computation_threads: 8,
            compute_a100: 0.435,
            compute_h100: 0.224,
            shuffle: ShuffleKind::Off,
            shuffle_size: 1024,
            au: 90.0,
        },
        TrainPreset::Cosmoflow => PresetValues {
            format: TrainFormat::Tfrecord,
            files: 524_288,
            samples_per_file: 1,
            record_length: 2_828_486.0,
            record_length_stdev: 71_311.0,
            loader: LoaderKind::Tensorflow,
            batch_size: 1,
            read_threads: 4,
            computation_threads: 1,
            compute_a100: 0.00551,
            compute_h100: 0.00350,
            shuffle: ShuffleKind::Seed,
            shuffle_size: 2,
            au: 70.0,
        },
    }
}

impl TrainPreset {
    /// DLIO's workload name for this preset on `acc` (`unet3d_h100`).
    pub fn dlio_workload(self, acc: AcceleratorKind) -> String {
        let model = match self {
            TrainPreset::Unet3d => "unet3d",
            TrainPreset::Resnet50 => "resnet50",
            TrainPreset::Cosmoflow => "cosmoflow",
        };
        let acc = match acc {
            AcceleratorKind::A100 => "a100",
            AcceleratorKind::H100 => "h100",
        };
        format!("{model}_{acc}")
    }
}
