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

/// The read after a checkpoint's write starts within this long of it when a flush
/// step stands in for the memory rule (v3.0's checkpointing rules).
pub const V3_READ_WITHIN_S: f64 = 30.0;

/// What v3.0's checkpoint memory rule looks at, for the node it is worst on.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CheckpointMemory {
    /// Checkpoint bytes the node wrote before the reads.
    pub node_bytes: u64,
    /// The node's memory.
    pub node_memory: u64,
    /// Whether a cache-flush step (fadvise DONTNEED of every file written) ran and
    /// succeeded before the reads.
    pub flushed: bool,
    /// Seconds from the end of the last write to the start of the first read.
    pub read_gap_s: Option<f64>,
}

/// v3.0's checkpoint memory rule: the checkpoints a node writes are more than 3 x its
/// memory (the reads cannot come from its page cache), or else a cache-flush step ran
/// and the read started within 30 s of the write.
pub fn v3_checkpoint_memory_rule(m: &CheckpointMemory) -> Check {
    let gib = |b: u64| b as f64 / 1073741824.0;
    let big = m.node_memory > 0 && m.node_bytes > 3 * m.node_memory;
    let gap_ok = m.read_gap_s.is_some_and(|g| g <= V3_READ_WITHIN_S);
    let gap = m.read_gap_s.map_or("no read".to_string(), |g| {
        format!("the read started {g:.1} s after the write")
    });
    let detail = if big {
        format!(
            "{:.2} GiB written per node, more than 3 x {:.2} GiB of memory",
            gib(m.node_bytes),
            gib(m.node_memory)
        )
    } else {
        format!(
            "{:.2} GiB written per node, not more than 3 x {:.2} GiB of memory: {}; {gap} (at most {V3_READ_WITHIN_S:.0} s)",
            gib(m.node_bytes),
            gib(m.node_memory),
            if m.flushed {
                "the written files were flushed from the page cache"
            } else {
                "no cache-flush step (--keep-cache, or it failed)"
            }
        )
    };
    Check {
        rule: "v3.0 checkpoint memory".into(),
        ok: big || (m.flushed && gap_ok),
        detail,
    }
}

/// v3.0's subset rule: a subset run (fewer ranks than the whole job) only for
/// llama3_8b on 8 processes.
pub fn v3_subset_rule(model: &str, subset: bool, ranks: u64) -> Check {
    Check {
        rule: "v3.0 subset".into(),
        ok: !subset || (model == "llama3_8b" && ranks == 8),
        detail: if subset {
            format!(
                "a subset run of {model} on {ranks} ranks; v3.0 allows subsets of llama3_8b on 8 only"
            )
        } else {
            format!("the whole job of {model} ({ranks} ranks)")
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoint_memory_wants_3x_memory_or_a_flush_and_a_read_within_30_s() {
        let g = 1u64 << 30;
        let mut m = CheckpointMemory {
            node_bytes: 100 * g,
            node_memory: 32 * g,
            flushed: false,
            read_gap_s: None,
        };
        assert!(v3_checkpoint_memory_rule(&m).ok, "100 GiB > 3 x 32 GiB");
        m.node_bytes = 96 * g;
        let c = v3_checkpoint_memory_rule(&m);
        assert!(
            !c.ok && c.detail.contains("no cache-flush step"),
            "{}",
            c.detail
        );
        m.flushed = true;
        m.read_gap_s = Some(30.0);
        assert!(v3_checkpoint_memory_rule(&m).ok, "30 s is within");
        m.read_gap_s = Some(30.5);
        let c = v3_checkpoint_memory_rule(&m);
        assert!(!c.ok && c.detail.contains("30.5 s after"), "{}", c.detail);
        m.read_gap_s = None;
        assert!(!v3_checkpoint_memory_rule(&m).ok, "no read: nothing shown");
    }

    #[test]
    fn subsets_only_of_8b_on_8() {
        assert!(v3_subset_rule("llama3_8b", true, 8).ok);
        assert!(!v3_subset_rule("llama3_8b", true, 4).ok);
        assert!(!v3_subset_rule("llama3_70b", true, 8).ok);
        assert!(v3_subset_rule("llama3_70b", false, 64).ok);
    }

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
