//! MLPerf Storage's training presets, the values [`TrainSpec`](super::TrainSpec) starts
//! from: DLIO's workload files `<model>_<accelerator>.yaml`. v2.0's unet3d, resnet50 and
//! cosmoflow on a100/h100 (DLIO 2.0.0), and v3.0's (mlcommons/storage
//! `configs/dlio/workload/` at tag v3.0, docs/research/mlperf-storage-v3.md): unet3d on
//! b200, retinanet on b200/mi355 (and its older h100/a100 files), dlrm and flux on
//! b200/mi355 (parquet).

use super::parquet::{ParquetColumn, ParquetDtype, ParquetSchema};
use super::{AcceleratorKind, LoaderKind, ShuffleKind, TrainFormat, TrainPreset};

/// One workload file's settings.
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
    pub(super) compute: f64,
    pub(super) file_shuffle: ShuffleKind,
    pub(super) sample_shuffle: ShuffleKind,
    pub(super) shuffle_size: u64,
    pub(super) epochs: u32,
    pub(super) au: f64,
    pub(super) parquet: Option<ParquetSchema>,
}

/// The accelerators a model has a workload file for, in the order tried when the asked
/// one has none.
pub fn preset_accelerators(p: TrainPreset) -> &'static [AcceleratorKind] {
    use AcceleratorKind::*;
    match p {
        TrainPreset::Unet3d => &[B200, H100, A100],
        TrainPreset::Retinanet => &[B200, Mi355, H100, A100],
        TrainPreset::Resnet50 | TrainPreset::Cosmoflow => &[H100, A100],
        TrainPreset::Dlrm | TrainPreset::Flux => &[B200, Mi355],
    }
}

fn unet3d(acc: AcceleratorKind) -> PresetValues {
    // v3.0's unet3d_b200 has 7200 files (~984 GiB) where v2.0's had 168.
    let (files, compute) = match acc {
        AcceleratorKind::A100 => (168, 0.636),
        AcceleratorKind::H100 => (168, 0.323),
        _ => (7200, 0.162),
    };
    PresetValues {
        format: TrainFormat::Npz,
        files,
        samples_per_file: 1,
        record_length: 146_600_628.0,
        record_length_stdev: 68_341_808.0,
        loader: LoaderKind::Pytorch,
        batch_size: 7,
        read_threads: 4,
        computation_threads: 1,
        compute,
        file_shuffle: ShuffleKind::Seed,
        sample_shuffle: ShuffleKind::Seed,
        shuffle_size: 1024,
        epochs: 5,
        au: 90.0,
        parquet: None,
    }
}

fn retinanet(acc: AcceleratorKind) -> PresetValues {
    // b200/mi355: v3.0's files; h100/a100: the older files in the repository's history
    // (a different dataset: 1,743,042 files of 153,600 +- 51,200 bytes).
    let (files, len, stdev, batch, epochs, compute) = match acc {
        AcceleratorKind::B200 => (1_170_301, 322_957.0, 0.0, 24, 8, 0.04755),
        AcceleratorKind::Mi355 => (1_170_301, 322_957.0, 0.0, 32, 8, 0.0634),
        AcceleratorKind::H100 => (1_743_042, 153_600.0, 51_200.0, 16, 5, 0.180),
        AcceleratorKind::A100 => (1_743_042, 153_600.0, 51_200.0, 16, 5, 0.210),
    };
    PresetValues {
        format: TrainFormat::Jpeg,
        files,
        samples_per_file: 1,
        record_length: len,
        record_length_stdev: stdev,
        loader: LoaderKind::Pytorch,
        batch_size: batch,
        read_threads: 8,
        computation_threads: 1,
        compute,
        file_shuffle: ShuffleKind::Seed,
        sample_shuffle: ShuffleKind::Seed,
        shuffle_size: 1024,
        epochs,
        au: 85.0,
        parquet: None,
    }
}

/// dlrm's 200 scalar columns `feature_000`..`feature_199`, by dtype size (2 float16,
/// 4 float32, 8 float64, 1 int8), as dlrm_b200.yaml lists them: 761 bytes a row.
const DLRM_DTYPES: &str = "22884241214484124442888824422484842281112424818884411444142482814214242424482148114421214144248842122824822484881221184122111211412482282488241184848811188441424242828241821811112218882811248184844882";

