//! Metadata workloads (mdtest class) and the find tree walk. To be written.
