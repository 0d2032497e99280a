//! A worker's errors: the record of one (its file, operation, offset and errno), a
//! failed or short I/O, and a failure that ends every I/O of the worker.

use iolab_backend::{BackendError, IoBackend, IoDir};
use iolab_core::result::{ErrorRecord, OpKind};

use super::Loop;
use crate::clock::Clock;
use crate::recorder::Recorder;
use crate::worker::op_of;

impl<C: Clock, B: IoBackend + ?Sized> Loop<'_, '_, C, B> {
    /// An error on file `file` of this worker's files.
    pub(super) fn error(
        &self,
        file: usize,
        op: OpKind,
        offset: Option<u64>,
        errno: Option<i32>,
        message: String,
    ) -> ErrorRecord {
        ErrorRecord {
            rank: self.s.rank,
            host: self.s.host.to_string(),
            op,
            path: self.my_files[file].path.display().to_string(),
            offset,
            errno,
            message,
        }
    }

    /// An I/O of `len` bytes at `offset` (`at`) failed or came back short.
    #[cold]
    pub(super) fn io_failed(
        &mut self,
        rec: &mut Recorder,
        dir: IoDir,
        file: usize,
        at: (u64, u64),
        result: i32,
    ) {
        let path = self.my_files[file].path.clone();
        let op = op_of(dir);
        let op_name = op.name();
        let (offset, len) = at;
        let (errno, message) = if result < 0 {
            let errno = -result;
            let e = if errno == libc::EINVAL && self.s.plan.spec.direct {
                BackendError::Unaligned {
                    op: op_name,
                    path,
                    offset,
                    len,
                    align: self.s.alignment,
                }
            } else {
                BackendError::Io {
                    op: op_name,
                    path,
                    offset,
                    len,
                    source: std::io::Error::from_raw_os_error(errno),
                }
            };
            (Some(errno), e.to_string())
        } else {
            (
                None,
                format!(
                    "short {op_name}: {result} of {len} bytes at offset {offset} in {} ({})",
                    path.display(),
                    match dir {
                        IoDir::Read => "the file is shorter than the workload expects",
                        IoDir::Write => "the file system is probably full",
                        IoDir::Trim => "the device trimmed less than asked",
                    }
                ),
            )
        };
        rec.error(self.error(file, op, Some(offset), errno, message));
        self.failed = true;
        if !self.s.isolated {
            self.s.control.stop_all();
        }
    }

    #[cold]
    pub(super) fn fail_all(&mut self, rec: &mut Recorder, message: String) {
        rec.error(self.error(0, OpKind::Read, None, None, message));
        self.failed = true;
        self.broken = true;
        self.fresh.clear();
        if !self.s.isolated {
            self.s.control.stop_all();
        }
    }
}
