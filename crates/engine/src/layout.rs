//! Untimed preparation of data files: [`lay_out`] writes files in full before they are
//! read (reading a sparse file measures nothing), reusing kept files that already hold
//! suitable data; [`create_for_write`] creates or truncates files a write phase will
//! fill; [`set_cache_state`] puts the page cache in the state a read phase asks for.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use iolab_backend::files::{CacheDrop, drop_caches};
use iolab_backend::{BufferPool, DataFile, OpenSpec};
use iolab_core::data_gen::{DataBase, UNIT, fill_unique};
use iolab_core::pattern::{fill_ior_timestamp, fill_verify};
use iolab_core::spec::{CacheMode, DataPattern, DataSpec};

use crate::error::EngineError;
use crate::plan::FilePlan;
use crate::workdir::{FileInfo, VerifyInfo, WorkDir};

/// Bytes per write while laying out.
const CHUNK: u64 = 1 << 20;

/// What laying out did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LayoutReport {
    pub written_bytes: u64,
    pub reused_files: usize,
}

fn open_rw(
    path: &std::path::Path,
    direct: bool,
    create: bool,
    truncate: bool,
) -> Result<DataFile, EngineError> {
    Ok(DataFile::open(
        path,
        OpenSpec {
            write: true,
            create,
            truncate,
            direct,
            sync: false,
        },
    )?)
}

/// Writes `files` in full with the data a read phase expects: pseudo-random, or verify
/// blocks of `block_size` when `verify` is set. Files whose sidecar says they already
/// hold suitable data are kept. Up to `threads` files (or regions of one file) at once.
pub fn lay_out(
    files: &[FilePlan],
    workdir: Option<&WorkDir>,
    spec: &DataSpec,
    alignment: u64,
    stop: &AtomicBool,
) -> Result<LayoutReport, EngineError> {
    let verify = VerifyInfo::of(spec);
    let (todo, reused_files) = files_to_write(files, workdir, spec, verify)?;
    let threads = (spec.threads as usize).max(1);
    let pieces = pieces_of(&todo, threads, spec.unit());
    create_files(&todo, workdir, spec)?;
    let layout = &Layout {
        spec,
        verify,
        alignment,
        stop,
    };
    let results: Vec<Result<u64, EngineError>> = std::thread::scope(|s| {
        let handles: Vec<_> = pieces
            .chunks(pieces.len().div_ceil(threads).max(1))
            .map(|group| {
                s.spawn(move || -> Result<u64, EngineError> {
                    let mut written = 0;
                    for (f, start, len) in group {
                        written += layout.write_piece(f, *start, *len)?;
                    }
                    Ok(written)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or(Err(EngineError::Setup("a layout thread panicked".into())))
            })
            .collect()
    });
    let mut report = LayoutReport {
        written_bytes: 0,
        reused_files,
    };
    for r in results {
        report.written_bytes += r?;
    }
    if let Some(w) = workdir {
        seal_files(&todo, w, verify)?;
    }
    Ok(report)
}

/// The files of `files` that must be written, and how many are kept as they are; an
/// error when --verify finds a file iolab wrote changed behind its back.
fn files_to_write<'f>(
    files: &'f [FilePlan],
    workdir: Option<&WorkDir>,
    spec: &DataSpec,
    verify: Option<VerifyInfo>,
) -> Result<(Vec<&'f FilePlan>, usize), EngineError> {
    let mut reused = 0;
    let mut todo: Vec<&FilePlan> = Vec::new();
    for f in files {
        if let Some(w) = workdir {
            w.note_used(&f.path);
        }
        // Under --verify, a file iolab wrote with verify data that is now shorter or
        // gone was changed behind its back: that is a failure, not a file to lay out anew.
        if spec.verify
            && let (Some(want), Some(w)) = (verify, workdir)
            && let Some((info, actual)) = w.recorded(&f.path)
            && info.verify == Some(want)
            && actual.is_none_or(|a| a < info.size)
        {
            return Err(EngineError::KeptFileChanged {
                path: f.path.clone(),
                what: match actual {
                    None => format!("is gone (iolab wrote {} bytes)", info.size),
                    Some(a) => format!("holds {a} bytes where iolab wrote {}", info.size),
                },
            });
        }
        let reusable = workdir
            .and_then(|w| w.file_info(&f.path))
            .is_some_and(|info| info.size >= f.size && (!spec.verify || info.verify == verify));
        // A device is only written for --verify; its contents are otherwise read as
        // they are (there are no holes on a device).
        let device = workdir.is_none();
        if reusable || (device && !spec.verify) {
            reused += 1;
        } else {
            todo.push(f);
        }
    }
    Ok((todo, reused))
}

/// The work split into (file, start, len) pieces of whole `unit`s, one per thread at
/// most.
fn pieces_of<'f>(
    todo: &[&'f FilePlan],
    threads: usize,
    unit: u64,
) -> Vec<(&'f FilePlan, u64, u64)> {
    let mut pieces = Vec::new();
    for f in todo {
        let per_file = if todo.len() >= threads {
            1
        } else {
            threads / todo.len()
        };
        let blocks = f.size / unit;
        let per = blocks.div_ceil(per_file as u64).max(1);
        let mut b = 0;
        while b < blocks {
            let n = per.min(blocks - b);
            pieces.push((*f, b * unit, n * unit));
            b += n;
        }
    }
    pieces
}

/// Creates each file once (forgetting what its sidecar said) before its pieces are
/// written in parallel.
fn create_files(
    todo: &[&FilePlan],
    workdir: Option<&WorkDir>,
    spec: &DataSpec,
) -> Result<(), EngineError> {
    if let Some(w) = workdir {
        for f in todo {
            w.clear_file_info(&f.path);
        }
    }
    for f in todo {
        if let Some(w) = workdir {
            make_parent(w, &f.path)?;
            w.note_created(&f.path);
        }
        open_rw(&f.path, spec.direct, true, false)?;
    }
    Ok(())
}

/// Makes the files written durable, out of the page cache, and recorded as holding
/// their data.
fn seal_files(
    todo: &[&FilePlan],
    w: &WorkDir,
    verify: Option<VerifyInfo>,
) -> Result<(), EngineError> {
    for f in todo {
        let file = open_rw(&f.path, false, false, false)?;
        file.fsync()?;
        // The layout's pages leave the page cache, as fio drops what it laid out
        // (filesetup.c, after extend_file): a phase starts from the state its cache
        // policy sets, not from the layout's leftovers. Advice: a failure keeps them.
        let _ = file.advise_dont_need();
        w.set_file_info(
            &f.path,
            &FileInfo {
                size: f.size,
                verify,
            },
        )?;
    }
    Ok(())
}

/// What every piece of a layout is written with: the phase's spec, its verify data if
/// any, the buffers' alignment and the stop flag.
struct Layout<'a> {
    spec: &'a DataSpec,
    verify: Option<VerifyInfo>,
    alignment: u64,
    stop: &'a AtomicBool,
}