/// The 40 columns dlrm's config marks `read: true` (DLIO itself never reads the flag).
pub const DLRM_READ: [u32; 40] = [
    11, 17, 18, 20, 25, 31, 41, 43, 49, 53, 58, 59, 67, 68, 71, 74, 75, 88, 90, 91, 92, 93, 94, 96,
    97, 116, 117, 137, 141, 147, 154, 155, 158, 160, 162, 169, 180, 186, 189, 195,
];

fn dlrm_schema() -> ParquetSchema {
    let columns = DLRM_DTYPES
        .bytes()
        .enumerate()
        .map(|(i, d)| ParquetColumn {
            name: format!("feature_{i:03}"),
            dtype: match d {
                b'2' => ParquetDtype::Float16,
                b'4' => ParquetDtype::Float32,
                b'8' => ParquetDtype::Float64,
                _ => ParquetDtype::Int8,
            },
            size: 1,
            read: DLRM_READ.contains(&(i as u32)),
        })
        .collect();
    ParquetSchema {
        row_group_size: 6144,
        columns,
    }
}

/// flux's five float32 list columns (2,164,832 bytes a row); no row_group_size in its
/// config, so DLIO's default 1024 (> 288 rows: one row group per file).
fn flux_schema() -> ParquetSchema {
    let col = |name: &str, size: u64| ParquetColumn {
        name: name.to_string(),
        dtype: ParquetDtype::Float32,
        size,
        read: true,
    };
    ParquetSchema {
        row_group_size: 1024,
        columns: vec![
            col("t5_encodings", 524_328),
            col("clip_encodings", 409),
            col("mean", 8232),
            col("logvar", 8232),
            col("timestamp", 7),
        ],
    }
}

fn parquet_preset(p: TrainPreset, acc: AcceleratorKind) -> PresetValues {
    let mi = acc == AcceleratorKind::Mi355;
    let (files, rows, schema, batch, threads, compute, au) = if p == TrainPreset::Dlrm {
        let compute = if mi { 0.0005625 } else { 0.000375 };
        (1024, 4_718_592, dlrm_schema(), 16_384, 4, compute, 70.0)
    } else {
        let (batch, compute) = if mi { (72, 2.025) } else { (48, 1.35) };
        (4296, 288, flux_schema(), batch, 8, compute, 90.0)
    };
    PresetValues {
        format: TrainFormat::Parquet,
        files,
        samples_per_file: rows,
        record_length: schema.row_bytes() as f64,
        record_length_stdev: 0.0,
        loader: LoaderKind::Pytorch,
        batch_size: batch,
        read_threads: threads,
        computation_threads: 1,
        compute,
        file_shuffle: ShuffleKind::Seed,
        sample_shuffle: ShuffleKind::Off,
        shuffle_size: 1024,
        epochs: 1,
        au,
        parquet: Some(schema),
    }
}

fn tfrecord_preset(p: TrainPreset, acc: AcceleratorKind) -> PresetValues {
    let a100 = acc == AcceleratorKind::A100;
    let resnet = p == TrainPreset::Resnet50;
    PresetValues {
        format: TrainFormat::Tfrecord,
        files: if resnet { 1024 } else { 524_288 },
        samples_per_file: if resnet { 1251 } else { 1 },
        record_length: if resnet { 114_660.07 } else { 2_828_486.0 },
        record_length_stdev: if resnet { 0.0 } else { 71_311.0 },
        loader: LoaderKind::Tensorflow,
        batch_size: if resnet { 400 } else { 1 },
        read_threads: if resnet { 8 } else { 4 },
        computation_threads: if resnet { 8 } else { 1 },
        compute: match (resnet, a100) {
            (true, true) => 0.435,
            (true, false) => 0.224,
            (false, true) => 0.00551,
            (false, false) => 0.00350,
        },
        file_shuffle: if resnet {
            ShuffleKind::Off
        } else {
            ShuffleKind::Seed
        },
        sample_shuffle: if resnet {
            ShuffleKind::Off
        } else {
            ShuffleKind::Seed
        },
        shuffle_size: if resnet { 1024 } else { 2 },
        epochs: 5,
        au: if resnet { 90.0 } else { 70.0 },
        parquet: None,
    }
}

