//! Metadata operations on storage (MetaBackend). To be written.
