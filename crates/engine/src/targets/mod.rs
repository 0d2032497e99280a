//! Per-target benchmarks with defect detection, and the network benchmark. To be written.