impl Layout<'_> {
    /// Writes `len` bytes of `f` from `start`; the bytes written.
    fn write_piece(&self, f: &FilePlan, start: u64, len: u64) -> Result<u64, EngineError> {
        let Layout {
            spec,
            verify,
            alignment,
            stop,
        } = *self;
        let bs = spec.unit();
        let chunk = if bs >= CHUNK { bs } else { CHUNK / bs * bs };
        let file = open_rw(&f.path, spec.direct, false, false)?;
        let mut pool = BufferPool::new(1, chunk, alignment)?;
        // iolab's data, as the writes make it: units named by their place in the file, drawn
        // from a base of this piece's own.
        let base = (verify.is_none())
            .then(|| DataBase::new(iolab_core::rng::mix(&[spec.seed, f.id, start])));
        let mut off = start;
        let end = start + len;
        while off < end {
            // Laying out terabytes takes a while: Ctrl-C must not wait for it.
            if stop.load(Ordering::Relaxed) {
                return Err(EngineError::Interrupted);
            }
            let n = chunk.min(end - off);
            let buf = &mut pool.get_mut(0)[..n as usize];
            match verify {
                Some(v) if v.pattern == DataPattern::IorTimestamp => {
                    for (i, block) in buf.chunks_exact_mut(bs as usize).enumerate() {
                        let owner = f.owner_at(off + i as u64 * bs, bs);
                        fill_ior_timestamp(block, v.seed as u32, owner);
                    }
                }
                Some(v) => {
                    for (i, block) in buf.chunks_exact_mut(bs as usize).enumerate() {
                        fill_verify(block, v.seed, f.id, off + i as u64 * bs);
                    }
                }
                None => {
                    if let Some(base) = &base {
                        fill_unique(buf, base, off / UNIT as u64);
                    }
                }
            }
            file.write_all_at(buf, off)?;
            off += n;
        }
        Ok(len)
    }
}

