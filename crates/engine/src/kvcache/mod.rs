//! LLM inference's KV cache on the engine's parts: [`KvCache`] is the tiered cache (a
//! CPU-memory budget whose entries are held, a storage tier of `.npy` files, waterfall
//! LRU eviction down the tiers), [`EntryIo`] one worker's means to move entries: through
//! an `IoBackend` on the storage tier, timed by the `Clock` into a `Recorder`. Suites
//! compose them (users, requests, the queue); nothing here knows a user or a request.

pub mod cache;
pub mod entry;
mod extents;

pub use cache::{Evictions, KvCache, Op, Written};
pub use entry::{EntryIo, EntrySetup, Spans, npy_header};

#[cfg(test)]
mod cpu_tests;
#[cfg(test)]
mod tests;
