//! Issue 21's promises, tried for real: nothing that is not iolab's is written (devices,
//! image files), the work directory is locked and holds only iolab's files.

mod device;
mod faults;
mod input;
mod kvcache_device;
mod memory;
mod output;
mod space;
mod store;
mod workdir;
