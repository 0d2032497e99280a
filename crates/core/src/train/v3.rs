//! MLPerf Storage v3.0's dataset-size rule (Rules.md §3.1.2, mlpstorage's
//! `calculate_training_data_size`): [`v3_required_files`] and the [`v3_dataset_rule`]
//! the verdict carries.

use super::Check;

/// The files v3.0 requires: the larger of 500 steps x batch x accelerators in samples
/// and 5 x the hosts' memory in bytes, each rounded up to whole files.
pub fn v3_required_files(
    samples_per_file: u64,
    file_bytes: f64,
    batch: u64,
    accelerators: u64,
    hosts_memory: u64,
) -> u64 {
    let by_samples = (500 * batch * accelerators).div_ceil(samples_per_file.max(1));
    let by_bytes = (5.0 * hosts_memory as f64 / file_bytes.max(1.0)).ceil() as u64;
    by_samples.max(by_bytes)
}

/// The rule as a check: the run's files against the required count.
pub fn v3_dataset_rule(files: u64, required: u64) -> Check {
    Check {
        rule: "v3.0 dataset size".into(),
        ok: files >= required,
        detail: format!(
            "{files} files; v3.0 requires at least {required} (the larger of 500 steps x batch x accelerators and 5 x the hosts' memory)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_larger_of_steps_and_memory_in_whole_files() {
        // retinanet_b200, 8 accelerators, 24 GiB: 500 x 24 x 8 = 96,000 samples; 5 x
        // 24 GiB / 322,624 bytes = 399,379 files.
        let m = 24u64 << 30;
        assert_eq!(v3_required_files(1, 322_624.0, 24, 8, m), 399_379);
        assert_eq!(v3_required_files(1, 322_624.0, 24, 8, 0), 96_000);
        // dlrm: 4,718,592 rows a file: 500 x 16384 x 8 rows in 14 files.
        assert_eq!(v3_required_files(4_718_592, 3.6e9, 16_384, 8, 0), 14);
        assert!(!v3_dataset_rule(12, 96_000).ok);
        assert!(v3_dataset_rule(96_000, 96_000).ok);
    }
}
