//! What a fio job's writes hold: [`pattern_of`] maps fio's buffer options (fio 3.33's
//! init.c and io_u.c) onto a [`DataPattern`]; the ratios and buffer_pattern are mapped
//! beside it in `plan`.

use iolab_core::spec::{DataPattern, RwKind};

use super::job::FioJob;

/// fio's written data for `job`:
/// - zero_buffers, or buffer_compress_percentage=100: zeros;
/// - a compress or dedupe percentage, buffer_pattern or verify: iolab's own blocks, made
///   as asked by the options mapped beside this one (fio neither reuses nor stamps its
///   buffers then);
/// - refill_buffers: new random data every write, which iolab's own data is;
/// - scramble_buffers=0: each I/O buffer filled once and written as it is;
/// - otherwise fio's default: each buffer filled once and stamped per 512 bytes with the
///   offset and time before every write.
pub(super) fn pattern_of(job: &FioJob, rw: RwKind, notes: &mut Vec<String>) -> DataPattern {
    if job.zero_buffers || job.compress_percentage == 100 {
        if job.zero_buffers && job.scramble_buffers == Some(true) && rw.writes() {
            notes.push("zero_buffers with scramble_buffers=1: fio stamps the offset and time into every 512 bytes of its zeros; iolab writes the zeros alone".into());
        }
        return DataPattern::Zeros;
    }
    let built_as_asked = job.compress_percentage > 0
        || job.dedupe_percentage > 0
        || job.buffer_pattern.is_some()
        || job.verify.is_some();
    if !rw.writes() || built_as_asked || job.refill_buffers == Some(true) {
        DataPattern::Iolab
    } else if job.scramble_buffers == Some(false) {
        DataPattern::FioUnscrambled
    } else {
        DataPattern::Fio
    }
}
