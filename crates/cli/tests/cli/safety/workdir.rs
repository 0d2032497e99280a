//! The work directory: lock, kept files, stale files, symlinks.