/// Creates (truncating) the files a write phase fills, and preallocates them if asked.
pub fn create_for_write(
    files: &[FilePlan],
    workdir: Option<&WorkDir>,
    spec: &DataSpec,
) -> Result<(), EngineError> {
    let Some(w) = workdir else { return Ok(()) };
    for f in files {
        make_parent(w, &f.path)?;
        w.clear_file_info(&f.path);
        w.note_created(&f.path);
        let file = open_rw(&f.path, false, true, true)?;
        if spec.preallocate {
            match file.allocate(f.size) {
                // A file system that cannot preallocate is written without, as fio's
                // default fallocate=native does.
                Err(e) if matches!(e.errno(), Some(libc::EOPNOTSUPP | libc::ENOSYS)) => {}
                other => other?,
            }
        }
    }
    Ok(())
}

/// Makes the directory a file is named in (`ior-easy/` of IOR's names) when it lies
/// inside the work directory and is missing.
fn make_parent(w: &WorkDir, file: &std::path::Path) -> Result<(), EngineError> {
    if let Some(parent) = file.parent()
        && parent != w.path()
        && parent.starts_with(w.path())
        && !iolab_backend::vfs::exists(parent)
    {
        iolab_backend::vfs::create_dir_all(parent)
            .map_err(|e| EngineError::workdir("cannot make", parent, e))?;
    }
    Ok(())
}

/// Puts the page cache in the state `spec` asks for before a phase that reads
/// `files`; returns warnings to attach to the phase.
pub fn set_cache_state(files: &[FilePlan], spec: &DataSpec) -> Result<Vec<String>, EngineError> {
    let mut warnings = Vec::new();
    if spec.direct {
        return Ok(warnings);
    }
    let opened: Vec<DataFile> = files
        .iter()
        .map(|f| DataFile::open(&f.path, OpenSpec::default()))
        .collect::<Result<_, _>>()?;
    if spec.drop_caches {
        let refs: Vec<&DataFile> = opened.iter().collect();
        if let CacheDrop::FilesOnly { reason } = drop_caches(&refs)? {
            warnings.push(format!(
                "--drop-caches: the machine's page cache could not be dropped ({reason}; needs root outside a container); only this run's files were dropped from it"
            ));
        }
        return Ok(warnings);
    }
    match spec.cache {
        CacheMode::Cold => {
            for f in &opened {
                f.drop_cache()?;
            }
        }
        CacheMode::Hot => {
            let mut buf = vec![0u8; CHUNK as usize];
            for (f, plan) in opened.iter().zip(files) {
                let mut off = 0;
                while off < plan.size {
                    let n = CHUNK.min(plan.size - off) as usize;
                    f.read_exact_at(&mut buf[..n], off)?;
                    off += n as u64;
                }
            }
        }
        CacheMode::Keep => {}
    }
    Ok(warnings)
}

