//! Reads that only check what an earlier run left (fio's verify_only): [`check_kept`]
//! accepts the files of such a read only when iolab's record beside each one says an
//! earlier `--verify` write filled it with the blocks this read checks; the read never
//! lays out or writes, so anything else is refused before any I/O.

use std::path::Path;

use iolab_core::spec::DataSpec;

use crate::error::EngineError;
use crate::plan::FilePlan;
use crate::workdir::{FileInfo, VerifyInfo, WorkDir};

/// Checks that every one of `files` holds the verify blocks `spec` reads, as recorded
/// when iolab wrote them: a refusal ([`EngineError::NothingToVerify`]) names the first
/// file that is missing, has no record, or was written otherwise; a file cut shorter
/// than iolab wrote it since is [`EngineError::KeptFileChanged`] (a failed check).
/// `workdir` None: a device or image file, whose record is an attribute of the image.
pub fn check_kept(
    files: &[FilePlan],
    workdir: Option<&WorkDir>,
    spec: &DataSpec,
) -> Result<(), EngineError> {
    let want = VerifyInfo::of(spec).filter(|_| spec.verify);
    for f in files {
        let refuse = |what: String| EngineError::NothingToVerify {
            path: f.path.clone(),
            what,
        };
        // A work directory's file has a sidecar; an image file iolab wrote carries its
        // record in an attribute that any later write voids; a block device has none.
        let recorded = match workdir {
            Some(w) => w.recorded(&f.path),
            None => iolab_backend::device::image_record(&f.path)
                .and_then(|text| serde_json::from_str::<FileInfo>(&text).ok())
                .map(|info| (info, std::fs::metadata(&f.path).ok().map(|m| m.len()))),
        };
        let Some((info, actual)) = recorded else {
            return Err(refuse(if missing(&f.path) {
                "does not exist".into()
            } else if workdir.is_some() {
                "carries no record of data iolab wrote".into()
            } else {
                "carries no record of data iolab wrote (a device never does; an image's is voided by any write since)".into()
            }));
        };
        let (Some(have), Some(want)) = (info.verify, want) else {
            return Err(refuse("was written by iolab without verify".into()));
        };
        if have != want {
            return Err(refuse(format!(
                "holds verify blocks of {} bytes with seed {}, where this job checks {} bytes with seed {}",
                have.block_size, have.seed, want.block_size, want.seed
            )));
        }
        match actual {
            Some(a) if a >= info.size => {}
            other => {
                return Err(EngineError::KeptFileChanged {
                    path: f.path.clone(),
                    what: match other {
                        None => format!("is gone (iolab wrote {} bytes)", info.size),
                        Some(a) => format!("holds {a} bytes where iolab wrote {}", info.size),
                    },
                });
            }
        }
        if info.size < f.size {
            return Err(refuse(format!(
                "holds {} bytes of verify blocks, where this job checks {}",
                info.size, f.size
            )));
        }
    }
    Ok(())
}

fn missing(path: &Path) -> bool {
    matches!(std::fs::symlink_metadata(path), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use iolab_core::units::ByteCount;

    use super::*;
    use crate::layout::lay_out;
    use crate::plan::BlockOwners;

    fn file(wd: &WorkDir, name: &str, size: u64) -> FilePlan {
        FilePlan {
            path: wd.path().join(name),
            id: 0,
            size,
            owners: BlockOwners::One(0),
        }
    }

    fn checked(block: u64, seed: u64) -> DataSpec {
        DataSpec {
            block_size: ByteCount(block),
            seed,
            verify: true,
            ..DataSpec::default()
        }
    }

    fn refusal(r: Result<(), EngineError>) -> String {
        match r {
            Err(e @ EngineError::NothingToVerify { .. }) => e.to_string(),
            other => panic!("not a refusal: {other:?}"),
        }
    }

    /// Only files iolab recorded as holding the same verify blocks, at least as long as
    /// the read, pass; each other case is refused naming the file, and nothing is made.
    #[test]
    fn only_recorded_verify_blocks_are_accepted() {
        let base = tempfile::tempdir().unwrap();
        let wd = WorkDir::create_or_adopt(base.path(), None).unwrap();
        let spec = checked(4096, 7);
        let f = file(&wd, "w.0.0", 64 << 10);
        let gone = refusal(check_kept(std::slice::from_ref(&f), Some(&wd), &spec));
        assert!(gone.contains("w.0.0 does not exist"), "{gone}");
        assert!(!f.path.exists(), "a refusal makes nothing");
        std::fs::write(&f.path, vec![0u8; 64 << 10]).unwrap();
        let bare = refusal(check_kept(std::slice::from_ref(&f), Some(&wd), &spec));
        assert!(bare.contains("carries no record"), "{bare}");
        assert_eq!(std::fs::read(&f.path).unwrap(), vec![0u8; 64 << 10]);
        std::fs::remove_file(&f.path).unwrap();
        lay_out(
            std::slice::from_ref(&f),
            Some(&wd),
            &spec,
            4096,
            &AtomicBool::new(false),
        )
        .unwrap();
        check_kept(std::slice::from_ref(&f), Some(&wd), &spec).unwrap();
        let other = refusal(check_kept(
            std::slice::from_ref(&f),
            Some(&wd),
            &checked(8192, 7),
        ));
        assert!(
            other.contains("blocks of 4096 bytes with seed 7"),
            "{other}"
        );
        let longer = file(&wd, "w.0.0", 128 << 10);
        let short = refusal(check_kept(&[longer], Some(&wd), &spec));
        assert!(
            short.contains("holds 65536 bytes of verify blocks"),
            "{short}"
        );
        let image = refusal(check_kept(std::slice::from_ref(&f), None, &spec));
        assert!(image.contains("an image's is voided"), "{image}");
        // Cut behind iolab's back: a failed check, not a refusal.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&f.path)
            .unwrap()
            .set_len(4096)
            .unwrap();
        let cut = check_kept(std::slice::from_ref(&f), Some(&wd), &spec);
        assert!(
            matches!(cut, Err(EngineError::KeptFileChanged { .. })),
            "{cut:?}"
        );
    }
}
