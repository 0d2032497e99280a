//! A target's end, [`finish_target`]: what this run wrote removed (unless --keep), the
//! data files earlier runs left and an empty work directory too, said on stderr.

use std::path::PathBuf;

use iolab_comm::{Comm, CommExt};

use super::PreparedTarget;
use crate::error::EngineError;

/// Removes this rank's files (its work directory's, and `files`: a workload's names)
/// unless `keep` and, once every rank is done, the data files earlier runs left (so the
/// work directory holds only this run's files) and the work directory if it is empty.
/// With `keep`, says which files stay. Collective on a directory target.
pub fn finish_target(
    comm: &dyn Comm,
    target: PreparedTarget,
    files: &[PathBuf],
    keep: bool,
) -> Result<(), EngineError> {
    let PreparedTarget::Dir { workdir, .. } = target else {
        return Ok(());
    };
    let name = |p: &PathBuf| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let mut removed = Ok(());
    // This run's files: stale for no one. With `keep` they stay.
    let mut ours = files.to_vec();
    ours.extend(workdir.used());
    let ours: Vec<String> = if keep {
        ours.iter().map(name).collect()
    } else {
        removed = workdir.remove_files(&ours);
        Vec::new()
    };
    // Every rank's kept names reach the ranks that tidy a directory.
    let kept: Vec<String> = comm
        .all_gather(&ours)
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .collect();
    if workdir.holds_lock() {
        if !keep {
            // Every rank has removed its files: the directories IOR's names made go too.
            workdir.remove_empty_dirs_of(files);
        }
        let stale = workdir.remove_stale(&kept);
        if !stale.is_empty() {
            eprintln!(
                "iolab: removed {} data file(s) an earlier run left in {}: {}",
                stale.len(),
                workdir.path().display(),
                abbreviated(&stale)
            );
        }
        if keep && !kept.is_empty() {
            let mut kept = kept.clone();
            kept.sort();
            kept.dedup();
            eprintln!(
                "iolab: kept {} file(s) in {} (--keep): {}",
                kept.len(),
                workdir.path().display(),
                abbreviated(&kept)
            );
        }
    }
    if keep {
        workdir.release();
        return Ok(());
    }
    let _ = workdir.remove_if_empty();
    removed
}

/// Up to 8 names, then how many more.
fn abbreviated(names: &[String]) -> String {
    let mut text = names.iter().take(8).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > 8 {
        text.push_str(&format!(" and {} more", names.len() - 8));
    }
    text
}