/// Paths of files, for cleanup.
pub fn paths(files: &[FilePlan]) -> Vec<PathBuf> {
    files.iter().map(|f| f.path.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_core::pattern::check_verify;
    use iolab_core::units::ByteCount;

    fn plan(dir: &std::path::Path, name: &str, size: u64, id: u64) -> FilePlan {
        FilePlan {
            path: dir.join(name),
            id,
            size,
            owners: crate::plan::BlockOwners::One(id),
        }
    }

    /// A read that checks nothing reads what is there, whatever its pattern or transfer
    /// size: IO500's random 4 KiB read reads the files ior-easy wrote in 2 MiB transfers
    /// (it once laid them out anew, in the page cache, and read memory).
    #[test]
    fn an_unchecked_read_reuses_files_of_any_pattern() {
        let base = tempfile::tempdir().unwrap();
        let wd = WorkDir::create_or_adopt(base.path(), None).unwrap();
        let written = DataSpec {
            block_size: ByteCount::mib(1),
            pattern: DataPattern::IorTimestamp,
            ..DataSpec::default()
        };
        let files = vec![plan(wd.path(), "ior_file_easy.00000000", 2 << 20, 0)];
        let stop = AtomicBool::new(false);
        lay_out(&files, Some(&wd), &written, 4096, &stop).unwrap();
        let random_4k = DataSpec {
            block_size: ByteCount::kib(4),
            ..written.clone()
        };
        let r = lay_out(&files, Some(&wd), &random_4k, 4096, &stop).unwrap();
        assert_eq!((r.reused_files, r.written_bytes), (1, 0));
        // A checked read of another transfer size would not find IOR's words: laid out.
        let checked = DataSpec {
            verify: true,
            ..random_4k
        };
        let r = lay_out(&files, Some(&wd), &checked, 4096, &stop).unwrap();
        assert_eq!((r.reused_files, r.written_bytes), (0, 2 << 20));
    }

    /// A shared file laid out for an IOR read holds IOR's words of the rank each block
    /// belongs to (strided: round the ranks), in a directory made for IOR's name.
    #[test]
    fn ior_layout_writes_each_blocks_owner() {
        let base = tempfile::tempdir().unwrap();
        let wd = WorkDir::create_or_adopt(base.path(), None).unwrap();
        let spec = DataSpec {
            block_size: ByteCount(47008),
            pattern: DataPattern::IorTimestamp,
            seed: 1234,
            ..DataSpec::default()
        };
        let file = FilePlan {
            path: wd.path().join("ior-hard/file"),
            id: 0,
            size: 6 * 47008,
            owners: crate::plan::BlockOwners::Strided { workers: 3 },
        };
        lay_out(
            std::slice::from_ref(&file),
            Some(&wd),
            &spec,
            4096,
            &AtomicBool::new(false),
        )
        .unwrap();
        let bytes = std::fs::read(&file.path).unwrap();
        for (b, block) in bytes.chunks(47008).enumerate() {
            assert_eq!(
                iolab_core::pattern::ior_timestamp_mismatch(block, 1234, b as u64 % 3),
                None,
                "block {b}"
            );
        }
    }

    #[test]
    fn lays_out_full_files_and_reuses_them() {
        let base = tempfile::tempdir().unwrap();
        let wd = WorkDir::create_or_adopt(base.path(), None).unwrap();
        let spec = DataSpec {
            threads: 2,
            block_size: ByteCount::kib(4),
            ..DataSpec::default()
        };
        let files = vec![
            plan(wd.path(), "a", 3 << 20, 0),
            plan(wd.path(), "b", 12288, 1),
        ];
        let r = lay_out(&files, Some(&wd), &spec, 4096, &AtomicBool::new(false)).unwrap();
        assert_eq!(
            r,
            LayoutReport {
                written_bytes: (3 << 20) + 12288,
                reused_files: 0
            }
        );
        let a = std::fs::read(&files[0].path).unwrap();
        assert_eq!(a.len(), 3 << 20);
        // Not sparse: every 4 KiB has data.
        assert!(a.chunks(4096).all(|c| c.iter().any(|b| *b != 0)));
        let again = lay_out(&files, Some(&wd), &spec, 4096, &AtomicBool::new(false)).unwrap();
        assert_eq!(
            again,
            LayoutReport {
                written_bytes: 0,
                reused_files: 2
            }
        );
    }

    #[test]
    fn verify_layout_writes_checkable_blocks() {
        let base = tempfile::tempdir().unwrap();
        let wd = WorkDir::create_or_adopt(base.path(), None).unwrap();
        let spec = DataSpec {
            verify: true,
            block_size: ByteCount::kib(8),
            ..DataSpec::default()
        };
        let files = vec![plan(wd.path(), "v", 64 * 1024, 7)];
        lay_out(&files, Some(&wd), &spec, 4096, &AtomicBool::new(false)).unwrap();
        let data = std::fs::read(&files[0].path).unwrap();
        for (i, block) in data.chunks(8192).enumerate() {
            assert_eq!(check_verify(block, spec.seed, 7, i as u64 * 8192), Ok(()));
        }
        // Random data does not satisfy a verify read: it is laid out again.
        let plain = DataSpec {
            verify: false,
            ..spec.clone()
        };
        let files2 = vec![plan(wd.path(), "p", 64 * 1024, 8)];
        lay_out(&files2, Some(&wd), &plain, 4096, &AtomicBool::new(false)).unwrap();
        assert_eq!(
            lay_out(&files2, Some(&wd), &spec, 4096, &AtomicBool::new(false))
                .unwrap()
                .written_bytes,
            64 * 1024
        );
    }
}
