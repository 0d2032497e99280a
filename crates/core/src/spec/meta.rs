//! Metadata workloads (mdtest class) and tree walks (find). To be written.