/// The workload file of `p` on `acc`, None when MLPerf Storage has none (unet3d_mi355,
/// resnet50/cosmoflow on b200/mi355, dlrm/flux on h100/a100 at v3.0).
pub(super) fn preset_values(p: TrainPreset, acc: AcceleratorKind) -> Option<PresetValues> {
    if !preset_accelerators(p).contains(&acc) {
        return None;
    }
    Some(match p {
        TrainPreset::Unet3d => unet3d(acc),
        TrainPreset::Retinanet => retinanet(acc),
        TrainPreset::Dlrm | TrainPreset::Flux => parquet_preset(p, acc),
        TrainPreset::Resnet50 | TrainPreset::Cosmoflow => tfrecord_preset(p, acc),
    })
}

impl TrainPreset {
    pub fn name(self) -> &'static str {
        match self {
            TrainPreset::Unet3d => "unet3d",
            TrainPreset::Resnet50 => "resnet50",
            TrainPreset::Cosmoflow => "cosmoflow",
            TrainPreset::Retinanet => "retinanet",
            TrainPreset::Dlrm => "dlrm",
            TrainPreset::Flux => "flux",
        }
    }

    /// DLIO's workload name for this preset on `acc` (`unet3d_h100`).
    pub fn dlio_workload(self, acc: AcceleratorKind) -> String {
        format!("{}_{}", self.name(), acc.name())
    }

    /// Whether MLPerf Storage v3.0 takes this model in its closed and open categories
    /// (unet3d and retinanet; the others run only as whatif).
    pub fn v3_submittable(self) -> bool {
        matches!(self, TrainPreset::Unet3d | TrainPreset::Retinanet)
    }
}

impl AcceleratorKind {
    pub fn name(self) -> &'static str {
        match self {
            AcceleratorKind::A100 => "a100",
            AcceleratorKind::H100 => "h100",
            AcceleratorKind::B200 => "b200",
            AcceleratorKind::Mi355 => "mi355",
        }
    }

    /// v3.0's closed and open accelerators (b200, mi355); a100 and h100 are whatif only.
    pub fn v3_submittable(self) -> bool {
        matches!(self, AcceleratorKind::B200 | AcceleratorKind::Mi355)
    }

    /// Memory per accelerator (Rules.md Table 3), for the checkpoint memory rule.
    pub fn memory_gb(self) -> u64 {
        match self {
            AcceleratorKind::A100 | AcceleratorKind::H100 => 80,
            AcceleratorKind::B200 => 180,
            AcceleratorKind::Mi355 => 288,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dlrm_rows_are_761_bytes_of_200_columns_and_flux_2164832() {
        let d = dlrm_schema();
        assert_eq!(d.columns.len(), 200);
        assert_eq!(d.row_bytes(), 761);
        assert_eq!(d.columns.iter().filter(|c| c.read).count(), 40);
        assert_eq!(d.columns[11].name, "feature_011");
        assert_eq!(flux_schema().row_bytes(), 2_164_832);
    }

    #[test]
    fn every_v3_config_has_its_figures() {
        let r = preset_values(TrainPreset::Retinanet, AcceleratorKind::B200).unwrap();
        assert_eq!((r.files, r.batch_size, r.compute), (1_170_301, 24, 0.04755));
        let r = preset_values(TrainPreset::Retinanet, AcceleratorKind::Mi355).unwrap();
        assert_eq!((r.batch_size, r.compute, r.au), (32, 0.0634, 85.0));
        let u = preset_values(TrainPreset::Unet3d, AcceleratorKind::B200).unwrap();
        assert_eq!((u.files, u.compute), (7200, 0.162));
        assert!(preset_values(TrainPreset::Unet3d, AcceleratorKind::Mi355).is_none());
        let f = preset_values(TrainPreset::Flux, AcceleratorKind::Mi355).unwrap();
        assert_eq!(
            (f.batch_size, f.compute, f.samples_per_file),
            (72, 2.025, 288)
        );
        let d = preset_values(TrainPreset::Dlrm, AcceleratorKind::B200).unwrap();
        assert_eq!((d.batch_size, d.compute, d.au), (16_384, 0.000375, 70.0));
        assert!(preset_values(TrainPreset::Dlrm, AcceleratorKind::H100).is_none());
    }
}
