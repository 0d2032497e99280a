//! Per-target benchmarks (iolab targets). To be written.
